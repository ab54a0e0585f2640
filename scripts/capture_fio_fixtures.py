#!/usr/bin/env python3
"""Capture real fio 3.x output for every workload template into tests/fixtures/fio/.

Renders each template with build_job against a small file in a scratch directory
(64 MiB, 3 s, no ramp), runs it with run_fio on the local host, and saves
host-<workload>.json plus one per-second log sample. O_DIRECT is tried first and
dropped (direct=0) if the scratch filesystem refuses it.

run_fio asks for json+ (each latency histogram's bins) since 2026-11-25; the host-<workload>.json
fixtures captured before that are plain json and stay as they are: they are the old raw files a
parser must still read. The json+ ones were captured with

    python3 scripts/capture_fio_fixtures.py --only randread,mixed --prefix host-jsonplus- --size 16M --runtime 2

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
from zbench_lib.measure.fio import build_job, run_fio  # noqa: E402
from zbench_lib.measure.workloads import by_name  # noqa: E402
from zbench_lib.hosts.base import LocalHost  # noqa: E402

MAX_BYTES = 60_000
# Small but representative: a steady-state check on one job so its JSON block is captured.
EXTRA = {"randread": dict(steadystate="iops_slope:20%", ss_dur_s=1, ss_ramp_s=0)}


def _shrink(data: dict) -> dict:
    """Drop what is too large and unused: the total and submission latency bins, then the
    latency_* maps, and only last the completion latency bins (fio_hist reads those)."""
    steps = [(("lat_ns", "slat_ns"), False), (("lat_ns", "slat_ns"), True), (("clat_ns", "lat_ns", "slat_ns"), True)]
    for lats, maps in steps:
        if len(json.dumps(data, indent=2)) <= MAX_BYTES:
            return data
        for job in data["jobs"]:
            for key in [k for k in job if maps and k.startswith("latency_")]:
                del job[key]
            for d in ("read", "write", "trim", "sync"):
                for lat in lats:
                    job.get(d, {}).get(lat, {}).pop("bins", None)
    return data


def capture(workload: str, scratch: Path, out: Path, host, prefix: str = "host-", size: str = "64M",
            runtime_s: int = 3) -> Path:
    target = scratch / "data.bin"
    params = dict(filename=str(target), size=size, runtime_s=runtime_s, ramp_time_s=0,
                  **EXTRA.get(workload, {}))
    numjobs = by_name()[workload].defaults["numjobs"]
    if numjobs > 2:
        params["numjobs"] = 2  # keep the fixture small; still exercises group_reporting
    for direct in ([1, 0] if by_name()[workload].defaults["direct"] else [0]):
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
    dest = out / f"{prefix}{workload}.json"
    raw = run.json_path.read_text()
    # Keep fio's bytes as they came (bare -nan and all) unless they are too large.
    dest.write_text(raw if len(raw) <= MAX_BYTES else json.dumps(_shrink(run.data), indent=2) + "\n")
    (out / f"{prefix}{workload}.fio").write_text(job)
    return run_dir


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scratch", default=None, help="scratch directory (default: a new /tmp dir)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/fixtures/fio"))
    ap.add_argument("--only", default=None, help="comma-separated workloads (default: all)")
    ap.add_argument("--prefix", default="host-", help="file name prefix of the fixtures (default host-)")
    ap.add_argument("--size", default="64M", help="size of the scratch file (default 64M)")
    ap.add_argument("--runtime", type=int, default=3, help="seconds per job (default 3)")
    args = ap.parse_args(argv)
    workloads = args.only.split(",") if args.only else list(by_name())
    unknown = sorted(set(workloads) - set(by_name()))
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; choose from {sorted(by_name())}")
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="zb-fio-"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    host = LocalHost()
    for workload in workloads:
        run_dir = capture(workload, scratch, out, host, args.prefix, args.size, args.runtime)
        print(f"{workload}: {out / f'{args.prefix}{workload}.json'}")
        if workload == "mixed" and args.prefix == "host-":
            for metric in ("iops", "bw", "clat"):
                shutil.copyfile(run_dir / f"mixed_{metric}.1.log", out / f"host-mixed_{metric}.1.log")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
