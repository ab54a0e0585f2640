"""raidz1/2/3: ``vdevs`` raidz vdevs of ``width`` disks, ``p`` of them parity; its allocation rule.

`raidz_asize` is OpenZFS `vdev_raidz_asize` verbatim, so space predictions are exact for
incompressible data (compression changes psize, not the rounding rule).
"""

from __future__ import annotations

from dataclasses import dataclass

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.families import Family

MAX_RAIDZ_WIDTH = 255


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


def raidz_data_columns(psize: int, ashift: int, width: int, parity: int) -> int:
    """Disks a healthy raidz read of one block touches: its data columns.

    The block's ceil(psize / 2^ashift) data sectors are laid out over the width − p data
    columns of its row (as in vdev_raidz_map_alloc), one column per disk, so a read touches
    min(width − p, sectors) disks; parity columns are read only to reconstruct.

    Examples
    --------
    >>> raidz_data_columns(4096, 12, 6, 1), raidz_data_columns(16384, 12, 6, 1), raidz_data_columns(131072, 12, 6, 1)
    (1, 4, 5)
    """
    _check(width, parity, ashift)
    return min(width - parity, -(-psize >> ashift))


@dataclass(frozen=True)
class RaidZ(Family):
    def count_data(self, width: int, vdevs: int) -> int:
        return vdevs * (width - self.parity)

    def width_rules(self, lay) -> list[str]:
        if lay.width > MAX_RAIDZ_WIDTH:
            return [*super().width_rules(lay), f"{self.name} width {lay.width} exceeds the maximum of "
                                               f"{MAX_RAIDZ_WIDTH} disks in a raidz vdev"]
        return super().width_rules(lay)

    def vdev_space(self, lay, child_bytes: int) -> tuple[int, int]:
        return lay.vdevs, child_bytes * lay.width

    def alloc(self, psize: int, lay) -> int:
        return raidz_asize(psize, lay.ashift, lay.width, self.parity)

    def space_efficiency(self, width: int, volblocksize: int, ashift: int) -> float:
        return volblocksize / raidz_asize(volblocksize, ashift, width, self.parity)

    def charged_bytes(self, psize: int, width: int, ashift: int) -> int:
        """raidz scales the allocated size by the vdev's deflate ratio, computed in 512-byte units
        from a 128K block: (asize >> 9) · floor(2^17 / (asize(128K) >> 9))."""
        ratio = (1 << 17) // (raidz_asize(1 << 17, ashift, width, self.parity) >> 9)
        return (raidz_asize(psize, ashift, width, self.parity) >> 9) * ratio

    def random_read_iops(self, width, vdevs, disk_iops, volblocksize, ashift, count_parity) -> float:
        """Each read occupies the disks it touches (its data columns, plus the parity ones when
        `count_parity`), and the vdev's disks serve reads independently: disk_iops · width / touched
        per vdev (zfs/models.py: predicted_random_read_iops)."""
        self.data_disks_of(width, vdevs)               # validates width and vdevs
        touched = raidz_data_columns(volblocksize, ashift, width, self.parity)
        touched = min(width, touched + self.parity) if count_parity else touched
        return float(vdevs * disk_iops * width / touched)

    def seq_read_allowance(self, block: int, ashift: int, width: int) -> float:
        """A sequential read also reads the skip sectors padding each block: its allocation ratio."""
        if width <= self.parity:
            return 1.0
        return raidz_asize(block, ashift, width, self.parity) / block


FAMILIES = tuple(RaidZ(f"raidz{p}", parity=p, min_width=p + 1, rank=1 + p, aliases=("raidz",) if p == 1 else (),
                       width_unit=f"disks per vdev (parity {p} + at least 1 data disk)") for p in (1, 2, 3))
