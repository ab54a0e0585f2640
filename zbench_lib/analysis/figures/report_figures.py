"""The report's own charts: IOPS against drives (the headline), the space model, forest plots.

    plot_iops_vs_drives(df)        absolute IOPS (or MiB/s) against the drives of the pool, a
                                   line per layout, a panel per workload × direction, with the
                                   per-vdev random-read model dotted in the layout's colour
    overlay_model(fig, scaling)    the same model per data disk, on a per-disk scaling chart
    space_figure(space)            referenced / logicalused per block size: a bar per layout with
                                   the allocation model drawn across that very bar
    ratio_figure(cmp, metric)      ratios of means with 95% CIs on a log axis labelled 0.5×, 1×, 2×
    plot_levels(df, factor, ...)   a factor's headline: the metric and p99 / p99.9 per level, a line per series
                                   along a numeric factor; a factor of categories as plot_configurations draws it
    plot_configurations(df, ...)   a sync or log study's headline: a bar per configuration with its 95% CI, its
                                   p99 / p99.9 a dot each on a log axis
    plot_depth_curve(df, tails)    a depth study's headline and compare-page curves: IOPS and p99 (log-log)
                                   against the depth, side by side

Every figure's axes are fitted by `axes.fit_axes`: log ticks as full numbers, ranges set by the estimates
(an interval past the reach cut at the edge and marked), so one n=2 interval never sets an axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from zbench_lib.analysis.figures.axes import fit_axes
from zbench_lib.analysis.figures.plot_base import (CI_LABEL, LAYOUT_ORDER, PALETTE, colors_for, family_style,
                                                   legend_entry, metric_label, n_labels, ordered,
                                                   ratio_ticks, shade, split_family)
from zbench_lib.analysis.data.columns import LAYOUT_COLUMNS
from zbench_lib.analysis.data.metrics import judged_metrics, metric_of
from zbench_lib.analysis.data.sweep_data import AUX_VDEVS, setting_text, varying_columns
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.analysis.stats.tables import scaling_family
from zbench_lib.analysis.stats.tails import estimands_said
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size
from zbench_lib.zfs.models import has_model, predicted_random_read_iops

_SHAPE = ["layout", "width", "vdevs"]


def _panel_metrics(df: pd.DataFrame, panel: list, metric: str) -> list[str]:
    """The metric of each panel's rows, in the panels' order (`metrics.judged_metrics`)."""
    ordered_rows = df.sort_values(panel, kind="stable") if panel else df
    return list(dict.fromkeys(judged_metrics(ordered_rows, metric)))


def _rank(name):
    return (LAYOUT_ORDER.index(name), "") if name in LAYOUT_ORDER else (len(LAYOUT_ORDER), str(name))


def _model_iops(shape: dict, g: pd.DataFrame) -> float:
    """Per-vdev random-read model of one pool shape (NaN without a disk model)."""
    r = g.iloc[0]
    disk = g["disk_model_iops"].median() if "disk_model_iops" in g else math.nan
    block = next((r[c] for c in ("volblocksize_bytes", "recordsize_bytes") if c in g and pd.notna(r[c])), 131072)
    if not disk or math.isnan(disk) or not has_model(str(shape["layout"])):
        return math.nan
    return predicted_random_read_iops(str(shape["layout"]), int(shape["width"]), int(shape["vdevs"]), float(disk),
                                      int(block), int(r["ashift"]) if "ashift" in g and pd.notna(r["ashift"]) else 12)


def iops_vs_drives_data(df: pd.DataFrame, metric: str = "auto", drives: str = "total_disks") -> pd.DataFrame:
    """Mean, 95% CI, n and model per panel (workload, direction) × layout × pool shape.

    `metric` is 'iops', 'bw_bytes_s' or 'auto' (per workload, `metrics.judged_metrics`); the
    `metric` column says which one each row holds. The model is given for random reads.
    """
    need = {drives, *_SHAPE} | ({"iops", "bw_bytes_s"} if metric == "auto" else {metric})
    if not need <= set(df.columns):
        raise ConfigError(f"IOPS-vs-drives chart needs columns {sorted(need - set(df.columns))}")
    panel = [c for c in ("workload", "direction") if c in df]
    keys = panel + _SHAPE + [drives]
    parts = []
    for wl, d in (df.groupby("workload", sort=True) if "workload" in df else [("", df)]):
        m = metric_of(d, metric)
        s = summary(d, m, keys).assign(metric=m)
        models = [{**dict(zip(keys, k)), "model": _model_iops(dict(zip(keys, k)), g)}
                  for k, g in d.groupby(keys, dropna=False, sort=False)]
        parts.append(s.merge(pd.DataFrame(models, columns=keys + ["model"]), on=keys, how="left"))
    s = pd.concat(parts, ignore_index=True)
    random_read = s["metric"] == "iops"
    if "workload" in s:
        random_read &= s["workload"].astype(str).str.contains("randread")
    if "direction" in s:
        random_read &= s["direction"] == "read"
    s["model"] = s["model"].where(random_read)
    # A line per scaling family (a layout, or "2x raidz1" for a second vdev count), as the scaling
    # tables name them: a line per vdev width joined a 1x2 and a 2x2 pool into one "2-wide" series.
    s["line"] = scaling_family(s)
    return s


def plot_iops_vs_drives(df: pd.DataFrame, metric: str = "auto", drives: str = "total_disks",
                        title: str = "") -> go.Figure:
    """The headline chart: absolute IOPS (random) or MiB/s (sequential) against the drives of the pool.

    One panel per workload × direction, one line per layout (mean, 95% CI, "n=1" where a
    point rests on one run), and for random reads the per-vdev model of
    `zfs.models.predicted_random_read_iops`, dotted in the layout's colour.
    """
    s = iops_vs_drives_data(df, metric, drives)
    by = [c for c in ("workload", "direction") if c in s]
    panels = [p if isinstance(p, tuple) else (p,) for p in s.groupby(by, sort=True).groups] if by else [()]
    cols = min(len(panels), 2)
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[" ".join(map(str, p)) for p in panels],
                        horizontal_spacing=0.1, vertical_spacing=0.18)
    style = family_style(s["line"])
    shown, model_at = set(), None
    for i, key in enumerate(panels):
        r, c = i // cols + 1, i % cols + 1
        p = s
        for col, v in zip(by, key):
            p = p[p[col] == v]
        label, scale = metric_label(p["metric"].iloc[0])
        for line in sorted(p["line"].unique(), key=lambda v: (_rank(split_family(v)[0]), split_family(v)[1])):
            g = p[p["line"] == line].sort_values(drives)
            color, marker, dash = style[line]
            lo = (g["mean"] - g["ci95_low"].clip(lower=0)) * scale
            hi = (g["ci95_high"] - g["mean"]) * scale
            fig.add_trace(go.Scatter(x=g[drives], y=g["mean"] * scale, name=line, legendgroup=line,
                                     showlegend=line not in shown, mode="lines+markers+text",
                                     text=n_labels(g["n"]), textposition="top center",
                                     line=dict(color=color, dash=dash), marker=dict(symbol=marker, size=8),
                                     customdata=g["n"], hovertemplate="%{x} drives: %{y:,.4g} (n=%{customdata})",
                                     error_y=dict(type="data", array=hi.fillna(0), arrayminus=lo.fillna(0))),
                          row=r, col=c)
            shown.add(line)
            if g["model"].notna().any():
                m = g[g["model"].notna()]
                fig.add_trace(go.Scatter(x=m[drives], y=m["model"], mode="lines", meta="model",
                                         name=f"model: {line}", legendgroup="model", showlegend=False,
                                         hovertext=f"per-vdev model: {line}", hoverinfo="text+y",
                                         line=dict(color=shade(color, 0.7), dash="dot", width=1.5)), row=r, col=c)
                model_at = model_at or dict(row=r, col=c)
        if _ideal(fig, p, drives, scale, first="ideal" not in shown, row=r, col=c):
            shown.add("ideal")          # named where first drawn, not lost where the first panel has no stripe
        fig.update_xaxes(title_text="drives in the pool", tickmode="array",
                         tickvals=sorted(p[drives].unique()), row=r, col=c)
        fig.update_yaxes(title_text=f"{label} (mean)", rangemode="tozero", row=r, col=c)
    if model_at:                    # after the layouts: the legend lists the series first
        legend_entry(fig, "per-vdev random-read model (dotted)", "dot", "model", **model_at)
    what = {"auto": "IOPS (random) and MiB/s (sequential)"}.get(metric, metric_label(metric)[0])
    fig.update_layout(title=(title or f"{what} against the number of drives") + f" ({CI_LABEL})",
                      height=380 * rows + 160, legend_title_text="layout (vdevs: dash)")
    return fit_axes(fig)


def _ideal(fig: go.Figure, p: pd.DataFrame, drives: str, scale: float, first: bool, **subplot) -> bool:
    """The ideal: n times one drive, from the stripe's smallest pool (the one layout whose drives all carry
    data), grey and dashed; nothing where the panel has no stripe. True where drawn."""
    st = p[(p["layout"] == "stripe") & p["mean"].notna()].sort_values(drives)
    if st.empty:
        return False
    per_drive = float(st["mean"].iloc[0]) / float(st[drives].iloc[0])
    xs = np.array(sorted(p[drives].unique()), float)
    fig.add_trace(go.Scatter(x=xs, y=xs * per_drive * scale, mode="lines", meta="ideal", name="ideal: n × one drive",
                             legendgroup="ideal", showlegend=first, hoverinfo="skip",
                             line=dict(color="#888888", dash="dash", width=1)), **subplot)
    return True


def overlay_model(fig: go.Figure, scaling_df: pd.DataFrame, family: str = "layout") -> go.Figure:
    """Add the first-order random-read model per data disk, dotted in each layout's colour."""
    if "model_per_disk" not in scaling_df or scaling_df["model_per_disk"].isna().all():
        return fig
    colors = {k: v[0] for k, v in family_style(scaling_df[family]).items()}     # "2x raidz1" in raidz1's colour
    groups = sorted(scaling_df.groupby(family), key=lambda kv: (_rank(split_family(kv[0])[0]), split_family(kv[0])[1]))
    for name, g in groups:
        g = g.sort_values("data_disks")
        fig.add_trace(go.Scatter(x=g["data_disks"], y=g["model_per_disk"], mode="lines", meta="model",
                                 name=f"model: {name}", legendgroup="model", showlegend=False,
                                 hovertext=f"IOPS model: {name}", hoverinfo="text+y",
                                 line=dict(dash="dot", width=1.5, color=shade(colors[name], 0.7))))
    return legend_entry(fig, "IOPS model (dotted, in each layout's colour)", "dot", "model")


