"""Models to overlay on measurements, by layout name as results rows carry it: space allocation
and random-read IOPS. Each family's record (zfs/families/) holds its model (raidz's allocation is
`families.raidz.raidz_asize`, OpenZFS `vdev_raidz_asize` verbatim); these give the analysis one
entry point, and the raw disks (no pool, no family) their IOPS envelope.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs import families

if TYPE_CHECKING:  # imported where used: spec validation reads this module and needs no pandas
    import pandas as pd

KiB = 1024
DEFAULT_VOLBLOCKSIZES = tuple(k * KiB for k in (4, 8, 16, 32, 64, 128))


RAW = "raw"      # the raw surface's layout: fio on the bare disks, no pool


def has_model(layout: str, what: str = "iops") -> bool:
    """Whether these models cover the layout, for `what`: "iops" (predicted_random_read_iops)
    or "space" (allocation and charge), as its family's record says. dRAID pads blocks to whole
    groups and needs its data disks per group, so it has none here (the analysis shows NaN, not a
    raidz guess). Raw disks have an IOPS envelope (N disks, N x one disk: see
    predicted_random_read_iops; their bandwidth envelope is likewise N x one disk's, which the
    scaling table's disk_equivalents shows without a model) but nothing is allocated on them, so
    no space model. A name no family knows is left to the model's own ConfigError."""
    if str(layout) == RAW:
        return what == "iops"
    fam = families.find(str(layout))
    return fam is None or (fam.iops_model if what == "iops" else fam.space_model)


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
    return families.get(layout).space_efficiency(width, volblocksize, ashift)


def zfs_charged_bytes(psize: int, layout: str, width: int, ashift: int = 12) -> int:
    """Bytes ZFS reports as `used` for one block (bp_get_dsize on a non-expanded vdev).

    raidz scales allocated size by the vdev's deflate ratio, computed in 512-byte units
    from a 128K block: (asize >> 9) · floor(2^17 / (asize(128K) >> 9)). So a 128K block
    is charged ~128K, and an 8K block on raidz2 of 6 at ashift 12 ~16K, not the 24K it
    allocates. Mirrors and stripes charge one copy rounded to a sector.
    """
    return families.get(layout).charged_bytes(psize, width, ashift)


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
        p = families.get(layout).parity
        for vbs in volblocksizes:
            eff = space_efficiency(layout, width, vbs, ashift)
            rows.append(dict(layout=layout, width=width, ashift=ashift, volblocksize_bytes=vbs,
                             parity=p, allocated_bytes=round(vbs / eff), efficiency=eff,
                             charged_bytes=zfs_charged_bytes(vbs, layout, width, ashift)))
    import pandas as pd

    return pd.DataFrame(rows)


def predicted_random_read_iops(layout: str, width: int, vdevs: int, disk_iops: float,
                               volblocksize: int, ashift: int = 12,
                               count_parity: bool = False) -> float:
    """First-order random-read IOPS of a pool from one disk's random-read IOPS.

    stripe: disk_iops × disks (each block lives on one disk); mirror: disk_iops × all disks
    (any copy can serve a read). raidz: each read occupies the disks it touches, its data
    columns (`raidz_data_columns`), and the vdev's disks serve reads independently, so a
    vdev gives disk_iops · width / touched. A block that fits in one sector touches one disk:
    small-block raidz reads scale with all disks of the vdev (raidz1 of 6 at 4K: 6 disks'
    worth). A block spanning all data columns touches width − p disks: width/(width − p),
    about one disk's worth per vdev (1.2 for raidz1 of 6). `count_parity=True` adds the p
    parity columns (reads that must reconstruct, e.g. a degraded vdev). Ignored: queueing
    and the fork-join wait of multi-column reads (measured below the model at mid sizes),
    ARC hits, aggregation and CPU limits. docs/methods.md §11.

    Examples
    --------
    >>> predicted_random_read_iops("raidz1", 6, 1, 100, 4 * 1024)
    600.0
    >>> predicted_random_read_iops("raidz1", 6, 1, 100, 128 * 1024)
    120.0
    >>> predicted_random_read_iops("mirror", 2, 3, 200, 16384)
    1200.0

    raw (the bare disks, width x vdevs of them): disk_iops x disks, reads and writes alike.
    Sound as an envelope, not a guess: fio spreads its I/O round-robin over the disks, which
    are independent (no parity, no copies, no block larger than the I/O), so each serves 1/N
    of it and none can serve more than its own envelope. It assumes at least one I/O in
    flight per disk (iodepth x numjobs >= N); below that it over-predicts.

    >>> predicted_random_read_iops("raw", 4, 1, 150, 16384)
    600.0
    """
    if layout == RAW:
        if width < 1 or vdevs < 1:
            raise ConfigError(f"raw disks must be >= 1, got width {width} and vdevs {vdevs}")
        return float(disk_iops * width * vdevs)
    return families.get(layout).random_read_iops(width, vdevs, disk_iops, volblocksize, ashift, count_parity)
