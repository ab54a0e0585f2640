"""The summary table for a write-up and its Markdown, CSV and LaTeX exports."""

import io
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib import analysis as A
from zbench_lib.analysis.report.pub_tables import (LATEX_PREAMBLE, config_label, display_table, export_table,
                                                   paper_table, summary_table, write_tables)
from zbench_lib.core.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


@pytest.fixture(scope="module")
def vbs():
    return A.load_sweep(EXAMPLES / "volblocksize")


@pytest.fixture(scope="module")
def table(vbs):
    return summary_table(vbs.results)


def test_summary_rows_are_configurations_as_people_write_them(vbs, table):
    assert config_label("raidz1", 1, 6) == "raidz1 1x6"
    assert set(table["configuration"]) == {"mirror 3x2", "raidz1 1x6", "raidz2 1x6"}
    cells = vbs.results[["layout", "volblocksize_bytes", "workload", "direction"]].drop_duplicates()
    assert len(table) == len(cells)                                    # every planned cell keeps its row
    row = table[(table["configuration"] == "raidz2 1x6") & (table["volblocksize_bytes"] == 16384)
                & (table["workload"] == "randread")].iloc[0]
    runs = A.select_admissible(vbs.results)
    runs = runs[(runs["layout"] == "raidz2") & (runs["volblocksize_bytes"] == 16384) & (runs["workload"] == "randread")]
    assert row["n"] == len(runs) and row["iops"] == pytest.approx(runs["iops"].mean())
    assert row["mib_s"] == pytest.approx(runs["bw_bytes_s"].mean() / 2 ** 20)
    # a typical pool's p99 (no bins in this example: each pool's one run's own fio p99), their geometric mean
    assert row["p99_ms"] == pytest.approx(sps.gmean(runs["lat_p99_ns"]) / 1e6) and row["p99_n"] == len(runs)
    assert "a typical pool's p99 and p99.9" in row["tail_estimand"]
    assert row["drives"] == 6 and row["data_disks"] == 4
    assert row["iops_ci95_low"] < row["iops"] < row["iops_ci95_high"]
    # Every first attempt of one cell invalidated by hand (the example has no such cell since
    # not_steady describes a run; before, mirror 16K randwrite lost its 6 runs to it): still listed
    res = vbs.results.copy()
    gone = (res["layout"] == "mirror") & (res["volblocksize_bytes"] == 16384) & (res["workload"] == "randwrite")
    res.loc[gone, "flag_host_contention"] = True
    lost = summary_table(res).query("n == 0")
    assert lost[["configuration", "volblocksize_bytes", "workload"]].values.tolist() == [
        ["mirror 3x2", 16384, "randwrite"]]
    first = gone & ~res["replacement"]                                  # one run per pool: 3 first attempts
    assert lost["excluded"].tolist() == [first.sum()] == [3] and lost["iops"].isna().all()
    assert (table["iops_ci95_low"].dropna() >= 0).all()
    assert summary_table(res, include_flagged=True)["excluded"].eq(0).all()


def test_display_cells_have_units_and_no_scientific_notation(table):
    d = display_table(table)
    assert not d.apply(lambda c: c.astype(str).str.contains(r"\de[+-]\d")).any().any()
    assert set(d["volblocksize_bytes"]) == {"4K", "16K", "128K"}
    assert (d.loc[table["n"] == 0, "iops"] == "—").all()
    assert (d.loc[table["n"] == 1, "iops_ci"] == "n=1, no CI").all()
    assert d["iops_ci"].str.contains("–").any()


def test_markdown_export(table):
    md = export_table(table, "md", title="T", source_note="Sweep x")
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert len(lines) == len(table) + 2
    assert all(ln.count("|") == lines[0].count("|") for ln in lines)
    assert lines[0].split("|")[1].strip() == "Configuration" and "p99 (ms)" in lines[0]
    assert re.fullmatch(r"\|[-:|]+\|", lines[1]) and lines[1].count(":") >= 5     # numbers right-aligned
    assert "Sweep x" in md and md.startswith("**T**")


def test_csv_export_is_numbers_with_units_in_the_names(table):
    back = pd.read_csv(io.StringIO(export_table(table, "csv")))
    assert list(back.columns[:2]) == ["configuration", "layout"]
    assert {"iops", "iops_ci95_low", "iops_ci95_high", "mib_s", "p99_ms", "n", "excluded"} <= set(back.columns)
    assert len(back) == len(table)
    assert back["iops"].dropna().tolist() == pytest.approx(table["iops"].dropna().tolist(), rel=1e-5)


