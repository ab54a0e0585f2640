"""Comparison statistics against scipy / statsmodels / hand-computed references.

R is not installed in the test image; where an R call is quoted, the number was
computed with the scipy function that implements the same formula (noted), or by hand.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib.analysis.stats.compare import cliffs_delta, compare, hedges_g, mannwhitney_min_p, tost
from zbench_lib.analysis.stats.ratio import bootstrap_ratio_ci, ratio_ci
from zbench_lib.core.errors import ConfigError

A = [102.1, 98.7, 101.5, 99.9, 100.4]
B = [95.2, 97.8, 94.1, 96.5, 95.9]


def test_ratio_ci_delta_method_reference():
    # Hand: mA=100.52 sA²=1.792, mB=95.9 sB²=1.925, n=5 each;
    # vA=1.792/(5·100.52²), vB=1.925/(5·95.9²); Welch–Satterthwaite df=7.9457;
    # exp(ln(100.52/95.9) ± qt(0.975, 7.9457)·sqrt(vA+vB))
    r = ratio_ci(A, B)
    assert r.ratio == pytest.approx(100.52 / 95.9)
    assert r.low == pytest.approx(1.0271088, rel=1e-6)
    assert r.high == pytest.approx(1.0696737, rel=1e-6)
    assert r.df == pytest.approx(7.9457115, rel=1e-6)


def test_ratio_ci_wider_at_lower_confidence_is_narrower():
    assert ratio_ci(A, B, conf=0.90).low > ratio_ci(A, B).low


def test_ratio_ci_needs_values():
    with pytest.raises(ConfigError):
        ratio_ci([], B)
    assert math.isnan(ratio_ci([100.0], B).low)


def test_bootstrap_ratio_ci_matches_scipy_bca():
    r = bootstrap_ratio_ci(A, B, n_resamples=2000, rng=1)
    ref = sps.bootstrap((np.array(A), np.array(B)),
                        lambda x, y, axis=-1: x.mean(axis=axis) / y.mean(axis=axis),
                        vectorized=True, n_resamples=2000, method="BCa",
                        rng=np.random.default_rng(1)).confidence_interval
    assert (r.low, r.high) == pytest.approx((ref.low, ref.high))
    assert r.low < r.ratio < r.high
    assert r.ratio == pytest.approx(100.52 / 95.9)


def test_tost_equivalent_exactly_when_90pct_ci_inside_margin():
    a = [100.0, 101.0, 99.0, 100.5, 99.5]
    b = [100.2, 100.8, 99.4, 100.1, 99.9]
    res = tost(a, b, margin_ratio=0.05)
    ci = ratio_ci(a, b, conf=0.90)
    assert (res.low, res.high) == pytest.approx((ci.low, ci.high))
    assert res.equivalent and res.p < 0.05
    assert res.lower_bound == pytest.approx(1 / 1.05) and res.upper_bound == 1.05
    assert res.p == max(res.p_lower, res.p_upper)


def test_tost_not_equivalent_for_a_real_difference_or_noise():
    assert not tost(A, B, margin_ratio=0.02).equivalent           # ratio 1.048 > 1.02
    noisy = tost([80, 120, 100], [100, 70, 130], margin_ratio=0.05)
    assert not noisy.equivalent and noisy.p > 0.05
    # p_upper is the one-sided t cdf at (ln r − ln 1.05)/se with Welch df
    a, b = np.array(A), np.array(B)
    se = math.sqrt(a.var(ddof=1) / (5 * a.mean() ** 2) + b.var(ddof=1) / (5 * b.mean() ** 2))
    t_up = (math.log(a.mean() / b.mean()) - math.log(1.05)) / se
    assert tost(A, B).p_upper == pytest.approx(sps.t.cdf(t_up, 7.9457115), rel=1e-5)


def test_effect_sizes_reference():
    # Hand: pooled SD sqrt((4·1.792 + 4·1.925)/8) = 1.363268; d = 4.62/1.363268 = 3.388913;
    # J = 1 − 3/(4·10 − 9) = 0.903226 → g = 3.060956
    # (R: effsize::cohen.d(A, B, hedges.correction=TRUE), same J approximation)
    assert hedges_g(A, B) == pytest.approx(3.060956, rel=1e-6)
    assert hedges_g(B, A) == pytest.approx(-3.060956, rel=1e-6)
    assert cliffs_delta(A, B) == 1.0                # every A above every B
    # Hand: pairs (1,0) > , (1,2) < , (3,0) > , (3,2) >  → (3 − 1)/4
    assert cliffs_delta([1, 3], [0, 2]) == pytest.approx((3 - 1) / 4)
    assert math.isnan(hedges_g([1.0], [2.0, 3.0]))


def test_mannwhitney_min_p_exact():
    assert mannwhitney_min_p(3, 3) == pytest.approx(0.1)          # 2 / C(6, 3) = 2/20
    assert mannwhitney_min_p(5, 5) == pytest.approx(0.0079365, rel=1e-4)   # 2/252
    assert mannwhitney_min_p(4, 4) == pytest.approx(2 / 70)
    # it is what scipy's exact test gives for completely separated samples
    assert sps.mannwhitneyu([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], method="exact").pvalue == \
        pytest.approx(mannwhitney_min_p(5, 5))


def _log_welch_p(a, b):
    """Reference: the delta-method log-ratio test through scipy's from-moments Welch test."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return sps.ttest_ind_from_stats(math.log(a.mean()), a.std(ddof=1) / a.mean(), len(a),
                                    math.log(b.mean()), b.std(ddof=1) / b.mean(), len(b),
                                    equal_var=False).pvalue


