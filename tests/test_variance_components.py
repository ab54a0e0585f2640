"""Variance components and the pools × runs allocation (analysis/stats/variance_components.py, methods §22).

The expected values are computed here independently of the module: the classical ANOVA
(method-of-moments) estimates of a balanced one-way design, the exact chi-square interval of a
residual variance, the Satterthwaite df of MSB − MSW, Kalibera & Jones' r* by hand.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib.analysis.stats import variance_components as vc
from zbench_lib.analysis.stats.variance_components import (Components, Costs, Interval, allocate, best_design,
                                                           costs_from_events, expected_for_design,
                                                           expected_rel_halfwidth, fit_components, r_star)

ROOT = Path(__file__).resolve().parents[1]


def balanced(sb, sw, cells=4, pools=5, runs=3, seed=0, workload="randread"):
    """A balanced family: log iops = log(1000·(c+1)) + b_pool + e_run."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(cells):
        for p in range(pools):
            b = rng.normal(0, math.sqrt(sb))
            for k in range(runs):
                rows.append(dict(workload=workload, direction="read", layout=f"L{c}", pool_id=f"p{c}-pr{p + 1}",
                                 pool_replicate=p + 1, rep=k + 1, run_id=f"c{c}-pr{p + 1}-r{k + 1:02d}",
                                 iops=1000.0 * (c + 1) * math.exp(b + rng.normal(0, math.sqrt(sw)))))
    return pd.DataFrame(rows)


def anova(df, runs):
    """Method-of-moments estimates of a balanced design, written out: (sb, sw, msb, msw, df_b, df_w)."""
    y = np.log(df["iops"])
    groups = df["layout"] + df["pool_id"]
    gm = y.groupby(groups).mean()
    cm = y.groupby(df["layout"]).mean()
    cell_of = df.groupby(groups)["layout"].first()
    ssw = float(((y - y.groupby(groups).transform("mean")) ** 2).sum())
    ssb = runs * float(((gm - cm.loc[cell_of].to_numpy()) ** 2).sum())
    df_w, df_b = len(df) - gm.size, gm.size - cm.size
    msw, msb = ssw / df_w, ssb / df_b
    return (msb - msw) / runs, msw, msb, msw, df_b, df_w


def chi2_interval(est, df, conf=0.95):
    return df * est / sps.chi2.ppf((1 + conf) / 2, df), df * est / sps.chi2.ppf((1 - conf) / 2, df)


# -- the estimator ------------------------------------------------------------------------------------------

def test_reml_equals_the_anova_estimates_in_a_balanced_design():
    df = balanced(0.002, 0.001, seed=3)
    sb, sw, msb, msw, df_b, df_w = anova(df, runs=3)
    assert sb > 0                                           # interior: REML and ANOVA coincide there
    (c,) = fit_components(df, "iops")
    assert c.split and c.method == "REML" and c.reason == ""
    assert c.between.estimate == pytest.approx(sb, rel=1e-3)
    assert c.within.estimate == pytest.approx(sw, rel=1e-3)
    assert c.total.estimate == pytest.approx(sb + sw, rel=1e-3)
    assert (c.n_cells, c.n_pools, c.n_runs, c.pools_per_cell, c.runs_per_pool) == (4, 20, 60, 5, 3)
    # sigma2_w's Satterthwaite df from the REML information is the exact N - pools of a balanced design,
    # so its interval is the exact chi-square one; sigma2_b's df is the classical one of MSB - MSW
    assert c.within.df == pytest.approx(df_w, rel=1e-3)
    assert (c.within.low, c.within.high) == pytest.approx(chi2_interval(sw, df_w), rel=2e-3)
    assert c.between.df == pytest.approx((msb - msw) ** 2 / (msb ** 2 / df_b + msw ** 2 / df_w), rel=2e-3)
    assert c.between.low < sb < c.between.high and c.between.method == "profile likelihood"


def test_the_profile_interval_is_where_the_likelihood_ratio_crosses_its_quantile():
    df = balanced(0.002, 0.001, seed=3)
    (c,) = fit_components(df, "iops")
    y = np.log(df["iops"])
    stats = vc._Groups.of(y, df["layout"], df["layout"] + "#" + df["pool_id"])
    top = vc._profile(c.between.estimate, stats, c.within.estimate)
    crit = sps.chi2.ppf(0.95, 1) / 2
    for limit in (c.between.low, c.between.high):
        assert top - vc._profile(limit, stats, c.within.estimate) == pytest.approx(crit, abs=1e-3)
    inside = (c.between.low + c.between.high) / 2
    assert top - vc._profile(inside, stats, c.within.estimate) < crit


