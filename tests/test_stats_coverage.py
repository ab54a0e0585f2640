"""Three-valued truth checks, planned cells, sensitivity, one factor at a time, each workload's
metric (issue 11; docs/methods.md §7–§9). Hand-made tables; each fails on the code before issue 11.
"""

import json

import numpy as np
import pandas as pd
import pytest

from zbench_lib import analysis as A

K = 1024


# -- three-valued flags ---------------------------------------------------------------------------

def _flag_table():
    return pd.DataFrame(dict(
        run_id=["a", "b", "c", "d"],
        flag_emulation_bound=[True, None, False, None],
        flag_cache_served=[None, None, False, np.nan],
        flag_host_contention=[False, None, None, True],
        flagged=[True, None, False, np.nan],
        not_judged=["cache_served: cache declared warm; a cold-read check does not apply",
                    "emulation_bound: no CPU counters; cache_served: no reads: does not apply; "
                    "host_contention: not a lab run",
                    "host_contention: not a lab run",
                    "emulation_bound: no CPU counters; cache_served: no device or ARC counters"]))


def test_none_does_not_exclude_and_true_does():
    df = _flag_table()
    ok = A.select_admissible(df)
    assert ok["run_id"].tolist() == ["b", "c"]           # b: nothing judged, nothing raised
    assert len(A.select_admissible(df, include_flagged=True)) == 4
    assert A.flagged_runs(df)["flags"].tolist() == ["emulation_bound", "host_contention"]


def test_truth_summary_counts_true_false_and_not_judged():
    t = A.truth_summary(_flag_table()).set_index("flag")
    assert t.loc["flag_emulation_bound", ["raised", "passed", "not_judged"]].tolist() == [1, 1, 2]
    assert t.loc["flag_cache_served", ["raised", "passed", "not_judged"]].tolist() == [0, 1, 3]
    assert t.loc["flag_host_contention", ["raised", "passed", "not_judged"]].tolist() == [1, 1, 2]
    assert t.loc["flagged", ["raised", "passed", "not_judged"]].tolist() == [2, 0, 2]
    reasons = t.loc["flag_cache_served", "not_judged_reasons"]
    assert "cache declared warm; a cold-read check does not apply (1)" in reasons
    assert "no device or ARC counters (1)" in reasons
    assert t.loc["flag_host_contention", "not_judged_reasons"] == "not a lab run (2)"


def test_flag_meanings_cover_the_new_checks():
    assert A.FLAG_MEANINGS["flag_read_amplification"] == ("the disks read far more bytes than fio asked for, "
                                                          "beyond what block size and parity explain")
    assert A.FLAG_MEANINGS["flag_host_contention"] == ("the lab's emulation waited for the controller's CPU "
                                                       "during the run (run-queue wait or steal)")
    assert "flag_write_amplification" in A.FLAG_MEANINGS


def test_load_sweep_reads_three_valued_flags_from_csv(tmp_path):
    p = tmp_path / "s"
    p.mkdir()
    df = _flag_table().drop(columns=["flagged"]).assign(iops=100.0)
    df.to_csv(p / "results.csv", index=False)
    sw = A.load_sweep(p)
    assert str(sw.results["flag_emulation_bound"].dtype) == "boolean"
    assert sw.results["flag_emulation_bound"].isna().tolist() == [False, True, False, True]
    assert sw.results["flagged"].tolist() == [True, False, False, True]
    assert sw.plan is not None and sw.plan.empty                   # no plan.json


# -- planned cells --------------------------------------------------------------------------------

