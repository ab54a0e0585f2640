"""Calibration of the mechanism disk models (issue 33), on the controller, no lab.

For each model, nbdkit serves a sparse file through `nbd_disk_plugin` on a unix socket in a
temporary directory, and the controller's fio drives it with `ioengine=nbd`: 4k random reads
at depth 1, 4 and 32 (IOPS, p50, p99, p99.9), 1M sequential reads, short-stroke (first 5%)
against full-span random reads, and the latency of a flush after each 4k sequential write.
Each row is printed beside the source's published figure (mech_models.PRESETS[...].published).
Then the cost: nbdkit's CPU seconds per I/O (utime + stime from /proc/<pid>/stat over the
run) and the highest rate the null model (no delay) serves.

    nice -n 10 python benchmarks/disk_model_calibration.py [--runtime 4] [--models hdd-7200,null]

Keep it niced on a shared machine: the models sleep to the microsecond, so CPU contention
shows as latency (the report says what the load average was).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from zbench_lib.hosts.mech_models import PRESETS
from zbench_lib.hosts.nbd_disk import nbd_uri, start_nbd_disk, stop_nbd_disk

DISK_BYTES = 2 * 1024 ** 3
TICKS = os.sysconf("SC_CLK_TCK")


def build_fio_argv(uri: str, rw: str, bs: str, depth: int, runtime: int, *, span: str = "100%",
                   fsync: int = 0) -> list[str]:
    """One fio job on an NBD export: time-based, json output."""
    argv = ["fio", "--name=cal", "--ioengine=nbd", f"--uri={uri}", f"--rw={rw}", f"--bs={bs}",
            f"--iodepth={depth}", "--time_based", f"--runtime={runtime}", f"--size={span}",
            "--randrepeat=0", "--lat_percentiles=1", "--output-format=json"]
    return argv + ([f"--fsync={fsync}"] if fsync else [])


def parse_fio(stdout: str, direction: str) -> dict:
    """IOPS and latency percentiles (ms) of one direction ('read', 'write' or 'sync')."""
    job = json.loads(stdout[stdout.index("{"):])["jobs"][0]   # fio's nbd engine prints a line first
    d = job[direction]
    lat = d["lat_ns"]          # issue to completion (fio's clat is the completion half only)
    pct = lat.get("percentile", {})
    row = {"iops": d.get("iops", lat.get("N", 0) / max(job["job_runtime"] / 1000, 1e-9)),
           "mb_s": d.get("bw_bytes", 0) / 1e6, "ios": lat.get("N", d.get("total_ios", 0))}
    for key, name in (("50.000000", "p50"), ("99.000000", "p99"), ("99.900000", "p99.9")):
        row[name] = pct.get(key, 0) / 1e6
    return row


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS      # utime + stime


def run_point(uri: str, pid: int, direction: str, **job) -> dict:
    cpu0 = cpu_seconds(pid)
    res = subprocess.run(build_fio_argv(uri, **job), capture_output=True, text=True, check=True)
    row = parse_fio(res.stdout, direction)
    row["cpu_us_per_io"] = (cpu_seconds(pid) - cpu0) / max(row["ios"], 1) * 1e6
    return row


POINTS = [  # label, direction, fio job
    ("randread 4k qd1", "read", dict(rw="randread", bs="4k", depth=1)),
    ("randread 4k qd4", "read", dict(rw="randread", bs="4k", depth=4)),
    ("randread 4k qd32", "read", dict(rw="randread", bs="4k", depth=32)),
    ("short stroke 5% qd1", "read", dict(rw="randread", bs="4k", depth=1, span="5%")),
    ("seq read 1M qd4", "read", dict(rw="read", bs="1M", depth=4)),
    ("flush after 4k write", "sync", dict(rw="write", bs="4k", depth=1, fsync=1)),
]


def calibrate(name: str, runtime: int, workdir: Path) -> list[tuple[str, dict]]:
    backing, sock = workdir / f"{name}.raw", workdir / f"{name}.sock"
    with open(backing, "wb") as fh:
        fh.truncate(DISK_BYTES)
    proc = start_nbd_disk(sock, backing, PRESETS[name].name, log=workdir / f"{name}.log")
    try:
        return [(label, run_point(nbd_uri(sock), proc.pid, direction, runtime=runtime, **job))
                for label, direction, job in POINTS]
    finally:
        stop_nbd_disk(proc)
        backing.unlink()


def published_for(name: str, label: str) -> str:
    pub = PRESETS[name].published
    if label == "randread 4k qd1" and "qd1_iops" in pub:
        extra = f", mean {pub['qd1_mean_ms']} ms" if "qd1_mean_ms" in pub else ""
        return f"{pub['qd1_iops']} IOPS{extra}, p99/p50 {pub['p99_p50'][0]}-{pub['p99_p50'][1]}"
    if label == "randread 4k qd32" and "qd32_iops" in pub:
        return f"{pub['qd32_iops']} IOPS"
    if label.startswith("seq") and pub.get("seq_mb_s"):
        return f"{pub['seq_mb_s']} MB/s"
    if label.startswith("flush") and "flush_ms" in pub:
        return f"~{pub['flush_ms']} ms (one turn)"
    return "-"


def print_table(name: str, rows: list[tuple[str, dict]]) -> None:
    print(f"\n{PRESETS[name].name}: {PRESETS[name].source}")
    print(f"  {'point':22} {'IOPS':>8} {'MB/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'p99.9':>8} "
          f"{'p99/p50':>7} {'cpu us/io':>9}  source")
    for label, r in rows:
        ratio = r["p99"] / r["p50"] if r["p50"] else float("nan")
        print(f"  {label:22} {r['iops']:8.0f} {r['mb_s']:7.1f} {r['p50']:8.3f} {r['p99']:8.3f} "
              f"{r['p99.9']:8.3f} {ratio:7.2f} {r['cpu_us_per_io']:9.1f}  {published_for(name, label)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", type=int, default=4, help="seconds per point")
    ap.add_argument("--models", default="hdd-7200,hdd-5400,sata-ssd,nvme,null")
    args = ap.parse_args()
    print(f"nice {os.nice(0)}, load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, "
          f"{args.runtime} s per point, fio ioengine=nbd over a unix socket")
    with tempfile.TemporaryDirectory(prefix="zbench-cal-") as tmp:
        for name in args.models.split(","):
            print_table(name, calibrate(name, args.runtime, Path(tmp)))
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
