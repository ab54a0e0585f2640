"""One decision rule on every page (issue 46, methods §3.1): the interval printed beside a verdict is the
one that decided it, one interval per comparison at one level per Holm family (issue 52 item 6);
"equivalent" is read on it too, never easier than "different"; "higher/lower" needs the adjusted interval
to clear the margin; a zero-width interval reads "one value (n = k)", never "175–175". Every expected
value is computed here from the data with scipy, not by the code under test."""

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench.result import Comparison
from zbench_lib.analysis.claims.answer import answer_compare
from zbench_lib.analysis.claims.wording import ci_text
from zbench_lib.analysis.report.pub_tables import display_table
from zbench_lib.analysis.stats.compare import compare

MARGIN = 0.05


def _hand(x, base):
    """ln(mX/mB), its delta-method SE and Welch df, from the values (methods §1)."""
    x, base = np.asarray(x, float), np.asarray(base, float)
    va, vb = x.var(ddof=1) / (len(x) * x.mean() ** 2), base.var(ddof=1) / (len(base) * base.mean() ** 2)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(base) - 1))
    return math.log(x.mean() / base.mean()), se, df


def _interval(est, se, df, conf):
    t = sps.t.ppf(1 - (1 - conf) / 2, df)
    return math.exp(est - t * se), math.exp(est + t * se)


def _holm_level(p, alpha=0.05):
    """The family's one Holm level by hand: sorted p tested at α/m, α/(m−1), ...; the level of the last step
    tested (the first that fails, else the last)."""
    m = len(p)
    for k, pk in enumerate(sorted(p)):
        if pk >= alpha / (m - k):
            return alpha / (m - k)
    return alpha


BASE = [100.0, 96.0, 104.0]
LEVELS = {"a": [200.0, 150.0, 260.0], "b": [131.0, 125.0, 137.0], "c": [101.0, 98.0, 103.0]}


def _family():
    rows = [dict(layout="base", iops=v) for v in BASE]
    rows += [dict(layout=k, iops=v) for k, vs in LEVELS.items() for v in vs]
    return compare(pd.DataFrame(rows), "iops", "layout", "base")


def test_the_answer_prints_the_interval_that_decided_not_the_unadjusted_one():
    cmp = _family().assign(workload="randread", metric="iops")
    hand = {k: _hand(v, BASE) for k, v in LEVELS.items()}
    p = np.array([2 * sps.t.sf(abs(e / s), d) for e, s, d in hand.values()])
    level = _holm_level(p)
    est, se, df = hand["a"]
    adj_lo, adj_hi = _interval(est, se, df, 1 - level)
    raw_lo, raw_hi = _interval(est, se, df, 0.95)
    text = answer_compare(cmp)[0]["text"]
    adjusted = ci_text(adj_lo, adj_hi, 2, level="")
    assert adjusted in text and ci_text(raw_lo, raw_hi, 2, level="") not in text
    # the family's one level is said once, not beside each interval
    assert text.count("Holm-adjusted") == 1 and f"Intervals: Holm-adjusted {1 - level:.1%}, family of 3." in text
    row = cmp.set_index("level").loc["a"]
    assert (row.decided_low, row.decided_high, row.decided_level) == pytest.approx((adj_lo, adj_hi, 1 - level))


def test_a_family_has_one_level_and_its_intervals_agree_with_holm():
    # issue 52 item 6: the scaling page showed ten levels (95 to 99.6%), one per Holm step. Holm rejects the
    # four large ratios (at α/6, α/5, α/4, α/3) and stops at the fifth: every interval is at that step's level
    base = [100.0, 97.0, 103.0]
    shifts = {"r1": 2.0, "r2": 1.8, "r3": 1.6, "r4": 1.4, "r5": 1.03, "r6": 0.99}
    rows = [dict(layout="base", iops=v) for v in base]
    rows += [dict(layout=k, iops=v * f) for k, f in shifts.items() for v in base[::-1]]
    out = compare(pd.DataFrame(rows), "iops", "layout", "base").set_index("level")
    level = _holm_level(out["p"].to_numpy())
    assert out["significant"].sum() == 4 and level == pytest.approx(0.05 / 2)
    assert out["decided_level"].round(9).nunique() == 1 and out["decided_level"].iloc[0] == pytest.approx(1 - level)
    # the interval excludes 1 exactly where Holm rejects, and it is the one that decided
    excludes = (out["decided_low"] > 1) | (out["decided_high"] < 1)
    assert (excludes == out["significant"]).all()
    assert (out["decided_low"] == out["adj_ci_low"]).all() and (out["decided_high"] == out["adj_ci_high"]).all()
    # the conclusions say that level once, after the sentences, not in each
    from zbench_lib.analysis.claims.conclusions import conclusions_compare
    text = conclusions_compare(out.reset_index())
    deciding = [t for t in text if "deciding:" in t]
    assert len(deciding) == 6 and all(re.search(r"deciding: \d", t) for t in deciding)
    assert text.count(f"Every deciding interval above is at Holm-adjusted {1 - level:.1%}, one level for the family "
                      "of 6 (methods §3).") == 1


