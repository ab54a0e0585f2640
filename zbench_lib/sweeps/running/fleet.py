"""A sweep sharded over a fleet of hosts on Dask distributed (issue 29).

The controller (this process) opens the fleet before the store exists (`fleet_open`: every host
reached, checked, fingerprinted and locked), then runs one Dask worker per host, all on the
controller (a benchmark box runs nothing but sshd, fio and ZFS), each with one thread and a
resource only it holds (`HostEntry.resource`), so two pools never share a host. The unit sent
is a `fleet_worker.PoolJob` (one pool replicate, frozen, picklable); which host runs which pool
is `host_queue.HostQueue`'s: whole randomised blocks, a free host taking the next one.

One store, one writer: workers stage what they measure and this process commits it as it
arrives (`staging.Committer`, polled while the pools run), events in the worker's order, raw
attempts fsynced with COMPLETE last. A worker lost mid-pool (killed, its host gone) has its
staged runs committed, its cut-off attempt discarded and its pool, with the rest of its block,
given to the next free host; its leftovers are reclaimed by that host's next pool, or at the end.

By default the cluster is a `SpecCluster` of `Nanny` workers on this machine; `scheduler`
(`zbench sweep --scheduler ADDRESS`, or ZBENCH_DASK_SCHEDULER) joins an existing one instead,
which must offer one worker per host holding that host's resource (README: on Slurm).
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
import os
import secrets
import time
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.events import Event
from zbench_lib.hosts.fleet import HostEntry
from zbench_lib.hosts.host_lock import LockOwner, sweep_owner
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.planning.plan import Plan, expand
from zbench_lib.sweeps.planning.probes import probe_id
from zbench_lib.sweeps.running.pool_request import PoolRequest, pool_requests
from zbench_lib.sweeps.running.run_loop import flush
from zbench_lib.sweeps.running.fleet_open import OpenFleet, open_fleet
from zbench_lib.sweeps.running.fleet_worker import PoolDone, PoolJob, pool_plan, run_pool_job
from zbench_lib.sweeps.running.host_queue import HostQueue, idle_hosts
from zbench_lib.sweeps.running.pool_run import finish_sweep, reclaim_own_leftovers, record_environment, \
    schedule_from_store
from zbench_lib.sweeps.running.staging import Committer, staged_executions
from zbench_lib.sweeps.planning.schedule import outcomes_from_raw
from zbench_lib.sweeps.spec.sweep_spec import load_spec
from zbench_lib.sweeps.store.store import Store, new_sweep_id

SCHEDULER_ENV = "ZBENCH_DASK_SCHEDULER"
POLL_S = 0.5                    # how often staged work is committed while pools run


def run_fleet_sweep(spec_path, out_root="data/sweeps", *, resume_dir=None, sweep_id=None, log=print,
                    scheduler: str | None = None) -> Path:
    """Run (or resume) the sweep of a fleet spec (`spec.host_count > 1`); the sweep directory."""
    spec = load_spec(spec_path)
    plan = expand(spec)
    sweep_id = Path(resume_dir).name if resume_dir else (sweep_id or new_sweep_id(spec.name))
    owner = sweep_owner(sweep_id)
    with open_fleet(spec, owner, log, blocks=len(pool_requests(plan))) as fleet:
        if resume_dir:
            store = Store.resume(resume_dir, spec.text, plan, parse_run=parse_results)
        else:
            store = Store.create(out_root, spec.text, plan, sweep_id=sweep_id)
        log(f"sweep {store.sweep_id}: {len(plan.runs)} planned runs on {len(fleet.entries)} hosts -> {store.path}")
        try:
            staging = store.path.parent / f".{store.sweep_id}.staging"
            _recover(store, staging, log)
            _start_hosts(store, fleet, log)
            sched = schedule_from_store(plan, store, parse_results)
            flush(store, sched)
            todo = [r for r in pool_requests(plan) if sched.pool_has_work(r.pool_id)]
            t0 = time.monotonic()
            with fleet_client(fleet.entries, scheduler or os.environ.get(SCHEDULER_ENV), log) as client:
                done = Dispatcher(client, fleet, plan, store, staging, owner, log).run(todo)
            with contextlib.suppress(OSError):
                staging.rmdir()                 # every execution was committed and removed: nothing is left
            wall = time.monotonic() - t0
            measure_s = sum(d.measure_s for d in done)
            store.record(Event.TIMING, wall_s=round(wall, 1), measure_s=round(measure_s, 1),
                         measure_share=round(measure_s / wall / len(fleet.entries), 3) if wall else None,
                         hosts=len(fleet.entries))
            finish_sweep(store, log)
        finally:
            store.close()
    return store.path


def _recover(store: Store, staging: Path, log) -> None:
    """What an earlier session's workers staged and it never committed (killed): commit it now."""
    left = staged_executions(staging)
    if not left:
        return
    committer = Committer(store)
    for host, d in left:
        committer.close(d, host, lost="the controller stopped")
    log(f"committed what {len(left)} pool execution(s) of an interrupted session had staged")


