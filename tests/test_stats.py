"""Descriptive statistics, diagnostics and scaling: references from scipy/numpy or by hand.

R is not installed in the test image; quoted R calls give the number computed here by
hand or with the scipy function implementing the same formula.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib.core.errors import ConfigError
from zbench_lib.analysis.stats.ratio import ratio_ci
from zbench_lib.analysis.stats.stats import flag_outliers, scaling, summary
from zbench_lib.sweeps.planning.repetitions import relative_ci_halfwidth
from zbench_lib.zfs import families


def _runs():
    return pd.DataFrame({
        "layout": ["mirror"] * 3 + ["raidz1"] * 5,
        "iops": [100.0, 110.0, 90.0, 50.0, 52.0, 48.0, 51.0, 120.0],
    })


def test_summary_reference_values():
    s = summary(_runs(), "iops", "layout").set_index("layout")
    m = s.loc["mirror"]
    assert (m.n, m["mean"], m["std"], m["median"]) == (3, 100.0, 10.0, 100.0)
    assert m["cov"] == pytest.approx(0.10)
    assert m.mad == 10.0                               # |110−100|, |90−100|, 0 → median 10
    # On the log scale (docs/methods.md §1): 100 · exp(± qt(0.975, 2) · 0.1 / sqrt(3)), qt = 4.302653
    # → 78.00371 .. 128.19903 (R: exp(t.test(log(100) + (x − 100)/100)$conf.int))
    assert (m.ci95_low, m.ci95_high) == pytest.approx((78.003712, 128.199027), rel=1e-6)
    assert m.cov_warning and not m.range_warning
    r = s.loc["raidz1"]
    v = np.array([50.0, 52.0, 48.0, 51.0, 120.0])
    assert r["std"] == pytest.approx(v.std(ddof=1))
    assert r.mad == pytest.approx(sps.median_abs_deviation(v))
    half = sps.t.ppf(0.975, 4) * v.std(ddof=1) / math.sqrt(5) / v.mean()
    assert r.ci95_high == pytest.approx(v.mean() * math.exp(half))
    assert r.rel_ci_halfwidth == pytest.approx(math.sinh(half))      # (high − low) / 2 / mean
    assert r.range_warning                             # 120 > 1.5 × mean 64.2
    assert list(s.columns[:6]) == ["n", "mean", "std", "cov", "median", "mad"]
    assert (s["unit"] == "run").all() and (s["n_pools"] == 1).all() and s["conditional_on_pool"].all()


def test_summary_quiet_group_and_single_run():
    df = pd.DataFrame({"cfg": ["a"] * 3 + ["b"], "iops": [100.0, 101.0, 99.0, 50.0]})
    s = summary(df, "iops", ["cfg"]).set_index("cfg")
    assert not s.loc["a", "cov_warning"] and not s.loc["a", "range_warning"]
    assert s.loc["b", "n"] == 1 and math.isnan(s.loc["b", "std"]) and math.isnan(s.loc["b", "ci95_low"])


def test_flag_outliers_keeps_rows_and_uses_tukey_fences():
    df = _runs()
    out = flag_outliers(df, "iops", "layout")
    assert len(out) == len(df) and "outlier" not in df.columns
    # raidz1: Q1 = 50, Q3 = 52 (numpy linear), IQR 2 → fences 47 .. 55
    assert out.loc[out.layout == "raidz1", "outlier"].tolist() == [False, False, False, False, True]
    assert not out.loc[out.layout == "mirror", "outlier"].any()
    assert flag_outliers(df, "iops", "layout", k=100)["outlier"].sum() == 0


def test_relative_ci_halfwidth():
    # qt(0.975, 2) · 10 / sqrt(3) / 100 = 0.248414
    assert relative_ci_halfwidth([100, 110, 90]) == pytest.approx(0.2484138, rel=1e-6)
    assert relative_ci_halfwidth([100]) == math.inf
    assert relative_ci_halfwidth([1, -1]) == math.inf
    assert relative_ci_halfwidth([100, 110, 90], conf=0.90) < 0.2484


@pytest.mark.parametrize("layout,width,vdevs,expected", [
    ("stripe", 4, 1, 4), ("stripe", 1, 3, 3), ("mirror", 2, 3, 3), ("mirror", 3, 1, 1),
    ("raidz1", 5, 1, 4), ("raidz2", 6, 2, 8), ("raidz3", 8, 1, 5), ("raidz", 3, 1, 2),
])
def test_data_disks(layout, width, vdevs, expected):
    assert families.get(layout).data_disks_of(width, vdevs) == expected


def test_data_disks_rejects_nonsense():
    with pytest.raises(ConfigError):
        families.get("raidz2").data_disks_of(2, 1)
    with pytest.raises(ConfigError):
        families.get("raid5").data_disks_of(4, 1)


def _stripe_runs():
    return pd.DataFrame({"layout": ["stripe"] * 9, "width": [1] * 3 + [2] * 3 + [4] * 3,
                         "data_disks": [1] * 3 + [2] * 3 + [4] * 3,
                         "iops": [100, 102, 98, 190, 195, 185, 360, 380, 370]})


def test_scaling_against_smallest_configuration():
    s = scaling(_stripe_runs(), "iops").set_index("data_disks")
    assert s.loc[2, "per_disk_mean"] == pytest.approx(95.0)
    assert s.loc[2, "per_disk_std"] == pytest.approx(2.5)
    assert s.loc[2, "scaling"] == pytest.approx(1.9)
    assert s.loc[2, "efficiency"] == pytest.approx(0.95)
    assert s.loc[4, "efficiency"] == pytest.approx(370 / 100 / 4)
    # Hand: vT = 5²/(3·190²), v0 = 2²/(3·100²), Welch df = 3.7324;
    # 1.9 · exp(± qt(0.975, 3.7324) · sqrt(vT + v0)) = 1.79919 .. 2.00646
    assert (s.loc[2, "scaling_ci_low"], s.loc[2, "scaling_ci_high"]) == \
        pytest.approx((1.7991924, 2.0064558), rel=1e-6)
    assert s.loc[2, "efficiency_ci_low"] == pytest.approx(1.7991924 / 2, rel=1e-6)
    # The baseline against itself: exactly 1, no interval.
    assert (s.loc[1, "scaling"], s.loc[1, "scaling_ci_low"], s.loc[1, "scaling_ci_high"]) == (1, 1, 1)
    assert (s["baseline_disks"] == 1).all() and (s["ideal_scaling"] == s.index).all()


def test_scaling_includes_baseline_noise():
    quiet = _stripe_runs()
    noisy = quiet.copy()
    noisy.loc[:2, "iops"] = [80, 120, 100]           # same mean, larger spread at D0
    w = lambda d: (lambda r: r.scaling_ci_high - r.scaling_ci_low)(d.set_index("data_disks").loc[2])
    assert w(scaling(noisy, "iops")) > w(scaling(quiet, "iops"))


def test_scaling_with_measured_single_disk_baseline_and_groups():
    runs = _stripe_runs().iloc[3:].assign(workload="randread")
    runs = pd.concat([runs, runs.assign(workload="seqread", iops=runs.iops * 10)])
    single = pd.DataFrame({"workload": ["randread"] * 3 + ["seqread"] * 3, "data_disks": [1] * 6,
                           "iops": [100, 101, 99, 1000, 1010, 990]})
    s = scaling(runs, "iops", baseline=single, by="workload")
    assert len(s) == 4 and (s.baseline_disks == 1).all()
    rr = s.query("workload == 'randread'").set_index("data_disks")
    assert rr.loc[2, "scaling"] == pytest.approx(1.9)
    ref = ratio_ci([190, 195, 185], [100, 101, 99])      # the baseline's runs enter the CI
    assert (rr.loc[2, "scaling_ci_low"], rr.loc[2, "scaling_ci_high"]) == pytest.approx((ref.low, ref.high))
    sr = s.query("workload == 'seqread'").set_index("data_disks")
    assert sr.loc[4, "efficiency"] == pytest.approx(3700 / 1000 / 4)


def test_scaling_separate_families_and_ambiguous_baseline():
    df = pd.concat([_stripe_runs(),
                    pd.DataFrame({"layout": ["mirror"] * 6, "width": [2] * 6,
                                  "data_disks": [1] * 3 + [2] * 3,
                                  "iops": [200, 210, 190, 380, 390, 400]})])
    s = scaling(df, "iops")
    assert s.groupby("layout").baseline_disks.first().to_dict() == {"mirror": 1, "stripe": 1}
    assert s.query("layout == 'mirror' and data_disks == 2").scaling.item() == pytest.approx(1.95)
    twice = pd.concat([df, df.query("layout == 'mirror' and data_disks == 1").assign(width=3)])
    with pytest.raises(ConfigError):
        scaling(twice, "iops")


def test_docstring_examples_run():
    import doctest

    from zbench_lib.analysis.data import coverage, flags, metrics, replication
    from zbench_lib.analysis.stats import compare, linearity, ratio, stats, tables
    for module in (stats, compare, ratio, replication, flags, coverage, tables, metrics, linearity):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_a_summary_counts_the_runs_it_has_no_value_of():
    # issue 46 item 4: a p99 its I/Os cannot support is blanked in its run's row; the summary's n is what
    # it rests on (2 of cfg a's 3 runs) and `runs_missing` says the third was there
    df = pd.DataFrame({"cfg": ["a", "a", "a", "b"], "lat_p99_ns": [1e6, 2e6, np.nan, 3e6]})
    s = summary(df, "lat_p99_ns", "cfg").set_index("cfg")
    assert s.loc["a", "n"] == 2 and s.loc["a", "runs_missing"] == 1 and s.loc["b", "runs_missing"] == 0
