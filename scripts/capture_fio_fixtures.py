#!/usr/bin/env python3
"""Capture real fio 3.x output for every workload template into tests/fixtures/fio/.

Renders each template with build_job against a small file in a scratch directory
(64 MiB, 3 s, no ramp), runs it with run_fio on the local host, and saves
host-<workload>.json plus one per-second log sample. O_DIRECT is tried first and
dropped (direct=0) if the scratch filesystem refuses it.

    python3 scripts/capture_fio_fixtures.py [--scratch /tmp/zb-fio] [--out tests/fixtures/fio]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zbench_lib.core.errors import ZbenchError  # noqa: E402
from zbench_lib.measure.fio import WORKLOADS, build_job, run_fio  # noqa: E402
from zbench_lib.hosts.base import LocalHost  # noqa: E402

MAX_BYTES = 60_000
# Small but representative: a steady-state check on one job so its JSON block is captured.
EXTRA = {"randread": dict(steadystate="iops_slope:20%", ss_dur_s=1, ss_ramp_s=0)}


def _shrink(data: dict) -> dict:
    """Drop latency histograms (not used for parsing) if the JSON is too large."""
    if len(json.dumps(data, indent=2)) <= MAX_BYTES:
        return data
    for job in data["jobs"]:
        for key in [k for k in job if k.startswith("latency_")]:
            del job[key]
        for d in ("read", "write", "trim", "sync"):
            for lat in ("clat_ns", "lat_ns", "slat_ns"):
                job.get(d, {}).get(lat, {}).pop("bins", None)
    return data


def capture(workload: str, scratch: Path, out: Path, host) -> Path:
    target = scratch / "data.bin"
    params = dict(filename=str(target), size="64M", runtime_s=3, ramp_time_s=0,
                  **EXTRA.get(workload, {}))
    numjobs = WORKLOADS[workload]["numjobs"]
    if numjobs > 2:
        params["numjobs"] = 2  # keep the fixture small; still exercises group_reporting
    for direct in ([1, 0] if WORKLOADS[workload]["direct"] else [0]):
        run_dir = scratch / f"{workload}-direct{direct}"
        shutil.rmtree(run_dir, ignore_errors=True)
        job = build_job(workload, direct=direct, **params)
        try:
            run = run_fio(host, job, str(scratch / "remote" / f"{workload}-{direct}"), run_dir, timeout=120)
            break
        except ZbenchError as exc:
            print(f"{workload}: direct={direct} failed, retrying without O_DIRECT: {exc}", file=sys.stderr)
    else:
        raise SystemExit(f"{workload}: fio failed with and without O_DIRECT")
    dest = out / f"host-{workload}.json"
    raw = run.json_path.read_text()
    # Keep fio's bytes as they came (bare -nan and all) unless they are too large.
    dest.write_text(raw if len(raw) <= MAX_BYTES else json.dumps(_shrink(run.data), indent=2) + "\n")
    (out / f"host-{workload}.fio").write_text(job)
    return run_dir


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scratch", default=None, help="scratch directory (default: a new /tmp dir)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/fixtures/fio"))
    args = ap.parse_args(argv)
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="zb-fio-"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    host = LocalHost()
    for workload in WORKLOADS:
        run_dir = capture(workload, scratch, out, host)
        print(f"{workload}: {out / f'host-{workload}.json'}")
        if workload == "mixed":
            for metric in ("iops", "bw", "clat"):
                shutil.copyfile(run_dir / f"mixed_{metric}.1.log", out / f"host-mixed_{metric}.1.log")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
