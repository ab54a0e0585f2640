"""What every chart shares: orders, colours, units, captions, readable log ticks, n labels.

Colours are fixed per layout (stripe, mirror, raidz1 ... always the same colour) and per
layer (fio, pool, device), so a legend read on one chart holds for the next. Captions are
plotly annotations named `CAPTION_NAME`, placed under the plot; the static (seaborn)
versions read them back.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd

from zbench_lib.core.errors import ConfigError

LAYOUT_ORDER = ["stripe", "mirror", "raidz1", "raidz2", "raidz3"]
LAYER_ORDER = ["fio", "pool", "device"]
PERCENTILE_COLUMNS = {"p50": "lat_p50_ns", "p90": "lat_p90_ns", "p95": "lat_p95_ns",
                      "p99": "lat_p99_ns", "p99.9": "lat_p99_9_ns", "p99.99": "lat_p99_99_ns"}
SD_LABEL = "error bars: ±1 SD over repetitions"
CI_LABEL = "error bars: 95% CI of the mean"
N1_NOTE = "n=1: a single admissible run, no error bar"
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
LAYER_COLORS = {"fio": PALETTE[0], "pool": PALETTE[1], "device": PALETTE[2]}
CAPTION_NAME = "zbench-caption"
# One marker per layout family and one dash per vdev count (issue 31): six raidz1 series in one
# colour and marker could not be told apart. Dotted stays the models', dashed-grey the ideal's.
MARKERS = {"stripe": "circle", "mirror": "square", "raidz1": "diamond", "raidz2": "triangle-up",
           "raidz3": "triangle-down", "draid1": "cross", "draid2": "x", "draid3": "star", "raw": "pentagon"}
VDEV_DASHES = ("solid", "dash", "longdash", "dashdot", "longdashdot")
# metric -> (axis label with its unit, factor from the stored unit)
METRICS = {"iops": ("IOPS", 1.0), "bw_bytes_s": ("MiB/s", 1 / 2 ** 20),
           "lat_p99_ns": ("p99 latency (ms)", 1e-6), "lat_p99_ms": ("p99 latency (ms)", 1.0),
           "lat_mean_ns": ("mean latency (ms)", 1e-6), "ops_s": ("operations/s", 1.0),
           "bytes_s": ("MiB/s", 1 / 2 ** 20)}


def agg_figure(nrows=1, ncols=1, figsize=(7, 4.5), **kw):
    """A matplotlib Figure on the Agg canvas with its axes, never registered in pyplot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False, **kw)


def metric_label(metric: str) -> tuple[str, float]:
    """Axis label (with unit) and scale factor of a stored metric: bytes/s -> MiB/s, ns -> ms."""
    if metric in METRICS:
        return METRICS[metric]
    if metric.endswith("_ns"):
        return f"{metric[:-3].replace('_', ' ')} (ms)", 1e-6
    if metric.endswith("_bytes_s"):
        return f"{metric[:-8].replace('_', ' ')} (MiB/s)", 1 / 2 ** 20
    return metric, 1.0


def ordered(values, order=LAYOUT_ORDER) -> list:
    values = list(pd.unique(pd.Series(values)))
    return [v for v in order if v in values] + sorted((v for v in values if v not in order), key=str)


def colors_for(names) -> dict:
    """A fixed colour per layout name; other names take the palette in their order."""
    out, spare = {}, iter(c for i, c in enumerate(PALETTE) if i >= len(LAYOUT_ORDER))
    for i, name in enumerate(ordered(names)):
        key = str(name)
        if key in LAYOUT_ORDER:
            out[name] = PALETTE[LAYOUT_ORDER.index(key)]
        elif key in LAYER_COLORS:
            out[name] = LAYER_COLORS[key]
        else:
            out[name] = next(spare, PALETTE[i % len(PALETTE)])
    return out


def split_family(name) -> tuple[str, int]:
    """'2x raidz1' -> ('raidz1', 2); 'mirror' -> ('mirror', 1): a scaling family's layout and vdevs.

    Examples
    --------
    >>> split_family("2x raidz1"), split_family("mirror")
    (('raidz1', 2), ('mirror', 1))
    """
    head, _, rest = str(name).partition("x ")
    return (rest, int(head)) if rest and head.isdigit() else (str(name), 1)