def space_figure(space_df: pd.DataFrame) -> go.Figure:
    """Measured referenced/logicalused per block size: one bar per layout, its model across it.

    Bars sit at numeric positions (block size index ± offset per layout); the model is a
    short dark segment spanning exactly its own bar, in the bar's colour family.
    """
    bcol = "volblocksize_bytes" if "volblocksize_bytes" in space_df else "recordsize_bytes"
    blocks = sorted(space_df[bcol].unique())
    groups = sorted(space_df.groupby(["layout", "width"]), key=lambda kv: (_rank(kv[0][0]), kv[0][1]))
    k = max(len(groups), 1)
    width = 0.8 / k
    colors = colors_for([name[0] for name, _ in groups])
    fig = go.Figure()
    for j, (name, g) in enumerate(groups):
        g = g.sort_values(bcol)
        x = np.array([blocks.index(b) for b in g[bcol]], float) - 0.4 + width * (j + 0.5)
        label, color = f"{name[0]} of {name[1]}", colors[name[0]]
        if len(groups) > len({n[0] for n, _ in groups}):        # several widths of one layout
            color = shade(color, 1 + 0.5 * [n for n, _ in groups if n[0] == name[0]].index(name))
        n = g["n"] if "n" in g else pd.Series(np.nan, index=g.index)
        fig.add_trace(go.Bar(x=x, y=g["measured_used_ratio"], width=width, name=f"{label}: measured",
                             legendgroup=label, marker=dict(color=color, opacity=0.6), text=n_labels(n),
                             textposition="inside", customdata=n,
                             hovertemplate=label + ": %{y:.3f}× measured (n=%{customdata})<extra></extra>"))
        seg_x = [v for xi in x for v in (xi - width / 2, xi + width / 2, None)]
        seg_y = [v for p in g["predicted_used_ratio"] for v in (p, p, None)]
        fig.add_trace(go.Scatter(x=seg_x, y=seg_y, mode="lines", name=f"{label}: model", legendgroup=label,
                                 meta="model", line=dict(color=shade(color, 0.55), width=4),
                                 hovertemplate=label + ": %{y:.3f}× model<extra></extra>"))
    fig.update_layout(title="referenced / logicalused: measured (bars) against the allocation model "
                            "(dark line on each bar)",
                      xaxis=dict(title="block size (volblocksize or recordsize)", tickmode="array",
                                 tickvals=list(range(len(blocks))), ticktext=[format_size(int(b)) for b in blocks]),
                      yaxis_title="space charged per logical byte (×)", bargap=0.15)
    return fig


