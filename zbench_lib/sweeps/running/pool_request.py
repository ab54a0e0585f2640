"""What the executor runs for one pool replicate, as typed, frozen, picklable records.

``PoolRequest.from_plan(plan, pool)`` reads the plan's pool record and its targets once,
with what the spec says around them (the fill level, the signatures allowed, the declared
L2ARC warm-up, whether faults are studied), so the executor needs neither the spec nor the
plan's dicts to make the pool, and a request can be sent as it is to another machine (it
pickles). ``Target`` is one target of the plan (``plan.targets``); its ``surface`` names
what fio runs on (``surfaces.SURFACES``). plan.json keeps its dicts: these are read from them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from zbench_lib.sweeps.planning.plan import Plan, pool_fill
from zbench_lib.sweeps.spec.raw_cells import RAW, RawLayout
from zbench_lib.zfs.layouts import Layout

# ZFS properties a target sets at creation (zfs create -o), when the plan gives them
ZFS_PROPERTIES = ("compression", "sync", "logbias", "primarycache", "secondarycache", "checksum", "copies")


@dataclass(frozen=True)
class Target:
    """One target of the plan: a zvol, a dataset's file, or the raw disks' region (kind raw)."""
    target_id: str
    pool_id: str
    kind: str                                   # zvol, dataset or raw
    size_bytes: int                             # volsize, the file's size, or the region on each raw disk
    pool_replicate: int = 1
    prefill_bytes: int = 0                      # the plan's estimate
    prefill_s: float = 0.0
    file_bytes: int | None = None               # the file fio uses in a filesystem on the zvol
    volblocksize_bytes: int | None = None
    recordsize_bytes: int | None = None
    fs: str | None = None                       # none or ext4 (zvol sweeps, fs-on-zvol)
    access: str | None = None                   # local or nfs (dataset sweeps)
    compressible_percent: int | None = None     # the data declared, where a spec declares it
    compression: str | None = None
    sync: str | None = None
    logbias: str | None = None
    primarycache: str | None = None
    secondarycache: str | None = None
    checksum: str | None = None
    copies: int | None = None
    atime: str | None = None
    special_small_blocks: int | None = None

    @classmethod
    def from_dict(cls, d: dict) -> Target:
        """A plan's target record; a key this class does not know is a TypeError, never dropped."""
        return cls(**d)

    def to_dict(self) -> dict:
        """The plan's record again: the keys it had (None stands for a key the plan left out)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @property
    def surface(self) -> str:
        """What fio runs on: raw, fs-on-zvol (a filesystem made on the zvol), nfs (the dataset
        through an NFS mount), else the ZFS target itself (zvol, dataset)."""
        if self.kind == RAW:
            return RAW
        if self.fs not in (None, "none"):
            return "fs-on-zvol"
        if self.access == "nfs":
            return "nfs"
        return self.kind

    @property
    def fio_bytes(self) -> int:
        """What is written before the runs and read by them: the file in a filesystem, else the target."""
        return self.size_bytes if self.file_bytes is None else self.file_bytes

    def zfs_properties(self) -> dict:
        return {k: getattr(self, k) for k in ZFS_PROPERTIES if getattr(self, k) is not None}


@dataclass(frozen=True)
class PoolRequest:
    """One pool replicate to run: its layout (a zfs Layout, or the raw disks' RawLayout: no pool),
    what is set around it, its targets in the plan's run order, and what the spec says of them."""
    pool_id: str
    label: str
    layout: Layout | RawLayout
    replicate: int
    block: int                                  # 1-based, in the plan's blocks
    fill: str                                   # how its targets are prefilled (plan.pool_fill)
    targets: tuple[Target, ...]
    settings: dict | None = None                # disk models and module parameters (pool_setup)
    zfs: str | None = None                      # the OpenZFS release, when a factor
    allow_signatures: tuple[str, ...] = ()
    l2arc_warmup: dict | None = None            # the declared warm-up (spec.warmup's l2arc)
    fault_study: bool = False                   # a lost disk then describes the run (truth.py)

    @property
    def pooled(self) -> bool:
        """A zpool is made for it; raw disks (layout raw) are measured with no pool."""
        return self.layout.family != RAW

    @classmethod
    def from_plan(cls, plan: Plan, pool: dict) -> PoolRequest:
        spec = plan.spec
        targets = {t["target_id"]: t for t in plan.targets if t["pool_id"] == pool["pool_id"]}
        order = dict.fromkeys([r.target_id for r in plan.runs if r.target_id in targets] + list(targets))
        layout = RawLayout(pool["layout"]["disks"]) if pool.get("kind") == RAW else Layout.from_dict(pool["layout"])
        return cls(pool_id=pool["pool_id"], label=pool["label"], layout=layout, replicate=pool["pool_replicate"],
                   block=next(i for i, b in enumerate(plan.blocks, 1) if pool["pool_id"] in b),
                   fill=pool_fill(spec, pool), targets=tuple(Target.from_dict(targets[t]) for t in order),
                   settings=pool.get("settings"), zfs=pool.get("zfs"),
                   allow_signatures=tuple(spec.allow_signatures or ()),
                   l2arc_warmup=(spec.warmup or {}).get("l2arc"), fault_study=bool(spec.faults))


def pool_requests(plan: Plan) -> list[PoolRequest]:
    """Every pool replicate of the plan, in the order they are run (``Plan.pool_order``)."""
    return [PoolRequest.from_plan(plan, p) for p in plan.pool_order()]
