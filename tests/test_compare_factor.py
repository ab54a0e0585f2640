"""Which factor a sweep's comparison takes, its baseline, and which analyses a table supports."""

import pandas as pd

from zbench_lib.analysis.report.compare_factor import auto_baseline, auto_factor, comparison_choice
from zbench_lib.analysis.report.report import applicable_notebooks


def _frame(**cols):
    n = max(len(v) for v in cols.values() if isinstance(v, list))
    return pd.DataFrame({k: (v if isinstance(v, list) else [v] * n) for k, v in cols.items()})


def test_layout_comes_before_sync_and_the_baseline_is_zfs_default():
    df = _frame(layout=["mirror", "raidz1", "mirror", "raidz1"], sync=["always", "always", "standard", "standard"])
    assert auto_factor(df) == "layout"
    assert auto_factor(df.drop(columns="layout")) == "sync"
    assert auto_baseline(df, "sync") == "standard"
    assert auto_baseline(df, "layout") == "mirror"


def test_queue_depth_alone_is_compared_against_the_shallowest_queue():
    df = _frame(layout="raidz2", data_disks=4, iodepth=[16, 1, 4, 64], volblocksize_bytes=16384)
    assert auto_factor(df) == "iodepth"
    assert auto_baseline(df, "iodepth") == 1 and repr(auto_baseline(df, "iodepth")) == "1"
    # the iodepth curve gets a report page: before, no analysis applied to it
    assert applicable_notebooks(df) == ["analysis-compare"]


def test_a_pool_factor_wins_over_queue_depth():
    df = _frame(layout="mirror", log=[0, 1, 0, 1], iodepth=[1, 1, 8, 8])
    assert auto_factor(df) == "log"


def test_nothing_varies_nothing_to_compare():
    df = _frame(layout="mirror", iodepth=[4, 4])
    assert auto_factor(df) is None
    assert applicable_notebooks(df) == []


def test_depths_that_differ_only_between_workloads_are_no_factor():
    df = _frame(layout="mirror", workload=["randread", "randread", "seqread", "seqread"], iodepth=[8, 8, 4, 4],
                numjobs=[2, 2, 1, 1])
    assert auto_factor(df) is None
    df["iodepth"] = [1, 8, 4, 4]
    assert auto_factor(df) == "iodepth"


def test_loads_are_a_curve_not_replicates_so_the_pooling_notebooks_do_not_apply():
    # a latency-vs-load sweep: volblocksize varies, and so does the load; the volblocksize notebook
    # would take the loads for runs of one configuration (it refused to plot, found on a real sweep)
    df = _frame(layout="mirror", volblocksize_bytes=[8192, 131072, 8192, 131072], load=["0.5", "0.5", "saturation",
                                                                                       "saturation"])
    assert applicable_notebooks(df) == ["analysis-compare"]        # it holds the load equal (test below)
    assert applicable_notebooks(df[df["load"] == "0.5"]) == ["analysis-volblocksize"]


def test_the_compare_notebook_compares_a_load_sweeps_block_sizes_at_each_load():
    # the volblocksize notebook would pool the loads; the compare notebook holds them equal (compare_table)
    df = _frame(layout="mirror", volblocksize_bytes=[8192, 131072, 8192, 131072], load=["0.5", "0.5", "saturation",
                                                                                       "saturation"])
    assert applicable_notebooks(df.assign(layout=["mirror", "raidz1"] * 2)) == ["analysis-compare"]
    assert applicable_notebooks(df.assign(volblocksize_bytes=8192)) == []     # nothing to compare but the loads
    assert comparison_choice(df) == ("volblocksize_bytes", 131072)      # 16K, else the largest, as block_choice


def test_a_client_sweep_compares_along_the_client_count_against_the_fewest():
    # issue 30: 1, 2 and 4 client VMs under sync standard and always; the sweep asks how the aggregate scales with
    # clients, so it compares the counts (sync was compared before: the counts were no factor of COMPARE_ORDER)
    df = _frame(layout="mirror", sync=["standard", "always"] * 3, clients=[4, 4, 1, 1, 2, 2])
    assert auto_factor(df) == "clients"
    assert auto_baseline(df, "clients") == 1
    assert comparison_choice(df) == ("clients", 1)
    # it wins over whatever else such a sweep varies: the release and the layout, first otherwise
    assert auto_factor(df.assign(zfs=["2.2.7", "2.3.2"] * 3, layout=["mirror"] * 3 + ["raidz1"] * 3)) == "clients"
    # the fewest clients the sweep has, not 1, where it has no single-client cell
    assert auto_baseline(df[df["clients"] > 1], "clients") == 2
    # a client sweep at one count, or a sweep without clients, compares what it varies
    assert auto_factor(df[df["clients"] == 2]) == "sync"
    assert auto_factor(df.drop(columns="clients")) == "sync"


def _pools(units: dict, runs_per_pool: int = 2) -> pd.DataFrame:
    """Runs of one workload per layout: `units[layout]` pools, each with `runs_per_pool` runs (pools are the unit)."""
    rows = [dict(layout=lay, workload="randread", direction="read", pool_replicate=p, run_id=f"{lay}-p{p}-r{r}")
            for lay, n in units.items() for p in range(1, n + 1) for r in range(runs_per_pool)]
    return pd.DataFrame(rows)


