"""The report answers its question on the first screen (issue 31), checked by the page's structure:
the question, then the answer sentences, then the headline figure, before the claims, the environment
(folded), the summary table (folded), the methods and the appendix."""

import re

import numpy as np
import pytest

from zbench_lib.analysis.report.methods_page import write_methods


def _render(**context):
    from zbench_lib.analysis.report.report import render_index
    base = dict(sweep_id="s", environment_lines=[("OpenZFS", "2.3.2")], environment=[], entries=[],
                question="How does it scale?", answers=[{"subject": "randread (IOPS)", "text": "holds (methods §10)."}],
                answers_note="note", headline_html='<div id="zbench-headline"></div>', summary_html="<table></table>",
                classic_claims=[{"verdict": "holds", "claim": "c", "evidence": "e", "reason": "", "caveat": ""}],
                caveat="Lab measurements on emulated disks.", stamp="zbench 0.1.0, commit abc")
    base.update(context)
    return render_index(**base)


def test_the_first_screen_holds_the_question_the_answer_and_the_headline_figure():
    page = _render()
    order = [page.index(s) for s in ('class="question"', 'id="answer"', 'id="zbench-headline"',
                                     "The classic claims", 'id="environment"', 'id="summary"',
                                     'href="methods.html"', "Appendix: the analyses")]
    assert order == sorted(order)
    assert re.search(r'<details id="environment">', page) and re.search(r'<details id="summary">', page)
    assert '<a href="methods.html#s10">methods §10</a>' in page
    assert "Lab measurements on emulated disks." in page and "zbench 0.1.0, commit abc" in page


@pytest.mark.parametrize("example", ["scaling", "volblocksize", "iodepth-curve"])
def test_each_example_has_answer_sentences_and_a_headline_figure(example):
    from zbench_lib import analysis as A
    from zbench_lib.analysis.report.headline import study_headline
    s = A.load_sweep(f"data/examples/{example}")
    adm = A.select_admissible(s.results)
    h = study_headline(s, adm)
    assert h["kind"] == {"scaling": "scaling", "volblocksize": "block", "iodepth-curve": "depth"}[example]
    assert h["answers"] and all(a["text"] for a in h["answers"]) and h["figure"] is not None


def test_methods_ship_as_a_page_with_an_anchor_per_section(tmp_path):
    text = write_methods(tmp_path).read_text()
    assert '<h2 id="s17">§17' in text and '<h3 id="s7.1">§7.1' in text


def test_exports_carry_the_caveat_line_and_zbench_version(tmp_path):
    import pandas as pd

    from zbench_lib import __version__
    from zbench_lib.analysis import load_sweep
    from zbench_lib.analysis.report.pub_tables import summary_table, write_tables
    from zbench_lib.analysis.report.stamp import caveat_line, zbench_stamp
    assert "emulated disks (hdd)" in caveat_line(pd.DataFrame({"disk_model": ["hdd", "hdd"]}))
    assert zbench_stamp().startswith(f"zbench {__version__}")
    sweep = load_sweep("data/examples/iodepth-curve")
    note = f"{caveat_line(sweep.results)} {zbench_stamp()}."
    write_tables(summary_table(sweep.results), tmp_path, source_note=note)
    for name in ("summary.md", "summary.csv", "summary.tex"):
        assert "emulated disks" in (tmp_path / name).read_text() and f"zbench {__version__}" in \
            (tmp_path / name).read_text(), name
    assert "iops_ci95_low" in (tmp_path / "summary.csv").read_text()         # units in the CSV's headers


def example_summary(example: str = "volblocksize"):
    """The example's summary table and its HTML, as the index shows it."""
    from zbench_lib.analysis import load_sweep
    from zbench_lib.analysis.report.pub_tables import export_table, summary_table
    sweep = load_sweep(f"data/examples/{example}")
    table = summary_table(sweep.results, hist=sweep.histograms)
    return table, export_table(table, "html", title="Summary per configuration")


