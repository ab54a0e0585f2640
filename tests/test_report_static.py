"""Static figures: every plotly figure of a report redrawn with seaborn from the same data."""

import json
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.figures import plots
from zbench_lib.analysis.figures.figures_static import (decode_arrays, export_notebook_figures, figure_frame,
                                                        notebook_figures, save_static, static_figure)
from zbench_lib.analysis.figures.plot_base import add_caption
from zbench_lib.analysis.figures.report_figures import plot_iops_vs_drives, ratio_figure, space_figure
from zbench_lib.core.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


@pytest.fixture(scope="module")
def vbs():
    v = A.load_sweep(EXAMPLES / "volblocksize")
    return A.select_admissible(v.results)


def test_forest_plot_static_keeps_the_readable_ticks_and_the_error_bars(vbs):
    cmp = A.compare_table(vbs, "iops", "volblocksize_bytes", 16384)
    fig = ratio_figure(cmp, "iops", 0.05)
    out = static_figure(fig)
    ax = out.axes[0]
    assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "1×" in labels and all(t.endswith("×") for t in labels if t)
    assert not [t for t in ax.get_xticklabels(minor=True) if t.get_text()]
    frame = figure_frame(fig)
    assert frame["xlo"].notna().sum() == cmp["ratio_ci_low"].notna().sum()
    assert any(abs(line.get_xdata()[0] - 1.0) < 1e-9 for line in ax.get_lines())   # the ratio = 1 line


def test_space_static_draws_bars_and_model_segments_with_one_legend(vbs):
    fig = space_figure(A.space_check(vbs))
    frame = figure_frame(fig)
    bars = frame[frame["kind"] == "bar"]
    segs = frame[frame["kind"] == "lines"]
    assert len(bars) == 9 and len(segs) == 18                        # two ends per model segment
    out = static_figure(fig)
    texts = [t.get_text() for t in out.legends[0].get_texts()]
    assert texts.count("raidz2 of 6: model") == 1 and "mirror of 2: measured" in texts
    assert [t.get_text() for t in out.axes[0].get_xticklabels()] == ["4K", "16K", "128K"]


def test_headline_static_has_a_panel_per_workload_and_the_caption():
    sc = A.load_sweep(EXAMPLES / "scaling")
    fig = add_caption(plot_iops_vs_drives(A.select_admissible(sc.results)), "Sweep x. fio randread-4k: bs 4K.")
    out = static_figure(fig)
    assert len(out.axes) == 4
    assert [ax.get_title() for ax in out.axes] == ["randread-4k read", "randwrite-4k write", "seqread read",
                                                   "seqwrite write"]
    assert [ax.get_ylabel() for ax in out.axes] == ["IOPS (mean)"] * 2 + ["MiB/s (mean)"] * 2
    assert any("Sweep x" in t.get_text() for t in out.texts)
    legend = [t.get_text() for t in out.legends[0].get_texts()]
    assert legend.count("per-vdev random-read model (dotted)") == 1 and "stripe" in legend


def test_heatmap_and_timeline_static(tmp_path):
    df = pd.DataFrame([dict(layout=lay, volblocksize_bytes=v, rep=r, iops=100.0 * (i + 1) + v / 4096)
                       for i, lay in enumerate(("raidz2", "mirror")) for v in (4096, 16384) for r in range(2)])
    out = static_figure(plots.plot_volblocksize_map_interactive(df, "iops"))
    assert "n=2" in " ".join(t.get_text() for t in out.axes[0].texts)
    ts = pd.DataFrame([dict(t_s=s, layer=layer, metric=m, value=1.0) for layer in ("fio", "pool", "device")
                       for m in ("ops_s", "bytes_s") for s in range(4)])
    tl = static_figure(plots.plot_timeseries_interactive(ts, metrics=["ops_s", "bytes_s"]))
    assert len(tl.axes) == 2 and [ax.get_ylabel() for ax in tl.axes] == ["operations/s", "MiB/s"]
    paths = save_static(plots.plot_volblocksize_map_interactive(df, "iops"), tmp_path / "map")
    assert [p.suffix for p in paths] == [".png", ".svg"] and paths[0].read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ConfigError):
        save_static(plots.plot_volblocksize_map_interactive(df, "iops"), tmp_path / "x", ("gif",))


def test_figures_are_read_back_from_an_executed_notebook(tmp_path):
    fig = plots.plot_volblocksize_map_interactive(
        pd.DataFrame([dict(layout="mirror", volblocksize_bytes=v, rep=0, iops=float(v)) for v in (4096, 8192)]), "iops")
    payload = json.loads(fig.to_json())
    assert "bdata" in json.dumps(payload)                             # plotly stores arrays as base64
    assert np.allclose(decode_arrays(payload)["data"][0]["z"], [[4096, 8192]])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output(
        "display_data", data={"application/vnd.plotly.v1+json": payload, "text/plain": "fig"})])]
    assert len(notebook_figures(nb)) == 1
    paths = export_notebook_figures(nb, tmp_path, ("svg",), prefix="vbs")
    assert [p.name for p in paths] == ["vbs-01-figure.svg"] and "<svg" in paths[0].read_text()
