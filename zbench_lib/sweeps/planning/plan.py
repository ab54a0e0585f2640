"""A plan before any run: one pure expansion of a sweep spec.

``expand(spec)`` turns the factor grid into cells (valid combination x workload),
skipped cells with their reasons, pools (one per layout + ashift + log; targets and
workloads share it; each pool replicated ``repetitions.pool_replicates`` times, see
``blocks``), targets (one per distinct target-level settings within a pool) and runs in
execution order. Only the pilot (``repetitions.pilot``, or all of a fixed design) is
planned up front; ``RepetitionRule`` decides what a cell gets more (``Plan.extra_run``).
Run ids (``c1a2b3c-r02``) hash the cell's factors, so they survive re-expansion. A raw cell
(``layout: raw``, ``surface: raw``: the bare disks, ``raw_cells``) gets a pool of kind raw.
Cells, pools and targets are typed, frozen records (``records``); plan.json holds their dicts.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field, replace

from typing import TYPE_CHECKING

from zbench_lib.measure import fio
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.zfs import families
from zbench_lib.zfs.layouts import Layout
from zbench_lib.core.sizes import format_size, parse_size
from zbench_lib.sweeps.planning.blocks import Run, attempt_seed, order_runs, replicate, run_id
from zbench_lib.sweeps.planning.capacity import check_fits
from zbench_lib.sweeps.planning import probes
from zbench_lib.sweeps.planning.records import Cell, PlanPool, Target
from zbench_lib.measure.load import Load, probe_seconds
from zbench_lib.sweeps.spec.faults import check_faults
from zbench_lib.sweeps.spec.factors import BLOCKSIZE, PROPERTIES
from zbench_lib.sweeps.spec.sweep_spec import FS_FILE_SHARE, ZVOL_SURFACES, SweepSpec, check_grid
from zbench_lib.sweeps.spec import io_path
from zbench_lib.sweeps.spec.pool import pool_settings
from zbench_lib.sweeps.spec.warmup import describe_warmup, warmup_estimate
from zbench_lib.sweeps.spec.raw_cells import RAW, fio_target, raw_cell, raw_factors, raw_settings
from zbench_lib.sweeps.planning.estimate import (RUN_OVERHEAD_S, disk_rates as _disk_rates, estimates,
                                                 prefill_seconds)
from zbench_lib.zfs.targets import Dataset, Zvol

if TYPE_CHECKING:
    import pandas as pd

MiB, GiB = 1024 ** 2, 1024 ** 3


def _layout(f: dict, spec: SweepSpec) -> Layout:
    """The Layout a combination asks for; ConfigError says why it cannot be built."""
    lay, fam = f["layout"], f["layout"]["family"]
    if "width" in lay:
        width, vdevs = lay["width"], lay.get("vdevs", 1)
    elif "width" in f:
        width, vdevs = f["width"], f.get("vdevs", 1)
    else:
        width, vdevs = families.get(fam).shape(f.get("disks", spec.available_disks[0]), f, lay)
    special = f.get("special", 0)
    layout = Layout(fam, width, vdevs, ashift=f.get("ashift", 12), log=f.get("log", 0),
                    log_mirror=f.get("log_mirror", False), cache=f.get("cache", 0), special=special,
                    special_mirror=special >= 2, draid_data=lay.get("data", 0),
                    draid_spares=lay.get("spares", 0)).validate()
    data, extra = spec.available_disks
    if layout.total_disks > data:
        raise ConfigError(f"{layout.describe()} needs {layout.total_disks} data disks "
                          f"but the host has {data}")
    if layout.extra_disks > extra:
        raise ConfigError(f"{layout.describe()} needs {layout.extra_disks} extra disk(s) for "
                          f"log/cache/special but the host has {extra}")
    return layout


def _short_id(factors: dict, n: int = 6) -> str:
    return hashlib.sha1(json.dumps(factors, sort_keys=True).encode()).hexdigest()[:n]


@dataclass
class Plan:
    spec: SweepSpec
    cells: list[Cell]
    skipped: list                                   # dicts: workload, factors (as combined), reason
    pools: list[PlanPool]
    targets: list[Target]
    runs: list[Run]
    estimates: dict
    blocks: list = field(default_factory=list)     # pool ids per block, in run order

    def cell(self, cell_id: str) -> Cell:
        for c in (c for c in self.cells if c.cell_id == cell_id):
            return c
        raise ZbenchError(f"no cell {cell_id!r} in this plan")

    def pool_order(self) -> list[PlanPool]:
        """The pools in the order they are run: block by block (``blocks``)."""
        by_id = {p.pool_id: p for p in self.pools}
        return [by_id[pid] for block in self.blocks for pid in block]

    def extra_run(self, cell_id: str, rep: int) -> Run:
        """A run the repetition rule adds beyond the planned ones (a replacement or Stein's second stage)."""
        c = self.cell(cell_id)
        if not self.spec.repetitions["pilot"] < rep <= 999:
            raise ZbenchError(f"{cell_id}: rep {rep} is not an added repetition (planned reps are "
                              f"1..{self.spec.repetitions['pilot']}, added ones up to 999)")
        return Run(run_id(cell_id, rep), cell_id, rep, c.pool_id, c.target_id)

    def run_meta(self, run: Run) -> dict:
        """Everything meta.json records about a run: its ids, rep, order, pool replicate and every factor."""
        c = self.cell(run.cell_id)
        return {"sweep": self.spec.name, "run_id": run.run_id, "cell_id": run.cell_id, "rep": run.rep,
                "order_index": run.order, "pool_id": run.pool_id, "target_id": run.target_id,
                "pool_replicate": c.pool_replicate, "base_cell_id": c.base_cell_id,
                "seed": self.spec.seed, "factors": dict(c.factors), "fio": dict(c.fio)}

    def summary(self) -> pd.DataFrame:
        """One row per cell: ids, factors, planned and maximum runs, estimated time and bytes."""
        import pandas as pd  # here, not at the top: a dry-run's refusal should not load pandas (~100 MB)

        r = self.spec.repetitions
        rows = [{"cell_id": c.cell_id, "pool_id": c.pool_id, "target_id": c.target_id,
                 "pool_replicate": c.pool_replicate, **c.factors, "runs_planned": r["pilot"],
                 "runs_max": r["max"], "est_time_s": r["pilot"] * c.run_s,
                 "est_bytes_written": r["pilot"] * c.write_bytes_per_run}
                for c in self.cells]
        return pd.DataFrame(rows)

    def describe(self) -> str:
        """A few lines for the notebook, the CLI and --dry-run."""
        s, e = self.spec, self.estimates
        host = s.host if s.lab is None else (f"lab ({s.lab['disks']} x {format_size(s.lab['disk_bytes'])} "
                                             f"{s.lab['model']}, {s.lab['extra_disks']} extra)")
        hms = lambda t: f"{int(t // 3600)}h{int(t % 3600 // 60):02d}m{int(t % 60):02d}s"  # noqa: E731
        r, nblocks = s.repetitions, len(self.blocks)
        order = ("randomised (pools within each block, targets within each pool)" if s.order == "randomised"
                 else "as written") + (", reads before writes within a target" if s.reads_first else "")
        design = (f"up to {e['runs_max']} by Stein's two-stage rule (pilot {r['pilot']}, max {r['max']}, "
                  f"target rel CI half-width {r['target_rel_ci'] * 100:g}% on {r['metric']})"
                  if r["design"] == "stein" else f"a fixed design on {r['metric']}")
        lines = [f"sweep {s.name!r}: {s.question}", f"surface {s.surface} on {host}",
                 f"cells: {len(self.cells)} ({len(self.skipped)} skipped), pools: {len(self.pools)}"
                 + (f" ({len(self.pools) // nblocks} x {nblocks} pool replicates in randomised blocks)"
                    if nblocks > 1 else "") + f", targets: {len(self.targets)}",
                 f"runs: {len(self.runs)} planned ({r['pilot']} per cell), {design}; "
                 f"excluded runs replaced up to {r['max_attempts']} attempts per cell",
                 _describe_units(s),
                 f"estimated wall time: {_up_to(e['wall_s'], e['wall_max_s'], hms)}, "
                 f"{hms(e['measure_s'])} inside fio measurement windows; "
                 f"{hms(e['wall_attempts_max_s'])} if every run were excluded and replaced",
                 f"estimated bytes written: {_up_to(e['bytes_written'], e['bytes_written_max'], _gib)}, "
                 f"prefill {_gib(e['prefill_bytes'])}",
                 f"order: {order}; seed {s.seed}; " + _describe_randseed(s)] \
            + describe_warmup(s, e) + _describe_until_steady(s) \
            + _describe_steady_power(self.cells) + probes.describe(self.cells) + _describe_clients(s) \
            + io_path.describe(s)
        if s.faults and s.faults.get("resilver"):
            n = len(self.pools) * (2 if s.faults.get("resilver_load") else 1)
            lines.append(f"plus {n} timed resilvers, not in the estimate (their time is what is measured; "
                         "it grows with the data allocated and, under load, with the load)")
        brief = lambda f: {k: v["family"] if k == "layout" and len(v) == 1 else v for k, v in f.items()}  # noqa: E731
        lines += [f"  skipped {sk['workload']} {brief(sk['factors'])}: {sk['reason']}" for sk in self.skipped]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Deterministic: the same spec gives the same dict (what plan.json holds)."""
        s = self.spec
        return {"format": 1, "sweep": s.name, "question": s.question, "surface": s.surface, "host": s.host,
                "lab": s.lab, "seed": s.seed, "order": s.order, "reads_first": s.reads_first,
                "repetitions": s.repetitions, "prefill": s.prefill, "pools": [p.to_dict() for p in self.pools],
                "targets": [t.to_dict() for t in self.targets], "cells": [c.to_dict() for c in self.cells],
                "skipped": self.skipped,
                "blocks": self.blocks, "runs": self._run_dicts(), "estimates": self.estimates,
                "randseed": s.randseed,
                **({"warmup": s.warmup} if s.warmup else {})}   # only if declared: older plan.json still match

    def _run_dicts(self) -> list[dict]:
        """The runs as plan.json holds them, each with its first attempt's randseed where it draws its own
        (a replacement attempt draws another: blocks.run_seed)."""
        cells = {c.cell_id: c for c in self.cells}
        seeds = ((r, attempt_seed(self.spec, cells[r.cell_id], r.run_id, 1)) for r in self.runs)
        return [{**vars(r), **({} if seed is None else {"randseed": seed})} for r, seed in seeds]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"


def _gib(n: float) -> str:
    return f"{n / GiB:.2f} GiB"


def _up_to(value: float, most: float, fmt) -> str:
    """'X (up to Y)' where the design can take more than its planned runs (Stein, until_steady), else 'X'."""
    return fmt(value) + (f" (up to {fmt(most)})" if fmt(most) != fmt(value) else "")


def _describe_units(spec: SweepSpec) -> str:
    """What the design's intervals will speak for (issue 45): pools as units, or one pool each."""
    r = spec.repetitions
    pools, runs = r["pool_replicates"], r["pilot"]
    if pools >= 2:
        return (f"units: {pools} pools per configuration, created one after another, x {runs} run(s) on each: "
                "the intervals and comparisons will speak for the configurations")
    return (f"units: one pool per configuration, {runs} runs on it: the intervals will speak for that pool, and "
            "every comparison for the two pools it compares (repetitions.pool_replicates: 3 re-creates them)")


def _describe_randseed(spec: SweepSpec) -> str:
    """How the runs' random offsets are drawn (issue 45)."""
    pinned = [w.name for w in spec.workloads if "randseed" in w.overrides]
    line = ("every run replays one random sequence (randseed: fixed)" if spec.randseed == "fixed" else
            "each run draws its own random offsets (a randseed from the seed, the run and the attempt)")
    return line + (f"; {', '.join(pinned)} pin a randseed of their own" if pinned and spec.randseed != "fixed" else "")


def _describe_until_steady(spec: SweepSpec) -> list[str]:
    """A line per workload whose runs are extended until steady (methods §12.1)."""
    return [f"{w.name}: each run measures further windows until one is steady, at most "
            f"{w.until_steady.max_windows} (its result is its last window; the estimate's maximum counts them all)"
            for w in spec.workloads if w.until_steady]


def _describe_clients(spec: SweepSpec) -> list[str]:
    """A line when the load comes from client VMs (issue 30): what the sweep boots besides its lab."""
    if not spec.clients:
        return []
    return [f"clients: {spec.clients} client lab(s) (1 CPU, 1 GiB each) booted once beside the lab, one after "
            "another (a few minutes each, not in the estimate); each target "
            + ("served over iSCSI as one LUN, every one of them logged in to it, each in a region of its own"
               if spec.target.get("access") == "iscsi" else "mounted on every one of them over NFS")
            + ", each run's load from the first k of them (its `clients` level)"]


def _describe_steady_power(cells: list[Cell]) -> list[str]:
    """A line per writing workload whose window is too short for the steady-state test to see a 10%
    drift 80% of the time at the lab's write noise (methods §12; raw disks have no TXG bursts)."""
    # Here, not at the top: steady loads scipy.stats (~100 MB, a second), which expand() does not need.
    from zbench_lib.measure.steady import WRITE_WINDOW_10PCT_S

    short: dict = {}
    for c in cells:
        if not c.reads_only and c.factors["layout"] != RAW and c.runtime_s < WRITE_WINDOW_10PCT_S:
            short[c.workload] = min(c.runtime_s, short.get(c.workload, math.inf))
    return [f"{w}: its windows of {t:g} s are short for the steady-state check: a 10% drift of a write is seen "
            f"under 80% of the time at the lab's noise ({WRITE_WINDOW_10PCT_S:g} s at best; methods §12)"
            for w, t in short.items()]


def _target_spec(spec: SweepSpec, f: dict, layout: Layout) -> dict:
    """Target-level settings of a combination; ConfigError if ZFS would refuse or it cannot fit."""
    bkey = f"{BLOCKSIZE[spec.surface]}_bytes"
    settings = {k: v for k, v in spec.target.items() if k != "kind"}
    settings.update({k: f[k] for k in PROPERTIES if k in f})
    if BLOCKSIZE[spec.surface] in f:
        settings[bkey] = f[BLOCKSIZE[spec.surface]]
    kw = {k: v for k, v in settings.items() if k in PROPERTIES or k == bkey}
    t = Zvol("target", volsize_bytes=settings["size_bytes"], **kw) if spec.surface in ZVOL_SURFACES \
        else Dataset("target", **kw)
    settings[bkey] = getattr(t.validate(), bkey)
    if "access" in f:
        settings["access"] = f["access"]
    if spec.clients:                # the client labs that mount the target: its cells use the first k
        settings["clients"] = spec.clients
    fs = f.get("fs", settings.pop("fs", None))
    if fs is not None:              # fio on a file in a filesystem made on the zvol, or (none) the zvol itself
        settings["fs"] = fs
        if fs != "none":
            settings["file_bytes"] = int(settings["size_bytes"] * FS_FILE_SHARE) // MiB * MiB
    usable = layout.usable_bytes(spec.disk_bytes) if spec.disk_bytes else None
    if usable and settings["size_bytes"] > usable:
        raise ConfigError(f"target of {format_size(settings['size_bytes'])} does not fit in "
                          f"{layout.describe()} (about {format_size(usable)} usable)")
    return settings


def _zfs_factors(spec: SweepSpec, f: dict, layout: Layout, settings: dict) -> dict:
    """A ZFS cell's factors before the workload's (a raw cell's: raw_cells.raw_factors)."""
    return {"layout": layout.family, "width": layout.width, "vdevs": layout.vdevs,
            "data_disks": layout.data_disks, "total_disks": layout.total_disks, "log": layout.log,
            "ashift": layout.ashift, "layout_label": layout.describe(),
            **layout.fam.factors(layout),
            **{k: v for k, v in settings.items() if k not in ("size_bytes", "file_bytes")},
            ("volsize_bytes" if spec.surface in ZVOL_SURFACES else "file_size_bytes"): settings["size_bytes"],
            **({"file_size_bytes": settings["file_bytes"]} if "file_bytes" in settings else {}),
            **{k: f[k] for k in ("fill", "zfs", "clients") if k in f}, **pool_settings(f)}


def _declared_data(spec: SweepSpec, w, f: dict) -> dict:
    """{"compressible_percent": p}: the data a ZFS cell's target holds, where the spec declares
    compressible data anywhere (a factor, or a workload's override). A target setting, so targets
    differ by it and each is prefilled with the data its workloads declare (reads read what the
    prefill wrote); {} where nothing is declared, so those plans are as they were."""
    key = "compressible_percent"
    if key not in spec.factors and not any(key in x.overrides for x in spec.workloads):
        return {}
    return {key: f.get(key, w.overrides.get(key, w.kind.defaults[key]))}


def _offered_rate(load: Load, saturation_rate: float, bs_bytes: int) -> float:
    """The bytes per second a run writes at `load`: the saturation estimate, its fraction, or the
    absolute rate (never above the saturation estimate: an open loop offers, the pool may not keep up)."""
    if load.fraction is not None:
        return load.fraction * saturation_rate
    return saturation_rate if load.iops is None else min(saturation_rate, load.iops * bs_bytes)


# factors that are fio job parameters: a cell's level overrides its workload's
FIO_FACTORS = ("iodepth", "numjobs", "bs", "compressible_percent", "ioengine", "direct")


def _cell(spec: SweepSpec, w, f: dict, layout, settings: dict, rates: tuple) -> dict:
    """One cell without ids: its factors (the result columns), fio overrides and estimates."""
    params = {**w.overrides, **{k: f[k] for k in FIO_FACTORS if k in f}}
    filename, fio_size = fio_target(layout, settings)
    try:
        fio.build_job(w.template, filename=filename, size=fio_size, **params)
    except ConfigError as e:
        raise ConfigError(f"workload {w.name}: {e}") from None
    merged = {**w.kind.defaults, **params}
    raw = layout.family == RAW
    factors = {**(raw_factors(layout, settings, f) if raw else _zfs_factors(spec, f, layout, settings)),
               "workload": w.name, "template": w.template, "iodepth": merged["iodepth"],
               "numjobs": merged["numjobs"], "bs_bytes": parse_size(merged["bs"], "bs"),
               # only where declared: other ids unchanged
               **{k: f[k] for k in ("load", "ioengine", "direct") if k in f}}
    measured = merged["ramp_time_s"] + merged["runtime_s"]
    share = (0.0 if w.reads_only else 1.0) if merged["rwmixread"] is None else 1 - merged["rwmixread"] / 100
    rate = _offered_rate(Load.of(f.get("load")), layout.data_disks * min(rates[0], rates[1] * factors["bs_bytes"]),
                         factors["bs_bytes"])
    return {"workload": w.name, "template": w.template, "reads_only": w.reads_only, "factors": factors,
            "fio": params, "runtime_s": merged["runtime_s"], "run_s": measured + RUN_OVERHEAD_S,
            "write_bytes_per_run": int(share * rate * measured),
            # only where declared: plan.json of every other spec stays as it was (a resume compares it)
            **({"until_steady": w.until_steady.to_record()} if w.until_steady else {}),
            **({"probe_s": probe_seconds(params, w.kind) + RUN_OVERHEAD_S}
               if Load.of(f.get("load")).needs_probe else {})}


def run_seconds(fio: dict) -> float:
    """A run's fio time, from its fio parameters: ramp plus measurement, as the executor gives fio."""
    return float(fio.get("runtime_s", 60)) + float(fio.get("ramp_time_s", 10))


def expand(spec: SweepSpec) -> Plan:
    """Every factor combination x workload: a cell, or a skipped cell with its reason.

    ConfigError before any expansion when the grid is over spec.MAX_CELLS / MAX_RUNS, and
    after it when a lab pool's targets together do not fit (``capacity.check_fits``)."""
    check_grid(spec.factors, spec.workloads, spec.repetitions)     # before any expansion
    keys, rates = list(spec.factors), _disk_rates(spec)
    cells, skipped, seen, pools, targets = [], [], set(), {}, {}
    for combo in itertools.product(*(spec.factors[k] for k in keys)):
        f = dict(zip(keys, combo))
        for w in spec.workloads:
            raw = f["layout"]["family"] == RAW
            try:
                layout, settings = raw_cell(spec, f) if raw else \
                    (lay := _layout(f, spec), {**_target_spec(spec, f, lay), **_declared_data(spec, w, f)})
                cell = _cell(spec, w, f, layout, settings, rates)
            except ConfigError as e:
                skipped.append({"workload": w.name, "factors": f, "reason": str(e)})
                continue
            key = json.dumps(cell["factors"], sort_keys=True)
            if key in seen:
                continue            # e.g. mirror_width varied for a raidz layout
            seen.add(key)
            # A fill level is the pool's state: each level gets pools of its own, so one cell's
            # filler never fills another's pool. An OpenZFS release is the lab's: its pools too.
            # Disk models and module parameters are set around a pool, so they too get pools of their own.
            # Raw disks ("kind": raw) are a pool of their own: no zpool, their checks and wipe around it.
            around = raw_settings(f) if raw else pool_settings(f)
            pkey = json.dumps([layout.to_dict(), f.get("fill"), f.get("zfs"), around], sort_keys=True)
            pool = pools.setdefault(pkey, _pool(f"p{len(pools) + 1:02d}", layout, raw, f, around))
            n_in_pool = sum(t.pool_id == pool.pool_id for t in targets.values())
            target = targets.setdefault(json.dumps([pool.pool_id, settings], sort_keys=True), Target.from_dict(
                {"target_id": f"{pool.pool_id}-t{n_in_pool + 1:02d}", "pool_id": pool.pool_id,
                 "kind": RAW if raw else spec.target["kind"], **settings}))
            cells.append({"cell_id": None, "pool_id": pool.pool_id, "target_id": target.target_id, **cell})
    _assign_ids(cells)
    cells_l, pools_l = [Cell.from_dict(c) for c in cells], list(pools.values())
    targets_l = [_prefilled(spec, t, next(p for p in pools_l if p.pool_id == t.pool_id)) for t in targets.values()]
    check_fits(spec, pools_l, targets_l)        # a pool's targets together, before replication
    check_faults(spec.faults, pools_l, min((run_seconds(c.fio) for c in cells_l), default=0.0),
                 spec.available_disks[0])
    pools_l, targets_l, cells_l = replicate(pools_l, targets_l, cells_l, spec.repetitions["pool_replicates"])
    blocks, runs = order_runs(spec, pools_l, targets_l, cells_l)
    return Plan(spec, cells_l, skipped, pools_l, targets_l, runs,
                estimates(spec, cells_l, pools_l, targets_l, warmup_estimate(spec, pools_l, targets_l)), blocks)


def _pool(pool_id: str, layout, raw: bool, f: dict, around: dict) -> PlanPool:
    """A pool record before replication: its layout, and what is set around it where anything is."""
    return PlanPool(pool_id, layout.to_dict(), layout.describe(), layout.data_disks, kind=RAW if raw else None,
                    fill=f.get("fill"), zfs=f.get("zfs"), settings=around or None)


def _prefilled(spec: SweepSpec, t: Target, pool: PlanPool) -> Target:
    """`t` with its prefill estimate. Every target is written whole; a percentage fill adds a filler
    dataset per pool (zfs/prefill.py) whose size depends on the pool's real free space: not estimated here."""
    data = pool.data_disks
    nbytes = 0 if pool_fill(spec, pool) == "none" else t.fio_bytes \
        * (data if t.kind == RAW else t.files)       # a raw target's region on each of its disks, a client's file each
    return replace(t, prefill_bytes=nbytes, prefill_s=prefill_seconds(spec, nbytes, data, pool.layout["family"]))


def _assign_ids(cells: list, n: int = 6) -> None:
    """Each cell dict's id, from its factors (before it becomes a record)."""
    ids = [f"c{_short_id(c['factors'], n)}" for c in cells]
    if len(set(ids)) < len(ids):    # a prefix collision: longer ids for everyone, still stable
        return _assign_ids(cells, n + 2)
    for c, i in zip(cells, ids):
        c["cell_id"] = i


def pool_fill(spec: SweepSpec, pool: PlanPool) -> str:
    """How a pool's targets are prefilled: its fill factor level, else the spec's prefill."""
    if spec.prefill["policy"] == "none":
        return "none"
    return spec.prefill["fill"] if pool.fill is None else pool.fill
