"""Plots over the tidy tables; every function returns a figure and shows nothing.

Static figures are `matplotlib.figure.Figure` objects on the Agg canvas, built
without pyplot so no global state or GUI backend is touched (notebooks still
display them). `*_interactive` twins return plotly figures drawn from the same
aggregated data. Error bars always say what they are: SD (spread) or 95% CI (mean).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from plotly.subplots import make_subplots

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size

LAYOUT_ORDER = ["stripe", "mirror", "raidz1", "raidz2", "raidz3"]
LAYER_ORDER = ["fio", "pool", "device"]
PERCENTILE_COLUMNS = {"p50": "clat_p50_ns", "p90": "clat_p90_ns", "p95": "clat_p95_ns",
                      "p99": "clat_p99_ns", "p99.9": "clat_p99_9_ns", "p99.99": "clat_p99_99_ns"}
SD_LABEL = "error bars: ±1 SD over repetitions"
CI_LABEL = "error bars: 95% CI of the mean"


def _figure(nrows=1, ncols=1, figsize=(7, 4.5), **kw):
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def _ordered(values, order):
    values = list(pd.unique(pd.Series(values)))
    return [v for v in order if v in values] + sorted((v for v in values if v not in order), key=str)


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _mean_sd(df, keys, cols):
    """Mean and SD of `cols` over repetitions; refuses to pool several configurations."""
    missing = [c for c in keys + cols if c not in df.columns]
    if missing:
        raise ConfigError(f"plot needs columns {missing}")
    if "rep" in df.columns and df.duplicated(keys + ["rep"]).any():
        raise ConfigError(f"several runs share {keys} and rep: filter to one configuration per "
                          f"point (e.g. one workload and direction) before plotting")
    g = df.groupby(keys, sort=True)[cols]
    out = g.mean().add_suffix("_mean").join(g.std().add_suffix("_sd")).join(g.size().rename("n"))
    return out.reset_index()


# -- scaling ---------------------------------------------------------------------------------

_KINDS = {"scaling": ("scaling", "scaling T(D)/T(D0)"),
          "per_disk": ("per_disk_mean", "per data disk"),
          "efficiency": ("efficiency", "scaling efficiency E")}


def _scaling_data(s, kind, error, family, disks_col):
    if kind not in _KINDS:
        raise ConfigError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
    if error not in ("ci", "sd"):
        raise ConfigError(f"error must be 'ci' or 'sd', got {error!r}")
    if error == "sd" and kind != "per_disk":
        raise ConfigError("SD error bars exist only for kind='per_disk' (ratios carry a CI)")
    if s.duplicated([family, disks_col]).any():
        raise ConfigError("several rows per family and data-disk count: filter to one workload first")
    col, ylabel = _KINDS[kind]
    series, ideal = [], []
    for name in _ordered(s[family], LAYOUT_ORDER):
        g = s[s[family] == name].sort_values(disks_col)
        x, y = g[disks_col].to_numpy(float), g[col].to_numpy(float)
        if error == "sd":
            lo = hi = g["per_disk_std"].to_numpy(float)
        else:
            low, high = (col.replace("_mean", "") + "_ci_low", col.replace("_mean", "") + "_ci_high")
            lo, hi = y - g[low].to_numpy(float), g[high].to_numpy(float) - y
        series.append((str(name), x, y, lo, hi))
        if kind == "per_disk":                 # ideal: the baseline's per-disk value, flat
            d0 = float(g["baseline_disks"].iloc[0])
            xs = np.array([min(d0, x.min()), x.max()])
            ideal.append(("ideal (baseline per disk)", str(name), xs, np.full(2, g["baseline_mean"].iloc[0] / d0)))
    if kind != "per_disk":                     # one ideal line per baseline size, over all x
        d0s = sorted(pd.unique(s["baseline_disks"].astype(float)))
        xs = np.array([min(min(d0s), s[disks_col].min()), s[disks_col].max()], dtype=float)
        for d0 in (d0s if kind == "scaling" else d0s[:1]):
            label = "ideal" if len(d0s) == 1 or kind != "scaling" else f"ideal (D0={d0:g})"
            ideal.append((label, None, xs, xs / d0 if kind == "scaling" else np.ones(2)))
    return series, ideal, ylabel, (SD_LABEL if error == "sd" else CI_LABEL)


def plot_scaling(scaling_df: pd.DataFrame, kind: str = "scaling", error: str = "ci",
                 family: str = "layout", disks_col: str = "data_disks", title: str = "",
                 ylabel: str | None = None) -> Figure:
    """Scaling (or per-data-disk value, or efficiency) vs data disks, per layout, with the ideal.

    Takes the output of `stats.scaling` for one workload. `error` is 'ci' (95% CI)
    or 'sd' (spread, only for kind='per_disk'); the legend title names it. Pass
    `ylabel` to name the metric (e.g. "IOPS per data disk").
    """
    series, ideal, default_ylabel, elabel = _scaling_data(scaling_df, kind, error, family, disks_col)
    fig, ax = _figure()
    ax = ax[0, 0]
    colors = {}
    for i, (name, x, y, lo, hi) in enumerate(series):
        colors[name] = f"C{i}"
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, color=colors[name], label=name)
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


def plot_scaling_interactive(scaling_df: pd.DataFrame, kind: str = "scaling", error: str = "ci",
                             family: str = "layout", disks_col: str = "data_disks",
                             title: str = "", ylabel: str | None = None) -> go.Figure:
    """Plotly twin of `plot_scaling`."""
    series, ideal, default_ylabel, elabel = _scaling_data(scaling_df, kind, error, family, disks_col)
    fig = go.Figure()
    for name, x, y, lo, hi in series:
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines+markers",
                                 error_y=dict(type="data", array=hi, arrayminus=lo, visible=True)))
    for j, (label, fam, ix, iy) in enumerate(ideal):
        fig.add_trace(go.Scatter(x=ix, y=iy, name=label, legendgroup=label, mode="lines",
                                 line=dict(dash="dash", color="black"), meta="ideal",
                                 showlegend=j == 0 or fam is None,
                                 hovertext=f"{label} ({fam})" if fam else label))
    fig.update_layout(title=f"{title} ({elabel})".strip(), xaxis_title="data disks",
                      yaxis_title=ylabel or default_ylabel)
    return fig


# -- IOPS vs p99 across iodepth --------------------------------------------------------------

def _iops_p99(df, hue):
    a = _mean_sd(df, [hue, "iodepth"], ["iops", "clat_p99_ns"])
    for c in ("clat_p99_ns_mean", "clat_p99_ns_sd"):
        a[c.replace("_ns", "_ms")] = a[c] / 1e6
    return a


def plot_iops_vs_p99(df: pd.DataFrame, hue: str = "layout", latency_target_ms: float | None = None,
                     title: str = "") -> Figure:
    """Mean IOPS against mean p99 completion latency, one line per `hue` through the iodepths."""
    a = _iops_p99(df, hue)
    fig, ax = _figure()
    ax = ax[0, 0]
    for i, name in enumerate(_ordered(a[hue], LAYOUT_ORDER)):
        g = a[a[hue] == name]
        ax.errorbar(g["iops_mean"], g["clat_p99_ms_mean"], xerr=g["iops_sd"].fillna(0),
                    yerr=g["clat_p99_ms_sd"].fillna(0), marker="o", capsize=2, color=f"C{i}",
                    label=str(name))
        for _, r in g.iterrows():
            ax.annotate(f"qd{int(r['iodepth'])}", (r["iops_mean"], r["clat_p99_ms_mean"]),
                        fontsize=7, xytext=(3, 3), textcoords="offset points")
    if latency_target_ms is not None:
        ax.axhline(latency_target_ms, color="red", linestyle=":", label="p99 target")
    ax.set_xlabel("IOPS (mean)")
    ax.set_ylabel("p99 completion latency (ms, mean)")
    ax.legend(title=SD_LABEL, fontsize="small", title_fontsize="small")
    ax.set_title(title)
    return fig


def plot_iops_vs_p99_interactive(df: pd.DataFrame, hue: str = "layout",
                                 latency_target_ms: float | None = None, title: str = "") -> go.Figure:
    """Plotly twin of `plot_iops_vs_p99`; hover shows the iodepth and the number of runs."""
    a = _iops_p99(df, hue)
    fig = go.Figure()
    for name in _ordered(a[hue], LAYOUT_ORDER):
        g = a[a[hue] == name]
        fig.add_trace(go.Scatter(
            x=g["iops_mean"], y=g["clat_p99_ms_mean"], name=str(name), mode="lines+markers+text",
            text=[f"qd{int(q)}" for q in g["iodepth"]], textposition="top right",
            customdata=g[["iodepth", "n"]].to_numpy(),
            hovertemplate="iodepth %{customdata[0]}<br>IOPS %{x:.0f}<br>p99 %{y:.2f} ms"
                          "<br>runs %{customdata[1]}",
            error_x=dict(type="data", array=g["iops_sd"].fillna(0)),
            error_y=dict(type="data", array=g["clat_p99_ms_sd"].fillna(0))))
    if latency_target_ms is not None:
        fig.add_hline(y=latency_target_ms, line_dash="dot", line_color="red")
    fig.update_layout(title=f"{title} ({SD_LABEL})".strip(), xaxis_title="IOPS (mean)",
                      yaxis_title="p99 completion latency (ms)")
    return fig


# -- latency percentiles, volblocksize map, time series --------------------------------------

def plot_latency_percentiles(df: pd.DataFrame, hue: str = "config_id", title: str = "") -> Figure:
    """Completion-latency percentiles (p50 … p99.99) per `hue`, log latency axis, ±1 SD."""
    cols = {k: c for k, c in PERCENTILE_COLUMNS.items() if c in df.columns}
    if not cols:
        raise ConfigError(f"no latency percentile columns among {list(PERCENTILE_COLUMNS.values())}")
    a = _mean_sd(df, [hue], list(cols.values()))
    fig, ax = _figure()
    ax = ax[0, 0]
    x = np.arange(len(cols))
    for i, (_, r) in enumerate(a.iterrows()):
        y = np.array([r[f"{c}_mean"] for c in cols.values()]) / 1e6
        sd = np.nan_to_num(np.array([r[f"{c}_sd"] for c in cols.values()]) / 1e6)
        ax.errorbar(x, y, yerr=sd, marker="o", capsize=3, color=f"C{i}", label=str(r[hue]))
    ax.set_xticks(x, list(cols))
    ax.set_yscale("log")
    ax.set_xlabel("percentile")
    ax.set_ylabel("completion latency (ms)")
    ax.legend(title=SD_LABEL, fontsize="small", title_fontsize="small")
    ax.set_title(title)
    return fig


def _vbs_pivot(df, metric, row):
    a = _mean_sd(df, [row, "volblocksize_bytes"], [metric])
    p = a.pivot(index=row, columns="volblocksize_bytes", values=f"{metric}_mean")
    return p.reindex(_ordered(p.index, LAYOUT_ORDER)).sort_index(axis=1)


def plot_volblocksize_map(df: pd.DataFrame, metric: str, row: str = "layout", title: str = "") -> Figure:
    """Heatmap of the mean `metric` over repetitions: `row` (layout) × volblocksize."""
    p = _vbs_pivot(df, metric, row)
    fig, ax = _figure(figsize=(1.1 * p.shape[1] + 3, 0.6 * p.shape[0] + 2))
    ax = ax[0, 0]
    im = ax.imshow(p.to_numpy(float), aspect="auto", cmap="viridis")
    ax.set_xticks(range(p.shape[1]), [format_size(int(v)) for v in p.columns])
    ax.set_yticks(range(p.shape[0]), [str(v) for v in p.index])
    finite = p.to_numpy(float)[np.isfinite(p.to_numpy(float))]
    mid = (finite.min() + finite.max()) / 2 if finite.size else 0
    for (i, j), v in np.ndenumerate(p.to_numpy(float)):
        if np.isfinite(v):
            ax.text(j, i, _fmt(v), ha="center", va="center", fontsize=8,
                    color="black" if v > mid else "white")
    fig.colorbar(im, ax=ax, label=f"{metric} (mean)")
    ax.set_xlabel("volblocksize")
    ax.set_ylabel(row)
    ax.set_title(title)
    return fig


def plot_volblocksize_map_interactive(df: pd.DataFrame, metric: str, row: str = "layout",
                                      title: str = "") -> go.Figure:
    """Plotly twin of `plot_volblocksize_map`."""
    p = _vbs_pivot(df, metric, row)
    z = p.to_numpy(float)
    fig = go.Figure(go.Heatmap(z=z, x=[format_size(int(v)) for v in p.columns],
                               y=[str(v) for v in p.index], colorscale="Viridis",
                               text=[[_fmt(v) if np.isfinite(v) else "" for v in r] for r in z], texttemplate="%{text}",
                               colorbar=dict(title=f"{metric} (mean)")))
    fig.update_layout(title=title, xaxis_title="volblocksize", yaxis_title=row)
    return fig


def _ts_parts(ts_df, metrics):
    missing = {"t_s", "layer", "metric", "value"} - set(ts_df.columns)
    if missing:
        raise ConfigError(f"time series needs columns {sorted(missing)}")
    metrics = list(metrics) if metrics else list(pd.unique(ts_df["metric"]))
    return metrics, _ordered(ts_df["layer"], LAYER_ORDER)


def plot_timeseries(ts_df: pd.DataFrame, metrics=None, title: str = "") -> Figure:
    """One run's counters over time: one panel per metric, one line per layer (fio/pool/device)."""
    metrics, layers = _ts_parts(ts_df, metrics)
    fig, axes = _figure(len(metrics), 1, figsize=(8, 2.4 * len(metrics) + 0.5), sharex=True)
    for ax, m in zip(axes[:, 0], metrics):
        for i, layer in enumerate(layers):
            g = ts_df[(ts_df["metric"] == m) & (ts_df["layer"] == layer)].sort_values("t_s")
            if len(g):
                ax.plot(g["t_s"], g["value"], label=str(layer), color=f"C{i}")
        ax.set_ylabel(m)
        ax.legend(fontsize="small")
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title)
    return fig


def plot_timeseries_interactive(ts_df: pd.DataFrame, metrics=None, title: str = "") -> go.Figure:
    """Plotly twin of `plot_timeseries`, panels sharing the time axis."""
    metrics, layers = _ts_parts(ts_df, metrics)
    fig = make_subplots(rows=len(metrics), cols=1, shared_xaxes=True, subplot_titles=metrics)
    for r, m in enumerate(metrics, start=1):
        for layer in layers:
            g = ts_df[(ts_df["metric"] == m) & (ts_df["layer"] == layer)].sort_values("t_s")
            if len(g):
                fig.add_trace(go.Scatter(x=g["t_s"], y=g["value"], name=str(layer), mode="lines",
                                         legendgroup=str(layer), showlegend=r == 1), row=r, col=1)
    fig.update_xaxes(title_text="time (s)", row=len(metrics), col=1)
    fig.update_layout(title=title, height=250 * len(metrics) + 100)
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
