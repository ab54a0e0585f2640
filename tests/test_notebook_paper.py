"""Analysis notebooks that read like a paper (issue 32, item 3): parameters checked by one library call, the
question and the report's answer first, the truth checks' counts visible and their reasons folded, compact
tables, claims and conclusions as Markdown, and a one-line hint only where the figures stay static pictures.

The stored outputs read here are the ones nbval checks (scripts/store_notebook_outputs.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.report.headline import Focus, study_headline
from zbench_lib.analysis.report.notebook_display import TRUST_HINT, TRUST_HINT_TAG
from zbench_lib.analysis.report.notebook_params import check_parameters
from zbench_lib.analysis.report.notebook_sections import md_escape, truth_checks_html
from zbench_lib.analysis.report.table_format import Compact, compact_html
from zbench_lib.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("analysis-scaling", "analysis-volblocksize", "analysis-compare")


def _nb(name):
    return nbformat.read(str(ROOT / "notebooks" / f"{name}.ipynb"), as_version=4)


def _tagged(nb, tag):
    return next(i for i, c in enumerate(nb.cells) if tag in c.get("metadata", {}).get("tags", []))


def _defaults(name):
    scope: dict = {}
    exec(_nb(name).cells[_tagged(_nb(name), "parameters")].source, scope)       # noqa: S102 (our own notebook)
    return scope


@pytest.mark.parametrize("notebook, name, value, message", [
    ("analysis-scaling", "metric", "nonsense", "analysis-scaling: metric must be one of ('auto', 'iops', "
                                               "'bw_bytes_s'), got 'nonsense'"),
    ("analysis-compare", "metric", "p99", "metric must be one of ('auto', 'iops', 'bw_bytes_s', 'lat_p99_ns')"),
    ("analysis-scaling", "include_flagged", "yes", "include_flagged must be True or False, got 'yes'"),
    ("analysis-volblocksize", "margin", 1.5, "margin must be a fraction between 0 and 1"),
    ("analysis-volblocksize", "margin", True, "margin must be a fraction between 0 and 1"),
    ("analysis-volblocksize", "baseline", "", "baseline must be a non-empty string"),
    ("analysis-scaling", "sweep_dir", "", "sweep_dir must be the path of a sweep directory"),
    ("analysis-scaling", "sweep_dir", "notebooks", "sweep_dir 'notebooks' has no results.parquet or results.csv"),
    ("analysis-compare", "other_sweep_dir", 3, "other_sweep_dir must be a path or an empty string"),
    ("analysis-scaling", "timeline_run", None, "timeline_run must be a run id"),
])
def test_a_bad_parameter_is_one_line_naming_the_notebook(notebook, name, value, message):
    with pytest.raises(ConfigError) as info:
        check_parameters(notebook, {**_defaults(notebook), name: value})
    text = str(info.value)
    assert text.startswith(f"{notebook}: ") and message in text and "\n" not in text


def test_good_parameters_become_a_typed_record():
    p = check_parameters("analysis-compare", _defaults("analysis-compare"))
    assert p.sweep_dir == (ROOT / "data/examples/volblocksize").resolve() and p.other_sweep_dir is None
    assert (p.metric, p.margin, p.factor, p.include_flagged) == ("auto", 0.05, "auto", False)
    other = check_parameters("analysis-compare", {**_defaults("analysis-compare"),
                                                  "other_sweep_dir": "data/examples/scaling"})
    assert other.other_sweep_dir == (ROOT / "data/examples/scaling").resolve()
    with pytest.raises(ConfigError, match="parameter include_flagged is not set"):
        check_parameters("analysis-scaling", {"sweep_dir": "data/examples/scaling"})


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_notebook_and_zbench_report_refuse_a_value_with_the_same_line(name):
    from zbench_lib.analysis.report.report import check_notebook_values
    nb = _nb(name)
    scope = _defaults(name)
    scope["metric"] = "nonsense"
    with pytest.raises(ConfigError) as in_notebook:
        exec(nb.cells[_tagged(nb, "validate")].source, scope)                    # noqa: S102
    with pytest.raises(ConfigError) as in_report:
        check_notebook_values(name, {"metric": "nonsense"})
    assert str(in_notebook.value) == str(in_report.value)


def _focus(name, adm) -> Focus:
    """The study each notebook asks its headline about, on its default example."""
    if name == "analysis-scaling":
        return Focus(kind="scaling")
    factor, base = A.block_choice(adm) if name == "analysis-volblocksize" else A.comparison_choice(adm)
    return Focus(factor=factor, baseline=base)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_first_outputs_are_the_question_the_reports_answer_and_the_headline(name):
    nb = _nb(name)
    first = _tagged(nb, "validate") + 1
    answer = nb.cells[first].outputs
    assert len(answer) == 1 and set(answer[0].data) == {"text/markdown", "text/plain"}
    text = answer[0].data["text/markdown"]
    sweep = A.load_sweep(_defaults(name)["sweep_dir"])
    adm = A.select_admissible(sweep.results)
    head = study_headline(sweep, adm, focus=_focus(name, adm))
    assert text.startswith(f"**Question:** {md_escape(sweep.spec['question'].strip())}")
    assert head["answers"] and all(md_escape(a["text"]) in text and md_escape(a["subject"]) in text
                                   for a in head["answers"])
    hint, figure = nb.cells[first + 1].outputs
    assert hint.metadata["zbench"] == TRUST_HINT_TAG and TRUST_HINT in hint.data["text/html"]
    assert "application/vnd.plotly.v1+json" in figure.data and "image/png" in figure.data


def test_the_truth_checks_show_their_counts_and_fold_their_reasons():
    sweep = A.load_sweep("data/examples/scaling")
    cells = A.cell_status(sweep.results, sweep.plan)
    page = truth_checks_html(sweep.results, cells)
    shown, folded = page.split("<details", 1)
    assert shown == ("<p>328 runs checked: 2 with a check that invalidates them (host_contention 2), excluded from "
                     "the analysis; 30 kept with a check that describes them (not_steady 20, read_amplification 18). "
                     "100 of 100 planned cells judged.</p>")
    assert re.findall(r"<summary>(Each check|The 2 excluded|The planned cells)", page) == [
        "Each check", "The 2 excluded", "The planned cells"]
    assert "does not apply" in folded and "too few" in folded                # the not-judged reasons, on demand
    stored = _nb("analysis-scaling").cells[6].outputs[-1].data
    assert stored["text/html"] == page and stored["text/plain"] == shown[3:-4]


def test_a_compact_table_has_one_line_rows_and_its_long_texts_as_numbered_notes():
    sweep = A.load_sweep("data/examples/volblocksize")
    adm, cells = A.select_admissible(sweep.results), A.cell_status(sweep.results, sweep.plan)
    cmp = A.compare_table(adm, "iops", "volblocksize_bytes", 16384, all_runs=sweep.results, cells=cells)
    from zbench_lib.analysis.report.notebook_sections import comparison_table
    page = compact_html(cmp, comparison_table(cmp))
    tds = re.findall(r"<td([^>]*)>(.*?)</td>", page)
    # 13 cells a row: the ratio with the interval that decided its verdict, then that interval's level
    # (Holm-adjusted within randread's family of 6, methods §3.1), not the unadjusted 95% CI
    assert len(tds) == len(cmp) * 13 and all("white-space:nowrap" in attrs for attrs, _ in tds)
    assert max(len(re.sub(r"<[^>]+>", "", text)) for _, text in tds) <= 24
    assert "<th>ratio (deciding interval)</th>" in page and "<th>CI level</th>" in page
    assert ">0.978 (0.920–1.04)<" in page and ">98.8%<" in page
    notes = re.findall(r"<li>(.*?)</li>", page.split("<details>", 1)[1])
    mann = [n for n in notes if n.startswith("mannwhitney_note: too small")]
    assert len(mann) == 1 and f"({len(cmp)} rows)" in mann[0]                # one note for every row it is on
    status = compact_html(cells, Compact(("layout", "workload"), notes=("status",)))
    assert re.search(r">judged <sup>\d+</sup><", status)                     # the status's lead, then its note


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_claims_and_conclusions_are_markdown_the_report_can_lift(name):
    from zbench_lib.analysis.report.report_assets import conclusions_text, prepare_notebook
    nb = _nb(name)
    last = nb.cells[_tagged(nb, "conclusions")]
    (out,) = last.outputs
    assert out.output_type == "display_data" and out.data["text/markdown"].startswith("- ")
    lines = conclusions_text(last.outputs).splitlines()
    assert len(lines) >= 3 and all(ln.startswith("- ") for ln in lines)
    assert not any(o.get("output_type") == "stream" for c in nb.cells if "claims(" in c.source for o in c.outputs)
    page = prepare_notebook(nb)
    assert '<ul class="zbench-conclusions">' in page.cells[_tagged(nb, "conclusions")].outputs[0]["data"]["text/html"]
    assert not any(o.get("metadata", {}).get("zbench") == TRUST_HINT_TAG for c in page.cells
                   for o in c.get("outputs", []))                          # a report page's figures are interactive


def test_markdown_is_escaped_so_sentences_read_as_written():
    assert md_escape("p < 0.01, not_steady 1 of 3, 2*n [x]") == r"p \< 0.01, not\_steady 1 of 3, 2\*n \[x\]"


def test_joined_sweeps_keep_their_runs_apart():
    a, b = A.load_sweep("data/examples/volblocksize"), A.load_sweep("data/examples/iodepth-curve")
    both = A.join_sweeps([a, b])
    assert len(both.results) == len(a.results) + len(b.results) and both.histograms is None
    from zbench_lib.analysis.report.notebook_display import sweep_id
    assert sweep_id(both) == f"{sweep_id(a)} vs {sweep_id(b)}"
    adm = A.select_admissible(both.results)
    assert A.comparison_choice(adm) == ("sweep_id", sweep_id(a))
    with pytest.raises(ConfigError, match="takes fewer than two values"):
        A.comparison_choice(A.select_admissible(b.results), "layout")
    assert A.block_choice(A.select_admissible(a.results)) == ("volblocksize_bytes", 16384)
    assert A.block_choice(A.select_admissible(a.results), "4k") == ("volblocksize_bytes", 4096)


def _chromium_dom(page: str) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "hint.html"
        html.write_text(page)
        res = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp}/p",
                              "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120)
    return res.stdout


def test_the_hint_is_hidden_where_scripts_run_and_shown_where_none_does(monkeypatch):
    """JupyterLab runs an output's scripts only in a trusted notebook: an untrusted one's HTML is sanitised, its
    scripts dropped (as here). The hint's own script hides its output area, so only a reader of static pictures
    sees it."""
    from zbench_lib.analysis.report import notebook_display
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False, metadata=None: shown.append(obj))
    notebook_display.trust_hint()
    (bundle,) = shown
    area = ('<html><body><div class="jp-OutputArea-child" id="area"><div class="jp-OutputArea-output">{}</div>'
            '</div></body></html>')
    trusted = _chromium_dom(area.format(bundle["text/html"]))
    untrusted = _chromium_dom(area.format(re.sub(r"<script>[\s\S]*?</script>", "", bundle["text/html"])))
    assert re.search(r'id="area" style="display: none;"', trusted)
    assert TRUST_HINT in untrusted and "display: none" not in untrusted


def test_a_wide_figure_is_stored_as_a_picture_the_output_column_holds():
    """JupyterLab's plotly extension shows the PNG at its own size until the pointer enters: a headline of four
    panels (1,453 px) lost its legend off the column's right edge."""
    import io

    from PIL import Image

    from zbench_lib.analysis.figures.figures_static import MAX_PNG_WIDTH, static_png
    sweep = A.load_sweep("data/examples/scaling")
    adm = A.select_admissible(sweep.results)
    fig = study_headline(sweep, adm, focus=Focus(kind="scaling"))["figure"]
    width, height = Image.open(io.BytesIO(static_png(fig))).size
    assert MAX_PNG_WIDTH - 40 <= width <= MAX_PNG_WIDTH and height > 400
