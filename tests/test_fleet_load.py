"""A load sweep on a fleet (issues 29 and 33), without a lab: a cell's saturation probe measured by a
worker into its staging attempt is committed once, under the store's attempt (whatever number the
store gives it), its files with it, even when its run is cut off or the controller is killed between
commits; and a pool requeued or resumed on another host reuses the probe the store holds, so every
loaded run of a cell offers the same fraction of one probe.

The worker's side is the real `open_loop.offered_load` against a real `StagingStore`, with fio
replaced: the probe "measures" 700 read + 100 write IOPS, 800 in all, so a load of 0.5 offers 400.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from zbench_lib.core.events import Event
from zbench_lib.hosts.fleet import LAB, HostEntry
from zbench_lib.hosts.host_lock import LockOwner
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.planning.probes import probe_id
from zbench_lib.sweeps.running import open_loop
from zbench_lib.sweeps.running.fleet import Dispatcher
from zbench_lib.sweeps.running.fleet_open import OpenFleet
from zbench_lib.sweeps.running.pool_request import pool_requests
from zbench_lib.sweeps.running.staging import Committer, new_execution, staged_executions
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store

SPEC = Path(__file__).resolve().parent / "specs" / "load.yaml"
PROBE_IOPS = 800.0                      # 700 + 100: every direction, what the load splits
OFFERED = 400.0                         # 0.5 x 800
OWNER = LockOwner("sweep s from ctl", "c0ffee")
LAB1, LAB2 = HostEntry("lab1", LAB, "lab-lab1"), HostEntry("lab2", LAB, "lab-lab2")


def _plan():
    """tests/specs/load.yaml (load 0.5 and saturation) on two labs, a pool replicate each."""
    d = yaml.safe_load(SPEC.read_text())
    d["lab"]["count"] = 2
    d["repetitions"]["pool_replicates"] = 2
    return expand(parse_spec(yaml.safe_dump(d), name="load"))


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """(plan, store, staging root, the first pool's 0.5 cell, its first run id, fio calls); fio faked."""
    ran = []

    def fake_run_fio(host, job, remote, local):
        ran.append(local)
        Path(local).mkdir(parents=True)
        (Path(local) / "fio.json").write_text("probe")
        return SimpleNamespace(data="parsed below")
    monkeypatch.setattr(open_loop, "run_fio", fake_run_fio)
    monkeypatch.setattr(open_loop, "parse_fio_json", lambda data: [{"iops": 700.0}, {"iops": 100.0}])
    plan = _plan()
    store = Store.create(tmp_path / "sweeps", plan.spec.text, plan, sweep_id="s")
    cell = next(c for c in plan.cells if c.factors["load"] == "0.5" and c.pool_id == plan.pools[0].pool_id)
    run_id = next(r.run_id for r in plan.runs if r.cell_id == cell.cell_id)
    s = SimpleNamespace(plan=plan, store=store, root=tmp_path / "staging", cell=cell, run_id=run_id, ran=ran)
    yield s
    s.store.close()


def _offered(staged, cell, run_id: str, attempt: Path):
    """What the worker's run loop asks before fio: the run's open loop (its cell's probe measured first
    into the staged attempt unless an event the worker reads records it)."""
    site = SimpleNamespace(store=staged, work_dir="/tmp/zb", host=None)
    return open_loop.offered_load(site, cell, SimpleNamespace(run_id=run_id), attempt,
                                  {"filename": "/dev/zvol/p/t", "iodepth": 8})


def _finish(staged, cell, run_id: str, attempt: Path, loaded) -> None:
    """The rest of the run on the worker: placeholder fio files, meta.json with its open loop, judged."""
    (attempt / "fio").mkdir()
    (attempt / "fio" / "fio.json").write_text("{}")
    staged.complete_attempt(run_id, attempt, {"cell_id": cell.cell_id, "open_loop": loaded.to_record()})
    staged.record(Event.RUN_JUDGED, run_id=run_id, attempt=int(attempt.name.split("-")[1]),
                  invalidating_flags=[], described_flags=[])


def _probes(store: Store) -> list[dict]:
    return [e for e in store.events() if e["event"] == Event.LOAD_PROBED]


def _stage_loaded_run(s, host: str, known_events=(), complete: bool = True):
    staged = new_execution(s.root, s.cell.pool_id, host, known_events)
    attempt = staged.begin_attempt(s.run_id)
    loaded = _offered(staged, s.cell, s.run_id, attempt)
    if complete:
        _finish(staged, s.cell, s.run_id, attempt, loaded)
    return staged, loaded


def test_a_probe_staged_by_a_worker_is_committed_once_under_the_stores_attempt(sweep):
    s = sweep
    (s.store.raw / s.run_id / "attempt-1").mkdir(parents=True)     # an earlier cut-off attempt: the store's is 2
    staged, loaded = _stage_loaded_run(s, "lab2", s.store.events())
    assert loaded.offered_iops == OFFERED and loaded.probe_iops == PROBE_IOPS and len(s.ran) == 1
    Committer(s.store).commit_all(s.root)
    (probe,) = _probes(s.store)
    assert probe["attempt"] == 2 and probe["path"] == f"raw/{s.run_id}/attempt-2/probe" and probe["host"] == "lab2"
    assert (s.store.path / probe["path"] / "fio.json").read_text() == "probe"
    assert not (s.store.raw / s.run_id / "attempt-1" / "probe").exists()
    assert open_loop.recorded_probe(s.store.events(), probe_id(s.cell)) == PROBE_IOPS
    meta = json.loads((s.store.raw / s.run_id / "attempt-2" / "meta.json").read_text())
    assert meta["attempt"] == 2 and meta["open_loop"]["offered_iops"] == OFFERED
    assert meta["open_loop"]["probe_iops"] == PROBE_IOPS


def test_a_window_extended_on_a_worker_names_the_stores_attempt(sweep):
    s = sweep
    (s.store.raw / s.run_id / "attempt-1").mkdir(parents=True)
    staged = new_execution(s.root, s.cell.pool_id, "lab2")
    attempt = staged.begin_attempt(s.run_id)
    staged.record(Event.RUN_EXTENDED, run_id=s.run_id, attempt=1, window=1, max_windows=3)
    Committer(s.store).commit_all(s.root)
    (extended,) = [e for e in s.store.events() if e["event"] == Event.RUN_EXTENDED]
    assert extended["attempt"] == 2 and attempt.name == "attempt-1"


def test_a_run_judged_after_the_controllers_last_commit_names_the_stores_attempt(sweep):
    s = sweep
    (s.store.raw / s.run_id / "attempt-1").mkdir(parents=True)
    staged = new_execution(s.root, s.cell.pool_id, "lab2")
    attempt = staged.begin_attempt(s.run_id)
    staged.complete_attempt(s.run_id, attempt, {"cell_id": s.cell.cell_id})
    Committer(s.store).commit(staged.path, "lab2")     # attempt-2 complete; then the controller died
    staged.record(Event.RUN_JUDGED, run_id=s.run_id, attempt=1, invalidating_flags=[], described_flags=[])
    for host, d in staged_executions(s.root):
        Committer(s.store).close(d, host, lost="the controller stopped")
    (judged,) = [e for e in s.store.events() if e["event"] == Event.RUN_JUDGED]
    assert judged["attempt"] == 2


def test_a_probe_whose_run_was_cut_off_keeps_its_files_in_the_discarded_attempt(sweep):
    s = sweep
    staged, _ = _stage_loaded_run(s, "lab1", complete=False)
    committer = Committer(s.store)
    committer.commit_all(s.root)
    assert committer.close(staged.path, "lab1", lost="KilledWorker") == [s.run_id]
    (probe,) = _probes(s.store)
    (discarded,) = [e for e in s.store.events() if e["event"] == Event.RUN_DISCARDED]
    assert discarded["path"] == f"raw/{s.run_id}/attempt-1" and probe["path"] == f"raw/{s.run_id}/attempt-1/probe"
    assert (s.store.path / probe["path"] / "fio.json").read_text() == "probe"    # as a single host leaves it
    assert not staged.path.exists()


def test_a_requeued_pool_on_another_host_reuses_the_probe_the_store_holds(sweep):
    s = sweep
    staged, _ = _stage_loaded_run(s, "lab1", complete=False)         # lab1 lost mid-run, after the probe
    Committer(s.store).close(staged.path, "lab1", lost="KilledWorker")
    request = next(r for r in pool_requests(s.plan) if r.pool_id == s.cell.pool_id)
    dispatcher = Dispatcher(None, OpenFleet((LAB1, LAB2), (), ()), s.plan, s.store, s.root, OWNER, lambda m: None)
    job = dispatcher._job(LAB2, request)
    assert open_loop.recorded_probe(list(job.known_events), probe_id(s.cell)) == PROBE_IOPS
    staged, loaded = _stage_loaded_run(s, "lab2", job.known_events)
    assert len(s.ran) == 1 and loaded.offered_iops == OFFERED         # never measured again
    for host, d in staged_executions(s.root):
        Committer(s.store).close(d, host)
    assert len(_probes(s.store)) == 1
    meta = json.loads((s.store.raw / s.run_id / "attempt-2" / "meta.json").read_text())
    assert meta["host"] == "lab2" and meta["open_loop"]["offered_iops"] == OFFERED
    assert not (s.store.raw / s.run_id / "attempt-2" / "probe").exists()


def test_a_probe_staged_after_the_controllers_last_commit_lands_in_the_attempt_the_resume_opens(sweep):
    s = sweep
    staged = new_execution(s.root, s.cell.pool_id, "lab1")
    attempt = staged.begin_attempt(s.run_id)
    Committer(s.store).commit(staged.path, "lab1")      # the store opened attempt-1; then the controller died
    loaded = _offered(staged, s.cell, s.run_id, attempt)
    _finish(staged, s.cell, s.run_id, attempt, loaded)
    s.store.close()
    s.store = store = Store.resume(s.store.path, s.plan.spec.text, s.plan)     # attempt-1 discarded
    for host, d in staged_executions(s.root):
        Committer(store).close(d, host, lost="the controller stopped")
    (probe,) = _probes(store)
    assert probe["attempt"] == 2 and probe["path"] == f"raw/{s.run_id}/attempt-2/probe"
    assert (store.raw / s.run_id / "attempt-2" / "COMPLETE").exists()
    assert (store.path / probe["path"] / "fio.json").read_text() == "probe"
    assert open_loop.recorded_probe(store.events(), probe_id(s.cell)) == PROBE_IOPS
