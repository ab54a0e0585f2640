#!/usr/bin/env python3
"""Capture real OpenZFS outputs of one release into tests/fixtures/openzfs/<release>/.

Boots a small lab of that release (`--zfs 2.1` or `2.3`), builds a few pools whose
topology the parsers must read (raidz1 with a log, a cache and a mirrored special
vdev; two mirrors; a stripe), and saves what zbench reads: `zfs version`,
`zpool status -P` / `-P -L` / `-t`, `zpool get -Hp all`, `zfs get -Hp all`, and on
releases that have it the `-j` twins, so tests can check both paths give one record.

`--counters` captures only what the counter sampler and provenance read, on a mirror
of two while fio writes to its zvol (the other fixtures, whose numbers tests work out by
hand, are left as they are): arcstats, `zpool iostat -Hpvy -l` samples, the pool's txgs
kstat and the module parameters (`/sys/module/zfs/parameters`).

    python3 scripts/capture_openzfs_outputs.py --zfs 2.1 [--out tests/fixtures/openzfs] [--counters]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zbench_lib.hosts.lab import Lab, LabConfig  # noqa: E402
from zbench_lib.zfs.layouts import Layout  # noqa: E402
from zbench_lib.zfs.pools import Pool  # noqa: E402
from zbench_lib.zfs.targets import Zvol  # noqa: E402
from zbench_lib.zfs.version import openzfs_version  # noqa: E402

MiB = 1024 ** 2
LAYOUTS = {
    "raidz1-log-cache-special": (Layout("raidz1", 3, log=1, cache=1, special=2, special_mirror=True), 3, 4),
    "mirror-2x2": (Layout("mirror", 2, vdevs=2), 4, 0),
    "stripe-3": (Layout("stripe", 3), 3, 0),
}


def capture_counters(lab, host, out: Path) -> None:
    layout = Layout("mirror", 2)
    with Pool(host, layout, lab.data_disks[:2], name="zbench-counters", owned_devices=True) as pool:
        vol = pool.create_target(Zvol("vol", 48 * MiB, 16384, compression="off"))
        fio = host.popen(["fio", "--name=load", f"--filename={vol.path}", "--rw=randwrite", "--bs=16k",
                          "--iodepth=4", "--ioengine=libaio", "--direct=1", "--time_based", "--runtime=6"])
        iostat = host.run(["zpool", "iostat", "-Hpvy", "-l", pool.name, "1", "3"], timeout=60).stdout
        fio.communicate(timeout=120)
        (out / "zpool-iostat-Hpvyl-mirror-2.txt").write_text(iostat)
        (out / "arcstats.txt").write_text(host.read_text("/proc/spl/kstat/zfs/arcstats"))
        (out / "txgs-mirror-2.txt").write_text(host.read_text(f"/proc/spl/kstat/zfs/{pool.name}/txgs"))
    params = host.run(["grep", "-r", "", "/sys/module/zfs/parameters/"]).stdout
    (out / "module-parameters.txt").write_text(params)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zfs", default="2.3")
    ap.add_argument("--out", default="tests/fixtures/openzfs")
    ap.add_argument("--counters", action="store_true", help="only the counter and parameter captures")
    args = ap.parse_args(argv)
    cfg = LabConfig(disks=4, disk_bytes=256 * MiB, extra_disks=4, extra_disk_bytes=128 * MiB,
                    model="unthrottled", name=f"capture-{args.zfs.replace('.', '')}", zfs=args.zfs)
    with Lab(cfg) as lab:
        host = lab.host
        version = openzfs_version(host)
        out = Path(args.out) / version.release
        out.mkdir(parents=True, exist_ok=True)
        if args.counters:
            capture_counters(lab, host, out)
            print(f"OpenZFS {version} counters in {out}")
            return 0
        (out / "zfs-version.txt").write_text(host.run(["zfs", "version"]).stdout)
        for label, (layout, n_data, n_extra) in LAYOUTS.items():
            devices = lab.data_disks[:n_data] + lab.extra_disks[:n_extra]
            with Pool(host, layout, devices, name=f"zbench-{label[:12]}", owned_devices=True) as pool:
                pool.create_target(Zvol("vol", 64 * MiB, 16384, compression="off"))
                cmds = {f"zpool-status-P-{label}.txt": ["zpool", "status", "-P", pool.name],
                        f"zpool-status-t-{label}.txt": ["zpool", "status", "-t", pool.name],
                        f"zpool-get-Hp-{label}.txt": ["zpool", "get", "-Hp", "all", pool.name],
                        f"zfs-get-Hp-{label}.txt": ["zfs", "get", "-Hp", "all", f"{pool.name}/vol"],
                        f"zpool-status-PL-all-{label}.txt": ["zpool", "status", "-P", "-L"]}
                if version.has_json:
                    cmds.update({f"zpool-status-jP-{label}.json": ["zpool", "status", "-j", "-P", pool.name],
                                 f"zpool-get-jp-{label}.json": ["zpool", "get", "-j", "-p", "all", pool.name],
                                 f"zfs-get-jp-{label}.json": ["zfs", "get", "-j", "-p", "all",
                                                              f"{pool.name}/vol"]})
                for name, cmd in cmds.items():
                    (out / name).write_text(host.run(cmd).stdout)
        print(f"OpenZFS {version} outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
