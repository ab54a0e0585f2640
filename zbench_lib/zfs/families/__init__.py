"""The layout-family registry: one typed record per family, one module per kind of vdev.

A `Family` holds everything that differs between stripe, mirror, raidz1/2/3 and draid1/2/3: how
many disks carry data, the usable bytes, the vdev arguments of ``zpool create`` and the topology
read back, the rules of its width, how a disk count splits into vdevs for the planner, the
allocation that capacity checks deflate by, and the space and IOPS models overlaid on results.
`layouts.Layout`, the planner, the capacity check, the estimate and the models ask the record
(`get(layout.family)`) instead of branching on the family's name; adding a family is a module
here defining ``FAMILIES`` (a tuple of records), and its test.

Methods take a `layouts.Layout` (``width``, ``vdevs``, ``ashift``, the ``draid_*`` fields); the
``*_of`` forms and the models take the name-level facts a results row carries (width, vdevs).
The registry is built on first use, not at import: the family modules import this one.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache

from zbench_lib.core.errors import ConfigError


@dataclass(frozen=True)
class Family:
    """A family with ``vdevs`` top-level vdevs of ``width`` disks each; subclasses say the rest."""
    name: str
    parity: int = 0                 # parity disks' worth per vdev (or group, for dRAID)
    min_width: int = 1
    aliases: tuple = ()             # other spellings of the name in results rows ("raidz")
    spec_keys: tuple = ()           # keys of a factors.layout mapping beyond family/width/vdevs
    layout_fields: tuple = ()       # Layout fields only this family takes (written in plan.json)
    redundant: bool = True          # survives a lost disk, so a special vdev beside it must too
    space_model: bool = True        # space_efficiency / charged_bytes cover it
    iops_model: bool = True         # random_read_iops covers it
    width_unit: str = "disks per vdev"
    rank: int = 100                 # where it is listed (messages, help); a new family goes after the shipped

    # -- disks ---------------------------------------------------------------
    def total_disks(self, lay) -> int:
        return lay.width * lay.vdevs

    def data_disks(self, lay) -> int | float:
        return self.count_data(lay.width, lay.vdevs)

    def count_data(self, width: int, vdevs: int) -> int | float:
        raise NotImplementedError

    def data_disks_of(self, width: int, vdevs: int = 1) -> int | float:
        """Data disks of a results row's width and vdevs; ConfigError for a shape that cannot be."""
        if width < 1 or vdevs < 1:
            raise ConfigError(f"width and vdevs must be >= 1, got {width} and {vdevs}")
        if width < self.min_width:
            raise ConfigError(f"{self.name} needs more than {self.min_width - 1} disks per vdev, got width {width}")
        return self.count_data(width, vdevs)

    def redundancy(self, lay) -> int:
        """Disks per top-level vdev that may fail without data loss."""
        return self.parity

    def usable_bytes(self, lay, disk_bytes: int) -> int:
        return self.data_disks(lay) * disk_bytes

    def label(self, lay) -> str:
        return f"{lay.vdevs}x {self.name}({lay.width})"

    # -- validation ----------------------------------------------------------
    def width_problems(self, lay) -> list[str]:
        """The width's rules, then those of the family's own fields (one message lists them all)."""
        return self.width_rules(lay) + self.field_rules(lay)

    def width_rules(self, lay) -> list[str]:
        if lay.width < 1:
            return [f"width must be at least 1, got {lay.width}"]
        if lay.width < self.min_width:
            return [f"{self.name} needs width >= {self.min_width} {self.width_unit}, got {lay.width}"]
        return []

    def field_rules(self, lay) -> list[str]:
        """A family without fields of its own refuses the dRAID ones (Layout's only such fields)."""
        if not self.layout_fields and (lay.draid_data or lay.draid_spares):
            return [f"draid_data and draid_spares apply to draid1/2/3 only and must be 0 for "
                    f"{self.name}, got {lay.draid_data} and {lay.draid_spares}"]
        return []

    def vdev_problems(self, lay) -> list[str]:
        return [f"vdevs must be at least 1, got {lay.vdevs}"] if lay.vdevs < 1 else []

    # -- zpool ---------------------------------------------------------------
    def keyword(self, lay) -> str:
        return self.name

    def vdev_args(self, lay, data: list[str]) -> list[str]:
        """``zpool create``'s data vdevs from the data devices, in order."""
        out = []
        for i in range(lay.vdevs):
            out += [self.keyword(lay)] + data[i * lay.width:(i + 1) * lay.width]
        return out

    def data_topology(self, lay) -> list[tuple[str, int]]:
        """The data class as `layouts.parse_zpool_status_json` reads it back."""
        return [(self.name, lay.width)] * lay.vdevs

    def spare_topology(self, lay) -> dict:
        return {}

    # -- planning ------------------------------------------------------------
    def shape(self, disks: int, factors: dict, lay: dict) -> tuple[int, int]:
        """(width, vdevs) of `disks` data disks, from a factors.layout mapping without a width."""
        vdevs = lay.get("vdevs", 1)
        if disks % vdevs:
            raise ConfigError(f"{disks} disks do not split into {vdevs} {self.name} vdevs")
        return disks // vdevs, vdevs

    def factors(self, lay) -> dict:
        """Result columns of the family's own fields, beside layout/width/vdevs."""
        return {}

    # -- capacity (sweeps/planning/capacity.py) ----------------------------------------
    def vdev_space(self, lay, child_bytes: int) -> tuple[int, int]:
        """(top-level vdevs, allocatable bytes of each) from each disk's usable bytes."""
        return lay.vdevs, child_bytes

    def alloc(self, psize: int, lay) -> int:
        """Bytes a block of ``psize`` allocates on one vdev; asked only of a family with parity."""
        raise NotImplementedError(f"{self.name} has no parity to deflate by")

    # -- models (zfs/models.py) ----------------------------------------------
    def space_efficiency(self, width: int, volblocksize: int, ashift: int) -> float:
        raise ConfigError(f"{self.name}: no space model")

    def charged_bytes(self, psize: int, width: int, ashift: int) -> int:
        raise ConfigError(f"{self.name}: no space model")

    def random_read_iops(self, width: int, vdevs: int, disk_iops: float, volblocksize: int,
                         ashift: int, count_parity: bool) -> float:
        raise ConfigError(f"{self.name}: no IOPS model")

    def seq_read_allowance(self, block: int, ashift: int, width: int) -> float:
        """Device bytes read per logical byte a healthy sequential read may cost (read_amplification)."""
        return 1.0


