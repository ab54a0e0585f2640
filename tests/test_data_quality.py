"""The data-quality banner (issue 52 item 2, methods §8.1): how many runs were lost and why, in the checks' own
words, which planned cells have no interval, and the command that measures them again; on the report's first
screen, at the top of each analysis notebook and at the end of `zbench report`, `zbench sweep` and `zbench demo`.
Before it, lost runs were "15 flagged result rows (excluded)" and "host_contention 3" in small grey print."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from zbench_lib.analysis.data.flags import FLAG_MEANINGS
from zbench_lib.analysis.data.sweep_data import load_sweep
from zbench_lib.analysis.data.synthetic import FLAGS, synthetic_results
from zbench_lib.cli import main
from zbench_lib.core.paths import REPO_ROOT

HOST_BUSY = FLAG_MEANINGS["flag_host_contention"]
# The demo's design (3 layouts × 8K/64K × randread/randwrite, 3 runs a cell): runs excluded per cell
LOST = {("stripe", 8192, "randwrite"): 3, ("stripe", 65536, "randwrite"): 3, ("mirror", 8192, "randread"): 2,
        ("raidz1", 65536, "randread"): 3}
NO_INTERVAL = {"stripe 8K randwrite", "stripe 64K randwrite", "mirror 8K randread", "raidz1 64K randread"}


def demo_store(path: Path, lost: dict = LOST, cache_served: bool = True, drop_last_of=None, reps: int = 3) -> Path:
    """A store of the demo's shape, its numbers the synthetic model's (read as a measured sweep: no synthetic
    mark, the demo's spec beside it): host_contention raised on the `lost` runs of each cell, cache_served (if
    asked) on one run of a cell that keeps its interval; `drop_last_of` names a cell whose last planned run is missing
    (plan.json plans `reps` runs a cell)."""
    df = synthetic_results(12 * reps, seed=5, shape="demo").drop(columns=["synthetic"]).assign(sweep_id=path.name)
    df[list(FLAGS)] = False
    df["flag_host_contention"] = False
    for (layout, vbs, wl), n in lost.items():
        hit = df[(df["layout"] == layout) & (df["volblocksize_bytes"] == vbs) & (df["workload"] == wl)].index[:n]
        df.loc[hit, "flag_host_contention"] = True
    if cache_served:
        df.loc[df[(df["layout"] == "raidz1") & (df["volblocksize_bytes"] == 8192)].index[0], "flag_cache_served"] = True
    cells = df.drop_duplicates("config_id")
    if drop_last_of is not None:
        df = df[~((df["config_id"] == drop_last_of) & (df["rep"] == 3))]
    path.mkdir(parents=True)
    df.to_parquet(path / "results.parquet", index=False)
    shutil.copy(REPO_ROOT / "templates" / "sweeps" / "demo.yaml", path / "spec.yaml")
    plan = {"sweep": path.name,
            "cells": [{"cell_id": c.config_id, "workload": c.workload, "template": c.workload,
                       "factors": {"layout": c.layout, "volblocksize_bytes": int(c.volblocksize_bytes)}}
                      for c in cells.itertuples()],
            "runs": [{"run_id": f"{c}-r{r}", "cell_id": c} for c in cells["config_id"] for r in range(1, reps + 1)]}
    (path / "plan.json").write_text(json.dumps(plan))
    return path


def test_lost_runs_give_a_banner_with_the_counts_the_reasons_the_cells_and_the_command(tmp_path):
    """12 of 36 runs excluded, 11 because the host was busy and 1 because a read came from memory, said in the
    checks' own words; the 4 of 12 cells left with fewer than two admissible runs named as a reader names them;
    and the command that measures them again: a new sweep of the spec (a resume of a finished sweep runs
    nothing, methods §8.1). Failed before issue 52: no banner existed."""
    from zbench_lib.analysis.report.data_quality import data_quality, quality_html, quality_markdown, quality_text
    q = data_quality(load_sweep(demo_store(tmp_path / "demo-1")), base=tmp_path)
    assert (q.runs, q.excluded, q.cells, q.missing) == (36, 12, 12, 0)
    assert [(r.flag, r.runs) for r in q.reasons] == [("host_contention", 11), ("cache_served", 1)]
    assert set(q.no_interval) == NO_INTERVAL
    assert [r.command for r in q.rerun] == ["zbench sweep demo-1/spec.yaml"]
    text = quality_text(q)
    assert text.startswith("Runs lost: 12 of 36 runs excluded.")
    assert f"11 runs (host_contention): {HOST_BUSY}." in text
    assert "1 run (cache_served): a disk-read test was served from ARC." in text
    named = re.search(r"4 of 12 planned cells have no interval: (.+)\.", text).group(1)
    assert named.split(", ") == list(q.no_interval)
    assert "To measure these cells again: zbench sweep demo-1/spec.yaml" in text and "--resume" not in text
    for page in (quality_html(q), quality_markdown(q)):
        assert all(s in page for s in ("12 of 36 runs excluded", "waited for the controller", "stripe 8K randwrite",
                                       "zbench sweep demo-1/spec.yaml"))
    assert quality_html(q).startswith('<section id="data-quality" class="data-quality">')


def test_an_interrupted_sweep_is_completed_by_its_resume(tmp_path):
    """A planned run not recorded is a first attempt still to make: `zbench sweep SPEC --resume DIR` runs it.
    The cells lost to exclusions still need a new sweep, so both commands are given."""
    from zbench_lib.analysis.report.data_quality import data_quality, quality_text
    path = demo_store(tmp_path / "demo-2", drop_last_of="raidz1-4x1-vbs8k-randwrite")
    q = data_quality(load_sweep(path), base=tmp_path)
    assert q.missing == 1 and q.runs == 35
    assert [r.command for r in q.rerun] == ["zbench sweep demo-2/spec.yaml --resume demo-2",
                                            "zbench sweep demo-2/spec.yaml"]
    assert "To run the 1 planned run not recorded: zbench sweep demo-2/spec.yaml --resume demo-2" in quality_text(q)


def test_nothing_lost_is_one_quiet_line(tmp_path):
    from zbench_lib.analysis.report.data_quality import data_quality, quality_html, quality_markdown, quality_text
    q = data_quality(load_sweep(demo_store(tmp_path / "demo-3", lost={}, cache_served=False)), base=tmp_path)
    assert not q.lost and not q.rerun
    assert quality_text(q) == "All 36 runs admissible."
    assert quality_html(q) == '<p class="note" id="data-quality">All 36 runs admissible.</p>'
    assert quality_markdown(q) == "<small>All 36 runs admissible.</small>"


def test_a_cell_planned_with_one_run_has_no_interval_by_design_not_by_loss(tmp_path):
    """One run a cell gives no interval whatever happens: such cells are counted apart, not named as lost,
    and no command is offered for them (a rerun of the same spec gives them none either)."""
    from zbench_lib.analysis.report.data_quality import data_quality, quality_text
    q = data_quality(load_sweep(demo_store(tmp_path / "demo-6", lost={}, cache_served=False, reps=1)), base=tmp_path)
    assert (q.lost, q.by_design, q.no_interval, q.rerun) == (False, 12, (), ())
    assert quality_text(q) == ("All 12 runs admissible; 12 of 12 cells planned with one unit have none by design "
                               "(plan more runs or pools).")


def test_a_synthetic_sweep_gets_no_command(tmp_path):
    from zbench_lib.analysis.data.synthetic import write_synthetic_sweep
    from zbench_lib.analysis.report.data_quality import data_quality, quality_text
    sweep = load_sweep(write_synthetic_sweep(tmp_path / "s", n_rows=60, seed=1, shape="demo"))
    q = data_quality(sweep)
    assert q.excluded and not q.rerun and "synthetic data" in quality_text(q)


def test_the_iodepth_example_names_its_lost_cell():
    """The shipped example lost 20 of 47 runs to a busy host; its queue depth 64 has one admissible first
    attempt, its 2 replacement runs staying out of the estimate."""
    from zbench_lib.analysis.report.data_quality import data_quality, quality_text
    q = data_quality(load_sweep("data/examples/iodepth-curve"))
    assert (q.runs, q.excluded, q.no_interval, q.replacements) == (47, 20, ("iodepth 64 randread",), 2)
    assert [r.command for r in q.rerun] == ["zbench sweep data/examples/iodepth-curve/spec.yaml"]
    assert "20 runs (host_contention)" in quality_text(q)


def test_flagged_runs_analysed_anyway_are_said_so():
    """With --include-flagged the excluded runs count: the banner names them as analysed with their flags, and
    the cell they left without an interval has one."""
    from zbench_lib.analysis.report.data_quality import data_quality, quality_text
    q = data_quality(load_sweep("data/examples/iodepth-curve"), include_flagged=True)
    assert q.included and q.excluded == 20 and not q.no_interval and not q.rerun
    assert quality_text(q).splitlines()[0] == ("Runs flagged: 20 of 47 runs analysed with a flag that would exclude "
                                               "them (--include-flagged).")


def test_the_demo_ends_with_the_banner_and_one_path(tmp_path, monkeypatch, capsys):
    """`make demo` printed the sweep and the report as two paths to choose from (demo.py); it ends with what was
    lost and the one path to open."""
    from zbench_lib import demo
    from zbench_lib.analysis.report import report
    from zbench_lib.sweeps.watching import notebook
    store = demo_store(tmp_path / "demo-4")
    monkeypatch.setattr(notebook, "run_sweep_notebook", lambda *a, **k: store)
    monkeypatch.setattr(report, "render_report", lambda d: Path(d) / "report" / "index.html")
    assert demo.run_demo() == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == f"open the report: {store / 'report' / 'index.html'}"
    assert [line for line in out if str(tmp_path) in line and "zbench sweep" not in line] == [out[-1]]
    assert "Runs lost: 12 of 36 runs excluded." in out


def test_zbench_sweep_ends_with_the_banner(tmp_path, monkeypatch, capsys):
    from zbench_lib.sweeps.running import sweep_host
    from zbench_lib.sweeps.watching import notebook
    store = demo_store(tmp_path / "demo-5")
    monkeypatch.setattr(notebook, "run_sweep_notebook", lambda *a, **k: store)
    monkeypatch.setattr(sweep_host, "check_labs_free", lambda spec, plan: None)
    assert main(["sweep", str(REPO_ROOT / "templates" / "sweeps" / "demo.yaml"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "Runs lost: 12 of 36 runs excluded." in out and f"zbench sweep {store}/spec.yaml" in out


@pytest.fixture(scope="module")
def iodepth_report(tmp_path_factory):
    """The iodepth-curve example (20 runs excluded) copied and reported by `zbench report`, its stdout kept."""
    import contextlib
    import io
    sweep = tmp_path_factory.mktemp("q") / "iodepth-curve"
    shutil.copytree(REPO_ROOT / "data" / "examples" / "iodepth-curve", sweep)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", str(sweep), "--quiet"]) == 0
    return sweep, out.getvalue()


def test_zbench_report_prints_the_banner_before_the_path(iodepth_report):
    sweep, out = iodepth_report
    lines = out.strip().splitlines()
    assert lines[0] == "Runs lost: 20 of 47 runs excluded." and lines[-1] == str(sweep / "report" / "index.html")
    assert f"20 runs (host_contention): {HOST_BUSY}." in out and "1 of 7 planned cells has no interval: " \
        "iodepth 64 randread." in out
    assert f"To measure these cells again: zbench sweep {sweep}/spec.yaml" in out


def test_the_reports_first_screen_carries_the_banner(iodepth_report):
    """On the index page between the question and the answer, in words, with the command; the grey
    "20 flagged result rows (excluded)" is gone. The notebook's page opens with it too."""
    sweep, _ = iodepth_report
    page = (sweep / "report" / "index.html").read_text()
    banner = page[page.index('<section id="data-quality"'):page.index("</section>", page.index('id="data-quality"'))]
    assert page.index('class="question"') < page.index('id="data-quality"') < page.index('id="answer"')
    assert "20 of 47 runs excluded" in banner and "waited for the controller" in banner
    assert "iodepth 64 randread" in banner and f"zbench sweep {sweep}/spec.yaml" in banner
    assert '<a href="methods.html#s8">methods §8</a>' in banner
    assert "flagged result rows" not in page
    notebook = (sweep / "report" / "analysis-compare.html").read_text()
    assert "Runs lost: 20 of 47 runs excluded." in notebook and "iodepth 64 randread" in notebook
