"""The tables of the analysis notebooks: comparisons along a factor, scaling, space."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from zbench_lib.analysis.stats import compare, scaling, tost
from zbench_lib.analysis.sweep_data import LAYOUT_COLUMNS, varying_columns
from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.models import predicted_random_read_iops, space_efficiency, zfs_charged_bytes


def compare_table(df, metric: str, factor: str, baseline, by=None, margin: float = 0.05,
                  alpha: float = 0.05, family=None) -> pd.DataFrame:
    """`stats.compare` plus a TOST column set (equivalence within ±margin) per comparison."""
    by = varying_columns(df, exclude=(factor,) + (LAYOUT_COLUMNS[1:] if factor == "layout" else ())) \
        if by is None else list(by)
    if family is None:
        family = [c for c in ("workload", "direction") if c in by]
    out = compare(df, metric, factor, baseline, by=by, alpha=alpha, family=family or None)
    if out.empty:
        return out
    groups = df.groupby(by + [factor], dropna=False)[metric]
    res = []
    for _, r in out.iterrows():
        a, b = (groups.get_group(tuple(r[c] for c in by) + (r[k],)) for k in ("level", "baseline"))
        ok = a.count() > 1 and b.count() > 1               # TOST needs 2 runs a side
        t = tost(a, b, margin, alpha) if ok else None
        res.append((t.low, t.high, t.p, t.equivalent) if t else (math.nan, math.nan, math.nan, False))
    out[["tost_ci90_low", "tost_ci90_high", "tost_p", "equivalent"]] = pd.DataFrame(res, index=out.index)
    out["margin"] = margin
    return out


def block_column(df):
    return "volblocksize_bytes" if "volblocksize_bytes" in df.columns else "recordsize_bytes"


def scaling_table(df: pd.DataFrame, metric: str = "iops") -> pd.DataFrame:
    """`stats.scaling` per workload × direction (× other varying factors), with models.

    Adds `disk_equivalents` (mean over one modelled disk, per vdev in
    `disk_equivalents_per_vdev`) and, for random reads, `model_per_disk`: the
    first-order `predicted_random_read_iops` per data disk.
    """
    by = varying_columns(df, exclude=LAYOUT_COLUMNS + ("sweep_id",))
    by = by or [c for c in ("workload", "direction") if c in df.columns]
    s = scaling(df, metric, by=by)
    single, kind = {"iops": ("disk_model_iops", "rand"), "bw_bytes_s": ("disk_model_bw", "seq")}.get(
        metric, (None, None))
    if single in df.columns and df[single].notna().any() and "workload" in s.columns:
        fits = s["workload"].astype(str).str.contains(kind)     # random IOPS, sequential bandwidth
        s["disk_equivalents"] = (s["mean"] / float(df[single].median())).where(fits)
        s["disk_equivalents_per_vdev"] = s["disk_equivalents"] / s.get("vdevs", 1)
    bcol = block_column(df)
    if metric == "iops" and "disk_model_iops" in df.columns and {"width", "vdevs"} <= set(s.columns):
        blocks = s[bcol] if bcol in s.columns else np.full(len(s), df[bcol].median() if bcol in df else 131072)
        rand = s["workload"].astype(str).str.contains("randread") if "workload" in s else np.ones(len(s), bool)
        disk = float(df["disk_model_iops"].median())
        s["model_per_disk"] = [predicted_random_read_iops(r.layout, int(r.width), int(r.vdevs), disk, int(b))
                               / r.data_disks if ok else math.nan
                               for r, b, ok in zip(s.itertuples(), blocks, rand)]
    return s


def space_check(df: pd.DataFrame, used_col: str = "referenced_bytes", ashift: int | None = None) -> pd.DataFrame:
    """Measured charge per logical byte, per layout × block size, against the raidz allocation model.

    The charge is `referenced` (the blocks the target holds), not `used`: a zvol created
    without -s also counts the unwritten part of its refreservation in `used`, which is a
    promise, not an allocation. `predicted_used_ratio` is what ZFS should charge per
    logical byte (`zfs_charged_bytes`); `space_efficiency` is logical over raw bytes allocated.
    """
    bcol = block_column(df)
    need = {"layout", "width", bcol, used_col, "logicalused_bytes"}
    if not need <= set(df.columns):
        raise ConfigError(f"space check needs columns {sorted(need - set(df.columns))}")
    d = df.assign(_ratio=df[used_col] / df["logicalused_bytes"])
    keys = ["layout", "width", bcol] + (["ashift"] if "ashift" in d.columns else [])
    out = d.groupby(keys)["_ratio"].agg(measured_used_ratio="mean", n="count").reset_index()
    rows = list(zip(out["layout"], out["width"].astype(int), out[bcol].astype(int),
                    out["ashift"].astype(int) if "ashift" in out else [ashift or 12] * len(out)))
    out["predicted_used_ratio"] = [zfs_charged_bytes(b, lay, w, a) / b for lay, w, b, a in rows]
    out["space_efficiency"] = [space_efficiency(lay, w, b, a) for lay, w, b, a in rows]
    out["rel_error"] = out["measured_used_ratio"] / out["predicted_used_ratio"] - 1
    return out


# -- plain-language conclusions -------------------------------------------------------------------
