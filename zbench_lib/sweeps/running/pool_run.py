"""One pool replicate on one node, and what a session on a node does first.

``run_pool`` makes the request's ground (a zpool, or no pool: the raw disks), runs every target
of it that has work on its surface, and takes it down; ``schedule_from_store`` is what is left to
run, from the plan and the raw record; ``record_environment`` reclaims this sweep's own crash
leftovers on the node and records its provenance. The executor runs them in one loop on one node
(``executor``); a fleet runs ``run_pool`` on each host's Dask worker against a staging store
(``running.fleet_worker``). They live here, below both, so neither imports the other.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from zbench_lib.core.crash import crash_point
from zbench_lib.core.events import Event
from zbench_lib.hosts.node import Node
from zbench_lib.measure import provenance
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.running.faults import FaultInjector
from zbench_lib.sweeps.planning.plan import Plan
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.planning.repetitions import RepetitionRule
from zbench_lib.sweeps.running.run_loop import measured_run, run_target
from zbench_lib.sweeps.planning.schedule import Schedule, outcomes_from_raw
from zbench_lib.sweeps.store.store import Store, atomic_write
from zbench_lib.sweeps.running.surface import FioTarget, Site
from zbench_lib.sweeps.running.surfaces import ground_of, surface_of
from zbench_lib.zfs.pools import find_leftovers, live_pools, remove_leftovers


def schedule_from_store(plan: Plan, store: Store, parse_run) -> Schedule:
    """What is left to run, from the plan and the raw record (every completed attempt and its rows)."""
    attempts = store.completed_attempts()
    return Schedule(plan, RepetitionRule.from_spec(plan.spec), outcomes_from_raw(attempts, plan, parse_run),
                    known_events=store.events(), seed=plan.spec.seed, completed=[a[0] for a in attempts])


def finish_sweep(store: Store, log) -> None:
    """The results rebuilt from the raw record alone, then the sweep's last event."""
    crash_point("results")
    df = store.rebuild_results(parse_results)
    store.finish(rows=len(df))
    log(f"results: {len(df)} rows in {store.path / 'results.parquet'}")


def reclaim_own_leftovers(store: Store, host, log) -> None:
    """Destroy pools an interrupted session of this sweep left (named in its events)."""
    ours = {e.get("pool") for e in store.events() if e.get("event") == Event.POOL_CREATING}
    mine = [p for p in find_leftovers(host) if p in ours and p not in live_pools(host)]
    if mine:
        log(f"removing pools an interrupted run of this sweep left: {', '.join(mine)}")
        remove_leftovers(host, mine)
        store.record(Event.LEFTOVERS_REMOVED, pools=mine)


def record_environment(store: Store, node: Node, log, tag: str = "") -> None:
    """This sweep's leftovers on the node removed, others noted, its provenance recorded (`tag`:
    the host's name in a fleet, where several are recorded in one second)."""
    host = node.host
    reclaim_own_leftovers(store, host, log)
    leftovers = find_leftovers(host)
    if leftovers:
        log(f"note: zbench pools left from an earlier crash on {host.name}: {leftovers} "
            "(remove them with `zbench pools cleanup`)")
        store.record(Event.LEFTOVERS_FOUND, pools=leftovers)
    prov = provenance.collect(host, devices_list=list(node.data_devices + node.extra_devices),
                              extra={**(node.provenance or {}), **({"fleet_host": tag} if tag else {})})
    store.record(Event.PROVENANCE, **{k: v for k, v in prov.items() if not k.startswith("zfs_param")})
    # One environment record per session: a resumed sweep may run on a new lab boot.
    stamp = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())
    _write_json(store.path / f"host-provenance-{tag + '-' if tag else ''}{stamp}.json", prov)


def run_pool(request: PoolRequest, node: Node, store: Store, sched: Schedule, faults: FaultInjector,
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
    atomic_write(path, json.dumps(data, indent=1, default=str).encode(), exclusive=True)