def test_latex_export_is_a_portrait_float_of_ten_columns(table):
    """Issue 52: a longtable stops a two-column document, and the 18-row table took a landscape page. It is now a
    `table*` around a `tabular` of at most 10 columns (the throughput in each workload's own metric with its
    interval; drives, data disks and the counts beside n said in the caption), the source note in the caption."""
    tex = export_table(table, "latex", title="Summary", source_note="Sweep x")
    begins, ends = re.findall(r"\\begin\{(\w+\*?)\}", tex), re.findall(r"\\end\{(\w+\*?)\}", tex)
    assert sorted(begins) == sorted(ends)
    assert "longtable" not in begins and begins.count("table*") == 1 and "sidewaystable*" not in begins
    spec = re.search(r"\\begin\{tabular\}\{@\{\}([lrc]+)@\{\}\}", tex)
    ncols = len(spec.group(1))
    assert ncols == paper_table(table).shape[1] == 10
    rows = _latex_rows(tex)
    assert len(rows) == len(table)
    assert all(r.count(" & ") == ncols - 1 for r in rows)
    assert tex.count("{") - tex.count("\\{") == tex.count("}") - tex.count("\\}")
    assert "95\\% CI" in tex                                           # special characters escaped
    assert all(("% " + line) in tex for line in LATEX_PREAMBLE.splitlines())     # the preamble it needs, said
    caption = re.search(r"\\caption\[\{Summary\}\]\{(.*)\}$", tex, re.M).group(1)
    assert caption.startswith("Summary. Sweep x") and "mirror 3x2 6/3" in caption and "Excluded runs 0" in caption
    assert rows[0].startswith("mirror 3x2 & 4K & randread & 585 IOPS & 575--596 & ")


def test_a_table_longer_than_a_page_goes_on_in_floats_of_one_number():
    from zbench_lib.analysis.data.sweep_data import load_sweep
    table = summary_table(load_sweep("data/examples/scaling").results)
    tex = export_table(table, "latex", title="Summary")
    floats = tex.count("\\begin{table*}")
    assert len(table) == 100 and floats >= 2 and len(_latex_rows(tex)) == len(table)
    assert tex.count("\\addtocounter{table}{-1}\\caption[{Summary (continued)}]") == floats - 1


def _latex_rows(tex: str) -> list[str]:
    bodies = [f.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0] for f in tex.split("\\toprule")[1:]]
    return [ln for body in bodies for ln in body.splitlines() if ln.strip().endswith("\\\\")]


OVERFULL = re.compile(r"^(Overfull \\[hv]box .*|LaTeX Warning: Float too large.*)$", re.M)


def _compile(tmp_path, body: str, pdflatex: str, options: str = "") -> str:
    """The log of pdflatex on a bare article with summary-preamble.tex and `body` (it must compile)."""
    (tmp_path / "doc.tex").write_text(f"\\documentclass{options}{{article}}\n\\input{{summary-preamble.tex}}\n"
                                      f"\\begin{{document}}\n{body}\n\\end{{document}}\n")
    res = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:]
    return (tmp_path / "doc.log").read_text(errors="replace")


@pytest.mark.parametrize("options", ["", "[twocolumn]"])
@pytest.mark.parametrize("example", ["scaling", "volblocksize", "iodepth-curve"])
def test_latex_compiles_in_a_bare_article_within_the_page(example, options, tmp_path, pdflatex):
    """Issue 31: the export failed in a bare document (booktabs, caption undocumented) and ran 474-604 pt
    off the page; each example's table compiles with the written preamble and no overfull box. Issue 52: the
    longtable stopped `\\documentclass[twocolumn]{article}` ("longtable not in 1-column mode"), the shape of
    USENIX, ACM and IEEE storage papers; it compiles there too, no float too large for its page. `make test`
    installs pdflatex and the preamble's packages first (setup_host.LATEX_TOOLS), and there this never skips."""
    from zbench_lib.analysis.data.sweep_data import load_sweep
    sweep = load_sweep(f"data/examples/{example}")
    write_tables(summary_table(sweep.results, hist=sweep.histograms), tmp_path, title=f"zbench summary: {example}",
                 source_note="Lab measurements on emulated disks. zbench 0.1.0, commit 0123456789ab.")
    log = _compile(tmp_path, "Text before.\n\\input{summary.tex}\nText after.", pdflatex, options)
    assert not OVERFULL.findall(log), log[log.find("Overfull"):][:500]


