"""Tables as people read them: units in the headers, no index, no scientific notation.

    readable_html(df)       a plain HTML table: bytes/s as MiB/s, ns as ms, block sizes as 16K,
                            p-values as 0.012 or "< 0.05" (no finer than a row's units support),
                            counts with thousands separators, True/False/empty as yes/no/not judged;
                            no index; long tables cut
    readable(df)            the same formats as a pandas Styler (for .to_latex() and friends)
    compact_html(df, how)   a wide table in a few one-line columns (`Compact`): value and interval in one
                            cell, long texts as numbered notes folded under the table
    columns_html(columns)   a table of ready-made text columns, laid out as compact_html's
    use_readable_tables()   make every DataFrame a notebook displays render this way
                            (called by `notebook_display.remember`, so every analysis notebook has it)

Styles are inline attributes, never a <style> block: JupyterLab strips <style> from the outputs of an
untrusted notebook (every stored notebook opened from disk), and a table must read the same there.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import pandas as pd
from pandas.io.formats.style import Styler

from zbench_lib.analysis.claims.wording import interval_text, p_text
from zbench_lib.analysis.figures.plot_base import fmt
from zbench_lib.core.sizes import format_size

_P_COLUMNS = {"p", "holm_p", "tost_p", "mannwhitney_p", "p_welch", "p_adj"}
_BLOCK_SIZES = {"bs_bytes", "volblocksize_bytes", "recordsize_bytes", "volsize_bytes"}
MAX_ROWS = 60
SHORT = 24            # characters a cell holds on one line: a longer text may wrap, a shorter one never does
_NOWRAP = "white-space:nowrap"


def _missing(v) -> bool:
    try:
        return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))
    except TypeError:
        return False


def _size(v) -> str:
    """Bytes: exact binary form when round (16K, 1G), else one decimal (1.3 GiB)."""
    n = float(v)
    if n == int(n) and format_size(int(n)) != str(int(n)):
        return format_size(int(n))
    for unit, mult in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= mult:
            return f"{n / mult:.1f} {unit}"
    return f"{n:.0f} B"


def column_format(name: str, series: pd.Series):
    """(header, formatter) of one column, from its name and its values."""
    kind = series.dtype.kind if hasattr(series, "dtype") else "O"
    numeric = kind in "fiu"
    if kind == "b" or (kind == "O" and series.dropna().map(type).isin([bool]).all() and series.notna().any()):
        return name, lambda v: "not judged" if _missing(v) else ("yes" if v else "no")
    values = pd.to_numeric(series, errors="coerce") if name in ("level", "baseline") else None
    if values is not None and values.notna().all() and len(values) and (values >= 512).all() \
            and (values % 512 == 0).all():                # levels of a *_bytes factor
        return name, lambda v: "" if _missing(v) else _size(v)
    if not numeric:
        return name, lambda v: "" if _missing(v) else str(v)
    if _is_p(name):
        return name, lambda v: "" if _missing(v) else p_text(float(v))
    if name.endswith("_ns") or "_ns_" in name:
        return name.replace("_ns", "") + " (ms)", lambda v: "" if _missing(v) else fmt(v / 1e6)
    if "bytes_s" in name or name.startswith("bw_"):
        return name.replace("_bytes_s", "") + " (MiB/s)", lambda v: "" if _missing(v) else fmt(v / 2 ** 20)
    if name.endswith("_bytes") or name in _BLOCK_SIZES:
        return name.replace("_bytes", ""), lambda v: "" if _missing(v) else _size(v)
    if name == "decided_level":                       # the confidence level of the interval that decided
        return "CI level", lambda v: "" if _missing(v) else f"{v:.1%}"
    if name.endswith("_pct"):
        return name.replace("_pct", " (%)"), lambda v: "" if _missing(v) else fmt(v)
    if name.startswith("share"):
        return name + " (%)", lambda v: "" if _missing(v) else fmt(100 * v)
    counts = name == "n" or name.startswith(("n_", "runs")) or name.endswith(("_n", "_runs", "_disks", "rows"))
    if kind in "iu" or (counts and series.dropna().map(lambda v: float(v).is_integer()).all()):
        return name, lambda v: "" if _missing(v) else f"{int(v):,}"
    return name, lambda v: "" if _missing(v) else fmt(v)


# Columns of values in the row's metric: a table of several workloads, each in its own metric (its `metric`
# column, `data.metrics`, methods §9), reads each in that metric's unit, never a bandwidth's bytes/s as a count.
METRIC_VALUES = frozenset({"mean", "std", "median", "mad", "min", "max", "ci95_low", "ci95_high", "per_disk_mean",
                           "per_disk_std", "per_disk_ci_low", "per_disk_ci_high", "mean_level", "mean_baseline",
                           "baseline_mean", "baseline_std", "model_per_disk"})


def _unit(metric) -> tuple[str, float]:
    """A metric's unit as read and the factor to it: MiB/s for bytes/s, ms for ns, IOPS; ('', 1) unknown."""
    m = "" if _missing(metric) else str(metric)
    if "bytes_s" in m:
        return "MiB/s", 2.0 ** -20
    if m.endswith("_ns"):
        return "ms", 1e-6
    return ("IOPS" if m == "iops" else m), 1.0