def test_a_baseline_needs_two_admissible_units_else_the_best_judged_level_is_taken():
    from zbench_lib.analysis.report.compare_factor import Baseline, baseline_choice
    # issue 52: stripe's runs on one pool are one unit, no interval: every comparison against it is "not judged"
    df = _pools({"stripe": 1, "mirror": 2, "raidz1": 3}, runs_per_pool=3)
    b = baseline_choice(df, "layout")
    assert (b.level, b.usual) == ("raidz1", "stripe")       # the most admissible pools, not the usual order
    assert b.reason == ("stripe had fewer than 2 admissible pools in each cell (an interval needs 2): "
                        "raidz1 is the baseline")
    assert auto_baseline(df, "layout") == "raidz1" and comparison_choice(df) == ("layout", "raidz1")
    # as many units: the usual order (mirror before raidz1)
    assert auto_baseline(_pools({"stripe": 1, "mirror": 3, "raidz1": 3}), "layout") == "mirror"
    # a level that was planned and has no admissible run at all is named
    b = baseline_choice(df[df["layout"] != "stripe"], "layout", planned=["stripe", "mirror", "raidz1"])
    assert (b.level, b.reason) == ("raidz1", "stripe had no admissible run: raidz1 is the baseline")
    # a judged usual level stays, however many units the others have; where no level is judged, so does it
    assert baseline_choice(_pools({"stripe": 2, "mirror": 5}), "layout").reason == ""
    assert baseline_choice(_pools({"stripe": 1, "mirror": 1}), "layout") == Baseline("stripe", "stripe")


def test_a_block_sizes_baseline_falls_back_too():
    from zbench_lib.analysis.report.compare_factor import block_choice
    df = _frame(layout="mirror", workload="randread", volblocksize_bytes=[16384, 65536, 65536, 8192, 8192],
                run_id=["a", "b", "c", "d", "e"])
    assert block_choice(df) == ("volblocksize_bytes", 8192)   # 16K has one run: 8K and 64K two; the smaller
    assert block_choice(df[df["volblocksize_bytes"] != 16384]) == ("volblocksize_bytes", 65536)   # the largest


# -- issue 52 item 8: a sweep of the sector size, the I/O size or a vdev's width alone gets its comparison -------

def _one_factor_sweep(factor: str, levels: tuple, cost: float = 0.8):
    """A SYNTHETIC sweep that varies `factor` alone: the demo shape's mirror at 8K (3 runs a cell), its rows once
    per level of `factor`, each level after the first at `cost` times the throughput."""
    from zbench_lib.analysis.data.synthetic import synthetic_results
    base = synthetic_results(n_rows=36, seed=1, shape="demo")
    base = base[(base["layout"] == "mirror") & (base["volblocksize_bytes"] == 8192)]
    parts = []
    for i, level in enumerate(levels):
        scale = cost ** bool(i)
        parts.append(base.assign(**{factor: level, "iops": base["iops"] * scale,
                                    "bw_bytes_s": base["bw_bytes_s"] * scale,
                                    "run_id": base["run_id"] + f"-{factor}{level}"}))
    return pd.concat(parts, ignore_index=True)


def _judged_comparison(df, factor, baseline):
    from zbench_lib.analysis.stats.tables import compare_table
    cmp = compare_table(df, "auto", factor, baseline)
    assert len(cmp) == df["workload"].nunique() and (cmp["verdict"] != "not judged").all(), cmp
    assert (cmp["n_level"] == 3).all() and (cmp["n_baseline"] == 3).all()
    return cmp


def test_an_ashift_only_sweep_is_compared_along_ashift():
    # before, nothing analysed it: COMPARE_ORDER had no ashift, so no notebook applied and `zbench report` said
    # "no analysis applies"
    df = _one_factor_sweep("ashift", (12, 9))
    assert auto_factor(df) == "ashift"
    assert applicable_notebooks(df) == ["analysis-compare"]
    assert comparison_choice(df) == ("ashift", 9)                 # the smallest sector first
    cmp = _judged_comparison(df, "ashift", 9)
    assert (cmp["verdict"] == "higher").all()                     # ashift 12 at 1/0.8 the throughput of 9


def test_an_io_size_only_sweep_is_compared_along_bs():
    df = _one_factor_sweep("bs_bytes", (4096, 65536))
    assert auto_factor(df) == "bs_bytes" and applicable_notebooks(df) == ["analysis-compare"]
    assert comparison_choice(df) == ("bs_bytes", 4096)
    _judged_comparison(df, "bs_bytes", 4096)
    # an I/O size that only differs between workloads (4K random, 1M sequential) is no factor
    two = df[df["bs_bytes"] == 4096].assign(bs_bytes=df["workload"].map({"randread": 4096, "randwrite": 1 << 20}))
    assert auto_factor(two) is None


def test_a_mirror_width_sweep_is_compared_along_the_width_its_drives_not_held():
    # 2-way against 3-way mirrors of two vdevs: the same 2 data disks on 4 and 6 drives; holding the drives
    # equal, as a layout comparison does, left one width per group and no comparison
    df = _one_factor_sweep("width", (2, 3)).assign(vdevs=2, data_disks=2)
    df["total_disks"] = df["width"] * df["vdevs"]
    assert auto_factor(df) == "width" and applicable_notebooks(df) == ["analysis-compare"]
    cmp = _judged_comparison(df, "width", 2)
    assert "total_disks" not in cmp.columns
    # where the width moves the data disks (raidz2 of 6 and 8), the scaling notebook compares it, not this one
    wide = df.assign(layout="raidz2", width=df["width"] * 2 + 2, vdevs=1)
    wide["data_disks"] = wide["width"] - 2
    assert auto_factor(wide) is None and applicable_notebooks(wide) == ["analysis-scaling"]
