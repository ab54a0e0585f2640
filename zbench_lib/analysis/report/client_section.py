"""The report's "Clients on one datastore" section: a sweep whose load came from client VMs (issue 30).

A table per cell (`stats.fairness.fairness_table`), read as the report's other tables are (one-line
rows, each value with its interval in one cell, `table_format.columns_html`; the index page's style
right-aligns its numbers and keeps it as dense as the summary table, so four clients fit at 1400 px):
the client count and the other settings that vary, the runs (and those whose shared window the clocks could
not place, with the reason numbered under the table), the aggregate IOPS over the shared window with its
interval, the aggregate p99 of a typical unit (each unit's own from every client's bins summed) with its
interval, the largest share of a run's I/O outside the window with the window p99's bounds, the lowest and
highest share of the IOPS any client got, Jain's index with its interval, and each client's p99 of the same
estimand from its own bins, in one column per client: its value with its interval, or "not judged" with the
reason numbered under the table. A sweep without clients has no section: `client_section` gives '' and the
page is as it was.

    client_section(adm, clients, hist, caption, client_hist)    the section's HTML; '' without clients
"""

from __future__ import annotations

import html

import pandas as pd

from zbench_lib.analysis.claims.wording import interval_text
from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.analysis.figures.plot_base import fmt
from zbench_lib.analysis.report.table_format import column_format, columns_html
from zbench_lib.analysis.stats.fairness import ClientP99, client_order, client_p99s, fairness_table, has_clients

METHOD = ("Each row is one configuration: its clients' aggregate (the IOPS over the window every client ran in, "
          "counted from their stamped iops logs; the p99 of a typical unit, each run's own p99, or each pool's where "
          "pools were replicated, read from every client's latency bins summed, and their geometric mean, never an "
          "average of the clients' percentiles), with 95% intervals over its units as elsewhere (methods §18, §20). "
          "fio keeps one latency histogram per run, so the p99 is over the clients' whole runs: 'outside the "
          "window' is the largest share of a run's I/O that fell outside the shared window, and the window's own "
          "p99 lies within the range given beside it (the whole runs' p99 read with that share moved either way). "
          "The lowest and highest client share are the lowest and highest share of the window's IOPS any one "
          "client got in any of its runs (a fair share is 1 / clients); Jain's index, (Σx)² / (n·Σx²) of the "
          "clients' window IOPS, is 1 when they are equal and 1 / clients when one had it all, with its t interval "
          "over the runs or pools; each client's column (c1, c2, ...) is the same estimand read from that client's "
          "own latency bins, with its 95% interval, or 'not judged' where its I/Os cannot support one (a p99 needs "
          "1,000; the reasons are numbered under the table); — where the client was not among the "
          "configuration's clients.")
PANEL = ("workload", "direction")
HEADINGS = {"workload": "Workload", "direction": "Direction", "clients": "Clients"}
Column = tuple[str, list[str], bool]        # a table_format.columns_html column: heading, HTML cells, numeric
_OUTSIDE = ("outside_share_max", "p99_window_low_ns", "p99_window_high_ns")
# fairness_table's window columns (a table made by hand may lack them)
_WINDOW = ("window_not_judged", "outside_share_max", "p99_window_low_ns", "p99_window_high_ns", "jain_mean",
           "jain_ci_low", "jain_ci_high", "window_reason")


def client_by(adm: pd.DataFrame) -> list[str]:
    """A fairness row's cell: workload, direction, the client count and every other varying configuration."""
    first = [c for c in ("workload", "direction", "clients") if c in adm]
    return first + [c for c in varying_columns(adm) if c not in first]


class Reasons:
    """The reasons a table's numbers are not judged, numbered in order of first use: a cell says
    "not judged ¹", the reason once under the table (a reason in each cell made the table scroll)."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def mark(self, status: str) -> str:
        n = self.numbers.setdefault(bare_reason(status), len(self.numbers) + 1)
        return f"not judged <sup>{n}</sup>"

    def html(self) -> str:
        if not self.numbers:
            return ""
        items = "".join(f"<li>{html.escape(why)}</li>" for why in self.numbers)
        return f'<p class="note">Not judged:</p><ol class="note">{items}</ol>'


def _missing(v) -> bool:
    return v is None or (not isinstance(v, str) and pd.isna(v))


def _with_ci(value, low, high, n=None, scale: float = 1.0) -> str:
    """'157 (132–187)': the value and its interval's ends ("one value (n = 2)" at zero width), the value alone
    without them; '' without a value."""
    if _missing(value):
        return ""
    ends = "" if _missing(low) or _missing(high) else \
        f" ({interval_text(low * scale, high * scale, None if _missing(n) else n, fmt)})"
    return fmt(value * scale) + ends


def _p99(value_ns, low_ns, high_ns, status, reasons: Reasons) -> str:
    """A p99 cell in ms with its interval, or "not judged" with its reason's number."""
    if isinstance(status, str) and status.startswith("not judged"):
        return reasons.mark(status)
    return html.escape(_with_ci(value_ns, low_ns, high_ns, scale=1e-6))


