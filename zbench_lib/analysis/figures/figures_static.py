"""Static PNG/SVG versions of the report's figures, drawn with seaborn from the figures' own data.

Every chart of a report is a plotly figure (`show` keeps its JSON in the executed
notebook). `static_figure(fig)` reads the data back (points, error bars, bars, heatmap
cells, reference lines, tick labels, caption) into one tidy table and draws it with
seaborn's objects interface (`so.Plot` with Line, Dot, Range and Bar marks, one facet per
subplot) or `sns.heatmap`, so the static and interactive versions show the same numbers.

    static_figure(fig)                       a matplotlib Figure (Agg, no pyplot state)
    save_static(fig, stem, formats)          stem.png / stem.svg
    static_png(fig)                          a small PNG of it (palette colours), for a notebook output
    notebook_figures(nb)                     the plotly figures a notebook displayed, in order
    export_notebook_figures(nb, dir, ...)    every figure of an executed notebook as files
"""

from __future__ import annotations

import io
import re
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from zbench_lib.analysis.figures.axes import log_ticks
from zbench_lib.analysis.figures.plot_base import CAPTION_NAME, LABEL_OFFSETS, PALETTE, agg_figure
from zbench_lib.core.errors import ConfigError

FORMATS = ("png", "svg")
_DASH = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-.", "longdash": (0, (8, 3)),
         "longdashdot": (0, (8, 3, 1, 3))}
# plotly marker symbols as matplotlib's, so the static legend tells the families apart as the interactive one does
_MARKER = {"circle": "o", "square": "s", "diamond": "D", "triangle-up": "^", "triangle-down": "v", "cross": "P",
           "x": "X", "star": "*", "pentagon": "p"}
PLOTLY_MIME = "application/vnd.plotly.v1+json"


def _plain(text) -> str:
    return re.sub(r"<br\s*/?>", "\n", re.sub(r"<(?!br)[^>]+>", "", str(text or "")))


def _axis_key(trace, which: str) -> str:
    ref = getattr(trace, f"{which}axis", None) or which
    return f"{which}axis" + ref[1:]


def _panels(fig: go.Figure) -> list[tuple[str, str]]:
    pairs = []
    for t in fig.data:
        pair = (_axis_key(t, "x"), _axis_key(t, "y"))
        if pair not in pairs:
            pairs.append(pair)
    return sorted(pairs, key=lambda p: int(p[0][5:] or 1)) or [("xaxis", "yaxis")]


def _panel_titles(fig: go.Figure, n: int) -> list[str]:
    ann = [a for a in fig.layout.annotations if a.name != CAPTION_NAME and a.yanchor == "bottom"
           and a.xref == "paper" and a.yref == "paper"]
    titles = [_plain(a.text) for a in sorted(ann, key=lambda a: (-(a.y or 0), a.x or 0))]
    return (titles + [""] * n)[:n] if n > 1 else [""]


def _color(trace, i: int) -> str:
    for attr in ("line", "marker"):
        c = getattr(getattr(trace, attr, None), "color", None)
        if isinstance(c, str):
            return c
    return PALETTE[i % len(PALETTE)]


def _marker(trace) -> str:
    symbol = getattr(getattr(trace, "marker", None), "symbol", None)
    return _MARKER.get(symbol, "o") if isinstance(symbol, str) else "o"


def _errors(err, values):
    if err is None or err.array is None or err.visible is False:
        return None
    hi = np.asarray(err.array, float)
    lo = np.asarray(err.arrayminus, float) if err.arrayminus is not None else hi
    v = np.asarray(values, float)
    return v - lo, v + hi                      # no interval (n = 1): NaN, nothing drawn