def _start_hosts(store: Store, fleet: OpenFleet, log) -> None:
    """Each host's fingerprint and environment in the store; this sweep's own leftovers there removed."""
    for entry, node, fp in zip(fleet.entries, fleet.nodes, fleet.fingerprints):
        store.record(Event.HOST_FINGERPRINT, host=entry.name, kind=entry.kind, address=entry.address,
                     **fp.to_dict())
        record_environment(store, node, log, tag=entry.name)


@contextlib.contextmanager
def fleet_client(entries: tuple[HostEntry, ...], scheduler: str | None, log):
    """A Dask client whose cluster has one worker per host, each holding its host's resource."""
    import dask
    from distributed import Client, Nanny, Scheduler, SpecCluster

    if scheduler:
        with Client(scheduler, timeout=30) as client:
            held = Counter(r for w in client.scheduler_info()["workers"].values() for r in (w.get("resources") or {}))
            missing = [e.resource for e in entries if e.resource not in held]
            if missing:
                raise ConfigError(f"the Dask cluster at {scheduler} has no worker holding {', '.join(missing)}: "
                                  f"start one per host, e.g. `dask worker {scheduler} --nthreads 1 "
                                  f"--resources {missing[0]}=1`")
            twice = [e.resource for e in entries if held[e.resource] > 1]
            if twice:       # two workers of one host would run two pools on it at once
                raise ConfigError(f"the Dask cluster at {scheduler} has {held[twice[0]]} workers holding {twice[0]}: "
                                  "one worker per host")
            log(f"Dask: joined {scheduler}; dashboard {client.dashboard_link}")
            yield client
        return
    # The scheduler gives up on a pool at its worker's first death: the dispatcher decides where it
    # goes next (another host), rather than Dask retrying it on the same host's restarted worker.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        workers = {e.name: {"cls": Nanny, "options": {"nthreads": 1, "resources": {e.resource: 1},
                                                      "host": "127.0.0.1"}} for e in entries}
        cluster = SpecCluster(workers=workers, silence_logs=logging.ERROR,
                              scheduler={"cls": Scheduler, "options": {"host": "127.0.0.1",
                                                                       "dashboard_address": _dashboard()}})
        with cluster, Client(cluster) as client:
            client.wait_for_workers(len(entries), timeout=120)
            link = client.dashboard_link if _dashboard() else "none (pip install bokeh for Dask's dashboard)"
            log(f"Dask: {len(entries)} workers on this machine, one per host; dashboard {link}")
            yield client


