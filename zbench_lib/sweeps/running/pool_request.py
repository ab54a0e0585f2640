"""What the executor runs for one pool replicate, as typed, frozen, picklable records.

``PoolRequest.from_plan(plan, pool)`` reads the plan's pool record and its targets once,
with what the spec says around them (the fill level, the signatures allowed, the declared
L2ARC warm-up, whether faults are studied), so the executor needs neither the spec nor the
plan's records to make the pool, and a request can be sent as it is to another machine (it
pickles). Its targets are the plan's own ``Target`` records (``planning.records``); their
``surface`` names what fio runs on (``surfaces.SURFACES``).
"""

from __future__ import annotations

from dataclasses import dataclass

from zbench_lib.sweeps.planning.plan import Plan, pool_fill
from zbench_lib.sweeps.planning.records import PlanPool, Target
from zbench_lib.sweeps.spec.raw_cells import RAW, RawLayout
from zbench_lib.zfs.layouts import Layout

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
    def from_plan(cls, plan: Plan, pool: PlanPool) -> PoolRequest:
        spec = plan.spec
        targets = {t.target_id: t for t in plan.targets if t.pool_id == pool.pool_id}
        order = dict.fromkeys([r.target_id for r in plan.runs if r.target_id in targets] + list(targets))
        layout = RawLayout(pool.layout["disks"]) if pool.kind == RAW else Layout.from_dict(pool.layout)
        return cls(pool_id=pool.pool_id, label=pool.label, layout=layout, replicate=pool.pool_replicate,
                   block=next(i for i, b in enumerate(plan.blocks, 1) if pool.pool_id in b),
                   fill=pool_fill(spec, pool), targets=tuple(targets[t] for t in order),
                   settings=pool.settings, zfs=pool.zfs,
                   allow_signatures=tuple(spec.allow_signatures or ()),
                   l2arc_warmup=(spec.warmup or {}).get("l2arc"), fault_study=bool(spec.faults))


def pool_requests(plan: Plan) -> list[PoolRequest]:
    """Every pool replicate of the plan, in the order they are run (``Plan.pool_order``)."""
    return [PoolRequest.from_plan(plan, p) for p in plan.pool_order()]
