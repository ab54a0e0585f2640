"""Plots over the tidy tables; every function returns a figure and shows nothing.

Static figures are `matplotlib.figure.Figure` objects on the Agg canvas, built
without pyplot so no global state or GUI backend is touched (notebooks still
display them). The `*_interactive` plotly twins live in `plots_interactive` and are
re-exported here, as are the shared orders and labels of `plot_base`. Error bars
always say what they are: SD (spread) or 95% CI (mean). The static versions of every
report figure (`zbench report --figures png,svg`) are drawn by `figures_static`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from matplotlib.figure import Figure

from zbench_lib.analysis.figures.axes import fit_axes, log_ticks
from zbench_lib.analysis.figures.plot_base import (CI_LABEL, LAYER_ORDER, LAYOUT_ORDER, PERCENTILE_COLUMNS,  # noqa: F401
                                                   LABEL_OFFSETS, PALETTE, SD_LABEL, agg_figure, legend_entry, mean_sd,
                                                   metric_label, ordered)
from zbench_lib.analysis.data.metrics import metric_of
from zbench_lib.analysis.data.sweep_data import setting_text
from zbench_lib.analysis.stats.load_curves import load_curves
from zbench_lib.analysis.figures.plots_interactive import (iops_p99_means, iops_p99_labels, iops_p99_ranges,  # noqa: F401
                                                           plot_iops_vs_p99_interactive,
                                                           plot_latency_percentiles_interactive,
                                                           plot_scaling_interactive,
                                                           plot_timeseries_interactive,
                                                           plot_volblocksize_map_interactive, scaling_data,
                                                           ts_parts, vbs_cells, vbs_labels, vbs_title)
from zbench_lib.analysis.figures.report_figures import plot_iops_vs_drives  # noqa: F401
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size

__all__ = ["CI_LABEL", "LAYER_ORDER", "LAYOUT_ORDER", "PERCENTILE_COLUMNS", "SD_LABEL", "plot_iops_vs_drives",
           "plot_iops_vs_p99", "plot_iops_vs_p99_interactive", "plot_latency_percentiles",
           "plot_latency_percentiles_interactive", "plot_scaling", "plot_scaling_interactive", "plot_timeseries",
           "plot_timeseries_interactive", "plot_volblocksize_map", "plot_volblocksize_map_interactive",
           "save_figure"]
_figure = agg_figure


# -- static (matplotlib) versions ----------------------------------------------------------

def plot_scaling(scaling_df: pd.DataFrame, kind: str = "scaling", error: str = "ci",
                 family: str = "layout", disks_col: str = "data_disks", title: str = "",
                 ylabel: str | None = None) -> Figure:
    """Scaling (or per-data-disk value, or efficiency) vs data disks, per layout, with the ideal.

    Takes the output of `stats.scaling` for one workload. `error` is 'ci' (95% CI)
    or 'sd' (spread, only for kind='per_disk'); the legend title names it. Pass
    `ylabel` to name the metric (e.g. "IOPS per data disk").
    """
    series, ideal, default_ylabel, elabel = scaling_data(scaling_df, kind, error, family, disks_col)
    fig, ax = _figure()
    ax = ax[0, 0]
    colors = {}
    for i, (name, x, y, lo, hi, n) in enumerate(series):
        colors[name] = f"C{i}"
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, color=colors[name], label=name)
        for xi, yi, ni in zip(x, y, n):
            if ni == 1:
                ax.annotate("n=1", (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
    for j, (label, fam, ix, iy) in enumerate(ideal):
        first = j == 0 or fam is None
        line, = ax.plot(ix, iy, linestyle="--", linewidth=1, color=colors.get(fam, "black"),
                        label=label if first else "_nolegend_")
        line.set_gid("ideal")
    ax.set_xticks(sorted(pd.unique(scaling_df[disks_col])))
    ax.set_xlabel("data disks")
    ax.set_ylabel(ylabel or default_ylabel)
    ax.legend(title=elabel, fontsize="small", title_fontsize="small")
    ax.set_title(title)
    return fig


def plot_iops_vs_p99(df: pd.DataFrame, hue: str = "layout", latency_target_ms: float | None = None,
                     title: str = "") -> Figure:
    """Mean IOPS against mean p99 latency, one line per `hue` through the iodepths, labelled
    where the label has room (the same placement as `plot_iops_vs_p99_interactive`)."""
    a = iops_p99_means(df, hue)
    x_range, y_range = iops_p99_ranges(a, latency_target_ms)
    a = iops_p99_labels(a, hue, x_range, y_range)
    fig, ax = _figure()
    ax = ax[0, 0]
    for i, name in enumerate(ordered(a[hue], LAYOUT_ORDER)):
        g = a[a[hue] == name]
        ax.errorbar(g["iops_mean"], g["lat_p99_ms_mean"], xerr=g["iops_sd"].fillna(0),
                    yerr=g["lat_p99_ms_sd"].fillna(0), marker="o", capsize=2, color=f"C{i}",
                    label=str(name))
        for _, r in g[g["label_pos"].notna()].iterrows():
            offset, ha, va = LABEL_OFFSETS[r["label_pos"]]
            ax.annotate(r["label"], (r["iops_mean"], r["lat_p99_ms_mean"]), fontsize=7, xytext=offset,
                        textcoords="offset points", ha=ha, va=va)
    if latency_target_ms is not None:
        ax.axhline(latency_target_ms, color="red", linestyle=":", label="p99 target")
    ax.set_xlim(*x_range)            # from zero: a flat curve must look flat
    ax.set_ylim(*y_range)
    ax.set_xlabel("IOPS (mean)")
    ax.set_ylabel("p99 latency (ms, mean)")
    ax.legend(title=SD_LABEL, fontsize="small", title_fontsize="small")
    ax.set_title(title)
    return fig


def plot_latency_percentiles(df: pd.DataFrame, hue: str = "config_id", title: str = "") -> Figure:
    """Completion-latency percentiles (p50 … p99.99) per `hue`, log latency axis, ±1 SD."""
    cols = {k: c for k, c in PERCENTILE_COLUMNS.items() if c in df.columns}
    if not cols:
        raise ConfigError(f"no latency percentile columns among {list(PERCENTILE_COLUMNS.values())}")
    a = mean_sd(df, [hue], list(cols.values()))
    fig, ax = _figure()
    ax = ax[0, 0]
    x = np.arange(len(cols))
    for i, (_, r) in enumerate(a.iterrows()):
        y = np.array([r[f"{c}_mean"] for c in cols.values()]) / 1e6
        sd = np.nan_to_num(np.array([r[f"{c}_sd"] for c in cols.values()]) / 1e6)
        ax.errorbar(x, y, yerr=sd, marker="o", capsize=3, color=f"C{i}", label=str(r[hue]))
    ax.set_xticks(x, list(cols))
    ax.set_yscale("log")
    ax.set_yticks(*log_ticks(*ax.get_ylim(), unit="ms"))        # full numbers, as the interactive twin's
    ax.set_yticks([], minor=True)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (log)")
    ax.legend(title=SD_LABEL, fontsize="small", title_fontsize="small")
    ax.set_title(title)
    return fig


def plot_volblocksize_map(df: pd.DataFrame, metric: str, row: str = "layout", title: str = "") -> Figure:
    """Heatmap of the mean `metric`: `row` (layout) × volblocksize, each cell with its n and 95% CI; "auto" is
    the workload's own metric (`metrics.metric_of`)."""
    metric = metric_of(df, metric)
    cells, unit = vbs_cells(df, metric, row)
    p = cells["mean"]
    label, scale = metric_label(metric)
    z = p.to_numpy(float) * scale
    text, _ = vbs_labels(cells, scale, unit, br="\n")
    fig, ax = _figure(figsize=(1.4 * p.shape[1] + 3, 0.8 * p.shape[0] + 2))
    ax = ax[0, 0]
    im = ax.imshow(z, aspect="auto", cmap="viridis")
    ax.set_xticks(range(p.shape[1]), [format_size(int(v)) for v in p.columns])
    ax.set_yticks(range(p.shape[0]), [str(v) for v in p.index])
    finite = z[np.isfinite(z)]
    mid = (finite.min() + finite.max()) / 2 if finite.size else 0
    for (i, j), v in np.ndenumerate(z):
        if np.isfinite(v):
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=8, color="black" if v > mid else "white")
    fig.colorbar(im, ax=ax, label=f"{label} (mean)")
    ax.set_xlabel("volblocksize")
    ax.set_ylabel(row)
    ax.set_title(vbs_title(title, unit))
    return fig


