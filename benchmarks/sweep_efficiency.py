"""Where a sweep's wall time goes: boot, pool create, prefill, per-run overhead, measuring.

Runs a spec (default: benchmarks/specs/efficiency.yaml, scaling-like runs on two layouts)
in a fresh lab and prints the breakdown, the share of wall time inside fio's measurement
windows, and the host calls (ssh commands, copies) made per run. Or, with --sweep-dir,
prints the breakdown of a sweep already run (raw/ or raw.tar.xz).

    python benchmarks/sweep_efficiency.py [--spec S] [--out DIR]
    python benchmarks/sweep_efficiency.py --sweep-dir data/examples/scaling
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _ts(e) -> float:
    return datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()


def _run_jsons(sweep_dir: Path) -> dict:
    """run.json of every attempt, keyed (run_id, attempt number)."""
    def key(name: str):
        parts = Path(name).parts
        return parts[-3], int(parts[-2].rsplit("-", 1)[-1])
    raw = sweep_dir / "raw"
    if raw.is_dir():
        return {key(str(p)): json.loads(p.read_text()) for p in sorted(raw.rglob("run.json"))}
    with tarfile.open(sweep_dir / "raw.tar.xz") as tf:
        return {key(m.name): json.load(tf.extractfile(m)) for m in tf.getmembers() if m.name.endswith("/run.json")}


# A run's phases on the host's clock and the controller's: set-up before fio starts, fio's
# start and ramp, the measurement window, fio's exit and output fetch, counters stopped and
# fetched and the run judged, and the gap until the next run of the same pool starts.
PHASES = ("set-up", "fio start + ramp", "window", "fio exit + fetch", "counters + judging", "until next run")


def breakdown(sweep_dir: Path) -> dict:
    events = [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]
    wall = _ts(events[-1]) - _ts(events[0])
    prov = next((e for e in events if e["event"] == "provenance"), {})
    boot = float(prov.get("lab_boot_s") or 0)
    rj = _run_jsons(sweep_dir)
    starts, phases, runs = {}, collections.defaultdict(list), []
    create, last_done = 0.0, None
    for e in events:
        if e["event"] == "pool creating":
            starts[e["pool_id"]], last_done = _ts(e), None
        elif e["event"] == "pool created" and e["pool_id"] in starts:
            create += _ts(e) - starts[e["pool_id"]]
        elif e["event"] == "prefilled":
            last_done = None                # a prefill between two runs is not per-run overhead
        elif e["event"] == "run started":
            starts[(e["run_id"], e["attempt"])] = _ts(e)
            if last_done is not None:
                phases["until next run"].append(_ts(e) - last_done)
        elif e["event"] == "run completed" and (key := (e["run_id"], e["attempt"])) in starts:
            began, done, r = starts.pop(key), _ts(e), rj.get(key)
            runs.append(done - began)
            last_done = done
            if r:
                for name, a, b in (("set-up", began, r["t0"]), ("fio start + ramp", r["t0"], r["t_start"]),
                                   ("window", r["t_start"], r["t_end"]), ("fio exit + fetch", r["t_end"], r["t1"]),
                                   ("counters + judging", r["t1"], done)):
                    phases[name].append(b - a)
    prefill = sum(e.get("prefill_s", 0) for e in events if e["event"] == "prefilled")
    fio = [r["t1"] - r["t0"] for r in rj.values()]
    windows = [r["t_end"] - r["t_start"] for r in rj.values()]
    return {"wall_s": wall, "boot_s": boot, "pool_create_s": create, "prefill_s": prefill,
            "runs": len(runs), "run_wall_s": sum(runs), "fio_s": sum(fio), "window_s": sum(windows),
            "per_run_overhead_s": statistics.median(phases["set-up"]) + statistics.median(phases["counters + judging"])
            if phases["set-up"] else None,
            "phases": {k: (statistics.median(v), len(v)) for k, v in phases.items() if v},
            "inside_windows": sum(windows) / wall if wall else None}


def _count_host_calls():
    """Count ssh commands and copies by wrapping the Host methods (in this process)."""
    from zbench_lib.hosts import ssh  # noqa: F401  (SSHHost overrides get/put: wrap every class)
    from zbench_lib.hosts.base import Host
    counts = collections.Counter()
    classes, todo = [], [Host]
    while todo:
        cls = todo.pop()
        classes.append(cls)
        todo += cls.__subclasses__()
    for cls in classes:
        for name in ("run", "get", "put", "popen"):
            if name not in vars(cls):
                continue

            def wrapped(self, *a, _orig=vars(cls)[name], _name=name, **k):
                counts[_name] += 1
                return _orig(self, *a, **k)
            setattr(cls, name, wrapped)
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(HERE / "specs" / "efficiency.yaml"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--sweep-dir", default=None)
    args = ap.parse_args()
    calls = None
    if args.sweep_dir:
        sweep_dir = Path(args.sweep_dir)
    else:
        from zbench_lib.sweeps.running.executor import run_sweep
        calls = _count_host_calls()
        out = Path(args.out or tempfile.mkdtemp(prefix="zbench-eff-"))
        t0 = time.monotonic()
        sweep_dir = run_sweep(args.spec, out, sweep_id="efficiency", progress=False)
        print(f"sweep ran in {time.monotonic() - t0:.0f} s: {sweep_dir}")
    b = breakdown(sweep_dir)
    print(f"wall {b['wall_s']:.0f} s = boot {b['boot_s']:.0f} + pool create {b['pool_create_s']:.0f} "
          f"+ prefill {b['prefill_s']:.0f} + {b['runs']} runs {b['run_wall_s']:.0f} + rest "
          f"{b['wall_s'] - b['boot_s'] - b['pool_create_s'] - b['prefill_s'] - b['run_wall_s']:.0f}")
    print(f"runs: fio {b['fio_s']:.0f} s (measurement windows {b['window_s']:.0f} s), "
          f"median overhead per run outside fio {b['per_run_overhead_s']:.1f} s")
    print("median seconds per run: " + ", ".join(f"{k} {b['phases'][k][0]:.1f}" for k in PHASES if k in b["phases"]))
    print(f"inside fio measurement windows: {b['inside_windows']:.1%} of wall time")
    if calls is not None and b["runs"]:
        print("host calls per run (whole sweep / runs): " +
              ", ".join(f"{k} {v / b['runs']:.1f}" for k, v in sorted(calls.items())))


if __name__ == "__main__":
    main()
