"""The plotly charts of the reports (re-exported by `plots`): units on every axis, one colour
per layout or layer with every colour in the legend, "n=1" on points resting on one run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from zbench_lib.analysis.figures.axes import fit_axes
from zbench_lib.analysis.figures.plot_base import (CI_LABEL, LAYER_COLORS, LAYER_ORDER, LAYOUT_ORDER,
                                                   PERCENTILE_COLUMNS, SD_LABEL, colors_for, family_style, fmt,
                                                   legend_entry,
                                                   mean_sd, metric_label, n_labels, one_configuration, ordered,
                                                   place_labels)
from zbench_lib.analysis.data.metrics import metric_of
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size

_KINDS = {"scaling": ("scaling", "scaling T(D)/T(D0) (×)"),
          "per_disk": ("per_disk_mean", "per data disk"),
          "efficiency": ("efficiency", "scaling efficiency E (1 = linear)")}


def scaling_data(s, kind, error, family, disks_col):
    """(series, ideal lines, y label, error label) shared by the plotly and matplotlib versions."""
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
    for name in ordered(s[family], LAYOUT_ORDER):
        g = s[s[family] == name].sort_values(disks_col)
        x, y = g[disks_col].to_numpy(float), g[col].to_numpy(float)
        if error == "sd":
            lo = hi = g["per_disk_std"].to_numpy(float)
        else:
            low, high = (col.replace("_mean", "") + "_ci_low", col.replace("_mean", "") + "_ci_high")
            lo, hi = y - g[low].to_numpy(float), g[high].to_numpy(float) - y
        n = g["n"].to_numpy() if "n" in g else np.full(len(g), np.nan)
        series.append((str(name), x, y, np.nan_to_num(lo), np.nan_to_num(hi), n))
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


def plot_scaling_interactive(scaling_df: pd.DataFrame, kind: str = "scaling", error: str = "ci",
                             family: str = "layout", disks_col: str = "data_disks",
                             title: str = "", ylabel: str | None = None) -> go.Figure:
    """Scaling, per-data-disk value or efficiency against data disks, one colour per layout.

    Ideal lines are dashed: per layout in its own colour (per-disk), else grey, with one
    legend entry; points resting on one run say "n=1".
    """
    series, ideal, default_ylabel, elabel = scaling_data(scaling_df, kind, error, family, disks_col)
    style = family_style([s[0] for s in series])        # a family's layout colour and marker, a dash per vdevs
    colors = {k: v[0] for k, v in style.items()}
    fig = go.Figure()
    for name, x, y, lo, hi, n in series:
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines+markers+text", text=n_labels(n),
                                 textposition="top center", line=dict(color=colors[name], dash=style[name][2]),
                                 marker=dict(symbol=style[name][1], size=8),
                                 customdata=n, hovertemplate="%{x} data disks: %{y:.4g} (n=%{customdata})",
                                 error_y=dict(type="data", array=hi, arrayminus=lo, visible=True)))
    dashes = iter(("dash", "dashdot", "longdash", "dot", "longdashdot") * 4)
    for label, fam, ix, iy in ideal:        # per layout in its colour (one grey legend entry), else grey
        fig.add_trace(go.Scatter(x=ix, y=iy, name=label if fam is None else f"ideal: {fam}",
                                 legendgroup="ideal" if fam else label, mode="lines", meta="ideal",
                                 showlegend=fam is None,
                                 line=dict(dash="dash" if fam else next(dashes), width=1.5,
                                           color=colors.get(fam, "#555555")),
                                 hovertext=f"{label} ({fam})" if fam else label, hoverinfo="text"))
    if any(fam for _, fam, _, _ in ideal):
        legend_entry(fig, "ideal (dashed, in each layout's colour)", "dash", "ideal")
    fig.update_layout(title=f"{title} ({elabel})".strip(), xaxis_title="data disks",
                      yaxis_title=ylabel or default_ylabel, legend_title_text=family)
    fig.update_xaxes(tickmode="array", tickvals=sorted(pd.unique(scaling_df[disks_col])))
    return fig


def iops_p99_means(df: pd.DataFrame, hue: str) -> pd.DataFrame:
    """Mean and SD of IOPS and p99 (ns and ms) per `hue` × iodepth, and n; one configuration per point."""
    a = mean_sd(df, [hue, "iodepth"], ["iops", "lat_p99_ns"])
    for c in ("lat_p99_ns_mean", "lat_p99_ns_sd"):
        a[c.replace("_ns", "_ms")] = a[c] / 1e6
    return a


# The IOPS-p99 chart's size: labels are placed for its plot area once a caption of up to five lines
# (notebook_display.show) has taken its room under it, on the narrowest page the report lays out.
IOPS_P99_HEIGHT, IOPS_P99_MARGIN_TOP, IOPS_P99_BOTTOM_MOST = 560, 80, 80 + 15 * 5
IOPS_P99_PLOT_PX = (560.0, float(IOPS_P99_HEIGHT - IOPS_P99_MARGIN_TOP - IOPS_P99_BOTTOM_MOST))


def iops_p99_ranges(a: pd.DataFrame, latency_target_ms: float | None = None) -> tuple[list, list]:
    """Both axes from zero to past the largest point and its error bar: an autoscaled IOPS axis made a
    flat curve (174.8-175.4 IOPS) look like large swings, and the top label was cut off."""
    x_top = float((a["iops_mean"] + a["iops_sd"].fillna(0)).max())
    y_top = float((a["lat_p99_ms_mean"] + a["lat_p99_ms_sd"].fillna(0)).max())
    if latency_target_ms is not None:
        y_top = max(y_top, latency_target_ms)
    return [0.0, x_top * 1.08 or 1.0], [0.0, y_top * 1.12 or 1.0]


def iops_p99_labels(a: pd.DataFrame, hue: str, x_range, y_range, plot_px=IOPS_P99_PLOT_PX) -> pd.DataFrame:
    """`a` with `label` ("qd4", "qd64 n=1") and `label_pos` (missing: no room, the label is left off and
    the hover text says it), the ends of each curve placed first."""
    a = a.sort_values([hue, "iodepth"]).reset_index(drop=True)
    a["label"] = [f"qd{int(q)}" + (" n=1" if n == 1 else "") for q, n in zip(a["iodepth"], a["n"])]
    ends = a.groupby(hue)["iodepth"].transform(lambda q: (q == q.min()) | (q == q.max()))
    points = list(zip(a["iops_mean"], a["lat_p99_ms_mean"], a["label"], ends))
    a["label_pos"] = place_labels(points, x_range, y_range, plot_px)
    return a


def plot_iops_vs_p99_interactive(df: pd.DataFrame, hue: str = "layout",
                                 latency_target_ms: float | None = None, title: str = "") -> go.Figure:
    """Mean IOPS against mean p99 latency, one line per `hue` through the iodepths (labelled qdN where
    the label has room: `iops_p99_labels`; every point says its depth on hover)."""
    a = iops_p99_means(df, hue)
    x_range, y_range = iops_p99_ranges(a, latency_target_ms)
    a = iops_p99_labels(a, hue, x_range, y_range)
    fig = go.Figure()
    colors = colors_for(a[hue])
    for name in ordered(a[hue], LAYOUT_ORDER):
        g = a[a[hue] == name]
        fig.add_trace(go.Scatter(
            x=g["iops_mean"], y=g["lat_p99_ms_mean"], name=str(name), mode="lines+markers+text",
            text=[t if isinstance(p, str) else "" for t, p in zip(g["label"], g["label_pos"])],
            textposition=[p if isinstance(p, str) else "top right" for p in g["label_pos"]],
            customdata=g[["iodepth", "n"]].to_numpy(), line=dict(color=colors[name]),
            hovertemplate="iodepth %{customdata[0]}<br>IOPS %{x:.0f}<br>p99 %{y:.2f} ms"
                          "<br>runs %{customdata[1]}",
            error_x=dict(type="data", array=g["iops_sd"].fillna(0)),
            error_y=dict(type="data", array=g["lat_p99_ms_sd"].fillna(0))))
    if latency_target_ms is not None:
        fig.add_hline(y=latency_target_ms, line_dash="dot", line_color="red")
    fig.update_layout(title=f"{title} ({SD_LABEL})".strip(), xaxis_title="IOPS (mean)",
                      yaxis_title="p99 latency (ms)", legend_title_text=hue,
                      height=IOPS_P99_HEIGHT, margin=dict(t=IOPS_P99_MARGIN_TOP))
    fig.update_xaxes(rangemode="tozero", range=x_range)
    fig.update_yaxes(rangemode="tozero", range=y_range)
    return fig


def plot_latency_percentiles_interactive(df: pd.DataFrame, hue: str = "config_id", title: str = "") -> go.Figure:
    """Completion-latency percentiles (p50 … p99.99) per `hue` in ms on a log axis, ±1 SD."""
    cols = {k: c for k, c in PERCENTILE_COLUMNS.items() if c in df.columns}
    if not cols:
        raise ConfigError(f"no latency percentile columns among {list(PERCENTILE_COLUMNS.values())}")
    a = mean_sd(df, [hue], list(cols.values()))
    colors = colors_for(a[hue])
    fig = go.Figure()
    for _, r in a.iterrows():
        y = np.array([r[f"{c}_mean"] for c in cols.values()]) / 1e6
        sd = np.nan_to_num(np.array([r[f"{c}_sd"] for c in cols.values()]) / 1e6)
        fig.add_trace(go.Scatter(x=list(cols), y=y, name=str(r[hue]), mode="lines+markers",
                                 line=dict(color=colors[r[hue]]), error_y=dict(type="data", array=sd)))
    # a line per configuration through its own percentiles: a profile along the quantile, not a line joining
    # categories of a factor
    fig.update_layout(title=f"{title} ({SD_LABEL})".strip(), xaxis_title="percentile",
                      yaxis_title="latency (log)", yaxis_type="log", legend_title_text=hue)
    return fit_axes(fig, units={"y": "ms"})


def vbs_cells(df, metric, row):
    """Mean, n and 95% CI of the mean per `row` × volblocksize cell, as row × volblocksize pivots.

    The numbers are `stats.summary`'s, the analysis's own: n counts runs, or pool replicates
    when pools were re-created, and the CI is its log-scale t interval, so a cell reads as
    the summary tables do. Returns ({"mean", "n", "ci95_low", "ci95_high"} -> pivot, unit).
    """
    keys = [row, "volblocksize_bytes"]
    one_configuration(df, keys, [metric])
    s = summary(df, metric, keys)
    order = ordered(s[row], LAYOUT_ORDER)
    cells = {c: s.pivot(index=row, columns="volblocksize_bytes", values=c).reindex(order).sort_index(axis=1)
             for c in ("mean", "n", "ci95_low", "ci95_high")}
    return cells, (str(s["unit"].iloc[0]) if len(s) else "run")


def vbs_labels(cells, scale: float, unit: str, br: str = "<br>"):
    """(text drawn in each cell: mean, n, 95% CI; its hover text), '' for an empty cell."""
    text, hover = [], []
    for r in cells["mean"].index:
        trow, hrow = [], []
        for c in cells["mean"].columns:
            m, lo, hi = (float(cells[k].at[r, c]) * scale for k in ("mean", "ci95_low", "ci95_high"))
            if not np.isfinite(m):
                trow.append("")
                hrow.append("")
                continue
            n = int(cells["n"].at[r, c])
            ci = f"{fmt(lo)}–{fmt(hi)}" if np.isfinite(lo) and np.isfinite(hi) else ""
            trow.append(br.join([fmt(m), f"n={n}", f"CI {ci}" if ci else "no CI"]))
            hrow.append(br.join([f"{r}, {format_size(int(c))}: mean {fmt(m)}",
                                 f"95% CI of the mean {ci}" if ci else "no CI: a single unit",
                                 f"n={n} ({unit}{'s' if n != 1 else ''})"]))
        text.append(trow)
        hover.append(hrow)
    return text, hover


def vbs_title(title: str, unit: str) -> str:
    return f"{title} (cells: mean, n {unit}s, 95% CI of the mean)".strip()


def plot_volblocksize_map_interactive(df: pd.DataFrame, metric: str, row: str = "layout",
                                      title: str = "") -> go.Figure:
    """Heatmap of the mean `metric` per `row` × volblocksize; each cell shows its n and 95% CI. A map is one
    workload's: `metric` "auto" is its own (`metrics.metric_of`)."""
    metric = metric_of(df, metric)
    cells, unit = vbs_cells(df, metric, row)
    label, scale = metric_label(metric)
    p = cells["mean"]
    text, hover = vbs_labels(cells, scale, unit)
    fig = go.Figure(go.Heatmap(z=p.to_numpy(float) * scale, x=[format_size(int(v)) for v in p.columns],
                               y=[str(v) for v in p.index], colorscale="Viridis", text=text,
                               texttemplate="%{text}", hovertext=hover, hoverinfo="text",
                               colorbar=dict(title=f"{label}<br>(mean)")))
    fig.update_layout(title=vbs_title(title, unit), xaxis_title="volblocksize", yaxis_title=row)
    fig.update_yaxes(autorange="reversed")
    return fig


