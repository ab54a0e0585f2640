"""Execute a sweep plan: pools, targets, prefill, runs, repetitions, resume.

Pools are created block by block (``Plan.blocks``: replicate k of every pool in block
k), each used for every target and workload that can share it, and destroyed. What
runs where is a ``schedule.Schedule`` built from the plan and the raw record: runs
already COMPLETE are skipped, and a resumed cell decides with all its completed runs,
so rerunning an interrupted sweep completes only what is missing. Each pool replicate is a
``pool_request.PoolRequest``; one loop runs them all: it opens the request's ground (a zpool, or
no pool: the raw disks, ``surface.Ground``) and prepares each target's surface (``surface.Surface``).
The whole session holds its host's on-host lock (``hosts.host_lock``, ``sweep_host.open_session``),
taken before the store is made, and every command on the host passes the lock's gate.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from tqdm.auto import tqdm

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.sweeps.running.doctor import preflight_spec
from zbench_lib.hosts.host_lock import sweep_owner
from zbench_lib.sweeps.running.sweep_host import check_release, open_session, releases, with_clients
from zbench_lib.sweeps.running.faults import FaultInjector
from zbench_lib.sweeps.running.pool_request import pool_requests
from zbench_lib.sweeps.running.pool_setup import restore_unfinished
from zbench_lib.sweeps.planning.plan import Plan, expand
from zbench_lib.sweeps.running.run_loop import flush as _flush, run_target  # noqa: F401 (run_target: the tests' seam)
from zbench_lib.sweeps.running.fleet import run_fleet_sweep
from zbench_lib.sweeps.running.pool_run import record_environment as _record_environment, run_pool as _run_pool
from zbench_lib.sweeps.running.pool_run import finish_sweep, schedule_from_store as _schedule
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.store.store import Store, new_sweep_id
from zbench_lib.sweeps.spec.sweep_spec import SweepSpec, load_spec

def run_sweep(spec_path, out_root="data/sweeps", *, resume_dir=None, sweep_id=None, progress=True,
              dry_run=False, log=print, host=None) -> Path | None:
    """Run (or resume) the sweep of `spec_path`; returns the sweep directory.

    `host` may be an already-open `hosts.node.Node`, e.g. the test session's lab; otherwise
    the spec's host is opened. A spec of several hosts runs on a fleet (`running.fleet`; an existing
    Dask scheduler's address, if any, in ZBENCH_DASK_SCHEDULER: `zbench sweep --scheduler`).
    The session holds its host's lock (`hosts.host_lock`, as a fleet holds each of its hosts'),
    taken before the store is made: another sweep's host is refused in one line (HostBusy), with
    nothing created, here or on the host. With the OpenZFS release a factor, each release's lab is
    opened, and locked, when its pools' turn comes.
    """
    spec = load_spec(spec_path)
    plan = expand(spec)
    if dry_run:
        log(plan.describe())
        return None
    if spec.host_count > 1:
        if host is not None:
            raise ConfigError("a fleet spec opens its own hosts; no host can be given")
        return run_fleet_sweep(spec_path, out_root, resume_dir=resume_dir, sweep_id=sweep_id, log=log)
    one_host = releases(plan) == {None}
    if host is not None and not one_host:
        raise ConfigError("a sweep with the OpenZFS release as a factor opens its own labs; no host can be given")
    if spec.host != "lab" and host is None:
        preflight_spec(spec)            # a real host: reachable, root, OpenZFS, fio, devices free, not locked
    sweep_id = Path(resume_dir).name if resume_dir else (sweep_id or new_sweep_id(spec.name))
    owner = sweep_owner(sweep_id)
    with contextlib.ExitStack() as stack:
        node = stack.enter_context(open_session(spec, None, owner, host)) if one_host else None
        if node is not None:
            node = stack.enter_context(with_clients(spec, node))    # client labs beside it (issue 30), if any
        if resume_dir:
            store = Store.resume(resume_dir, spec.text, plan, parse_run=parse_results)   # torn COMPLETE runs redone
        else:
            store = Store.create(out_root, spec.text, plan, sweep_id=sweep_id)
        log(f"sweep {store.sweep_id}: {len(plan.runs)} planned runs -> {store.path}")
        def open_node(release):
            return contextlib.nullcontext(node) if node is not None else open_session(spec, release, owner)
        try:
            _execute(spec, plan, store, progress, log, open_node)
            finish_sweep(store, log)
        finally:
            store.close()
    return store.path


def _execute(spec: SweepSpec, plan: Plan, store: Store, progress: bool, log, open_node) -> None:
    """Run what the store still needs; `open_node(release)`: the context of the Node, its session's
    lock held, of the pools of `release` (None: the sweep's one host)."""
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
    for release, pools in by_release.items():
        with open_node(release) as node:
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
