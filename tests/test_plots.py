"""Plot functions: hand-made tidy tables in, figures with the expected artists out."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from zbench_lib.analysis.figures import plots
from zbench_lib.core.errors import ConfigError
from zbench_lib.analysis.stats.stats import scaling


def _scaling_df():
    rows = []
    for lay, width, per in (("stripe", 1, 100), ("mirror", 2, 180)):
        for d in (1, 2, 4):
            for rep, jitter in enumerate((-2, 0, 2)):
                rows.append(dict(layout=lay, width=width, vdevs=d, data_disks=d, rep=rep,
                                 iops=per * d * (1 - 0.05 * (d - 1)) + jitter))
    return scaling(pd.DataFrame(rows), "iops")


def _errorbars(fig):
    return [c for ax in fig.axes for c in ax.containers if isinstance(c, ErrorbarContainer)]


def _ideal_lines(fig):
    return [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_gid() == "ideal"]


def test_plot_scaling_has_error_bars_ideal_line_and_labels():
    fig = plots.plot_scaling(_scaling_df())
    assert isinstance(fig, Figure)
    assert len(_errorbars(fig)) == 2
    ideal = _ideal_lines(fig)
    assert len(ideal) == 1
    x, y = ideal[0].get_data()
    assert np.allclose(y, x)                                # ideal scaling = D / D0 with D0 = 1
    legend = fig.axes[0].get_legend()
    assert "95% CI" in legend.get_title().get_text()
    assert {t.get_text() for t in legend.get_texts()} == {"stripe", "mirror", "ideal"}
    assert fig.axes[0].get_xlabel() == "data disks"


def test_plot_scaling_per_disk_sd_and_efficiency():
    s = _scaling_df()
    fig = plots.plot_scaling(s, kind="per_disk", error="sd", ylabel="IOPS per data disk")
    assert fig.axes[0].get_ylabel() == "IOPS per data disk"
    assert "SD" in fig.axes[0].get_legend().get_title().get_text()
    ideal = _ideal_lines(fig)
    assert len(ideal) == 2                                  # flat line per layout
    assert sorted(round(ln.get_ydata()[0]) for ln in ideal) == [100, 180]
    eff = plots.plot_scaling(s, kind="efficiency")
    assert np.allclose(_ideal_lines(eff)[0].get_ydata(), 1)
    with pytest.raises(ConfigError):
        plots.plot_scaling(s, kind="scaling", error="sd")
    with pytest.raises(ConfigError):
        plots.plot_scaling(pd.concat([s, s]))


def test_plot_scaling_interactive():
    fig = plots.plot_scaling_interactive(_scaling_df())
    assert isinstance(fig, go.Figure)
    names = [t.name for t in fig.data]
    assert names.count("ideal") == 1 and {"stripe", "mirror"} <= set(names)
    data = [t for t in fig.data if t.name == "stripe"][0]
    assert data.error_y.array is not None and len(data.error_y.array) == 3
    assert "95% CI" in fig.layout.title.text


def _qd_df():
    rows = []
    for lay, base in (("mirror", 1000), ("raidz2", 400)):
        for qd in (1, 4, 16, 64):
            for rep in range(3):
                rows.append(dict(layout=lay, iodepth=qd, rep=rep,
                                 iops=base * np.log2(qd + 1) + rep,
                                 lat_p99_ns=1e5 * qd * (1 + 0.01 * rep)))
    return pd.DataFrame(rows)


def test_plot_iops_vs_p99():
    fig = plots.plot_iops_vs_p99(_qd_df(), latency_target_ms=2.0)
    bars = _errorbars(fig)
    assert len(bars) == 2
    x, y = bars[0].lines[0].get_data()
    assert len(x) == 4 and np.all(np.diff(y) > 0)           # ordered by iodepth
    assert y[0] == pytest.approx(0.101)                     # mean p99 at qd1 in ms
    assert any(t.get_text() == "qd64" for t in fig.axes[0].texts)
    assert any(ln.get_label() == "p99 target" for ln in fig.axes[0].get_lines())
    ifig = plots.plot_iops_vs_p99_interactive(_qd_df())
    assert [t.name for t in ifig.data] == ["mirror", "raidz2"]
    assert list(ifig.data[0].text) == ["qd1", "qd4", "qd16", "qd64"]
    # both axes from zero, so a flat curve looks flat (an autoscaled axis spread 174.8-175.4 IOPS)
    assert ifig.layout.xaxis.rangemode == ifig.layout.yaxis.rangemode == "tozero"
    assert fig.axes[0].get_xlim()[0] == 0 and fig.axes[0].get_ylim()[0] == 0


def test_plots_refuse_to_pool_configurations():
    df = _qd_df()
    with pytest.raises(ConfigError):
        plots.plot_iops_vs_p99(pd.concat([df, df.assign(workload="other")]))


def test_plot_latency_percentiles():
    rows = [dict(config_id=c, rep=r, lat_p50_ns=1e5 * k, lat_p90_ns=2e5 * k, lat_p95_ns=3e5 * k,
                 lat_p99_ns=5e5 * k, lat_p99_9_ns=1e6 * k, lat_p99_99_ns=4e6 * k)
            for c, k in (("a", 1), ("b", 2)) for r in range(3)]
    fig = plots.plot_latency_percentiles(pd.DataFrame(rows))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["p50", "p90", "p95", "p99", "p99.9", "p99.99"]
    assert ax.get_yscale() == "log"
    assert len(_errorbars(fig)) == 2
    assert np.allclose(_errorbars(fig)[1].lines[0].get_ydata(), [0.2, 0.4, 0.6, 1.0, 2.0, 8.0])
    with pytest.raises(ConfigError):
        plots.plot_latency_percentiles(pd.DataFrame({"config_id": ["a"]}))


def _vbs_df():
    return pd.DataFrame([dict(layout=lay, volblocksize_bytes=v, rep=r, iops=1000 * i + v / 1024)
                         for i, lay in enumerate(("raidz2", "mirror")) for v in (4096, 16384, 131072)
                         for r in range(2)])


def test_plot_volblocksize_map():
    fig = plots.plot_volblocksize_map(_vbs_df(), "iops")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4K", "16K", "128K"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["mirror", "raidz2"]   # layout order
    img = ax.get_images()[0].get_array()
    assert img.shape == (2, 3) and img[0, 0] == pytest.approx(1004)
    assert len(ax.texts) == 6
    ifig = plots.plot_volblocksize_map_interactive(_vbs_df(), "iops")
    assert ifig.data[0].type == "heatmap" and list(ifig.data[0].x) == ["4K", "16K", "128K"]


def test_volblocksize_map_takes_pool_replicates_and_refuses_pooled_configurations():
    # rep numbers restart on each re-created pool: rep 1 of pool 1 and rep 1 of pool 2 are two runs
    df = _vbs_df()
    pools = pd.concat([df.assign(pool_replicate=1), df.assign(pool_replicate=2, iops=df["iops"] + 2)])
    fig = plots.plot_volblocksize_map(pools, "iops")
    assert fig.axes[0].get_images()[0].get_array()[0, 0] == pytest.approx(1005)   # mean of both pools
    with pytest.raises(ConfigError, match="several runs share"):             # two workloads in one cell
        plots.plot_volblocksize_map(pd.concat([pools, pools.assign(workload="other")]), "iops")


def _ts_df():
    t = np.arange(10.0)
    rows = [dict(t_s=s, layer=layer, metric=m, value=f * 100 + s)
            for layer, f in (("device", 1.02), ("fio", 1.0), ("pool", 1.01))
            for m in ("write_bytes_s", "write_iops") for s in t]
    return pd.DataFrame(rows)


def test_plot_timeseries():
    fig = plots.plot_timeseries(_ts_df())
    assert len(fig.axes) == 2
    assert [ln.get_label() for ln in fig.axes[0].get_lines()] == ["fio", "pool", "device"]
    assert fig.axes[1].get_xlabel() == "time (s)"
    ifig = plots.plot_timeseries_interactive(_ts_df(), metrics=["write_iops"])
    assert [t.name for t in ifig.data] == ["fio", "pool", "device"]
    with pytest.raises(ConfigError):
        plots.plot_timeseries(pd.DataFrame({"t_s": [0]}))


def test_save_figure_writes_files(tmp_path):
    paths = plots.save_figure(plots.plot_scaling(_scaling_df()), tmp_path / "figs" / "scaling")
    assert sorted(p.suffix for p in paths) == [".png", ".svg"]
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert paths[0].read_bytes()[:4] == b"\x89PNG"
    html = plots.save_figure(plots.plot_scaling_interactive(_scaling_df()), tmp_path / "scaling",
                             include_plotlyjs="cdn")
    assert html[0].suffix == ".html" and "plotly" in html[0].read_text()
    with pytest.raises(ConfigError):
        plots.save_figure(object(), tmp_path / "x")


def test_no_pyplot_state_touched():
    plots.plot_scaling(_scaling_df())
    import matplotlib.pyplot as plt
    assert plt.get_fignums() == []                          # figures are not registered in pyplot
