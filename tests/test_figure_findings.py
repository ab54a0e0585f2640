"""Figures that carry the finding (issue 52, item 4): what a reader meets on the shipped examples' figures.

Log axes labelled "2, 1000, 5, 2, 100" (plotly's minor ticks) and one label on a static latency panel;
layouts joined by lines across categories; the depth study a vertical line on an axis from zero; a legend
entry (p99.9) for a series never drawn; an axis range set by one interval resting on two units. Each test
reads the figure as plotly draws it (its layout's ticks and ranges, its traces' modes) and, where the static
redraw could differ, the matplotlib axes `figures_static` draws.
"""

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.claims.answer import latency_tails
from zbench_lib.analysis.figures.axes import CLIPPED, CLIPPED_NAME, REACH, TOP_PAD, log_ticks
from zbench_lib.analysis.figures.figures_static import static_figure
from zbench_lib.analysis.figures.plot_base import LAYOUT_ORDER, PALETTE
from zbench_lib.analysis.figures.report_figures import plot_depth_curve, plot_levels

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"
# a full number with its unit: "500 µs", "20 ms", "1,500 ms", "2 s"; or a plain one where the title has the unit
FULL = re.compile(r"^\d{1,3}(,\d{3})*(\.\d+)?( (µs|ms|s))?$")
MINOR_DIGITS = {str(d) for d in range(2, 10)}


def _vbs():
    s = A.load_sweep(EXAMPLES / "volblocksize")
    adm = A.select_admissible(s.results)
    return s, adm


def _block_headline():
    s, adm = _vbs()
    tails = latency_tails(adm, s.histograms, ["workload", "direction", "layout", "volblocksize_bytes"])
    return plot_levels(adm, "volblocksize_bytes", tails, series="layout"), tails


def _depth_figure():
    s = A.load_sweep(EXAMPLES / "iodepth-curve")
    adm = A.select_admissible(s.results)
    return plot_depth_curve(adm, latency_tails(adm, s.histograms, ["workload", "direction", "layout", "iodepth"])), adm


def _log_axes(fig):
    return {k: fig.layout[k] for k in fig.layout.to_plotly_json() if k[1:5] == "axis" and fig.layout[k].type == "log"}


def _data_span(fig, name):
    """The data-unit span of the axis `name` ('yaxis3') as its range gives it."""
    lo, hi = fig.layout[name].range
    return 10 ** lo, 10 ** hi


@pytest.mark.parametrize("lo, hi", [(80, 280), (7.5, 4500), (1, 64), (0.3, 3), (150, 600), (0.05, 2)])
def test_log_ticks_label_full_numbers_at_least_three_where_the_axis_spans_a_factor_three(lo, hi):
    vals, texts = log_ticks(lo, hi, "ms")
    assert all(lo <= v <= hi for v in vals) and vals == sorted(vals)
    assert len(vals) >= 3 and len(vals) <= 8
    assert all(FULL.match(t) for t in texts), texts
    assert log_ticks(1, 1000)[1] == ["1", "10", "100", "1,000"]
    assert log_ticks(0.06, 0.09, "ms")[1] == ["60 µs", "70 µs", "80 µs", "90 µs"]     # not 70.00000000000001 µs
    assert log_ticks(700, 2500, "ms")[1] == ["700 ms", "1 s", "1.5 s", "2 s"]


def test_every_log_axis_of_the_block_headline_is_labelled_in_full_numbers_in_both_renderings():
    """The volblocksize headline's latency panels: plotly labelled its minor ticks '5, 2, 1000, 5, 2, 100' and
    the static redraw labelled one tick ('100') on a panel spanning 80-280 ms."""
    fig, _ = _block_headline()
    axes = _log_axes(fig)
    assert set(axes) == {"yaxis3", "yaxis4"}
    for name, ax in axes.items():
        assert ax.tickmode == "array" and ax.tickvals is not None, name
        texts = list(ax.ticktext)
        assert all(FULL.match(t) for t in texts) and not MINOR_DIGITS & set(texts), (name, texts)
        lo, hi = _data_span(fig, name)
        inside = [v for v in ax.tickvals if lo <= v <= hi]
        assert len(inside) >= 3 if hi / lo > 3 else len(inside) >= 2, (name, lo, hi, inside)
    out = static_figure(fig)
    for ax in out.axes[2:4]:                      # the two latency panels, as the static export draws them
        lo, hi = ax.get_ylim()
        labels = [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks()) if lo <= v <= hi]
        assert len(labels) >= 3 and all(FULL.match(t) for t in labels), labels


def test_layouts_are_bars_with_intervals_never_joined_by_lines():
    """A layout study (the demo's question) drew mirror, raidz1 and raidz2 joined by a line per block size: a
    slope between categories that means nothing. A bar per layout with its interval, in the layout's own
    colour, grouped by block size, each layout named once in the legend; its p99 and p99.9 a dot each at
    the bar's place, on a log axis."""
    s, adm = _vbs()
    tails = latency_tails(adm, s.histograms, ["workload", "direction", "volblocksize_bytes", "layout"])
    fig = plot_levels(adm, "layout", tails)
    data = [t for t in fig.data if t.meta != CLIPPED]
    top = [t for t in data if t.yaxis == "y"]
    dots = [t for t in data if t.type == "scatter"]
    assert {t.type for t in top} == {"bar"} and dots and all(t.mode == "markers" for t in dots)
    assert list(fig.layout.xaxis.ticktext) == ["4K", "16K", "128K"]
    assert [t.name for t in data if t.showlegend] == ["mirror", "raidz1", "raidz2"]
    assert {t.legendgroup: t.marker.color for t in data} == {lay: PALETTE[LAYOUT_ORDER.index(lay)]
                                                             for lay in ("mirror", "raidz1", "raidz2")}
    at = [x for t in top for x in t.x]
    assert len(at) == len(set(at)) == 9           # a bar per layout and block size, side by side
    assert all(np.isfinite(t.error_y.array).all() for t in top)
    assert {x for t in dots for x in t.x} <= set(at)                  # each latency at its bar's place
    assert {fig.layout[f"yaxis{i}"].title.text for i in (3, 5)} == {"p99 latency (log)", "p99.9 latency (log)"}
    assert fig.layout.yaxis3.type == "log" and all(FULL.match(t) for t in fig.layout.yaxis3.ticktext)


