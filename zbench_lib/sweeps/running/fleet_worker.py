"""What a fleet's Dask worker runs: one pool replicate on its host, staged for the controller.

`PoolJob` is the unit dispatched: frozen and picklable, it holds the pool request, the plan cut
down to that pool, what the store already holds for its cells (their completed runs' outcomes,
so a requeued or resumed pool continues where it stopped) and the events the worker's code reads
(this host's, and these cells'), how to reach the host (`hosts.fleet.HostEntry`) and the
controller's lock on it (`hosts.host_lock.LockOwner`). `run_pool_job` opens the host's node, checks
that this controller still holds the host, runs every later command through the lock's gate (a
worker whose controller died, or lost the host, must not go on: the host refuses its commands and
the lock's holder stops what it had started), reclaims this sweep's leftovers there, rebuilds the
pool's schedule and runs the pool against a staging store (`running.staging`) that the controller
commits.

The repetition rule decides per cell, and every run of a cell is in its pool replicate, so
deciding per pool is deciding as a single host would (Stein's second stage included); only
where the added runs fall in the queue differs, and its seed (per pool) is recorded.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from zbench_lib.hosts.fleet import HostEntry, open_node
from zbench_lib.hosts.host_lock import HostBusy, LockOwner, gate, holder, owned_by
from zbench_lib.sweeps.running.faults import FaultInjector
from zbench_lib.sweeps.planning.plan import Plan
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.running.pool_setup import restore_unfinished
from zbench_lib.sweeps.planning.repetitions import RepetitionRule
from zbench_lib.sweeps.running.run_loop import flush
from zbench_lib.sweeps.running.pool_run import reclaim_own_leftovers, run_pool
from zbench_lib.sweeps.running.staging import new_execution
from zbench_lib.sweeps.planning.schedule import Schedule


@dataclass(frozen=True)
class PoolJob:
    entry: HostEntry
    request: PoolRequest
    plan: Plan                          # cut down to the request's pool (`pool_plan`)
    outcomes: tuple                     # (cell_id, (Outcome, ...)) of its cells' completed runs
    completed: tuple[str, ...]          # run ids complete in the store
    known_events: tuple                 # the store's events the worker reads (this host's, these cells')
    staging_root: str
    owner: LockOwner                    # the controller's lock on the host (hosts.host_lock)


@dataclass(frozen=True)
class PoolDone:
    pool_id: str
    host: str
    started: float                      # epoch seconds on the controller's clock
    ended: float
    measure_s: float                    # inside fio's measurement windows


def pool_plan(plan: Plan, pool_id: str) -> Plan:
    """The plan of one pool: its pool, targets, cells and runs (the schedule needs no more)."""
    return dataclasses.replace(plan, pools=[p for p in plan.pools if p.pool_id == pool_id],
                               targets=[t for t in plan.targets if t.pool_id == pool_id],
                               cells=[c for c in plan.cells if c.pool_id == pool_id],
                               runs=[r for r in plan.runs if r.pool_id == pool_id], skipped=[], blocks=[[pool_id]])


def run_pool_job(job: PoolJob) -> PoolDone:
    """Run `job` on its host (see the module's text); raises when the host is lost or not ours."""
    started = time.time()
    spec, request = job.plan.spec, job.request
    with open_node(job.entry) as node:
        if not owned_by(node.host, job.owner):
            raise HostBusy(f"{job.entry.name} ({node.host.name}): this sweep no longer holds the host "
                           f"({holder(node.host)} does)")
        # Every later command only while the controller holds the host: one whose controller died
        # (a worker of a joined cluster goes on) is refused on the host, and what it runs is stopped there.
        node.host.gate = gate(job.owner)
        store = new_execution(job.staging_root, request.pool_id, job.entry.name, job.known_events)
        reclaim_own_leftovers(store, node.host, _quiet)
        restore_unfinished(store, node.host, _quiet)
        sched = Schedule(job.plan, RepetitionRule.from_spec(spec), dict(job.outcomes), known_events=job.known_events,
                         seed=f"{spec.seed}/{request.pool_id}", completed=job.completed)
        flush(store, sched)
        measure_s = run_pool(request, node, store, sched, FaultInjector(None, store, node), False, None)
    return PoolDone(request.pool_id, job.entry.name, started, time.time(), measure_s)


def _quiet(message: str) -> None:
    """A worker has no terminal of its own: what it would say is in the events it stages."""