def test_a_between_variance_below_zero_by_anova_is_zero_with_an_interval_from_zero():
    df = balanced(0.0, 0.002, seed=11)
    sb_anova, *_ = anova(df, runs=3)
    assert sb_anova < 0
    (c,) = fit_components(df, "iops")
    assert c.between.estimate == 0 and c.between.low == 0 and c.between.high > 0
    # at sigma2_b = 0 REML's sigma2_w is the residual variance around the cell means (df N - cells)
    y = np.log(df["iops"])
    resid = float(((y - y.groupby(df["layout"]).transform("mean")) ** 2).sum()) / (len(df) - 4)
    assert c.within.estimate == pytest.approx(resid, rel=1e-9)
    assert c.ratio == math.inf


def test_runs_nearly_identical_on_each_pool_still_give_the_anova_answer():
    # sigma2_w many orders below sigma2_b: statsmodels' fit is off there (0.00023 here), the estimate is
    # checked on the closed-form likelihood and moved to its maximum, the ANOVA one
    df = balanced(0.001, 0.0, cells=2, pools=3, runs=2)
    df["iops"] = df["iops"].round(0)
    sb, sw, *_ = anova(df, runs=2)
    (c,) = fit_components(df, "iops")
    assert c.between.estimate == pytest.approx(sb, rel=1e-4) and c.within.estimate < 1e-12
    assert c.between.df == pytest.approx(4, rel=1e-3)        # the pool means' own df, pools - cells
    # the profile interval of a variance with 4 df: x = sigma2/est where 4·(1/x - 1 + ln x) = chi2_1(0.95)
    f = lambda x: 4 * (1 / x - 1 + math.log(x)) - sps.chi2.ppf(0.95, 1)
    from scipy.optimize import brentq
    assert c.between.low / sb == pytest.approx(brentq(f, 0.05, 1), rel=1e-3)
    assert c.between.high / sb == pytest.approx(brentq(f, 1, 100), rel=1e-3)


def test_cell_means_do_not_inflate_the_between_variance():
    df = balanced(0.001, 0.001, seed=5)
    (a,) = fit_components(df, "iops")
    spread = df.assign(iops=df["iops"] * np.where(df["layout"] == "L0", 50.0, 1.0))   # one cell 50x higher
    (b,) = fit_components(spread, "iops")
    assert b.between.estimate == pytest.approx(a.between.estimate, rel=1e-3)
    assert b.within.estimate == pytest.approx(a.within.estimate, rel=1e-3)


def test_one_run_per_pool_gives_only_the_total_with_its_exact_interval():
    df = balanced(0.002, 0.001, cells=3, pools=4, runs=1, seed=2)
    (c,) = fit_components(df, "iops")
    assert not c.within_estimable and not c.between_estimable and not c.split
    assert c.between is None and c.within is None and "one run per pool" in c.reason
    y = np.log(df["iops"])
    resid = float(((y - y.groupby(df["layout"]).transform("mean")) ** 2).sum())
    dof = len(df) - 3
    assert c.total.estimate == pytest.approx(resid / dof) and c.total.df == dof
    assert (c.total.low, c.total.high) == pytest.approx(chi2_interval(resid / dof, dof))


def test_one_pool_per_cell_gives_only_the_within_variance():
    df = balanced(0.002, 0.001, cells=3, pools=1, runs=5, seed=2)
    (c,) = fit_components(df, "iops")
    assert c.within_estimable and not c.between_estimable and c.total is None and c.between is None
    assert "one pool per cell" in c.reason
    y = np.log(df["iops"])
    resid = float(((y - y.groupby(df["layout"]).transform("mean")) ** 2).sum()) / (len(df) - 3)
    assert c.within.estimate == pytest.approx(resid) and c.within.df == len(df) - 3


def test_no_replication_at_all_says_so():
    (c,) = fit_components(balanced(0.002, 0.001, cells=3, pools=1, runs=1), "iops")
    assert c.between is None and c.within is None and c.total is None and "no variance" in c.reason


