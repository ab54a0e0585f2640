"""Sentences said once, numbers printed to what they support (issue 31): the wording rules and the
answer on the report's first screen. Each test fails on the wording before issue 31."""

import re

import numpy as np
import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.claims.answer import answer_compare, answer_scaling, latency_tails
from zbench_lib.analysis.stats.tails import SOURCE_BINS, SOURCE_OWN
from zbench_lib.analysis.claims.conclusions import conclusions_compare, conclusions_volblocksize
from zbench_lib.analysis.claims.wording import ci_text, effect_size_ok, p_text, say_once

POOLED = ("not judged: a side pools several configurations (vdevs, width differ); "
          + "; ".join(["level raidz1: not judged: 0 of 1 runs excluded (a CI needs 2)"] * 6))


def _row(**kw):
    base = dict(factor="layout", level="raidz1", baseline="stripe", unit="pool", n_level=3, n_baseline=3,
                mean_level=100.0, mean_baseline=130.0, ratio=0.77, ratio_ci_low=0.70, ratio_ci_high=0.85,
                p=0.0004, holm_p=0.0008, holm_alpha=0.025, adj_ci_low=0.68, adj_ci_high=0.87, significant=True,
                tost_p=0.9, equivalent=False, margin=0.05, hedges_g=-2.1, verdict="lower", metric="iops",
                note="", comparison="all other factors equal")
    base.update(kw)
    return base


def test_a_not_judged_reason_is_said_once_per_cell():
    text = conclusions_compare(pd.DataFrame([_row(verdict="not judged", ratio=np.nan, note=POOLED)]))[0]
    assert text.count("0 of 1 runs excluded") == 1 and "(6 cells)" in text
    assert say_once("a; b; a; a") == "a (3 cells); b"


def test_the_answer_says_a_not_judged_reason_once_and_names_the_level_once():
    cmp = pd.DataFrame([_row(verdict="not judged", ratio=np.nan, note=POOLED)])
    text = answer_compare(cmp)[0]["text"]
    assert text.count("0 of 1 runs excluded") == 1 and text.count("level raidz1") == 0


def test_hedges_g_from_a_near_zero_spread_is_not_printed():
    text = conclusions_compare(pd.DataFrame([_row(hedges_g=-326.6)]))[0]
    assert "-326.6" not in text and "Hedges g not reported" in text
    assert "Hedges g -2.10" in conclusions_compare(pd.DataFrame([_row()]))[0]
    assert not effect_size_ok(-46.8, 100.0, 130.0) and effect_size_ok(-2.1, 100.0, 130.0)


def test_p_values_are_printed_to_what_three_against_three_pools_support():
    text = conclusions_compare(pd.DataFrame([_row()]))[0]
    assert "p < 0.05, Holm p < 0.05" in text and "0.0004" not in text and "0.0008" not in text
    # 3 against 3 pools reach no permutation p below 0.1: whatever the t model says below α reads "< 0.05"
    assert p_text(0.0312, 3, 3) == "< 0.05" and p_text(0.062, 3, 3) == "0.062"
    assert p_text(0.0004, 6, 6) == "< 0.01" and p_text(0.0004, 8, 8) == "< 0.001"


# -- issue 52 item 6: p-values floored at what n supports, on every page --------------------------------------

def test_the_p_floor_is_the_first_bound_at_or_above_the_smallest_permutation_p():
    from math import comb
    from zbench_lib.analysis.stats.p_values import p_floor
    for n_a, n_b in [(2, 2), (3, 3), (3, 4), (4, 4), (3, 5), (5, 5), (6, 6), (3, 10), (7, 7), (20, 20)]:
        smallest = 2 / comb(n_a + n_b, n_a)               # exact two-sided permutation bound, by hand
        expected = next((f for f in (0.001, 0.01, 0.05) if f >= smallest), 0.05)
        assert p_floor(n_a, n_b) == expected == p_floor(n_b, n_a), (n_a, n_b)
    assert p_floor(None, None) == 0.001 and p_floor(float("nan"), 3) == 0.001