def test_a_table_of_many_columns_is_rotated_and_compiles_in_two_columns(vbs, tmp_path, pdflatex):
    """Past 10 columns (a study of compression: its disks' MiB/s and compressratio, two factors) the table is a
    rotated float, `sidewaystable*`, which a two-column document takes too."""
    res = vbs.results.assign(compression=np.where(np.arange(len(vbs.results)) % 2, "lz4", "off"),
                             physical_bw_bytes_s=vbs.results["bw_bytes_s"] / 2, compressratio=2.0)
    table = summary_table(res)
    assert paper_table(table).shape[1] > 10
    write_tables(table, tmp_path, title="wide", source_note="Lab measurements on emulated disks.")
    assert "\\begin{sidewaystable*}" in (tmp_path / "summary.tex").read_text()
    log = _compile(tmp_path, "\\input{summary.tex}", pdflatex, "[twocolumn]")
    assert not OVERFULL.findall(log), log[log.find("Overfull"):][:500]


def test_the_latex_check_sees_an_overfull_box(tmp_path, pdflatex):
    """The check above is no formality: a table wider than the page gives the line it looks for."""
    (tmp_path / "summary-preamble.tex").write_text(LATEX_PREAMBLE)
    wide = "\\begin{tabular}{" + "l" * 12 + "}\n" + " & ".join(["a-rather-long-cell"] * 12) + "\\\\\n\\end{tabular}"
    assert OVERFULL.findall(_compile(tmp_path, wide, pdflatex))


def test_setup_installs_what_the_latex_preamble_needs():
    """Issue 31: `make test` must compile the export, so the set-up installs pdflatex and every package the
    documented preamble loads (the test tools `setup_host --tests` installs), and nothing the tests never use."""
    from zbench_lib.hosts.setup_host import LATEX_TOOLS, TEST_TOOLS
    needed = re.findall(r"\\usepackage\{([^}]+)\}", LATEX_PREAMBLE)
    assert needed == ["booktabs", "rotating", "graphicx"]
    assert {f"{pkg}.sty" for pkg in needed} == {t.rsplit("/", 1)[1] for t in LATEX_TOOLS if t.endswith(".sty")}
    assert "pdflatex" in LATEX_TOOLS and LATEX_TOOLS.items() <= TEST_TOOLS.items()
    assert set(LATEX_TOOLS.values()) == {"texlive-latex-base", "texlive-latex-recommended"}


def test_write_tables_and_bad_format(table, tmp_path):
    paths = write_tables(table, tmp_path)
    assert sorted(p.name for p in paths) == ["summary-columns.csv", "summary-preamble.tex", "summary.csv", "summary.md",
                                            "summary.tex"]
    with pytest.raises(ConfigError, match="md, csv, latex, html"):
        export_table(table, "xlsx")
    html = export_table(table, "html")
    assert "raidz1 1x6" in html and "<table" in html


def test_notebook_tables_are_readable():
    import numpy as np
    from zbench_lib.analysis.report.table_format import readable_html
    df = pd.DataFrame({"n": [3.0, np.nan], "mean": [1.5e-5, 12345.6], "p": [0.0001, 0.5749],
                       "lat_p99_ns": [1.2e6, 3e6], "bw_bytes_s": [3.5 * 2 ** 20, 1e6], "flag_x": [True, None],
                       "volblocksize_bytes": [4096, 131072], "layout": ["raidz2", "<b>"]}, index=[7, 9])
    html = readable_html(df)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    # a p as every page writes it (p_values.p_text): without the units a side, no finer than 0.001
    assert cells[:8] == ["3", "0.0000150", "&lt; 0.001", "1.20", "3.50", "yes", "4K", "raidz2"]
    assert cells[8:] == ["", "12,346", "0.57", "3.00", "0.954", "not judged", "128K", "&lt;b&gt;"]
    assert "lat_p99 (ms)" in html and "bw (MiB/s)" in html
    assert "<th" in html and ">7<" not in html                         # no index column
    long = readable_html(pd.DataFrame({"x": range(100)}), max_rows=10)
    assert "90 more rows not shown" in long