def _two_level(n, lo=80.0, hi=100.0):
    return pd.DataFrame({"layout": ["mirror"] * n + ["raidz1"] * n,
                         "iops": [hi + i for i in range(n)] + [lo + i for i in range(n)]})


def test_compare_mannwhitney_suppressed_at_3v3_allowed_at_5v5():
    small = compare(_two_level(3), "iops", "layout", "mirror")
    assert math.isnan(small.loc[0, "mannwhitney_p"])
    assert "too small" in small.loc[0, "mannwhitney_note"]
    assert "0.1" in small.loc[0, "mannwhitney_note"]
    five = compare(_two_level(5), "iops", "layout", "mirror")
    assert five.loc[0, "mannwhitney_p"] == pytest.approx(2 / 252)
    assert five.loc[0, "mannwhitney_note"] == ""
    strict = compare(_two_level(5), "iops", "layout", "mirror", alpha=0.005)
    assert math.isnan(strict.loc[0, "mannwhitney_p"])


def test_compare_reference_values():
    df = pd.DataFrame({"layout": ["mirror"] * 5 + ["raidz1"] * 5, "iops": B + A})
    out = compare(df, "iops", "layout", baseline="mirror")
    row = out.iloc[0]
    assert (row.level, row.baseline, row.n_level, row.n_baseline) == ("raidz1", "mirror", 5, 5)
    # The p of the ratio's own statistic: t = ln(100.52/95.9) / 0.0087939 = 5.35039 on 7.9457 df
    # (scipy.stats.ttest_ind_from_stats(ln mA, sA/mA, 5, ln mB, sB/mB, 5, equal_var=False))
    assert row.p == pytest.approx(0.000701213, rel=1e-5)
    assert row.p == pytest.approx(_log_welch_p(A, B), rel=1e-9)
    assert row.welch_df == pytest.approx(7.9457115, rel=1e-6)
    assert row.holm_p == pytest.approx(row.p)                         # family of one
    assert row.holm_alpha == pytest.approx(0.05)
    assert (row.adj_ci_low, row.adj_ci_high) == pytest.approx((row.ratio_ci_low, row.ratio_ci_high))
    assert row.ratio == pytest.approx(1.0481752, rel=1e-6)
    assert row.ratio_ci_low == pytest.approx(1.0271088, rel=1e-6)
    assert row.hedges_g == pytest.approx(3.060956, rel=1e-6)
    assert row.cliffs_delta == 1.0
    # R: wilcox.test(A, B, exact=TRUE)$p.value -> 0.007937 (2/252)
    assert row.mannwhitney_p == pytest.approx(0.0079365, rel=1e-4)
    # significant, but the 95% CI (1.027–1.070) reaches across +5%: the direction is shown, not a difference
    # that matters (methods §3.1); a family of one decides on that 95% CI
    assert row.ratio_ci_high > 1.05 > row.ratio_ci_low > 1
    assert row.significant and row.verdict == "higher, margin unclear" and row.unit == "run"
    assert (row.decided_low, row.decided_high, row.decided_level) == pytest.approx(
        (row.ratio_ci_low, row.ratio_ci_high, 0.95))