def test_a_table_and_a_sensitivity_line_print_no_p_finer_than_the_units_support():
    from zbench_lib.analysis.report.notebook_sections import comparison_table
    from zbench_lib.analysis.report.table_format import compact_html
    from zbench_lib.analysis.stats.tables import compare_table
    # raidz1 has one admissible run (not judged); with its two flagged runs it is far below mirror, at a Welch p
    # of about 1e-6: the sensitivity line said "Holm p 1.14e-06" of such a comparison from 3–4 pools a side
    runs = pd.DataFrame({"layout": ["mirror"] * 3 + ["raidz1"] * 3, "workload": "randread", "direction": "read",
                         "iops": [100.0, 100.2, 99.8, 50.0, 50.1, 49.95], "run_id": list("abcdef"),
                         "flagged": [False] * 4 + [True] * 2})
    cmp = compare_table(runs[~runs["flagged"]], "iops", "layout", "mirror", all_runs=runs)
    (line,) = cmp["sensitivity"]
    assert line == "with flagged runs included: lower (ratio 0.50, Holm p < 0.05)", line
    alt = compare_table(runs, "iops", "layout", "mirror").iloc[0]
    assert alt.holm_p < 1e-4                               # what the line printed before
    page = compact_html(alt.to_frame().T.infer_objects(), comparison_table(cmp))
    assert "&lt; 0.05" in page and "&lt;0.001" not in page and "e-0" not in page


@pytest.mark.parametrize("lo, hi, text", [(174.6, 175.4, "174.6–175.4"), (0.001, 0.09, "0.001–0.090"),
                                          (0.912, 0.953, "0.91–0.95")])
def test_an_interval_never_prints_equal_ends_or_a_false_zero(lo, hi, text):
    digits = 0 if lo > 100 else 2
    assert ci_text(lo, hi, digits) == f"95% CI {text}"


def test_no_block_size_is_better_is_not_said_when_one_was_not_judged():
    rows = [_row(factor="volblocksize_bytes", level=131072, baseline=16384, verdict="inconclusive", ratio=1.02,
                 ratio_ci_low=0.9, ratio_ci_high=1.1, holm_p=0.6, layout="mirror", workload="randwrite"),
            _row(factor="volblocksize_bytes", level=4096, baseline=16384, verdict="not judged", ratio=np.nan,
                 ratio_ci_low=np.nan, ratio_ci_high=np.nan, note="not judged: 1 admissible run (a CI needs 2)",
                 layout="mirror", workload="randwrite")]
    text = " ".join(conclusions_volblocksize(pd.DataFrame(rows)))
    assert "no block size is significantly better" not in text
    assert "no judged block size (4K not judged) is significantly better than 16K" in text


@pytest.fixture(scope="module")
def vbs():
    s = A.load_sweep("data/examples/volblocksize")
    return s, A.select_admissible(s.results)


def test_the_block_size_answer_gives_p99_and_p999_with_intervals(vbs):
    s, adm = vbs
    cmp = A.compare_table(adm, "auto", "volblocksize_bytes", 16384, cells=A.cell_status(s.results, s.plan))
    tails = latency_tails(adm, s.histograms, ["workload", "direction", "layout", "volblocksize_bytes"])
    answers = {a["subject"]: a["text"] for a in answer_compare(cmp, tails)}
    assert len(answers) == 6                              # one per workload × layout
    mirror = answers["randwrite mirror (IOPS)"]
    # the interval printed is the one that decided: Holm-adjusted within randwrite's family of 6 (methods §3.1),
    # at the family's one level, said once (Holm rejects five, and its sixth step is at α)
    assert mirror.startswith("against volblocksize 16K: 4K 11.8x (10.4–13.4) higher; 128K 0.42x (0.40–0.45) "
                             "lower. Intervals: Holm-adjusted 95.0%, family of 6.")
    # a typical pool's, from each pool's own fio percentile (no bins in this example): the geometric mean of the
    # three (scipy.stats.gmean: 171.6 and 244.3 ms) and the t interval on their logs rounded out to fio's bins
    assert "p99: 16K 172 ms (164–180)" in mirror and "p99.9: 16K 244 ms (239–252)" in mirror


