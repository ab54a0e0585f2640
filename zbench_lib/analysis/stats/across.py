"""Cells of several sweeps side by side (`A.load_sweeps`): two OpenZFS releases, the lab against a
real box, this month against last.

The rows come from `data/catalog.py` (DuckDB over every sweep's results.parquet, admissible first
attempts as in one sweep's analysis); each cell is summarised in its workload's judged metric with
`stats.summary` (the same n, mean and log-scale 95% interval as the analysis notebooks). Sweeps whose
environments differ in something not chosen for comparison are refused in one line
(`catalog.check_comparable`); a chosen one becomes a column of the cells, so they stay apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from zbench_lib.analysis.data.catalog import ENVIRONMENT, check_comparable, environment, load_rows, sweep_dirs
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.core.errors import ConfigError

CELL_STATS = ("metric", "n", "mean", "ci95_low", "ci95_high", "unit")


@dataclass(frozen=True)
class SweepSet:
    """Several sweeps read together."""
    rows: pd.DataFrame           # admissible rows of every sweep, with sweep_id, zfs, disk_model and host
    cells: pd.DataFrame          # one row per sweep and configuration: its judged metric's n, mean, 95% CI
    environments: pd.DataFrame   # one row per sweep: its directory, OpenZFS release(s), disk model(s), host
    by: tuple                    # the configuration columns the cells are grouped by (sweep_id first)

    def side_by_side(self, value: str = "mean") -> pd.DataFrame:
        """The cells with one column per sweep: configurations that several sweeps measured, aligned."""
        keys = [c for c in self.by if c != "sweep_id"] + ["metric"]
        return self.cells.pivot_table(index=keys, columns="sweep_id", values=value, dropna=False,
                                      observed=True).dropna(how="all")


def load_sweeps(paths=None, *, compare=(), allow_mixed: bool = False, where: str | None = None,
                include_flagged: bool = False) -> SweepSet:
    """The sweeps under `paths` (sweep directories, or directories holding sweeps; default: data/examples
    and data/sweeps) side by side.

    `compare` names the environment differences that are the question (any of "zfs", "disk_model",
    "host"); sweeps that differ in another are refused (ConfigError, one line) unless `allow_mixed`.
    `where` filters rows with a DuckDB SQL condition ("layout = 'raidz2' AND volblocksize_bytes = 16384").
    """
    dirs = sweep_dirs(paths)
    if not dirs:
        raise ConfigError(f"load_sweeps: no sweeps (directories with results.parquet) under {paths!r}")
    rows = load_rows(dirs, where=where, include_flagged=include_flagged)
    if rows.empty:
        raise ConfigError(f"load_sweeps: no admissible rows{' where ' + where if where else ''}")
    envs = [environment(d, rows.loc[rows["sweep_dir"] == str(d), "disk_model"].dropna().unique()
                        if "disk_model" in rows else ()) for d in dirs]
    envs = [e for e in envs if (rows["sweep_dir"] == e.sweep_dir).any()]
    check_comparable(envs, compare, allow_mixed)
    by_dir = {e.sweep_dir: e for e in envs}
    # The release a row ran on: its own zfs column when the release was a factor, else its sweep's
    rows["zfs"] = rows["zfs"].astype(object) if "zfs" in rows else None
    rows["zfs"] = rows["zfs"].where(rows["zfs"].notna(), rows["sweep_dir"].map(lambda d: by_dir[d].zfs))
    rows["host"] = rows["sweep_dir"].map(lambda d: by_dir[d].host)
    # Workloads are aligned by what fio ran (template, bs, depth, jobs), not by their names in each spec
    wl = "template" if "template" in rows else "workload"
    by = ["sweep_id", wl] + varying_columns(rows, exclude=("sweep_id", "workload", "template"))
    by += [c for c in ("disk_model", "host") if c in rows and c not in by and rows[c].nunique() > 1]
    table = pd.DataFrame([{"sweep_id": rows.loc[rows["sweep_dir"] == e.sweep_dir, "sweep_id"].iloc[0],
                           **{k: getattr(e, k) for k in ("sweep_dir", *ENVIRONMENT)}} for e in envs])
    return SweepSet(rows, _cells(rows, by), table, tuple(by))


def _cells(rows: pd.DataFrame, by: list) -> pd.DataFrame:
    """Each configuration of each sweep in its workload's judged metric (IOPS, or MiB/s for sequential)."""
    s = summary(rows, "auto", by) if len(rows) else pd.DataFrame()
    return s[[*by, *CELL_STATS]].reset_index(drop=True) if len(s) else pd.DataFrame(columns=[*by, *CELL_STATS])