def family_style(names) -> dict:
    """name -> (colour, marker, dash): the layout's colour and marker, a dash per vdev count.

    Names are layouts or scaling families ('2x raidz1', `tables.scaling_family`); a name
    outside the layouts keeps a colour of its own, a circle and a solid line.
    """
    names = list(pd.unique(pd.Series(list(names), dtype=object)))
    layouts = [split_family(n)[0] for n in names]
    colors = colors_for(layouts)
    return {n: (colors[lay], MARKERS.get(lay, "circle"), VDEV_DASHES[(v - 1) % len(VDEV_DASHES)])
            for n, (lay, v) in zip(names, map(split_family, names))}


def shade(color: str, factor: float) -> str:
    """The same hue darker (factor < 1) or lighter (factor > 1)."""
    r, g, b = (int(color.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4))
    if factor <= 1:
        r, g, b = (round(c * factor) for c in (r, g, b))
    else:
        r, g, b = (round(c + (255 - c) * (1 - 1 / factor)) for c in (r, g, b))
    return f"#{r:02x}{g:02x}{b:02x}"


def fmt(v: float) -> str:
    """A number as people write it: 1,234 / 12.3 / 0.0123, never 1.2e-02."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    v = float(v)
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if v == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(v)))))
    return f"{v:.{digits}f}"


def one_configuration(df, keys, cols):
    """Refuse a table lacking `keys` + `cols`, or one whose points would pool several configurations."""
    missing = [c for c in keys + cols if c not in df.columns]
    if missing:
        raise ConfigError(f"plot needs columns {missing}")
    # A run is one repetition on one pool replicate: rep numbers restart on each re-created pool.
    run_ids = [c for c in ("pool_replicate", "rep") if c in df.columns]
    if "rep" in run_ids and df.duplicated(keys + run_ids).any():
        raise ConfigError(f"several runs share {keys} and {' and '.join(run_ids)}: filter to one "
                          f"configuration per point (e.g. one workload and direction) before plotting")


def mean_sd(df, keys, cols):
    """Mean and SD of `cols` over repetitions; refuses to pool several configurations."""
    one_configuration(df, keys, cols)
    g = df.groupby(keys, sort=True)[cols]
    out = g.mean().add_suffix("_mean").join(g.std().add_suffix("_sd")).join(g.size().rename("n"))
    return out.reset_index()


_FINE = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0)


def ratio_ticks(lo: float, hi: float, most: int = 7) -> tuple[list[float], list[str]]:
    """Tick values and labels ("0.5×", "1×", "2×") for a log ratio axis spanning [lo, hi]."""
    lo, hi = min(lo, 1.0), max(hi, 1.0)
    if hi / lo <= 2.5:
        cands = [v for v in _FINE if lo <= v <= hi]
    else:
        k = np.arange(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)
        cands = [float(2.0 ** e) for e in k if lo <= 2.0 ** e <= hi]
    while len(cands) > most:                      # thin symmetrically, keeping 1
        i1 = cands.index(1.0) if 1.0 in cands else 0
        cands = [v for i, v in enumerate(cands) if (i - i1) % 2 == 0]
    if len(cands) < 2:
        cands = sorted({round(lo, 2), 1.0, round(hi, 2)})
    return cands, [f"{v:g}×" for v in cands]


def wrap(text: str, width: int = 120) -> str:
    return "<br>".join(textwrap.wrap(text, width)) if text else ""


def add_caption(fig, text: str, width: int = 120):
    """Put `text` under the plot (replacing an earlier caption) and make room for it."""
    fig.layout.annotations = [a for a in fig.layout.annotations if a.name != CAPTION_NAME]
    if not text:
        return fig
    lines = wrap(text, width)
    n = lines.count("<br>") + 1
    fig.add_annotation(text=lines, name=CAPTION_NAME, xref="paper", yref="paper", x=0, y=0,
                       xanchor="left", yanchor="top", yshift=-58, showarrow=False, align="left",
                       font=dict(size=11, color="#444"))
    bottom = 80 + 15 * n
    fig.update_layout(margin=dict(b=max(bottom, (fig.layout.margin.b or 0))))
    return fig


def caption_of(fig) -> str:
    return next((a.text.replace("<br>", " ") for a in fig.layout.annotations if a.name == CAPTION_NAME), "")


def legend_entry(fig, name: str, dash: str, group: str, **subplot):
    """A legend-only grey line for a family of lines drawn in each layout's own colour."""
    import plotly.graph_objects as go
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=name, legendgroup=group, showlegend=True,
                             line=dict(color="#666666", dash=dash, width=1.5), hoverinfo="skip"), **subplot)
    return fig


