"""Tables as people read them: units in the headers, no index, no scientific notation.

    readable_html(df)       a plain HTML table: bytes/s as MiB/s, ns as ms, block sizes as 16K,
                            p-values as 0.012 or <0.001, counts with thousands separators,
                            True/False/empty as yes/no/not judged; no index; long tables cut
    readable(df)            the same formats as a pandas Styler (for .to_latex() and friends)
    use_readable_tables()   make every DataFrame a notebook displays render this way
                            (called by `header_markdown`, so every analysis notebook has it)
"""

from __future__ import annotations

import html
import math

import pandas as pd
from pandas.io.formats.style import Styler

from zbench_lib.analysis.figures.plot_base import fmt
from zbench_lib.core.sizes import format_size

_P_COLUMNS = {"p", "holm_p", "tost_p", "mannwhitney_p", "p_welch", "p_adj"}
_BLOCK_SIZES = {"bs_bytes", "volblocksize_bytes", "recordsize_bytes", "volsize_bytes"}
MAX_ROWS = 60


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


def _pvalue(v) -> str:
    return "<0.001" if float(v) < 0.001 else f"{float(v):.3f}"


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
    if name in _P_COLUMNS or name.endswith("_p"):
        return name, lambda v: "" if _missing(v) else _pvalue(v)
    if name.endswith("_ns") or "_ns_" in name:
        return name.replace("_ns", "") + " (ms)", lambda v: "" if _missing(v) else fmt(v / 1e6)
    if "bytes_s" in name or name.startswith("bw_"):
        return name.replace("_bytes_s", "") + " (MiB/s)", lambda v: "" if _missing(v) else fmt(v / 2 ** 20)
    if name.endswith("_bytes") or name in _BLOCK_SIZES:
        return name.replace("_bytes", ""), lambda v: "" if _missing(v) else _size(v)
    if name.endswith("_pct"):
        return name.replace("_pct", " (%)"), lambda v: "" if _missing(v) else fmt(v)
    if name.startswith("share"):
        return name + " (%)", lambda v: "" if _missing(v) else fmt(100 * v)
    counts = name == "n" or name.startswith(("n_", "runs")) or name.endswith(("_n", "_runs", "_disks", "rows"))
    if kind in "iu" or (counts and series.dropna().map(lambda v: float(v).is_integer()).all()):
        return name, lambda v: "" if _missing(v) else f"{int(v):,}"
    return name, lambda v: "" if _missing(v) else fmt(v)


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
        cols = [(str(c),) + column_format(str(c), shown[c]) for c in shown.columns]
    except Exception:                 # an unusual frame (MultiIndex columns ...): pandas' own HTML
        return shown.to_html(index=False)
    numeric = [shown[c].dtype.kind in "fiu" for c in shown.columns]
    align = ["" if n else ' style="text-align:left"' for n in numeric]     # words left in JupyterLab too
    head = "".join(f"<th{a}>{html.escape(h)}</th>" for (_, h, _), a in zip(cols, align))
    rows = []
    for values in shown.itertuples(index=False):
        cells = "".join(f"<td{a}>{html.escape(f(v))}</td>" for (_, _, f), a, v in zip(cols, align, values))
        rows.append(f"<tr>{cells}</tr>")
    note = f"<p><em>… {more} more rows not shown ({len(df)} in all)</em></p>" if more > 0 else ""
    return (f'<div style="overflow-x:auto"><table class="zbench-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>{note}')


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
