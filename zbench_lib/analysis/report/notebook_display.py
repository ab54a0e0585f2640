"""What the analysis notebooks display: figures, captions, readable tables, the hint for static figures.

`remember(sweep)` (called by `notebook_sections.answer_first`, a notebook's first output) keeps
the sweep so that `show(fig)` can caption each figure with the sweep id and the fio parameters of
the workloads it shows, and it makes DataFrames display readably (`table_format`). Figures
reference plotly.js instead of embedding it: JupyterLab draws them from their plotly JSON, report
pages load the one shared plotly.min.js of the report directory; each figure also carries a small
PNG (its static redraw) for viewers that run no JavaScript, and which JupyterLab's plotly extension
shows until the pointer enters the figure: `trust_hint()` says so in one line that only an
untrusted notebook (or a static preview) shows.
"""

from __future__ import annotations

import base64
import itertools
import json
import re

import pandas as pd
import plotly.graph_objects as go

from zbench_lib.analysis.figures.figures_static import PLOTLY_MIME, static_png
from zbench_lib.analysis.figures.plot_base import add_caption, caption_of
from zbench_lib.analysis.data.sweep_data import Sweep
from zbench_lib.analysis.report.table_format import use_readable_tables
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size
from zbench_lib.analysis.report.stamp import caveat_line, zbench_stamp

_figure_ids = itertools.count()
_SWEEPS: list[Sweep] = []            # the sweeps `remember` keeps, first the analysed one


def is_synthetic(sweep: Sweep) -> bool:
    df = sweep.results
    return bool(sweep.spec.get("synthetic") or ("synthetic" in df and df["synthetic"].fillna(False).any()))


def sweep_id(sweep: Sweep) -> str:
    """The sweep's id; sweeps read as one (`sweep_data.join_sweeps`) are 'a vs b'."""
    df = sweep.results
    if "sweep_id" in df and len(df):
        return " vs ".join(str(i) for i in pd.unique(df["sweep_id"].dropna()))
    return sweep.spec.get("name", sweep.path.name)


def remember(sweep: Sweep) -> None:
    """Keep `sweep` for the figures' captions, and make DataFrames display readably."""
    if all(s.path != sweep.path for s in _SWEEPS):
        _SWEEPS.append(sweep)
    use_readable_tables()


def _span(values, size=False) -> str:
    vals = sorted(pd.unique(values.dropna()))
    show = [format_size(int(v)) if size else f"{v:g}" if isinstance(v, float) else str(v) for v in vals]
    if len(show) > 3:
        return f"{show[0]}–{show[-1]}"
    return ", ".join(show)


def fio_parameters(results: pd.DataFrame, workloads=None) -> list[str]:
    """'randread-4k: randread, bs 4K, iodepth 8, numjobs 2, 12 s runs' per workload."""
    if "workload" not in results:
        return []
    out = []
    for wl in workloads or sorted(results["workload"].dropna().unique()):
        g = results[results["workload"] == wl]
        if g.empty:
            continue
        bits = [str(g["template"].iloc[0] if "template" in g else g["rw"].iloc[0] if "rw" in g else "")]
        for col, name, size in (("bs_bytes", "bs", True), ("iodepth", "iodepth", False), ("numjobs", "numjobs", False)):
            if col in g and g[col].notna().any():
                bits.append(f"{name} {_span(g[col].astype(int) if not size else g[col], size)}")
        if "runtime_ms" in g and g["runtime_ms"].notna().any():
            bits.append(f"{g['runtime_ms'].median() / 1000:.0f} s runs")
        out.append(f"{wl}: " + ", ".join(b for b in bits if b))
    return out