@dataclass(frozen=True)
class _Cells:
    """A column as text: its header, each row's number, unit suffix, the factor the number was scaled by and how
    a number of that row is written once scaled (`end`, for an interval's ends: `wording.interval_text`)."""
    header: str
    numbers: list[str]
    units: list[str]
    scales: list[float]
    ends: list

    @property
    def texts(self) -> list[str]:
        return [n + u for n, u in zip(self.numbers, self.units)]


def _is_p(name: str) -> bool:
    return name in _P_COLUMNS or name.endswith("_p")


def _p_cells(df: pd.DataFrame, name: str) -> _Cells:
    """A comparison's p-values, each no finer than its row's units a side support (`p_values.p_text`)."""
    texts = ["" if _missing(v) else p_text(float(v), None if _missing(a) else a, None if _missing(b) else b)
             for v, a, b in zip(df[name], df["n_level"], df["n_baseline"])]
    return _Cells(name, texts, [""] * len(df), [1.0] * len(df), [str] * len(df))


def _cells(df: pd.DataFrame, name: str) -> _Cells:
    """A column of metric values in each row's unit (the unit in the header when the rows share one, else after
    each number); a comparison's p to what its units support; any other as `column_format` writes it."""
    if _is_p(name) and {"n_level", "n_baseline"} <= set(df) and df[name].dtype.kind in "fiu":
        return _p_cells(df, name)
    if name not in METRIC_VALUES or "metric" not in df or not df["metric"].notna().any():
        header, f = column_format(name, df[name])
        return _Cells(header, [f(v) for v in df[name]], [""] * len(df), [1.0] * len(df), [f] * len(df))
    units = [_unit(m) for m in df["metric"]]
    shared = {u for u, _ in units if u}
    one = len(shared) == 1
    numbers = ["" if _missing(v) else fmt(float(v) * k) for v, (_, k) in zip(df[name], units)]
    suffix = ["" if one or not n or not u else f" {u}" for n, (u, _) in zip(numbers, units)]
    return _Cells(f"{name} ({next(iter(shared))})" if one else name, numbers, suffix, [k for _, k in units],
                  [fmt] * len(df))