def _per_point(value, n: int, default: str) -> list:
    """A trace attribute given per point or once (plotly takes both) as one value per point."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return ([v or default for v in value] + [default] * n)[:n]
    return [value or default] * n


def figure_frame(fig: go.Figure) -> pd.DataFrame:
    """Every point of the figure's scatter and bar traces as tidy rows (the data drawn)."""
    panels = {p: i for i, p in enumerate(_panels(fig))}
    rows = []
    for i, t in enumerate(fig.data):
        if t.type not in ("scatter", "bar"):
            continue
        panel = panels[(_axis_key(t, "x"), _axis_key(t, "y"))]
        mode = t.mode or "lines+markers" if t.type == "scatter" else "bar"
        x, y = list(t.x if t.x is not None else []), list(t.y if t.y is not None else [])
        group, groups = 0, []
        for xv in x:                              # None separates segments of one trace
            group += xv is None
            groups.append(f"{i}.{group}")
        text = list(t.text) if isinstance(t.text, (list, tuple, np.ndarray)) else [t.text or ""] * len(x)
        df = pd.DataFrame({"x": x, "y": y, "group": groups, "text": (text + [""] * len(x))[:len(x)],
                           "textpos": _per_point(getattr(t, "textposition", None), len(x), "top right")})
        df = df.assign(panel=panel, trace=i, name=t.name or "", color=_color(t, i), kind=mode, marker=_marker(t),
                       ls=(t.line.dash if t.type == "scatter" and t.line.dash else "solid"),
                       opacity=t.marker.opacity if t.type == "bar" and t.marker.opacity is not None else 1.0)
        if t.type == "bar":
            df["width"] = t.width if t.width is not None else 0.8
        for axis, err in (("y", t.error_y), ("x", t.error_x)):
            # a bar's interval too (a sync study's headline): the static version draws what the interactive does
            bounds = _errors(err, df[axis]) if axis == "y" or t.type == "scatter" else None
            if bounds is not None:
                df[f"{axis}lo"], df[f"{axis}hi"] = bounds
        df = df[df["x"].notna() & df["y"].notna()]
        if len(df):
            rows.append(df)
    if not rows:
        return pd.DataFrame()
    frame = pd.concat(rows, ignore_index=True)
    for axis in ("x", "y"):
        try:
            frame[axis] = pd.to_numeric(frame[axis])
        except (TypeError, ValueError):
            frame[axis] = frame[axis].astype(str)     # categories (forest plot labels)
    return frame


def _heatmap(fig: go.Figure, t):
    import seaborn as sns
    z = np.asarray(t.z, float)
    out, axes = agg_figure(figsize=(1.4 * z.shape[1] + 3, 0.85 * z.shape[0] + 2.2))
    ax = axes[0, 0]
    text = np.asarray([[_plain(v) for v in r] for r in t.text]) if t.text is not None else None
    bar = _plain(t.colorbar.title.text) if t.colorbar and t.colorbar.title else ""
    sns.heatmap(pd.DataFrame(z, index=list(t.y), columns=list(t.x)), annot=text, fmt="", cmap="viridis", ax=ax,
                cbar_kws={"label": bar.replace("\n", " ")}, linewidths=0.5, annot_kws={"fontsize": 8})
    ax.set_xlabel(_plain(fig.layout.xaxis.title.text))
    ax.set_ylabel(_plain(fig.layout.yaxis.title.text))
    return out


def _shapes(fig: go.Figure, axes, panels):
    for s in fig.layout.shapes or ():
        ax = axes[next((i for i, (xa, _) in enumerate(panels) if xa[5:] == (s.xref or "x")[1:].split(" ")[0]), 0)]
        color = s.line.color if s.line and s.line.color else "black"
        ls = _DASH.get(s.line.dash if s.line else "", "-")
        if s.type == "line" and s.x0 == s.x1 and (s.yref or "").endswith("domain"):
            ax.axvline(s.x0, color=color, linestyle=ls, linewidth=1)
        elif s.type == "line" and s.y0 == s.y1 and (s.xref or "").endswith("domain"):
            ax.axhline(s.y0, color=color, linestyle=ls, linewidth=1)
        elif s.type == "rect":
            ax.axvspan(s.x0, s.x1, color=s.fillcolor or "green", alpha=s.opacity or 0.15, linewidth=0)


def _limits(ax, axis: str, spec) -> None:
    """The axis range the figure gives (a log axis's in powers of ten), so the static version spans what the
    interactive one does: an IOPS axis from zero, not autoscaled to 174.8-175.4 where depth gains nothing."""
    if spec is None or spec.range is None or spec.type == "category" or None in tuple(spec.range):
        return
    lo, hi = (10 ** float(v) if spec.type == "log" else float(v) for v in spec.range)
    getattr(ax, f"set_{axis}lim")(lo, hi)


