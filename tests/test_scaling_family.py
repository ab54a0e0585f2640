"""Issue 46, items 1 and 2: the scaling verdicts a page states are one Holm family, each beside the interval that
decided it with its level (methods §10, §3.1); and each workload is judged in its own metric everywhere, the
notebooks' defaults included (methods §9). Every expected interval, p and level is computed here by hand (numpy,
scipy.stats.t, statsmodels' multipletests), never read from the code under test."""

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from zbench_lib import analysis as A
from zbench_lib.analysis.claims.answer import answer_scaling
from zbench_lib.analysis.claims.wording import ci_text
from zbench_lib.zfs import families

MiB = 2 ** 20
BAND = (1 / 1.1, 1.1)          # "close to linear": ±10% on the log scale, as the ±5% margins of §4
# (workload, layout, width, vdevs) -> runs, one per pool: the four verdicts a page of this sweep states
RUNS = {("randread", "stripe", 1, 1): [100.0, 102.0, 98.0], ("randread", "stripe", 4, 1): [376.4, 396.4, 386.4],
        ("randread", "raidz1", 2, 1): [100.0, 104.0, 96.0], ("randread", "raidz1", 5, 1): [150.0, 160.0, 140.0],
        ("randread", "mirror", 2, 1): [200.0, 206.0, 194.0], ("randread", "mirror", 2, 3): [590.0, 610.0, 600.0],
        ("seqread", "stripe", 1, 1): [50.0, 51.0, 49.0], ("seqread", "stripe", 8, 1): [420.0, 436.0, 404.0]}
# seqread's IOPS scale far worse than its bandwidth (as a 1M stream's merged I/Os can): judged in IOPS, the
# stripe's sequential reads are "below linear"; in bandwidth, the metric methods §9 prescribes, they are not.
SEQ_IOPS = {1: [60.0, 61.0, 59.0], 8: [300.0, 310.0, 290.0]}


def _frame() -> pd.DataFrame:
    rows = []
    for (wl, layout, width, vdevs), values in RUNS.items():
        dd = families.get(layout).data_disks_of(width, vdevs)
        for i, v in enumerate(values):
            seq = wl == "seqread"
            rows.append(dict(workload=wl, template=wl, direction="read", layout=layout, width=width, vdevs=vdevs,
                             data_disks=dd, total_disks=width * vdevs, rep=i + 1, flagged=False,
                             iops=SEQ_IOPS[dd][i] if seq else v, bw_bytes_s=v * MiB if seq else v * 4096))
    return pd.DataFrame(rows)


def _hand(x, base, ideal):
    """ln E, its delta-method SE and Welch df from the runs (methods §1, §10)."""
    x, base = np.asarray(x, float), np.asarray(base, float)
    va, vb = x.var(ddof=1) / (len(x) * x.mean() ** 2), base.var(ddof=1) / (len(base) * base.mean() ** 2)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(base) - 1))
    return math.log(x.mean() / base.mean() / ideal), se, df


def _interval(est, se, df, conf):
    t = sps.t.ppf(1 - (1 - conf) / 2, df)
    return math.exp(est - t * se), math.exp(est + t * se)


def _holm_level(p, alpha=0.05):
    """The family's one Holm level: the level of the last step Holm tests (the first that fails, else α)."""
    rejected = multipletests(p, alpha=alpha, method="holm")[0]
    m = len(p)
    return alpha / (m - int(rejected.sum())) if not rejected.all() else alpha


def _by_hand():
    """Each stated verdict's (ln E, se, df, ideal), and its Holm level in the page's family of four."""
    keys = {"stripe randread": (("randread", "stripe", 4, 1), ("randread", "stripe", 1, 1), 4),
            "raidz1 randread": (("randread", "raidz1", 5, 1), ("randread", "raidz1", 2, 1), 4),
            "mirror randread": (("randread", "mirror", 2, 3), ("randread", "mirror", 2, 1), 3),
            "stripe seqread": (("seqread", "stripe", 8, 1), ("seqread", "stripe", 1, 1), 8)}
    hand = {k: _hand(RUNS[top], RUNS[base], ideal) for k, (top, base, ideal) in keys.items()}
    p = np.array([2 * sps.t.sf(abs(e / s), d) for e, s, d in hand.values()])
    level = _holm_level(p)
    return {k: (*hand[k], level) for k in hand}


