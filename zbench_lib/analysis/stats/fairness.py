"""How several clients shared one datastore (issue 30): a row per cell, the aggregate and each client.

A clients run's result row is the clients' aggregate (`measure.client_rows`); clients.parquet has a
row per client and run. Per cell (its configuration, workload and direction, the client count
among them):

- the aggregate IOPS: mean and 95% interval over the cell's runs or pools (`stats.summary`, as
  every IOPS of the report);
- the aggregate p99 from the runs' merged histograms (every client's bins summed), with its
  interval (`tails.cell_tails`, methods §18);
- the clients' shares of the IOPS: the lowest any client got in any run and the highest (a fair
  share is 1 / clients), and their means over runs;
- each client's p99: the median over the cell's runs of that client's own p99 (`p99_<label>_ns`;
  a run where its I/O count did not support one is left out).

Pure: tables in, a table out.
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.analysis.stats.stats import summary
from zbench_lib.analysis.stats.tails import cell_tails

_RUN_KEYS = ["run_id", "attempt", "direction"]


def has_clients(df: pd.DataFrame) -> bool:
    """Whether the rows come from a sweep whose load came from clients."""
    return "clients" in df.columns and bool(df["clients"].notna().any())


def _shares(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    g = rows.groupby(by, dropna=False, sort=True)
    return pd.DataFrame({"share_min": g["client_iops_min_share"].min(), "share_max": g["client_iops_max_share"].max(),
                         "share_min_mean": g["client_iops_min_share"].mean(),
                         "share_max_mean": g["client_iops_max_share"].mean()}).reset_index()


def _client_p99s(rows: pd.DataFrame, clients: pd.DataFrame | None, by: list[str]) -> pd.DataFrame:
    """The median over runs of each client's own p99, a column per client (p99_<label>_ns)."""
    if clients is None or clients.empty:
        return rows[by].drop_duplicates()
    keys = list(dict.fromkeys(by + _RUN_KEYS))         # direction is both a cell's and a run's key
    c = clients.astype({"attempt": int}).merge(rows[keys].astype({"attempt": int}), on=_RUN_KEYS)
    wide = c.groupby(by + ["client"], dropna=False, sort=True)["p99_ns"].median().unstack("client")
    wide.columns = [f"p99_{label}_ns" for label in wide.columns]
    return wide.reset_index()


def fairness_table(rows: pd.DataFrame, clients: pd.DataFrame | None, hist: pd.DataFrame | None,
                   by: list[str]) -> pd.DataFrame:
    """One row per cell of `by` (see the module's text) over the admissible rows `rows` of a clients
    sweep, its clients.parquet `clients` and its latency_hist.parquet `hist`."""
    rows = rows[rows["clients"].notna()].copy()
    if "attempt" not in rows:
        rows["attempt"] = 1
    iops = summary(rows, "iops", by)[by + ["n", "mean", "ci95_low", "ci95_high", "unit"]].rename(
        columns={"n": "n", "mean": "iops_mean", "ci95_low": "iops_ci_low", "ci95_high": "iops_ci_high"})
    p99 = cell_tails(rows, hist, by=by, quantiles=(0.99,))[by + ["value_ns", "ci_low_ns", "ci_high_ns", "status"]]
    p99 = p99.rename(columns={"value_ns": "p99_ns", "ci_low_ns": "p99_ci_low_ns", "ci_high_ns": "p99_ci_high_ns",
                              "status": "p99_status"})
    out = iops.merge(p99, on=by, how="left").merge(_shares(rows, by), on=by, how="left")
    return out.merge(_client_p99s(rows, clients, by), on=by, how="left")