def test_the_summary_table_is_folded_with_its_sort_and_filter_tools_inline():
    """Issue 31: the summary table folded, sortable and filterable, offline. The tools sit inside the folded
    table, hidden until the inline script shows them; the page loads no script but plotly's own file; and
    the table keeps the contract the script sorts by: each leaf heading has an id that every body row's
    cell names in its `headers` (a great_tables release that dropped it would leave the sort dead)."""
    from html.parser import HTMLParser
    table, html = example_summary()
    page = _render(summary_html=html, plotlyjs="plotly.min.js")
    folded = page[page.index('<details id="summary">'):page.index("</details>", page.index('<details id="summary">'))]
    assert "data-table-tools" in folded and re.search(r'<p class="table-tools" hidden>', folded)
    assert re.search(r'<input type="search"', folded)
    assert re.findall(r"<script[^>]*\ssrc=\"([^\"]+)\"", page) == ["plotly.min.js"]
    inline = re.findall(r"<script>([\s\S]*?)</script>", page)
    assert len(inline) == 1 and "[data-table-tools]" in inline[0] and "http" not in inline[0]

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.heads, self.rows, self.part = [], [], None

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            self.part = tag if tag in ("thead", "tbody", "tfoot") else self.part     # tfoot: the notes
            if tag == "th" and self.part == "thead" and a.get("scope") == "col":
                self.heads.append(a["id"])
            elif tag == "tr" and self.part == "tbody":
                self.rows.append([])
            elif tag == "td" and self.part == "tbody":
                self.rows[-1].append(a.get("headers", "").split())

    cells = Cells()
    cells.feed(folded)
    assert len(cells.heads) == 17 and len(cells.rows) == len(table) == 18       # p99 and p99.9 with intervals
    for row in cells.rows:
        assert all(sum(h in names for names in row) == 1 for h in cells.heads), row


def test_a_sync_log_study_gets_bars_with_intervals(tmp_path):
    """Issue 31, item 1: sync/log studies get their own headline, bars with intervals: one bar per configuration
    (sync standard / always × no SLOG / SLOG), each level named once in the legend, every row naming its groups,
    an interval only where the mean rests on two or more units (a bar on one says n=1), drawn by the static
    version too; the answer names each group as a reader does ("no SLOG", not "0")."""
    from zbench_lib import analysis as A
    from zbench_lib.analysis.data.synthetic import write_synthetic_sweep
    from zbench_lib.analysis.figures.figures_static import figure_frame
    from zbench_lib.analysis.report.headline import study_headline
    sweep = A.load_sweep(write_synthetic_sweep(tmp_path / "sync", n_rows=40, seed=3, shape="sync-log"))
    adm = A.select_admissible(sweep.results)
    alone = adm[(adm["sync"] == "always") & (adm["log"] == 1)].index[1:]       # one run left in that cell
    adm = adm.drop(alone)
    h = study_headline(sweep, adm)
    assert h["kind"] == "sync-log"
    assert [a["subject"] for a in h["answers"]] == ["no SLOG (IOPS)", "SLOG (IOPS)"]
    assert h["answers"][0]["text"].startswith("against sync standard: always 0.")
    fig = h["figure"]
    assert {t.type for t in fig.data if t.yaxis == "y"} == {"bar"}              # latencies: dots on a log axis
    top = [t for t in fig.data if t.yaxis == "y"]
    assert [t.name for t in fig.data if t.showlegend is not False] == ["sync standard", "sync always"]
    bars = [(x, t.name, n, e) for t in top for x, n, e in zip(t.x, t.customdata, t.error_y.array)]
    assert len(bars) == 4 and len({x for x, *_ in bars}) == 4                   # a bar per configuration
    for x, name, n, err in bars:
        assert (n >= 2) == np.isfinite(err), (name, x, n, err)                  # an interval only where judged
    single = next(t for t in top if t.name == "sync always")
    assert list(single.text) == ["", "n=1"]
    rows = sorted({t.xaxis for t in fig.data})
    assert len(rows) == 3                                                       # IOPS, p99, p99.9
    for axis in rows:
        assert list(fig.layout[axis.replace("x", "xaxis")].ticktext) == ["no SLOG", "SLOG"]
    frame = figure_frame(fig)
    assert frame.loc[frame["trace"] == 0, "ylo"].notna().all()                  # the static redraw's intervals