def ts_parts(ts_df, metrics):
    missing = {"t_s", "layer", "metric", "value"} - set(ts_df.columns)
    if missing:
        raise ConfigError(f"time series needs columns {sorted(missing)}")
    metrics = list(metrics) if metrics else list(pd.unique(ts_df["metric"]))
    return metrics, ordered(ts_df["layer"], LAYER_ORDER)


def plot_timeseries_interactive(ts_df: pd.DataFrame, metrics=None, title: str = "") -> go.Figure:
    """One run's counters over time: a panel per metric (with its unit), a colour per layer.

    A layer keeps its colour in every panel and appears once in the legend; ops_s and
    bytes_s are drawn as operations/s and MiB/s.
    """
    metrics, layers = ts_parts(ts_df, metrics)
    labels = [metric_label(m) for m in metrics]
    fig = make_subplots(rows=len(metrics), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[lab for lab, _ in labels])
    colors = {layer: LAYER_COLORS.get(str(layer), c) for layer, c in colors_for(layers).items()}
    shown = set()
    for r, (m, (lab, scale)) in enumerate(zip(metrics, labels), start=1):
        for layer in layers:
            g = ts_df[(ts_df["metric"] == m) & (ts_df["layer"] == layer)].sort_values("t_s")
            if len(g):
                fig.add_trace(go.Scatter(x=g["t_s"], y=g["value"] * scale, name=str(layer), mode="lines",
                                         legendgroup=str(layer), showlegend=layer not in shown,
                                         line=dict(color=colors[layer])), row=r, col=1)
                shown.add(layer)
        fig.update_yaxes(title_text=lab, row=r, col=1, rangemode="tozero")
    fig.update_xaxes(title_text="time from the start of the measurement window (s)", row=len(metrics), col=1)
    fig.update_layout(title=title, height=260 * len(metrics) + 120, legend_title_text="layer")
    return fig
