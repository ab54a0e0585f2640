"""stripe: ``width`` disks, each its own single-disk top-level vdev; ``vdevs`` stays 1 (one way to
say it, so specs compare equal). No redundancy: every disk carries data."""

from __future__ import annotations

from dataclasses import dataclass

from zbench_lib.zfs.families import Family, sector_round


@dataclass(frozen=True)
class Stripe(Family):
    def total_disks(self, lay) -> int:
        return lay.width

    def data_disks(self, lay) -> int:
        return lay.width

    def count_data(self, width: int, vdevs: int) -> int:
        return width * vdevs            # a results row may write n disks as width n or as n vdevs of 1

    def label(self, lay) -> str:
        return f"stripe({lay.width})"

    def vdev_problems(self, lay) -> list[str]:
        if lay.vdevs >= 1 and lay.vdevs != 1:
            return [f"stripe: width is the number of disks, so vdevs must be 1, got {lay.vdevs}"]
        return super().vdev_problems(lay)

    def vdev_args(self, lay, data: list[str]) -> list[str]:
        return list(data)               # bare devices: each one a top-level vdev

    def data_topology(self, lay) -> list[tuple[str, int]]:
        return [("leaf", 0)] * lay.width

    def shape(self, disks: int, factors: dict, lay: dict) -> tuple[int, int]:
        return disks, 1

    def vdev_space(self, lay, child_bytes: int) -> tuple[int, int]:
        return lay.width, child_bytes

    def space_efficiency(self, width: int, volblocksize: int, ashift: int) -> float:
        return volblocksize / sector_round(volblocksize, ashift)

    def charged_bytes(self, psize: int, width: int, ashift: int) -> int:
        return sector_round(psize, ashift)

    def random_read_iops(self, width, vdevs, disk_iops, volblocksize, ashift, count_parity) -> float:
        self.data_disks_of(width, vdevs)               # validates width and vdevs
        return float(disk_iops * width * vdevs)        # each block lives on one disk


FAMILIES = (Stripe("stripe", redundant=False, rank=0),)
