"""The repetition rule: Stein's two-stage total, the fixed design, exclusions and their cap.

Pure: outcomes in, a decision out; no store, no host.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from zbench_lib.sweeps.planning.repetitions import (Outcome, RepetitionRule, relative_ci_halfwidth, stein_interval,
                                                    stein_total, t_quantile)
from zbench_lib.sweeps.planning.schedule import outcome
from zbench_lib.sweeps.spec.values import repetitions

STEIN = RepetitionRule("stein", pilot=3, max=6, target_rel_ci=0.05, max_attempts=9)
FIXED = RepetitionRule("fixed", pilot=4, max=4, target_rel_ci=None, max_attempts=6)


def ok(*values, start=1):
    return [Outcome(start + i, v, True) for i, v in enumerate(values)]


def test_stein_total_by_hand():
    d = stein_total([100.0, 104.0, 96.0], 0.05, 20)
    t = sps.t.ppf(0.975, 2)
    assert d["t_quantile"] == pytest.approx(t) and d["s0"] == pytest.approx(4.0) and d["mean0"] == 100.0
    assert d["n_required"] == math.ceil((t * 4.0 / (0.05 * 100.0)) ** 2) == 12 and d["n"] == 12
    assert not d["capped"] and d["t_df"] == 2 and d["cov0"] == pytest.approx(0.04)
    capped = stein_total([100.0, 104.0, 96.0], 0.05, 6)
    assert (capped["n_required"], capped["n"], capped["capped"]) == (12, 6, True)
    assert stein_total([100.0, 100.0, 100.0], 0.05, 6)["n"] == 3          # no spread: the pilot suffices
    assert stein_total([0.0, 0.0, 0.0], 0.05, 6)["n"] == 6                # relative precision undefined
    assert stein_total([-1.0, 0.5, 0.4], 0.05, 6)["n_required"] is None


def test_stein_interval_keeps_the_pilot_quantile_and_sd():
    values = [100.0, 104.0, 96.0, 101.0, 99.0, 100.0]
    m, lo, hi = stein_interval(values, 3)
    assert m == pytest.approx(100.0)
    assert hi - m == pytest.approx(sps.t.ppf(0.975, 2) * 4.0 / math.sqrt(6))
    assert m - lo == pytest.approx(hi - m)
    assert t_quantile(2) == pytest.approx(4.302652729749462)


def test_relative_ci_halfwidth_is_kept():
    assert relative_ci_halfwidth([100, 110, 90]) == pytest.approx(0.2484138, rel=1e-6)


def test_pilot_waits_for_its_runs():
    d = STEIN.decide(ok(100.0), pending_reps=[2, 3])
    assert (d.add, d.needed, d.stage, d.stein) == (0, 3, "pilot", None)
    assert d.reason == "pilot: 1 of 3 admissible runs"


def test_stein_sets_the_total_after_the_pilot():
    d = STEIN.decide(ok(100.0, 104.0, 96.0))
    assert (d.add, d.needed, d.stage) == (3, 6, "second stage")
    assert d.stein["n_required"] == 12 and d.stein["pilot_reps"] == [1, 2, 3]
    assert "Stein: pilot CoV 4.0%, t(2) = 4.303, n = 6 (capped; 12 needed)" in d.reason
    # the second stage queued: nothing more to add until its runs come back
    assert STEIN.decide(ok(100.0, 104.0, 96.0), [4, 5, 6]).add == 0
    done = STEIN.decide(ok(100.0, 104.0, 96.0, 101.0, 99.0, 100.0))
    assert (done.add, done.stage, done.admissible) == (0, "done", 6)
    assert done.reason.startswith("done: 6 of 6 admissible runs; Stein")


def test_a_quiet_pilot_is_enough():
    d = STEIN.decide(ok(100.0, 100.5, 99.5))
    assert (d.add, d.needed, d.stage) == (0, 3, "done") and d.stein["n_required"] == 3


def test_excluded_runs_do_not_count_and_are_replaced():
    runs = [Outcome(1, 100.0, True), Outcome(2, 300.0, False, "flagged: cache_served"), Outcome(3, 104.0, True)]
    d = STEIN.decide(runs)
    assert (d.add, d.needed, d.stage, d.excluded) == (1, 3, "pilot", 1)
    assert d.reason == "pilot: 2 of 3 admissible runs, 1 excluded"
    # the pilot is the first three admissible runs by rep, once no lower rep is still queued
    d = STEIN.decide(runs + [Outcome(4, 96.0, True)])
    assert d.stein["pilot_reps"] == [1, 3, 4] and d.stein["s0"] == pytest.approx(4.0) and d.add == 3


def test_pilot_not_closed_while_a_lower_rep_is_queued():
    # resumed: reps 1, 4 and 5 came back before rep 3 (interleaved); rep 2 was excluded
    runs = [Outcome(1, 100.0, True), Outcome(2, 1.0, False), Outcome(4, 104.0, True), Outcome(5, 96.0, True)]
    d = STEIN.decide(runs, pending_reps=[3])
    assert (d.add, d.stage, d.stein) == (0, "pilot", None)
    d = STEIN.decide(runs + [Outcome(3, 98.0, True)])
    assert d.stein["pilot_reps"] == [1, 3, 4]


def test_gave_up_after_the_cap():
    runs = [Outcome(i, 100.0, i in (1, 4), "invalidated by host_contention") for i in range(1, 10)]
    d = STEIN.decide(runs)
    assert (d.add, d.stage, d.admissible, d.excluded) == (0, "gave up", 2, 7)
    assert d.reason == "gave up: 7 of 9 runs excluded; 2 of 3 admissible runs, 7 excluded after the cap of 9 attempts"
    # one attempt left: it is used, not more
    assert STEIN.decide(runs[:8]).add == 1
    assert STEIN.decide(runs[:7], pending_reps=[8]).add == 0          # the queued one may do


def test_fixed_design():
    assert FIXED.decide([], [1, 2, 3, 4]).add == 0
    d = FIXED.decide(ok(1.0, 2.0) + [Outcome(3, 1.0, False)], [4])
    assert (d.add, d.needed, d.stage, d.stein) == (1, 4, "second stage", None)
    assert FIXED.decide(ok(1.0, 2.0, 3.0, 4.0)).stage == "done"


def test_rule_from_spec_block():
    r = RepetitionRule.from_config(repetitions({"min": 2, "max": 4}))
    assert r == RepetitionRule("stein", 2, 4, 0.05, 6)
    assert RepetitionRule.from_config(repetitions({"fixed": 5})) == RepetitionRule("fixed", 5, 5, None, 10)


@pytest.mark.parametrize("block", [None, {}, {"pool_replicates": 3}, {"metric": "bw_bytes_s"}])
def test_default_design_is_two_runs_on_each_of_three_pools(block):
    # Issue 27: no declared design gave Stein's two-stage rule (pilot 3, max 10) while the
    # analysis used the plain Welch interval; the default became a fixed design. Issue 45: it was
    # 5 runs on one pool, whose interval speaks for that pool; it is now 2 runs on each of 3 pools.
    r = repetitions(block)
    assert (r["design"], r["pilot"], r["max"], r["target_rel_ci"], r["max_attempts"]) == ("fixed", 2, 2, None, 4)
    assert r["pool_replicates"] == 3
    rule = RepetitionRule.from_config(r)
    assert rule == RepetitionRule("fixed", 2, 2, None, 4)
    d = rule.decide([], [])                          # a new cell (one pool replicate) queues its two runs at once
    assert (d.add, d.needed, d.stein) == (2, 2, None)
    assert rule.decide(ok(90.0, 110.0)).stage == "done"   # no second stage, whatever the spread


def test_steins_rule_sizes_one_pool_unless_replicates_are_stated():
    assert repetitions({"pilot": 3, "max": 10})["pool_replicates"] == 1
    assert repetitions({"pilot": 3, "max": 10, "pool_replicates": 3})["pool_replicates"] == 3


def test_stein_only_when_declared():
    assert repetitions({"max_attempts": 7})["design"] == "fixed"
    assert repetitions({"target_rel_ci": 0.05})["design"] == "stein"
    assert RepetitionRule.from_config(repetitions({"pilot": 3, "max": 10})) == RepetitionRule("stein", 3, 10, 0.05, 13)


@pytest.mark.parametrize("rows, expected", [
    ([{"direction": "write", "iops": 10.0, "flagged": False}], Outcome(1, 10.0, True)),
    ([{"direction": "write", "iops": 10.0, "flagged": None}], Outcome(1, 10.0, True)),          # not judged
    ([{"direction": "write", "iops": 10.0, "flagged": float("nan")}], Outcome(1, 10.0, True)),
    ([{"direction": "write", "iops": 10.0}], Outcome(1, 10.0, True)),
    ([{"direction": "write", "iops": 10.0, "flagged": True, "truth_flags": "host_contention"}],
     Outcome(1, 10.0, False, "invalidated by host_contention")),
    ([{"direction": "read", "iops": 10.0, "flagged": False}], Outcome(1, None, False, "no write row")),
    ([{"direction": "write", "iops": None, "flagged": False}], Outcome(1, None, False, "no iops value")),
    ([{"direction": "read", "iops": 1.0, "flagged": True}, {"direction": "write", "iops": 2.0, "flagged": False}],
     Outcome(1, 2.0, True)),                    # only the primary direction counts
])
def test_outcome_from_rows(rows, expected):
    assert outcome(1, rows, "write", "iops") == expected