def plot_timeseries(ts_df: pd.DataFrame, metrics=None, title: str = "") -> Figure:
    """One run's counters over time: one panel per metric, one line per layer (fio/pool/device)."""
    metrics, layers = ts_parts(ts_df, metrics)
    fig, axes = _figure(len(metrics), 1, figsize=(8, 2.4 * len(metrics) + 0.5), sharex=True)
    for ax, m in zip(axes[:, 0], metrics):
        label, scale = metric_label(m)
        for i, layer in enumerate(layers):
            g = ts_df[(ts_df["metric"] == m) & (ts_df["layer"] == layer)].sort_values("t_s")
            if len(g):
                ax.plot(g["t_s"], g["value"] * scale, label=str(layer), color=f"C{i}")
        ax.set_ylabel(label)
        ax.legend(fontsize="small")
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title)
    return fig


def save_figure(fig, path_stem, dpi: int = 150, include_plotlyjs=True) -> list[Path]:
    """Write a matplotlib figure as PNG + SVG, or a plotly figure as self-contained HTML."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(fig, Figure):
        paths = [stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")]
        for p in paths:
            fig.savefig(p, dpi=dpi)
        return paths
    if isinstance(fig, go.Figure):
        path = stem.with_name(stem.name + ".html")
        fig.write_html(path, include_plotlyjs=include_plotlyjs)
        return [path]
    raise ConfigError(f"save_figure: expected a matplotlib or plotly figure, got {type(fig).__name__}")


_LOAD_DASH = {"p50": "dot", "p99": "solid", "p99.9": "dash"}
_DASH_WORD = {"dot": "dotted", "dash": "dashed"}
LOAD_LOG_X = 3.0        # a panel whose curves' saturations differ more than this many times gets a log IOPS axis


def _load_panels(curves) -> list[tuple[str, str]]:
    """(workload, direction) of each panel, in the curves' order: reads and writes of a workload apart."""
    return list(dict.fromkeys((str(dict(c.config).get("workload", "")), c.direction) for c in curves))