def sector_round(nbytes: int, ashift: int) -> int:
    """Bytes rounded up to whole sectors: what one copy of a block takes."""
    sector = 1 << ashift
    return -(-nbytes // sector) * sector


@cache
def _registry() -> tuple[dict[str, Family], dict[str, Family]]:
    """(records by name in the modules' order, records by name and alias)."""
    found = {}
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        for fam in importlib.import_module(f"{__name__}.{mod.name}").FAMILIES:
            if fam.name in found:
                raise ConfigError(f"layout family {fam.name} is defined twice")
            found[fam.name] = fam
    ordered = dict(sorted(found.items(), key=lambda kv: (kv[1].rank, kv[0])))
    return ordered, {**{a: f for f in found.values() for a in f.aliases}, **found}


def by_name() -> dict[str, Family]:
    """Every family's record by name, in rank order."""
    return dict(_registry()[0])


def names() -> tuple[str, ...]:
    """Every family's name (not its aliases): what a spec and a Layout accept."""
    return tuple(_registry()[0])


def find(name) -> Family | None:
    """The family called `name` (or an alias of it), else None."""
    return _registry()[1].get(name) if isinstance(name, str) else None


def get(name) -> Family:
    """The family called `name` (or an alias of it); ConfigError naming the known ones otherwise."""
    fam = find(name)
    if fam is None:
        raise ConfigError(f"unknown layout family {name!r}; expected one of {', '.join(names())}")
    return fam
