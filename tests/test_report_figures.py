"""The data behind each chart fix: marker positions, tick labels, legend entries, units, n, captions.

Each test builds a figure from hand-made or real example tables and checks what a reader
sees: where the model marker sits, which tick labels the log axis shows, which colours
the legend explains, what the axes are measured in.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.figures import plots
from zbench_lib.analysis.report.notebook_display import figure_caption, fio_parameters
from zbench_lib.analysis.figures.plot_base import CAPTION_NAME, LAYER_COLORS, PALETTE, caption_of, ratio_ticks
from zbench_lib.analysis.figures.report_figures import (iops_vs_drives_data, overlay_model, plot_iops_vs_drives,
                                                        ratio_figure, space_figure)
from zbench_lib.analysis.stats.stats import scaling
from zbench_lib.zfs.models import predicted_random_read_iops

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


def _rgb(color):
    return np.array([int(color.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)], float)


def _same_hue(a, b):
    """Same colour family: one is a darker or lighter shade of the other."""
    import colorsys
    ha = colorsys.rgb_to_hsv(*(_rgb(a) / 255))[0]
    hb = colorsys.rgb_to_hsv(*(_rgb(b) / 255))[0]
    return abs(ha - hb) < 0.03 or abs(abs(ha - hb) - 1) < 0.03


def _space_df():
    rows = []
    for lay, width, pred in (("mirror", 2, (1.0, 1.0, 1.0)), ("raidz1", 6, (1.6, 1.2, 1.0)),
                             ("raidz2", 6, (2.0, 1.0, 1.0))):
        for b, p, n in zip((4096, 16384, 131072), pred, (1, 3, 3)):
            rows.append(dict(layout=lay, width=width, volblocksize_bytes=b, measured_used_ratio=p * 1.001,
                             n=n, predicted_used_ratio=p))
    return pd.DataFrame(rows)


def test_space_model_marker_sits_on_its_own_bar_in_its_colour_family():
    fig = space_figure(_space_df())
    bars = [t for t in fig.data if t.type == "bar"]
    models = [t for t in fig.data if t.meta == "model"]
    assert len(bars) == len(models) == 3
    for bar, model in zip(bars, models):
        assert bar.legendgroup == model.legendgroup
        xs = [x for x in model.x if x is not None]
        mids = (np.array(xs[0::2]) + np.array(xs[1::2])) / 2
        assert np.allclose(mids, bar.x)                               # the segment is centred on the bar
        assert np.allclose(np.array(xs[1::2]) - np.array(xs[0::2]), bar.width)   # and spans exactly it
        assert _same_hue(bar.marker.color, model.line.color) and bar.marker.color != model.line.color
    raidz2 = [m for m in models if m.legendgroup == "raidz2 of 6"][0]
    raidz1_bar = [b for b in bars if b.legendgroup == "raidz1 of 6"][0]
    y4k = [y for y in raidz2.y if y is not None][0]
    assert y4k == 2.0 and not np.isclose(raidz1_bar.x[0], (raidz2.x[0] + raidz2.x[1]) / 2)
    assert list(fig.layout.xaxis.ticktext) == ["4K", "16K", "128K"]
    assert "×" in fig.layout.yaxis.title.text
    assert [t for t in bars[0].text] == ["n=1", "", ""]                # n shown where n = 1 only


@pytest.mark.parametrize("lo, hi, expect", [(0.4, 6.0, ["0.5×", "1×", "2×", "4×"]),
                                            (0.9, 1.2, ["0.9×", "1×", "1.1×"]),
                                            (0.05, 20, None)])
def test_ratio_ticks_are_readable(lo, hi, expect):
    vals, texts = ratio_ticks(lo, hi)
    assert all(t.endswith("×") for t in texts) and "1×" in texts
    assert len(vals) <= 7 and vals == sorted(vals)
    if expect:
        assert texts[:len(expect)] == expect or set(expect) <= set(texts)


def test_forest_plot_log_axis_reads_ratios_and_rows_are_distinct():
    v = A.load_sweep(EXAMPLES / "volblocksize")
    cmp = A.compare_table(A.select_admissible(v.results), "iops", "volblocksize_bytes", 16384)
    fig = ratio_figure(cmp, "iops", 0.05)
    ax = fig.layout.xaxis
    assert ax.type == "log" and ax.tickmode == "array"
    assert all(t.endswith("×") for t in ax.ticktext) and "1×" in ax.ticktext
    assert not any(t in ("4", "5", "6", "9", "2", "3") for t in ax.ticktext)
    assert 10 ** ax.range[0] < cmp["ratio"].min() and 10 ** ax.range[1] > cmp["ratio"].max()
    labels = list(fig.data[0].y)
    assert len(set(labels)) == len(labels)                            # one row per comparison
    one_run = cmp[["n_level", "n_baseline"]].min(axis=1) == 1
    assert [t == "n=1" for t in fig.data[0].text] == list(one_run)
    assert fig.layout.title.text.startswith("IOPS")


def _scaling_df():
    rows = []
    for lay, width, per in (("stripe", 1, 100), ("mirror", 2, 180)):
        for d in (1, 2, 4):
            for rep, jitter in enumerate((-2, 0, 2) if d < 4 else (0,)):
                rows.append(dict(layout=lay, width=width, vdevs=d, data_disks=d, rep=rep,
                                 iops=per * d * (1 - 0.05 * (d - 1)) + jitter))
    return scaling(pd.DataFrame(rows), "iops")


def test_per_disk_ideal_lines_take_their_layout_colour_with_one_legend_entry():
    s = _scaling_df()
    fig = plots.plot_scaling_interactive(s, kind="per_disk", error="sd", ylabel="IOPS per data disk")
    data = {t.name: t for t in fig.data if t.meta is None and t.x[0] is not None}
    ideal = [t for t in fig.data if t.meta == "ideal"]
    assert {t.line.color for t in ideal} == {data["stripe"].line.color, data["mirror"].line.color}
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert sum("ideal" in n for n in legend) == 1 and "black" not in {t.line.color for t in ideal}
    assert list(data["stripe"].text) == ["", "", "n=1"]               # n=1 at 4 disks only
    assert fig.layout.yaxis.title.text == "IOPS per data disk" and fig.layout.xaxis.title.text == "data disks"
    fig = overlay_model(fig, s.assign(model_per_disk=[100.0, 100, 100, 180, 180, 180]))
    models = [t for t in fig.data if t.meta == "model"]
    assert {t.legendgroup for t in models} == {"model"} and all(t.showlegend is False for t in models)
    assert sum(1 for t in fig.data if t.legendgroup == "model" and t.showlegend) == 1
    for m in models:
        assert _same_hue(m.line.color, data[m.name.split(": ")[1]].line.color)


def test_scaling_axes_carry_units():
    fig = plots.plot_scaling_interactive(_scaling_df(), kind="scaling")
    assert "(×)" in fig.layout.yaxis.title.text
    eff = plots.plot_scaling_interactive(_scaling_df(), kind="efficiency")
    assert "1 = linear" in eff.layout.yaxis.title.text


def _layer_series():
    t = np.arange(6.0)
    return pd.DataFrame([dict(t_s=s, layer=layer, metric=m, value=(2 ** 20 if m == "bytes_s" else 100) * f)
                         for layer, f in (("fio", 1.0), ("pool", 1.1), ("device", 1.3))
                         for m in ("ops_s", "bytes_s") for s in t])


def test_timeline_colours_are_all_in_the_legend_and_axes_have_units():
    fig = plots.plot_timeseries_interactive(_layer_series(), metrics=["ops_s", "bytes_s"])
    legend = {t.name: t.line.color for t in fig.data if t.showlegend}
    used = {(t.name, t.line.color) for t in fig.data}
    assert set(legend) == {"fio", "pool", "device"}
    assert all(legend[name] == color for name, color in used)         # every colour drawn is explained
    assert legend == {k: LAYER_COLORS[k] for k in legend}
    assert fig.layout.yaxis.title.text == "operations/s" and fig.layout.yaxis2.title.text == "MiB/s"
    mib = [t for t in fig.data if t.yaxis == "y2" and t.name == "fio"][0]
    assert np.allclose(mib.y, 1.0)                                    # bytes/s drawn as MiB/s
    assert "(s)" in fig.layout.xaxis2.title.text


def test_headline_iops_against_drives_with_the_per_vdev_model():
    sc = A.load_sweep(EXAMPLES / "scaling")
    df = A.select_admissible(sc.results)
    data = iops_vs_drives_data(df)
    assert set(data.loc[data["workload"] == "seqread", "metric"]) == {"bw_bytes_s"}
    rr = data[(data["workload"] == "randread-4k")]
    assert set(rr["metric"]) == {"iops"} and rr["model"].notna().all()
    disk = df["disk_model_iops"].median()
    for r in rr.itertuples():
        assert r.model == pytest.approx(predicted_random_read_iops(r.layout, r.width, r.vdevs, disk, 16384))
    fig = plot_iops_vs_drives(df)
    lines = [t for t in fig.data if t.meta is None and t.x[0] is not None]
    stripe = [t for t in lines if t.name == "stripe" and t.xaxis == "x"][0]
    sub = rr[rr["layout"] == "stripe"].sort_values("total_disks")
    assert list(stripe.x) == list(sub["total_disks"]) and np.allclose(stripe.y, sub["mean"])
    assert [t for t in stripe.text] == ["n=1" if n == 1 else "" for n in sub["n"]]
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert legend.count("per-vdev random-read model (dotted)") == 1 and legend.count("stripe") == 1
    assert [fig.layout[f"yaxis{i}"].title.text for i in ("", 2, 3, 4)] == ["IOPS (mean)"] * 2 + ["MiB/s (mean)"] * 2
    assert fig.layout.xaxis.title.text == "drives in the pool"


def test_iops_vs_p99_and_latency_percentiles_have_units_and_n():
    rows = [dict(layout=lay, iodepth=qd, rep=r, iops=base * qd + r, lat_p99_ns=1e5 * qd, lat_p50_ns=5e4 * qd)
            for lay, base in (("mirror", 100), ("raidz2", 40)) for qd in (1, 4) for r in range(3 if qd == 1 else 1)]
    fig = plots.plot_iops_vs_p99_interactive(pd.DataFrame(rows))
    assert fig.layout.yaxis.title.text.endswith("(ms)") and "IOPS" in fig.layout.xaxis.title.text
    assert list(fig.data[0].text) == ["qd1", "qd4 n=1"]
    lat = plots.plot_latency_percentiles_interactive(pd.DataFrame(rows).assign(config_id=lambda d: d["layout"]
                                                                             + d["iodepth"].astype(str)))
    assert lat.layout.yaxis.title.text == "latency (log)" and lat.layout.yaxis.type == "log"
    assert list(lat.layout.yaxis.ticktext) == ["50 µs", "100 µs", "200 µs"]    # 0.05-0.4 ms: the unit at each tick
    assert list(lat.data[0].x) == ["p50", "p99"]


def test_volblocksize_map_shows_n_and_units():
    df = pd.DataFrame([dict(layout=lay, volblocksize_bytes=v, rep=r, lat_p99_ms=2.0 + i)
                       for i, lay in enumerate(("raidz2", "mirror")) for v in (4096, 16384) for r in range(1 + i)])
    fig = plots.plot_volblocksize_map_interactive(df, "lat_p99_ms")
    assert "ms" in fig.data[0].colorbar.title.text
    assert "<br>n=2<br>" in fig.data[0].text[0][0] and "<br>n=1<br>" in fig.data[0].text[1][0]


def _vbs_cells_df():
    """Two layouts × two volblocksizes; mirror 16K rests on one run, raidz2 on two pool replicates."""
    rows = []
    for i, lay in enumerate(("raidz2", "mirror")):
        for v in (4096, 16384):
            reps = 1 if (lay, v) == ("mirror", 16384) else 4
            for r in range(reps):
                rows.append(dict(layout=lay, volblocksize_bytes=v, rep=r, pool_replicate=1 + r % 2 if i == 0 else 1,
                                 lat_p99_ns=(2e6 + 1e6 * i + v * 10) * (1 + 0.07 * r)))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("layout", ["raidz2", "mirror"])
def test_volblocksize_map_cells_show_n_and_the_summary_ci(layout):
    """Each heatmap cell (its text, its hover and the static redraws) carries n and the 95% CI of
    `stats.summary`, the interval the analysis computes for that configuration."""
    from zbench_lib.analysis.figures.figures_static import static_figure
    from zbench_lib.analysis.figures.plot_base import fmt
    from zbench_lib.analysis.stats.stats import summary
    from zbench_lib.core.sizes import format_size
    df = _vbs_cells_df()
    d = df[df["layout"] == layout]              # raidz2 alone: two pool replicates, so n counts pools
    table = summary(d, "lat_p99_ns", ["layout", "volblocksize_bytes"])
    fig = plots.plot_volblocksize_map_interactive(d, "lat_p99_ns", title="t")
    t = fig.data[0]
    unit = table["unit"].iloc[0]
    assert unit == ("pool" if layout == "raidz2" else "run")
    assert f"n {unit}s, 95% CI of the mean" in fig.layout.title.text
    static = plots.plot_volblocksize_map(d, "lat_p99_ns")
    static_texts = [x.get_text() for x in static.axes[0].texts]
    redraw = [x.get_text() for x in static_figure(fig).axes[0].texts]
    for _, r in table.iterrows():
        i, j = list(t.y).index(layout), list(t.x).index(format_size(int(r["volblocksize_bytes"])))
        text, hover = t.text[i][j], t.hovertext[i][j]
        assert f"n={int(r['n'])}" in text.split("<br>") and f"n={int(r['n'])} ({unit}" in hover
        assert text.split("<br>")[0] == fmt(r["mean"] / 1e6) and f"mean {fmt(r['mean'] / 1e6)}" in hover
        if r["n"] > 1:
            ci = f"{fmt(r['ci95_low'] / 1e6)}–{fmt(r['ci95_high'] / 1e6)}"     # ns in the table, ms drawn
            assert f"CI {ci}" in text.split("<br>") and f"95% CI of the mean {ci}" in hover
        else:
            assert "no CI" in text.split("<br>") and "95% CI" not in hover
        assert text.replace("<br>", "\n") in static_texts and text.replace("<br>", "\n") in redraw
    if layout == "raidz2":                       # pool level: n is 2 pools, not 4 runs
        assert set(table["n"]) == {2} and all("n=2" in x for x in t.text[0])


def test_captions_carry_the_sweep_id_and_the_fio_parameters():
    sc = A.load_sweep(EXAMPLES / "scaling")
    params = fio_parameters(sc.results)
    assert params[0] == "randread-4k: randread, bs 4K, iodepth 8, numjobs 2, 15 s runs"
    text = figure_caption("randread-4k: iops scaling", [sc])
    assert sc.results["sweep_id"].iloc[0] in text and "seqread" not in text
    assert "iodepth 8" in text and "numjobs 2" in text and "bs 4K" in text and "15 s runs" in text
    from zbench_lib.analysis.figures.plot_base import add_caption
    fig = add_caption(plot_iops_vs_drives(A.select_admissible(sc.results)), text)
    assert caption_of(fig) == text and sum(a.name == CAPTION_NAME for a in fig.layout.annotations) == 1
    assert PALETTE[0] in {t.line.color for t in fig.data}


def test_headline_tells_each_layout_family_and_vdev_count_apart_and_names_each_once():
    """Issue 31: six raidz1 series shared one colour and marker (a line per vdev width, which joined a
    1x2 and a 2x2 pool). Now a line per scaling family: its layout's colour and marker, a dash per vdev count,
    each named once in the legend, in the interactive figure and its static redraw alike."""
    from zbench_lib.analysis.figures.figures_static import figure_frame, static_figure
    df = A.select_admissible(A.load_sweep(EXAMPLES / "scaling").results)
    fig = plot_iops_vs_drives(df)
    series = [t for t in fig.data if t.meta is None and t.x[0] is not None]
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert legend == ["stripe", "mirror", "raidz1", "2x raidz1", "raidz2", "raidz3", "ideal: n × one drive",
                      "per-vdev random-read model (dotted)"]
    style = {t.name: (t.line.color, t.marker.symbol, t.line.dash) for t in series}
    assert len(set(style.values())) == len(style) == 6
    assert style["raidz1"][:2] == style["2x raidz1"][:2] and style["raidz1"][2] != style["2x raidz1"][2]
    assert len({(c, m) for c, m, _ in style.values()}) == 5           # one colour and marker per layout
    frame = figure_frame(fig)
    assert set(frame.loc[frame["name"] == "2x raidz1", "ls"]) == {"dash"}
    assert frame.groupby("name")["marker"].nunique().max() == 1 and frame["marker"].nunique() >= 5
    out = static_figure(fig)
    labels = [t.get_text() for t in out.legends[0].get_texts()]
    assert labels == legend


def test_block_size_headline_draws_iops_and_p99_p999_with_intervals():
    from zbench_lib.analysis.claims.answer import latency_tails
    from zbench_lib.analysis.figures.report_figures import plot_levels
    s = A.load_sweep(EXAMPLES / "volblocksize")
    adm = A.select_admissible(s.results)
    tails = latency_tails(adm, s.histograms, ["workload", "direction", "layout", "volblocksize_bytes"])
    fig = plot_levels(adm, "volblocksize_bytes", tails, series="layout")
    tails_traces = [t for t in fig.data if t.name and t.name.endswith(("p99", "p99.9")) and t.yaxis in ("y3", "y4")]
    assert {t.name.split()[-1] for t in tails_traces} == {"p99", "p99.9"}
    assert all(t.error_y.array is not None for t in tails_traces)
    assert list(fig.layout.xaxis3.categoryarray) == ["4K", "16K", "128K"]
    assert fig.layout.yaxis3.title.text == "latency (log)"


def test_forest_plot_draws_no_interval_where_the_text_says_not_judged():
    from zbench_lib.analysis.figures.report_figures import ratio_figure
    cmp = pd.DataFrame({"factor": ["layout"] * 2, "level": ["mirror", "raidz1"], "baseline": ["stripe"] * 2,
                        "n_level": [3, 6], "n_baseline": [3, 3], "ratio": [0.9, 0.5], "ratio_ci_low": [0.8, 0.3],
                        "ratio_ci_high": [1.0, 0.8], "verdict": ["lower", "not judged"], "metric": ["iops"] * 2})
    t = ratio_figure(cmp, "iops").data[0]
    assert np.isfinite(t.error_x.array[0]) and np.isnan(t.error_x.array[1])
    assert list(t.text) == ["", "not judged"]


def _drawn_label_boxes(fig, plot_w: float = 560.0) -> list[tuple]:
    """Each label the figure draws as (text, x0, y0, x1, y1) in pixels of its plot area (y upwards).

    Measured from the figure alone, as a browser lays it out: the plot area is the figure's height less
    its margins (plotly's defaults where unset) on a page `plot_w` wide; the axes span their given
    range, else zero (rangemode tozero) to the data's top with its error bars and plotly's 5% pad; 12 px
    text is 7 px a character and 14 px tall, set 4 px off its point on the side `textposition` names.
    """
    lay = fig.layout
    plot_h = (lay.height or 450) - (lay.margin.t if lay.margin.t is not None else 100) \
        - (lay.margin.b if lay.margin.b is not None else 80)
    pts = [(x, y, ex, ey, text, pos) for t in fig.data if t.text is not None
           for x, y, ex, ey, text, pos in zip(t.x, t.y, t.error_x.array, t.error_y.array, t.text,
                                              t.textposition if isinstance(t.textposition, tuple)
                                              else [t.textposition] * len(t.x)) if text]
    span = {a: list(lay[f"{a}axis"].range) if lay[f"{a}axis"].range else
            [0.0, 1.05 * max(v + e for t in fig.data for v, e in zip(t[a], t[f"error_{a}"].array))] for a in "xy"}
    boxes = []
    for x, y, _, _, text, pos in pts:
        px = (x - span["x"][0]) / (span["x"][1] - span["x"][0]) * plot_w
        py = (y - span["y"][0]) / (span["y"][1] - span["y"][0]) * plot_h
        w, h = 7 * len(text), 14
        vertical, horizontal = pos.split()
        x0 = {"right": px + 4, "left": px - 4 - w, "center": px - w / 2}[horizontal]
        y0 = {"top": py + 4, "bottom": py - 4 - h, "middle": py - h / 2}[vertical]
        boxes.append((text, x0, y0, x0 + w, y0 + h))
    return boxes, plot_w, plot_h


def _depth_curve(s):
    """The depth study's IOPS-p99 curve as its compare page and its index draw it."""
    from zbench_lib.analysis.claims.answer import latency_tails
    from zbench_lib.analysis.figures.report_figures import plot_depth_curve
    adm = A.select_admissible(s.results)
    return plot_depth_curve(adm, latency_tails(adm, s.histograms, ["workload", "direction", "layout", "iodepth"]))


def test_depth_curve_labels_never_overlap_and_stay_inside_the_plot():
    """Issue 31: the depth study's IOPS-p99 curve printed "qd1", "qd2" and "qd4" on top of each other, p99
    barely moving between them on an axis up to 430 ms, and cut "qd64 n=1" off at the top. Each label drawn
    is clear of every other and inside the plot area (a three-line caption taking its room); the curve's
    ends are labelled; every point says its depth on hover. The plots module's curve (the report's own depth
    figure draws depth along its x axes since issue 52: `test_figure_findings`)."""
    from zbench_lib.analysis.figures.figures_static import figure_frame
    from zbench_lib.analysis.figures.plot_base import add_caption
    s = A.load_sweep(EXAMPLES / "iodepth-curve")
    fig = plots.plot_iops_vs_p99_interactive(A.select_admissible(s.results), hue="layout", title="randread read")
    add_caption(fig, figure_caption(fig.layout.title.text, [s]))
    assert fig.layout.margin.b >= 80 + 15 * 3                                     # three lines of caption
    boxes, w, h = _drawn_label_boxes(fig)
    texts = [b[0] for b in boxes]
    assert texts[0] == "qd1" and texts[-1] == "qd64 n=1" and len(texts) >= 5
    for i, a in enumerate(boxes):
        assert 0 <= a[1] and a[3] <= w and 0 <= a[2] and a[4] <= h, f"{a[0]} is cut off: {a[1:]} in {w}x{h}"
        for b in boxes[i + 1:]:
            clear = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
            assert clear, f"labels {a[0]} and {b[0]} overlap: {a[1:]} / {b[1:]}"
    t = fig.data[0]
    assert [int(d[0]) for d in t.customdata] == [1, 2, 4, 8, 16, 32, 64] and "iodepth" in t.hovertemplate
    frame = figure_frame(fig)                # the static redraw sets each label where the interactive one does
    drawn = frame[frame["text"] != ""]
    assert list(drawn["text"]) == texts and list(drawn["textpos"]) == [p for p, x in zip(t.textposition, t.text) if x]
    static = plots.plot_iops_vs_p99(A.select_admissible(s.results))        # its matplotlib twin: the same labels
    assert [a.get_text() for a in static.axes[0].texts] == texts


def test_label_placement_leaves_off_a_label_with_no_room_and_keeps_the_ends():
    from zbench_lib.analysis.figures.plot_base import place_labels
    # three points 2 px apart on a vertical line: the ends take a side each, the middle one has no room
    pos = place_labels([(50, 10, "qd1", True), (50, 12, "qd2", False), (50, 14, "qd4", True)],
                       (0, 100), (0, 100), (100, 100))
    assert pos[0] is not None and pos[2] is not None and pos[1] is None
    assert place_labels([(99, 99, "qd64", True)], (0, 100), (0, 100), (100, 100)) == ["bottom left"]


def test_the_static_depth_curve_spans_and_joins_as_the_interactive_one():
    """The static redraw autoscaled the IOPS axis (174.8-175.4, the flat curve as wild swings the interactive
    figure avoids by starting at zero) and joined the points in x order; it takes the figure's ranges (a log
    axis's in powers of ten), its ticks and joins the points in the trace's order, in both panels."""
    from zbench_lib.analysis.figures.figures_static import static_figure
    fig = _depth_curve(A.load_sweep(EXAMPLES / "iodepth-curve"))
    out = static_figure(fig)
    for ax, (xa, ya), trace in zip(out.axes, (("xaxis", "yaxis"), ("xaxis2", "yaxis2")), fig.data[:2]):
        for axis, spec in (("x", fig.layout[xa]), ("y", fig.layout[ya])):
            lo, hi = spec.range
            want = (10 ** lo, 10 ** hi) if spec.type == "log" else (lo, hi)
            assert getattr(ax, f"get_{axis}lim")() == pytest.approx(want)
            if spec.tickvals is not None:
                assert [t.get_text() for t in getattr(ax, f"get_{axis}ticklabels")()] == list(spec.ticktext)
        joined = [ln for ln in ax.get_lines() if len(ln.get_ydata()) == len(trace.y)]
        assert joined and list(joined[0].get_ydata()) == pytest.approx(list(trace.y))