def _deciding(est, se, df, step):
    """The one interval decide() reads, at the family's level: (1 − α')."""
    return (*_interval(est, se, df, 1 - step), 1 - step)


# -- item 1: the scaling verdicts are one family -----------------------------------------------------------------

def test_the_scaling_answer_prints_the_holm_adjusted_interval_that_decided_not_the_95_percent_one():
    scal = A.scaling_table(_frame(), "auto")
    answers = {a["subject"]: a["text"] for a in answer_scaling(scal)}
    hand = _by_hand()
    est, se, df, step = hand["stripe randread"]
    raw = _interval(est, se, df, 0.95)
    # unadjusted, the stripe's 95% interval lies inside 0.90–1.10: the old rule said "close to linear"
    assert 0.90 < raw[0] and raw[1] < 1.10 and raw[0] < 1 < raw[1]
    lo, hi, level = _deciding(est, se, df, step)
    assert level == pytest.approx(1 - 0.05 / 3)          # Holm rejects only raidz1 (rank 1), the rest at α/3
    assert lo < BAND[0]                                    # at that level the interval reaches out of the band
    rr = answers["randread read (IOPS)"]
    e = f"{math.exp(est):.2f}"
    assert f"stripe (1→4 data disks) {e} ({ci_text(lo, hi, 2, level='')})" in rr
    assert ci_text(*raw, 2, level="") not in rr and "holds for stripe" not in rr
    assert "not judged for stripe (interval reaches outside 0.91–1.10)" in rr
    # the family and its one level are said once per answer: four verdicts across both workloads
    assert all(t.count("Holm-adjusted") == 1 and f"Intervals: Holm-adjusted {level:.1%}, family of 4." in t
               for t in answers.values())
    for name, subject, span in (("raidz1 randread", "randread read (IOPS)", "raidz1 (1→4 data disks)"),
                                ("mirror randread", "randread read (IOPS)", "mirror (1→3 data disks)"),
                                ("stripe seqread", "seqread read (MiB/s)", "stripe (1→8 data disks)")):
        lo, hi, level = _deciding(*hand[name])
        assert f"{span} {math.exp(hand[name][0]):.2f} ({ci_text(lo, hi, 2, level='')}" in answers[subject], name


def test_the_notebook_conclusions_state_the_same_family_and_deciding_interval():
    text = A.conclusions_scaling(A.scaling_table(_frame(), "auto"), "auto")
    est, se, df, step = _by_hand()["raidz1 randread"]
    lo, hi = _interval(est, se, df, 1 - step)               # rejected at α/4, its interval at the family's α/3
    assert step == pytest.approx(0.05 / 3) and hi < BAND[0]
    raidz1 = next(t for t in text if t.startswith("raidz1 randread"))
    assert f"deciding: {ci_text(lo, hi, 2, level='')})" in raidz1 and "Holm-adjusted" not in raidz1
    assert "below linear" in raidz1
    assert text[-2].startswith("The 4 scaling verdicts are one Holm family (family-wise 95%)")
    assert f"at the family's one level, Holm-adjusted {1 - step:.1%}" in text[-2]


def test_a_comparison_across_two_regimes_stays_out_of_the_family():
    scal = A.scaling_table(_frame(), "auto")
    top = (scal["layout"] == "mirror") & (scal["data_disks"] == 3)
    scal = scal.assign(described=np.where((scal["layout"] == "mirror") & (scal["data_disks"] == 1),
                                          "read_amplification 3 of 3 runs", ""))
    (rr,) = [a["text"] for a in answer_scaling(scal) if a["subject"] == "randread read (IOPS)"]
    assert "family of 3" in rr and "across two regimes: no verdict" in rr
    e = float(scal.loc[top, "efficiency"].iloc[0])
    lo, hi = float(scal.loc[top, "efficiency_ci_low"].iloc[0]), float(scal.loc[top, "efficiency_ci_high"].iloc[0])
    assert f"{e:.2f} ({ci_text(lo, hi, 2)}) across two regimes" in rr        # its 95% CI, labelled as such


# -- item 2: the metric follows the workload's kind ----------------------------------------------------------------

