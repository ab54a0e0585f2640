"""The report's "Clients on one datastore" section: a sweep whose load came from client VMs (issue 30).

A table per cell (`stats.fairness.fairness_table`): the aggregate IOPS with its interval, the
aggregate p99 from every client's bins summed with its interval, the lowest and highest share of
the IOPS any client got, and each client's p99 from its own bins merged over the cell's runs, in one
column per client: its value with its interval, or why it is not judged. A sweep without clients has
no section: `client_section` gives '' and the page is as it was.

    client_section(adm, clients, hist, caption, client_hist)    the section's HTML; '' without clients
"""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.analysis.report.table_format import column_format, readable_html
from zbench_lib.analysis.stats.fairness import fairness_table, has_clients

METHOD = ("Each row is one configuration: its clients' aggregate (the IOPS over the window every client ran in, "
          "the p99 from every client's latency bins summed, never an average of the clients' percentiles), with "
          "95% intervals over its runs as elsewhere (methods §18, §20); the share columns are the lowest and highest "
          "share of the IOPS any one client got in any run (a fair share is 1 / clients), and p99 <client> is that "
          "client's p99 from its own latency bins merged over the configuration's runs, with its 95% interval, or "
          "'not judged' where its I/Os cannot support one (a p99 needs 1,000), never a median of its per-run p99s.")
_CLIENT_P99 = re.compile(r"^p99_(?P<label>.+)_ns$")


def client_by(adm: pd.DataFrame) -> list[str]:
    """A fairness row's cell: workload, direction, the client count and every other varying configuration."""
    first = [c for c in ("workload", "direction", "clients") if c in adm]
    return first + [c for c in varying_columns(adm) if c not in first]


def _p99_text(value, low, high, status, ms) -> str:
    """One client's cell: "0.00200 (0.0000170–0.116)" in ms, the value alone without an interval, or the
    status saying why it is not judged ('' where the client did not run in the configuration)."""
    if isinstance(status, str) and status.startswith("not judged"):
        return status
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    ends = not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high))
    return ms(value) + (f" ({ms(low)}–{ms(high)})" if ends else "")


def client_columns(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with each client's four p99 columns (value, interval ends, status) as one text column,
    "p99 <label> (ms, 95% CI)", in their place."""
    labels = [m["label"] for c in table.columns if (m := _CLIENT_P99.match(c)) and f"p99_{m['label']}_status" in table]
    if not labels:
        return table
    ms = column_format("p99_ns", table[f"p99_{labels[0]}_ns"])[1]
    out = table.copy()
    for label in labels:
        parts = [f"p99_{label}_{f}" for f in ("ns", "ci_low_ns", "ci_high_ns", "status")]
        out[parts[0]] = [_p99_text(*r, ms) for r in table[parts].itertuples(index=False, name=None)]
        out = out.drop(columns=parts[1:]).rename(columns={parts[0]: f"p99 {label} (ms, 95% CI)"})
    return out


def client_section(adm: pd.DataFrame, clients: pd.DataFrame | None, hist: pd.DataFrame | None,
                   caption: str = "", client_hist: pd.DataFrame | None = None) -> str:
    """The section's HTML over the admissible runs `adm`; '' where the sweep has no clients."""
    if adm.empty or not has_clients(adm):
        return ""
    table = fairness_table(adm, clients, hist, client_by(adm), client_hist)
    shown = client_columns(table.drop(columns=[c for c in ("unit", "share_min_mean", "share_max_mean") if c in table]))
    return "\n".join([readable_html(shown),
                      f'<p class="note">{html.escape(" ".join(t for t in (caption, METHOD) if t))}</p>'])