def _prepared(df: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(df.index, pd.RangeIndex):       # a meaningful index becomes columns, else goes
        df = df.reset_index(drop=not any(n is not None for n in df.index.names))
    return df


def readable(df: pd.DataFrame):
    """A pandas Styler of `df` with readable numbers and units and without the index."""
    df = _prepared(df)
    formats, headers = {}, {}
    for c in df.columns:
        headers[c], formats[c] = column_format(str(c), df[c])
    styler = Styler(df, uuid="zbench", cell_ids=False).format(formats).hide(axis="index")
    return styler.relabel_index([headers[c] for c in df.columns], axis="columns")


def readable_html(df: pd.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """A plain HTML table (numbers right-aligned, words left, no index); long tables are cut."""
    more = len(df) - max_rows
    shown = _prepared(df.head(max_rows) if more > 0 else df)
    try:
        cols = [_cells(shown, str(c)) for c in shown.columns]
    except Exception:                 # an unusual frame (MultiIndex columns ...): pandas' own HTML
        return shown.to_html(index=False)
    numeric = [shown[c].dtype.kind in "fiu" for c in shown.columns]
    align = ["" if n else ' style="text-align:left"' for n in numeric]     # words left in JupyterLab too
    head = "".join(f"<th{a}>{html.escape(c.header)}</th>" for c, a in zip(cols, align))
    texts = [c.texts for c in cols]
    rows = ["<tr>" + "".join(_td(t[i], not n) for t, n in zip(texts, numeric)) + "</tr>" for i in range(len(shown))]
    return _table(head, rows, more, len(df))


def _td(text: str, left: bool) -> str:
    """A cell; a short one never wraps ("randread-4k" broken at its hyphen made rows three lines tall)."""
    styles = (["text-align:left"] if left else []) + ([_NOWRAP] if len(text) <= SHORT else [])
    attr = f' style="{";".join(styles)}"' if styles else ""
    return f"<td{attr}>{html.escape(text)}</td>"


def _table(head: str, rows: list[str], more: int, total: int) -> str:
    note = f"<p><em>… {more} more rows not shown ({total} in all)</em></p>" if more > 0 else ""
    return (f'<div style="overflow-x:auto"><table class="zbench-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>{note}')


@dataclass(frozen=True)
class Compact:
    """How a wide table reads in a notebook: `columns` in order (those absent are skipped); each of `intervals`,
    (value, low, high), one column "0.978 (0.944–1.01)"; the long texts of `notes` numbered under the table,
    folded, each row pointing at its note (with a single notes column, by the text's lead: "judged ¹")."""
    columns: tuple[str, ...]
    intervals: tuple[tuple[str, str, str], ...] = ()
    notes: tuple[str, ...] = ()


def _interval_texts(df: pd.DataFrame, value: str, low: str, high: str) -> tuple[str, list[str]]:
    """The header and cells of a value with its interval, in the value's unit ('512 (500–520)', and with rows
    in several units '512 (500–520) MiB/s')."""
    v, lo = _cells(df, value), _cells(df, low)
    ns = df["n"] if "n" in df else pd.Series(None, index=df.index, dtype=object)
    cells = [num + (f" ({interval_text(x * k, y * k, None if _missing(n) else n, end)})"
                    if not (_missing(x) or _missing(y)) else "") + unit
             for num, x, y, k, end, n, unit in zip(v.numbers, df[low], df[high], lo.scales, lo.ends, ns, v.units)]
    return f"{v.header} ({'deciding interval' if low.startswith('decided') else '95% CI'})", cells


def _lead(text: str) -> str:
    """'judged' of 'judged: 3 of 3 pools ...': the word a status starts with, if short."""
    head, colon, _ = text.partition(":")
    return head if colon and len(head) <= 12 else ""


def _note_cells(df: pd.DataFrame, notes: tuple[str, ...]) -> tuple[list[str], list[tuple[str, int]]]:
    """Each row's note cell (its numbers, and with one notes column the text's lead) and the numbered notes,
    each with the rows it is on: a text shared by many rows ("too small: smallest achievable p ...") is one note."""
    present = [c for c in notes if c in df]
    numbered: dict[str, list[int]] = {}            # text -> [number, rows]
    cells = []
    for _, r in df[present].iterrows():
        marks, lead = [], ""
        for c in present:
            text = "" if _missing(r[c]) else str(r[c]).strip()
            if not text:
                continue
            entry = numbered.setdefault(text if len(present) == 1 else f"{c}: {text}", [len(numbered) + 1, 0])
            entry[1] += 1
            marks.append(str(entry[0]))
            lead = _lead(text) if len(present) == 1 else ""
        cells.append(" ".join(p for p in (html.escape(lead), f"<sup>{','.join(marks)}</sup>" if marks else "") if p))
    return cells, [(text, rows) for text, (_, rows) in numbered.items()]


def _notes_html(notes: list[tuple[str, int]], names: tuple[str, ...]) -> str:
    if not notes:
        return ""
    items = "".join(f"<li>{html.escape(t)}" + (f" <em>({n} rows)</em>" if n > 1 else "") + "</li>"
                    for t, n in notes)
    return (f"<details><summary>{len(notes)} note{'s' if len(notes) > 1 else ''} "
            f"({', '.join(names)})</summary><ol>{items}</ol></details>")


def compact_html(df: pd.DataFrame, how: Compact, max_rows: int = MAX_ROWS) -> str:
    """`df` as `how` says (see Compact): one-line rows, numbers right-aligned, words left, no index."""
    df = _prepared(df)
    more = len(df) - max_rows
    df = df.head(max_rows) if more > 0 else df
    spans = {v: (lo, hi) for v, lo, hi in how.intervals if {v, lo, hi} <= set(df.columns)}
    columns = []                                   # (header, cells, numeric)
    for c in (c for c in how.columns if c in df):
        header, cells = _interval_texts(df, c, *spans[c]) if c in spans else (_cells(df, c).header, _cells(df, c).texts)
        columns.append((header, [html.escape(t) for t in cells], df[c].dtype.kind in "fiu"))
    cells, notes = _note_cells(df, how.notes)
    if any(cells):
        columns.append(("note" if len(how.notes) > 1 else how.notes[0], cells, False))
    return columns_html(columns, more) + _notes_html(notes, how.notes)


def columns_html(columns: list[tuple[str, list[str], bool]], more: int = 0) -> str:
    """A table of ready-made columns, each (heading, its cells as HTML, numeric): one-line rows, numbers
    right-aligned, words left, no index; `more` rows were cut (said under the table)."""
    left = ' style="text-align:left"'
    # words in a heading may wrap ("disk equivalents per vdev" on two lines): the rows stay one line each
    head = "".join(f'<th{"" if n else left}>{html.escape(h.replace("_", " "))}</th>' for h, _, n in columns)
    n_rows = len(columns[0][1]) if columns else 0
    rows = ["<tr>" + "".join(f'<td style="{"" if n else "text-align:left;"}{_NOWRAP}">{cs[i]}</td>'
                             for _, cs, n in columns) + "</tr>" for i in range(n_rows)]
    return _table(head, rows, more, n_rows + max(more, 0))


def use_readable_tables() -> bool:
    """Register `readable_html` as the HTML form of DataFrames in the running IPython, if any."""
    try:
        from IPython import get_ipython
    except ImportError:               # pragma: no cover - IPython ships with the notebooks
        return False
    ip = get_ipython()
    if ip is None:
        return False
    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, readable_html)
    return True
