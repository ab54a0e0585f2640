"""Explore in JupyterLab without a lab (issue 32): the API's validation, the result object, the widget
explorer driven from the test, explore.ipynb's dry run under papermill, and sweep.ipynb safe to Run All.
The lab's half is tests/test_explore_lab.py."""

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pandas as pd
import pytest
import yaml
from nbclient import NotebookClient

import zbench as zb
from zbench.explore import Explorer, nearest
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "data" / "examples"
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

NOTEBOOKS = REPO_ROOT / "notebooks"
EXAMPLE = REPO_ROOT / "data" / "examples" / "volblocksize"


def one_cell(tmp_path, layout, name):
    """A one-cell store cut from the volblocksize example: `layout` of 6 at 16K, 4k random writes."""
    d = tmp_path / name
    shutil.copytree(EXAMPLE, d, ignore=shutil.ignore_patterns("raw.tar.xz", "*.ipynb", "results.csv", "SHA256SUMS"))
    df = pd.read_parquet(d / "results.parquet")
    df[(df.layout == layout) & (df.volblocksize_bytes == 16384) & (df.workload == "randwrite")].to_parquet(
        d / "results.parquet")
    return d


@pytest.mark.parametrize("bad, key", [
    (dict(layout="raidz9"), "factors.layout"), (dict(volblocksize="12k"), "factors.volblocksize"),
    (dict(workload="randwrit"), "workloads[0].name"), (dict(model="ssd"), "lab.model"),
    (dict(repetitions=0), "repetitions.fixed"), (dict(bs="3k"), "workloads[0].overrides")])
def test_api_bad_input_gets_the_spec_validators_one_line_before_any_lab(monkeypatch, bad, key):
    monkeypatch.setattr(zb, "lab", lambda *a, **k: pytest.fail("a lab was asked for"))
    monkeypatch.setattr(zb, "_lab", lambda *a, **k: pytest.fail("a lab was asked for"))
    with pytest.raises(zb.InvalidInput) as e:
        zb.measure(**{"layout": "raidz2", "disks": 6, **bad})
    msg = str(e.value)
    assert "\n" not in msg and key in msg
    spec = zb.Config(**{"layout": "raidz2", "disks": 6, **bad}).spec()      # the same spec, as a file would say it
    with pytest.raises(ConfigError) as direct:
        parse_spec(yaml.safe_dump(spec))
    assert str(direct.value) == msg
    assert e.value._render_traceback_() == [f"InvalidInput: {msg}"]       # one line in a notebook too


def test_an_unbuildable_layout_and_unknown_arguments_are_refused_in_one_line():
    with pytest.raises(zb.InvalidInput, match=r"raidz2 needs width >= 3"):
        zb.estimate("raidz2", disks=2)
    with pytest.raises(zb.InvalidInput, match=r"unknown argument\(s\) colour"):
        zb.estimate("raidz2", colour="red")


def test_estimate_is_the_plans_dry_run():
    text = zb.estimate("raidz2", disks=6, volblocksize="16k", workload="randwrite", bs="4k", repetitions=2)
    # three pools by default (issue 45), each a cell of its own replicate, two runs on each
    assert "cells: 3 (0 skipped)" in text and "runs: 6 planned" in text and "estimated wall time" in text
    assert "units: 3 pools per configuration" in text
    one = zb.estimate("raidz2", disks=6, volblocksize="16k", workload="randwrite", bs="4k", pools=1)
    assert "cells: 1 (0 skipped)" in one and "units: one pool per configuration" in one


def test_a_result_prints_draws_and_compares(tmp_path):
    a, b = zb.load_result(one_cell(tmp_path, "raidz2", "a")), zb.load_result(one_cell(tmp_path, "raidz1", "b"))
    text = repr(a)
    assert text.splitlines()[0].startswith("1x raidz2(6), 16K volblocksize, randwrite 4K")
    assert "IOPS: 74.3 (95% CI 60.0–92.0, n = 3 pools)" in text
    assert "truth checks: 5 runs, 0 excluded, 1 described" in text and "not_steady 1/5" in text
    page = a._repr_html_()
    assert "<details><summary>truth checks" in page and "flag_not_steady" in page      # folded, reasons inside
    c = a.compare(b)
    assert 0.5 < c.ratio < 2 and c.low < c.ratio < c.high and "not distinguishable" in c.sentence()
    m = a.model().table.set_index("quantity")
    assert m.loc["logical / raw bytes allocated", "model"] == pytest.approx(0.667, abs=1e-3)
    assert m.loc["bytes charged per logical byte", "measured / model"] == pytest.approx(1.0, abs=0.05)
    fig = a.plot(b)
    assert len(fig.data) == 4 and fig.layout.yaxis.title.text == "IOPS"