def test_equivalence_is_read_on_the_one_interval_at_the_familys_holm_level():
    # 12 levels alike the baseline: Holm rejects none, so the family's level is α/12. The unadjusted TOST (a 90%
    # interval) says equivalent; the (1 − α/12) interval, the one that decides, reaches past ±5%: inconclusive.
    base = [100.0, 98.0, 102.0]
    near = [100.5, 99.0, 101.5]
    rows = [dict(layout="base", iops=v) for v in base]
    rows += [dict(layout=f"l{i:02d}", iops=v * (1 + 0.001 * i)) for i in range(12) for v in near]
    out = compare(pd.DataFrame(rows), "iops", "layout", "base")
    row = out.set_index("level").loc["l00"]
    est, se, df = _hand(near, base)
    lo_b, hi_b = 1 / (1 + MARGIN), 1 + MARGIN
    lo90, hi90 = _interval(est, se, df, 0.90)
    assert lo_b < lo90 and hi90 < hi_b                           # unadjusted TOST: equivalent (the old verdict)
    lo_adj, hi_adj = _interval(est, se, df, 1 - 0.05 / 12)
    assert not (lo_b < lo_adj and hi_adj < hi_b)                 # at the Holm level: not shown
    assert row.holm_alpha == pytest.approx(0.05 / 12)
    assert row.verdict == "inconclusive"
    assert (row.decided_low, row.decided_high) == pytest.approx(_interval(est, se, df, 1 - 0.05 / 12))


def test_a_difference_inside_the_margin_is_not_higher():
    base, x = [100.0, 100.5, 99.5], [102.0, 102.5, 101.5]
    est, se, df = _hand(x, base)
    lo, hi = _interval(est, se, df, 0.95)
    assert 1 < lo and hi < 1 + MARGIN                             # excludes 1, wholly inside +5%
    rows = [dict(layout="base", iops=v) for v in base] + [dict(layout="x", iops=v) for v in x]
    row = compare(pd.DataFrame(rows), "iops", "layout", "base").iloc[0]
    assert row.significant and row.verdict == "different, within margin"
    assert (row.decided_low, row.decided_high, row.decided_level) == pytest.approx((lo, hi, 0.95))
    # the same rule decides a lone comparison of the what-if (r.compare): a family of one
    c = Comparison("x", "base", "iops", math.exp(est), lo, hi, 0.001, pools=(3, 3), se=se, df=df)
    assert c.decision.verdict == "different, within margin" and "higher" not in c.sentence()
    assert "95% CI" in c.sentence() and "3 and 3 pools as units" in c.sentence()


def test_the_decision_rule_by_hand():
    from zbench_lib.analysis.stats.decision import decide
    est, se, df = math.log(0.965), 0.003, 10.0
    lo, hi = _interval(est, se, df, 1 - 0.05 / 12)
    d = decide(est, se, df, 0.05 / 12, MARGIN, family_size=12)
    # 0.965 excludes 1 at the Holm level but does not clear −5% (1/1.05 = 0.952)
    assert hi < 1 and lo > 1 / 1.05
    assert d.verdict == "different, within margin" and (d.low, d.high) == pytest.approx((lo, hi))
    assert d.level_text == "Holm-adjusted 99.6%"
    big = decide(math.log(1.2), 0.02, 8.0, 0.05, MARGIN)
    assert big.verdict == "higher" and big.low == pytest.approx(_interval(math.log(1.2), 0.02, 8.0, 0.95)[0])
    eq = decide(0.0, 0.01, 8.0, 0.05, MARGIN)       # the same one interval decides an equivalence
    assert eq.verdict == "equivalent" and eq.level == pytest.approx(0.95)
    assert (eq.low, eq.high) == pytest.approx(_interval(0.0, 0.01, 8.0, 0.95))
    assert decide(math.nan, math.nan, math.nan, 0.05).verdict == "not judged"


def test_a_zero_width_interval_reads_one_value_never_175_175():
    assert ci_text(175.0, 175.0, level="", n=3) == "one value (n = 3)"
    table = pd.DataFrame({"configuration": ["mirror 2x2"], "drives": [4], "data_disks": [2], "n": [3],
                          "iops": [175.0], "iops_ci95_low": [175.0], "iops_ci95_high": [175.0],
                          "mib_s": [0.68], "p99_ms": [12.0], "excluded": [0], "described": [0], "not_judged": [0]})
    cell = display_table(table)["iops_ci"].iloc[0]
    assert cell == "one value (n = 3)" and "175–175" not in cell


# -- issue 46 item 3: a ratio across two regimes is given without a verdict ----------------------------

def test_an_efficiency_from_an_all_read_amplified_baseline_is_not_called_above_linear():
    import pandas as pd
    from zbench_lib.analysis.claims.answer import answer_scaling
    # the scaling example's mirror sequential reads: every baseline run read-amplified, none at 4 disks
    scal = pd.DataFrame({"workload": "seqread", "direction": "read", "layout": "mirror", "data_disks": [1, 2, 4],
                         "baseline_disks": 1, "n": 3, "efficiency": [1.0, 1.33, 1.86],
                         "efficiency_ci_low": [1.0, 1.2, 1.71], "efficiency_ci_high": [1.0, 1.45, 2.01],
                         "log_se": [np.nan, 0.04, 0.03], "welch_df": [np.nan, 4.0, 4.0],
                         "described": ["not_steady 3 of 3 runs, read_amplification 3 of 3 runs",
                                       "read_amplification 3 of 3 runs", ""], "metric": "bw_bytes_s"})
    (a,) = answer_scaling(scal)
    assert "above linear" not in a["text"] and "does not hold" not in a["text"]
    assert "not judged for mirror (not interpretable: the 1-data-disk baseline in read amplification, every run)" \
        in a["text"]
    assert "1.86 (95% CI 1.71–2.01) across two regimes: no verdict" in a["text"]   # the figure, kept, at 95%
    # not_steady is no regime (a drift, not another mode), and one regime on both sides compares like with like
    for described in (["not_steady 3 of 3 runs", ""], ["read_amplification 3 of 3 runs"] * 2):
        two = scal.iloc[[0, 2]].assign(described=described)
        assert "above linear" in answer_scaling(two)[0]["text"]
