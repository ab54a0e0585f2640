"""One run layer by layer, on the real scaling example (stripe of 6 modelled HDDs)."""

from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.sweeps.store.publish import unpack_raw
from zbench_lib.analysis.figures.timeline import has_run, layer_series, run_files, typical_run

SCALING = Path(__file__).resolve().parents[1] / "data" / "examples" / "scaling"


@pytest.fixture(scope="module")
def results():
    return pd.read_parquet(SCALING / "results.parquet")


def _stripe6_randread(results):
    r = results[(results["layout"] == "stripe") & (results["data_disks"] == 6) & (results["template"] == "randread")]
    assert len(r) >= 3
    return r


def test_typical_run_is_the_median_run_of_the_largest_configuration(results):
    rid = typical_run(results)
    row = results[results["run_id"] == rid].iloc[0]
    assert row["data_disks"] == results["data_disks"].max() == 8
    g = results[results["config_id"] == row["config_id"]]
    assert abs(row["iops"] - g["iops"].median()) == (g["iops"] - g["iops"].median()).abs().min()
    with pytest.raises(ConfigError):
        typical_run(results.iloc[0:0])


def test_random_reads_on_a_stripe_agree_across_layers(results):
    rid = _stripe6_randread(results)["run_id"].iloc[0]
    assert has_run(SCALING, rid) and not has_run(SCALING, "c0000000-r99")
    with run_files(SCALING, rid) as attempt:
        series = layer_series(attempt)
        extracted = attempt
    assert not extracted.exists()                   # the extracted copy is cleaned up
    assert set(series["layer"]) == {"fio", "pool", "device"}
    inside = series[(series["t_s"] >= 1) & (series["t_s"] <= 10)]
    ops = inside[inside["metric"] == "ops_s"].groupby("layer")["value"].median()
    byts = inside[inside["metric"] == "bytes_s"].groupby("layer")["value"].median()
    # 4k random reads of 16k blocks on single-disk vdevs: one pool read and one disk read per
    # fio read, each of a whole 16k block, so the pool and the disks move 4x fio's bytes.
    assert ops["pool"] / ops["fio"] == pytest.approx(1, abs=0.15)
    assert ops["device"] / ops["pool"] == pytest.approx(1, abs=0.15)
    assert byts["device"] / byts["fio"] == pytest.approx(4, rel=0.15)
    # six disks modelled at 100 IOPS each
    assert 450 <= ops["fio"] <= 620


def test_run_files_reads_an_unpacked_tree_too(results, tmp_path):
    rid = _stripe6_randread(results)["run_id"].iloc[0]
    unpack_raw(SCALING, tmp_path)
    with run_files(tmp_path, rid) as attempt:
        assert attempt.parent == tmp_path / "raw" / rid and (attempt / "COMPLETE").exists()
        from_tree = layer_series(attempt)
    with run_files(SCALING, rid) as attempt:
        pd.testing.assert_frame_equal(layer_series(attempt), from_tree)
    with pytest.raises(ConfigError, match="not in"):
        with run_files(SCALING, "c0000000-r99"):
            pass


def test_the_timeline_chart_of_a_real_run_explains_every_colour(results):
    from zbench_lib.analysis.figures import plots
    rid = _stripe6_randread(results)["run_id"].iloc[0]
    with run_files(SCALING, rid) as attempt:
        series = layer_series(attempt)
    fig = plots.plot_timeseries_interactive(series, metrics=["ops_s", "bytes_s"], title=f"run {rid}")
    legend = {t.name: t.line.color for t in fig.data if t.showlegend}
    assert set(legend) == {"fio", "pool", "device"}
    assert all(legend[t.name] == t.line.color for t in fig.data)      # the bytes panel too
    assert [fig.layout.yaxis.title.text, fig.layout.yaxis2.title.text] == ["operations/s", "MiB/s"]
    fio_mib = [t for t in fig.data if t.yaxis == "y2" and t.name == "fio"][0]
    b = series[(series["metric"] == "bytes_s") & (series["layer"] == "fio")].sort_values("t_s")["value"]
    assert list(fio_mib.y) == pytest.approx(list(b / 2 ** 20))