def test_a_check_that_does_not_apply_leaves_a_run_fully_judged():
    runs = pd.DataFrame({"layout": "mirror", "vdevs": 1, "width": 2, "total_disks": 2, "data_disks": 1,
                         "workload": "randread", "direction": "read", "iops": [100.0, 110.0, 105.0],
                         "bw_bytes_s": 4e5, "lat_p99_ns": 1e7, "run_id": ["r1", "r2", "r3"], "flagged": False,
                         "not_judged": ["write_amplification: no writes: does not apply",
                                        "write_amplification: no writes: does not apply; "
                                        "not_steady: no per-second series",
                                        ""]})
    (row,) = summary_table(runs).to_dict("records")
    assert row["n"] == 3 and row["not_judged"] == 1      # only r2 has a check that could have been made


def test_p99_is_a_typical_units_from_its_own_bins_and_says_so():
    # Two runs of 1,000 I/Os on one pool: a's p99 is 1 µs; b has 20 I/Os at 8 µs, so its own p99 is 8 µs.
    # The table's p99 is a typical run's: the geometric mean of the runs' own, sqrt(1000 x 8000) = 2828 ns
    # (scipy.stats.gmean), with its t interval on the logs; all I/Os pooled (the 1,980th of 2,000: 1 µs) is
    # another estimand, and the table says which one it gives. Without histograms, the runs' own fio p99
    # give the same here (each run's own is what its bins give), labelled as such.
    runs = pd.DataFrame({"layout": "mirror", "vdevs": 1, "width": 2, "total_disks": 2, "data_disks": 1,
                         "workload": "randread", "direction": "read", "iops": [100.0, 110.0],
                         "bw_bytes_s": 4e5, "lat_p99_ns": [1000.0, 8000.0], "total_ios": 1000,
                         "run_id": ["a", "b"], "attempt": 1, "flagged": False})
    hist = pd.DataFrame({"run_id": ["a", "b", "b"], "attempt": 1, "direction": "read",
                         "bin_ns": [1000, 1000, 8000], "count": [1000, 980, 20]})
    (binned,) = summary_table(runs, hist=hist).to_dict("records")
    (own,) = summary_table(runs).to_dict("records")
    assert binned["p99_ms"] == pytest.approx(sps.gmean([1000, 8000]) / 1e6) == own["p99_ms"]
    assert "a typical run's p99 and p99.9 (one pool), from each unit's merged fio histogram bins" in \
        binned["tail_estimand"] and "no histogram in raw" in own["tail_estimand"]
    assert binned["p99_n"] == 2 and np.isfinite(binned["p99_ci95_low_ms"])




def _runs_of_one_cell(**columns) -> pd.DataFrame:
    """One mirror cell's randread runs with `columns` (lists of one value per run)."""
    k = len(next(iter(columns.values())))
    return pd.DataFrame({"layout": "mirror", "vdevs": 1, "width": 2, "total_disks": 2, "data_disks": 1,
                         "workload": "randread", "direction": "read", "iops": 100.0 + np.arange(k),
                         "bw_bytes_s": 4e5, "lat_p99_ns": 1e7, "run_id": [f"r{i}" for i in range(k)], **columns})


def test_run_counts_beside_n_are_of_n_and_never_exceed_it():
    """Issue 52: 'Runs not fully judged' counted every run of the cell, excluded and replacement ones too, so it
    could exceed n: here 4 beside n = 1. It now counts among n's own units, as `described` does."""
    runs = _runs_of_one_cell(flag_host_contention=[True, True, False, False],
                             replacement=[False, False, False, True],
                             not_judged=["not_steady: no per-second series"] * 4)
    (row,) = summary_table(runs).to_dict("records")
    assert (row["n"], row["excluded"], row["not_judged"]) == (1, 2, 1)
    # two pools of two runs each: n counts pools (methods §6), and so do the counts beside it
    pools = _runs_of_one_cell(pool_id=["p1", "p1", "p2", "p2"], pool_replicate=[1, 1, 2, 2],
                              not_judged=["not_steady: no per-second series"] * 4,
                              flag_not_steady=[True, True, True, False])
    (row,) = summary_table(pools).to_dict("records")
    assert (row["n"], row["described"], row["not_judged"]) == (2, 2, 2)
    lost = summary_table(runs.assign(flag_host_contention=True))         # no admissible run: nothing of n
    assert lost[["n", "excluded", "described", "not_judged"]].values.tolist() == [[0, 3, 0, 0]]


