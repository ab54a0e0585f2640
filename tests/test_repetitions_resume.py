"""Repetitions run through a real store (tmp dir) without a host: the executor's target loop,
resume from the raw record, replacements, the cap, and extra runs interleaved."""

from __future__ import annotations

import json

import pytest
import yaml

from zbench_lib.sweeps.running.executor import _schedule, run_target
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store

NOISY = [100.0, 104.0, 96.0]          # s0 = 4, CoV 4%: Stein wants 12 runs, capped at max 6


class Crash(Exception):
    pass


def make_plan(rep=None, bs=("4k",), seed=11):
    d = {"question": "Does the repetition rule survive a resume?", "surface": "zvol", "host": "lab",
         "lab": {"disks": 2, "disk_size": "1G", "model": "custom:iops=400,bw=100M", "extra_disks": 0},
         "factors": {"layout": ["stripe"], "disks": [2], "volblocksize": ["16k"], "bs": list(bs)},
         "target": {"volsize": "48M"},
         "workloads": [{"name": "randread", "overrides": {"runtime_s": 2, "ramp_time_s": 1}},
                       {"name": "randwrite", "overrides": {"runtime_s": 2, "ramp_time_s": 1}}],
         "repetitions": rep or {"pilot": 3, "max": 6, "target_rel_ci": 0.05, "metric": "iops"}, "seed": seed}
    text = yaml.safe_dump(d)
    return text, expand(parse_spec(text, name="rr"))


def parse_run(attempt_dir, meta):
    v = json.loads((attempt_dir / "fio.json").read_text())
    return [{"direction": d, "iops": v["iops"], "flagged": v["flagged"],
             "truth_flags": "host_contention" if v["flagged"] else ""} for d in ("read", "write")]


class FakeRunner:
    """What `run_loop.measured_run` does, with values from `value(run)`; `crash(run)` cuts a run off mid-way."""

    def __init__(self, store, plan, value, crash=lambda run: False):
        self.store, self.plan, self.value, self.crash, self.log = store, plan, value, crash, []

    def __call__(self, run):
        path = self.store.begin_attempt(run.run_id)
        if self.crash(run):
            raise Crash(run.run_id)
        iops, flagged = self.value(run)
        (path / "fio.json").write_text(json.dumps({"iops": iops, "flagged": flagged}))
        meta = self.plan.run_meta(run)
        self.store.complete_attempt(run.run_id, path, meta)
        self.log.append(run)
        return parse_run(path, meta), 3.0


def default_value(plan, table=None):
    table = table or {}
    return lambda run: table.get((run.cell_id, run.rep), (NOISY[(run.rep - 1) % 3], False))


def run_all(store, plan, runner):
    sched = _schedule(plan, store, parse_run)
    for t in plan.targets:
        run_target(store, sched, t.target_id, runner)
    return sched


def reps_complete(store, cell_id):
    reps = [m["rep"] for _, _, m in store.completed_attempts() if m.get("cell_id") == cell_id]
    assert len(reps) == len(set(reps)), f"duplicate reps {sorted(reps)}"
    return sorted(reps)


def events(store, name, cell_id=None):
    return [e for e in store.events() if e["event"] == name and (cell_id is None or e.get("cell_id") == cell_id)]


@pytest.fixture
def setup(tmp_path):
    text, plan = make_plan()
    store = Store.create(tmp_path, text, plan, sweep_id="rr")
    yield text, plan, store
    store.close()


def test_a_fresh_sweep_runs_its_pilot_then_steins_total(setup):
    text, plan, store = setup
    runner = FakeRunner(store, plan, default_value(plan))
    run_all(store, plan, runner)
    for c in plan.cells:
        assert reps_complete(store, c.cell_id) == [1, 2, 3, 4, 5, 6]
        (decided,) = events(store, "repetitions decided", c.cell_id)
        assert (decided["n0"], decided["s0"], decided["n_required"], decided["n"]) == (3, 4.0, 12, 6)
        assert decided["t_quantile"] == pytest.approx(4.302653) and decided["pilot_reps"] == [1, 2, 3]
        (added,) = events(store, "runs added", c.cell_id)
        assert added["reps"] == [4, 5, 6] and added["why"] == "Stein's second stage: 6 admissible runs in all"
        assert added["interleave_seed"] == "11/extra-runs" and len(added["queue_positions"]) == 3
        (done,) = events(store, "repetitions done", c.cell_id)
        assert (done["admissible"], done["excluded"], done["attempts"]) == (6, 0, 6)
    reads = [plan.cell(r.cell_id).reads_only for r in runner.log]
    assert reads == sorted(reads, reverse=True)                 # reads before writes, extras included


def test_resume_after_a_later_rep_was_done_first(setup):
    """Issue 15: 'rep 2 is outside the adaptive range 3..4', and the cell forgot its earlier runs."""
    text, plan, store = setup
    read_cell = next(c.cell_id for c in plan.cells if c.reads_only)
    rep2 = next(r for r in plan.runs if r.cell_id == read_cell and r.rep == 2)
    FakeRunner(store, plan, default_value(plan))(rep2)          # only rep 2 done, then killed
    store.close()
    resumed = Store.resume(store.path, text, plan)
    runner = FakeRunner(resumed, plan, default_value(plan))
    sched = run_all(resumed, plan, runner)
    assert rep2 not in runner.log and sched.remaining() == 0
    assert reps_complete(resumed, read_cell) == [1, 2, 3, 4, 5, 6]
    (decided,) = events(resumed, "repetitions decided", read_cell)
    assert decided["pilot_reps"] == [1, 2, 3] and decided["s0"] == 4.0      # rep 2 from the first session
    resumed.close()


