"""Replication at the pool level (docs/methods.md §6): a re-created pool is the experimental
unit; reruns on one pool are subsamples. Hand-made tables; each test fails on the code before
issue 11, which counted every rerun as an independent replicate.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib import analysis as A
from zbench_lib.analysis.stats.compare import compare
from zbench_lib.analysis.data.replication import pool_replicates, resolve_unit, to_units
from zbench_lib.analysis.stats.stats import scaling, summary


def _pools(layout, pools, **extra):
    """Runs of one configuration: `pools` is a list of per-replicate run values."""
    return pd.DataFrame([dict(layout=layout, pool_id=f"p-{layout}", pool_replicate=i + 1, iops=v, **extra)
                         for i, vals in enumerate(pools) for v in vals])


MIRROR = [[100, 101, 99], [90, 91, 89], [110, 111, 109]]      # pool means 100, 90, 110
RAIDZ = [[80, 81, 79], [84, 85, 83], [76, 77, 75]]            # pool means 80, 84, 76


def test_summary_works_on_pool_means_when_pools_were_replicated():
    s = summary(_pools("mirror", MIRROR), "iops", "layout").iloc[0]
    assert s.n == 3                                              # three pools, not nine runs
    assert (s.unit, s.n_runs, s.n_pools) == ("pool", 9, 3)
    assert s["mean"] == pytest.approx(100) and s["std"] == pytest.approx(10)   # SD of 100, 90, 110
    assert not s.conditional_on_pool
    # the interval is the one of the three pool means (not of nine runs, which is ~3x narrower)
    ref = summary(pd.DataFrame({"layout": "mirror", "iops": [100.0, 90.0, 110.0]}), "iops", "layout").iloc[0]
    assert (s.ci95_low, s.ci95_high) == pytest.approx((ref.ci95_low, ref.ci95_high))
    runs = summary(_pools("mirror", MIRROR), "iops", "layout", unit="run").iloc[0]
    assert (runs.n, runs.unit) == (9, "run") and runs.ci95_high - runs.ci95_low < (s.ci95_high - s.ci95_low) / 2


def test_compare_at_pool_level_equals_compare_of_pool_means():
    df = pd.concat([_pools("mirror", MIRROR), _pools("raidz1", RAIDZ)])
    out = compare(df, "iops", "layout", "mirror").iloc[0]
    assert out.n_level == 3
    means = pd.DataFrame({"layout": ["mirror"] * 3 + ["raidz1"] * 3, "iops": [100, 90, 110, 80, 84, 76]})
    ref = compare(means, "iops", "layout", "mirror", unit="run").iloc[0]
    assert (out.unit, out.n_level, out.n_baseline, out.runs_level, out.runs_baseline) == ("pool", 3, 3, 9, 9)
    for c in ("ratio", "ratio_ci_low", "ratio_ci_high", "p"):
        assert out[c] == pytest.approx(ref[c]), c
    assert math.isnan(out.hedges_g) and math.isnan(ref.hedges_g)      # 3 pools a side: no effect size (methods §5)
    # scipy.stats.ttest_ind_from_stats on the log moments of the pool means, Welch
    m = means.groupby("layout").iops
    p = sps.ttest_ind_from_stats(math.log(80), 4 / 80, 3, math.log(100), 10 / 100, 3, equal_var=False).pvalue
    assert m.mean()["raidz1"] == 80 and out.p == pytest.approx(p)


def test_reruns_on_one_pool_are_not_replicates():
    # One pool each, nine reruns: the run-level test is very confident; the report must say
    # that it is conditional on that one pool.
    df = pd.concat([_pools("mirror", [[100, 101, 99, 100, 102, 98, 100, 101, 99]]),
                    _pools("raidz1", [[80, 81, 79, 80, 82, 78, 80, 81, 79]])])
    assert resolve_unit(df, ["layout"]) == "run"
    cmp = A.compare_table(df.assign(workload="randread", direction="read"), "iops", "layout", "mirror")
    text = A.conclusions_compare(cmp)
    assert any("conditional on one pool per configuration" in t for t in text)
    assert "n 9 vs 9 runs" in text[0]
    assert cmp.loc[0, "unit"] == "run" and cmp.loc[0, "n_level"] == 9
    s = summary(df, "iops", "layout")
    assert s["conditional_on_pool"].all() and (s["n_pools"] == 1).all()


def test_old_datasets_without_pool_columns_are_one_pool():
    df = pd.DataFrame({"layout": ["mirror"] * 3, "iops": [100.0, 110.0, 90.0]})
    assert pool_replicates(df, "layout")["n_pools"].tolist() == [1]
    u, unit = to_units(df, "iops", "layout")
    assert unit == "run" and len(u) == 3
    # missing replicate numbers in a mixed table count as replicate 1
    mixed = pd.concat([df.assign(pool_replicate=np.nan), df.assign(pool_replicate=2.0)])
    assert pool_replicates(mixed, "layout")["n_pools"].tolist() == [2]


def test_a_configuration_with_one_pool_among_replicated_ones_is_not_judged():
    df = pd.concat([_pools("mirror", MIRROR), _pools("raidz1", [[80, 81, 79, 82]])])
    df = df.assign(workload="randread", direction="read")
    cmp = A.compare_table(df, "iops", "layout", "mirror")
    r = cmp.iloc[0]
    assert (r.unit, r.n_level, r.n_baseline, r.verdict) == ("pool", 1, 3, "not judged")
    text = A.conclusions_compare(cmp)
    assert "admissible pools" in text[0] and any(t.startswith("Statistics at pool level") for t in text)
    with pytest.raises(A.ConfigError):
        resolve_unit(df, ["layout"], "replicate")


def test_scaling_counts_pools():
    df = pd.concat([_pools("stripe", [[100, 101], [98, 99], [102, 103]], data_disks=1),
                    _pools("stripe", [[190, 191], [195, 196], [185, 186]], data_disks=2).assign(pool_id="p2")])
    s = scaling(df, "iops").set_index("data_disks")
    assert (s["unit"] == "pool").all() and s.loc[2, "n"] == 3 and s.loc[2, "n_runs"] == 6
    means = pd.DataFrame({"layout": "stripe", "data_disks": [1, 1, 1, 2, 2, 2],
                          "iops": [100.5, 98.5, 102.5, 190.5, 195.5, 185.5]})
    s_ref = scaling(means, "iops", unit="run").set_index("data_disks")
    assert (s.loc[2, "scaling_ci_low"], s.loc[2, "scaling_ci_high"]) == \
        pytest.approx((s_ref.loc[2, "scaling_ci_low"], s_ref.loc[2, "scaling_ci_high"]))
