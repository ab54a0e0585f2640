"""The report answers its question on the first screen (issue 31), checked by the page's structure:
the question, then the answer sentences, then the headline figure, before the claims, the environment
(folded), the summary table (folded), the methods and the appendix."""

import re

import pytest

from zbench_lib.analysis.report.methods_page import methods_links, write_methods


def _render(**context):
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from zbench_lib.analysis.report.report import TEMPLATE_DIR
    env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), autoescape=select_autoescape(["html"]))
    env.filters["methods_links"] = methods_links
    base = dict(sweep_id="s", environment_lines=[("OpenZFS", "2.3.2")], environment=[], entries=[],
                question="How does it scale?", answers=[{"subject": "randread (IOPS)", "text": "holds (methods §10)."}],
                answers_note="note", headline_html='<div id="zbench-headline"></div>', summary_html="<table></table>",
                classic_claims=[{"verdict": "holds", "claim": "c", "evidence": "e", "reason": "", "caveat": ""}],
                caveat="Lab measurements on emulated disks.", stamp="zbench 0.1.0, commit abc")
    base.update(context)
    return env.get_template("index.html.j2").render(**base)


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
    assert h["kind"] == {"scaling": "scaling", "volblocksize": "block", "iodepth-curve": "factor"}[example]
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