# Issue 52 item 5: exports that paste.
NOTE = ("Sweep vbs-1. Mean over n admissible first attempts; 95% CI of the mean, in the metric each workload is "
        "judged in. Lab measurements on emulated disks (hdd), not real drives. zbench 0.1.0, commit 0123456789ab.")


def test_summary_csv_reads_as_is_and_keeps_its_source_note(table, tmp_path):
    """Issue 52: the note went in a commented first line with commas in it, so `pd.read_csv` with no options read
    a table of 19 rows and 4 columns. The note is now a column (the same in every row), so the caveat goes with
    any row copied, and read_csv gives the table's own rows and columns."""
    write_tables(table, tmp_path, source_note=NOTE)
    back = pd.read_csv(tmp_path / "summary.csv")
    assert len(back) == len(table) and list(back.columns) == [*table.columns, "source_note"]
    assert back["source_note"].eq(NOTE).all()
    assert back["iops"].tolist() == pytest.approx(table["iops"].tolist(), rel=1e-5, nan_ok=True)
    assert list(pd.read_csv(io.StringIO(export_table(table, "csv"))).columns) == list(table.columns)  # no note


def test_a_row_with_no_admissible_run_says_why(vbs, tmp_path):
    """Issue 52: a configuration whose runs were all excluded was a row of '—'. Its interval cell now says what
    became of its runs, the notes under the table which check excluded them, and the CSV both."""
    res = vbs.results.copy()
    gone = (res["layout"] == "mirror") & (res["volblocksize_bytes"] == 16384) & (res["workload"] == "randwrite")
    res.loc[gone, "flag_host_contention"] = True
    table = summary_table(res)
    lost = table["n"] == 0
    why = "3 of 3 runs excluded (host_contention 3), 3 replacement runs left out of the estimate"
    assert table.loc[lost, "no_value_reason"].tolist() == [why]          # the replacements were flagged too
    assert table.loc[~lost, "no_value_reason"].eq("").all()
    assert display_table(table).loc[lost, "iops_ci"].tolist() == ["3 of 3 runs excluded"]
    write_tables(table, tmp_path, source_note=NOTE)
    for name in ("summary.md", "summary.tex"):
        text = (tmp_path / name).read_text().replace("\\_", "_")
        assert f"mirror 3x2, 16K, randwrite, write: {why}" in text, name
    assert why in export_table(table, "html")
    assert pd.read_csv(tmp_path / "summary.csv")["no_value_reason"].fillna("").tolist() == \
        table["no_value_reason"].tolist()


def test_every_column_is_defined_in_every_export(table, tmp_path):
    """Issue 52: 'Runs not fully judged' was defined nowhere. Every displayed column is defined in a legend under
    the Markdown, LaTeX and HTML tables, and every column of summary.csv in summary-columns.csv beside it."""
    paths = write_tables(table, tmp_path, source_note=NOTE)
    assert tmp_path / "summary-columns.csv" in paths
    columns = pd.read_csv(tmp_path / "summary-columns.csv")
    assert columns["name"].tolist() == pd.read_csv(tmp_path / "summary.csv").columns.tolist()
    assert columns["meaning"].notna().all() and not columns["meaning"].str.contains("not documented").any()
    meaning = columns.set_index("name")["meaning"]
    assert "could have been made and was not" in meaning["not_judged"] and "of the n" in meaning["not_judged"]
    assert "counted as pools where pools were replicated" in meaning["n"]
    md = (tmp_path / "summary.md").read_text()
    tex = (tmp_path / "summary.tex").read_text()
    html = export_table(table, "html", source_note=NOTE)
    for text in (md, tex, html):
        assert "Not fully judged (of n): of the n, those with a truth check that could have been made" in text
        assert "Excluded runs: first attempts left out by an invalidating truth check" in text
    shown = display_table(table).columns
    assert all(f"- {label}: " in md for label in map(_label, shown))          # every displayed column, in md


def _label(column: str) -> str:
    from zbench_lib.analysis.report.pub_tables import _header
    return _header(column)
