"""The experimental unit: a pool replicate when pools were re-created, else a run (methods §6).

A pool destroyed and created again is a new experimental unit; reruns on one pool are
subsamples of it. Results rows carry `pool_id` and `pool_replicate` (1..R); a dataset
without them holds one pool per configuration. With 2 or more pool replicates of a
configuration, statistics run on the mean of each replicate (n = pools); with one pool
they run on runs and are conditional on that pool.
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.core.errors import ConfigError

POOL_KEYS = ("pool_id", "pool_replicate")
UNITS = ("auto", "pool", "run")
ONE_POOL_NOTE = ("intervals are conditional on one pool per configuration: reruns on one pool are "
                 "subsamples, so they measure rerun noise, not the layout (docs/methods.md §6)")
POOL_LEVEL_NOTE = ("statistics at pool level: each pool replicate's runs are averaged first, and n "
                   "counts pool replicates (docs/methods.md §6)")


def _as_list(by) -> list:
    return [by] if isinstance(by, str) else list(by or [])


def pool_frame(df: pd.DataFrame) -> pd.DataFrame:
    """pool_id and pool_replicate for every row; absent columns or values mean one pool."""
    out = pd.DataFrame(index=df.index)
    out["pool_id"] = df["pool_id"].fillna("pool").astype(str) if "pool_id" in df else "pool"
    out["pool_replicate"] = (pd.to_numeric(df["pool_replicate"], errors="coerce").fillna(1).astype(int)
                             if "pool_replicate" in df else 1)
    return out


def pool_replicates(df: pd.DataFrame, by) -> pd.DataFrame:
    """Number of distinct pool replicates (`n_pools`) per group of `by`."""
    by = _as_list(by)
    d = pd.concat([df[by].reset_index(drop=True), pool_frame(df).reset_index(drop=True)], axis=1)
    if not by:
        return pd.DataFrame({"n_pools": [len(d.drop_duplicates())]})
    return d.drop_duplicates().groupby(by, dropna=False).size().rename("n_pools").reset_index()


def resolve_unit(df: pd.DataFrame, by, unit: str = "auto") -> str:
    """'pool' or 'run'. auto: 'pool' when any configuration has runs from >= 2 pool replicates."""
    if unit not in UNITS:
        raise ConfigError(f"unit must be one of {UNITS}, got {unit!r}")
    if unit != "auto":
        return unit
    if df.empty:
        return "run"
    return "pool" if (pool_replicates(df, by)["n_pools"] >= 2).any() else "run"


def to_units(df: pd.DataFrame, metric: str, by, unit: str = "auto") -> tuple[pd.DataFrame, str]:
    """One row per experimental unit: `by`, `metric` (the unit's value) and `n_runs`.

    unit 'run' keeps every run (n_runs 1); 'pool' averages the runs of each pool replicate
    first (n_runs: how many). See `resolve_unit` for 'auto'.

    Examples
    --------
    >>> df = pd.DataFrame({"layout": ["mirror"] * 4, "pool_replicate": [1, 1, 2, 2],
    ...                    "iops": [100.0, 102.0, 90.0, 92.0]})
    >>> u, unit = to_units(df, "iops", "layout")
    >>> unit, u["iops"].tolist(), u["n_runs"].tolist()
    ('pool', [101.0, 91.0], [2, 2])
    """
    by = _as_list(by)
    unit = resolve_unit(df, by, unit)
    d = df.dropna(subset=[metric])
    if unit == "run":
        out = d[by + [metric]].assign(n_runs=1)
        return out.reset_index(drop=True), unit
    pools = pool_frame(d)
    d = d[by + [metric]].assign(**{f"_{k}": pools[k] for k in POOL_KEYS})
    g = d.groupby(by + [f"_{k}" for k in POOL_KEYS], dropna=False, sort=True)[metric]
    out = g.agg(["mean", "count"]).reset_index().rename(columns={"mean": metric, "count": "n_runs"})
    return out[by + [metric, "n_runs"]], unit