def test_the_explorer_refuses_bad_widget_values_with_the_same_line():
    ex = Explorer()
    assert ex.error is None and not ex.button.disabled and "Dry run" in ex.estimate.value
    ex.disks.value = 2                                    # what a user's slider does
    with pytest.raises(zb.InvalidInput) as e:
        zb.estimate("raidz2", disks=2)
    assert ex.error == str(e.value) and ex.button.disabled and "raidz2 needs width" in ex.estimate.value
    with pytest.raises(zb.InvalidInput, match=r"factors.volblocksize\[0\]: '12k' is not a power of two"):
        ex.set(volblocksize="12k")
    with pytest.raises(zb.InvalidInput, match="the explorer offers 1 to 8"):
        ex.set(disks=12)
    ex.model.value = "custom:iops=abc"                    # typed into the combobox
    assert ex.button.disabled and "lab.model" in ex.error
    ex.set(model="hdd", disks=6)
    assert ex.error is None and not ex.button.disabled


def test_the_explorer_shows_the_model_and_the_nearest_examples():
    ex = Explorer().set(layout="raidz2", disks=6, volblocksize="16k", workload="randwrite", bs="4k")
    assert "space: 0.667 logical bytes per raw byte" in ex.prediction.value
    assert "no model for this workload" in ex.prediction.value
    # the disk model first: on hdd the shipped hdd example, a randread, comes before any randwrite on other disks
    near = nearest(ex.examples, ex.config())
    assert set(near["disk model"]) == {"hdd"} and set(near["sweep"]) == {"iodepth-curve"}
    ex.set(model="custom:iops=100,bw=12M")
    near = nearest(ex.examples, ex.config())
    assert list(near.loc[:1, "layout"]) == ["raidz2(6)", "raidz2(6)"]
    assert set(near.loc[:1, "sweep"]) == {"scaling-example", "volblocksize-example"}
    assert (near["n"] == 3).all() and not near["95% CI"].str.contains("nan").any()   # n counts pools
    ex.set(model="hdd", workload="randread")
    assert "random reads: 225 IOPS from 150 IOPS per disk" in ex.prediction.value


def test_the_button_runs_once_and_shows_the_result_beside_the_examples(tmp_path):
    store = one_cell(tmp_path, "raidz2", "whatif-fake")
    calls, lab = [], object()

    def fake_measure(cfg, *, lab, out, progress, log):
        calls.append((cfg, lab))
        log("sweep whatif: 2 planned runs")
        return zb.load_result(store)

    ex = Explorer(out=str(tmp_path), measure=fake_measure, lab=lab).set(repetitions=2, runtime_s=4)
    result = ex.run()                                     # the button's callback
    assert result is ex.result and calls[0][1] is lab and calls[0][0].repetitions == 2
    assert ex.bar.value == ex.bar.max == 2 * 3 and not ex.button.disabled      # 2 runs on each of 3 pools
    assert "<details><summary>truth checks" in ex.shown.value and "Beside the models" in ex.shown.value
    assert "this run" in ex.near.value and "iodepth-curve" in ex.near.value     # the what-if's disk model: hdd
    assert "Done." in ex.status.value


def _outputs_text(nb) -> str:
    return "".join("".join(o.get("text", "")) + json.dumps(o.get("data", {})) for c in nb.cells
                   for o in c.get("outputs", []))


def test_explore_notebook_runs_its_dry_run_under_papermill(tmp_path):
    out = tmp_path / "explore.ipynb"
    res = subprocess.run([sys.executable, "-m", "papermill", str(NOTEBOOKS / "explore.ipynb"), str(out),
                          "-p", "layout", "mirror", "-p", "disks", "4", "-p", "out", str(tmp_path / "sweeps"),
                          "--cwd", str(NOTEBOOKS)], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, ZBENCH_LAB="zbench-no-such-lab"))
    assert res.returncode == 0, res.stderr[-3000:]
    nb = nbformat.read(str(out), as_version=4)
    state = json.dumps(nb.metadata.get("widgets", {}))
    assert "Dry run" in state and "What does mirror of 4 at 16K volblocksize" in state
    assert "Nearest configurations of the shipped examples" in state
    assert not (tmp_path / "sweeps").exists()             # nothing started


def test_explore_notebook_refuses_bad_parameters_in_one_line(tmp_path):
    res = subprocess.run([sys.executable, "-m", "papermill", str(NOTEBOOKS / "explore.ipynb"),
                          str(tmp_path / "o.ipynb"), "-p", "layout", "raidz2", "-p", "disks", "2",
                          "--cwd", str(NOTEBOOKS)], capture_output=True, text=True, timeout=600)
    assert res.returncode != 0
    assert "InvalidInput: invalid layout 1x raidz2(2): raidz2 needs width >= 3" in res.stderr