def test_families_are_apart_and_flagged_or_non_positive_rows_are_left_out():
    a = balanced(0.002, 0.001, seed=1)
    b = balanced(0.0005, 0.004, seed=2, workload="randwrite").assign(direction="write")
    bad = a.iloc[:2].assign(iops=[1e9, 0.0], flagged=[True, False])    # a flagged outlier, a zero
    df = pd.concat([a.assign(flagged=False), b.assign(flagged=False), bad], ignore_index=True)
    out = {c.label: c for c in fit_components(df, "iops")}
    assert set(out) == {"randread read", "randwrite write"}
    (alone,) = fit_components(a, "iops")
    assert out["randread read"].between.estimate == pytest.approx(alone.between.estimate, rel=1e-6)
    assert out["randread read"].dropped == 1 and out["randread read"].n_runs == len(a)
    assert out["randwrite write"].within.estimate > 2 * out["randread read"].within.estimate


def test_the_dataframe_form_and_the_record_round_trip():
    df = balanced(0.002, 0.001, seed=3)
    frame = vc.estimate_components(df, "iops")
    assert list(frame["family"]) == ["randread read"]
    assert {"between", "between_low", "within_high", "total_df", "between_estimable", "reason"} <= set(frame.columns)
    (c,) = fit_components(df, "iops")
    assert Components.from_record(c.to_record()) == c
    assert Components.from_record(json.loads(json.dumps(c.to_record()))) == c


def test_an_unknown_column_is_a_config_error():
    from zbench_lib.core.errors import ConfigError
    with pytest.raises(ConfigError, match="no column"):
        fit_components(balanced(0.001, 0.001), "no_such_metric")


# -- the expected half-width and the allocation ---------------------------------------------------------------

def known(sb, sw) -> Components:
    iv = lambda v: Interval(v, v / 2, v * 2, 10.0, "test")
    return Components((("workload", "w"),), "iops", 1, 6, 18, 6.0, 3.0, iv(sb), iv(sw), iv(sb + sw), True, True,
                      "", "test")


def total_only(total) -> Components:
    return Components((("workload", "w"),), "iops", 1, 3, 3, 3.0, 1.0, None, None,
                      Interval(total, total / 2, total * 2, 10.0, "test"), False, False, vc.ONE_RUN, "test")


COSTS = Costs(create_s=100.0, prefill_s=20.0, teardown_s=0.0, run_s=30.0, cells_per_pool=1.0, n_pools=5, n_runs=9)


def test_expected_halfwidth_by_hand():
    x = expected_rel_halfwidth(known(0.0004, 0.0016), 6, 3)
    h = sps.t.ppf(0.975, 5) * math.sqrt(0.0004 / 6 + 0.0016 / 18)
    assert x.kind == "estimate" and x.rel_halfwidth == pytest.approx(math.sinh(h))
    hi = sps.t.ppf(0.975, 5) * math.sqrt(0.0008 / 6 + 0.0032 / 18)
    assert x.rel_halfwidth_high == pytest.approx(math.sinh(hi))
    assert expected_rel_halfwidth(known(0.0004, 0.0016), 1, 5).rel_halfwidth is None


def test_total_only_gives_a_bound_that_does_not_depend_on_runs():
    b1, b3 = (expected_rel_halfwidth(total_only(0.003), 4, r) for r in (1, 3))
    assert b1.kind == b3.kind == "upper bound" and b1.rel_halfwidth == b3.rel_halfwidth
    assert b1.rel_halfwidth == pytest.approx(math.sinh(sps.t.ppf(0.975, 3) * math.sqrt(0.003 / 4)))
    a = allocate(total_only(0.003), COSTS, 30 * 60)
    assert (a.best.pools, a.best.runs_per_pool) == (12, 1) and a.r_star is None   # 1800 // (120 + 30) = 12


def test_r_star_is_kalibera_and_jones_by_hand():
    # c_pool 120 s, c_run 30 s, sigma2_w / sigma2_b = 4: r* = sqrt(120/30 · 4) = 4
    assert r_star(known(0.0005, 0.002), COSTS) == pytest.approx(4.0)
    # a pool's cost is shared by the cells it holds: 4 cells on it, c_pool a cell 30 s -> r* = sqrt(1 · 4) = 2
    shared = Costs(100.0, 20.0, 0.0, 30.0, cells_per_pool=4.0, n_pools=5, n_runs=9)
    assert shared.pool_per_cell_s == 30.0 and r_star(known(0.0005, 0.002), shared) == pytest.approx(2.0)