def n_labels(n) -> list[str]:
    """'n=1' where a point rests on a single run, '' elsewhere."""
    return ["n=1" if (v == 1) else "" for v in pd.Series(n).fillna(0).astype(int)]


# Point labels that never overlap (issue 31: the depth curve printed "qd1", "qd2" and "qd4" on top of
# each other where p99 barely moved between them). A label's box is estimated in pixels of the smallest
# plot area the figure is drawn in, from 12 px text (under 7 px a character); each label takes the first
# of LABEL_POSITIONS where its box stays inside the plot and clear of every placed label and marker,
# else it is left off (the point keeps its hover text). Beside its point first: a label above or below
# it sits level with the next point where points crowd, and reads as that one's.
LABEL_POSITIONS = ("middle right", "middle left", "top right", "top left", "bottom right", "bottom left")
CHAR_PX, LINE_PX, GAP_PX, MARKER_PX, PAD_PX = 7.0, 15.0, 5.0, 8.0, 1.0
# The same positions in matplotlib (the static figures): offset in points, horizontal and vertical alignment.
LABEL_OFFSETS = {"top right": ((3, 3), "left", "bottom"), "top left": ((-3, 3), "right", "bottom"),
                 "bottom right": ((3, -3), "left", "top"), "bottom left": ((-3, -3), "right", "top"),
                 "top center": ((0, 3), "center", "bottom"), "middle right": ((4, 0), "left", "center"),
                 "middle left": ((-4, 0), "right", "center")}


def label_box(px: float, py: float, text: str, position: str) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) in pixels, y upwards, of `text` drawn at `position` ('top right' ...) of (px, py)."""
    vertical, horizontal = position.split()
    w = len(text) * CHAR_PX
    x0 = px + GAP_PX if horizontal == "right" else px - GAP_PX - w
    y0 = {"top": py + GAP_PX, "middle": py - LINE_PX / 2, "bottom": py - GAP_PX - LINE_PX}[vertical]
    return (x0, y0, x0 + w, y0 + LINE_PX)


def boxes_overlap(a, b, pad: float = PAD_PX) -> bool:
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def place_labels(points, x_range, y_range, plot_px) -> list[str | None]:
    """The position of each point's label, None where no position is free (see LABEL_POSITIONS).

    `points` are (x, y, text, first) in data units on linear axes spanning `x_range` and `y_range`,
    drawn in a plot area of `plot_px` (width, height) pixels; points with `first` set (a curve's ends)
    are placed before the others, which are placed in order.
    """
    w, h = plot_px
    to_px = [((x - x_range[0]) / (x_range[1] - x_range[0]) * w, (y - y_range[0]) / (y_range[1] - y_range[0]) * h)
             for x, y, _, _ in points]
    markers = [(px - MARKER_PX / 2, py - MARKER_PX / 2, px + MARKER_PX / 2, py + MARKER_PX / 2) for px, py in to_px]
    taken: list[tuple] = []
    out: list[str | None] = [None] * len(points)
    for i in sorted(range(len(points)), key=lambda i: (not points[i][3], i)):
        text = points[i][2]
        if not text:
            continue
        others = taken + markers[:i] + markers[i + 1:]        # a label starts beside its own marker
        for pos in LABEL_POSITIONS:
            box = label_box(*to_px[i], text, pos)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= w and box[3] <= h
            if inside and not any(boxes_overlap(box, t) for t in others):
                out[i] = pos
                taken.append(box)
                break
    return out