def _dashboard() -> str | None:
    """Dask's dashboard needs bokeh, which zbench does not depend on."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return None
    return ":0"


class Dispatcher:
    """Free hosts take pools from a HostQueue; staged work is committed as it arrives."""

    def __init__(self, client, fleet: OpenFleet, plan: Plan, store: Store, staging: Path, owner: LockOwner, log,
                 task=run_pool_job):
        self.client, self.fleet, self.plan, self.store = client, fleet, plan, store
        self.staging, self.owner, self.log = staging, owner, log
        self.task = task                        # what a worker runs with a PoolJob (the tests' seam)
        self.committer = Committer(store)
        self.running: dict = {}                 # future -> (entry, request, started)
        self.failures: dict[str, int] = {}      # host -> pools lost on it in a row
        self.lost_on: set[str] = set()          # hosts that lost a pool: their leftovers are reclaimed at the end

    def run(self, todo: list[PoolRequest]) -> list[PoolDone]:
        queue = HostQueue.of(todo)
        why = idle_hosts(len(queue.blocks), len(self.fleet.entries))
        if why:
            self.log(f"note: {why}")
        done: list[PoolDone] = []
        while True:
            self._fill(queue)
            if not self.running:
                break
            finished = [f for f in self.running if f.done()]
            if not finished:
                time.sleep(POLL_S)      # Dask's own wait raises on its timeout: a plain poll is simpler
            self.committer.commit_all(self.staging)
            for future in finished:
                entry, request, _ = self.running.pop(future)
                outcome = self._settle(future, entry, request, queue)
                if outcome is not None:
                    done.append(outcome)
        for host in list(queue.current):        # no host left to take them: said, never dropped silently
            queue.blocks.appendleft(list(queue.current.pop(host)))
        for request in (r for block in queue.blocks for r in block):
            self.store.record(Event.POOL_LOST, pool_id=request.pool_id, host=None, requeued=False, discarded_runs=[],
                              reason="no host left to run it (each lost two pools in a row)")
            self.log(f"pool {request.pool_id} not run: no host left")
        self._reclaim_lost()
        return done

    def _fill(self, queue: HostQueue) -> None:
        busy = {entry.name for entry, _, _ in self.running.values()}
        usable = [e for e in self.fleet.entries if self.failures.get(e.name, 0) < 2]   # two losses in a row: retired
        for entry in usable:
            if entry.name in busy:
                continue
            request = queue.next_for(entry.name, alone=len(usable) == 1)
            if request is None:
                continue
            job = self._job(entry, request)
            self.store.record(Event.POOL_DISPATCHED, pool_id=request.pool_id, host=entry.name, block=request.block,
                              dispatch=queue.dispatches[request.pool_id])
            self.log(f"{entry.name}: pool {request.pool_id} ({request.label}, block {request.block}); "
                     f"{queue.pending()} pools waiting")
            future = self.client.submit(self.task, job, resources={entry.resource: 1}, pure=False,
                                        key=f"pool-{request.pool_id}-{entry.name}-{secrets.token_hex(3)}")
            self.running[future] = (entry, request, time.time())

    def _job(self, entry: HostEntry, request: PoolRequest) -> PoolJob:
        """The job of `request` on `entry` from the store as it is now (a requeued pool continues)."""
        plan = pool_plan(self.plan, request.pool_id)
        cells = {c.cell_id for c in plan.cells}
        attempts = [a for a in self.store.completed_attempts() if a[2].get("cell_id") in cells]
        outcomes = outcomes_from_raw(attempts, plan, parse_results)
        # A probe's event names no cell and carries the host that measured it: a pool requeued or resumed
        # on another host reuses it, so every loaded run of a cell offers a fraction of one probe.
        probes = {probe_id(c) for c in plan.cells}
        events = tuple(e for e in self.store.events()
                       if e.get("cell_id") in cells or e.get("host") in (None, entry.name)
                       or (e.get("event") == Event.LOAD_PROBED and e.get("probe_id") in probes))
        return PoolJob(entry, request, plan, tuple((k, tuple(v)) for k, v in outcomes.items()),
                       tuple(a[0] for a in attempts), events, str(self.staging), self.owner)

    def _settle(self, future, entry: HostEntry, request: PoolRequest, queue: HostQueue) -> PoolDone | None:
        """Commit what the pool's executions staged; a lost pool goes back to the queue (or is lost)."""
        error = future.exception()
        reason = None if error is None else f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
        discarded = []
        for host, d in staged_executions(self.staging, request.pool_id):
            discarded += self.committer.close(d, host, lost=reason)
        if error is None:
            self.failures[entry.name] = 0
            result = future.result()
            self.store.record(Event.POOL_RETURNED, pool_id=request.pool_id, host=entry.name,
                              wall_s=round(result.ended - result.started, 1), measure_s=round(result.measure_s, 1))
            return result
        if isinstance(error, ConfigError):
            raise error                         # a refusal is the spec's or the host's, on any host: stop
        self.failures[entry.name] = self.failures.get(entry.name, 0) + 1
        self.lost_on.add(entry.name)
        requeued = queue.give_back(entry.name, request)
        self.store.record(Event.POOL_LOST, pool_id=request.pool_id, host=entry.name, reason=reason,
                          requeued=requeued, discarded_runs=discarded)
        self.log(f"{entry.name}: pool {request.pool_id} lost ({reason}); "
                 + ("given to the next free host (another one)" if requeued else "not retried again"))
        future.release()
        return None

    def _reclaim_lost(self) -> None:
        """This sweep's pools left on hosts that lost one: destroyed over the controller's connection."""
        for entry, node in zip(self.fleet.entries, self.fleet.nodes):
            if entry.name in self.lost_on:
                try:
                    reclaim_own_leftovers(self.store, node.host, self.log)
                except ZbenchError as exc:
                    self.log(f"{entry.name}: leftovers not reclaimed ({exc}); `zbench pools cleanup` removes them")
