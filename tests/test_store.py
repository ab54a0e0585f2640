"""Results store: atomic, never-overwriting writes; resume discards cut-off attempts."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.errors import ZbenchError
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.store.raw_check import INVALID_MARKER, StoreWarning
from zbench_lib.sweeps.store.store import Store, atomic_write, new_sweep_id
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

SWEEPS = Path(__file__).resolve().parent.parent / "templates" / "sweeps"
# The demo's design with three runs on one pool: these tests need several runs of one cell.
SPEC_TEXT = re.sub(r"^repetitions: .*$", "repetitions: {fixed: 3, pool_replicates: 1, max_attempts: 4, metric: iops}",
                   (SWEEPS / "demo.yaml").read_text(), flags=re.M)


@pytest.fixture
def plan():
    return expand(parse_spec(SPEC_TEXT, name="demo"))


@pytest.fixture
def store(tmp_path, plan):
    s = Store.create(tmp_path, SPEC_TEXT, plan, sweep_id="demo-test")
    yield s
    s.close()


def fake_run(store, plan, run, iops=100.0):
    """What an executor does for one run, with a fake fio result."""
    path = store.begin_attempt(run.run_id)
    (path / "fio.json").write_text(json.dumps({"iops": iops}))
    store.complete_attempt(run.run_id, path, plan.run_meta(run))
    return path


def parse_run(attempt_dir, meta):
    iops = json.loads((attempt_dir / "fio.json").read_text())["iops"]
    return [{"direction": "read", "iops": iops, "workload": "from-fio"},
            {"direction": "write", "iops": iops / 2, "workload": "from-fio"}]


def test_sweep_id_format():
    assert re.fullmatch(r"demo-\d{8}T\d{6}Z", new_sweep_id("demo"))


def test_create_writes_spec_plan_provenance_and_started(store, plan):
    p = store.path
    assert (p / "spec.yaml").read_text() == SPEC_TEXT
    assert json.loads((p / "plan.json").read_text()) == json.loads(plan.to_json())
    assert json.loads((p / "provenance.json").read_text())["sweep_id"] == "demo-test"
    assert [e["event"] for e in store.events()] == ["started"]
    assert not list(p.glob(".*.tmp-*"))


def test_create_refuses_an_existing_sweep(store, tmp_path, plan):
    with pytest.raises(ZbenchError, match="already exists"):
        Store.create(tmp_path, SPEC_TEXT, plan, sweep_id="demo-test")


def test_create_names_the_sweep_when_not_given(tmp_path, plan):
    s = Store.create(tmp_path / "data", SPEC_TEXT, plan)
    assert re.fullmatch(r"demo-\d{8}T\d{6}Z", s.sweep_id) and s.path.parent == tmp_path / "data"
    s.close()


def test_attempts_are_new_directories_and_complete_last(store, plan):
    run = plan.runs[0]
    a1 = store.begin_attempt(run.run_id)
    a2 = store.begin_attempt(run.run_id)                  # the first was cut off
    assert (a1.name, a2.name) == ("attempt-1", "attempt-2") and not any(a2.iterdir())
    store.complete_attempt(run.run_id, a2, plan.run_meta(run))
    meta = json.loads((a2 / "meta.json").read_text())
    assert meta["attempt"] == 2 and meta["run_id"] == run.run_id and meta["factors"]["layout"] in (
        "stripe", "mirror", "raidz1")
    assert (a2 / "COMPLETE").exists() and not (a1 / "COMPLETE").exists()
    assert store.completed_runs() == {run.run_id}
    assert store.incomplete_attempts() == [a1]
    with pytest.raises(ZbenchError, match="already complete"):
        store.begin_attempt(run.run_id)
    with pytest.raises(ZbenchError, match="already has a complete attempt"):
        store.complete_attempt(run.run_id, a1, plan.run_meta(run))


def test_complete_refuses_twice_and_foreign_paths(store, plan, tmp_path):
    run = plan.runs[0]
    path = fake_run(store, plan, run)
    before = (path / "meta.json").read_text()
    with pytest.raises(ZbenchError, match="already complete"):
        store.complete_attempt(run.run_id, path, {"other": 1})
    assert (path / "meta.json").read_text() == before
    with pytest.raises(ZbenchError, match="not an attempt directory"):
        store.complete_attempt(plan.runs[1].run_id, path, {})
    with pytest.raises(ZbenchError, match="plain name"):
        store.begin_attempt("../escape")


def test_resume_discards_cut_off_attempts_and_keeps_their_files(store, plan):
    done = fake_run(store, plan, plan.runs[0])
    cut = store.begin_attempt(plan.runs[1].run_id)
    (cut / "fio.json").write_text("{partial")
    store.close()
    resumed = Store.resume(store.path, SPEC_TEXT, plan)
    events = resumed.events()
    assert [e["event"] for e in events][-2:] == ["run discarded", "resumed"]
    assert events[-2]["run_id"] == plan.runs[1].run_id and events[-2]["path"].endswith("attempt-1")
    assert events[-1]["completed"] == 1 and events[-1]["remaining"] == len(plan.runs) - 1
    assert (cut / "fio.json").read_text() == "{partial" and (done / "COMPLETE").exists()
    again = resumed.begin_attempt(plan.runs[1].run_id)
    assert again.name == "attempt-2"
    resumed.close()
    # a second resume does not log the same discarded attempt twice (attempt-2 is new)
    second = Store.resume(store.path, SPEC_TEXT, plan)
    paths = [e["path"] for e in second.events() if e["event"] == "run discarded"]
    assert len(paths) == len(set(paths)) == 2
    second.close()


def test_resume_with_a_changed_spec_is_refused(store, plan):
    store.close()
    changed = SPEC_TEXT.replace("seed: 20240501", "seed: 1")
    with pytest.raises(ZbenchError, match="spec changed since this sweep started; start a new sweep"):
        Store.resume(store.path, changed, expand(parse_spec(changed, name="demo")))


def test_only_one_executor_at_a_time(store, plan):
    with pytest.raises(ZbenchError, match="being run by another process"):
        Store.resume(store.path, SPEC_TEXT, plan)


def test_open_refuses_a_directory_that_is_not_a_store(tmp_path):
    with pytest.raises(ZbenchError, match="not a sweep store"):
        Store.open(tmp_path)


def test_rebuild_results_from_complete_attempts_only(store, plan):
    for i, run in enumerate(plan.runs[:3]):
        fake_run(store, plan, run, iops=100.0 + i)
    store.begin_attempt(plan.runs[3].run_id)              # cut off: excluded
    df = store.rebuild_results(parse_run)
    assert len(df) == 3 * 2 and set(df["run_id"]) == {r.run_id for r in plan.runs[:3]}
    assert list(df.columns[:6]) == ["sweep", "run_id", "cell_id", "rep", "attempt", "order_index"]
    assert {"layout", "data_disks", "volblocksize_bytes", "workload", "direction", "iops"} <= set(df.columns)
    assert set(df["workload"]) <= {"randread", "randwrite"}  # the factor, not the parser's column
    assert not df.duplicated(["run_id", "direction"]).any()
    back = pd.read_parquet(store.path / "results.parquet")
    pd.testing.assert_frame_equal(back, df)
    assert len(pd.read_csv(store.path / "results.csv")) == 6
    assert Store.open(store.path).rebuild_results(parse_run).equals(df)   # rebuilt, same rows


def test_rebuild_refuses_two_complete_attempts(store, plan):
    run = plan.runs[0]
    fake_run(store, plan, run)
    forged = store.raw / run.run_id / "attempt-9"          # cannot happen through the API
    forged.mkdir()
    (forged / "meta.json").write_text("{}")
    (forged / "COMPLETE").write_text("x")
    with pytest.raises(ZbenchError, match="2 complete attempts"):
        store.rebuild_results(parse_run)


def test_empty_results(store):
    df = store.rebuild_results(parse_run)
    assert df.empty and (store.path / "results.parquet").exists()


def test_atomic_write_exclusive_never_overwrites(tmp_path):
    p = tmp_path / "f.txt"
    atomic_write(p, "one", exclusive=True)
    with pytest.raises(FileExistsError):
        atomic_write(p, "two", exclusive=True)
    assert p.read_text() == "one" and sorted(x.name for x in tmp_path.iterdir()) == ["f.txt"]
    atomic_write(p, b"three")
    assert p.read_text() == "three"


def test_finish_and_torn_event_lines(store):
    with open(store.path / "events.jsonl", "a") as f:
        f.write('{"event": "run comp')                    # power cut mid-append
    store.record("finished", completed=0)
    assert [e["event"] for e in store.events()] == ["started", "finished"]   # torn line skipped
    store.finish()
    assert store.events()[-1]["event"] == "finished"


def test_completed_attempts_are_the_raw_record(store, plan):
    fake_run(store, plan, plan.runs[0], iops=120.0)
    store.begin_attempt(plan.runs[1].run_id)                     # cut off: not complete
    a = store.begin_attempt(plan.runs[2].run_id)                 # complete, but its meta is torn
    store.complete_attempt(plan.runs[2].run_id, a, plan.run_meta(plan.runs[2]))
    (a / "meta.json").chmod(0o644)
    (a / "meta.json").write_text("{torn")
    got = store.completed_attempts()
    assert [(r, p.name) for r, p, _ in got] == sorted([(plan.runs[0].run_id, "attempt-1"),
                                                       (plan.runs[2].run_id, "attempt-1")])
    meta = dict((r, m) for r, _, m in got)
    assert meta[plan.runs[0].run_id]["rep"] == plan.runs[0].rep and meta[plan.runs[2].run_id] == {}
    assert meta[plan.runs[0].run_id]["pool_replicate"] == 1


# -- durable, self-checking store (#15 item 3) ----------------------------------

def _cell_runs(plan):
    """The planned runs of the first run's cell (3 in the demo's fixed design)."""
    return [r for r in plan.runs if r.cell_id == plan.runs[0].cell_id]


def test_the_whole_attempt_is_fsynced_before_complete(store, plan, monkeypatch):
    run = plan.runs[0]
    path = store.begin_attempt(run.run_id)
    (path / "fio").mkdir()
    (path / "fio" / "fio.json").write_text('{"iops": 1}')
    (path / "counters" / "dev").mkdir(parents=True)
    (path / "counters" / "dev" / "sda.txt").write_text("1 2 3\n")
    synced, real = [], os.fsync

    def recording_fsync(fd):
        name = Path(os.readlink(f"/proc/self/fd/{fd}"))
        synced.append((name, (path / "COMPLETE").exists()))
        return real(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    store.complete_attempt(run.run_id, path, plan.run_meta(run))
    before = {p for p, complete in synced if not complete}
    for p in (path, path / "fio", path / "fio" / "fio.json", path / "counters", path / "counters" / "dev",
              path / "counters" / "dev" / "sda.txt", path / "meta.json"):
        assert p in before, f"{p.relative_to(store.path)} was not fsynced before COMPLETE"


def test_torn_fio_json_beside_complete_is_set_aside_and_redone_on_resume(store, plan):
    from zbench_lib.sweeps.running.executor import _schedule
    good, torn = _cell_runs(plan)[:2]
    fake_run(store, plan, good)
    path = fake_run(store, plan, torn)
    (path / "fio.json").write_text("")                     # COMPLETE was durable, fio.json was not
    store.close()
    with pytest.warns(StoreWarning, match=r"attempt-1: its files do not parse .*set aside as COMPLETE.invalid"):
        resumed = Store.resume(store.path, SPEC_TEXT, plan, parse_run=parse_run)
    assert not (path / "COMPLETE").exists() and (path / INVALID_MARKER).exists()
    assert (path / "fio.json").read_text() == ""          # the evidence stays
    ev = [e for e in resumed.events() if e["event"] == "attempt invalid"]
    assert len(ev) == 1 and ev[0]["run_id"] == torn.run_id and ev[0]["path"] == f"raw/{torn.run_id}/attempt-1"
    assert "\n" not in ev[0]["reason"] and "JSONDecodeError" in ev[0]["reason"]
    assert resumed.events()[-1]["event"] == "resumed" and resumed.events()[-1]["invalid"] == 1
    assert resumed.completed_runs() == {good.run_id}
    sched = _schedule(plan, resumed, parse_run)              # the executor's queue after resume
    assert torn.run_id in [r.run_id for r in sched.queues[torn.target_id]]
    assert good.run_id not in [r.run_id for r in sched.queues[good.target_id]]
    again = resumed.begin_attempt(torn.run_id)
    assert again.name == "attempt-2"
    (again / "fio.json").write_text(json.dumps({"iops": 7.0}))
    resumed.complete_attempt(torn.run_id, again, plan.run_meta(torn))
    resumed.close()
    second = Store.resume(store.path, SPEC_TEXT, plan, parse_run=parse_run)   # set aside once, never discarded
    assert not [e for e in second.events() if e["event"] == "run discarded"]
    assert len([e for e in second.events() if e["event"] == "attempt invalid"]) == 1
    df = second.rebuild_results(parse_run)
    assert df.set_index(["run_id", "direction"]).loc[(torn.run_id, "read"), ["attempt", "iops"]].tolist() == [2, 7.0]
    second.close()


def test_rebuild_sets_a_torn_attempt_aside_and_carries_on(store, plan):
    runs = _cell_runs(plan)
    paths = [fake_run(store, plan, r, iops=100.0 + i) for i, r in enumerate(runs)]
    (paths[1] / "fio.json").write_text('{"io')             # torn mid-write
    with pytest.warns(StoreWarning, match="its files do not parse"):
        df = store.rebuild_results(parse_run)
    assert set(df["run_id"]) == {runs[0].run_id, runs[2].run_id}
    assert (paths[1] / INVALID_MARKER).exists() and not (paths[1] / "COMPLETE").exists()
    assert [e["run_id"] for e in store.events() if e["event"] == "attempt invalid"] == [runs[1].run_id]
    # read-only use (a packed dataset's copy): skipped with a warning, nothing renamed or recorded
    (paths[2] / "meta.json").chmod(0o644)
    (paths[2] / "meta.json").write_text("{torn")
    n_events = len(store.events())
    with pytest.warns(StoreWarning, match=rf"raw/{runs[2].run_id}/attempt-1: its files do not parse.*skipped"):
        df = Store.open(store.path).rebuild_results(parse_run, set_aside=False)
    assert set(df["run_id"]) == {runs[0].run_id}
    assert (paths[2] / "COMPLETE").exists() and len(store.events()) == n_events


def test_rebuild_excludes_a_stray_run_directory_with_a_warning(store, plan):
    run = plan.runs[0]
    fake_run(store, plan, run)
    extra = plan.extra_run(run.cell_id, 4)                  # an added repetition, recorded: not stray
    fake_run(store, plan, extra, iops=50.0)
    for name in ("zz-not-planned", f"{run.cell_id}-r07"):   # the second: a planned cell's name, never recorded
        stray = store.raw / name / "attempt-1"
        stray.mkdir(parents=True)
        (stray / "fio.json").write_text(json.dumps({"iops": 1e6}))
        (stray / "meta.json").write_text(json.dumps({**plan.run_meta(run), "run_id": name}))
        (stray / "COMPLETE").write_text("x")
    with pytest.warns(StoreWarning) as caught:
        df = store.rebuild_results(parse_run)
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("raw/zz-not-planned: not a run of this sweep's plan") for m in messages), messages
    assert any(m.startswith(f"raw/{run.cell_id}-r07: never recorded in events.jsonl") for m in messages), messages
    assert set(df["run_id"]) == {run.run_id, extra.run_id} and 1e6 not in set(df["iops"])


def test_rebuild_warns_of_a_planned_run_whose_complete_was_deleted(store, plan):
    from zbench_lib import analysis as A
    runs = _cell_runs(plan)
    paths = [fake_run(store, plan, r) for r in runs]
    (paths[1] / "COMPLETE").unlink()
    with pytest.warns(StoreWarning) as caught:
        df = store.rebuild_results(parse_run)
    messages = [str(w.message) for w in caught]
    assert f"raw/{runs[1].run_id}/attempt-1 was recorded complete but its COMPLETE marker is gone: " \
           "the run is missing from the results (not judged)" in messages
    assert runs[1].run_id not in set(df["run_id"])
    others = [m for m in messages if m.startswith(f"{len(plan.runs) - 3} planned run(s) have no valid COMPLETE")]
    assert len(others) == 1 and runs[1].run_id not in others[0]          # named once, by its own warning
    status = A.cell_status(df, A.load_sweep(store.path).plan).set_index("cell_id").loc[runs[0].cell_id, "status"]
    assert set(status) == {"judged: 2 of 2 runs admissible, 1 of 3 planned runs missing"}