def test_compare_groups_by_and_holm_family():
    rng = np.random.default_rng(0)
    rows = []
    for wl in ("randread", "randwrite"):
        for lay, m in (("mirror", 100), ("raidz1", 90), ("raidz2", 85)):
            rows += [dict(workload=wl, layout=lay, iops=m + rng.normal(0, 2)) for _ in range(4)]
    df = pd.DataFrame(rows)
    out = compare(df, "iops", "layout", "mirror", by="workload")
    assert len(out) == 4 and set(out.level) == {"raidz1", "raidz2"}
    ref = _log_welch_p(df.query("workload == 'randread' and layout == 'raidz1'").iops,
                       df.query("workload == 'randread' and layout == 'mirror'").iops)
    assert out.query("workload == 'randread' and level == 'raidz1'").p.item() == pytest.approx(ref)
    from statsmodels.stats.multitest import multipletests
    assert out.holm_p.tolist() == pytest.approx(multipletests(out.p, method="holm")[1])
    per = compare(df, "iops", "layout", "mirror", by="workload", family="workload")
    for _, g in per.groupby("workload"):
        assert g.holm_p.tolist() == pytest.approx(multipletests(g.p, method="holm")[1])


def _holm_by_hand(p):
    order = np.argsort(p)
    m = len(p)
    adj, running = np.empty(m), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        adj[i] = running
    return adj


def test_holm_hand_reference():
    # p = (0.01, 0.04, 0.03): 0.01·3 = 0.03; 0.03·2 = 0.06; max(0.04·1, 0.06) = 0.06
    assert _holm_by_hand(np.array([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.06, 0.06])
    rows = [dict(layout=lay, iops=v) for lay, vals in
            (("mirror", [100, 101, 99, 100]), ("raidz1", [97, 99, 98, 96]),
             ("raidz2", [99, 102, 98, 100]), ("raidz3", [90, 92, 91, 89])) for v in vals]
    out = compare(pd.DataFrame(rows), "iops", "layout", "mirror")
    assert out.holm_p.to_numpy() == pytest.approx(_holm_by_hand(out.p.to_numpy()))


def test_compare_rejects_unknown_baseline():
    with pytest.raises(ConfigError):
        compare(_two_level(3), "iops", "layout", "stripe")


# -- issue 52 item 6: no effect size beyond what 3 units a side support -------------------------------------------

def test_no_effect_size_from_3_units_a_side_and_the_reason_said_once():
    from zbench_lib.analysis.claims.conclusions import conclusions_compare
    from zbench_lib.analysis.report.notebook_sections import comparison_table
    from zbench_lib.analysis.report.table_format import compact_html
    from zbench_lib.analysis.stats.compare import EFFECT_NOTE
    # three layouts against mirror, 3 pools a side: the scaling example printed Hedges' g to -113.77 from such
    df = pd.DataFrame({"layout": ["mirror"] * 3 + ["raidz1"] * 3 + ["raidz2"] * 3,
                       "iops": [564, 566, 562, 120, 121, 119, 102, 101, 103.5]})
    out = compare(df, "iops", "layout", "mirror")
    assert out["hedges_g"].isna().all() and out["cliffs_delta"].isna().all()
    assert (out["effect_size_note"] == EFFECT_NOTE).all()
    assert hedges_g([120, 121, 119], [564, 566, 562]) < -100        # what it would have printed
    page = compact_html(out, comparison_table(out))
    assert page.count(EFFECT_NOTE.replace("'", "&#x27;")) == 1 and "(2 rows)" in page
    text = " ".join(conclusions_compare(out))
    assert "Hedges g -" not in text and text.count("Hedges' g is not reported for 2 comparison(s)") == 1
    # from 4 units a side both are computed, as the functions give them; a side of 3 beside 10 is still too few
    four = compare(_two_level(4), "iops", "layout", "mirror").iloc[0]
    (_, base), (_, level) = _two_level(4).groupby("layout")["iops"]      # mirror, then raidz1
    assert four.hedges_g == pytest.approx(hedges_g(level, base)) and four.effect_size_note == ""
    assert four.cliffs_delta == pytest.approx(cliffs_delta(level, base))
    uneven = pd.DataFrame({"layout": ["mirror"] * 10 + ["raidz1"] * 3, "iops": list(range(100, 110)) + [80, 81, 82]})
    assert math.isnan(compare(uneven, "iops", "layout", "mirror").iloc[0].hedges_g)
