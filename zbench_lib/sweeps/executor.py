"""Execute a sweep plan: pools, targets, prefill, runs, repetitions, resume.

Pools are created block by block (``Plan.blocks``: replicate k of every pool in block
k), each used for every target and workload that can share it, and destroyed. What
runs where is a ``schedule.Schedule`` built from the plan and the raw record: runs
already COMPLETE are skipped, and a resumed cell decides with all its completed runs,
so rerunning an interrupted sweep completes only what is missing. Raw disks (a pool of kind
raw) are not made a pool: ``raw_surface`` checks, measures and wipes them in their block.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from tqdm.auto import tqdm

from zbench_lib.measure import provenance
from zbench_lib.core.crash import crash_point
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.zfs.layouts import Layout
from zbench_lib.sweeps.doctor import preflight_spec
from zbench_lib.hosts.node import Node
from zbench_lib.sweeps.sweep_host import check_release, open_host
from zbench_lib.sweeps.faults import FaultInjector
from zbench_lib.sweeps.pool_setup import pool_setup, restore_unfinished
from zbench_lib.sweeps.surfaces import on_surface
from zbench_lib.sweeps.plan import Plan, expand, pool_fill
from zbench_lib.sweeps.raw_surface import run_raw_pool
from zbench_lib.sweeps.run_loop import flush as _flush, measured_run, model_context, run_target
from zbench_lib.sweeps.repetitions import RepetitionRule
from zbench_lib.sweeps.schedule import Schedule, outcomes_from_raw
from zbench_lib.zfs.pools import Pool, find_leftovers, live_pools, new_pool_name, remove_leftovers
from zbench_lib.zfs.prefill import prefill
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.store import Store
from zbench_lib.sweeps.spec import SweepSpec, load_spec
from zbench_lib.sweeps.warmup import cache_devices, warm_target
from zbench_lib.zfs.targets import Dataset, Zvol

_TARGET_PROPS = ("compression", "sync", "logbias", "primarycache", "secondarycache",
                 "checksum", "copies")


def make_target(t: dict):
    props = {k: t[k] for k in _TARGET_PROPS if t.get(k) is not None}
    if t["kind"] == "zvol":                     # also under a filesystem (fs-on-zvol)
        return Zvol(t["target_id"].replace("-", "_"), t["size_bytes"], t["volblocksize_bytes"], **props)
    return Dataset(t["target_id"].replace("-", "_"), t.get("recordsize_bytes", 131072),
                   atime=t.get("atime"), special_small_blocks=t.get("special_small_blocks"), **props)


def run_sweep(spec_path, out_root="data/sweeps", *, resume_dir=None, sweep_id=None, progress=True,
              dry_run=False, log=print, host=None) -> Path | None:
    """Run (or resume) the sweep of `spec_path`; returns the sweep directory.

    `host` may be an already-open `hosts.node.Node`, e.g. the test session's lab; otherwise
    the spec's host is opened.
    """
    spec = load_spec(spec_path)
    plan = expand(spec)
    if dry_run:
        log(plan.describe())
        return None
    if spec.host != "lab" and host is None:
        preflight_spec(spec)            # a real host: reachable, root, OpenZFS, fio, devices free
    if resume_dir:
        store = Store.resume(resume_dir, spec.text, plan, parse_run=parse_results)   # torn COMPLETE runs redone
    else:
        store = Store.create(out_root, spec.text, plan, sweep_id=sweep_id)
    log(f"sweep {store.sweep_id}: {len(plan.runs)} planned runs -> {store.path}")
    try:
        _execute(spec, plan, store, progress, log, host)
        crash_point("results")
        df = store.rebuild_results(parse_results)
        store.finish(rows=len(df))
        log(f"results: {len(df)} rows in {store.path / 'results.parquet'}")
    finally:
        store.close()
    return store.path


def _execute(spec: SweepSpec, plan: Plan, store: Store, progress: bool, log,
             given_host: Node | None = None) -> None:
    sched = _schedule(plan, store, parse_results)
    _flush(store, sched)
    todo_pools = [p for p in plan.pool_order() if sched.pool_has_work(p["pool_id"])]
    overall = tqdm(total=sched.done_count + sched.remaining(), initial=sched.done_count, desc="sweep",
                   unit="run", disable=not progress, position=0)
    measure_s = 0.0
    t_sweep = time.monotonic()
    # One host for the whole sweep, or one lab per OpenZFS release when the release is a
    # factor (its pools run together on that release's lab, in the plan's order).
    by_release: dict = {}
    for p in todo_pools:
        by_release.setdefault(p.get("zfs"), []).append(p)
    if given_host and set(by_release) != {None}:
        raise ConfigError("a sweep with the OpenZFS release as a factor opens its own labs; no host can be given")
    for release, pools in by_release.items():
        opened = contextlib.nullcontext(given_host) if given_host else open_host(spec, release)
        with opened as node:
            faults = FaultInjector(spec.faults, store, node, seed=spec.seed)   # refused without device control
            _record_environment(store, node, log)
            restore_unfinished(store, node.host, log)       # module parameters a killed session left set
            if release is not None:
                check_release(store, node.host, release)
            faults.reattach_missing(list(node.data_devices))    # a disk an interrupted fault sweep left unplugged
            try:
                for p in pools:             # raw disks (kind raw) are checked and wiped, not made a pool
                    run_pool = run_raw_pool if p.get("kind") == "raw" else _run_pool
                    measure_s += run_pool(spec, plan, store, sched, p, node, faults, progress, overall)
            finally:
                faults.cleanup()        # a pool's block ended early: a pulled disk goes back all the same
    overall.close()
    wall = time.monotonic() - t_sweep
    store.record(Event.TIMING, wall_s=round(wall, 1), measure_s=round(measure_s, 1),
                 measure_share=round(measure_s / wall, 3) if wall else None)
    log(f"wall {wall:.0f} s, inside fio measurement windows {measure_s:.0f} s "
        f"({100 * measure_s / wall:.0f}%)")


def _schedule(plan: Plan, store: Store, parse_run) -> Schedule:
    """What is left to run, from the plan and the raw record (every completed attempt and its rows)."""
    attempts = store.completed_attempts()
    return Schedule(plan, RepetitionRule.from_spec(plan.spec), outcomes_from_raw(attempts, plan, parse_run),
                    known_events=store.events(), seed=plan.spec.seed, completed=[a[0] for a in attempts])


def _reclaim_own_leftovers(store: Store, host, log) -> None:
    """Destroy pools an interrupted session of this sweep left (named in its events)."""
    ours = {e.get("pool") for e in store.events() if e.get("event") == Event.POOL_CREATING}
    mine = [p for p in find_leftovers(host) if p in ours and p not in live_pools(host)]
    if mine:
        log(f"removing pools an interrupted run of this sweep left: {', '.join(mine)}")
        remove_leftovers(host, mine)
        store.record(Event.LEFTOVERS_REMOVED, pools=mine)


def _record_environment(store: Store, node: Node, log) -> None:
    host = node.host
    _reclaim_own_leftovers(store, host, log)
    leftovers = find_leftovers(host)
    if leftovers:
        log(f"note: zbench pools left from an earlier crash on {host.name}: {leftovers} "
            "(remove them with `zbench pools cleanup`)")
        store.record(Event.LEFTOVERS_FOUND, pools=leftovers)
    prov = provenance.collect(host, devices_list=list(node.data_devices + node.extra_devices),
                              extra=node.provenance)
    store.record(Event.PROVENANCE, **{k: v for k, v in prov.items() if not k.startswith("zfs_param")})
    # One environment record per session: a resumed sweep may run on a new lab boot.
    _write_json(store.path / f"host-provenance-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json", prov)


def _run_pool(spec, plan, store, sched, p, node: Node, faults, progress, overall) -> float:  # noqa: PLR0913 (the sweep's state passed on; debt, issue 28)
    """Create one pool (replicate), run every target of it that has work, destroy it; seconds measured."""
    host = node.host
    layout = Layout.from_dict(p["layout"])
    devices = list(node.data_devices[:layout.total_disks] + node.extra_devices[:layout.extra_disks])
    measure_s = 0.0
    # Named in the store before `zpool create`: a crash's leftover is then known to be
    # this sweep's own, and the resume destroys it (_reclaim_own_leftovers).
    name = new_pool_name(p["pool_id"])
    store.record(Event.POOL_CREATING, pool_id=p["pool_id"], pool=name)
    with pool_setup(p, layout, devices, node, store) as (pool_model, readback), \
            Pool(host, layout, devices, name=name,
                 owned_devices=node.owned, allow_signatures=tuple(spec.allow_signatures or ())) as pool:
        crash_point("pool-create")
        store.record(Event.POOL_CREATED, pool_id=p["pool_id"], pool=pool.name, layout=p["label"],
                     topology=pool.topology, pool_replicate=p["pool_replicate"],
                     block=next(i for i, b in enumerate(plan.blocks, 1) if p["pool_id"] in b))
        targets = {t["target_id"]: t for t in plan.targets if t["pool_id"] == p["pool_id"]}
        order = dict.fromkeys([r.target_id for r in plan.runs if r.target_id in targets] + list(targets))
        load_on = None                              # where a resilver's load runs: a target of this pool
        for t in [targets[tid] for tid in order if sched.has_work(tid)]:    # the plan's (shuffled) order
            def write_target(tinfo, t=t):       # then the declared L2ARC warm-up, on every setup (resume too)
                level = pool_fill(spec, p)
                fill = {} if level == "none" else \
                    prefill(pool, tinfo, level, progress=progress, size_bytes=t.get("file_bytes", t["size_bytes"]),
                            compressible_percent=t.get("compressible_percent", 0))
                if fill:
                    store.record(Event.PREFILLED, target_id=t["target_id"], **fill)
                return fill, warm_target(spec, store, pool, tinfo, t, cache_devices(layout, devices), fill)

            with on_surface(host, pool.create_target(make_target(t)), t, store, write_target) as (tinfo, (fill, warm)):
                ctx = dict(_context(node, pool, tinfo, t, pool_model or node.disk_model, fill),
                           data_device_count=layout.total_disks, settings_readback=readback, l2arc_warmup=warm,
                           fault_study=bool(spec.faults))     # a lost disk then describes the run (truth.py)
                load_on = {"path": tinfo.path, "size_bytes": ctx["file_bytes"]}

                def run_one(run):
                    with faults.during(p["pool_id"], pool.name, run.run_id, devices):
                        return _one_run(host, store, plan, run, pool, tinfo, devices, ctx, progress)
                measure_s += run_target(store, sched, t["target_id"], run_one, overall)
        try:
            faults.before_teardown(pool, p["pool_id"], p["label"], fill=pool_fill(spec, p), target=load_on)
        finally:
            faults.cleanup()
            store.record(Event.POOL_TEARDOWN, pool_id=p["pool_id"], pool=pool.name)
    return measure_s


def _context(node: Node, pool, tinfo, t, model, fill) -> dict:
    status = pool.status()
    primarycache = tinfo.properties.get("primarycache", "all")
    txg = node.host.run(["cat", "/sys/module/zfs/parameters/zfs_txg_timeout"], check=False).stdout.strip()
    ctx = {"file_bytes": t.get("file_bytes") or (t["size_bytes"] if t.get("kind") == "dataset" else None),
           "cache": "cold" if primarycache in ("metadata", "none") else "warm",
           "scan_at_start": status["scan"], "pool_capacity_pct": status["capacity_pct"],
           "pool_fragmentation_pct": status["fragmentation_pct"],
           # the target's compression as read back: what the compressible_data check expects of
           # the declared data (the declaration itself is the run's: run_loop.declared_data)
           "compressratio": fill.get("compressratio"), "compression": tinfo.properties.get("compression"),
           "lab": node.is_lab, "qemu_pid": node.qemu_pid, "space": fill,
           "txg_timeout_s": int(txg) if txg.isdigit() else None,
           "block_bytes": t.get("volblocksize_bytes") if t.get("kind") == "zvol" else t.get("recordsize_bytes", 131072)}
    return {**ctx, **model_context(model)}


def _one_run(host, store, plan, run, pool, tinfo, devices, ctx, progress):  # noqa: PLR0913 (the sweep's state passed on; debt, issue 28)
    return measured_run(host, store, plan, run, pool=pool.name, target=tinfo.path, target_name=tinfo.full_name,
                        devices=devices, ctx=ctx, work_dir=pool.work_dir(), progress=progress,
                        meta=dict(pool=pool.name, target=tinfo.full_name, target_properties=tinfo.properties))


def _write_json(path: Path, data: dict) -> None:
    import json
    from zbench_lib.sweeps.store import atomic_write
    atomic_write(path, json.dumps(data, indent=1, default=str).encode(), exclusive=True)
