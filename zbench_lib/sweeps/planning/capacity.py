"""Do a pool's targets fit in it? OpenZFS's space accounting, approximated at plan time.

A pool's targets live side by side until the pool is destroyed (the executor creates
them one after another and never destroys one alone), so the sum of what they take must
fit the pool's usable space. Only lab pools are checked: their disk size is known;
a real host's disks are not read before the sweep, so no claim is made for them.

Need of a target, in the deflated bytes that ``zfs`` accounts in:

- a zvol is thick (no ``-s``): its refreservation is what libzfs computes
  (``zvol_volsize_to_reservation``): the data blocks scaled by the raidz allocation of
  a volblocksize block against a 128K one (``volsize_from_vdevs``, via
  ``families.raidz.raidz_asize``; stripes and mirrors count volsize), times ``copies``, plus
  the indirect blocks as 128K each (times copies + 1, at most 3). Prefill and fio
  write inside that reservation, so they add nothing. Checked against the examples'
  read-back ``used`` (8 of 8 targets exact to the MiB).
- a dataset has no reservation: its file (``size``, which prefill never exceeds) is
  counted with the same scaling at its recordsize, plus the same metadata estimate.

Usable space of a pool: each disk loses ~9 MiB to the whole-disk partitioning (1 MiB
alignment, 8 MiB partition 9) and 4.5 MiB to the vdev labels; a top-level vdev is
cut to whole metaslabs (``vdev_metaslab_set_size``: under 8 GiB, 16 metaslabs of
asize/16 rounded up to a power of two, so up to a sixteenth is lost; from 64 metaslabs
on, one is kept for the embedded log, as 2.2 and later do); raidz space is
deflated by the 128K block's allocation (``vdev_deflate_ratio``); dRAID space is its
children less spares, less 32 MiB each and cut to whole 16 MiB rows and groups
(``vdev_draid_open``), deflated the same way with ``draid.asize``; the slop space
(``spa_get_slop_space``: 1/32, at least 128 MiB on small pools, at most 128 GiB) is
kept back. MOS and space-map metadata (a few MiB) are not counted. Log, cache and
special devices add no space to the normal class. Pool replicates are separate pools
created one after another, so they do not add up.
"""

from __future__ import annotations

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size
from zbench_lib.sweeps.planning.records import PlanPool, Target
from zbench_lib.zfs.layouts import Layout

MiB, GiB = 1024 ** 2, 1024 ** 3
DISK_OVERHEAD = 9 * MiB + 4 * MiB + 512 * 1024     # partitioning + front labels/boot + back labels
OLD_MAX_BLOCK = 128 * 1024                          # SPA_OLD_MAXBLOCKSIZE, the deflate reference
DNODES_PER_LEVEL = 1024                             # block pointers in a 128K indirect block


def _whole_metaslabs(asize: int) -> int:
    """Bytes of a top-level vdev in whole metaslabs (vdev_metaslab_set_size, OpenZFS 2.x)."""
    count = asize >> 29
    shift = (asize // 16).bit_length() if count < 16 else (asize // 200).bit_length() if count > 200 else 29
    shift = min(max(shift, 24), 34)
    count = asize >> shift
    return (count - (count >= 64)) << shift           # 2.2+: one kept for the embedded log if 64+


def usable_bytes(layout: Layout, disk_bytes: int) -> int:
    """Approximate bytes the pool's datasets can use (``zfs list`` AVAIL of an empty pool)."""
    child = max(disk_bytes - DISK_OVERHEAD, 0)
    vdevs, asize = layout.fam.vdev_space(layout, child)
    space = _whole_metaslabs(asize)
    if layout.parity:           # a parity vdev's space is deflated by its allocation of a 128K block
        ratio = (1 << 17) // (layout.fam.alloc(1 << 17, layout) >> 9)
        space = (space >> 9) * ratio
    dspace = vdevs * space
    slop = max(min(dspace >> 5, 128 * GiB), min(dspace >> 1, 128 * MiB))
    return max(dspace - slop, 0)


def _scaled(nblocks: int, block: int, layout: Layout) -> int:
    """Deflated bytes of ``nblocks`` blocks of ``block`` bytes (volsize_from_vdevs)."""
    if not layout.parity:
        return nblocks * block
    return nblocks * layout.fam.alloc(block, layout) * OLD_MAX_BLOCK // layout.fam.alloc(OLD_MAX_BLOCK, layout)


def target_need(target: Target, layout: Layout) -> int:
    """Bytes a target takes in its pool (see the module's note)."""
    zvol = target.kind == "zvol"
    block = target.volblocksize_bytes if zvol else target.recordsize_bytes or OLD_MAX_BLOCK
    # a dataset with clients holds a file per client, written by the clients even without a prefill
    data = max(target.size_bytes * target.files, 0 if zvol else target.prefill_bytes)
    copies = int(target.copies or 1)
    nblocks = -(-data // block)
    indirect, n = 7, nblocks                       # the meta-dnode's levels, then the indirects
    while n > 1:
        n = -(-n // DNODES_PER_LEVEL)
        indirect += n
    return copies * _scaled(nblocks, block, layout) + indirect * min(3, copies + 1) * OLD_MAX_BLOCK


def check_fits(spec, pools: list[PlanPool], targets: list[Target]) -> None:
    """ConfigError when a lab pool's targets together need more than the pool holds."""
    if not spec.disk_bytes:
        return
    key = "target.size" if spec.surface == "dataset" else "target.volsize"
    for pool in (p for p in pools if p.kind != "raw"):   # raw disks: their region is checked at load
        layout = Layout.from_dict(pool.layout)
        mine = [t for t in targets if t.pool_id == pool.pool_id]
        need = sum(target_need(t, layout) for t in mine)
        usable = usable_bytes(layout, spec.disk_bytes)
        if need > usable:
            what = ("thick zvols reserve volsize" + (" scaled by the raidz allocation" if layout.parity else "")
                    if spec.surface != "dataset" else "files of the target size") + ", plus metadata"
            raise ConfigError(
                f"{key}: the {len(mine)} target(s) of pool {pool.pool_id} need {need / GiB:.2f} GiB "
                f"({what}); {layout.describe()} of {layout.total_disks} x {format_size(spec.disk_bytes)} "
                f"lab disks holds about {usable / GiB:.2f} GiB usable: use fewer or smaller targets per "
                f"pool or a larger lab.disk_size")
