"""Results store: atomic, never-overwriting writes; resume discards cut-off attempts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.errors import ZbenchError
from zbench_lib.sweeps.plan import expand
from zbench_lib.sweeps.store import Store, atomic_write, new_sweep_id
from zbench_lib.sweeps.spec import parse_spec

SWEEPS = Path(__file__).resolve().parent.parent / "templates" / "sweeps"
SPEC_TEXT = (SWEEPS / "demo.yaml").read_text()


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