def test_the_allocation_is_the_best_integer_design_by_brute_force():
    c, wall = known(0.0005, 0.002), 30 * 60
    by_hand = []
    for p in range(2, 20):
        for r in range(1, 30):
            if p * (120 + 30 * r) <= wall:
                h = sps.t.ppf(0.975, p - 1) * math.sqrt(0.0005 / p + 0.002 / (p * r))
                by_hand.append((math.sinh(h), p, r))
    _, p, r = min(by_hand)
    a = allocate(c, COSTS, wall)
    assert (a.best.pools, a.best.runs_per_pool) == (p, r) == (10, 2)
    assert a.best.fits and a.best.cost_s == 10 * (120 + 60)
    assert a.r_star == pytest.approx(4.0)                 # t and whole pools move the optimum off r*
    labels = {d.label for d in a.alternatives}
    assert {"3 pools × 1 run", "1 pool × 5 runs", "7 pools × 4 runs"} <= labels    # 7 × 4: r* rounded


def test_a_budget_too_small_for_two_pools_says_it_does_not_fit():
    a = allocate(known(0.0005, 0.002), COSTS, 200)
    assert (a.best.pools, a.best.runs_per_pool) == (2, 1) and not a.best.fits
    assert best_design(known(0.0005, 0.002), COSTS, 200) is None


def test_within_only_recommends_a_design_that_would_split_it():
    c = Components((("workload", "w"),), "iops", 1, 1, 5, 1.0, 5.0, None, Interval(0.001, 0.0005, 0.002, 4, "t"),
                   None, False, True, vc.ONE_POOL, "test")
    a = allocate(c, COSTS, 30 * 60)
    assert a.best.runs_per_pool == 2 and a.best.pools == 1800 // 180 and a.best.expected.kind == "lower bound"


# -- costs from events ----------------------------------------------------------------------------------------

def ev(name, t, **kw):
    return {"event": name, "ts": f"2026-01-01T00:{t // 60:02d}:{t % 60:02d}Z", **kw}


def test_costs_from_hand_made_events():
    events = [ev("started", 0), ev("pool creating", 0, pool_id="p01-pr1"), ev("pool created", 10, pool_id="p01-pr1"),
              ev("prefilled", 16, target_id="p01-pr1-t01", prefill_s=5.0),
              ev("run started", 17, run_id="ca-pr1-r01", attempt=1), ev("run completed", 47, run_id="ca-pr1-r01",
                                                                       attempt=1),
              ev("run judged", 48, run_id="ca-pr1-r01", attempt=1),
              ev("run started", 50, run_id="cb-pr1-r01", attempt=1), ev("run completed", 70, run_id="cb-pr1-r01",
                                                                       attempt=1),
              ev("repetitions done", 70, cell_id="cb-pr1", admissible=1, attempts=2),
              ev("pool teardown", 72, pool_id="p01-pr1"), ev("pool creating", 76, pool_id="p02-pr1"),
              ev("pool created", 96, pool_id="p02-pr1"), ev("run started", 97, run_id="cc-pr1-r01", attempt=1),
              ev("resumed", 500), ev("pool creating", 600, pool_id="p02-pr1"),
              ev("pool created", 612, pool_id="p02-pr1"), ev("prefilled", 620, target_id="p02-pr1-t01", prefill_s=7.0),
              ev("pool teardown", 630, pool_id="p02-pr1"), ev("finished", 633)]
    k = costs_from_events(events)
    assert k.n_pools == 3 and k.create_s == pytest.approx((10 + 20 + 12) / 3)
    assert k.prefill_s == pytest.approx((5 + 0 + 7) / 3)
    assert k.teardown_s == pytest.approx((4 + 3) / 2)       # the pool a resume cut short has none
    assert k.n_runs == 2 and k.run_s == pytest.approx((31 + 20) / 2)
    assert k.cells_per_pool == pytest.approx((2 + 1) / 2) and k.attempts_per_admissible == 2
    assert k.pool_s == pytest.approx(k.create_s + k.prefill_s + k.teardown_s)


def test_costs_of_a_shipped_example():
    from zbench_lib.analysis.data.sweep_data import read_events
    k = costs_from_events(read_events(ROOT / "data" / "examples" / "scaling"))
    assert k.n_pools == 77 and 3.5 < k.cells_per_pool <= 4        # 4 workloads on each pool
    assert 5 < k.create_s < 60 and 5 < k.run_s < 120 and k.known


# -- the command, the shipped table ---------------------------------------------------------------------------