def test_a_numeric_factor_keeps_its_lines():
    fig, _ = _block_headline()
    top = [t for t in fig.data if t.yaxis == "y" and t.meta is None]
    assert top and all("lines" in t.mode for t in top)


def test_the_depth_study_is_p99_against_depth_on_log_log_beside_iops_against_depth():
    """The depth headline was IOPS against p99 from zero: a vertical line where depth gains no IOPS. Now two
    panels along the depth: IOPS (from zero: the plateau reads flat) and p99 on log-log axes (a queue that no
    longer gains IOPS doubles its latency with each doubling of depth: a straight line)."""
    fig, adm = _depth_figure()
    iops = [t for t in fig.data if t.meta is None and t.xaxis == "x"]
    p99 = [t for t in fig.data if t.meta is None and t.xaxis == "x2"]
    depths = sorted(adm["iodepth"].unique())
    assert len(iops) == len(p99) == 1
    assert list(iops[0].x) == depths and list(p99[0].x) == depths
    lay = fig.layout
    assert lay.xaxis.type == lay.xaxis2.type == lay.yaxis2.type == "log" and lay.yaxis.type != "log"
    assert list(lay.xaxis2.tickvals) == depths and list(lay.xaxis2.ticktext) == [str(d) for d in depths]
    assert "IOPS" in lay.yaxis.title.text and "p99" in lay.yaxis2.title.text
    assert "depth" in lay.xaxis.title.text and "depth" in lay.xaxis2.title.text
    assert lay.yaxis.range[0] == 0                                     # the IOPS level against zero
    assert p99[0].y[-1] > 10 * p99[0].y[0]                             # qd1 about 12 ms, qd64 about 425 ms
    texts = list(lay.yaxis2.ticktext)
    assert len(texts) >= 3 and all(FULL.match(t) for t in texts)
    out = static_figure(fig)
    assert [ax.get_xscale() for ax in out.axes] == ["log", "log"] and out.axes[1].get_yscale() == "log"
    assert [t.get_text() for t in out.axes[1].get_xticklabels()] == [str(d) for d in depths]


def test_no_legend_entry_for_a_series_that_is_not_drawn():
    """The demo's p99.9 needs 10,000 I/Os a run and was never judged, yet the legend said 'p99.9 (lower panels)'."""
    fig, tails = _block_headline()
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert "p99.9 (lower panels)" in legend                          # drawn here: named
    s, adm = _vbs()
    only_p99 = tails.assign(status=tails["status"].where(tails["percentile"] == "p99", "not judged"))
    fig = plot_levels(adm, "volblocksize_bytes", only_p99, series="layout")
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert "p99 (lower panels)" in legend and not any("p99.9" in n for n in legend), legend
    labels = [t.get_text() for t in static_figure(fig).legends[0].get_texts()]
    assert not any("p99.9" in n for n in labels)


def _wide_interval_runs():
    """IOPS per layout: mirror and raidz1 on four runs each, raidz2 on two runs far apart (an n=2 interval
    some 12.7 standard errors wide on each side)."""
    rows = [dict(workload="randread", direction="read", layout=lay, width=4, vdevs=1, rep=r, run_id=f"{lay}{r}",
                 iops=v) for lay, vals in (("mirror", (400, 410, 395, 405)), ("raidz1", (150, 155, 148, 152)),
                                         ("raidz2", (60, 240))) for r, v in enumerate(vals)]
    return pd.DataFrame(rows)


def test_one_wide_interval_does_not_set_the_axis_and_its_clipping_is_marked():
    df = _wide_interval_runs()
    fig = plot_levels(df, "layout")
    bars = {t.legendgroup: t for t in fig.data if t.type == "bar"}
    lo, hi = fig.layout.yaxis.range
    top = max(max(t.y) for t in bars.values())
    assert lo == 0 and top < hi <= REACH * (1 + TOP_PAD) * top      # the estimates fill the panel
    assert bars["raidz2"].y[0] + bars["raidz2"].error_y.array[0] > hi   # raidz2's interval does run past it
    arrows = [t for t in fig.data if t.meta == CLIPPED and t.x[0] is not None]
    assert len(arrows) == 1 and arrows[0].marker.symbol == "triangle-up" and arrows[0].y[0] <= hi
    assert "beyond the axis" in arrows[0].hovertext[0]
    assert [t.name for t in fig.data if t.meta == CLIPPED and t.showlegend is not False] == [CLIPPED_NAME]
    ax = static_figure(fig).axes[0]
    assert ax.get_ylim() == pytest.approx((lo, hi))


def test_an_axis_whose_intervals_fit_keeps_them_whole():
    fig, _ = _block_headline()
    assert not [t for t in fig.data if t.meta == CLIPPED]
    for name in ("yaxis", "yaxis2"):
        assert fig.layout[name].range[0] == 0 and math.isfinite(fig.layout[name].range[1])