def test_sweep_notebook_run_all_shows_the_plan_and_stops(tmp_path):
    nb = nbformat.read(str(NOTEBOOKS / "sweep.ipynb"), as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace('out_root: str = "data/sweeps"', f'out_root: str = "{tmp_path}"')
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()   # Run All
    text = _outputs_text(nb)
    assert "Showing the plan only: set measure = True" in text and "sweep 'demo'" in text
    assert "SWEEP_DIR None" in text and list(tmp_path.iterdir()) == []


def test_sweep_notebook_measures_when_papermill_passes_parameters(tmp_path):
    # No lab of that name: reaching the executor (which then refuses it) shows the run was a real one.
    res = subprocess.run([sys.executable, "-m", "papermill", str(NOTEBOOKS / "sweep.ipynb"), str(tmp_path / "o.ipynb"),
                          "-p", "spec", str(REPO_ROOT / "templates/sweeps/demo.yaml"), "-p", "out_root",
                          str(tmp_path / "sweeps"), "-p", "progress", "False", "-p", "live", "False",
                          "--cwd", str(REPO_ROOT)], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, ZBENCH_LAB="zbench-no-such-lab"))
    assert res.returncode != 0
    assert "ZBENCH_LAB='zbench-no-such-lab' but no lab of that name is running" in res.stderr
    assert "Showing the plan only" not in _outputs_text(nbformat.read(str(tmp_path / "o.ipynb"), as_version=4))


def test_measure_runs_the_sweep_executor_on_the_labs_node(tmp_path, monkeypatch):
    import contextlib
    from zbench_lib.sweeps.running import executor
    seen = {}

    class FakeLab(zb.LabHandle):
        @contextlib.contextmanager
        def node(self):
            yield "the lab's node"

    def fake_run_sweep(spec_path, out_root, *, sweep_id, progress, log, host):
        seen.update(spec=yaml.safe_load(open(spec_path)), host=host, progress=progress)
        return shutil.copytree(one_cell(tmp_path, "raidz2", "cut"), out_root / sweep_id)

    monkeypatch.setattr(executor, "run_sweep", fake_run_sweep)
    lab = FakeLab("pytest", 8, 1024 ** 3, "custom:iops=400,bw=100M")
    r = zb.measure("raidz2", disks=6, volblocksize="16k", workload="randwrite", bs="4k", repetitions=2,
                   lab=lab, out=tmp_path / "sweeps", progress=False)
    assert seen["host"] == "the lab's node" and seen["progress"] is False
    spec = seen["spec"]
    assert spec["lab"] == {"disks": 8, "disk_size": "1024M", "model": "hdd", "extra_disks": 0}   # the lab's disks
    assert spec["factors"]["model"] == ["hdd"] and spec["repetitions"]["fixed"] == 2  # the model set per pool
    assert r.path.parent == tmp_path / "sweeps" and r.path.name.startswith("whatif-raidz2-6-16k-randwrite-")
    assert r.config["layout"] == "raidz2"
    with pytest.raises(zb.InvalidInput, match="has 8 data disks"):
        zb.measure("stripe", disks=10, lab=lab, out=tmp_path / "sweeps")


def test_nearest_says_when_a_configuration_has_no_interval():
    rows = pd.DataFrame({"sweep_id": ["s"] * 3, "template": ["randread"] * 3, "layout": ["mirror"] * 3,
                         "width": [2] * 3, "vdevs": [1] * 3, "volblocksize_bytes": [16384] * 3,
                         "bs_bytes": [4096] * 3, "iodepth": [8] * 3, "disk_model": ["hdd"] * 3,
                         "pool_replicate": [1, 2, 2], "direction": ["read"] * 3, "iops": [100.0, 110.0, 112.0]})
    one = nearest(rows[rows["pool_replicate"] == 1], zb.Config(layout="mirror", disks=2, model="hdd"))
    assert one.loc[0, "95% CI"] == "n=1, no interval" and one.loc[0, "n"] == 1


def test_load_result_refuses_a_study_without_a_configuration():
    with pytest.raises(zb.InvalidInput, match=r"holds 18 configurations .*layout: mirror, raidz1, raidz2"):
        zb.load_result(EXAMPLES / "volblocksize")
    r = zb.load_result(EXAMPLES / "volblocksize", where={"layout": "raidz1", "volblocksize_bytes": 16384,
                                                        "workload": "randread"})
    # the three pools' own means of that cell, not a figure pooled over the sweep's eighteen cells
    pools = pd.read_parquet(EXAMPLES / "volblocksize" / "results.parquet").query(
        "layout == 'raidz1' and volblocksize_bytes == 16384 and workload == 'randread' and not flagged")
    mean, _, _, n = r.estimate()
    assert n == 3 and 95 < mean < 125 and abs(mean / pools["iops"].mean() - 1) < 0.01
    with pytest.raises(zb.InvalidInput, match="no run has layout = 'draid1'; it holds mirror, raidz1, raidz2"):
        zb.load_result(EXAMPLES / "volblocksize", where={"layout": "draid1"})
