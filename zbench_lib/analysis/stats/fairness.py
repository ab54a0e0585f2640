"""How several clients shared one datastore (issue 30): a row per cell, the aggregate and each client.

A clients run's result row is the clients' aggregate (`measure.client_rows`); clients.parquet has a
row per client and run, client_hist.parquet each client's own completion-latency bins per run. Per
cell (its configuration, workload and direction, the client count among them):

- the aggregate IOPS: mean and 95% interval over the cell's runs or pools (`stats.summary`, as
  every IOPS of the report);
- the aggregate p99 of a typical unit (pool, or run of the one pool): each unit's own p99 from its
  runs' bins (every client's summed), their geometric mean with its t interval (`tails.cell_tails`,
  methods §18): one estimand for the value and its interval, as every p99 of the report;
- the clients' shares of the IOPS over each run's shared window: the lowest any client got in any run
  and the highest (a fair share is 1 / clients), and their means over runs;
- Jain's index of the clients' window IOPS, (Σx)² / (n·Σx²) per run (`client_aggregate.jain_index`):
  its mean over the same units as the IOPS (the runs, or each pool's mean over its runs), with Student's
  t interval on them, cut to [1 / clients, 1], the range J can take (`jain`). t and not a bootstrap:
  with 2 or 3 pools a bootstrap has 3 or 10 distinct resamples and undercovers (methods §18);
- the window: the largest share of a run's I/O that fell outside it (counted by the whole-run p99,
  not by the throughput), the range over runs of the window p99's bounds, and the runs whose window
  the clocks could not place (no IOPS, `window_not_judged`, with the reason);
- each client's p99, the same estimand on that client's bins alone: each unit's own p99 of the
  client, with its interval across the same units as the aggregate's, or "not judged" with the
  reason where the client's I/Os cannot support one, its short units named (`client_tails`:
  `tails.cell_tails` on the client's bins, methods §18, §20). Without client_hist.parquet it is not
  judged (NO_CLIENT_HIST): its runs' own fio p99s are not taken in its place. Never a median or mean
  of its per-run p99s: that is a statistic of percentiles, in which a run with few I/Os weighs as much
  as one with many.

Pure: tables in, a table out.

    fairness_table(rows, clients, hist, by, client_hist)   a row per cell, each client's p99 in four columns
    jain(rows, by)                                          Jain's index per cell, its t interval over the units
    client_p99s(row)                                        a row's clients, each its p99 as a ClientP99
    client_order(label)                                     a sort key: c2 before c10
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.replication import resolve_unit, to_units
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.analysis.stats.tails import COLUMNS as TAIL_COLUMNS, cell_tails

_RUN_KEYS = ["run_id", "attempt", "direction"]
# client_tails' columns beside the cell's: the client, then cell_tails' own for its p99.
CLIENT_TAIL_COLUMNS = ["client", *TAIL_COLUMNS]
# A store built before client_hist.parquet was derived: its raw files hold the bins, the store does not.
NO_CLIENT_HIST = "not judged: no per-client histograms in the store (client_hist.parquet: rebuild the results)"
# A client's columns in fairness_table, from client_tails' (p99_<label>_ns, p99_<label>_ci_low_ns, ...).
_WIDE = {"value_ns": "ns", "ci_low_ns": "ci_low_ns", "ci_high_ns": "ci_high_ns", "status": "status"}
_CLIENT_STATUS = re.compile(r"^p99_(?P<label>.+)_status$")


def has_clients(df: pd.DataFrame) -> bool:
    """Whether the rows come from a sweep whose load came from clients."""
    return "clients" in df.columns and bool(df["clients"].notna().any())


_SHARES = ("client_iops_min_share", "client_iops_max_share")


def _shares(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    # rows without the clients' shares (made by hand, or a results table that lost them): shares not judged
    rows = rows.assign(**{c: float("nan") for c in _SHARES if c not in rows})
    g = rows.groupby(by, dropna=False, sort=True)
    return pd.DataFrame({"share_min": g["client_iops_min_share"].min(), "share_max": g["client_iops_max_share"].max(),
                         "share_min_mean": g["client_iops_min_share"].mean(),
                         "share_max_mean": g["client_iops_max_share"].mean()}).reset_index()


def jain(rows: pd.DataFrame, by: list[str], unit: str = "auto", conf: float = 0.95) -> pd.DataFrame:
    """Per cell of `by` (the client count among them): Jain's index over the units, `jain_mean`, `jain_n` and
    the t interval `jain_ci_low` .. `jain_ci_high`, cut to [1 / clients, 1] (NaN ends with one unit)."""
    d = rows.assign(client_jain=pd.to_numeric(rows.get("client_jain", np.nan), errors="coerce"))
    u, _ = to_units(d, "client_jain", by, unit)
    g = u.groupby(by, dropna=False, sort=True)["client_jain"]
    out = g.agg(jain_n="count", jain_mean="mean", _sd="std").reset_index()
    with np.errstate(invalid="ignore"):
        half = sps.t.ppf((1 + conf) / 2, out["jain_n"] - 1) * out["_sd"] / np.sqrt(out["jain_n"])
    floor = 1 / pd.to_numeric(out["clients"], errors="coerce") if "clients" in out else 0.0
    out["jain_ci_low"] = np.maximum(out["jain_mean"] - half, floor)
    out["jain_ci_high"] = np.minimum(out["jain_mean"] + half, 1.0)
    return out.drop(columns="_sd")


def _reasons(notes: pd.Series) -> str:
    """The distinct reasons of the runs whose window is not judged, in order ('' for none)."""
    said = [bare_reason(n) if isinstance(n, str) and n else "the clients never ran together" for n in notes]
    return "; ".join(dict.fromkeys(said))


def _window(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per cell: the largest share of a run's I/O outside its window, the window p99's bounds over the runs, and
    the runs whose window throughput is not judged (no IOPS) with why."""
    cols = ("client_outside_share", "client_p99_window_low_ns", "client_p99_window_high_ns", "client_clock_note")
    rows = rows.assign(**{c: math.nan for c in cols if c not in rows})
    rows = rows.assign(_nj=pd.to_numeric(rows["iops"], errors="coerce").isna())
    g = rows.groupby(by, dropna=False, sort=True)
    out = pd.DataFrame({"outside_share_max": g["client_outside_share"].max(),
                        "p99_window_low_ns": g["client_p99_window_low_ns"].min(),
                        "p99_window_high_ns": g["client_p99_window_high_ns"].max(),
                        "window_not_judged": g["_nj"].sum().astype(int)})
    out["window_reason"] = g.apply(lambda r: _reasons(r.loc[r["_nj"], "client_clock_note"]), include_groups=False)
    return out.reset_index()