def ratio_figure(cmp: pd.DataFrame, metric: str, margin: float | None = None) -> go.Figure:
    """Forest plot: ratio of means to the baseline with its 95% CI, one row per comparison."""
    cols = list(cmp.columns)
    by = cols[:cols.index("factor")] if "factor" in cols else []      # the groups compare_table held equal
    fmt = (lambda v: format_size(int(v))) if str(cmp["factor"].iloc[0]).endswith("_bytes") else str

    def cell(c, v):
        if c.endswith("_bytes"):
            return format_size(int(v))
        return str(v) if c in ("workload", "direction", "layout", "sweep_id") else f"{c.replace('_', ' ')} {v}"
    labels = [" ".join([fmt(r["level"])] + [cell(c, r[c]) for c in by]) for _, r in cmp.iterrows()]
    n_cols = [c for c in ("n_level", "n_baseline") if c in cmp]
    n_min = cmp[n_cols].min(axis=1) if n_cols else pd.Series(np.nan, index=cmp.index)
    # An interval only where the text judges the comparison (issue 31): a side that pools several
    # configurations has a ratio and a CI, but they compare no one configuration, and the text says not judged.
    judged = (cmp["verdict"] != "not judged") if "verdict" in cmp else pd.Series(True, index=cmp.index)
    text = ["n=1" if n == 1 else "" if ok else "not judged" for n, ok in zip(n_min, judged)]
    fig = go.Figure(go.Scatter(x=cmp["ratio"], y=labels, mode="markers+text", name="ratio (95% CI)",
                               text=text, textposition="middle right",
                               error_x=dict(type="data", array=(cmp["ratio_ci_high"] - cmp["ratio"]).where(judged),
                                            arrayminus=(cmp["ratio"] - cmp["ratio_ci_low"]).where(judged))))
    missing = cmp["ratio"].isna().to_numpy()
    if missing.any():                          # cells whose runs were all excluded keep their row
        fig.add_trace(go.Scatter(x=[1.0] * int(missing.sum()), y=[lab for lab, m in zip(labels, missing) if m],
                                 mode="text", text=["not judged"] * int(missing.sum()), textposition="middle right",
                                 showlegend=False, name="not judged", hoverinfo="skip"))
    fig.add_vline(x=1.0, line_color="black", line_dash="dash")
    if margin:
        fig.add_vrect(x0=1 / (1 + margin), x1=1 + margin, fillcolor="green", opacity=0.12, line_width=0)
    values = pd.concat([cmp["ratio"], cmp["ratio_ci_low"], cmp["ratio_ci_high"]]).astype(float)
    values = values[np.isfinite(values) & (values > 0)]
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (1.0, 1.0)
    if margin:
        lo, hi = min(lo, 1 / (1 + margin)), max(hi, 1 + margin)
    lo, hi = min(lo, 0.95), max(hi, 1.05)
    vals, texts = ratio_ticks(lo, hi)
    shown = list(cmp["metric"].dropna().unique()) if metric == "auto" and "metric" in cmp else [metric]
    name = " / ".join(metric_label(m)[0] if m in ("iops", "bw_bytes_s", "lat_p99_ns") else str(m) for m in shown)
    fig.update_layout(title=f"{name}: ratio to baseline {fmt(cmp['baseline'].iloc[0])} (95% CI"
                            + (f"; shaded: ±{margin:.0%} equivalence margin)" if margin else ")"),
                      xaxis=dict(type="log", title="ratio of means to the baseline (×, log scale)",
                                 tickmode="array", tickvals=vals, ticktext=texts,
                                 range=[math.log10(lo / 1.08), math.log10(hi * 1.08)]),
                      yaxis=dict(autorange="reversed"),             # rows top-down, as in the table
                      height=max(340, 30 * len(cmp) + 260))
    return fig


