"""One statistic per claim (issue 11, docs/methods.md §1–§5, §10): each test is a small hand-made
table on which the code before issue 11 made a claim its own numbers contradict.

References are scipy / statsmodels calls (named in the comments) or hand computations.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from zbench_lib import analysis as A
from zbench_lib.analysis.stats.compare import compare, mannwhitney
from zbench_lib.analysis.stats.ratio import holm, linearised_log, log_ratio_test, ratio_ci, tost
from zbench_lib.analysis.stats.stats import summary

K = 1024


def _layouts(base, level, name="raidz1"):
    return pd.DataFrame({"workload": "randread", "direction": "read",
                         "layout": ["mirror"] * len(base) + [name] * len(level), "iops": list(base) + list(level)})


def test_p_comes_from_the_ratio_statistic_not_the_raw_difference():
    # Raw-difference Welch p = 0.0447 (scipy.stats.ttest_ind(a, b, equal_var=False)) called this
    # "ratio 2.40 (95% CI 0.56–10.26) ... a significant difference".
    a, b = [120, 130, 110], [20, 80, 50]
    assert sps.ttest_ind(a, b, equal_var=False).pvalue == pytest.approx(0.0447, abs=1e-4)
    text = A.conclusions_compare(A.compare_table(_layouts(b, a), "iops", "layout", "mirror"))[0]
    assert "ratio 2.40 (95% CI 0.56–10.26" in text
    assert "inconclusive" in text and "significant difference" not in text and "higher than" not in text
    row = A.compare_table(_layouts(b, a), "iops", "layout", "mirror").iloc[0]
    # scipy.stats.ttest_ind_from_stats(ln 120, 10/120, 3, ln 50, 30/50, 3, equal_var=False) -> 0.12473
    assert row.p == pytest.approx(0.1247313, rel=1e-5)
    assert row.ratio_ci_low < 1 < row.ratio_ci_high and row.verdict == "inconclusive"


@pytest.mark.parametrize("seed", range(12))
def test_ci_excludes_one_iff_p_below_alpha_and_adjusted_ci_iff_holm_p(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for lay, m in (("mirror", 100), ("raidz1", 100 * rng.uniform(0.8, 1.2)), ("raidz2", 100 * rng.uniform(0.8, 1.2)),
                   ("raidz3", 100 * rng.uniform(0.9, 1.1)), ("stripe", 100 * rng.uniform(0.95, 1.05))):
        n = int(rng.integers(2, 7))
        rows += [dict(layout=lay, iops=m * rng.lognormal(0, rng.uniform(0.01, 0.3))) for _ in range(n)]
    out = compare(pd.DataFrame(rows), "iops", "layout", "mirror", margin=0.05)
    for _, r in out.iterrows():
        assert (r.ratio_ci_low > 1 or r.ratio_ci_high < 1) == (r.p < 0.05)
        assert (r.adj_ci_low > 1 or r.adj_ci_high < 1) == (r.holm_p < 0.05) == r.significant
        assert r.adj_ci_low <= r.ratio_ci_low and r.adj_ci_high >= r.ratio_ci_high
        assert r.equivalent == (r.tost_ci90_low >= 1 / 1.05 and r.tost_ci90_high <= 1.05)
    # statsmodels multipletests(method="holm") gives the adjusted p
    assert out.holm_p.tolist() == pytest.approx(multipletests(out.p, method="holm")[1])


def test_holm_levels_and_adjusted_ci_by_hand():
    # p = (0.03, 0.04): 2·0.03 = 0.06 fails at the first step, so neither is rejected and both
    # get the first step's level α/2; α/1 for the second would exclude 1 while Holm p = 0.06.
    adj, level = holm([0.03, 0.04])
    assert adj.tolist() == pytest.approx([0.06, 0.06]) and level.tolist() == pytest.approx([0.025, 0.025])
    # p = (0.01, 0.04, 0.03): 3·0.01 = 0.03 rejected at α/3; 2·0.03 = 0.06 fails: Holm's last step is α/2, the
    # family's one level (issue 52 item 6): 0.01 < α/2 still excludes 1, 0.03 and 0.04 do not
    adj, level = holm([0.01, 0.04, 0.03, math.nan])
    assert adj[:3].tolist() == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adj[3])
    assert level[:3].tolist() == pytest.approx([0.025, 0.025, 0.025]) and math.isnan(level[3])
    # every p rejected: the last step's level, α, for all
    assert holm([0.001, 0.01, 0.02])[1].tolist() == pytest.approx([0.05, 0.05, 0.05])
    # The adjusted CI is ratio_ci at confidence 1 − level.
    rows = [dict(layout=lay, iops=v) for lay, vals in
            (("mirror", [100, 101, 99, 100]), ("raidz1", [97, 99, 98, 96]),
             ("raidz2", [99, 102, 98, 100]), ("raidz3", [90, 92, 91, 89])) for v in vals]
    df = pd.DataFrame(rows)
    out = compare(df, "iops", "layout", "mirror").set_index("level")
    for lay, r in out.iterrows():
        ref = ratio_ci(df[df.layout == lay].iops, df[df.layout == "mirror"].iops, conf=1 - r.holm_alpha)
        assert (r.adj_ci_low, r.adj_ci_high) == pytest.approx((ref.low, ref.high))
    assert sorted(out.holm_alpha.round(6)) == sorted(np.round(level_of(out.p.to_numpy()), 6))


def level_of(p):
    return holm(p)[1]


def test_clearly_better_needs_the_holm_adjusted_test():
    # 32K vs 16K: unadjusted 95% CI 1.01–1.20 excludes 1, but five block sizes share the family
    # and Holm p = 0.16 (0.19 from the raw Welch p before): no winner may be named.
    vals = {16 * K: [100, 104, 96], 4 * K: [99, 103, 97], 8 * K: [101, 95, 104], 32 * K: [110, 114, 106],
            64 * K: [98, 102, 100], 128 * K: [97, 103, 99]}
    df = pd.DataFrame([dict(workload="randread", direction="read", layout="raidz1", volblocksize_bytes=v, iops=x)
                       for v, xs in vals.items() for x in xs])
    cmp = A.compare_table(df, "iops", "volblocksize_bytes", 16 * K)
    text = A.conclusions_volblocksize(cmp, None, None, "iops")
    assert not any("gives" in t for t in text), text
    assert any("no block size is significantly better than 16K" in t and "after Holm correction" in t for t in text)
    r = cmp.set_index("level").loc[32 * K]
    assert r.ratio_ci_low > 1 and r.p < 0.05 and r.holm_p > 0.05 and r.adj_ci_low < 1 and r.verdict == "inconclusive"


def test_close_to_linear_needs_the_whole_deciding_interval_in_the_band():
    # a lone verdict (a family of one, α' = α): E = 0.80, SE of ln E 0.2 on 4 df. Its 95% interval,
    # 0.8 · exp(± t(0.975, 4) · 0.2), includes 1 and reaches far outside 0.91–1.10.
    se, df = 0.2, 4.0
    lo, hi = (0.8 * math.exp(s * sps.t.ppf(0.975, df) * se) for s in (-1, 1))
    sc = pd.DataFrame([dict(layout="stripe", workload="randread", direction="read", data_disks=d, baseline_disks=1,
                            n=3, scaling=sc, ideal_scaling=d, efficiency=e, efficiency_ci_low=a, efficiency_ci_high=b,
                            log_se=s_, welch_df=f)
                       for d, sc, e, a, b, s_, f in ((1, 1.0, 1.0, 1.0, 1.0, math.nan, math.nan),
                                                     (4, 3.2, 0.80, lo, hi, se, df))])
    text = A.conclusions_scaling(sc, "iops")[0]
    assert f"efficiency 0.80 (95% CI {lo:.2f}–{hi:.2f}; deciding: {lo:.2f}–{hi:.2f})" in text
    # the deciding level said once for the page, not on each row
    assert A.conclusions_scaling(sc, "iops")[-2].startswith("Each scaling verdict is decided by its efficiency's "
                                                            "95% interval")
    assert "too uncertain to call" in text and "close to linear" not in text
    # the words of the one decision rule's verdicts (decision.decide on ln E, margin ±10% on the log scale)
    assert A.efficiency_verdict("equivalent").startswith("close to linear (the whole interval lies within 0.91–1.10")
    assert A.efficiency_verdict("different, within margin").startswith("close to linear")
    assert A.efficiency_verdict("lower", 0.98) == "below linear" and A.efficiency_verdict("lower", 0.4) == \
        "far below linear"
    assert A.efficiency_verdict("lower, margin unclear", 0.98) == "below linear, margin unclear"
    assert A.efficiency_verdict("inconclusive").startswith("too uncertain")


def test_equivalence_is_tost_on_the_log_ratio():
    a, b = [100.0, 101.0, 99.0, 100.5, 99.5], [100.2, 100.8, 99.4, 100.1, 99.9]
    res = tost(a, b, 0.05)
    # statsmodels.stats.weightstats.ttost_ind on the linearised log values, bounds ±ln(1.05)
    from statsmodels.stats.weightstats import ttost_ind
    ref = ttost_ind(linearised_log(a), linearised_log(b), -math.log(1.05), math.log(1.05), usevar="unequal")
    assert res.p == pytest.approx(ref[0]) and res.equivalent
    # by hand: p_lower = P(T > (ln r + ln 1.05)/se) with Welch df
    r = log_ratio_test(a, b)
    assert res.p_lower == pytest.approx(sps.t.sf((math.log(r.ratio) + math.log(1.05)) / r.se, r.df), rel=1e-8)
    row = A.compare_table(_layouts(b, a), "iops", "layout", "mirror", margin=0.05).iloc[0]
    assert row.verdict == "equivalent" and row.tost_p == pytest.approx(res.p)
    assert "no meaningful difference (equivalent within ±5%" in A.conclusions_compare(
        A.compare_table(_layouts(b, a), "iops", "layout", "mirror"))[0]


def test_intervals_of_rates_never_go_below_zero():
    df = pd.DataFrame({"cfg": ["a"] * 3, "iops": [1.0, 100.0, 10.0]})
    s = summary(df, "iops", "cfg").iloc[0]
    assert s.ci95_low > 0
    # linear: 37 − 4.303·54.8/√3 = −99; on the log scale (scipy.stats.ttest_1samp on the
    # linearised values, .confidence_interval(), exponentiated) it stays positive
    ref = sps.ttest_1samp(linearised_log([1.0, 100.0, 10.0]), 0).confidence_interval(0.95)
    assert s.ci95_low > 0
    assert (s.ci95_low, s.ci95_high) == pytest.approx((math.exp(ref.low), math.exp(ref.high)))
    r = log_ratio_test([1.0, 100.0, 10.0], [50.0, 52.0, 48.0])
    assert r.low > 0


def test_mannwhitney_is_exact_and_only_where_it_can_reach_alpha():
    a, b = [1, 2, 2, 3, 4], [5, 6, 6, 7, 8]            # ties: scipy's default would go asymptotic (0.0117)
    out = compare(pd.DataFrame({"cfg": ["x"] * 5 + ["y"] * 5, "v": b + a}), "v", "cfg", "x")
    # scipy.stats.mannwhitneyu(a, b, method="exact") -> 2/252, the smallest achievable p at 5 vs 5
    assert out.mannwhitney_p.item() == pytest.approx(2 / 252)
    p, note = mannwhitney(a, b)
    assert p == pytest.approx(2 / 252) and "ties" in note
    p, note = mannwhitney([1, 2, 3], [4, 5, 6, 7])     # 2/35 = 0.057 >= 0.05: not reported
    assert math.isnan(p) and "too small" in note