def _sweep(tmp_path, flagged_4k=5):
    """raidz1 of 6 at 4K/16K/128K, 4k random writes: all 4K runs invalidated by host contention."""
    cells, runs, rows = [], [], []
    for i, vbs in enumerate((4 * K, 16 * K, 128 * K)):
        cid = f"c{i}"
        factors = dict(layout="raidz1", width=6, vdevs=1, data_disks=5, total_disks=6, ashift=12,
                       volblocksize_bytes=vbs, workload="randwrite", template="randwrite", bs_bytes=4096)
        cells.append(dict(cell_id=cid, pool_id="p01", target_id=f"p01-t0{i}", workload="randwrite",
                          template="randwrite", factors=factors))
        for rep in range(1, 6):
            runs.append(dict(cell_id=cid, rep=rep, run_id=f"{cid}-r0{rep}", pool_id="p01"))
            bad = vbs == 4 * K and rep <= flagged_4k
            rows.append(dict(factors, sweep="t", run_id=f"{cid}-r0{rep}", cell_id=cid, rep=rep, direction="write",
                             iops=[300, 100, 95][i] * (1 + 0.01 * rep), flag_host_contention=bad,
                             flag_cache_served=None, flag_write_amplification=bad and rep % 2 == 0))
    p = tmp_path / "sweep"
    p.mkdir()
    (p / "plan.json").write_text(json.dumps(dict(sweep="t", cells=cells, runs=runs, skipped=[])))
    pd.DataFrame(rows).to_parquet(p / "results.parquet")
    return p


def test_planned_cells_with_no_admissible_run_are_reported(tmp_path):
    sw = A.load_sweep(_sweep(tmp_path))
    assert sw.plan["cell_id"].tolist() == ["c0", "c1", "c2"] and (sw.plan["runs_planned"] == 5).all()
    st = A.cell_status(sw.results, sw.plan).set_index("cell_id")
    assert st.loc["c0", "status"] == "not judged: 5 of 5 runs excluded (host_contention 5, write_amplification 2)"
    assert st.loc["c1", "status"] == "judged: 5 of 5 runs admissible" and st.loc["c1", "judged"]
    df = A.select_admissible(sw.results)
    assert 4 * K not in set(df["volblocksize_bytes"])              # the cell is gone from the data...
    cmp = A.compare_table(df, "iops", "volblocksize_bytes", 16 * K, cells=st.reset_index())
    row = cmp.set_index("level").loc[4 * K]                        # ...but not from the table
    assert row.verdict == "not judged" and (row.n_level, row.runs_level) == (0, 5)
    assert "not judged: 5 of 5 runs excluded (host_contention 5" in row.note
    text = A.conclusions_volblocksize(cmp, None, None, "iops")
    assert any("4K not judged against 16K: level 4K: not judged: 5 of 5 runs excluded" in t for t in text)
    lines = A.conclusions_compare(cmp)
    assert any(t.startswith("volblocksize_bytes=4K vs 16K") and "5 of 5 runs excluded" in t for t in lines)


def test_a_cell_never_run_is_reported(tmp_path):
    p = _sweep(tmp_path)
    df = pd.read_parquet(p / "results.parquet")
    df[df["cell_id"] != "c2"].to_parquet(p / "results.parquet")
    sw = A.load_sweep(p)
    st = A.cell_status(sw.results, sw.plan).set_index("cell_id")
    assert st.loc["c2", "status"] == "not judged: no run recorded (5 planned)" and st.loc["c2", "direction"] == "write"


def test_sensitivity_line_says_whether_flagged_runs_change_the_verdict(tmp_path):
    sw = A.load_sweep(_sweep(tmp_path))
    st = A.cell_status(sw.results, sw.plan)
    cmp = A.compare_table(A.select_admissible(sw.results), "iops", "volblocksize_bytes", 16 * K,
                          all_runs=sw.results, cells=st).set_index("level")
    assert cmp.loc[4 * K, "sensitivity_flagged_verdict"] == "higher"      # the flagged 4K runs would "win"
    assert cmp.loc[4 * K, "sensitivity"].startswith("with flagged runs included: higher (ratio 3.00")
    assert cmp.loc[128 * K, "sensitivity"] == ""           # no flagged run on either side: nothing could change
    text = A.conclusions_volblocksize(cmp.reset_index(), None, None, "iops")
    assert any("Sensitivity: with flagged runs included, the best would be 4K at 3.00x" in t for t in text), text
    lines = A.conclusions_compare(cmp.reset_index())
    assert any("Sensitivity: with flagged runs included: higher" in t for t in lines)


