"""Unit tests of the notebook helpers, on hand-made tables and SYNTHETIC data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib.analysis.claims.conclusions import _p
from zbench_lib import analysis as A
from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs import families
from zbench_lib.analysis.data.synthetic import COLUMNS, synthetic_results, write_synthetic_sweep
from zbench_lib.analysis.claims.wording import ci_text


def _runs(layout, disks, values, **extra):
    width, vdevs = (2, disks // 2) if layout == "mirror" else (disks, 1)
    dd = families.get(layout).data_disks_of(width, vdevs)
    return pd.DataFrame(dict(layout=layout, width=width, vdevs=vdevs, data_disks=dd, total_disks=disks,
                             workload="randread-4k", direction="read", rep=range(1, len(values) + 1),
                             iops=values, flagged=False, **extra))


def test_synthetic_table_is_labelled_and_shaped():
    df = synthetic_results(1234, seed=3)
    assert len(df) == 1234 and list(df.columns) == list(COLUMNS)
    assert df["synthetic"].all() and df["sweep_id"].str.startswith("SYNTHETIC").all()
    invalidating = ["flag_cache_served", "flag_no_device_io", "flag_background_work", "flag_compressible_data",
                    "flag_emulation_bound"]                   # flag_not_steady describes a run: it is kept
    assert (df["flagged"] == df[invalidating].any(axis=1)).all() and df["flag_not_steady"].any()
    assert synthetic_results(50, seed=3).equals(synthetic_results(50, seed=3))


def test_load_sweep_reads_store_and_csv_fallback(tmp_path):
    p = write_synthetic_sweep(tmp_path / "s", n_rows=200)
    sw = A.load_sweep(p)
    assert sw.spec["surface"] == "zvol" and "question" in sw.spec and sw.provenance["synthetic"]
    assert len(sw.results) == 200
    df = sw.results.drop(columns=["flagged"])
    (p / "results.parquet").unlink()
    df.to_csv(p / "results.csv", index=False)
    again = A.load_sweep(p).results
    assert (again["flagged"] == sw.results["flagged"]).all()      # rebuilt from the flag_ columns
    with pytest.raises(ConfigError, match="does not exist"):
        A.load_sweep(tmp_path / "missing")


def test_truth_summary_counts_runs_per_flag():
    df = pd.DataFrame(dict(run_id=["a", "a", "b", "c"], flag_host_contention=[True, True, False, False],
                           flag_cache_served=[False, False, True, False]))
    df["flagged"] = df.filter(like="flag_").any(axis=1)
    t = A.truth_summary(df).set_index("flag")
    assert t.loc["flag_host_contention", ["raised", "passed", "not_judged", "runs"]].tolist() == [1, 2, 0, 3]
    assert t.loc["flagged", "raised"] == 2 and t.loc["flagged", "share_raised"] == pytest.approx(2 / 3)
    assert A.flagged_runs(df)["flags"].tolist() == ["host_contention", "host_contention", "cache_served"]
    assert len(A.select_admissible(df)) == 1 and len(A.select_admissible(df, include_flagged=True)) == 4


def test_environment_table_flattens():
    t = A.environment_table({"kernel": "6.1", "zfs": {"version": "2.3.1"}, "disks": ["a", "b"]})
    assert sorted(t.values.tolist()) == [["disks", "a, b"], ["kernel", "6.1"], ["zfs.version", "2.3.1"]]


def test_varying_columns_drop_determined_ones():
    df = pd.DataFrame(dict(workload=["r", "r", "w", "w"], bs_bytes=[4096, 4096, 8192, 8192],
                           layout=["mirror", "raidz1"] * 2, ashift=12))
    assert A.varying_columns(df) == ["workload", "layout"]


def test_parse_level_sizes_and_names():
    df = pd.DataFrame(dict(volblocksize_bytes=[8192, 16384], layout=["mirror", "raidz2"]))
    assert A.parse_level(df, "volblocksize_bytes", "16k") == 16384
    assert A.parse_level(df, "layout", "raidz2") == "raidz2"
    with pytest.raises(ConfigError, match=r"levels are \['16K', '8K'\]|levels are \['8K', '16K'\]"):
        A.parse_level(df, "volblocksize_bytes", "128k")


def test_scaling_conclusion_numbers_come_from_the_table():
    df = pd.concat([_runs("raidz2", 4, [150, 152, 148, 151, 149]), _runs("raidz2", 6, [160, 165, 158, 162, 161]),
                    _runs("mirror", 2, [300, 305, 295]), _runs("mirror", 4, [600, 610, 590])])
    df["disk_model_iops"] = 150.0
    df["volblocksize_bytes"] = 16384
    s = A.scaling_table(df, "iops")
    r = s[(s.layout == "raidz2") & (s.data_disks == 4)].iloc[0]
    assert r["scaling"] == pytest.approx(161.2 / 150.0)
    assert r["efficiency"] == pytest.approx(161.2 / 150.0 / 2)
    assert r["disk_equivalents_per_vdev"] == pytest.approx(161.2 / 150)
    # 16K on raidz2 of 6 spans all 4 data columns: 150 · 6/4 for the vdev, over 4 data disks
    assert r["model_per_disk"] == pytest.approx(150 * 6 / 4 / 4)
    text = A.conclusions_scaling(s, "iops")
    rz = [t for t in text if t.startswith("raidz2")][0]
    assert f"efficiency {r['efficiency']:.2f} (95% CI {r['efficiency_ci_low']:.2f}–{r['efficiency_ci_high']:.2f}; " \
        "deciding: " in rz and any("family's one level, Holm-adjusted" in t for t in text)   # said once
    assert "below linear" in rz and "1.1 single disks" in rz
    assert "close to linear" in [t for t in text if t.startswith("mirror")][0]


def test_scaling_verdict_says_when_it_cannot_judge():
    # mirror 2 -> 4 data disks: one run at the top (no CI), or a CI wide enough to hold linear
    single = pd.concat([_runs("mirror", 2, [300, 305, 295]), _runs("mirror", 4, [590])])
    text = A.conclusions_scaling(A.scaling_table(single.assign(volblocksize_bytes=16384), "iops"), "iops")
    assert text[0].endswith("at 2 data disks: not judged: 1 admissible run (a CI needs 2).") and "nan" not in text[0]
    assert "conditional on one pool" in text[-1]
    base1 = pd.concat([_runs("mirror", 2, [300]), _runs("mirror", 4, [590, 600, 610])])
    text = A.conclusions_scaling(A.scaling_table(base1.assign(volblocksize_bytes=16384), "iops"), "iops")
    assert text[0].endswith("at 1 data disks: not judged: 1 admissible run (a CI needs 2).")
    assert text[1].endswith("not judged: no CI (a single admissible run at one end).") and "nan" not in text[1]
    wide = pd.concat([_runs("mirror", 2, [300, 150, 450]), _runs("mirror", 4, [900, 500, 1300])])
    text = A.conclusions_scaling(A.scaling_table(wide.assign(volblocksize_bytes=16384), "iops"), "iops")[0]
    assert "too uncertain to call" in text and "below linear" not in text


def test_compare_table_adds_tost_and_conclusions_follow_it():
    rng = np.random.default_rng(0)
    a = 100 + rng.normal(0, 0.5, 6)
    b = 100 + rng.normal(0, 0.5, 6)
    c = 130 + rng.normal(0, 0.5, 6)
    d = 101 + rng.normal(0, 8, 3)
    df = pd.concat([_runs("mirror", 4, a, vbs=1), _runs("raidz1", 4, b, vbs=1), _runs("raidz2", 4, c, vbs=1),
                    _runs("stripe", 4, d, vbs=1)])
    # mirror of 4 has 2 data disks, raidz1 of 4 three, stripe of 4 four: at equal data disks only
    # raidz2 of 4 (2 data disks) compares with the mirror; "equal total disks" compares them all
    eq_data = A.compare_table(df, "iops", "layout", "mirror", margin=0.05, disks="data")
    assert eq_data["level"].tolist() == ["raidz2"] and (eq_data["comparison"] == "equal data disks").all()
    cmp = A.compare_table(df, "iops", "layout", "mirror", margin=0.05, disks="total").set_index("level")
    assert (cmp["comparison"] == "equal total disks").all()
    # reference: scipy.stats.ttest_ind_from_stats on (ln mean, SD/mean, n) of each side, Welch
    ref = sps.ttest_ind_from_stats(np.log(b.mean()), b.std(ddof=1) / b.mean(), 6,
                                   np.log(a.mean()), a.std(ddof=1) / a.mean(), 6, equal_var=False).pvalue
    assert cmp.loc["raidz1", "p"] == pytest.approx(ref)
    assert bool(cmp.loc["raidz1", "equivalent"]) and not bool(cmp.loc["raidz2", "equivalent"])
    text = {t.split(" vs")[0]: t for t in A.conclusions_compare(cmp.reset_index(), "iops")}
    assert "Each comparison holds every other varying factor equal, at equal total disks." in text
    assert "no meaningful difference (equivalent within ±5%" in text["layout=raidz1"]
    assert "higher than mirror, significant after Holm correction" in text["layout=raidz2"]
    assert "inconclusive" in text["layout=stripe"] and "no meaningful difference" not in text["layout=stripe"]
    assert f"ratio {cmp.loc['raidz2', 'ratio']:.2f}" in text["layout=raidz2"]
    assert not any("Mann–Whitney U is not reported" in t for t in text.values())    # 6 vs 6, 3 vs 6 can
    small = pd.concat([_runs("mirror", 4, a[:3]), _runs("raidz1", 4, c[:3])])
    lines = A.conclusions_compare(A.compare_table(small, "iops", "layout", "mirror", disks="total"))
    assert any("Mann–Whitney U is not reported for 1" in t for t in lines)


def test_space_check_and_volblocksize_conclusions():
    df = synthetic_results(800, seed=4, shape="volblocksize")
    space = A.space_check(df).set_index(["layout", "volblocksize_bytes"])
    # raidz2 of 6 at ashift 12: 8K allocates 6 sectors for 2 of data (33%), charged 2x deflated
    assert space.loc[("raidz2", 8192), "space_efficiency"] == pytest.approx(1 / 3)
    assert abs(space["rel_error"]).max() < 0.02
    cmp = A.compare_table(df, "iops", "volblocksize_bytes", 16384)
    cmp99 = A.compare_table(df, "lat_p99_ns", "volblocksize_bytes", 16384)
    text = A.conclusions_volblocksize(cmp, cmp99, space.reset_index(), "iops")
    best = [t for t in text if t.startswith("randwrite write raidz2")][0]
    assert "4K gives" in best and "the p99 latency" in best and "Holm p" in best
    assert any(t.startswith("raidz2 of 6 at 8K: the allocation model predicts 33%") for t in text)


def test_sweep_spec_written_by_synthetic_is_plain_yaml(tmp_path):
    p = write_synthetic_sweep(tmp_path / "s", n_rows=20)
    assert json.loads((p / "provenance.json").read_text())["synthetic"] is True
    assert "SYNTHETIC" in (p / "spec.yaml").read_text()


def test_single_run_sides_are_not_judged():
    # raidz1 of 6 at three block sizes; only one admissible run at 4K (the others were flagged)
    df = pd.concat([_runs("raidz1", 6, [560], volblocksize_bytes=4096),
                    _runs("raidz1", 6, [106, 107, 107], volblocksize_bytes=16384),
                    _runs("raidz1", 6, [117, 118, 116], volblocksize_bytes=131072)])
    cmp = A.compare_table(df, "iops", "volblocksize_bytes", 16384)
    text = A.conclusions_volblocksize(cmp, None, None, "iops")
    assert any("4K not judged against 16K: n 1 vs 3 admissible runs" in t for t in text)
    assert not any("4K gives" in t for t in text)     # the single 560 does not win by default
    r = cmp.iloc[-1]
    # p to what 3 against 3 runs support, intervals with the decimals they need (claims/wording.py)
    # the interval printed is the one that decided (methods §3.1): 4K has no p, so 128K is a family of one
    assert r["family_size"] == 1 and r["decided_low"] == pytest.approx(r["ratio_ci_low"])
    assert any(t.endswith(f"128K gives 1.10x the IOPS of 16K (deciding: "
                          f"{ci_text(r['ratio_ci_low'], r['ratio_ci_high'], 2)}, "
                          f"Holm p {_p(r['holm_p'], r)}).") for t in text), text
    lines = A.conclusions_compare(cmp, "iops")
    assert any("=4K vs 16K" in t and "not judged (n 1 vs 3 admissible runs; a CI needs at least 2 runs a side)" in t
               for t in lines)
    assert not any("nan" in t for t in lines + text)


def test_two_vdev_raidz_scales_in_its_own_family():
    # raidz1 of 2 and 3 disks (1 vdev), and two raidz1 vdevs of 2: the 3-wide vdev and the two
    # 2-wide vdevs both hold 2 data disks; each must scale against its own smallest configuration.
    rows = [dict(workload="randread", layout="raidz1", width=w, vdevs=v, data_disks=(w - 1) * v, rep=r, iops=i + r)
            for w, v, i in ((2, 1, 100), (3, 1, 130), (2, 2, 200), (3, 2, 260)) for r in range(3)]
    df = pd.DataFrame(rows)
    from zbench_lib.analysis.stats.tables import scaling_family
    assert list(scaling_family(df).unique()) == ["raidz1", "2x raidz1"]
    s = A.scaling_table(df, "iops").set_index(["family", "data_disks"])
    assert s.loc[("raidz1", 2), "scaling"] == pytest.approx(131 / 101)
    assert s.loc[("2x raidz1", 4), "scaling"] == pytest.approx(261 / 201)
    assert s.loc[("2x raidz1", 4), "baseline_disks"] == 2 and s.loc[("2x raidz1", 4), "ideal_scaling"] == 2
    text = " ".join(A.conclusions_scaling(s.reset_index(), "iops"))
    assert "2x raidz1 randread: IOPS grows 1.30x from 2 to 4 data disks" in text
    mirrors = pd.DataFrame([dict(layout="mirror", width=2, vdevs=v, data_disks=v) for v in (1, 2)])
    assert list(scaling_family(mirrors)) == ["mirror", "mirror"]      # mirrors scale by adding vdevs
