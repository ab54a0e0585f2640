"""End to end: SYNTHETIC and example sweeps -> papermill -> HTML report -> headless Chromium.

The synthetic table (zbench_lib.analysis.data.synthetic) only exercises the mechanics; the real
example datasets are checked by nbval elsewhere and here drive the timeline option.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from zbench_lib.analysis.report.report import ReportOptions, render_report
from zbench_lib.analysis.report.report_assets import PLOTLY_JS, dir_size
from zbench_lib.analysis.data.synthetic import write_synthetic_sweep
from zbench_lib.cli import main
from zbench_lib.core.errors import ZbenchError

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"]
BUNDLE = re.compile(r"\*\s*plotly\.js v\d")
PLOTLY_MIME = "application/vnd.plotly.v1+json"


@pytest.fixture(scope="module")
def scaling_report(tmp_path_factory):
    sweep = write_synthetic_sweep(tmp_path_factory.mktemp("r") / "synthetic-scaling", n_rows=600, seed=1)
    return sweep, render_report(sweep)


@pytest.fixture(scope="module")
def vbs_report(tmp_path_factory):
    sweep = write_synthetic_sweep(tmp_path_factory.mktemp("v") / "synthetic-vbs", n_rows=400, seed=2,
                                  shape="volblocksize")
    return sweep, render_report(sweep, options=ReportOptions(
        notebooks=["volblocksize"], figures=("png", "svg"), single_file=True,
        parameters={"analysis-volblocksize": {"static_figures": True}}))


@pytest.fixture(scope="module")
def example_report(tmp_path_factory):
    """The real scaling example (raw archive included), with a chosen timeline run."""
    sweep = tmp_path_factory.mktemp("e") / "scaling"
    shutil.copytree(ROOT / "data" / "examples" / "scaling", sweep)
    import pandas as pd
    df = pd.read_parquet(sweep / "results.parquet")
    run = df[(df["layout"] == "raidz2") & ~df["flagged"]]["run_id"].iloc[0]
    return sweep, run, render_report(sweep, options=ReportOptions(notebooks=["scaling"], timeline=run))


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        res = subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True, text=True)
        exe = shutil.which("chromium")
        if exe is None:
            pytest.skip(f"chromium is not installed and apt-get could not install it: {res.stderr[-300:]}")
    return exe


def _open(chromium, html: Path, screenshot: Path | None = None):
    """DOM after scripts ran, and the console lines Chromium logged (and a screenshot if asked)."""
    with tempfile.TemporaryDirectory() as profile:
        extra = [f"--screenshot={screenshot}", "--window-size=1280,6000", "--hide-scrollbars"] if screenshot \
            else ["--dump-dom"]
        res = subprocess.run([chromium, *CHROMIUM_FLAGS, *extra, f"--user-data-dir={profile}", html.as_uri()],
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
        # offline: the only script loaded is the report's own plotly.js, beside the page
        assert re.findall(r"<script[^>]+src=\"([^\"]+)\"", html) == [PLOTLY_JS]
    assert "SYNTHETIC DATA" in page
    assert "efficiency" in page                  # conclusions are lifted onto the index page


def test_one_plotly_js_per_report_and_a_small_directory(scaling_report):
    sweep, _ = scaling_report
    out = sweep / "report"
    bundles = [p.name for p in out.iterdir() if p.is_file() and BUNDLE.search(p.read_text(errors="ignore"))]
    assert bundles == [PLOTLY_JS]
    size = dir_size(out)
    assert size < 8 * 2 ** 20, f"report directory is {size / 2 ** 20:.1f} MiB"
    nb = nbformat.read(str(out / "analysis-scaling.ipynb"), 4)
    html_outputs = [o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", [])
                    if PLOTLY_MIME in o.get("data", {})]
    assert html_outputs and not any(BUNDLE.search(h) for h in html_outputs)


def test_index_page_reads_like_a_write_up(scaling_report):
    sweep, index = scaling_report
    page = index.read_text()
    env = page.split('<details id="environment">', 1)[1].split("<details>", 1)[0]
    assert "Pool layouts" in env and "raidz2 1x4" in env and env.count("<tr>") <= 14
    assert "<details><summary>Full environment record</summary>" in page
    summary = page.split('<details id="summary">', 1)[1].split("<h2>", 1)[0]
    assert "raidz1 1x6" in summary and "IOPS 95% CI" in summary and "p99 (ms)" in summary
    assert not re.search(r"\d\.\d+e[+-]\d", summary)                  # no scientific notation
    for name in ("summary.md", "summary.csv", "summary.tex"):
        assert f'href="{name}"' in page and (sweep / "report" / name).exists()
    assert 'id="zbench-headline"' in page and "drives in the pool" in page
    assert '<ul class="conclusions">' in page and "<pre" not in page


def test_notebook_pages_list_conclusions_and_caption_figures(scaling_report):
    sweep, _ = scaling_report
    html = (sweep / "report" / "analysis-scaling.html").read_text()
    assert '<ul class="zbench-conclusions">' in html
    conclusions = html.split('<ul class="zbench-conclusions">', 1)[1].split("</ul>", 1)[0]
    assert conclusions.count("<li>") >= 4 and "efficiency" in conclusions
    nb = nbformat.read(str(sweep / "report" / "analysis-scaling.ipynb"), 4)
    figs = [o["data"][PLOTLY_MIME] for c in nb.cells for o in c.get("outputs", []) if PLOTLY_MIME in o.get("data", {})]
    captions = [a["text"] for f in figs for a in f["layout"].get("annotations", [])
                if a.get("name") == "zbench-caption"]
    assert len(captions) == len(figs)
    assert all("SYNTHETIC-scaling" in c and "iodepth 16" in c and "numjobs" in c and "60 s runs" in c
               for c in captions)
    assert 'class="zbench-table"' in html                              # readable tables, index hidden
    assert not re.search(r"<td[^>]*>\s*-?\d\.\d+e[+-]\d+\s*</td>", html)


def test_static_figures_for_every_figure_and_a_single_file(vbs_report):
    sweep, index = vbs_report
    out = sweep / "report"
    html = (out / "analysis-volblocksize.html").read_text()
    assert "plotly-graph-div" in html and "allocation model" in html
    nb = nbformat.read(str(out / "analysis-volblocksize.ipynb"), 4)
    n_figs = sum(PLOTLY_MIME in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    pngs, svgs = sorted((out / "figures").glob("*.png")), sorted((out / "figures").glob("*.svg"))
    index_figs = [p for p in pngs if p.name.startswith("index-")]        # the headline of the block-size study
    assert [p.name for p in index_figs] == ["index-01-block-headline.png"]
    assert len(pngs) == len(svgs) == n_figs + 1 and n_figs > 4
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert all(f'href="figures/{p.name}"' in index.read_text() for p in pngs)
    legacy = sorted(p.name for p in (sweep / "figures").iterdir())   # the notebook's own static_figures
    assert any(f.endswith(".png") for f in legacy) and any(f.endswith(".svg") for f in legacy)
    single = (out / "report.html").read_text()
    assert len(BUNDLE.findall(single)) == 1 and not re.search(r"<script[^>]+src=", single)
    assert 'id="analysis-volblocksize"' in single and 'href="#analysis-volblocksize"' in single


def test_timeline_run_and_example_report(example_report):
    sweep, run, index = example_report
    nb = nbformat.read(str(sweep / "report" / "analysis-scaling.ipynb"), 4)
    assert nb.metadata["papermill"]["parameters"]["timeline_run"] == run
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    line = next(ln for ln in text.splitlines() if ln.startswith(f"run {run}:"))
    assert "raidz2" in line
    page = index.read_text()
    assert "OpenZFS</th><td>2.3.2" in page and "TCG emulation" in page
    claims = page.split("<h2>The classic claims, tested here</h2>", 1)[1].split("<h2>", 1)[0]
    assert '<span class="verdict v-partly-holds">partly holds</span>' in claims
    assert "raidz1 (1 vdev) from 2 to 8" in claims


def test_compare_with_another_sweep(tmp_path):
    a = write_synthetic_sweep(tmp_path / "a", n_rows=300, seed=1)
    b = write_synthetic_sweep(tmp_path / "b", n_rows=300, seed=3)
    import pandas as pd
    df = pd.read_parquet(b / "results.parquet")
    df.assign(sweep_id="SYNTHETIC-scaling-b").to_parquet(b / "results.parquet", index=False)
    index = render_report(a, options=ReportOptions(notebooks=["scaling"], compare=str(b)))
    nb = nbformat.read(str(a / "report" / "analysis-compare.ipynb"), 4)
    assert nb.metadata["papermill"]["parameters"]["other_sweep_dir"] == str(b.resolve())
    assert "compared with" in index.read_text()


def test_charts_render_in_headless_chromium_without_script_errors(scaling_report, vbs_report, example_report,
                                                                  chromium, tmp_path):
    pages = [p for sweep in (scaling_report[0], vbs_report[0], example_report[0])
             for p in sorted((sweep / "report").glob("*.html"))]
    assert len(pages) >= 8
    for html in pages:
        dom, console = _open(chromium, html)
        n_charts = html.read_text().count('class="plotly-graph-div"')
        assert dom.count('class="main-svg"') >= n_charts, f"{html.name}: charts did not render"
        assert not _errors(console), f"{html.name}: console errors {_errors(console)}"
        shot = tmp_path / f"{html.parent.parent.name}-{html.stem}.png"
        _open(chromium, html, shot)
        assert shot.exists() and shot.stat().st_size > 20_000, f"{html.name}: no screenshot"


def test_chromium_check_catches_script_errors(chromium, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>no_such_function();</script></body></html>")
    _, console = _open(chromium, bad)
    assert _errors(console), "the console capture would not notice a broken page"


def test_failing_notebook_still_renders_and_raises_one_line(tmp_path, monkeypatch):
    # A bad value is refused before any work now (tests/test_cli.py); skipping that check lets the
    # notebook fail in its kernel, as a notebook fails on data it cannot analyse.
    import zbench_lib.analysis.report.report as report_module
    monkeypatch.setattr(report_module, "check_notebook_values", lambda name, params: None)
    sweep = write_synthetic_sweep(tmp_path / "s", n_rows=300)
    with pytest.raises(ZbenchError, match="metric must be one of") as info:
        render_report(sweep, notebooks=["analysis-scaling"],
                      parameters={"analysis-scaling": {"metric": "nonsense"}})
    assert "\n" not in str(info.value) and "report-errors.log" in str(info.value)
    assert (sweep / "report" / "analysis-scaling.html").exists()
    assert "ConfigError" in (sweep / "report" / "report-errors.log").read_text()


def test_report_of_a_missing_sweep(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and len(err.strip().splitlines()) == 1


# Drives the index's summary table as a reader would, once the page's own scripts ran: sorts by a column,
# reverses, sorts sizes, filters; the outcome is written into the page for --dump-dom to read back.
_DRIVE_TABLE = """<script>
(function () {
  var box = document.querySelector("#summary [data-table-tools]");
  function column(id) {
    return Array.prototype.map.call(box.querySelectorAll("tbody tr"), function (tr) {
      return tr.hidden ? null : tr.querySelector('td[headers~="' + id + '"]').textContent.trim();
    }).filter(function (v) { return v !== null; });
  }
  var out = {tools_shown: !box.querySelector(".table-tools").hidden};
  var iops = box.querySelector('th[id="iops"]');
  iops.click(); out.iops_up = column("iops"); out.sort_state = iops.getAttribute("aria-sort");
  iops.click(); out.iops_down = column("iops");
  box.querySelector('th[id="volblocksize_bytes"]').click(); out.sizes = column("volblocksize_bytes");
  var input = box.querySelector("input[type=search]");
  input.value = "RAIDZ2 randwrite"; input.dispatchEvent(new Event("input"));
  out.filtered = column("configuration").map(function (c, i) { return c + " " + column("workload")[i]; });
  out.count = box.querySelector(".count").textContent;
  input.value = ""; input.dispatchEvent(new Event("input")); out.all = column("configuration").length;
  var pre = document.createElement("pre"); pre.id = "result"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def test_summary_table_sorts_and_filters_in_chromium(chromium, tmp_path):
    """Issue 31: the index's summary table folded, sortable and filterable, with nothing fetched. Numbers sort
    as numbers (1,234 after 585), block sizes by bytes (4K, 16K, 128K, not as text), a second click reverses,
    and the filter keeps the rows holding every word typed, in any case."""
    import html as html_lib
    import json

    from zbench_lib.analysis import load_sweep
    from zbench_lib.analysis.report.pub_tables import display_table, export_table, summary_table
    from zbench_lib.analysis.report.report import render_index
    sweep = load_sweep(ROOT / "data" / "examples" / "volblocksize")
    table = summary_table(sweep.results, hist=sweep.histograms)
    page = render_index(sweep_id="volblocksize-example", question="q", entries=[], environment_lines=[],
                        environment=[], summary_html=export_table(table, "html", title="Summary per configuration"))
    index = tmp_path / "index.html"
    index.write_text(page.replace("</body>", _DRIVE_TABLE + "</body>"))
    dom, console = _open(chromium, index)
    assert not _errors(console), console
    out = json.loads(html_lib.unescape(re.search(r'<pre id="result">([^<]*)</pre>', dom).group(1)))
    text = display_table(table)["iops"].tolist()                  # what the cells show; ties keep the table's order
    value = [float(t.replace(",", "")) for t in text]
    assert out["tools_shown"] and out["sort_state"] == "ascending"
    assert out["iops_up"] == [text[i] for i in sorted(range(len(text)), key=lambda i: (value[i], i))]
    assert out["iops_down"] == [text[i] for i in sorted(range(len(text)), key=lambda i: (-value[i], i))]
    assert float(out["iops_up"][-1].replace(",", "")) > 1000             # "5,781" after "585": numbers, not text
    sizes = out["sizes"]
    assert sizes == sorted(sizes, key=lambda s: int(s[:-1]) * {"K": 1, "M": 1024}[s[-1]]) and sizes[0] == "4K"
    assert out["filtered"] == ["raidz2 1x6 randwrite"] * 3
    assert out["count"] == f"3 of {len(table)} rows" and out["all"] == len(table)
