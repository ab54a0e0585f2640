"""Execute a sweep plan: pools, targets, prefill, runs, repetitions, resume.

Pools are created block by block (``Plan.blocks``: replicate k of every pool in block
k), each used for every target and workload that can share it, and destroyed. What
runs where is a ``schedule.Schedule`` built from the plan and the raw record: runs
already COMPLETE are skipped, and a resumed cell decides with all its completed runs,
so rerunning an interrupted sweep completes only what is missing. Each pool replicate is a
``pool_request.PoolRequest``; one loop runs them all: it opens the request's ground (a zpool, or
no pool: the raw disks, ``surface.Ground``) and prepares each target's surface (``surface.Surface``).
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
from zbench_lib.sweeps.running.doctor import preflight_spec
from zbench_lib.hosts.node import Node
from zbench_lib.sweeps.running.sweep_host import check_release, open_host
from zbench_lib.sweeps.running.faults import FaultInjector
from zbench_lib.sweeps.running.pool_request import PoolRequest, pool_requests
from zbench_lib.sweeps.running.pool_setup import restore_unfinished
from zbench_lib.sweeps.running.surface import FioTarget, Site
from zbench_lib.sweeps.running.surfaces import ground_of, surface_of
from zbench_lib.sweeps.planning.plan import Plan, expand
from zbench_lib.sweeps.running.run_loop import flush as _flush, measured_run, run_target
from zbench_lib.sweeps.planning.repetitions import RepetitionRule
from zbench_lib.sweeps.planning.schedule import Schedule, outcomes_from_raw
from zbench_lib.zfs.pools import find_leftovers, live_pools, remove_leftovers
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.store.store import Store
from zbench_lib.sweeps.spec.sweep_spec import SweepSpec, load_spec

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
    todo_pools = [r for r in pool_requests(plan) if sched.pool_has_work(r.pool_id)]
    overall = tqdm(total=sched.done_count + sched.remaining(), initial=sched.done_count, desc="sweep",
                   unit="run", disable=not progress, position=0)
    measure_s = 0.0
    t_sweep = time.monotonic()
    # One host for the whole sweep, or one lab per OpenZFS release when the release is a
    # factor (its pools run together on that release's lab, in the plan's order).
    by_release: dict = {}
    for r in todo_pools:
        by_release.setdefault(r.zfs, []).append(r)
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
                for request in pools:
                    measure_s += _run_pool(request, node, store, sched, faults, progress, overall)
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


def _run_pool(request: PoolRequest, node: Node, store: Store, sched: Schedule, faults: FaultInjector,
              progress: bool, overall) -> float:
    """Make the ground of one pool replicate (a zpool, or no pool: raw disks), run every target of it
    that has work on its surface, take it down; seconds measured."""
    ground = ground_of(request)
    measure_s, load_on = 0.0, None              # load_on: where a resilver's load runs, a target of this pool
    with ground.open(request, node, store, progress) as site:
        for t in [t for t in request.targets if sched.has_work(t.target_id)]:   # the plan's (shuffled) order
            with surface_of(t).prepare(site, t) as fio_target:
                load_on = {"path": fio_target.path, "size_bytes": fio_target.size_bytes}
                measure_s += run_target(store, sched, t.target_id, _runner(site, fio_target, faults, sched.plan),
                                        overall)
        ground.before_teardown(site, faults, load_on)
    return measure_s


def _runner(site: Site, fio_target: FioTarget, faults: FaultInjector, plan: Plan):
    """run_target's `run_one`: a measured run, a fault injected into it where the spec declares one."""
    def run_one(run):
        with faults.during(site.request.pool_id, site.pool_name, run.run_id, list(site.devices)):
            return measured_run(site, fio_target, plan, run)
    return run_one


def _write_json(path: Path, data: dict) -> None:
    import json
    from zbench_lib.sweeps.store.store import atomic_write
    atomic_write(path, json.dumps(data, indent=1, default=str).encode(), exclusive=True)
