"""Descriptive statistics, diagnostics and disk-scaling over the tidy results table.

Every function takes a long DataFrame (one row per run × direction) and column
names, and returns a DataFrame. Spread is across experimental units: runs, or pool
replicates when pools were re-created (`replication.py`, docs/methods.md §6). Intervals
of means are computed on the log scale and never go below zero (§1). The comparison
functions live in `compare.py` and are re-exported here.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
from scipy import stats as sps

from zbench_lib.analysis.stats.ratio import log_ratio_moments, ratio_ci_from_moments
from zbench_lib.analysis.data.metrics import AUTO, metric_parts
from zbench_lib.analysis.data.replication import pool_replicates, to_units
from zbench_lib.core.errors import ConfigError

COV_WARNING = 0.10      # CoV at or above this is flagged
RANGE_WARNING = 0.50    # min or max further than this fraction from the mean is flagged


def _as_list(by) -> list:
    return [by] if isinstance(by, str) else list(by or [])


def _t_halfwidth(std, n, conf=0.95):
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = sps.t.ppf((1 + conf) / 2, np.where(n > 1, n - 1, np.nan))
        return t * np.asarray(std, dtype=float) / np.sqrt(n)


def mean_ci(mean, std, n, conf=0.95):
    """t interval of a mean on the log scale: mean · exp(± t(n−1) · (std/mean) / sqrt(n)).

    The delta-method interval of ln(mean) (docs/methods.md §1), so a rate's interval never
    goes below zero. A mean <= 0 falls back to the symmetric interval mean ± t·std/sqrt(n).
    """
    mean, std = np.asarray(mean, dtype=float), np.asarray(std, dtype=float)
    half = _t_halfwidth(std, n, conf)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_half = half / mean
        pos = mean > 0
        low = np.where(pos, mean * np.exp(-log_half), mean - half)
        high = np.where(pos, mean * np.exp(log_half), mean + half)
    return low, high


def summary(df: pd.DataFrame, metric: str, by, unit: str = "auto", conf: float = 0.95) -> pd.DataFrame:
    """Per-group n, mean, SD, CoV, median, MAD, min/max and the 95% CI of the mean.

    `metric` "auto" summarises each workload in its own metric (`metrics.judged_metrics`, methods §9),
    named in a `metric` column.

    `unit` 'auto' averages each pool replicate's runs first when any group has runs from
    two or more pool replicates (then n counts pools); else n counts runs, and
    `conditional_on_pool` says the interval holds for that one pool only. `n_runs` and
    `n_pools` are always given. The CI is `mean_ci` (log scale). `mad` is the raw median
    absolute deviation (not scaled by 1.4826). Diagnostic flags: `cov_warning` (CoV >= 10%)
    and `range_warning` (min or max beyond ±50% of the mean). `rel_ci_halfwidth` is half
    the CI's width over the mean. `runs_missing` counts the group's runs without a value of
    `metric` (a latency percentile their I/Os cannot support, methods §18): they are not in n,
    and the count says so. A percentile is better summarised by `tails.cell_tails`, which names
    the units it could not use and never averages percentiles.

    Examples
    --------
    >>> df = pd.DataFrame({"layout": ["mirror"] * 3, "iops": [100.0, 110.0, 90.0]})
    >>> s = summary(df, "iops", "layout")
    >>> s[["n", "mean", "std", "cov_warning", "unit"]].to_dict("records")
    [{'n': 3, 'mean': 100.0, 'std': 10.0, 'cov_warning': True, 'unit': 'run'}]
    >>> round(float(s.loc[0, "ci95_low"]), 2), round(float(s.loc[0, "ci95_high"]), 2)
    (78.0, 128.2)
    """
    if metric == AUTO:
        parts = [summary(d, m, by, unit, conf).assign(metric=m) for m, d in metric_parts(df) if len(d)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    by = _as_list(by)
    d = df.dropna(subset=[metric])
    keys = by or ["_all"]
    u, unit = to_units(d.assign(_all=0) if not by else d, metric, keys, unit)
    g = u.groupby(keys, sort=True, dropna=False)[metric]
    out = g.agg(n="count", mean="mean", std="std", median="median", min="min", max="max")
    out["mad"] = g.agg(lambda v: sps.median_abs_deviation(v, scale=1.0))
    out["cov"] = out["std"] / out["mean"]
    out["ci95_low"], out["ci95_high"] = mean_ci(out["mean"], out["std"], out["n"], conf)
    out["rel_ci_halfwidth"] = (out["ci95_high"] - out["ci95_low"]) / 2 / out["mean"].abs()
    out["cov_warning"] = out["cov"].abs() >= COV_WARNING
    out["range_warning"] = ((out["min"] < out["mean"] * (1 - RANGE_WARNING))
                            | (out["max"] > out["mean"] * (1 + RANGE_WARNING)))
    out["unit"] = unit
    out["n_runs"] = u.groupby(keys, sort=True, dropna=False)["n_runs"].sum()
    pools = pool_replicates(d.assign(_all=0) if not by else d, keys).set_index(keys)["n_pools"]
    out["n_pools"] = pools.reindex(out.index).to_numpy()
    out["conditional_on_pool"] = out["n_pools"] < 2
    gone = df[df[metric].isna()].assign(_all=0) if not by else df[df[metric].isna()]
    out["runs_missing"] = gone.groupby(keys, sort=True, dropna=False).size().reindex(out.index, fill_value=0) \
        if len(gone) else 0
    out = out[["n", "mean", "std", "cov", "median", "mad", "min", "max", "ci95_low", "ci95_high",
               "rel_ci_halfwidth", "cov_warning", "range_warning", "unit", "n_runs", "n_pools",
               "conditional_on_pool", "runs_missing"]].reset_index()
    return out.drop(columns="_all", errors="ignore")


def flag_outliers(df: pd.DataFrame, metric: str, by, k: float = 1.5,
                  column: str = "outlier") -> pd.DataFrame:
    """Copy of `df` with a boolean Tukey-outlier column; every row is kept.

    Fences are Q1 − k·IQR and Q3 + k·IQR per group (quartiles by linear interpolation,
    R's type 7).

    Examples
    --------
    >>> df = pd.DataFrame({"cfg": ["a"] * 6, "iops": [100, 101, 99, 100, 102, 150]})
    >>> flag_outliers(df, "iops", "cfg")["outlier"].tolist()
    [False, False, False, False, False, True]
    """
    by = _as_list(by)
    out = df.copy()
    g = out.groupby(by, sort=False, dropna=False)[metric] if by else out[metric].groupby(lambda _: 0)
    q1 = g.transform(lambda v: v.quantile(0.25))
    q3 = g.transform(lambda v: v.quantile(0.75))
    iqr = q3 - q1
    out[column] = (out[metric] < q1 - k * iqr) | (out[metric] > q3 + k * iqr)
    return out


def scaling(df: pd.DataFrame, metric: str, by_family: str = "layout", disks_col: str = "data_disks",  # noqa: PLR0913 (the notebooks' API: keyword options)
            baseline: pd.DataFrame | None = None, by=None, config_cols=("width", "vdevs"),
            conf: float = 0.95, unit: str = "auto") -> pd.DataFrame:
    """Per-data-disk metric and scaling against the smallest configuration of each family.

    Scaling S = T(D)/T(D0) with a delta-method CI that includes the baseline's noise;
    efficiency E = S / (D/D0), ideal 1; `log_se` and `welch_df` are the standard error and Welch
    df of ln S (and of ln E), for an interval at another level (`linearity`, methods §10).
    `baseline`, if given, is a table of runs (e.g. a measured single disk) with `metric`,
    `disks_col` and optionally some `by` columns to match on; it is used for every family. `by`
    holds further grouping columns (workload, direction, volblocksize_bytes...). Configurations are told apart by
    `by_family`, `disks_col` and whichever `config_cols` are present. The baseline row
    compared with itself gets S = 1 with a zero-width interval. `unit` as in `summary`
    (the baseline table uses the unit chosen for `df`); n and baseline_n count units.

    Examples
    --------
    >>> df = pd.DataFrame({"layout": ["stripe"] * 6, "data_disks": [1, 1, 1, 2, 2, 2],
    ...                    "iops": [100, 102, 98, 190, 195, 185]})
    >>> s = scaling(df, "iops")
    >>> s[["data_disks", "per_disk_mean", "scaling", "efficiency"]].round(3).to_dict("records")[1]
    {'data_disks': 2, 'per_disk_mean': 95.0, 'scaling': 1.9, 'efficiency': 0.95}
    """
    by = _as_list(by)
    cfg = [c for c in config_cols if c in df.columns and c not in (by_family, disks_col)]
    keys = by + [by_family, disks_col] + cfg
    s = summary(df, metric, keys, unit, conf)
    unit = s["unit"].iloc[0] if len(s) else "run"
    s = s[keys + ["n", "mean", "std", "ci95_low", "ci95_high", "unit", "n_runs", "n_pools"]]
    s["per_disk_mean"] = s["mean"] / s[disks_col]
    s["per_disk_std"] = s["std"] / s[disks_col]
    s["per_disk_ci_low"] = s.pop("ci95_low") / s[disks_col]
    s["per_disk_ci_high"] = s.pop("ci95_high") / s[disks_col]
    if baseline is None:
        fam = by + [by_family]
        first = s.sort_values(disks_col).groupby(fam, dropna=False)
        ties = s.merge(first[disks_col].min().rename("_d0").reset_index(), on=fam)
        if (ties[disks_col] == ties["_d0"]).sum() != first.ngroups:
            raise ConfigError("scaling: several configurations share the smallest data-disk count "
                              "of a family; pass an explicit baseline")
        base = first.head(1)[fam + [disks_col, "n", "mean", "std"]]
        on = fam
    else:
        on = [c for c in by if c in baseline.columns]
        base = summary(baseline, metric, on + [disks_col], unit, conf)
        if (base.duplicated(on).any() if on else len(base) > 1):
            raise ConfigError("scaling: baseline has several data-disk counts for one group")
        base = base[on + [disks_col, "n", "mean", "std"]]
    base = base.rename(columns={disks_col: "baseline_disks", "n": "baseline_n",
                                "mean": "baseline_mean", "std": "baseline_std"})
    s = s.merge(base, on=on, how="left") if on else s.merge(base, how="cross")
    with np.errstate(invalid="ignore"):
        r, lo, hi, _ = (np.asarray(v, dtype=float) for v in ratio_ci_from_moments(
            s["mean"], s["std"], s["n"], s["baseline_mean"], s["baseline_std"], s["baseline_n"], conf))
        _, se, welch = log_ratio_moments(s["mean"], s["std"], s["n"], s["baseline_mean"], s["baseline_std"],
                                         s["baseline_n"])
    is_self = (baseline is None) & (s[disks_col] == s["baseline_disks"]).to_numpy()
    r, lo, hi = np.where(is_self, 1.0, r), np.where(is_self, 1.0, lo), np.where(is_self, 1.0, hi)
    s["ideal_scaling"] = s[disks_col] / s["baseline_disks"]
    s["scaling"], s["scaling_ci_low"], s["scaling_ci_high"] = r, lo, hi
    # ln E = ln S − ln(D/D0): the SE and df of the ratio's log, from which any level's interval follows
    s["log_se"], s["welch_df"] = np.where(is_self, np.nan, se), np.where(is_self, np.nan, welch)
    for c in ("", "_ci_low", "_ci_high"):
        s["efficiency" + c] = s["scaling" + c] / s["ideal_scaling"]
    return s.sort_values(by + [by_family, disks_col]).reset_index(drop=True)