def figure_caption(title: str = "", sweeps=None) -> str:
    """Sweep id(s), the fio parameters of the workloads named in `title` (all if none is), the caveat
    line and zbench's version and commit."""
    sweeps = list(sweeps if sweeps is not None else _SWEEPS)
    if not sweeps:
        return ""
    results = pd.concat([s.results for s in sweeps], ignore_index=True)
    known = sorted(results["workload"].dropna().unique()) if "workload" in results else []
    tokens = set(re.split(r"[\s:,()·]+", title or ""))
    runs = results[results["run_id"].isin(tokens)] if "run_id" in results else results.iloc[0:0]
    named = [w for w in known if w in tokens] or sorted(runs["workload"].dropna().unique()) if known else []
    ids = " vs ".join(sweep_id(s) for s in sweeps)
    text = f"Sweep {ids}. "
    for _, r in runs.drop_duplicates("run_id").iterrows():     # a figure of one run says which run
        text += f"Run {r['run_id']}: {r.get('layout_label', r.get('layout', ''))}, repetition {r.get('rep', '?')}. "
    text += "fio " + "; ".join(fio_parameters(results, named or known)) + "."
    # A figure saved or pasted alone keeps what the disks were and which zbench drew it (issue 31).
    # ... and the I/O path of the workloads it shows, not of every workload of the sweep
    shown = results[results["workload"].isin(named)] if named and "workload" in results else results
    text += f" {caveat_line(shown)} {zbench_stamp()}."
    if any(is_synthetic(s) for s in sweeps):
        text = "SYNTHETIC DATA, not measured. " + text
    return text


def show(fig: go.Figure, caption: str | None = None) -> None:
    """Display a plotly figure for JupyterLab, the HTML report *and* a code host, with its caption.

    One output, three representations: the plotly mimetype (JupyterLab renders it natively),
    text/html (what nbconvert keeps) that calls the page's shared plotly.js instead of
    embedding its own copy, and image/png, the seaborn redraw of `figures_static`, which a
    viewer that runs no JavaScript (GitHub's notebook preview) shows instead; a figure with
    nothing the static redraw can draw (ConfigError) goes without it. Div ids are a counter,
    so outputs are reproducible.
    """
    from IPython.display import display
    if caption is None and not caption_of(fig):
        caption = figure_caption(fig.layout.title.text or "")
    if caption:
        add_caption(fig, caption)
    n = next(_figure_ids)
    html = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"zbench-figure-{n}",
                       config={"displaylogo": False, "responsive": True})
    bundle = {PLOTLY_MIME: json.loads(fig.to_json()), "text/html": html}
    try:
        bundle["image/png"] = base64.b64encode(static_png(fig)).decode("ascii")
    except ConfigError:
        pass
    display(bundle, raw=True)


TRUST_HINT = "The figures are static pictures here: in JupyterLab, point at one to make it interactive (zoom, values)."
TRUST_HINT_TAG = "trust-hint"       # the output's metadata {"zbench": TRUST_HINT_TAG}: the report drops it
# Where the notebook is untrusted (JupyterLab sanitises its HTML: no script runs) or read where nothing runs (a code
# host's preview), each figure is its PNG: a code host keeps it; JupyterLab's plotly extension shows it until the
# pointer enters the figure, then draws the interactive chart (it does so trusted or not: trust makes no figure
# interactive, so the hint does not ask for it). Where scripts run (a trusted or freshly run notebook, VS Code),
# the script hides the hint's output area (in JupyterLab; elsewhere the element holding the hint).
_HINT_HTML = ('<p style="margin:0;color:#555;font-style:italic">{text}</p><script>(function (s) {{ '
              'var box = s.closest(".jp-OutputArea-child") || s.parentNode; box.style.display = "none"; }})'
              '(document.currentScript);</script>')


def trust_hint() -> None:
    """One line, before a notebook's first figure, that only a notebook showing static figures shows."""
    from IPython.display import display
    display({"text/html": _HINT_HTML.format(text=TRUST_HINT), "text/plain": TRUST_HINT}, raw=True,
            metadata={"zbench": TRUST_HINT_TAG})
