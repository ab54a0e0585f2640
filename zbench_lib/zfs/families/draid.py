"""draid1/2/3: ``vdevs`` dRAID vdevs of ``width`` children; ``draid_data`` data disks per
redundancy group (0: OpenZFS's default) and ``draid_spares`` distributed spares per vdev.
Its rules, keyword, space and allocation are zfs/draid.py's (with their OpenZFS sources).

It has no space or IOPS model here: a block is padded to whole groups and its geometry needs
the data disks per group, so a raidz guess would be wrong (the analysis shows NaN)."""

from __future__ import annotations

from dataclasses import dataclass

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs import draid
from zbench_lib.zfs.families import Family


@dataclass(frozen=True)
class DRaid(Family):
    def _dr(self, lay) -> tuple[int, int, int, int]:
        return lay.width, self.parity, lay.draid_data, lay.draid_spares

    def ndata(self, lay) -> int:
        """Data disks per group in effect (the default resolved)."""
        return draid.ndata(*self._dr(lay))

    def data_disks(self, lay) -> int | float:
        return draid.data_disks(lay.vdevs, *self._dr(lay))

    def data_disks_of(self, width: int, vdevs: int = 1):
        raise ConfigError(f"{self.name}: dRAID geometry needs data disks per group and distributed spares, not "
                          "just width and vdevs, and pads every block to whole groups unlike raidz: use "
                          "layouts.Layout (data_disks, usable_bytes) and the zfs.draid module")

    def usable_bytes(self, lay, disk_bytes: int) -> int:
        return draid.usable_bytes(lay.vdevs, *self._dr(lay), disk_bytes)

    def label(self, lay) -> str:
        return f"{lay.vdevs}x {self.name}({lay.width}: {self.ndata(lay)}d, {lay.draid_spares}s)"

    def field_rules(self, lay) -> list[str]:
        return draid.problems(*self._dr(lay)) if lay.width >= 1 else []

    def keyword(self, lay) -> str:
        return draid.keyword(*self._dr(lay))

    def spare_topology(self, lay) -> dict:
        """Its distributed spares, listed under the pool's spares, when there are some."""
        return {"spare": [("dspare", 0)] * (lay.vdevs * lay.draid_spares)} if lay.draid_spares else {}

    def factors(self, lay) -> dict:
        return {"draid_data": self.ndata(lay), "draid_spares": lay.draid_spares}

    def vdev_space(self, lay, child_bytes: int) -> tuple[int, int]:
        return lay.vdevs, draid.vdev_asize(child_bytes, *self._dr(lay))

    def alloc(self, psize: int, lay) -> int:
        return draid.asize(psize, lay.ashift, self.ndata(lay), self.parity)

    def space_efficiency(self, width: int, volblocksize: int, ashift: int) -> float:
        return self.data_disks_of(width)

    def charged_bytes(self, psize: int, width: int, ashift: int) -> int:
        return self.data_disks_of(width)

    def random_read_iops(self, width, vdevs, disk_iops, volblocksize, ashift, count_parity) -> float:
        return self.data_disks_of(width, vdevs)


_SHARED = dict(layout_fields=("draid_data", "draid_spares"), spec_keys=("data", "spares"),
               space_model=False, iops_model=False)
FAMILIES = tuple(DRaid(f"draid{p}", parity=p, rank=4 + p, **_SHARED) for p in (1, 2, 3))