def test_the_scaling_answer_gives_a_verdict_per_family_with_its_interval():
    s = A.load_sweep("data/examples/scaling")
    adm = A.select_admissible(s.results)
    answers = {a["subject"]: a["text"] for a in
               answer_scaling(A.scaling_table(adm, "auto", cells=A.cell_status(s.results, s.plan)))}
    assert set(answers) == {"randread-4k (IOPS)", "randwrite-4k (IOPS)", "seqread (MiB/s)", "seqwrite (MiB/s)"}
    rr = answers["randread-4k (IOPS)"]
    # issue 46 item 1: the 23 verdicts of the page are one Holm family; the stripe's 95% interval (0.91–0.95) lay
    # inside the band, its Holm-adjusted one reaches below it: below linear, by a margin not shown
    assert rr.startswith("linear scaling holds for mirror; does not hold for stripe, raidz1, 2x raidz1, raidz2, "
                         "raidz3.")
    assert "stripe (1→8 data disks) 0.93 (0.88–0.99) below linear, margin unclear" in rr
    # issue 52 item 6: one level for the page's family, said once per answer (it was ten, 95% to 99.6%)
    assert all(t.endswith("Intervals: Holm-adjusted 99.3%, family of 23.") and t.count("%") == 1
               for t in answers.values() if "two regimes" not in t)
    # issue 46 item 3: mirror's 1x2 baseline read amplified in every run, its larger pools not: no verdict
    assert ("not judged for stripe (interval reaches outside 0.91–1.10), mirror (not interpretable: the 1-data-disk "
            "baseline in read amplification, every run), raidz3 (interval reaches outside 0.91–1.10)") \
        in answers["seqread (MiB/s)"]


def test_a_family_whose_larger_pools_are_not_judged_says_not_judged_once():
    # The scaling example with raidz3's larger pools cut to one run each: the answer read
    # "not judged for raidz3 (not judged: 1 of 3 pools with admissible runs ...)".
    s = A.load_sweep("data/examples/scaling")
    r = s.results
    z = r[r["layout"] == "raidz3"]
    larger = z[z["data_disks"] > z["data_disks"].min()]
    kept = r.drop(larger.index.difference(larger.groupby(["data_disks", "workload"]).head(1).index))
    scal = A.scaling_table(A.select_admissible(kept), "auto", cells=A.cell_status(kept, s.plan))
    texts = [a["text"] for a in answer_scaling(scal)]
    assert all(re.search(r"not judged for [^;]*raidz3 \(1 of 3 pools with admissible runs \(a CI needs 2\)", t)
               for t in texts)
    assert not [t for t in texts if re.search(r"not judged[^;.]{0,40}?[(:] ?not judged", t)]


def test_the_depth_answer_groups_the_levels_by_verdict_and_says_a_reason_once():
    from zbench_lib.analysis.report.compare_factor import auto_baseline
    s = A.load_sweep("data/examples/iodepth-curve")
    adm = A.select_admissible(s.results)
    cmp = A.compare_table(adm, "auto", "iodepth", auto_baseline(adm, "iodepth"), cells=A.cell_status(s.results, s.plan))
    text = answer_compare(cmp, latency_tails(adm, s.histograms, ["workload", "direction", "iodepth"]),
                          subject="randread")[0]["text"]
    assert text.startswith("against iodepth 1: no meaningful difference at iodepth 2, iodepth 4, iodepth 8, "
                           "iodepth 16, iodepth 32; not judged at iodepth 64 (4 of 5 runs excluded")
    assert "level 64" not in text and text.count("host_contention") == 1
    # fio's lat since 2026-12-02 (issue 44): clat gave 11.4 ms (9.9–13.2), a 0.2-1.7 ms submission short
    # a typical run's (one pool): gmean of the depth-1 runs' own p99, t on their logs rounded out to fio's bins
    assert "p99: iodepth 1 11.8 ms (10.5–13.4)" in text and "iodepth 64 426 ms (1 run with the percentile, no " \
        "interval)" in text


