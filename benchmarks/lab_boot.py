"""How long a lab takes to answer ssh: a cold boot against a restore from the saved VM state (issue 51).

Starts the same lab shape N times each way, alternating (cold, restored, cold, ...) so a change in
the machine's load falls on both alike, and prints each start to ssh-ready (`Lab.boot_s`: QEMU
started to /dev/zfs present and udev settled, the hot-plugged disks seen, clock and identity set),
then the median of each and their ratio. The first restore of a shape that has no state yet saves
one first: that start is printed and left out of the medians (it is done once per image and shape).
A mech: disk model is given so the nbdkit-served disks are part of what is timed.

    python benchmarks/lab_boot.py [--repeats 5] [--disks 4] [--model mech:hdd-7200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.hosts.lab_restore import qemu_version

MiB = 1024 ** 2


def start_once(cfg: LabConfig, restore: bool) -> tuple[float, str, str]:
    os.environ["ZBENCH_LAB_RESTORE"] = "1" if restore else "0"
    t0 = time.monotonic()
    with Lab(cfg) as lab:
        ready = lab.boot_s
        lab.host.run(["zpool", "list", "-H"])        # the module answers
        kind, note = lab.start_kind, lab.start_note
    return ready, kind, note + f" (up and down {time.monotonic() - t0:.1f} s)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--disks", type=int, default=4)
    ap.add_argument("--model", default="mech:hdd-7200")
    args = ap.parse_args()
    cfg = LabConfig(disks=args.disks, disk_bytes=256 * MiB, model=args.model, name="bench-boot")
    print(f"{qemu_version()}; {os.cpu_count()} CPUs; lab {cfg.memory_mib} MiB, {cfg.cpus} vCPUs, "
          f"{args.disks} x 256M {args.model} disks")
    ready, kind, note = start_once(cfg, restore=True)          # saves the state if there is none
    print(f"  first restore: {kind:8s} {ready:6.1f} s  {note}")
    times: dict[str, list[float]] = {"cold": [], "restored": []}
    for i in range(args.repeats):
        for restore in (False, True):
            ready, kind, note = start_once(cfg, restore)
            times[kind].append(ready)
            print(f"  {i + 1}/{args.repeats} {kind:8s} {ready:6.1f} s  {note}", flush=True)
    cold, restored = statistics.median(times["cold"]), statistics.median(times["restored"])
    print(f"median to ssh-ready: cold {cold:.1f} s (range {min(times['cold']):.1f}-{max(times['cold']):.1f}), "
          f"restored {restored:.1f} s (range {min(times['restored']):.1f}-{max(times['restored']):.1f}); "
          f"{cold / restored:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
