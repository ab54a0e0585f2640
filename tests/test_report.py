"""End to end: a SYNTHETIC sweep -> papermill -> HTML report -> headless Chromium.

The synthetic table (zbench_lib.analysis.synthetic) only exercises the mechanics; the real
example datasets are checked by nbval elsewhere.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from zbench_lib.core.errors import ZbenchError
from zbench_lib.analysis.report import main_report, render_report
from zbench_lib.analysis.synthetic import write_synthetic_sweep

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom"]


@pytest.fixture(scope="module")
def scaling_report(tmp_path_factory):
    sweep = write_synthetic_sweep(tmp_path_factory.mktemp("r") / "synthetic-scaling", n_rows=600, seed=1)
    return sweep, render_report(sweep)


@pytest.fixture(scope="module")
def vbs_report(tmp_path_factory):
    sweep = write_synthetic_sweep(tmp_path_factory.mktemp("v") / "synthetic-vbs", n_rows=400, seed=2,
                                  shape="volblocksize")
    return sweep, render_report(sweep, notebooks=["analysis-volblocksize"],
                                parameters={"analysis-volblocksize": {"static_figures": True}})


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        res = subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True, text=True)
        exe = shutil.which("chromium")
        if exe is None:
            pytest.skip(f"chromium is not installed and apt-get could not install it: {res.stderr[-300:]}")
    return exe


def _open(chromium, html: Path):
    """DOM after scripts ran, and the console lines Chromium logged."""
    with tempfile.TemporaryDirectory() as profile:
        res = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", html.as_uri()],
                             capture_output=True, text=True, timeout=180)
    console = [line for line in res.stderr.splitlines() if ":CONSOLE" in line]
    return res.stdout, console


def _errors(console):
    return [line for line in console if re.search(r"Uncaught|Error", line)]


def test_report_pages_exist_with_charts_and_no_code(scaling_report):
    sweep, index = scaling_report
    assert index == sweep / "report" / "index.html" and index.exists()
    page = index.read_text()
    for name in ("analysis-scaling", "analysis-compare"):
        assert f'href="{name}.html"' in page
        html = (sweep / "report" / f"{name}.html").read_text()
        assert (sweep / "report" / f"{name}.ipynb").exists()
        assert "plotly-graph-div" in html and "Plotly.newPlot" in html
        assert "SYNTHETIC DATA" in html
        # code hidden: no input cells, no source of the notebook's code
        assert "import pandas" not in html and "A.scaling_table" not in html
        assert not re.search(r'<div class="jp-Cell jp-CodeCell[^"]*"[^>]*>\s*<div class="jp-Cell-inputWrapper', html)
        # offline: no scripts fetched from anywhere
        assert not re.search(r"<script[^>]+src=", html)
    assert "SYNTHETIC DATA" in page
    assert "efficiency" in page                  # conclusions are lifted onto the index page


def test_executed_notebook_kept_with_conclusions(scaling_report):
    sweep, _ = scaling_report
    nb = nbformat.read(str(sweep / "report" / "analysis-scaling.ipynb"), as_version=4)
    assert nb.metadata["papermill"]["parameters"]["sweep_dir"] == str(sweep)
    last = nb.cells[-1]
    text = "".join(o.get("text", "") for o in last.outputs)
    assert "raidz2" in text and "95% CI" in text and "SYNTHETIC" in text


def test_static_figures_and_volblocksize_report(vbs_report):
    sweep, index = vbs_report
    html = (sweep / "report" / "analysis-volblocksize.html").read_text()
    assert "plotly-graph-div" in html and "allocation model" in html
    figs = sorted(p.name for p in (sweep / "figures").iterdir())
    assert any(f.endswith(".png") for f in figs) and any(f.endswith(".svg") for f in figs)


def test_charts_render_in_headless_chromium_without_script_errors(scaling_report, vbs_report, chromium):
    for sweep, _ in (scaling_report, vbs_report):
        for html in sorted((sweep / "report").glob("analysis-*.html")):
            dom, console = _open(chromium, html)
            n_charts = html.read_text().count('class="plotly-graph-div"')
            assert n_charts > 0
            assert dom.count('class="main-svg"') >= n_charts, f"{html.name}: charts did not render"
            assert not _errors(console), f"{html.name}: console errors {_errors(console)}"


def test_chromium_check_catches_script_errors(chromium, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>no_such_function();</script></body></html>")
    _, console = _open(chromium, bad)
    assert _errors(console), "the console capture would not notice a broken page"


def test_failing_notebook_still_renders_and_raises(tmp_path):
    sweep = write_synthetic_sweep(tmp_path / "s", n_rows=300)
    with pytest.raises(ZbenchError, match="metric must be one of"):
        render_report(sweep, notebooks=["analysis-scaling"],
                      parameters={"analysis-scaling": {"metric": "nonsense"}})
    assert (sweep / "report" / "analysis-scaling.html").exists()


def test_main_report_reports_a_missing_sweep(tmp_path, capsys):
    assert main_report([str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