def _series_named(frame: pd.DataFrame, series: str | None, others: list[str]) -> pd.DataFrame:
    """`frame` with `_series`: the series' value and each other varying column as a reader says it ("128K",
    not "volblocksize bytes 131072"), as one line's name."""
    label = frame[series].astype(str) if series else pd.Series("", index=frame.index)
    for c in others:
        label = label + " " + frame[c].map(lambda v, c=c: setting_text(c, v))
    return frame.assign(_series=label.str.strip())


def _level_text(factor: str, v) -> str:
    return format_size(int(v)) if factor.endswith("_bytes") else str(v)


# A factor whose column name reads wrong on an axis: "IOPS per clients" is "IOPS per client count".
_FACTOR_NAMES = {"clients": "client count"}


def _factor_name(factor: str, plain: str) -> str:
    return _FACTOR_NAMES.get(factor, plain)


def _numeric(levels: list) -> bool:
    """Levels on a scale (block sizes, depths, disk counts), which a line may join; a category (a layout, a
    sync setting, a release) is not: a slope between stripe and mirror means nothing."""
    return bool(levels) and all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
                                for v in levels)


def _level_order(df: pd.DataFrame, factor: str) -> list:
    return sorted(df[factor].dropna().unique(), key=lambda v: (isinstance(v, str), v if not isinstance(v, str)
                                                                else 0, str(v)))


def plot_levels(df: pd.DataFrame, factor: str, tails: pd.DataFrame | None = None, series: str | None = None,
                metric: str = "auto", title: str = "") -> go.Figure:
    """A factor's headline: the judged metric per level (top row) and p99 / p99.9 (bottom row), each with
    its 95% CI, a column per workload × direction, a line per `series` (the layout, where it varies).

    Block size, queue depth, disk count: the levels sit on a categorical axis in their
    order, so "4K, 16K, 128K" or "qd 1 ... 64" read left to right without labels on the points
    (which overlapped where the IOPS did not change). `tails` is one row per cell × percentile
    (`claims.answer.latency_tails`: value_ms, ci_low_ms, ci_high_ms, status); only judged
    percentiles are drawn, and only where the text judges them, each named in the legend only where drawn.
    A factor of categories (layout, sync, compression, a release) is drawn as `plot_configurations` draws
    it, a bar per level with its interval in groups of the other settings: never a line joining categories.
    """
    levels = _level_order(df, factor)
    if not _numeric(levels):
        return _category_levels(df, factor, levels, tails, metric, title)
    panel = [c for c in ("workload", "direction") if c in df]
    # A column each level fixes (a mirror's width along layout) would name lines of one point each: not a line;
    # a layout's width that varies within the layout (raidz2 of 4 and of 6 beside each block size) is one
    others = [c for c in varying_columns(df, exclude=tuple(panel) + (factor,) + ((series,) if series else ()))
              if (c not in LAYOUT_COLUMNS or series != "layout" or df.groupby(series)[c].nunique().max() > 1)
              and df.groupby(factor)[c].nunique().max() > 1]
    if others:          # a line per configuration, never a point pooling several (disk counts, widths, ...)
        # the tails get the same line names, or none are drawn: a level's several configurations
        # would otherwise share one latency point
        named = tails is not None and all(c in tails for c in others + ([series] if series else []))
        tails = _series_named(tails, series, others) if named else None
        # lines in the order of their values (4K, 16K, 128K), not of their names' text
        df = _series_named(df, series, others).sort_values([*([series] if series else []), *others], kind="stable")
        series = "_series"
    panels = [p if isinstance(p, tuple) else (p,) for p in df.groupby(panel, sort=True).groups] if panel else [()]
    with_tails = tails is not None and len(tails) and (tails["status"] == "judged").any()
    rows = 2 if with_tails else 1
    fig = make_subplots(rows=rows, cols=len(panels), shared_xaxes=True, vertical_spacing=0.12,
                        horizontal_spacing=0.08, subplot_titles=[" ".join(map(str, p)) for p in panels]
                        + [""] * (len(panels) * (rows - 1)))
    names = list(pd.unique(df[series])) if series else [""]
    grid = LevelGrid(panel, panels, series, family_style(names) if series else {"": ("#1f77b4", "circle", "solid")},
                     factor, levels)
    drawn = _level_panels(fig, df, grid, metric, tails if with_tails else None)
    for pct, dash in (("p99", "solid"), ("p99.9", "dot")):
        if pct in drawn:                   # named only where drawn: the demo's p99.9 never is
            legend_entry(fig, f"{pct} (lower panels)", dash, pct, row=2, col=1)
    shown_metrics = " / ".join(dict.fromkeys(metric_label(m)[0] for m in _panel_metrics(df, panel, metric)))
    pcts = " / ".join(p for p in ("p99", "p99.9") if p in drawn)
    fig.update_layout(title=(title or f"{' and '.join([shown_metrics] + ([pcts] if pcts else []))}"
                             f" per {_factor_name(factor, factor.removesuffix('_bytes'))}")
                      + f" ({_ci_label(tails) if with_tails else CI_LABEL})",
                      height=330 * rows + 170, legend_title_text="" if series == "_series" else series or "")
    return fit_axes(fig, units={"y": "ms"})


