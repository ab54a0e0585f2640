"""A comparison of a sweep with the load factor holds the stated load equal (methods §21): a level meets the
baseline at the same load only, never in runs pooled across loads, and the conclusions say so. Two sweeps
read as one: the one without the factor ran at saturation, and pairs with the other's saturation level only.

The frame: 8K and 128K volblocksize, closed loop at saturation (8K 10x the IOPS of 128K) and open loop at
100 IOPS offered (both deliver it). Pooled over the loads, 8K would be 5.5x 128K: an answer at no load."""

import numpy as np
import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.data.sweep_data import Sweep, join_sweeps
from zbench_lib.analysis.stats.tables import compare_table

IOPS = {("saturation", 8192): 1000.0, ("saturation", 131072): 100.0, ("100iops", 8192): 100.0,
        ("100iops", 131072): 100.0}


def _rows(loads=("saturation", "100iops"), sweep="s1") -> pd.DataFrame:
    rows = []
    for (load, vbs), iops in IOPS.items():
        if load not in loads:
            continue
        for rep, wiggle in enumerate((0.99, 1.0, 1.01)):
            rows.append({"sweep_id": sweep, "workload": "randread", "direction": "read", "layout": "mirror",
                         "volblocksize_bytes": vbs, "load": load, "config_id": f"{sweep}-{vbs}-{load}",
                         "run_id": f"{sweep}-{vbs}-{load}-r{rep}", "rep": rep + 1, "attempt": 1,
                         "iops": iops * wiggle, "flag_host_contention": False})
    return pd.DataFrame(rows)


def _by_load(cmp: pd.DataFrame) -> dict:
    return {r["load"]: r for _, r in cmp.iterrows()}


@pytest.mark.parametrize("by", [None, ["workload", "direction"]])
def test_levels_meet_the_baseline_at_each_load_never_pooled(by):
    df = _rows()
    cmp = _by_load(compare_table(df, "iops", "volblocksize_bytes", 131072, by=by))
    assert set(cmp) == {"saturation", "100iops"}
    assert cmp["saturation"]["ratio"] == pytest.approx(10.0) and cmp["saturation"]["verdict"] == "higher"
    assert cmp["100iops"]["ratio"] == pytest.approx(1.0) and cmp["100iops"]["verdict"] == "equivalent"
    # what pooling the loads would have said: 8K 5.5x 128K, at no load the sweep measured
    pooled = compare_table(df.assign(load="x"), "iops", "volblocksize_bytes", 131072)
    assert pooled["ratio"].iloc[0] == pytest.approx(5.5)


def test_a_not_judged_cell_at_one_load_leaves_the_other_loads_comparison_alone():
    # 128K's runs at saturation are excluded: the saturation comparison is planned and not judged, the one at
    # 100 IOPS is judged with no note (cells without a plan once pooled the loads: that row took the
    # saturation cell's reason, and the not-judged one vanished)
    df = _rows()
    df.loc[(df["load"] == "saturation") & (df["volblocksize_bytes"] == 131072), "flag_host_contention"] = True
    cells = A.cell_status(df, None)
    cmp = _by_load(compare_table(A.select_admissible(df), "iops", "volblocksize_bytes", 131072, cells=cells))
    assert set(cmp) == {"saturation", "100iops"}
    assert cmp["saturation"]["verdict"] == "not judged" and "3 of 3 runs excluded" in cmp["saturation"]["note"]
    assert cmp["100iops"]["verdict"] == "equivalent" and cmp["100iops"]["note"] == ""


def test_the_conclusions_say_the_load_is_held_equal():
    text = " ".join(A.conclusions_compare(compare_table(_rows(), "iops", "volblocksize_bytes", 131072)))
    assert "The stated load is one of them: a level meets the baseline at the same load only" in text
    plain = " ".join(A.conclusions_compare(compare_table(_rows().drop(columns="load"), "iops",
                                                         "volblocksize_bytes", 131072)))
    assert "stated load" not in plain


def _sweep(rows: pd.DataFrame) -> Sweep:
    return Sweep(path=None, spec={}, provenance={}, results=rows, plan=None, histograms=None)


def test_a_sweep_without_the_factor_pairs_with_the_other_sweeps_saturation_only():
    closed = _rows(loads=("saturation",), sweep="s2").drop(columns="load")
    both = join_sweeps([_sweep(_rows()), _sweep(closed)]).results
    assert set(both.loc[both["sweep_id"] == "s2", "load"]) == {"saturation"}
    cmp = compare_table(both, "iops", "sweep_id", "s2")
    assert cmp["load"].tolist() == ["saturation"] * 2 and cmp["verdict"].eq("equivalent").all()   # 8K, 128K
    # one open-loop level against a closed-loop sweep: nothing to pair, never compared as if alike
    one = join_sweeps([_sweep(_rows(loads=("100iops",))), _sweep(closed)]).results
    assert compare_table(one, "iops", "sweep_id", "s2").empty


def test_sweeps_without_the_factor_are_joined_as_they_were():
    a, b = (_rows(loads=("saturation",), sweep=s).drop(columns="load") for s in ("s1", "s2"))
    assert "load" not in join_sweeps([_sweep(a), _sweep(b)]).results
    assert np.isfinite(compare_table(join_sweeps([_sweep(a), _sweep(b)]).results, "iops", "sweep_id",
                                     "s2")["ratio"]).all()