def _ticks(ax, axis: str, spec) -> None:
    """The figure's own ticks; a log axis without them gets `axes.log_ticks` of its range, never labels on
    decades alone (one label on a panel spanning 80-280 ms)."""
    if spec is None:
        return
    if spec.tickvals is not None:
        vals, texts = list(spec.tickvals), list(spec.ticktext or spec.tickvals)
    elif spec.type == "log":
        vals, texts = log_ticks(*getattr(ax, f"get_{axis}lim")())
    else:
        return
    getattr(ax, f"set_{axis}ticks")(vals, texts)
    getattr(ax, f"set_{axis}ticks")([], minor=True)


def _matched_limits(fig: go.Figure, axes, panels) -> None:
    """Panels whose plotly y axes `matches` another share its range here too (a latency-vs-load figure's one
    latency scale): seaborn's facets were drawn unshared, each fitted to its own data. Only y: the figures
    with shared x axes (make_subplots' shared_xaxes) keep the static drawing they always had."""
    names = [ya for _, ya in panels]
    for anchor in {fig.layout[n].matches for n in names if fig.layout[n] is not None and fig.layout[n].matches}:
        group = [ax for ax, n in zip(axes, names) if n == f"yaxis{anchor[1:]}" or fig.layout[n].matches == anchor]
        lims = [ax.get_ylim() for ax in group]
        for ax in group:
            ax.set_ylim(min(lo for lo, _ in lims), max(hi for _, hi in lims))


def _axes_style(fig: go.Figure, axes, panels, titles, frame):
    for i, (ax, (xa, ya)) in enumerate(zip(axes, panels)):
        xl, yl = fig.layout[xa], fig.layout[ya]
        for axis, spec in (("x", xl), ("y", yl)):
            label = getattr(ax, f"{axis}axis").label
            label.set_text(_plain(spec.title.text) if spec and spec.title and spec.title.text else "")
            label.set_visible(True)           # seaborn's facets hide an inner panel's own label (p99 beside IOPS)
        ax.set_title(titles[i] if i < len(titles) else "")
        for axis, spec in (("x", xl), ("y", yl)):
            _limits(ax, axis, spec)
            _ticks(ax, axis, spec)
            if spec is not None and spec.showgrid is False:     # no grid line through the middle bar of a group
                ax.grid(False, axis=axis)
        numeric_y = len(frame) and pd.api.types.is_numeric_dtype(frame["y"])
        if yl is not None and yl.autorange == "reversed" and numeric_y:   # seaborn puts categories top-down
            ax.invert_yaxis()
        pts = frame[(frame["panel"] == i) & (frame["text"].astype(str) != "")] if len(frame) else frame
        for _, r in pts.iterrows():         # where the interactive figure put the label, so they cannot differ
            offset, ha, va = LABEL_OFFSETS.get(r["textpos"], LABEL_OFFSETS["top right"])
            ax.annotate(_plain(r["text"]), (r["x"], r["y"]), fontsize=7, xytext=offset, textcoords="offset points",
                        ha=ha, va=va)
    _matched_limits(fig, axes, panels)


def _legend(out, fig: go.Figure):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles, seen = [], set()
    for i, t in enumerate(fig.data):
        if t.type not in ("scatter", "bar") or t.showlegend is False or not t.name or t.name in seen:
            continue
        seen.add(t.name)
        if t.type == "bar":
            handles.append(Patch(color=_color(t, i), alpha=t.marker.opacity or 1.0, label=t.name))
        else:
            mode = t.mode or "lines+markers"
            handles.append(Line2D([], [], color=_color(t, i), label=t.name,
                                  marker=_marker(t) if "markers" in mode else None,
                                  linestyle=_DASH.get(t.line.dash or "solid", "-") if "lines" in mode else "none"))
    if handles:
        out.legend(handles=handles, loc="outside right center", fontsize="small", frameon=False)


