"""Which factor a single sweep's comparison takes by default, and against which level.

The OpenZFS release, else the layout, else the first other factor that varies, in the order
below (the questions users ask most first; queue depth, a setting of the workload, last); the
baseline is ZFS's default where the factor has one (sync=standard, fs none, access local), the
bare disks where a sweep has them (layout raw), else the first level (layouts in their usual
order, numbers smallest first).
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.analysis.figures.plot_base import LAYOUT_ORDER
from zbench_lib.analysis.data.sweep_data import MODULE_PARAM_COLUMNS

COMPARE_ORDER = ("zfs", "layout", "sync", "log", "log_mirror", "cache", "special", "special_small_blocks",
                 "model", "log_model", "cache_model", "special_model", "fs", "access", "fill", "logbias",
                 "compression", "primarycache", "secondarycache", "checksum", "copies", "atime",
                 *MODULE_PARAM_COLUMNS, "iodepth", "numjobs")     # depth last: a workload setting, not the pool's
# raw: ZFS layouts beside the bare disks are read as a share of what the disks give
BASE_LEVEL = {"sync": "standard", "logbias": "latency", "fs": "none", "access": "local", "fill": "whole",
              "layout": "raw"}


WORKLOAD_SETTINGS = ("iodepth", "numjobs")


def _varies(df: pd.DataFrame, column: str) -> bool:
    # A workload's own depth differs between workloads (8 for random reads, 4 for sequential):
    # depth is a factor only where it varies within one workload.
    if column in WORKLOAD_SETTINGS and "workload" in df:
        return bool((df.groupby("workload")[column].nunique() > 1).any())
    return df[column].nunique() > 1


def auto_factor(df: pd.DataFrame) -> str | None:
    """The first factor of COMPARE_ORDER that takes two or more values in `df` (None: none does)."""
    return next((c for c in COMPARE_ORDER if c in df and _varies(df, c)), None)


def auto_baseline(df: pd.DataFrame, factor: str):
    # plain Python values: a numpy scalar printed as np.int64(1) in the notebook's heading
    levels = [v.item() if hasattr(v, "item") else v for v in df[factor].dropna().unique()]
    if BASE_LEVEL.get(factor) in levels:
        return BASE_LEVEL[factor]

    def key(v):
        if v in LAYOUT_ORDER:
            return (0, LAYOUT_ORDER.index(v), "")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (1, float(v), "")
        return (2, 0.0, str(v))
    return sorted(levels, key=key)[0]