@dataclass(frozen=True)
class LevelGrid:
    """What `plot_levels` lays out: the panel columns and each panel's key, the series column (None: one series)
    with each series' (colour, marker, dash), the factor and its levels in order."""
    panel: list[str]
    panels: list[tuple]
    series: str | None
    style: dict
    factor: str
    levels: list


def _level_panels(fig: go.Figure, df: pd.DataFrame, grid: LevelGrid, metric: str,
                  tails: pd.DataFrame | None) -> set[str]:
    """Each panel's metric (top row) and tails (bottom row); the percentiles drawn."""
    series, factor, levels = grid.series, grid.factor, grid.levels
    keys = grid.panel + ([series] if series else []) + [factor]
    ticks = [_level_text(factor, v) for v in levels]
    rows = 2 if tails is not None else 1
    shown, drawn = set(), set()
    for j, key in enumerate(grid.panels, start=1):
        d = df
        for c, v in zip(grid.panel, key):
            d = d[d[c] == v]
        m = metric_of(d, metric)
        label, scale = metric_label(m)
        s = summary(d, m, keys)
        for name in sorted(grid.style, key=lambda v: _rank(str(v))[0]):   # layouts in order, the rest as they came
            g = s[s[series] == name] if series else s
            g = g.assign(_x=g[factor].map(lambda v: _level_text(factor, v))).set_index(factor).reindex(
                [v for v in levels if v in set(g[factor])]).reset_index()
            color, marker, dash = grid.style[name]
            fig.add_trace(go.Scatter(
                x=g["_x"], y=g["mean"] * scale, name=str(name) or label, legendgroup=str(name),
                showlegend=str(name) not in shown, mode="lines+markers", line=dict(color=color, dash=dash),
                marker=dict(symbol=marker, size=8), customdata=g["n"],
                hovertemplate="%{x}: %{y:,.4g} (n=%{customdata})",
                error_y=dict(type="data", array=((g["ci95_high"] - g["mean"]) * scale).fillna(0),
                             arrayminus=((g["mean"] - g["ci95_low"].clip(lower=0)) * scale).fillna(0))), row=1, col=j)
            shown.add(str(name))
            if tails is not None:
                drawn |= _tail_traces(fig, tails, grid, dict(zip(grid.panel, key)), name, j)
        fig.update_yaxes(title_text=f"{label} (mean)" if j == 1 else None, rangemode="tozero", row=1, col=j)
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=ticks, row=rows, col=j,
                         title_text=_factor_name(factor, factor.removesuffix("_bytes").replace("_", " ")))
        if tails is not None:
            fig.update_yaxes(title_text="latency (log)" if j == 1 else None, type="log", row=2, col=j)
    return drawn


def _tail_traces(fig: go.Figure, tails: pd.DataFrame, grid: LevelGrid, key: dict, name, col: int) -> set[str]:
    """The series' p99 and p99.9 in the panel's bottom row; the percentiles it drew."""
    series, factor, levels = grid.series, grid.factor, grid.levels
    color, marker, _ = grid.style[name]
    t = tails[(tails["status"] == "judged")]
    for c, v in key.items():
        if c in t:
            t = t[t[c] == v]
    if series and series in t:
        t = t[t[series] == name]
    drawn = set()
    for pct, dash in (("p99", "solid"), ("p99.9", "dot")):
        g = t[(t["percentile"] == pct) & t["value_ms"].notna()]
        g = g.set_index(factor).reindex([v for v in levels if v in set(g[factor])]).reset_index()
        if g.empty:
            continue
        drawn.add(pct)
        fig.add_trace(go.Scatter(
            x=[_level_text(factor, v) for v in g[factor]], y=g["value_ms"], name=f"{name} {pct}".strip(),
            legendgroup=str(name), showlegend=False, mode="lines+markers", line=dict(color=color, dash=dash),
            marker=dict(symbol=marker, size=7), hovertemplate=f"{name} {pct} " + "%{x}: %{y:,.4g} ms",
            error_y=dict(type="data", array=(g["ci_high_ms"] - g["value_ms"]).fillna(0),
                         arrayminus=(g["value_ms"] - g["ci_low_ms"]).fillna(0))), row=2, col=col)
    return drawn