def _int_attempt(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype({"attempt": int})


def _client_rows(rows: pd.DataFrame, ran: pd.DataFrame) -> pd.DataFrame:
    """The aggregate rows of the runs one client ran in (`ran`: its clients.parquet rows), with the client's
    own I/O count and per-run p99 in place of the aggregate's: a unit short of I/Os is then the client's
    short unit, never the aggregate's under the client's name."""
    own = {"total_ios": "total_ios", "p99_ns": "lat_p99_ns"}
    own = {k: v for k, v in own.items() if k in ran}
    aggregate = [c for c in rows if c.startswith(("lat_p", "clat_p", "sync_lat_p")) or c in own.values()]
    mine = ran[_RUN_KEYS + list(own)].drop_duplicates(_RUN_KEYS).rename(columns=own)
    return _int_attempt(rows.drop(columns=aggregate)).merge(mine, on=_RUN_KEYS)


def client_tails(rows: pd.DataFrame, clients: pd.DataFrame | None, client_hist: pd.DataFrame | None,
                 by: list[str], unit: str = "auto") -> pd.DataFrame:
    """One row per cell of `by` and client: that client's p99 from its own bins (a typical unit's, methods §18).

    `rows` are the admissible aggregate rows, `clients` clients.parquet (which client ran in which run:
    a cell of 2 clients has no row for a third), `client_hist` client_hist.parquet. Each client's rows go
    through `tails.cell_tails` with its own bins, with the unit resolved once over every row (the aggregate
    p99's), so the client's value, bin, interval and status ("not judged: 600 I/Os, a p99 needs 1000")
    are read as the aggregate's are. Columns: `by` and CLIENT_TAIL_COLUMNS.
    """
    if clients is None or clients.empty:
        return pd.DataFrame(columns=by + CLIENT_TAIL_COLUMNS)
    unit = resolve_unit(rows, by, unit)
    hist = _int_attempt(client_hist) if client_hist is not None else None
    parts = []
    for label, ran in _int_attempt(clients).groupby("client", sort=True):
        mine = _client_rows(rows, ran)
        if mine.empty:          # the client ran in none of these rows (a cell with fewer clients)
            continue
        own = None if hist is None else hist[hist["client"] == label].drop(columns="client")
        parts.append(cell_tails(mine, own, by=by, unit=unit, quantiles=(0.99,)).assign(client=label))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=by + CLIENT_TAIL_COLUMNS)
    if client_hist is None:           # no bins of the client's own: nothing of it is estimated
        out = out.assign(status=NO_CLIENT_HIST, judged=False, value_ns=math.nan, ci_low_ns=math.nan,
                         ci_high_ns=math.nan, n=0)
    return out[by + CLIENT_TAIL_COLUMNS]