def test_a_tail_the_units_cannot_support_is_not_judged_never_a_mean_of_run_percentiles():
    # Two runs of 3,000 I/Os each, with histograms: each supports a p99 (1,000 needed), neither a p99.9 (10,000).
    # Each run's own fio p99.9 (5 and 7 ms) is there, as a pre-rule table would have it.
    rows = pd.DataFrame({"workload": "w", "direction": "read", "run_id": ["a", "b"], "attempt": 1,
                         "total_ios": 3000, "lat_p99_ns": [2e6, 2e6], "lat_p99_9_ns": [5e6, 7e6],
                         "tail_not_judged": ""})
    hist = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "attempt": 1, "direction": "read",
                         "bin_ns": [1000, 2_000_000, 1000, 2_000_000], "count": [2940, 60, 2940, 60]})
    t = latency_tails(rows, hist, ["workload", "direction"]).set_index("percentile")
    assert t.loc["p99.9", "status"] == "not judged: 6000 I/Os, a p99.9 needs 10000"
    assert np.isnan(t.loc["p99.9", "value_ms"]) and t.loc["p99.9", "source"] == SOURCE_BINS
    assert t.loc["p99", "status"] == "judged" and t.loc["p99", "value_ms"] == 2.0
    # the same runs without histograms (recorded before json+): each run's own fio p99, labelled; fio's p99.9
    # of 3,000 I/Os is not taken either
    own = latency_tails(rows, hist.iloc[:0], ["workload", "direction"]).set_index("percentile")
    assert own.loc["p99", "value_ms"] == 2.0 and own.loc["p99", "source"] == SOURCE_OWN
    assert own.loc["p99.9", "status"].startswith("not judged") and np.isnan(own.loc["p99.9", "value_ms"])


def test_a_cell_whose_runs_each_kept_too_few_ios_has_no_typical_p99_but_a_pooled_one():
    # Three runs of 600 I/Os: no run supports its own p99 (the per-run rule blanked them), their merged 1,800 do:
    # a typical run's p99 is not judged and says why; all I/Os pooled, the other estimand, is judged
    rows = pd.DataFrame({"workload": "w", "direction": "write", "run_id": ["a", "b", "c"], "attempt": 1,
                         "total_ios": 600, "lat_p99_ns": np.nan, "lat_p99_9_ns": np.nan,
                         "tail_not_judged": "p99, p99.9"})
    hist = pd.DataFrame({"run_id": ["a", "b", "c"], "attempt": 1, "direction": "write", "bin_ns": 1000, "count": 600})
    t = latency_tails(rows, hist, ["workload", "direction"]).set_index("percentile")
    assert t.loc["p99", "status"] == "not judged: every run short of the 1000 I/Os a p99 needs"
    assert t.loc["p99", "unsupported"] == "a has 600 I/Os; b has 600 I/Os; c has 600 I/Os"
    assert t.loc["p99", "source"] == SOURCE_BINS
    assert t.loc["p99.9", "status"] == "not judged: 1800 I/Os, a p99.9 needs 10000"
    pooled = A.cell_tails(rows, hist, by=["workload", "direction"], estimand="pooled").set_index("percentile")
    assert pooled.loc["p99", "status"] == "judged" and pooled.loc["p99", "value_ns"] == 1000


def test_a_what_ifs_comparison_says_its_p_no_finer_than_its_units():
    from zbench.result import Comparison
    c = Comparison("mirror", "raidz1", "iops", 2.0, 1.5, 2.5, 1.2e-6, pools=(3, 3), units=(3, 3))
    assert "p < 0.05)" in c.sentence() and "e-06" not in c.sentence()
    assert "p < 0.001)" in Comparison("a", "b", "iops", 2.0, 1.5, 2.5, 1.2e-6).sentence()     # sizes unknown
    assert "p = 0.031)" in Comparison("a", "b", "iops", 2.0, 1.5, 2.5, 0.031, units=(8, 8)).sentence()
