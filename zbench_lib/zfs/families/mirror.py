"""mirror: ``vdevs`` mirrors of ``width`` disks; one copy's worth of data per mirror."""

from __future__ import annotations

from dataclasses import dataclass

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.families import Family, sector_round


@dataclass(frozen=True)
class Mirror(Family):
    def count_data(self, width: int, vdevs: int) -> int:
        return vdevs

    def data_disks_of(self, width: int, vdevs: int = 1) -> int:
        if width < 1 or vdevs < 1:      # a one-disk "mirror" in a results row is still one data disk
            raise ConfigError(f"width and vdevs must be >= 1, got {width} and {vdevs}")
        return vdevs

    def redundancy(self, lay) -> int:
        return lay.width - 1

    def shape(self, disks: int, factors: dict, lay: dict) -> tuple[int, int]:
        if "vdevs" in lay:
            return super().shape(disks, factors, lay)
        width = factors.get("mirror_width", 2)
        if disks % width:
            raise ConfigError(f"mirror of {width}-way vdevs cannot use {disks} disks "
                              f"({disks} is not a multiple of {width})")
        return width, disks // width

    def space_efficiency(self, width: int, volblocksize: int, ashift: int) -> float:
        return volblocksize / sector_round(volblocksize, ashift) / width

    def charged_bytes(self, psize: int, width: int, ashift: int) -> int:
        return sector_round(psize, ashift)      # ZFS's `used` counts one copy

    def random_read_iops(self, width, vdevs, disk_iops, volblocksize, ashift, count_parity) -> float:
        self.data_disks_of(width, vdevs)               # validates width and vdevs
        return float(disk_iops * width * vdevs)        # any copy can serve a read


FAMILIES = (Mirror("mirror", min_width=2, width_unit="disks per mirror", rank=1),)