def _log_scales(fig: go.Figure, axes, panels) -> None:
    """Log axes after drawing (seaborn draws data coordinates), their ticks set by `_ticks`."""
    from matplotlib.ticker import FuncFormatter, NullFormatter
    for ax, (xa, ya) in zip(axes, panels):
        for axis, spec in (("x", fig.layout[xa]), ("y", fig.layout[ya])):
            if spec is not None and spec.type == "log":
                getattr(ax, f"set_{axis}scale")("log")
                getattr(ax, f"{axis}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                getattr(ax, f"{axis}axis").set_minor_formatter(NullFormatter())


def _slots(fig: go.Figure, panels: list[tuple[str, str]]) -> tuple[int, list[int]]:
    """The static grid's columns and each panel's place in it: plotly's row and column where its grid has up
    to two columns (a p99.9 row whose first panel is empty keeps its p99.9 under its own workload, not under
    the other's), one after another in two columns where plotly's has more."""
    xs = [(fig.layout[xa].domain or (0, 1))[0] for xa, _ in panels]
    ys = [(fig.layout[ya].domain or (0, 1))[0] for _, ya in panels]
    columns, rows = sorted(set(xs)), sorted(set(ys), reverse=True)
    if len(columns) > 2:
        return 2, list(range(len(panels)))
    return len(columns), [rows.index(y) * len(columns) + columns.index(x) for x, y in zip(xs, ys)]


def static_figure(fig: go.Figure):  # noqa: C901, PLR0912 (one step per kind of trace and axis; debt, issue 28)
    """The figure drawn with seaborn: same data, colours, error bars, ticks, title and caption."""
    import seaborn.objects as so
    heat = [t for t in fig.data if t.type == "heatmap"]
    if heat:
        out = _heatmap(fig, heat[0])
    else:
        frame = figure_frame(fig)
        for axis in ("x", "y"):
            if fig.layout[f"{axis}axis"].type == "log" and f"{axis}lo" in frame:
                floor = frame[axis].astype(float).where(lambda v: v > 0).min() / 10
                frame[f"{axis}lo"] = frame[f"{axis}lo"].clip(lower=floor)
        if frame.empty:
            raise ConfigError("the figure has no scatter, bar or heatmap data to draw")
        panels = _panels(fig)
        cols, slots = _slots(fig, panels)
        frame["slot"] = frame["panel"].map(dict(enumerate(slots)))
        out, _ = agg_figure(figsize=(7.5 * cols, 4.6 * -(-(max(slots) + 1) // cols)))
        out.clear()
        plot = so.Plot(frame, x="x", y="y", color="color", group="group")
        lines, dots, bars = (frame[frame["kind"].str.contains(k)] for k in ("lines", "markers", "bar"))
        if len(lines):
            # Path, not Line: points joined in the trace's order, as plotly joins them (Line sorts by x, which
            # zigzagged a depth curve whose IOPS do not grow with depth)
            plot = plot.add(so.Path(linewidth=1.5, marker=""), data=lines, linestyle="ls", legend=False)
        if len(dots):
            plot = plot.add(so.Dot(pointsize=5), data=dots, marker="marker", legend=False)
        if len(bars):
            xs = np.sort(bars["x"].astype(float).unique())
            spacing = float(np.diff(xs).min()) if len(xs) > 1 else 1.0
            plot = plot.add(so.Bar(width=float(bars["width"].iloc[0]) / spacing, alpha=float(bars["opacity"].iloc[0]),
                                   edgewidth=0), data=bars, legend=False)
        for axis in ("y", "x"):
            if f"{axis}lo" in frame and frame[f"{axis}lo"].notna().any():
                err = frame[frame[f"{axis}lo"].notna()]
                plot = plot.add(so.Range(), data=err, legend=False,
                                **{f"{axis}min": f"{axis}lo", f"{axis}max": f"{axis}hi"})
        plot = plot.scale(color=None, marker={m: m for m in set(frame["marker"])},
                          linestyle={k: v for k, v in _DASH.items() if k in set(frame["ls"])})
        if max(slots) > 0:
            plot = plot.facet(col="slot", wrap=cols, order=list(range(max(slots) + 1))).share(x=False, y=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=FutureWarning)    # seaborn 0.13 on pandas 3
            warnings.filterwarnings("ignore", message=".*copy keyword is deprecated.*")
            plot.on(out).plot()
        for i, ax in enumerate(out.axes):
            ax.set_visible(i in slots)            # a grid's empty place stays empty
        axes = [out.axes[i] for i in slots]
        _log_scales(fig, axes, panels)
        titles = _panel_titles(fig, max(slots) + 1)
        _axes_style(fig, axes, panels, [titles[i] for i in slots], frame)
        _shapes(fig, axes, panels)
        _legend(out, fig)
    out.suptitle(_plain(fig.layout.title.text), fontsize="medium")
    caption = next((a.text for a in fig.layout.annotations if a.name == CAPTION_NAME), "")
    if caption:
        out.text(0.0, -0.01, textwrap.fill(_plain(caption).replace("\n", " "), 130), fontsize=7, va="top",
                 ha="left", transform=out.transFigure)
    return out


def save_static(fig: go.Figure, stem, formats=FORMATS, dpi: int = 150) -> list[Path]:
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ConfigError(f"static figure formats are {', '.join(FORMATS)}; got {', '.join(bad)}")
    out = static_figure(fig)
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_name(f"{stem.name}.{f}") for f in formats]
    for p in paths:
        out.savefig(p, dpi=dpi, bbox_inches="tight", metadata={"Date": None} if p.suffix == ".svg" else None)
    return paths


# JupyterLab's plotly extension draws a figure's PNG at its own size until the pointer enters it, cropping
# what is wider than the output column: about 960 px beside the file browser on a 1,400-px screen.
MAX_PNG_WIDTH = 920


def _png(figure, dpi: float) -> bytes:
    raw = io.BytesIO()
    figure.savefig(raw, format="png", dpi=dpi, bbox_inches="tight")
    return raw.getvalue()


def static_png(fig: go.Figure, dpi: int = 96, colors: int = 256, max_width: int = MAX_PNG_WIDTH) -> bytes:
    """The figure drawn by `static_figure` as a PNG of at most `colors` palette colours and `max_width` pixels.

    `show` puts it beside the plotly JSON of each figure a notebook displays, so a viewer
    that runs no JavaScript (a code host's notebook preview) still shows the chart; a
    palette keeps it near 15-45 KB. A wider drawing (a headline of four panels) is drawn again
    at a lower resolution rather than resampled, so its text stays sharp. Pillow (matplotlib's
    own PNG writer) reduces it and writes no metadata, so the same figure gives the same bytes
    and re-stored notebooks do not churn.
    """
    from PIL import Image
    figure = static_figure(fig)
    raw = _png(figure, dpi)
    width = Image.open(io.BytesIO(raw)).size[0]
    if width > max_width:               # a tight bounding box scales with the resolution
        raw = _png(figure, dpi * max_width / width)
    img = Image.open(io.BytesIO(raw)).convert("RGB").quantize(colors, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    img.save(out, format="png", optimize=True)
    return out.getvalue()


def decode_arrays(obj):
    """Plotly JSON with its base64 typed arrays ({"dtype", "bdata", "shape"}) turned into numpy arrays."""
    import base64
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
            shape = obj.get("shape")
            return arr.reshape([int(s) for s in str(shape).split(",")]) if shape else arr
        return {k: decode_arrays(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_arrays(v) for v in obj]
    return obj


def notebook_figures(nb) -> list[go.Figure]:
    """The plotly figures a notebook displayed (its plotly JSON outputs), in order."""
    figs = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if PLOTLY_MIME in o.get("data", {}):
                figs.append(go.Figure(decode_arrays(dict(o["data"][PLOTLY_MIME])), skip_invalid=True))
    return figs


def slug(text: str, most: int = 60) -> str:
    return re.sub(r"[^a-z0-9]+", "-", _plain(text).lower()).strip("-")[:most].strip("-") or "figure"


def export_notebook_figures(nb, out_dir, formats=FORMATS, prefix: str = "") -> list[Path]:
    """Every plotly figure of an executed notebook as <prefix>-NN-<title>.<fmt> in `out_dir`."""
    paths = []
    for i, fig in enumerate(notebook_figures(nb), start=1):
        title = re.split(r"\s*\(", fig.layout.title.text or "")[0]     # without "(error bars ...)"
        stem = Path(out_dir) / f"{prefix}{'-' if prefix else ''}{i:02d}-{slug(title)}"
        paths += save_static(fig, stem, formats)
    return paths