def _client_p99s(rows: pd.DataFrame, clients: pd.DataFrame | None, client_hist: pd.DataFrame | None,
                 by: list[str]) -> pd.DataFrame:
    """`client_tails` a row per cell: p99_<label>_ns, its interval's ends and its status, for each client."""
    tails = client_tails(rows, clients, client_hist, by)
    if tails.empty:
        return rows[by].drop_duplicates()
    wide = tails.set_index(by + ["client"])[list(_WIDE)].unstack("client")
    wide.columns = [f"p99_{label}_{_WIDE[field]}" for field, label in wide.columns]
    order = [f"p99_{label}_{_WIDE[f]}" for label in sorted(tails["client"].unique()) for f in _WIDE]
    return wide[order].reset_index()


def fairness_table(rows: pd.DataFrame, clients: pd.DataFrame | None, hist: pd.DataFrame | None,
                   by: list[str], client_hist: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per cell of `by` (see the module's text) over the admissible rows `rows` of a clients
    sweep, its clients.parquet `clients`, its latency_hist.parquet `hist` and its client_hist.parquet
    `client_hist` (None: each client's p99 is not judged, NO_CLIENT_HIST)."""
    rows = rows[rows["clients"].notna()].copy()
    if "attempt" not in rows:
        rows["attempt"] = 1
    iops = summary(rows, "iops", by)[by + ["n", "mean", "ci95_low", "ci95_high", "unit"]].rename(
        columns={"n": "n", "mean": "iops_mean", "ci95_low": "iops_ci_low", "ci95_high": "iops_ci_high"})
    p99 = cell_tails(rows, hist, by=by, quantiles=(0.99,))[by + ["value_ns", "ci_low_ns", "ci_high_ns", "status"]]
    p99 = p99.rename(columns={"value_ns": "p99_ns", "ci_low_ns": "p99_ci_low_ns", "ci_high_ns": "p99_ci_high_ns",
                              "status": "p99_status"})
    out = iops.merge(p99, on=by, how="left").merge(_shares(rows, by), on=by, how="left")
    out = out.merge(jain(rows, by), on=by, how="left").merge(_window(rows, by), on=by, how="left")
    return out.merge(_client_p99s(rows, clients, client_hist, by), on=by, how="left")


@dataclass(frozen=True)
class ClientP99:
    """One client's p99 in a cell, a typical unit's from the client's own bins, in ns, with its 95% interval
    (NaN ends: no interval), and `status` "judged" or "not judged: <why>" (then `value_ns` is NaN)."""
    client: str
    value_ns: float
    ci_low_ns: float
    ci_high_ns: float
    status: str

    @property
    def judged(self) -> bool:
        return self.status == "judged"


def client_order(label: str) -> list:
    """A sort key: c2 before c10, the clients as the lab numbered them."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", label)]


def client_p99s(row: pd.Series) -> list[ClientP99]:
    """The clients of one `fairness_table` row, by label, each its p99; a client that did not run in the row's
    cell (no status: a cell of 2 clients has none for a third) is left out, not reported as not judged."""
    labels = sorted((m["label"] for c in row.index if (m := _CLIENT_STATUS.match(str(c)))), key=client_order)
    return [ClientP99(label, *(float(row[f"p99_{label}_{f}"]) for f in ("ns", "ci_low_ns", "ci_high_ns")),
                      row[f"p99_{label}_status"])
            for label in labels if isinstance(row[f"p99_{label}_status"], str)]