def _category_levels(df, factor, levels, tails, metric, title) -> go.Figure:
    """A factor of categories as bars (`plot_configurations`), with the tails only where they name every
    group its bars stand in."""
    panel = [c for c in ("workload", "direction") if c in df]
    if tails is not None and not set(_bar_groups(df, panel, factor) + [factor]) <= set(tails):
        tails = None
    return plot_configurations(df, factor, levels, tails, metric, title)


def _groups(df: pd.DataFrame, others: list[str]) -> list[tuple]:
    """The combinations of the other varying settings, each a group of bars, in the settings' order."""
    if not others:
        return [()]
    combos = df[others].drop_duplicates().sort_values(others, kind="stable")
    return [tuple(r) for r in combos.itertuples(index=False)]


def _percentile_rows(tails: pd.DataFrame | None) -> list[str]:
    if tails is None or not len(tails):
        return []
    judged = tails[tails["status"] == "judged"]
    return [p for p in ("p99", "p99.9") if (judged["percentile"] == p).any()]


def _ci_label(tails: pd.DataFrame | None) -> str:
    """The error bars' label: the mean's CI for the throughput, and what the latency points estimate (one
    estimand for a latency's point and its bar: `tails.cell_tails`, methods §18)."""
    said = estimands_said(tails["estimand"]) if tails is not None and len(tails) and "estimand" in tails else ""
    return f"{CI_LABEL}; latencies: {said}" if said else CI_LABEL


def _bar_groups(df: pd.DataFrame, panel: list[str], factor: str) -> list[str]:
    """The other settings that vary within a level, each combination a group of bars; a column each level fixes
    (a mirror's width along layout) is no group: it would set each level's bar apart in a group of its own."""
    return [c for c in varying_columns(df, exclude=tuple(panel) + (factor,))
            if df.groupby(factor)[c].nunique().max() > 1]


@dataclass(frozen=True)
class BarGrid:
    """Where `plot_configurations` puts each bar: its group's settings (`others`) and level give its x in `where`,
    all bars `width` wide, each level in its colour (a layout's own)."""
    factor: str
    levels: list
    others: list[str]
    where: dict
    width: float
    colors: dict


def _bar_grid(df: pd.DataFrame, panel: list[str], factor: str, levels: list) -> BarGrid:
    others = _bar_groups(df, panel, factor)
    width = 0.8 / max(len(levels), 1)
    where = {(g, lv): i - 0.4 + width * (k + 0.5) for i, g in enumerate(_groups(df, others))
             for k, lv in enumerate(levels)}
    palette = {lv: PALETTE[k % len(PALETTE)] for k, lv in enumerate(levels)}
    colors = colors_for(levels) if factor == "layout" else palette        # stripe, mirror ... in their own colours
    return BarGrid(factor, levels, others, where, width, colors)


def plot_configurations(df: pd.DataFrame, factor: str, levels: list, tails: pd.DataFrame | None = None,
                        metric: str = "auto", title: str = "") -> go.Figure:
    """A sync or log study's headline, and any factor of categories': a bar per configuration, each with its
    95% CI (issue 31).

    One column of panels per workload × direction; the judged metric in the top row (bars from zero), then
    p99 and p99.9 (`claims.answer.latency_tails`, judged cells only) below, a dot each at its bar's place
    on a log axis. Along the x axis a group per combination of the other settings that vary ("no SLOG",
    "SLOG"), in it a bar per level of `factor` (sync standard, always ...) in the level's colour (a layout's
    own), named once in the legend. An interval is drawn only where the mean rests on two or more units
    (the text's judged cells); a bar on one says "n=1".
    """
    panel = [c for c in ("workload", "direction") if c in df]
    grid = _bar_grid(df, panel, factor, levels)
    groups = _groups(df, grid.others)
    panels = [p if isinstance(p, tuple) else (p,) for p in df.groupby(panel, sort=True).groups] if panel else [()]
    pcts = _percentile_rows(tails)
    rows = 1 + len(pcts)
    fig = make_subplots(rows=rows, cols=len(panels), shared_xaxes=True, vertical_spacing=0.1,
                        horizontal_spacing=0.12, subplot_titles=[" ".join(map(str, p)) for p in panels]
                        + [""] * (len(panels) * (rows - 1)))
    shown: set = set()
    for j, key in enumerate(panels, start=1):
        d = df
        for c, v in zip(panel, key):
            d = d[d[c] == v]
        label = _metric_bars(fig, d, grid, panel, metric, shown, j)
        # every panel names its axis: IOPS beside MiB/s, and a p99.9 row whose first panel has no judged p99.9
        fig.update_yaxes(title_text=f"{label} (mean)", rangemode="tozero", row=1, col=j)
        for r, pct in enumerate(pcts, start=2):
            _tail_dots(fig, tails, grid, dict(zip(panel, key)), pct, r, j)
            fig.update_yaxes(title_text=f"{pct} latency (log)", type="log", row=r, col=j)
        # every row names its groups: a bar's group is what sets it apart from its neighbours
        ticks = [" · ".join(setting_text(c, v) for c, v in zip(grid.others, g)) for g in groups]
        for r in range(1, rows + 1):
            fig.update_xaxes(tickmode="array", tickvals=list(range(len(groups))), ticktext=ticks, zeroline=False,
                             showgrid=False, showticklabels=True, range=[-0.5, len(groups) - 0.5], row=r, col=j)
        fig.update_xaxes(title_text=" × ".join(AUX_VDEVS.get(c, _factor_name(c, c.removesuffix("_bytes").replace(
            "_", " "))) for c in grid.others) or None, row=rows, col=j)
    what = " and ".join(dict.fromkeys(metric_label(m)[0] for m in _panel_metrics(df, panel, metric)))
    fig.update_layout(title=(title or f"{what}{' and ' + ' / '.join(pcts) if pcts else ''} per configuration")
                      + f" ({_ci_label(tails) if pcts else CI_LABEL})", height=260 * rows + 170,
                      legend_title_text=factor.replace("_", " "))
    return fit_axes(fig, units={"y": "ms"})


