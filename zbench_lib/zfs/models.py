"""Models to overlay on measurements: raidz space allocation and random-read IOPS.

`raidz_asize` is OpenZFS `vdev_raidz_asize` verbatim, so space predictions are exact
for incompressible data (compression changes psize, not the rounding rule).
"""

from __future__ import annotations

import math

import pandas as pd

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.geometry import data_disks, parity_of

KiB = 1024
DEFAULT_VOLBLOCKSIZES = tuple(k * KiB for k in (4, 8, 16, 32, 64, 128))


def _check(width: int, parity: int, ashift: int):
    if not 9 <= ashift <= 16:
        raise ConfigError(f"ashift must be 9..16, got {ashift}")
    if width <= parity:
        raise ConfigError(f"raidz{parity} needs more than {parity} disks, got width {width}")


def raidz_asize(psize: int, ashift: int, width: int, parity: int) -> int:
    """Bytes a raidz vdev allocates for a block of `psize` bytes (vdev_raidz_asize).

    s = ceil(psize / 2^ashift); s += p · ceil(s / (w − p)); allocated = roundup(s, p+1) · 2^ashift.

    Examples
    --------
    >>> raidz_asize(8192, 12, 6, 2)   # 2 data + 2 parity sectors, rounded up to 6
    24576
    """
    _check(width, parity, ashift)
    s = -(-psize >> ashift)                        # ceil(psize / sector)
    s += parity * -(-s // (width - parity))
    return -(-s // (parity + 1)) * (parity + 1) << ashift


def space_efficiency(layout: str, width: int, volblocksize: int, ashift: int = 12) -> float:
    """Logical bytes per raw byte allocated across all disks, for incompressible blocks.

    stripe: 1; mirror: 1/width; raidz: volblocksize / raidz_asize. A block smaller
    than a sector still takes a whole sector. Note that ZFS's own `used` hides this
    on mirrors (one copy is counted) and deflates raidz by the 128K ratio, see
    `zfs_charged_bytes`.

    Examples
    --------
    >>> round(space_efficiency("raidz1", 5, 16384), 3), space_efficiency("mirror", 3, 8192)
    (0.667, 0.3333333333333333)
    """
    p = parity_of(layout)
    sector = 1 << ashift
    rounded = -(-volblocksize // sector) * sector
    if layout == "stripe":
        return volblocksize / rounded
    if layout == "mirror":
        return volblocksize / rounded / width
    return volblocksize / raidz_asize(volblocksize, ashift, width, p)


def zfs_charged_bytes(psize: int, layout: str, width: int, ashift: int = 12) -> int:
    """Bytes ZFS reports as `used` for one block (bp_get_dsize on a non-expanded vdev).

    raidz scales allocated size by the vdev's deflate ratio, computed in 512-byte units
    from a 128K block: (asize >> 9) · floor(2^17 / (asize(128K) >> 9)). So a 128K block
    is charged ~128K, and an 8K block on raidz2 of 6 at ashift 12 ~16K, not the 24K it
    allocates. Mirrors and stripes charge one copy rounded to a sector.
    """
    p = parity_of(layout)
    if layout in ("stripe", "mirror"):
        sector = 1 << ashift
        return -(-psize // sector) * sector
    ratio = (1 << 17) // (raidz_asize(1 << 17, ashift, width, p) >> 9)
    return (raidz_asize(psize, ashift, width, p) >> 9) * ratio


def space_table(configs, ashift: int = 12, volblocksizes=DEFAULT_VOLBLOCKSIZES) -> pd.DataFrame:
    """Allocation and efficiency per layout × volblocksize, as a tidy table.

    `allocated_bytes` is raw space on all disks; `charged_bytes` what ZFS reports as used.

    `configs` is one (layout, width) pair or a list of them.

    Examples
    --------
    >>> t = space_table(("raidz2", 6), volblocksizes=[4096, 8192, 16384])
    >>> t["efficiency"].round(3).tolist()
    [0.333, 0.333, 0.667]
    """
    if isinstance(configs, tuple) and len(configs) == 2 and isinstance(configs[0], str):
        configs = [configs]
    rows = []
    for layout, width in configs:
        p = parity_of(layout)
        for vbs in volblocksizes:
            eff = space_efficiency(layout, width, vbs, ashift)
            rows.append(dict(layout=layout, width=width, ashift=ashift, volblocksize_bytes=vbs,
                             parity=p, allocated_bytes=round(vbs / eff), efficiency=eff,
                             charged_bytes=zfs_charged_bytes(vbs, layout, width, ashift)))
    return pd.DataFrame(rows)


def predicted_random_read_iops(layout: str, width: int, vdevs: int, disk_iops: float,
                               volblocksize: int, ashift: int = 12,
                               count_parity: bool = True) -> float:
    """First-order random-read IOPS of a pool from one disk's random-read IOPS.

    stripe: disk_iops × disks (each block lives on one disk); mirror: disk_iops × all
    disks (any copy can serve a read). raidz: each read occupies the disks its block
    touches, so a vdev serves disk_iops · width / touched, with touched =
    min(width, ceil(volblocksize / sector) + p): one disk's IOPS once the block spans
    all data disks (volblocksize >= (width − p) · sector), more for small blocks.
    Approximations: healthy raidz reads skip parity columns, so with
    `count_parity=False` touched = min(width − p, sectors) (an upper estimate);
    queueing, ARC hits, aggregation and CPU limits are ignored.

    Examples
    --------
    >>> predicted_random_read_iops("raidz2", 6, 1, 200, 128 * 1024)
    200.0
    >>> predicted_random_read_iops("mirror", 2, 3, 200, 16384)
    1200.0
    """
    p = parity_of(layout)
    data_disks(layout, width, vdevs)               # validates width and vdevs
    if layout == "stripe":
        return float(disk_iops * width * vdevs)
    if layout == "mirror":
        return float(disk_iops * width * vdevs)
    sectors = math.ceil(volblocksize / (1 << ashift))
    touched = min(width, sectors + p) if count_parity else min(width - p, sectors)
    return float(vdevs * disk_iops * width / touched)