def _notebook_defaults(name: str) -> dict:
    nb = json.load(open(f"notebooks/{name}.ipynb", encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    scope: dict = {}
    exec("".join(cell["source"]), scope)                  # noqa: S102 (the repository's own parameters cell)
    return scope


@pytest.mark.parametrize("name", ["analysis-scaling", "analysis-volblocksize", "analysis-compare"])
def test_every_notebook_judges_each_workload_in_its_own_metric_by_default(name):
    assert _notebook_defaults(name)["metric"] == "auto"
    assert A.check_parameters(name, {**_notebook_defaults(name), "sweep_dir": "data/examples/scaling"}).metric == "auto"


def test_with_the_notebooks_default_sequential_reads_are_judged_in_bandwidth():
    P = A.check_parameters("analysis-scaling", {**_notebook_defaults("analysis-scaling"),
                                                "sweep_dir": "data/examples/scaling"})
    scal = A.scaling_table(_frame(), P.metric)
    seq = next(t for t in A.conclusions_scaling(scal, P.metric) if t.startswith("stripe seqread"))
    bw = np.asarray(RUNS[("seqread", "stripe", 8, 1)]).mean() / np.asarray(RUNS[("seqread", "stripe", 1, 1)]).mean()
    iops = np.mean(SEQ_IOPS[8]) / np.mean(SEQ_IOPS[1])
    assert seq.startswith(f"stripe seqread read: bandwidth grows {bw:.2f}x") and f"{iops:.2f}x" not in seq
    assert "below linear" not in seq                       # in IOPS (0.63 of linear) it would be


def test_the_notebook_summary_cell_runs_with_the_default_metric():
    import nbformat
    nb = nbformat.read("notebooks/analysis-scaling.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "summ = summary(" in c.source)
    shown = []
    scope = {"A": A, "df": _frame(), "P": SimpleNamespace(metric=_notebook_defaults("analysis-scaling")["metric"]),
             "compact": lambda t, how, title: shown.append(t)}
    exec(cell.source, scope)                               # noqa: S102 (the repository's own notebook cell)
    summ = scope["summ"].set_index(["workload", "layout", "data_disks"])
    assert summ.loc[("seqread", "stripe", 8), "metric"] == "bw_bytes_s"
    assert summ.loc[("seqread", "stripe", 8), "mean"] == pytest.approx(np.mean(RUNS[("seqread", "stripe", 8, 1)]) * MiB)
    assert summ.loc[("randread", "stripe", 4), "mean"] == pytest.approx(np.mean(RUNS[("randread", "stripe", 4, 1)]))


def test_a_table_of_several_workloads_shows_each_value_in_its_own_unit():
    from zbench_lib.analysis.report.table_format import Compact, compact_html
    df = pd.DataFrame({"workload": ["randread", "seqread"], "metric": ["iops", "bw_bytes_s"],
                       "mean": [1234.0, 512.0 * MiB], "ci95_low": [1200.0, 500.0 * MiB],
                       "ci95_high": [1270.0, 520.0 * MiB], "n": [3, 3]})
    page = compact_html(df, Compact(("workload", "mean"), intervals=(("mean", "ci95_low", "ci95_high"),)))
    assert "512 (500–520) MiB/s" in page and "1,234 (1,200–1,270) IOPS" in page
    assert "536,870,912" not in page                       # a bandwidth never read as a count


def test_the_summary_export_gives_each_row_the_interval_of_its_own_metric():
    from zbench_lib.analysis.report.pub_tables import display_table, summary_table
    table = summary_table(_frame())
    seq = table[(table["workload"] == "seqread") & (table["data_disks"] == 8)].iloc[0]
    x = np.asarray(RUNS[("seqread", "stripe", 8, 1)])
    # the mean's 95% CI on the log scale: m · exp(± t(n−1) · (s/m)/√n) (methods §1), in MiB/s
    half = sps.t.ppf(0.975, 2) * x.std(ddof=1) / x.mean() / math.sqrt(3)
    assert seq["metric"] == "bw_bytes_s" and np.isnan(seq["iops_ci95_low"])
    assert (seq["mib_s_ci95_low"], seq["mib_s_ci95_high"]) == pytest.approx((x.mean() * math.exp(-half),
                                                                              x.mean() * math.exp(half)))
    shown = display_table(table)
    row = shown[(shown["workload"] == "seqread") & (shown["data_disks"] == "8")].iloc[0]
    assert row["iops_ci"] == "" and "–" in row["mib_s_ci"]
