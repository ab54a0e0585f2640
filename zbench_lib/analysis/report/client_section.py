"""The report's "Clients on one datastore" section: a sweep whose load came from client VMs (issue 30).

A table per cell (`stats.fairness.fairness_table`): the aggregate IOPS with its interval, the
aggregate p99 from every client's bins summed with its interval, the lowest and highest share of
the IOPS any client got, and each client's own p99. A sweep without clients has no section:
`client_section` gives '' and the page is as it was.

    client_section(adm, clients, hist, caption)    the section's HTML; '' without clients
"""

from __future__ import annotations

import html

import pandas as pd

from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.analysis.report.table_format import readable_html
from zbench_lib.analysis.stats.fairness import fairness_table, has_clients

METHOD = ("Each row is one configuration: its clients' aggregate (the IOPS over the window every client ran in, "
          "the p99 from every client's latency bins summed, never an average of the clients' percentiles), with "
          "95% intervals over its runs as elsewhere (methods §18, §20); the share columns are the lowest and highest "
          "share of the IOPS any one client got in any run (a fair share is 1 / clients), and p99 <client> is the "
          "median over runs of that client's own p99.")


def client_by(adm: pd.DataFrame) -> list[str]:
    """A fairness row's cell: workload, direction, the client count and every other varying configuration."""
    first = [c for c in ("workload", "direction", "clients") if c in adm]
    return first + [c for c in varying_columns(adm) if c not in first]


def client_section(adm: pd.DataFrame, clients: pd.DataFrame | None, hist: pd.DataFrame | None,
                   caption: str = "") -> str:
    """The section's HTML over the admissible runs `adm`; '' where the sweep has no clients."""
    if adm.empty or not has_clients(adm):
        return ""
    table = fairness_table(adm, clients, hist, client_by(adm))
    shown = table.drop(columns=[c for c in ("unit", "share_min_mean", "share_max_mean") if c in table])
    return "\n".join([readable_html(shown),
                      f'<p class="note">{html.escape(" ".join(t for t in (caption, METHOD) if t))}</p>'])
