"""Raw cells: fio on the host's bare data disks, no pool, as the baseline ZFS is compared with.

A raw cell is the `raw` level of `layout` in a zvol sweep (beside the ZFS layouts, on the
same disks, in the same blocks), or every cell of a `surface: raw` sweep. It measures N data
disks at once: fio's `filename=` lists them, so its I/O spreads round-robin over them, each
disk from offset 0 over a region of the target's size (`target.volsize` in a zvol sweep,
`target.size` in a raw sweep). It has no pool, no zvol, no ZFS property, no pool setting
but the data disks' model, and no fill level but none or whole.

Load time (`check_raw_factors`, `raw_layout`, `raw_target`, `check_raw`): what cannot mean
anything is refused with a one-line ConfigError naming the key. Plan time (`raw_cell`,
`raw_factors`): a raw combination gets a `RawLayout` (its disks) and a target (its region);
a ZFS-only factor beside it (volblocksize, compression, log, ...) does not make a new raw
cell (plan.expand keeps one of equal cells), while `fs: ext4` or a fill percentage skips it
with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size
from zbench_lib.sweeps.spec.factors import FACTORS
from zbench_lib.sweeps.spec.values import fail, mapping, size
from zbench_lib.zfs.models import RAW

# What a raw sweep can vary (spec.factors: the factors whose surfaces include raw): how many
# disks, their model (lab), whether each region is written first (fill none | whole), and fio's
# own parameters.
RAW_FACTORS = tuple(f.name for f in FACTORS if RAW in f.surfaces)
_POOL_SHAPE = ("width", "vdevs", "mirror_width", "ashift", "log", "log_mirror", "cache", "special",
               "log_model", "cache_model", "special_model")
RAW_FILLS = ("none", "whole")


def _why(key: str) -> str:
    if key in _POOL_SHAPE:
        return "it shapes a pool; raw disks are used bare (factors.disks says how many)"
    if key == "zfs" or key.startswith(("zfs_", "l2arc_", "zil_")):
        return "a ZFS setting, and a raw sweep runs no ZFS"
    if key in ("fs", "access"):
        return "fio runs on the bare disks, not on a filesystem or a share"
    if key == "compressible_percent":
        return "nothing compresses what fio writes to bare disks (compression is a dataset or zvol property)"
    return "a ZFS property, and raw disks have no zvol or dataset"


def check_raw_factors(d, known=()) -> dict:
    """A raw sweep's factors: each must apply to bare disks; `layout` is [raw] when absent.
    A key no sweep knows (not in `known`) is left to the caller's check of unknown keys."""
    if not isinstance(d, dict):
        return d                        # the caller's mapping check says what is wrong
    for key in d:
        if key in known and key not in RAW_FACTORS:
            fail(f"factors.{key}", f"does not apply to a raw sweep: {_why(str(key))}")
    return d if "layout" in d else {"layout": [RAW], **d}


def raw_layout(v: dict, path: str) -> dict:
    """The canonical value of a `raw` layout level: the family alone."""
    for key in v:
        if key != "family":
            fail(f"{path}.{key}", "does not apply to raw (the bare disks): their number is factors.disks")
    return {"family": RAW}


def check_layouts(layouts: list, surface: str) -> None:
    """`raw` beside the zvols of a zvol sweep, or alone in a raw sweep; nowhere else."""
    raw = [i for i, v in enumerate(layouts) if v["family"] == RAW]
    if surface == RAW:
        other = next((i for i, v in enumerate(layouts) if v["family"] != RAW), None)
        if other is not None:
            fail(f"factors.layout[{other}]", f"a raw sweep measures the bare disks: its layout is raw "
                                             f"(or absent), got {layouts[other]['family']}")
    elif raw and surface != "zvol":
        fail(f"factors.layout[{raw[0]}]", f"raw (the bare disks) is a layout of zvol sweeps, beside the "
                                          f"zvols, not of a {surface} sweep")
    elif raw and len(raw) == len(layouts):
        fail("factors.layout", "every level is raw: that is a surface: raw sweep (target.size per disk, "
                               "no ZFS factor)")


def raw_target(d) -> dict:
    """A raw sweep's target: its region per disk (`size`), nothing else."""
    for key in d if isinstance(d, dict) else ():
        if key != "size":
            fail(f"target.{key}", "does not apply to raw disks (no zvol, no ZFS property): a raw target "
                                  "is its region per disk, target.size")
    mapping(d, "target", ("size",), ("size",))
    return {"kind": RAW, "size_bytes": size(d["size"], "target.size")}


