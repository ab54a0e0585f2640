"""A fleet's speed-up (issue 29): the same disk-bound spec on 1 lab and on 2 labs.

Boots two labs (not counted), runs the spec on one of them as a single host (`lab.count: 1`, the
executor's loop) and on both as a fleet (`lab.count: 2`, Dask), each in a child process as
`zbench sweep` would, and prints: the wall time of each, the ratio, the share of the fleet's wall
time each host was busy with a pool, the controller's overhead per pool (each host's time between
its pools, when pools were waiting: dispatch, the pool's job built from the store, the commit), and
the host_contention flags raised (the labs share this machine's cores: say so, do not hide it).

The runs are bound by the disks' envelope (a slow throttle, shallow queues), not by the emulated
CPU, so two labs can overlap their runs even on 2 cores.

    python benchmarks/fleet_speedup.py [--out DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import yaml

MiB = 1024 ** 2
NAMES = ("speedup-a", "speedup-b")
LAB = dict(disks=2, disk_bytes=512 * MiB, model="custom:iops=120,bw=20M", extra_disks=0, memory_mib=2048)
SPEC = {"name": "speedup", "question": "How much faster is one study on two labs?", "surface": "zvol",
        "host": "lab", "lab": {"disks": 2, "disk_size": "512M", "model": "custom:iops=120,bw=20M"},
        "factors": {"layout": ["stripe", "mirror"], "disks": [2], "volblocksize": ["16k"]},
        "target": {"volsize": "64M", "compression": "off", "primarycache": "metadata"},
        "workloads": [{"name": "randread", "template": "randread",
                       "overrides": {"runtime_s": 15, "ramp_time_s": 1, "iodepth": 2, "numjobs": 1}}],
        # max_attempts = fixed: no run is replaced, so both sweeps do the same work. With replacements
        # the fleet (whose two labs share 2 cores, so host_contention flags its runs) measured 48 runs
        # against the single lab's 35, and the ratio compared different amounts of work.
        "repetitions": {"fixed": 3, "max_attempts": 3, "pool_replicates": 2}, "seed": 11}


def _ts(e) -> float:
    return datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()


def run(spec: dict, out: Path, env: dict) -> tuple[float, Path]:
    path = out / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    code = ("import sys\nfrom zbench_lib.sweeps.running.executor import run_sweep\n"
            "print(run_sweep(sys.argv[1], sys.argv[2], sweep_id=sys.argv[3], progress=False))\n")
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-c", code, str(path), str(out), spec["name"]],
                         env={**os.environ, **env}, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"{spec['name']} failed:\n{res.stderr[-3000:]}")
    return time.monotonic() - t0, out / spec["name"]


def fleet_figures(sweep: Path) -> dict:
    events = [json.loads(line) for line in (sweep / "events.jsonl").read_text().splitlines() if line.strip()]
    timing = next(e for e in reversed(events) if e["event"] == "timing")
    busy, pools = defaultdict(float), defaultdict(list)
    dispatched = {}
    for e in events:
        if e["event"] == "pool dispatched":
            dispatched[e["pool_id"]] = _ts(e)
        elif e["event"] == "pool returned":
            busy[e["host"]] += e["wall_s"]
            pools[e["host"]].append((dispatched.get(e["pool_id"], _ts(e) - e["wall_s"]), _ts(e)))
    wall = timing["wall_s"]
    # between a host's pools: from the commit of one to the dispatch of the next (pools were waiting)
    gaps = [b[0] - a[1] for spans in pools.values() for a, b in zip(sorted(spans), sorted(spans)[1:])]
    return {"wall_s": wall, "busy_share": {h: round(b / wall, 3) for h, b in sorted(busy.items())},
            "pools": sum(len(p) for p in pools.values()),
            "overhead_per_pool_s": round(sum(gaps) / len(gaps), 2) if gaps else None}


def contention(sweep: Path) -> tuple[int, int]:
    import pandas as pd
    df = pd.read_parquet(sweep / "results.parquet")
    col = "flag_host_contention"
    return (int((df[col] == True).sum()) if col in df else 0), len(df)  # noqa: E712 (three-valued)


def _runs(sweep: Path) -> int:
    return sum('"run completed"' in line for line in (sweep / "events.jsonl").read_text().splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from zbench_lib.hosts.lab import Lab, LabConfig
    out = args.out or Path(tempfile.mkdtemp(prefix="zb-speedup-"))
    out.mkdir(parents=True, exist_ok=True)
    with Lab(LabConfig(**LAB, name=NAMES[0])), Lab(LabConfig(**LAB, name=NAMES[1])):
        one_s, one = run({**SPEC, "name": "speedup-1"}, out, {"ZBENCH_LAB": NAMES[0]})
        two_s, two = run({**SPEC, "name": "speedup-2", "lab": {**SPEC["lab"], "count": 2}}, out,
                         {"ZBENCH_LABS": ",".join(NAMES)})
    one_wall = next(json.loads(line) for line in reversed((one / "events.jsonl").read_text().splitlines())
                    if '"timing"' in line)["wall_s"]
    f = fleet_figures(two)
    print(f"spec: {len(SPEC['factors']['layout'])} layouts x {SPEC['repetitions']['pool_replicates']} pool "
          f"replicates, {SPEC['repetitions']['fixed']} runs per cell, disks {LAB['model']}; labs booted beforehand")
    print(f"1 lab : sweep wall {one_wall:.0f} s (process {one_s:.0f} s), {_runs(one)} runs")
    print(f"2 labs: sweep wall {f['wall_s']:.0f} s (process {two_s:.0f} s), {_runs(two)} runs")
    print(f"speed-up: {one_wall / f['wall_s']:.2f}x (sweep wall), {one_s / two_s:.2f}x (process)")
    print(f"busy share of the fleet's wall time: {f['busy_share']}")
    print(f"controller overhead per pool (a host's gap between pools): {f['overhead_per_pool_s']} s "
          f"over {f['pools']} pools")
    for label, sweep in (("1 lab", one), ("2 labs", two)):
        raised, rows = contention(sweep)
        print(f"host_contention raised on {raised} of {rows} rows ({label})")
    print(f"machine: {os.cpu_count()} cores; stores in {out}")


if __name__ == "__main__":
    main()