def _share(low, high) -> str:
    return "" if _missing(low) or _missing(high) else f"{fmt(100 * low)}% / {fmt(100 * high)}%"


def _settings(table: pd.DataFrame, by: list[str]) -> list[Column]:
    """The cell's columns: workload and direction where they vary (else the caption says them), the client count
    and the other settings as the summary table writes them (16K, always)."""
    out = []
    for c in (c for c in by if c not in PANEL or table[c].nunique() > 1):
        write = (lambda v: str(int(v))) if c == "clients" else column_format(c, table[c])[1]
        out.append((HEADINGS.get(c, c.removesuffix("_bytes")), [html.escape(write(v)) for v in table[c]],
                    c == "clients"))
    return out


def _client_cell(p: ClientP99 | None, reasons: Reasons) -> str:
    return "—" if p is None else _p99(p.value_ns, p.ci_low_ns, p.ci_high_ns, p.status, reasons)


def _clients(table: pd.DataFrame, reasons: Reasons) -> list[Column]:
    """A column per client (c1, c2, ...): its own p99 in each cell, '—' where it was not among the cell's clients."""
    rows = [{p.client: p for p in client_p99s(r)} for _, r in table.iterrows()]
    labels = sorted({c for r in rows for c in r}, key=client_order)
    return [(f"{label} p99 ms (95%\u00a0CI)", [_client_cell(r.get(label), reasons) for r in rows], True)
            for label in labels]


def _cells(table: pd.DataFrame, columns: list[str], write) -> list[str]:
    """`write(*values)` of each row's `columns`."""
    return [write(*v) for v in table[columns].itertuples(index=False, name=None)]


def _runs(n, not_judged, why, reasons: Reasons) -> str:
    """'3', or '2 (+1 not judged ¹)' where the clocks could not place some runs' window (they have no IOPS)."""
    runs = f"{int(n)}" if not _missing(n) else "0"
    if _missing(not_judged) or not int(not_judged):
        return runs
    return f"{runs} (+{int(not_judged)} {reasons.mark(f'not judged: {why}')})"


def _outside(share, low_ns, high_ns) -> str:
    """'4.2%; window p99 2.10–2.60': the largest share of a run's I/O outside its window, the window p99's range
    (ms)."""
    if _missing(share):
        return ""
    bounds = "" if _missing(low_ns) or _missing(high_ns) else f"; window p99 {fmt(low_ns / 1e6)}–{fmt(high_ns / 1e6)}"
    return html.escape(f"{fmt(100 * share)}%{bounds}")


def client_columns(table: pd.DataFrame, by: list[str], reasons: Reasons) -> list[Column]:
    """`fairness_table`'s rows as the section's columns (see the module's text)."""
    ci = "(95%\u00a0CI)"       # a heading may wrap, but before its interval's name, not inside it
    p99 = ["p99_ns", "p99_ci_low_ns", "p99_ci_high_ns", "p99_status"]
    table = table.assign(**{c: float("nan") for c in _WINDOW if c not in table})
    aggregate = [("Runs", _cells(table, ["n", "window_not_judged", "window_reason"],
                                 lambda *v: _runs(*v, reasons)), True),
                 (f"IOPS {ci}", _cells(table, ["iops_mean", "iops_ci_low", "iops_ci_high", "n"], _with_ci), True),
                 (f"p99 ms {ci}", _cells(table, p99, lambda *v: _p99(*v, reasons)), True),
                 ("I/O outside the window (most)", _cells(table, list(_OUTSIDE), _outside), True),
                 ("Lowest / highest client share", _cells(table, ["share_min", "share_max"], _share), True),
                 (f"Jain's index {ci}", _cells(table, ["jain_mean", "jain_ci_low", "jain_ci_high"],
                                               lambda *v: html.escape(_with_ci(*v))), True)]
    return _settings(table, by) + aggregate + _clients(table, reasons)


def _constant(table: pd.DataFrame, by: list[str]) -> str:
    """'Every row: randwrite, write.': the workload and direction where every row has the same."""
    same = [c for c in PANEL if c in by and table[c].nunique() == 1]
    return f"Every row: {', '.join(str(table[c].iloc[0]) for c in same)}." if same else ""


def client_section(adm: pd.DataFrame, clients: pd.DataFrame | None, hist: pd.DataFrame | None,
                   caption: str = "", client_hist: pd.DataFrame | None = None) -> str:
    """The section's HTML over the admissible runs `adm`; '' where the sweep has no clients."""
    if adm.empty or not has_clients(adm):
        return ""
    by = client_by(adm)
    table = fairness_table(adm, clients, hist, by, client_hist)
    reasons = Reasons()
    body = columns_html(client_columns(table, by, reasons))
    note = " ".join(t for t in (caption, _constant(table, by), METHOD) if t)
    return "\n".join([body, reasons.html(), f'<p class="note">{html.escape(note)}</p>'])