def plot_latency_vs_load(df: pd.DataFrame, hist: pd.DataFrame | None, x: str = "achieved",
                         title: str = "") -> go.Figure:
    """Latency against load (the load factor): a curve per configuration and direction, its p50 / p99 /
    p99.9 (dotted, solid, dashed) against the `x` IOPS ("achieved" or "offered"; saturation, closed
    loop, is the last point and has no offer), log latency axis, the knee ringed (methods §21).

    One panel per workload and direction, each with its own IOPS axis (a disk's reads at 200 IOPS and its
    writes at 1,000 on one axis squash the reads into a corner) and one latency axis for all, so a
    height means the same latency in every panel.

    Each percentile is the cell's, from the merged histograms in `hist` (`Sweep.histograms`; methods
    §18), the p99 with its 95% interval as an error bar; a percentile not judged (no histogram, too
    few I/Os) is a gap, never a median of the runs' own percentiles."""
    from plotly.subplots import make_subplots
    if x not in ("achieved", "offered"):
        raise ConfigError(f"x must be 'achieved' or 'offered', got {x!r}")
    curves = load_curves(df, hist)
    if not curves:
        raise ConfigError("no load factor in these results: latency against load needs a sweep with `load`")
    panels = _load_panels(curves)
    cols = min(len(panels), 3)
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.07, vertical_spacing=0.18,
                        subplot_titles=[f"{w} {d}s".strip() for w, d in panels])
    tops: dict[int, list[float]] = {}
    for i, c in enumerate(curves):      # one colour per curve, its percentiles by dash
        at = panels.index((str(dict(c.config).get("workload", "")), c.direction))
        _load_curve_traces(fig, c, x, PALETTE[i % len(PALETTE)], row=at // cols + 1, col=at % cols + 1)
        tops.setdefault(at, []).append(max(p.achieved_iops for p in c.points))
    _load_legend(fig)
    fig.update_xaxes(title_text=f"{x} IOPS", rangemode="tozero")
    for at, top in tops.items():
        if max(top) > LOAD_LOG_X * min(top):
            # 8K writes at 1,000 IOPS beside 128K writes at 100: on a linear axis the slower curve is a smudge at 0
            fig.update_xaxes(type="log", rangemode="normal", title_text=f"{x} IOPS (log)",
                             row=at // cols + 1, col=at % cols + 1)
    fig.update_yaxes(type="log", matches="y")
    fig.update_yaxes(title_text="latency (log)", col=1)
    fig.update_layout(title=title or "latency against load (saturation: closed loop, the last point)",
                      height=max(450, 380 * rows))
    return fit_axes(fig, "xy", units={"y": "ms"})


def _drawn(fig: go.Figure, suffix: str) -> bool:
    """Whether a trace named '... <suffix>' draws a point (a percentile not judged anywhere draws none)."""
    return any(t.name and t.name.endswith(suffix) and np.isfinite(np.asarray(t.y, float)).any() for t in fig.data)


def _load_legend(fig: go.Figure) -> None:
    """A curve's colour is named once (its p99 line); the other percentiles and the knee by grey entries, so the
    legend fits beside the panels (twelve percentile lines scrolled out of sight); each only where drawn."""
    for pct in ("p50", "p99.9"):
        if _drawn(fig, f" {pct}"):
            legend_entry(fig, f"{pct} ({_DASH_WORD[_LOAD_DASH[pct]]}, each curve's colour)", _LOAD_DASH[pct],
                         "percentiles")
    if not _drawn(fig, " knee"):
        return
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="knee (ringed)", legendgroup="percentiles",
                             marker=dict(size=12, symbol="circle-open", color="#666666", line=dict(width=2)),
                             hoverinfo="skip"))


