"""The report's own charts: IOPS against drives (the headline), the space model, forest plots.

    plot_iops_vs_drives(df)        absolute IOPS (or MiB/s) against the drives of the pool, a
                                   line per layout, a panel per workload × direction, with the
                                   per-vdev random-read model dotted in the layout's colour
    overlay_model(fig, scaling)    the same model per data disk, on a per-disk scaling chart
    space_figure(space)            referenced / logicalused per block size: a bar per layout with
                                   the allocation model drawn across that very bar
    ratio_figure(cmp, metric)      ratios of means with 95% CIs on a log axis labelled 0.5×, 1×, 2×
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from zbench_lib.analysis.figures.plot_base import (CI_LABEL, LAYOUT_ORDER, colors_for, legend_entry, metric_label,
                                                   n_labels, ratio_ticks, shade)
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size
from zbench_lib.zfs.models import has_model, predicted_random_read_iops

_SHAPE = ["layout", "width", "vdevs"]


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


def panel_metric(workload, metric: str = "auto") -> str:
    """'auto': MiB/s for sequential workloads, IOPS for the others."""
    if metric != "auto":
        return metric
    return "bw_bytes_s" if "seq" in str(workload) else "iops"


def iops_vs_drives_data(df: pd.DataFrame, metric: str = "auto", drives: str = "total_disks") -> pd.DataFrame:
    """Mean, 95% CI, n and model per panel (workload, direction) × layout × pool shape.

    `metric` is 'iops', 'bw_bytes_s' or 'auto' (per workload, see `panel_metric`); the
    `metric` column says which one each row holds. The model is given for random reads.
    """
    need = {drives, *_SHAPE} | ({"iops", "bw_bytes_s"} if metric == "auto" else {metric})
    if not need <= set(df.columns):
        raise ConfigError(f"IOPS-vs-drives chart needs columns {sorted(need - set(df.columns))}")
    panel = [c for c in ("workload", "direction") if c in df]
    keys = panel + _SHAPE + [drives]
    parts = []
    for wl, d in (df.groupby("workload", sort=True) if "workload" in df else [("", df)]):
        m = panel_metric(wl, metric)
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
    shapes = s.groupby(panel + ["layout", drives])["width"].transform("nunique") if panel else 1
    s["line"] = np.where(shapes > 1, s["layout"] + " (" + s["width"].astype(str) + "-wide vdevs)", s["layout"])
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
    colors = colors_for(s["layout"])
    shown = set()
    for i, key in enumerate(panels):
        r, c = i // cols + 1, i % cols + 1
        p = s
        for col, v in zip(by, key):
            p = p[p[col] == v]
        label, scale = metric_label(p["metric"].iloc[0])
        for line in sorted(p["line"].unique(), key=lambda v: _rank(v.split(" ")[0])):
            g = p[p["line"] == line].sort_values(drives)
            color = colors[g["layout"].iloc[0]]
            lo = (g["mean"] - g["ci95_low"].clip(lower=0)) * scale
            hi = (g["ci95_high"] - g["mean"]) * scale
            fig.add_trace(go.Scatter(x=g[drives], y=g["mean"] * scale, name=line, legendgroup=line,
                                     showlegend=line not in shown, mode="lines+markers+text",
                                     text=n_labels(g["n"]), textposition="top center", line=dict(color=color),
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
                if "model" not in shown:
                    legend_entry(fig, "per-vdev random-read model (dotted)", "dot", "model", row=r, col=c)
                shown.add("model")
        fig.update_xaxes(title_text="drives in the pool", tickmode="array",
                         tickvals=sorted(p[drives].unique()), row=r, col=c)
        fig.update_yaxes(title_text=f"{label} (mean)", rangemode="tozero", row=r, col=c)
    what = {"auto": "IOPS (random) and MiB/s (sequential)"}.get(metric, metric_label(metric)[0])
    fig.update_layout(title=(title or f"{what} against the number of drives") + f" ({CI_LABEL})",
                      height=380 * rows + 160, legend_title_text="layout")
    return fig


def overlay_model(fig: go.Figure, scaling_df: pd.DataFrame, family: str = "layout") -> go.Figure:
    """Add the first-order random-read model per data disk, dotted in each layout's colour."""
    if "model_per_disk" not in scaling_df or scaling_df["model_per_disk"].isna().all():
        return fig
    colors = colors_for(scaling_df[family])
    groups = sorted(scaling_df.groupby(family), key=lambda kv: _rank(kv[0]))
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
    text = ["n=1" if n == 1 else "" for n in n_min]
    fig = go.Figure(go.Scatter(x=cmp["ratio"], y=labels, mode="markers+text", name="ratio (95% CI)",
                               text=text, textposition="middle right",
                               error_x=dict(type="data", array=cmp["ratio_ci_high"] - cmp["ratio"],
                                            arrayminus=cmp["ratio"] - cmp["ratio_ci_low"])))
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
    name = " / ".join(metric_label(m)[0] if m in ("iops", "bw_bytes_s", "clat_p99_ns") else str(m) for m in shown)
    fig.update_layout(title=f"{name}: ratio to baseline {fmt(cmp['baseline'].iloc[0])} (95% CI"
                            + (f"; shaded: ±{margin:.0%} equivalence margin)" if margin else ")"),
                      xaxis=dict(type="log", title="ratio of means to the baseline (×, log scale)",
                                 tickmode="array", tickvals=vals, ticktext=texts,
                                 range=[math.log10(lo / 1.08), math.log10(hi * 1.08)]),
                      yaxis=dict(autorange="reversed"),             # rows top-down, as in the table
                      height=max(340, 30 * len(cmp) + 260))
    return fig