def zbench(*args):
    return subprocess.run([sys.executable, "-m", "zbench_lib.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def write_sweep(path: Path, df: pd.DataFrame):
    path.mkdir()
    df.to_parquet(path / "results.parquet")
    lines, t = [ev("started", 0)], 0
    for pool, rows in df.groupby("pool_id", sort=False):
        lines += [ev("pool creating", t, pool_id=pool), ev("pool created", t + 20, pool_id=pool),
                  ev("prefilled", t + 30, target_id=f"{pool}-t01", prefill_s=10.0)]
        t += 30
        for run in rows["run_id"]:
            lines += [ev("run started", t, run_id=run, attempt=1), ev("run completed", t + 30, run_id=run, attempt=1)]
            t += 30
        lines.append(ev("pool teardown", t, pool_id=pool))
        t += 2
    lines.append(ev("finished", t))
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))


def test_plan_advice_on_a_sweep_that_splits_its_variance(tmp_path):
    d = tmp_path / "split"
    write_sweep(d, balanced(0.002, 0.0005, cells=3, pools=4, runs=2, seed=4))
    res = zbench("plan-advice", str(d), "--wall", "30")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "between pools CoV" in out and "within a pool (run to run) " in out and "cannot split" not in out
    assert "a pool 32.0 s (create 20.0 + prefill 10.0 + teardown 2.0)" in out and "a run 30.0 s" in out
    assert "recommended within 30.0 min:" in out and "r* = sqrt(c_pool/c_run · σ²w/σ²b)" in out


@pytest.mark.parametrize("example, why", [("scaling", "one run per pool"), ("volblocksize", "one run per pool"),
                                          ("iodepth-curve", "one pool per cell")])
def test_plan_advice_on_the_examples_says_why_it_cannot_split(example, why):
    res = zbench("plan-advice", f"data/examples/{example}", "--wall", "20")
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if "cannot split the variance" in ln]
    assert lines and all(why in ln and "would split them" in ln for ln in lines)
    assert "recommended within 20.0 min" in res.stdout


def test_plan_advice_refuses_a_bad_metric_in_one_line():
    res = zbench("plan-advice", "data/examples/volblocksize", "--metric", "nope")
    assert res.returncode == 2 and "no metric 'nope'" in res.stderr and "Traceback" not in res.stderr


def _script():
    spec = importlib.util.spec_from_file_location("example_components", ROOT / "scripts" / "example_components.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_shipped_components_table_is_what_the_examples_give():
    mod = _script()
    shipped = json.loads((ROOT / "data" / "examples" / "components.json").read_text())
    assert mod.same_table(shipped, mod.build_table()), "rerun scripts/example_components.py"
    kinds = {(e["example"], e["workload_kind"], e["split"], e["total"] is not None)
             for e in shipped["entries"] if e["metric"] == "iops"}
    assert ("scaling", "seqwrite", False, True) in kinds and ("iodepth-curve", "randread", False, False) in kinds


def test_expected_for_design_reads_the_table(tmp_path):
    rec = dict(total_only(0.0025).to_record(), example="ex", workload_kind="randwrite", disk_model="hdd",
               split=False)
    split = dict(known(0.0004, 0.0016).to_record(), example="ex2", workload_kind="seqread", disk_model="hdd",
                 split=True)
    path = tmp_path / "components.json"
    path.write_text(json.dumps({"entries": [rec, split]}))
    value, why = expected_for_design("randwrite", "HDD", 5, 2, path=path)
    assert value == pytest.approx(math.sinh(sps.t.ppf(0.975, 4) * math.sqrt(0.0025 / 5)))
    assert why.startswith("at most") and "upper bound" in why
    value, why = expected_for_design("read", "hdd", 6, 3, path=path)           # fio's 'read' is sequential
    assert value == pytest.approx(expected_rel_halfwidth(known(0.0004, 0.0016), 6, 3).rel_halfwidth)
    assert "expected for 6 pools × 3 runs" in why
    assert expected_for_design("randread", "hdd", 3, 2, path=path) == (
        None, "unknown: no shipped example measured this kind (randread on hdd)")


def test_expected_for_design_on_the_shipped_table():
    value, why = expected_for_design("randread", "hdd", 3, 2)               # iodepth-curve: one pool
    assert value is None and why.startswith("unknown:") and "one pool per cell" in why
    value, why = expected_for_design("seqwrite", "custom:iops=100,bw=12M", 3, 1)
    assert 0 < value < 1 and "scaling" in why and "upper bound" in why


def test_docstring_examples_run():
    import doctest
    result = doctest.testmod(vc)
    assert result.attempted >= 3 and result.failed == 0
