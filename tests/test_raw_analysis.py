"""Raw rows in the analysis (SYNTHETIC tables, made up for the mechanics only): a sweep with the
bare disks beside ZFS layouts compares along layout against the disks, scales, overlays the
N-disk envelope and leaves raw rows out of the space model, though their ZFS columns are empty."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import yaml

from zbench_lib import analysis as A
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.analysis.data.synthetic import DISK_IOPS, synthetic_results


def mixed() -> pd.DataFrame:
    """Stripe and mirror of 4 disks (random 4k reads, 16k blocks) beside raw rows of the same 4 disks."""
    zfs = synthetic_results(400, seed=3)
    zfs = zfs[(zfs["total_disks"] == 4) & zfs["layout"].isin(["stripe", "mirror"])
              & (zfs["workload"] == "randread-4k")].copy()
    zfs["flagged"] = False
    raw = zfs[zfs["layout"] == "stripe"].copy()
    raw["layout"], raw["width"], raw["vdevs"], raw["data_disks"] = "raw", 4, 1, 4
    for col in ("volblocksize_bytes", "ashift", "compression", "sync", "logbias", "primarycache",
                "pool_read_bytes", "pool_write_bytes", "used_bytes", "logicalused_bytes", "referenced_bytes",
                "compressratio", "pool_capacity_pct", "pool_fragmentation_pct"):
        raw[col] = None                    # what a raw cell leaves empty: no pool, no zvol
    raw["iops"] = np.random.default_rng(1).normal(4 * DISK_IOPS, 10, len(raw))
    raw["surface"] = "raw"
    raw["run_id"] = "raw-" + raw["run_id"]
    return pd.concat([zfs, raw], ignore_index=True)


def test_the_default_comparison_is_along_layout_against_the_bare_disks():
    df = mixed()
    assert A.auto_factor(df) == "layout" and A.auto_baseline(df, "layout") == "raw"
    assert A.auto_baseline(df[df["layout"] != "raw"], "layout") == "stripe"    # without raw: as before
    assert "volblocksize_bytes" not in A.varying_columns(df)    # empty on raw rows is not a level


def test_zfs_layouts_are_compared_with_the_disks_at_equal_total_disks():
    df = mixed()
    out = A.compare_table(df, "iops", "layout", "raw")
    assert sorted(out["level"]) == ["mirror", "stripe"] and set(out["baseline"]) == {"raw"}
    assert (out["note"] == "").all() and out["comparison"].iloc[0] == "equal total disks"
    stripe = out.set_index("level").loc["stripe"]
    assert 0.5 < stripe["ratio"] < 1.5 and stripe["n_level"] >= 2 and stripe["n_baseline"] >= 2


def test_scaling_and_the_envelope_model_take_raw_rows():
    s = A.scaling_table(mixed(), "iops").set_index("layout")
    assert sorted(s.index) == ["mirror", "raw", "stripe"]
    # the envelope of 4 bare disks is 4 x one disk: one disk's worth per disk, like a stripe's
    assert s.loc["raw", "model_per_disk"] == s.loc["stripe", "model_per_disk"] == DISK_IOPS
    assert math.isclose(s.loc["raw", "mean"], 4 * DISK_IOPS, rel_tol=0.05)
    assert s.loc["raw", "data_disks"] == 4 and s.loc["raw", "width"] == 4 and s.loc["raw", "vdevs"] == 1
    by = [c for c in ("layout", "workload", "direction") if c in mixed()]
    assert set(summary(mixed(), "iops", by)["layout"]) == {"raw", "stripe", "mirror"}


def test_the_space_model_leaves_raw_rows_out():
    sc = A.space_check(mixed())
    assert set(sc["layout"]) == {"stripe", "mirror"} and sc["predicted_used_ratio"].notna().all()


def test_loading_fills_the_surface_of_zfs_rows_with_the_specs(tmp_path):
    df = mixed()
    df.loc[df["layout"] != "raw", "surface"] = None
    df.to_parquet(tmp_path / "results.parquet", index=False)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({"name": "mixed", "surface": "zvol"}))
    loaded = A.load_sweep(tmp_path).results
    assert loaded.groupby("layout")["surface"].unique().map(list).to_dict() == {
        "mirror": ["zvol"], "raw": ["raw"], "stripe": ["zvol"]}