def test_resume_in_the_second_stage_continues_the_reps(setup):
    text, plan, store = setup
    read_cell = next(c.cell_id for c in plan.cells if c.reads_only)
    extras_started = []

    def crash(run):                      # cut off the second extra run of the read cell
        if run.cell_id == read_cell and run.rep > 3:
            extras_started.append(run.rep)
        return len(extras_started) == 2 and run.rep == extras_started[-1]

    with pytest.raises(Crash):
        run_all(store, plan, FakeRunner(store, plan, default_value(plan), crash))
    first_extra, cut = extras_started
    assert reps_complete(store, read_cell) == [1, 2, 3, first_extra]
    store.close()
    resumed = Store.resume(store.path, text, plan)
    runner = FakeRunner(resumed, plan, default_value(plan))
    run_all(resumed, plan, runner)
    reps = reps_complete(resumed, read_cell)
    assert len(reps) == 6 and reps[:4] == sorted([1, 2, 3, first_extra]) and min(reps[4:]) > max(3, first_extra)
    added = events(resumed, "runs added", read_cell)
    assert added[-1]["when"] == "resumed from raw" and added[-1]["reps"] == reps[4:]
    assert len(events(resumed, "repetitions decided", read_cell)) == 1     # recorded once, not again on resume
    assert len(events(resumed, "repetitions done", read_cell)) == 1
    assert any(e["run_id"] == f"{read_cell}-r{cut:02d}" for e in events(resumed, "run discarded"))
    df = resumed.rebuild_results(parse_run)
    assert not df.duplicated(["run_id", "direction"]).any()
    resumed.close()


def test_resume_of_a_finished_sweep_runs_nothing(setup):
    text, plan, store = setup
    run_all(store, plan, FakeRunner(store, plan, default_value(plan)))
    n_events = len(store.events())
    store.close()
    resumed = Store.resume(store.path, text, plan)
    runner = FakeRunner(resumed, plan, default_value(plan))
    assert run_all(resumed, plan, runner).remaining() == 0 and runner.log == []
    assert [e["event"] for e in resumed.events()[n_events:]] == ["resumed"]
    resumed.close()


def test_excluded_runs_are_replaced_then_the_cell_gives_up(tmp_path):
    text, plan = make_plan({"fixed": 2, "max_attempts": 4})
    store = Store.create(tmp_path, text, plan, sweep_id="rr")
    bad = next(c.cell_id for c in plan.cells if not c.reads_only)
    good = next(c.cell_id for c in plan.cells if c.reads_only)
    flaky = {(good, 1): (100.0, True)}                            # one flagged run in the good cell
    value = lambda run: (100.0, True) if run.cell_id == bad else flaky.get((run.cell_id, run.rep), (100.0, False))  # noqa: E731
    run_all(store, plan, FakeRunner(store, plan, value))
    assert reps_complete(store, good) == [1, 2, 3] and reps_complete(store, bad) == [1, 2, 3, 4]
    (done,) = events(store, "repetitions done", good)
    assert (done["admissible"], done["excluded"]) == (2, 1)
    assert done["excluded_runs"] == [{"rep": 1, "why": "invalidated by host_contention"}]
    (gave_up,) = events(store, "repetitions gave up", bad)
    assert gave_up["reason"].startswith("gave up: 4 of 4 runs excluded; 0 of 2 admissible runs")
    assert gave_up["max_attempts"] == 4 and [e["why"] for e in events(store, "runs added", bad)] == [
        "replace excluded runs", "replace excluded runs"]
    store.close()


def test_unreadable_raw_counts_as_an_excluded_attempt_and_its_rep_is_not_reused(setup):
    text, plan, store = setup
    cell = plan.cells[0].cell_id
    runner = FakeRunner(store, plan, default_value(plan))
    for r in [r for r in plan.runs if r.cell_id == cell]:
        runner(r)
    (store.raw / f"{cell}-r02" / "attempt-1" / "fio.json").write_text("{torn")
    sched = _schedule(plan, store, parse_run)
    assert [(o.rep, o.admissible) for o in sorted(sched.outcomes[cell], key=lambda o: o.rep)] == [
        (1, True), (2, False), (3, True)]
    assert sorted(o.why.split(":")[0] for o in sched.outcomes[cell] if not o.admissible) == ["raw unreadable"]
    (added,) = [f for name, f in sched.events if name == "runs added"]
    assert added["reps"] == [4] and added["why"] == "replace excluded pilot runs"


def test_extra_runs_are_interleaved_seeded_within_their_phase(tmp_path):
    orders = []
    for sub, seed in (("a", 3), ("b", 3), ("c", 4)):
        text, plan = make_plan(bs=("4k", "8k", "16k"), seed=seed)
        store = Store.create(tmp_path / sub, text, plan, sweep_id="rr")
        runner = FakeRunner(store, plan, default_value(plan))
        run_all(store, plan, runner)
        reads = [plan.cell(r.cell_id).reads_only for r in runner.log]
        assert reads == sorted(reads, reverse=True) and len(runner.log) == 6 * 6
        extras = [i for i, r in enumerate(runner.log) if r.order is None]
        assert extras != list(range(len(runner.log) - len(extras), len(runner.log)))     # not all at the end
        read_extras = [i for i in extras if plan.cell(runner.log[i].cell_id).reads_only]
        read_planned = [i for i, r in enumerate(runner.log) if r.order is not None
                        and plan.cell(r.cell_id).reads_only]
        assert min(read_extras) < max(read_planned)              # among the remaining reads, not after them
        for e in events(store, "runs added"):
            assert all(0 <= p <= e["queue_length_before"] + len(e["reps"]) for p in e["queue_positions"])
        orders.append([r.run_id for r in runner.log])
        store.close()
    assert orders[0] == orders[1] and orders[0] != orders[2]