def _load_curve_traces(fig: go.Figure, c, x: str, color: str, **cell) -> None:
    """A curve's p50 / p99 / p99.9 lines (the p99 with its interval) and its ringed knee, into one panel."""
    name = ", ".join(setting_text(k, v) for k, v in c.config) + f" {c.direction}"
    pts = [p for p in c.points if x == "achieved" or not p.saturation]
    xs = [p.achieved_iops if x == "achieved" else p.offered_iops for p in pts]
    for pct, dash in _LOAD_DASH.items():
        tails = [p.tail(pct) for p in pts]
        ys = [t.value_ns / 1e6 for t in tails]
        err = None
        if pct == "p99" and any(t.has_interval for t in tails):
            up = [(t.hi_ns - t.value_ns) / 1e6 if t.has_interval and math.isfinite(t.hi_ns) else None
                  for t in tails]
            down = [(t.value_ns - t.lo_ns) / 1e6 if t.has_interval else None for t in tails]
            err = dict(type="data", symmetric=False, array=up, arrayminus=down, thickness=1)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=f"{name} {pct}", legendgroup=name,
                                 showlegend=pct == "p99", line=dict(color=color, dash=dash), error_y=err,
                                 text=[f"{p.load}: {t.status}" if not t.judged else p.load
                                       for p, t in zip(pts, tails)],
                                 hovertemplate="%{text}: %{y:.3g} ms<extra></extra>"), **cell)
    if c.knee is not None and any(c.knee is p for p in pts):
        k = c.knee
        fig.add_trace(go.Scatter(x=[k.achieved_iops if x == "achieved" else k.offered_iops], y=[k.p99_ns / 1e6],
                                 mode="markers", name=f"{name} knee", legendgroup=name, showlegend=False,
                                 marker=dict(size=14, symbol="circle-open", line=dict(width=2, color=color))),
                      **cell)