# -- one factor at a time, each workload's metric -------------------------------------------------

def _layout_runs(layout, total, iops, workload="randread-4k", **extra):
    width, vdevs = (2, total // 2) if layout == "mirror" else (total, 1)
    data = total // 2 if layout == "mirror" else total
    return pd.DataFrame(dict(layout=layout, width=width, vdevs=vdevs, data_disks=data, total_disks=total,
                             workload=workload, direction="read", iops=iops, **extra))


def test_layout_comparisons_hold_the_disk_count_equal():
    rng = np.random.default_rng(3)
    df = pd.concat([_layout_runs(lay, tot, m * tot * rng.lognormal(0, 0.02, 3))
                    for lay, m in (("mirror", 100), ("stripe", 95)) for tot in (4, 8)])
    # The old comparison pooled mirror of 4 and 8 disks against stripe of 4 and 8 (n 6 vs 6).
    total = A.compare_table(df, "iops", "layout", "stripe")
    assert (total[["n_level", "n_baseline"]] == 3).all().all()
    assert sorted(total["total_disks"]) == [4, 8] and (total["comparison"] == "equal total disks").all()
    data = A.compare_table(df, "iops", "layout", "stripe", disks="data")
    assert data["data_disks"].tolist() == [4] and data.loc[0, "n_level"] == 3      # mirror of 8 vs stripe of 4
    assert (data["comparison"] == "equal data disks").all()
    text = A.conclusions_compare(data)
    assert text[-2] == "Each comparison holds every other varying factor equal, at equal data disks."


def test_a_side_pooling_several_configurations_is_not_judged():
    # 2-way and 3-way mirrors with 2 vdevs: both 2 data disks, different widths
    two = _layout_runs("mirror", 4, [200, 202, 198])
    three = two.assign(width=3, total_disks=6, iops=[300, 303, 297])
    stripe = _layout_runs("stripe", 2, [190, 192, 188])
    cmp = A.compare_table(pd.concat([two, three, stripe]), "iops", "layout", "stripe", disks="data")
    assert cmp.loc[0, "verdict"] == "not judged" and "width" in cmp.loc[0, "note"]


def test_each_workload_is_judged_in_its_metric():
    MiB = 2 ** 20
    seq = pd.concat([_layout_runs(lay, 4, [m, m * 1.01, m * 0.99], workload="seqread", template="seqread",
                                  bw_bytes_s=[m * MiB, m * 1.01 * MiB, m * 0.99 * MiB])
                     for lay, m in (("stripe", 60), ("mirror", 62))])
    rnd = pd.concat([_layout_runs(lay, 4, [m, m + 2, m - 2], workload="randread-4k", template="randread",
                                  bw_bytes_s=np.nan) for lay, m in (("stripe", 400), ("mirror", 420))])
    cmp = A.compare_table(pd.concat([seq, rnd]), "auto", "layout", "stripe", disks="total")
    assert dict(zip(cmp["workload"], cmp["metric"])) == {"randread-4k": "iops", "seqread": "bw_bytes_s"}
    text = A.conclusions_compare(cmp, "auto")
    seq_line = [t for t in text if "seqread" in t][0]
    assert "bandwidth ratio 1.03" in seq_line and "means 62.0 MiB/s vs 60.0 MiB/s" in seq_line
    assert "IOPS ratio 1.05" in [t for t in text if "randread" in t][0]
    assert A.workload_metric("seqwrite") == "bw_bytes_s" and A.workload_metric("randwrite") == "iops"


@pytest.mark.parametrize("metric", ["iops", "auto"])
def test_scaling_table_lists_planned_cells_without_admissible_runs(metric):
    df = pd.concat([_layout_runs("stripe", d, [100 * d, 101 * d, 99 * d], cell_id=f"s{d}", run_id=None,
                                 template="randread") for d in (1, 2, 4)])
    df["run_id"] = [f"r{i}" for i in range(len(df))]
    df["flag_host_contention"] = df["data_disks"] == 4
    st = A.cell_status(df)
    s = A.scaling_table(A.select_admissible(df), metric, cells=st)
    four = s[s["data_disks"] == 4].iloc[0]
    assert four["n"] == 0 and four["status"] == "not judged: 3 of 3 runs excluded (host_contention 3)"
    text = A.conclusions_scaling(s, "iops")
    assert any(t.endswith("at 4 data disks: not judged: 3 of 3 runs excluded (host_contention 3).") for t in text)


def test_scaling_conclusions_carry_a_sensitivity_clause():
    # stripe 1 -> 4 data disks: the admissible runs scale linearly; two flagged runs at 4 disks are
    # slow (efficiency 0.98 without them, a wide CI reaching below 0.9 with them)
    runs = [_layout_runs("stripe", d, v, template="randread") for d, v in
            ((1, [100, 101, 99]), (4, [395, 400, 405, 250, 260]))]
    df = pd.concat(runs, ignore_index=True)
    df["flag_host_contention"] = (df["data_disks"] == 4) & (df["iops"] < 300)
    s = A.scaling_table(A.select_admissible(df), "iops", all_runs=df)
    r = s[s["data_disks"] == 4].iloc[0]
    assert r["efficiency"] == pytest.approx(1.0) and r["sensitivity_flagged_efficiency"] == pytest.approx(342 / 400)
    text = [t for t in A.conclusions_scaling(s, "iops") if t.startswith("stripe")][0]
    assert "close to linear" in text and "Sensitivity: with flagged runs included, efficiency 0.86" in text
    again = A.scaling_table(A.select_admissible(df), "iops", all_runs=A.select_admissible(df))
    assert "Sensitivity" not in A.conclusions_scaling(again, "iops")[0]     # no other runs: nothing could change


@pytest.mark.parametrize("factor, levels", [("log", (0, 1)), ("model", ("hdd", "hdd-slow")),
                                            ("zfs_txg_timeout", (5, 30))])
def test_cells_differing_only_in_a_pool_setting_stay_two_cells_without_a_plan(factor, levels):
    # 8K against 128K at two levels of a pool setting; 128K's runs at the second level are all excluded. Without
    # a plan the cells are the results' own, named by _CELL_COLUMNS: without the setting's column the two levels'
    # cells were one configuration, so the first level's comparison took the second's reason and the second's
    # "not judged" row vanished.
    rows = [{"sweep_id": "s", "workload": "randwrite", "direction": "write", "layout": "mirror",
             "volblocksize_bytes": vbs, factor: lv, "config_id": f"{vbs}-{lv}", "run_id": f"{vbs}-{lv}-r{rep}",
             "rep": rep + 1, "attempt": 1, "iops": iops * wiggle,
             "flag_host_contention": lv == levels[1] and vbs == 128 * K}
            for lv in levels for vbs, iops in ((8 * K, 1000.0), (128 * K, 100.0))
            for rep, wiggle in enumerate((0.99, 1.0, 1.01))]
    df = pd.DataFrame(rows)
    cells = A.cell_status(df)
    cmp = A.compare_table(A.select_admissible(df), "iops", "volblocksize_bytes", 128 * K, cells=cells)
    by_level = {r[factor]: r for _, r in cmp.iterrows()}
    assert set(by_level) == set(levels)
    assert by_level[levels[0]]["verdict"] == "higher" and by_level[levels[0]]["note"] == ""
    assert by_level[levels[1]]["verdict"] == "not judged"
    assert by_level[levels[1]]["note"] == "baseline 128K: not judged: 3 of 3 runs excluded (host_contention 3)"
    assert sorted(zip(cells[factor], cells["volblocksize_bytes"])) == sorted(
        (lv, vbs) for lv in levels for vbs in (8 * K, 128 * K))