def has_raw(factors: dict) -> bool:
    return any(v["family"] == RAW for v in factors.get("layout", []))


def check_raw(factors: dict, surface: str, target: dict, prefill: dict, faults, lab) -> None:
    """Refuse a spec whose raw cells could never exist or mean anything."""
    if not has_raw(factors):
        return
    if faults:
        fail("faults", "faults pull or slow a disk of a pool; raw disks have no pool to degrade or resilver")
    if prefill["policy"] != "none" and prefill["fill"] not in RAW_FILLS:
        fail("prefill.fill", f"{prefill['fill']} fills a pool; raw disks have none ('whole' writes each "
                             "disk's region first)")
    fills = factors.get("fill", ["whole"])
    odd = next((i for i, v in enumerate(fills) if v not in RAW_FILLS), None)
    if odd is not None and (surface == RAW or not set(fills) & set(RAW_FILLS)):
        fail(f"factors.fill[{odd}]", f"{fills[odd]} fills a pool; raw disks take none or whole")
    if "fs" in factors and "none" not in factors["fs"]:
        fail("factors.fs", "raw disks carry no filesystem: give fs none beside ext4 for the raw cells")
    key = "target.size" if surface == RAW else "target.volsize"
    if lab is not None and target["size_bytes"] > lab["disk_bytes"]:
        fail(key, f"{format_size(target['size_bytes'])} is larger than a lab disk "
                  f"({format_size(lab['disk_bytes'])}): a raw cell writes that much from the start of each disk")


@dataclass(frozen=True)
class RawLayout:
    """The disks of a raw cell, with what plan and pool_setup read of a zfs Layout."""
    disks: int
    family: ClassVar[str] = RAW
    vdevs: ClassVar[int] = 1
    log: ClassVar[int] = 0
    cache: ClassVar[int] = 0
    special: ClassVar[int] = 0
    extra_disks: ClassVar[int] = 0

    @property
    def width(self) -> int:             # as a stripe of the same disks is written: width n, 1 vdev
        return self.disks

    data_disks = total_disks = width

    def describe(self) -> str:
        return f"raw({self.disks})"

    def to_dict(self) -> dict:
        return {"family": RAW, "disks": self.disks}


def raw_cell(spec, f: dict) -> tuple[RawLayout, dict]:
    """The disks and target settings of a raw combination; ConfigError (the cell is skipped) says
    why it cannot be. Its disks: factors.disks, else width x vdevs, else every data disk."""
    if f.get("fs", "none") != "none":
        raise ConfigError(f"fs {f['fs']} is made on a zvol; raw disks are measured bare (their cell is fs none)")
    if f.get("fill", "whole") not in RAW_FILLS:
        raise ConfigError(f"fill {f['fill']} is a share of a pool; raw disks take fill none or whole")
    data = spec.available_disks[0]
    n = f["width"] * f.get("vdevs", 1) if "width" in f else f.get("disks", data)
    if n > data:
        raise ConfigError(f"raw({n}) needs {n} data disks but the host has {data}")
    return RawLayout(n), {"size_bytes": spec.target["size_bytes"], **({"fs": "none"} if "fs" in f else {})}


def raw_settings(f: dict) -> dict:
    """The pool-level settings that apply to raw disks: the data disks' model, nothing of ZFS."""
    return {k: f[k] for k in ("model",) if k in f}


def raw_factors(layout: RawLayout, settings: dict, f: dict) -> dict:
    """A raw cell's factors (its result columns) before the workload's."""
    return {"layout": RAW, "width": layout.width, "vdevs": layout.vdevs, "data_disks": layout.data_disks,
            "total_disks": layout.total_disks, "layout_label": layout.describe(), "surface": RAW,
            **{k: v for k, v in settings.items() if k != "size_bytes"}, "region_bytes": settings["size_bytes"],
            **{k: f[k] for k in ("fill", "zfs") if k in f}, **raw_settings(f)}


def fio_target(layout, settings: dict) -> tuple:
    """(filename, size) a workload's job is checked with at plan time: a zvol, or every raw
    disk's region (fio splits the size evenly between the disks)."""
    if layout.family != RAW:
        return "/dev/zvol/plan/target", settings["size_bytes"]
    return [f"/dev/plan/raw{i}" for i in range(layout.disks)], settings["size_bytes"] * layout.disks