def _bar(x, y, lo, hi, n, *, name, level, color, width, first) -> go.Bar:  # noqa: PLR0913 (one bar series)
    """Bars with error bars where an interval exists (NaN elsewhere: none drawn) and 'n=1' on a single unit."""
    y, lo, hi = (np.asarray(v, float) for v in (y, lo, hi))
    return go.Bar(x=x, y=y, width=width, name=name, legendgroup=str(level), showlegend=first,
                  marker=dict(color=color), text=n_labels(n), textposition="outside", customdata=np.asarray(n),
                  hovertemplate=name + ": %{y:,.4g} (n=%{customdata})<extra></extra>",
                  error_y=dict(type="data", array=hi - y, arrayminus=y - lo))


def _metric_bars(fig: go.Figure, d: pd.DataFrame, grid: BarGrid, panel: list[str], metric: str, shown: set,
                 col: int) -> str:
    """A panel's bars of the judged metric, each level named in the legend where it first has a bar."""
    m = metric_of(d, metric)
    label, scale = metric_label(m)
    s = summary(d, m, panel + grid.others + [grid.factor])
    for lv in grid.levels:
        g = s[s[grid.factor] == lv]
        if g.empty:
            continue
        x = [grid.where[(tuple(r[c] for c in grid.others), lv)] for _, r in g.iterrows()]
        judged = g["n"] >= 2                     # an interval only where the text judges one
        fig.add_trace(_bar(x, g["mean"] * scale, (g["ci95_low"].clip(lower=0) * scale).where(judged),
                           (g["ci95_high"] * scale).where(judged), g["n"], name=setting_text(grid.factor, lv),
                           level=lv, color=grid.colors[lv], width=grid.width, first=lv not in shown), row=1, col=col)
        shown.add(lv)
    return label


def _tail_dots(fig: go.Figure, tails: pd.DataFrame, grid: BarGrid, key: dict, pct: str, row: int,
               col: int) -> None:
    """A percentile's dots with their intervals, each at its bar's place above: a latency reads on a log axis
    (4K's 8 ms beside 128K's 540 ms), where a bar's length from zero means nothing."""
    t = tails[(tails["status"] == "judged") & (tails["percentile"] == pct)]
    for c, v in key.items():
        t = t[t[c] == v] if c in t else t
    for lv in grid.levels:
        g = t[t[grid.factor] == lv]
        if g.empty:
            continue
        x = [grid.where[(tuple(r[c] for c in grid.others), lv)] for _, r in g.iterrows()]
        name = f"{setting_text(grid.factor, lv)} {pct}"
        fig.add_trace(go.Scatter(x=x, y=g["value_ms"], mode="markers", name=name, legendgroup=str(lv),
                                 showlegend=False, marker=dict(color=grid.colors[lv], size=9),
                                 hovertemplate=name + ": %{y:,.4g} ms<extra></extra>",
                                 error_y=dict(type="data", array=g["ci_high_ms"] - g["value_ms"],
                                              arrayminus=g["value_ms"] - g["ci_low_ms"])), row=row, col=col)


# The depth figure's height per row of panels (a workload × direction), and the depths' axis names.
DEPTH_ROW_HEIGHT = 420
_DEPTH_AXES = {"iodepth": "queue depth (iodepth, log)", "numjobs": "jobs (numjobs, log)"}


