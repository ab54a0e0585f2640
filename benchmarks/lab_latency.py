"""Which latency percentiles can the lab support? fio on a raw modelled disk (no ZFS).

A device of a given envelope serves one I/O in 1/IOPS at queue depth 1, and a queue of
depth d waits d/IOPS. This benchmark boots one lab disk, sets its model, and measures 4k
random reads and writes at depth 1 and 16 with fio's completion-latency percentiles,
printing each next to what that device would show:

    model  rw  depth  region  expected p50  p50  p99  p99.9  p99/expected  p99.9/expected

Every write is measured twice: on a region never written (holes of the sparse raw file on
the host) and on a region written once before, to tell the host's block allocation from
the throttle. `--variant` repeats the table with another QEMU throttle set through QMP
(e.g. burst buckets). Nothing here is a test: it prints figures to read.

    python benchmarks/lab_latency.py [--runtime 20] [--model hdd] [--cache none]
"""

from __future__ import annotations

import argparse
import json
import sys

from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.hosts.lab import Lab, LabConfig

REGION = 256 * 1024 ** 2
PERCENTILES = ("50.000000", "99.000000", "99.900000")


def fio_latency(host, device: str, rw: str, depth: int, runtime: int, offset: int) -> dict:
    argv = ["fio", "--name=lat", f"--filename={device}", f"--rw={rw}", "--bs=4k", f"--iodepth={depth}",
            "--ioengine=libaio", "--direct=1", "--time_based", f"--runtime={runtime}", "--ramp_time=2",
            f"--offset={offset}", f"--size={REGION}", "--randrepeat=0", "--norandommap",
            "--lat_percentiles=1", "--percentile_list=50:99:99.9", "--output-format=json"]
    job = json.loads(host.run(argv, timeout=runtime + 180).stdout)["jobs"][0]
    side = job["read" if "read" in rw else "write"]
    pct = side["lat_ns"].get("percentile", {})       # issue to completion, as every zbench latency
    return {"iops": side["iops"], "n": side["total_ios"],
            **{p: pct.get(p, float("nan")) / 1e6 for p in PERCENTILES}}


def table(lab, serial: str, dev: str, model, runtime: int, label: str, fresh_offset: int) -> int:
    """Measure every condition; returns the next unwritten offset."""
    iops = model.read_iops_limit()
    print(f"\n{label}: model {model.name} ({iops} IOPS), 4k, {runtime} s per row, latencies in ms")
    print(f"{'rw':10} {'depth':>5} {'region':>9} {'expect':>7} {'p50':>7} {'p99':>7} {'p99.9':>7} "
          f"{'IOPS':>6} {'p99/exp':>8} {'p99.9/exp':>9}")
    rows = []
    for rw in ("randread", "randwrite"):
        for depth in (1, 16):
            regions = [("written", 0)] if rw == "randread" else [("holes", fresh_offset), ("written", 0)]
            for region, offset in regions:
                if region == "holes":
                    fresh_offset += REGION
                r = fio_latency(lab.host, dev, rw, depth, runtime, offset)
                expect = 1000.0 * depth / iops
                p50, p99, p999 = (r[p] for p in PERCENTILES)
                rows.append((rw, depth, region, expect, r))
                print(f"{rw:10} {depth:5d} {region:>9} {expect:7.1f} {p50:7.1f} {p99:7.1f} {p999:7.1f} "
                      f"{r['iops']:6.0f} {p99 / expect:8.2f} {p999 / expect:9.2f}")
    return fresh_offset


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument("--model", default="hdd")
    ap.add_argument("--cache", default="none", help="QEMU cache mode of the data disk (none, writeback, ...)")
    ap.add_argument("--variant", action="append", default=[],
                    help="extra QMP block_set_io_throttle arguments as JSON, e.g. "
                         "'{\"iops_max\": 150, \"iops_max_length\": 1}'")
    args = ap.parse_args()
    model = parse_model(args.model)
    cfg = LabConfig(disks=1, disk_bytes=8 * 1024 ** 3, model=model, name="bench-latency",
                    disk_cache=args.cache)
    with Lab(cfg) as lab:
        dev, serial = lab.data_disks[0], cfg.data_serials[0]
        # Reads are measured on a written region: a hole is served by the host without I/O.
        lab.host.run(["fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M", "--iodepth=8",
                      "--ioengine=libaio", "--direct=1", f"--size={REGION}"], timeout=900)
        print(f"lab accel {lab.accel}, disk cache={args.cache}")
        offset = table(lab, serial, dev, model, args.runtime, "as configured", REGION)
        for v in args.variant:
            extra = json.loads(v)
            lab.qmp("block_set_io_throttle", id=f"/machine/peripheral/dev-{serial}/virtio-backend",
                    **{**model.qmp_throttle_arguments(), **extra})
            offset = table(lab, serial, dev, model, args.runtime, f"variant {extra}", offset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
