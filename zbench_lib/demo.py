"""`make demo`: the main job end to end in the lab."""

from __future__ import annotations

import time

from .lab import Lab, LabConfig


def run_demo() -> int:
    t0 = time.monotonic()
    with Lab(LabConfig(disks=4, disk_bytes=1024 ** 3, model="hdd", name="demo")) as lab:
        print(f"lab ready in {lab.boot_s:.0f} s ({lab.accel})")
        print(lab.host.run(["zfs", "version"]).stdout.strip())
        pool = "zbench-demo"
        lab.host.run(["zpool", "create", "-o", "ashift=12", pool, "raidz1", *lab.data_disks])
        print(lab.host.run(["zpool", "list", "-v", pool]).stdout.rstrip())
        lab.host.run(["zpool", "destroy", pool])
    print(f"demo finished in {time.monotonic() - t0:.0f} s")
    return 0