def depth_curve_data(df: pd.DataFrame, tails: pd.DataFrame | None, hue: str, depth: str = "iodepth") -> pd.DataFrame:
    """Per workload × direction × `hue` × depth: IOPS (`n`, `mean`, `ci95_low`, `ci95_high`) and its p99
    (`value_ms`, `ci_low_ms`, `ci_high_ms`, `status`) from `tails` (`claims.answer.latency_tails` over the
    same cells); p99 missing where `tails` has no row."""
    keys = [c for c in ("workload", "direction") if c in df] + [hue, depth]
    s = summary(df, "iops", keys)
    cols = ["value_ms", "ci_low_ms", "ci_high_ms", "status"]
    p99 = tails[tails["percentile"] == "p99"][keys + cols] if tails is not None and len(tails) \
        and set(keys) <= set(tails) else pd.DataFrame(columns=keys + cols)
    return s.merge(p99, on=keys, how="left")


def plot_depth_curve(df: pd.DataFrame, tails: pd.DataFrame | None, hue: str = "layout", depth: str = "iodepth",
                     title: str = "") -> go.Figure:
    """A depth study's headline, and the curves its compare page draws: IOPS against depth beside p99 latency
    against depth, a row of the two per workload × direction, a line per `hue` (every other varying setting
    joins its name), each point with its 95% CI where judged (the IOPS mean on 2+ units, the p99 as `tails`
    says), "n=1" on an IOPS point resting on one run.

    Depth on a log axis with a tick at each depth measured (1, 2, 4 ... 64): each doubling one step. IOPS
    from zero, so the plateau where depth stops raising them reads flat at its height. p99 on a log axis:
    once IOPS no longer grow, each doubling of depth doubles the time an I/O waits in the queue (Little's
    law), a straight line, where IOPS against p99 from zero drew a vertical line (issue 52, item 4).
    """
    panel = [c for c in ("workload", "direction") if c in df]
    others = [c for c in varying_columns(df, exclude=tuple(panel) + (depth, hue))
              if not (hue == "layout" and c in LAYOUT_COLUMNS)]
    if others:          # a line per configuration, never a point pooling several
        named = tails is not None and set(others + [hue]) <= set(tails)
        tails = _series_named(tails, hue, others) if named else None
        df, hue = _series_named(df, hue, others), "_series"
    s = depth_curve_data(df, tails, hue, depth)
    panels = [p if isinstance(p, tuple) else (p,) for p in s.groupby(panel, sort=True).groups] if panel else [()]
    names = [" ".join(map(str, p)) for p in panels]
    fig = make_subplots(rows=len(panels), cols=2, horizontal_spacing=0.12, vertical_spacing=0.5 / len(panels),
                        subplot_titles=[f"{n}: {what}".lstrip(": ") for n in names for what in ("IOPS", "p99 latency")])
    colors = colors_for(s[hue])
    for i, key in enumerate(panels, start=1):
        d = s
        for c, v in zip(panel, key):
            d = d[d[c] == v]
        _depth_row(fig, d, hue, depth, colors, row=i)
    depths = sorted(s[depth].dropna().unique())
    fig.update_xaxes(type="log", tickmode="array", tickvals=depths, ticktext=[f"{v:g}" for v in depths],
                     range=[math.log10(depths[0] / 1.4), math.log10(depths[-1] * 1.4)] if depths else None,
                     title_text=_DEPTH_AXES.get(depth, f"{depth} (log)"))
    fig.update_yaxes(title_text="IOPS (mean)", rangemode="tozero", col=1)
    fig.update_yaxes(title_text="p99 latency (log)", type="log", col=2)
    fig.update_layout(title=(title or f"IOPS and p99 latency against {depth}") + f" ({_ci_label(tails)})",
                      height=DEPTH_ROW_HEIGHT * len(panels) + 160, legend_title_text="" if hue == "_series" else hue)
    return fit_axes(fig, units={"y": "ms"})


def _depth_row(fig: go.Figure, d: pd.DataFrame, hue: str, depth: str, colors: dict, row: int) -> None:
    """One workload × direction: IOPS against depth (left) and p99 against depth (right), a line per `hue`, named
    in the legend once."""
    for name in ordered(d[hue], LAYOUT_ORDER):
        g = d[d[hue] == name].sort_values(depth)
        x_ok = g["n"] >= 2                                    # an interval only where judged
        common = dict(name=str(name), legendgroup=str(name), line=dict(color=colors[name]), marker=dict(size=8))
        fig.add_trace(go.Scatter(
            x=g[depth], y=g["mean"], showlegend=row == 1, mode="lines+markers+text", text=n_labels(g["n"]),
            textposition="top center", customdata=g["n"], **common,
            hovertemplate=f"{depth} " + "%{x}: %{y:,.4g} IOPS (n=%{customdata})<extra></extra>",
            error_y=dict(type="data", array=(g["ci95_high"] - g["mean"]).where(x_ok),
                         arrayminus=(g["mean"] - g["ci95_low"].clip(lower=0)).where(x_ok))), row=row, col=1)
        p = g[g["value_ms"].notna()]
        y_ok = p["status"] == "judged"
        fig.add_trace(go.Scatter(
            x=p[depth], y=p["value_ms"], showlegend=False, mode="lines+markers", text=[""] * len(p), **common,
            hovertemplate=f"{depth} " + "%{x}: p99 %{y:,.4g} ms<extra></extra>",
            error_y=dict(type="data", array=(p["ci_high_ms"] - p["value_ms"]).where(y_ok),
                         arrayminus=(p["value_ms"] - p["ci_low_ms"]).where(y_ok))), row=row, col=2)
