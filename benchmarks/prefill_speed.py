"""How fast can the lab prefill, and what holds it back? Variants of the prefill's fio, one boot.

The prefill writes every target whole before it is measured (zfs/prefill.py); on a
sweep of many pools it is a large share of the wall time. This benchmark writes the same
zvol with variants of the prefill's fio command line and prints the throughput next to
the disks' aggregate write bandwidth, and the compressratio an lz4 zvol reports (the
prefill must stay incompressible, or later reads would be served from fewer blocks):

    variant  layout  MiB/s  of aggregate  of data disks  lz4 compressratio

    python benchmarks/prefill_speed.py [--model hdd] [--size 1G]
"""

from __future__ import annotations

import argparse
import sys
import time

from zbench_lib.core.sizes import parse_size
from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool
from zbench_lib.zfs.prefill import prefill_argv
from zbench_lib.zfs.targets import Zvol

MiB = 1024 ** 2


def variants(argv: list[str]) -> dict[str, list[str]]:
    """The shipped command line, and what each change to it does."""
    no_refill = [a for a in argv if a != "--refill_buffers"]
    size = next(int(a.split("=", 1)[1]) for a in argv if a.startswith("--size="))
    halves = [a for a in no_refill if not a.startswith("--size=")] + [
        f"--size={size // 2}", "--numjobs=2", f"--offset_increment={size // 2}", "--group_reporting"]
    return {"as shipped": argv,
            "no refill_buffers": no_refill,
            "no refill, 2 jobs": halves,
            # zeros on a zvol without compression: the same bytes reach the disks, no data made
            "zeros, no lz4 (ceiling)": no_refill + ["--zero_buffers"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="hdd")
    ap.add_argument("--size", default="1G")
    args = ap.parse_args()
    model, size = parse_model(args.model), parse_size(args.size)
    with Lab(LabConfig(disks=6, disk_bytes=4 * 1024 ** 3, model=model, name="bench-prefill-speed")) as lab:
        print(f"model {model.name} ({(model.bw_write or model.bw) // MiB} MiB/s a disk); lab accel {lab.accel}; "
              f"{size // MiB} MiB per prefill, 16k zvol")
        print(f"{'variant':20} {'layout':10} {'MiB/s':>7} {'of aggregate':>13} {'of data disks':>14} {'lz4 ratio':>10}")
        for layout in (Layout("stripe", 4), Layout("raidz2", 6)):
            for name in variants(["--size=0"]):
                with Pool(lab.host, layout, lab.data_disks[:layout.total_disks], owned_devices=True) as pool:
                    t = pool.create_target(Zvol("fill", size, 16384, compression="off" if "zeros" in name else "lz4"))
                    argv = variants(prefill_argv(t, size, pool.work_dir()))[name]
                    t0 = time.monotonic()
                    lab.host.run(argv, timeout=3600)
                    lab.host.run(["zpool", "sync", pool.name], timeout=600)
                    bw = size / (time.monotonic() - t0)
                    ratio = lab.host.run(["zfs", "get", "-Hp", "-o", "value", "compressratio", t.full_name]).stdout
                    per_disk = model.bw_write or model.bw
                    print(f"{name:20} {layout.describe():10} {bw / MiB:7.1f} "
                          f"{bw / (layout.total_disks * per_disk):13.2f} {bw / (layout.data_disks * per_disk):14.2f} "
                          f"{ratio.strip():>10}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