def notebook_figures(name, params, monkeypatch, stop="conclusions"):
    """The figures an analysis notebook shows, its own cells run here (with `params` over its defaults) up to the
    cell tagged `stop`, and the scope they leave."""
    import nbformat

    from zbench_lib.analysis.report import notebook_display, notebook_sections
    shown = []
    for module in (notebook_display, notebook_sections):
        monkeypatch.setattr(module, "show", lambda fig, *a, **k: shown.append(fig))
    monkeypatch.setattr(notebook_sections, "trust_hint", lambda: None)
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    scope: dict = {}
    for cell in nbformat.read(f"notebooks/{name}.ipynb", as_version=4).cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or stop in tags:
            continue
        exec(cell.source, scope)                                   # noqa: S102 (the repository's own notebook)
        if "parameters" in tags:
            scope.update(params)
    return shown, scope


def test_the_depth_headline_is_the_compare_pages_iops_p99_curve(monkeypatch):
    """Issue 31, items 1 and 7: a depth study's headline is the IOPS-p99 curve with both axes labelled, and the
    compare notebook draws it with the same builder (it drew its own, with ±1 SD where the index gave 95% CIs);
    issue 32, item 3: the notebook opens with it, first figure, and does not draw it a second time."""
    from zbench_lib import analysis as A
    from zbench_lib.analysis.report.headline import study_headline
    s = A.load_sweep("data/examples/iodepth-curve")
    adm = A.select_admissible(s.results)
    head = study_headline(s, adm)["figure"]
    shown, scope = notebook_figures("analysis-compare", {"sweep_dir": "data/examples/iodepth-curve"}, monkeypatch)
    page = shown[0]
    assert scope["head"]["kind"] == "depth" and [f.layout.title.text for f in shown].count(head.layout.title.text) == 1
    assert head.layout.yaxis.title.text == "IOPS (mean)" and head.layout.yaxis2.title.text.startswith("p99")
    assert "95% CI" in head.layout.title.text and page.layout.title.text == head.layout.title.text
    for a, b in zip(head.data, page.data, strict=True):
        assert (a.name, list(a.text)) == (b.name, list(b.text))
        for attr in ("x", "y"):
            assert np.allclose(a[attr], b[attr])
            err_a, err_b = a[f"error_{attr}"].array, b[f"error_{attr}"].array
            assert (err_a is None and err_b is None) or np.allclose(err_a, err_b, equal_nan=True)
    assert np.isnan(head.data[0].error_y.array[-1])            # qd64 rests on one run: no interval


def test_a_load_sweeps_detailed_answers_are_folded_under_its_short_lines():
    page = _render(answers=[{"subject": "randwrite, 8K", "text": "p99 18.5 → 952 ms at 25/75% of saturation."}],
                   answers_detail=[{"subject": "randwrite at 25% of saturation (open loop)",
                                    "text": "Latency p99: 8K 18.5 ms (15.3–22.5) (methods §21)."}],
                   detail_note="how to read them", detail_summary="Each load in detail")
    answer = page[page.index('id="answer"'):page.index('id="zbench-headline"')]
    lines, folded = answer.split('<details id="answer-detail">')
    assert "p99 18.5 → 952 ms" in lines and "15.3–22.5" not in lines
    assert "<summary>Each load in detail (open)</summary>" in folded and "8K 18.5 ms (15.3–22.5)" in folded
    assert '<a href="methods.html#s21">methods §21</a>' in folded and "how to read them" in folded
    assert 'id="answer-detail"' not in _render()          # a sweep without the load factor: as before


def test_a_load_sweeps_curves_come_before_the_studys_headline_figure():
    load = '<div id="zbench-load"></div>'
    first = _render(load_html=load, load_first=True)
    assert first.index('id="zbench-load"') < first.index('id="zbench-headline"') and first.count(load) == 1
    after = _render(load_html=load)                          # load held at one level: the study's figure first
    assert after.index('id="zbench-headline"') < after.index('id="zbench-load"') and after.count(load) == 1
