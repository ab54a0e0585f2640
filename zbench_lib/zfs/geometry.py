"""How many disks of a layout carry data: the D of every per-data-disk figure."""

from __future__ import annotations

import re

from zbench_lib.core.errors import ConfigError


def parity_of(layout: str) -> int:
    """Parity level of a layout name: stripe/mirror 0, raidz/raidz1 1, raidz2 2, raidz3 3.

    dRAID is refused: its geometry needs the data disks per group and the distributed
    spares, which a name, width and vdevs do not carry, and it allocates whole groups
    (vdev_draid_asize), so the raidz models built on this would be wrong for it.
    """
    if layout in ("stripe", "mirror"):
        return 0
    if str(layout).startswith("draid"):
        raise ConfigError(f"{layout}: dRAID geometry needs data disks per group and distributed spares, not "
                          "just width and vdevs, and pads every block to whole groups unlike raidz: use "
                          "layouts.Layout (data_disks, usable_bytes) and the zfs.draid module")
    m = re.fullmatch(r"raidz([123]?)", str(layout))
    if not m:
        raise ConfigError(f"unknown layout {layout!r} (stripe, mirror, raidz1, raidz2, raidz3)")
    return int(m.group(1) or 1)


def data_disks(layout: str, width: int, vdevs: int = 1) -> int:
    """Data disks D: stripe width×vdevs; mirror: number of mirror vdevs; raidz-p: vdevs×(width−p).

    A stripe of n disks can be written width=n, vdevs=1 or width=1, vdevs=n.

    Examples
    --------
    >>> data_disks("raidz1", 5, 1), data_disks("mirror", 2, 3), data_disks("stripe", 4, 1)
    (4, 3, 4)
    """
    p = parity_of(layout)
    if width < 1 or vdevs < 1:
        raise ConfigError(f"width and vdevs must be >= 1, got {width} and {vdevs}")
    if layout == "stripe":
        return width * vdevs
    if layout == "mirror":
        return vdevs
    if width <= p:
        raise ConfigError(f"{layout} needs more than {p} disks per vdev, got width {width}")
    return vdevs * (width - p)
