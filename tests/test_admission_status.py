"""Cell status where pools are replicated, and Holm families of valid comparisons only (issue 27,
item 3; docs/methods.md §3, §6, §8). Hand-made tables; each test fails on the code before issue 27.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib import analysis as A
from zbench_lib.analysis.stats.compare import adjust

K = 1024
# One run per pool, three pools per configuration (`repetitions: {fixed: 1, pool_replicates: 3}`):
# block size -> (IOPS of the run on pool 1, 2, 3; runs invalidated by host contention)
POOLS = {4 * K: ([300.0, 310.0, 290.0], ()),
         16 * K: ([200.0, 104.0, 96.0], (1,)),            # pool 1 flagged: 2 pools left, mean 100
         128 * K: ([90.0, 80.0, 70.0], (1, 2))}           # pools 1 and 2 flagged: 1 pool left


def _replicated_sweep():
    """(results, plan) as load_sweep gives them: a cell per pool, `<cell>-pr<k>` (sweeps/planning/blocks)."""
    plan, rows = [], []
    for i, (vbs, (iops, flagged)) in enumerate(POOLS.items()):
        factors = dict(layout="raidz1", width=6, vdevs=1, data_disks=5, total_disks=6, volblocksize_bytes=vbs,
                       workload="randwrite", template="randwrite")
        for k in (1, 2, 3):
            cell, pool = f"c{i}-pr{k}", f"p01-pr{k}"
            plan.append(dict(sweep_id="s", cell_id=cell, pool_id=pool, target_id=f"{pool}-t0{i}",
                             runs_planned=1, **factors))
            rows.append(dict(factors, sweep_id="s", cell_id=cell, run_id=f"{cell}-r01", rep=1, pool_id=pool,
                             pool_replicate=k, direction="write", iops=iops[k - 1],
                             flag_host_contention=k in flagged))
    return pd.DataFrame(rows), pd.DataFrame(plan)


def test_replicated_pools_are_the_unit_of_a_cells_status():
    results, plan = _replicated_sweep()
    st = A.cell_status(results, plan).set_index("volblocksize_bytes")
    # one row per configuration (its three pool cells folded in), judged on its pools
    assert sorted(st.index) == [4 * K, 16 * K, 128 * K] and set(st["cell_id"]) == {"c0", "c1", "c2"}
    assert (st["unit"] == "pool").all()
    assert st[["pools", "pools_admissible", "runs", "admissible"]].loc[16 * K].tolist() == [3, 2, 3, 2]
    assert st["judged"].to_dict() == {4 * K: True, 16 * K: True, 128 * K: False}
    assert st.loc[4 * K, "status"] == "judged: 3 of 3 pools with admissible runs; 3 of 3 runs admissible"
    assert st.loc[16 * K, "status"] == ("judged: 2 of 3 pools with admissible runs; 2 of 3 runs admissible, "
                                        "1 excluded (host_contention 1)")
    assert st.loc[128 * K, "status"] == ("not judged: 1 of 3 pools with admissible runs (a CI needs 2); "
                                         "1 of 3 runs admissible, 2 excluded (host_contention 2)")


def test_without_a_plan_the_pool_cells_fold_by_their_cell_id():
    results, _ = _replicated_sweep()
    st = A.cell_status(results).set_index("cell_id")
    assert st["judged"].to_dict() == {"c0": True, "c1": True, "c2": False}
    assert st["units"].to_dict() == {"c0": 3, "c1": 2, "c2": 1}


def test_not_judged_appears_only_on_comparisons_that_are_not_judged():
    results, plan = _replicated_sweep()
    cells = A.cell_status(results, plan)
    cmp = A.compare_table(A.select_admissible(results), "iops", "volblocksize_bytes", 16 * K,
                          cells=cells).set_index("level")
    four = cmp.loc[4 * K]
    # pool means 300 (300, 310, 290) against 100 (104, 96): judged on 3 vs 2 pools, no caveat
    assert (four.unit, four.n_level, four.n_baseline) == ("pool", 3, 2)
    assert four.ratio == pytest.approx(3.0) and four.verdict == "higher"
    assert four.note == ""
    big = cmp.loc[128 * K]
    assert big.verdict == "not judged" and big.n_level == 1
    assert big.note == ("level 128K: not judged: 1 of 3 pools with admissible runs (a CI needs 2); "
                        "1 of 3 runs admissible, 2 excluded (host_contention 2)")
    text = A.conclusions_volblocksize(cmp.reset_index(), None, None, "iops")
    assert sum("not judged" in t for t in text) == 1 and "128K not judged against 16K" in text[0]


# -- Holm families hold only valid comparisons ----------------------------------------------------

def _runs(layout, width, vdevs, iops):
    return pd.DataFrame(dict(layout=layout, width=width, vdevs=vdevs, data_disks=2,
                             total_disks=width * vdevs, workload="randread", direction="read", iops=iops))


def test_a_pooled_comparison_stays_out_of_the_holm_family():
    stripe = _runs("stripe", 2, 1, [100.0, 102.0, 98.0])
    raidz1 = _runs("raidz1", 3, 1, [105.0, 107.0, 103.0])
    # 2-way and 3-way mirrors of two vdevs: both 2 data disks, so at equal data disks the mirror
    # side pools two configurations: no valid comparison.
    mirrors = pd.concat([_runs("mirror", 2, 2, [100.0, 103.0, 97.0]), _runs("mirror", 3, 2, [99.0, 101.0, 100.0])])
    cmp = A.compare_table(pd.concat([stripe, raidz1, mirrors]), "iops", "layout", "stripe",
                          disks="data").set_index("level")
    # The reference p: Welch on the log moments (methods §2), raidz1 (mean 105, SD 2) vs stripe (100, 2)
    p = sps.ttest_ind_from_stats(math.log(105), 2 / 105, 3, math.log(100), 2 / 100, 3, equal_var=False).pvalue
    assert 0.025 < p < 0.05                 # significant alone; not if a second p doubled it (Holm, m = 2)
    assert cmp.loc["raidz1", "p"] == pytest.approx(p)
    assert cmp.loc["raidz1", "holm_p"] == pytest.approx(p)          # a family of one: the pooled p left out
    # significant, but its interval (low end above 1, below 1.05) does not clear the ±5% margin (methods §3.1)
    assert cmp.loc["raidz1", "verdict"] == "higher, margin unclear" and bool(cmp.loc["raidz1", "significant"])
    assert 1 < cmp.loc["raidz1", "adj_ci_low"] < 1.05
    mirror = cmp.loc["mirror"]
    assert mirror.verdict == "not judged" and "pools several configurations" in mirror.note
    assert np.isnan(mirror.holm_p) and not mirror.significant


def test_adjust_leaves_invalid_rows_out_of_the_family():
    out = pd.DataFrame(dict(p=[0.01, 0.04, 0.5], ratio=[1.2, 1.1, 1.0], log_se=0.05, welch_df=4.0,
                            n_level=3, n_baseline=3, ratio_ci_low=[1.1, 1.01, 0.9], equivalent=False))
    adj = adjust(out, None, 0.05, valid=[True, True, False])
    # Holm over the two valid p by hand: 0.01 * 2 = 0.02; max(0.02, 0.04 * 1) = 0.04
    assert adj["holm_p"].tolist()[:2] == pytest.approx([0.02, 0.04]) and np.isnan(adj.loc[2, "holm_p"])
    # the verdicts read the intervals (methods §3.1), here from the given SE, at the family's one level: Holm
    # rejects both, its last step is at α, so 1.2·exp(∓t(0.975, 4)·0.05) = 1.04–1.38 excludes 1 but not +5%;
    # 1.1·exp(∓t(0.975, 4)·0.05) = 0.958–1.26 includes 1 and is not inside ±5%
    assert adj["verdict"].tolist() == ["higher, margin unclear", "inconclusive", "not judged"]
    assert adj.loc[0, "decided_low"] == pytest.approx(1.2 * math.exp(-sps.t.ppf(0.975, 4) * 0.05))
