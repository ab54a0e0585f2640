"""The command line refuses bad input with a clear message before anything starts."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def zbench(*args, env=None):
    return subprocess.run([sys.executable, "-m", "zbench_lib.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env=env)


@pytest.mark.parametrize("args, message", [
    (["lab", "up", "--disks", "0"], "needs at least 1 data disk"),
    (["lab", "up", "--model", "custom:iops=-5"], "iops must be positive"),
    (["lab", "up", "--model", "tape"], "unknown disk model 'tape'"),
    (["lab", "up", "--disk-size", "lots"], "cannot parse 'lots' as a size"),
    (["lab", "up", "--disk-size", "1P"], "cannot parse '1P' as a size"),
])
def test_bad_lab_input(args, message, tmp_path):
    import os
    res = zbench(*args, env=dict(os.environ, ZBENCH_CACHE=str(tmp_path)))
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert not (tmp_path / "labs").exists() or not any((tmp_path / "labs").iterdir())


def test_no_space_for_disk_files(tmp_path):
    import os
    res = zbench("lab", "up", "--disks", "8", "--disk-size", "1000T",
                 env=dict(os.environ, ZBENCH_CACHE=str(tmp_path)))
    assert res.returncode == 2 and "no space for the lab's disk files" in res.stderr


def test_sweep_dry_run_prints_the_plan_and_creates_nothing(tmp_path):
    res = zbench("sweep", "templates/sweeps/demo.yaml", "--dry-run", "--out", str(tmp_path / "s"))
    assert res.returncode == 0, res.stderr
    assert "cells:" in res.stdout and "estimated wall time" in res.stdout
    assert not (tmp_path / "s").exists()


def test_sweep_with_a_malformed_spec_fails_before_anything_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("question: x\nsurface: tape\n")
    res = zbench("sweep", str(bad), "--out", str(tmp_path / "s"))
    assert res.returncode == 2 and "missing required key 'host'" in res.stderr
    assert not (tmp_path / "s").exists()


# -- zbench report / table: options, errors in one line ------------------------------------------

import io
import json
import time

import nbformat

from zbench_lib.analysis.report.report import parse_param
from zbench_lib.analysis.data.synthetic import write_synthetic_sweep
from zbench_lib.cli import build_parser, main
from zbench_lib.core.errors import ConfigError

EXAMPLES = ROOT / "data" / "examples"


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_report_help(flag):
    res = zbench("report", flag)
    assert res.returncode == 0 and "usage: zbench report" in res.stdout
    for option in ("--compare", "--timeline", "--param", "--include-flagged", "--figures", "--single-file"):
        assert option in res.stdout


def test_report_options_in_any_position():
    args = build_parser().parse_args(["report", "--figures", "png,svg", "--param", "scaling:metric=bw_bytes_s",
                                      "some/sweep", "--timeline", "c1-r01", "--include-flagged",
                                      "--param", "compare:margin=0.1", "--compare", "other", "--single-file"])
    assert args.sweep_dir == "some/sweep" and args.figures == "png,svg" and args.timeline == "c1-r01"
    assert args.param == ["scaling:metric=bw_bytes_s", "compare:margin=0.1"]
    assert args.include_flagged and args.single_file and args.compare == "other"


def test_param_values_are_typed_and_checked():
    assert parse_param("scaling:metric=bw_bytes_s") == ("analysis-scaling", "metric", "bw_bytes_s")
    assert parse_param("analysis-compare:margin=0.1") == ("analysis-compare", "margin", 0.1)
    assert parse_param("volblocksize:static_figures=true")[2] is True
    for bad in ("scaling=1", "metric=iops", "nosuch:a=1", ":a=1"):
        with pytest.raises(ConfigError):
            parse_param(bad)


@pytest.mark.parametrize("args, message", [
    (["--param", "scaling:nonsense=1"], "analysis-scaling has no parameter nonsense"),
    (["--timeline", "c0000000-r99"], "is not a run of"),
    (["--figures", "gif"], "--figures takes png,svg"),
    (["--param", "volblocksize:metric=iops", "--notebooks", "scaling"], "which this report does not run"),
])
def test_report_refuses_bad_options_in_one_line(args, message):
    res = zbench("report", "data/examples/scaling", *args)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_bad_param_value_is_refused_before_any_work(tmp_path):
    """Issue 31: a bad --param value was found by the kernel after the work, once the good report
    had been overwritten; the notebook's own validation runs first and the old report stays."""
    sweep = write_synthetic_sweep(tmp_path / "s", n_rows=200)
    (sweep / "report").mkdir()
    (sweep / "report" / "index.html").write_text("the good report")
    res = zbench("report", str(sweep), "--notebooks", "scaling", "--param", "scaling:metric=nonsense")
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("zbench: analysis-scaling: metric must be one of"), lines[0]
    assert (sweep / "report" / "index.html").read_text() == "the good report"
    assert not list(sweep.glob(".report-new-*"))


def test_the_scaling_notebook_on_a_sweep_without_a_disk_count_is_refused_before_any_work(tmp_path):
    """Issue 52 item 8: `--notebooks scaling` on a sweep whose layouts each have one disk count exited 0 with a
    page of one-configuration sentences; it is refused in one line, before anything is written."""
    sweep = write_synthetic_sweep(tmp_path / "s", n_rows=54, shape="volblocksize")    # every layout of 6 disks
    (sweep / "report").mkdir()
    (sweep / "report" / "index.html").write_text("the good report")
    res = zbench("report", str(sweep), "--notebooks", "scaling")
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0] == ("zbench: analysis-scaling: s varies no layout's disk count (data disks: mirror 3, "
                        "raidz1 5, raidz2 4), so there is nothing to scale; the compare notebook compares what "
                        "it varies (--notebooks compare)"), lines[0]
    assert (sweep / "report" / "index.html").read_text() == "the good report"
    assert not list(sweep.glob(".report-new-*"))


def test_a_bad_compare_path_is_refused_before_any_work(tmp_path):
    res = zbench("report", "data/examples/iodepth-curve", "--compare", str(tmp_path / "nowhere"))
    assert res.returncode == 2 and "--compare" in res.stderr and "not a sweep directory" in res.stderr


def test_verify_on_a_missing_directory_says_so(tmp_path):
    res = zbench("verify", str(tmp_path / "nowhere"))
    assert res.returncode == 2, res.stderr
    assert "no such directory" in res.stderr and "Warning" not in res.stderr and "Error:" not in res.stderr


def test_every_subcommand_help_has_a_description_and_defaults():
    from zbench_lib.cli import build_parser
    parser = build_parser()
    subs = parser._subparsers._group_actions[0].choices
    for name, sp in {**subs, **{f"lab {k}": v for k, v in subs["lab"]._subparsers._group_actions[0].choices.items()}
                     }.items():
        text = sp.format_help()
        assert sp.description, name
        for action in sp._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS) \
                    and action.help and action.help != argparse.SUPPRESS:
                assert "(default: " in text, (name, action.dest)


def test_dry_run_bytes_written_says_what_it_is():
    from zbench_lib.cli import bytes_written_note
    from zbench_lib.sweeps.spec.sweep_spec import load_spec
    note = bytes_written_note(load_spec("templates/sweeps/recordsize.yaml"))
    assert "device writes" in note and "not the space in use" in note and "hold" in note


def test_table_exports_from_the_cli(tmp_path):
    for fmt, probe in (("md", "| raidz1 1x6"), ("csv", "configuration,layout"), ("latex", "\\begin{table*}")):
        res = zbench("table", "data/examples/volblocksize", "--format", fmt)
        assert res.returncode == 0 and probe in res.stdout, res.stderr
    out = tmp_path / "t.tex"
    assert zbench("table", "data/examples/volblocksize", "--format", "latex", "--out", str(out)).returncode == 0
    assert out.read_text().count("\\end{table*}") == 1


def _failing_notebook(path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("spec = ''\nout_root = ''\nsweep_id = ''\nresume_dir = ''\n"
                                          "progress = False", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("print('hello from the kernel')"),
                nbformat.v4.new_code_cell("raise RuntimeError('the lab is on fire\\nsecond line')")]
    nbformat.write(nb, str(path))
    return path


def test_notebook_failure_becomes_one_line_and_a_log(tmp_path, capfd):
    from zbench_lib.sweeps.watching.notebook import NotebookFailed, execute_notebook
    nb = _failing_notebook(tmp_path / "bad.ipynb")
    with pytest.raises(NotebookFailed) as info:
        execute_notebook(nb, tmp_path / "out.ipynb", {}, log=tmp_path / "x.log", name="bad", cwd=tmp_path)
    msg = str(info.value)
    assert "\n" not in msg and "RuntimeError: the lab is on fire second line" in msg and "x.log" in msg
    log = (tmp_path / "x.log").read_text()
    assert "RuntimeError" in log and "raise RuntimeError" in log and "\x1b[" not in log
    assert "without encryption" not in capfd.readouterr().err        # the kernel talked over IPC


def test_sweep_failure_leaves_the_traceback_beside_the_sweep(tmp_path, monkeypatch, capsys):
    from zbench_lib.sweeps.watching import notebook
    from zbench_lib.sweeps.planning.plan import expand
    from zbench_lib.sweeps.spec.sweep_spec import load_spec
    monkeypatch.setattr(notebook, "NOTEBOOK", _failing_notebook(tmp_path / "sweep.ipynb"))
    plan = expand(load_spec(ROOT / "templates" / "sweeps" / "demo.yaml"))
    with pytest.raises(notebook.NotebookFailed) as info:
        notebook.run_sweep_notebook(str(ROOT / "templates/sweeps/demo.yaml"), plan, str(tmp_path / "out"))
    exc = info.value
    assert exc.log.parent == tmp_path / "out" and exc.log.name.endswith("-error.log")
    assert "RuntimeError" in exc.log.read_text() and "\n" not in str(exc)
    assert not [p for p in (tmp_path / "out").iterdir() if p.is_dir()]    # no sweep directory was made
    assert "hello from the kernel" in capsys.readouterr().out             # notebook output above the bar


def test_an_internal_error_is_one_line_with_its_log(tmp_path, monkeypatch, capsys):
    import zbench_lib.cli as cli
    monkeypatch.setenv("ZBENCH_CACHE", str(tmp_path))

    def boom(args):
        raise RuntimeError("unexpected\nthing")
    monkeypatch.setattr(cli, "cmd_verify", boom)
    assert main(["verify", "x"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zbench: RuntimeError: unexpected thing (full traceback: ")
    log = Path(err[0].rsplit("full traceback: ", 1)[1].rstrip(")"))
    assert log.parent == tmp_path / "logs" and "Traceback" in log.read_text()


# -- the terminal progress view of a headless sweep ------------------------------------------------

from zbench_lib.sweeps.watching.progress import EventTail, LineWriter, ProgressView, SweepProgress, cell_label  # noqa: E402

PLAN = {"cells": [{"cell_id": "c1", "run_s": 30.0, "factors": {"layout_label": "raidz2(6)", "workload": "randread-4k",
                                                                "volblocksize_bytes": 16384, "iodepth": 8}},
                  {"cell_id": "c2", "run_s": 30.0, "factors": {"layout_label": "mirror(2x3)", "workload": "seqread"}}],
        "runs": [{"run_id": f"c{c}-r0{r}", "cell_id": f"c{c}"} for c in (1, 2) for r in (1, 2, 3)]}
EVENTS = [
    {"event": "started", "runs_planned": 6, "cells": 2, "ts": "2026-11-21T10:00:00.000000Z"},
    {"event": "pool created", "pool_id": "p01", "ts": "2026-11-21T10:00:50.000000Z"},
    {"event": "run started", "run_id": "c1-r01", "attempt": 1, "ts": "2026-11-21T10:01:00.000000Z"},
    {"event": "run completed", "run_id": "c1-r01", "attempt": 1, "ts": "2026-11-21T10:01:40.000000Z"},
    {"event": "run started", "run_id": "c1-r02", "attempt": 1, "ts": "2026-11-21T10:01:40.000000Z"},
    {"event": "run completed", "run_id": "c1-r02", "attempt": 1, "ts": "2026-11-21T10:02:20.000000Z"},
    {"event": "run started", "run_id": "c1-r03", "attempt": 1, "ts": "2026-11-21T10:02:20.000000Z"},
    {"event": "run completed", "run_id": "c1-r03", "attempt": 1, "ts": "2026-11-21T10:03:00.000000Z"},
    {"event": "runs added", "cell_id": "c1", "why": "Stein's second stage: 4 admissible runs in all",
     "reps": [4], "run_ids": ["c1-r04"], "needed": 4, "admissible": 3, "reason": "rel CI 12% > 5%",
     "ts": "2026-11-21T10:03:00.100000Z"},
    {"event": "run started", "run_id": "c1-r04", "attempt": 1, "ts": "2026-11-21T10:03:01.000000Z"},
]


def test_cell_labels():
    assert cell_label(PLAN["cells"][0]) == "raidz2(6) randread-4k vbs 16K qd8"
    assert cell_label(PLAN["cells"][1]) == "mirror(2x3) seqread"


def test_events_to_progress():
    iops = {"c1-r01": 410.0, "c1-r02": 420.0, "c1-r03": 433.4}
    p = SweepProgress.from_plan(PLAN, iops_of=lambda rid, att: iops.get(rid))
    assert p.planned == 6 and p.eta_s() == 6 * 30.0                  # before any run: the plan's estimate
    for ev in EVENTS:
        p.apply(ev)
    assert p.done == 3 and p.planned == 7                             # a fourth repetition was added
    assert p.current == "raidz2(6) randread-4k vbs 16K qd8"        # c1-r04 is an added run of c1
    assert p.last_iops == pytest.approx(433.4)
    assert p.eta_s() == pytest.approx(4 * 120 / 3)                    # 3 runs in 120 s, 4 left
    text = p.postfix()
    assert text.startswith("cell raidz2(6) randread-4k") and "ETA 02:40" in text and "last 433 IOPS" in text
    p.apply({"event": "pool teardown", "pool": "zbench-p01-abc", "ts": "2026-11-21T10:03:30Z"})
    assert p.postfix().startswith("tearing down pool zbench-p01-abc ·")          # no "cell" before a pool
    p.apply({"event": "finished", "completed": 7, "ts": "2026-11-21T10:09:00Z"})
    assert p.finished and p.eta_s() == 0.0 and "finished" in p.postfix()


def test_a_resumed_sweep_counts_what_was_done():
    p = SweepProgress.from_plan(PLAN)
    p.apply({"event": "resumed", "completed": 4, "discarded": 1, "remaining": 2, "ts": "2026-11-21T11:00:00Z"})
    assert (p.done, p.planned) == (4, 6)
    p.apply({"event": "run started", "run_id": "c2-r03", "ts": "2026-11-21T11:00:10Z"})
    assert p.current == "mirror(2x3) seqread" and p.eta_s() == 2 * 30.0


def test_event_tail_reads_whole_lines_only(tmp_path):
    path, seen = tmp_path / "events.jsonl", []
    tail = EventTail(path, seen.append)
    assert tail.poll() == 0                                           # no file yet
    path.write_bytes((json.dumps(EVENTS[0]) + "\n" + json.dumps(EVENTS[1])[:20]).encode())
    assert tail.poll() == 1
    with open(path, "ab") as fh:
        fh.write((json.dumps(EVENTS[1])[20:] + "\n{torn\n" + json.dumps(EVENTS[2]) + "\n").encode())
    assert tail.poll() == 2 and [e["event"] for e in seen] == ["started", "pool created", "run started"]


def test_progress_view_follows_a_growing_events_file(tmp_path):
    fio = tmp_path / "raw" / "c1-r01" / "attempt-1" / "fio"
    fio.mkdir(parents=True)
    fio.joinpath("fio.json").write_text(json.dumps({"fio version": "fio-3.33", "jobs": [
        {"jobname": "j", "groupid": 0, "job options": {"rw": "randread", "bs": "4k"},
         "read": {"iops": 512.5, "bw_bytes": 2099200, "io_bytes": 2 ** 24, "total_ios": 4096, "runtime": 8000},
         "write": {"iops": 0, "bw_bytes": 0, "io_bytes": 0, "runtime": 0}}]}))
    buf = io.StringIO()
    with ProgressView(tmp_path, plan=PLAN, file=buf, interval=0.05) as view:
        with open(tmp_path / "events.jsonl", "a") as fh:
            for ev in EVENTS[:4]:
                fh.write(json.dumps(ev) + "\n")
        time.sleep(0.3)
        view.write_err("a line from the kernel")
    assert view.state.done == 1 and view.state.last_iops == pytest.approx(512.5)
    assert view.bar.n == 1 and view.bar.total == 6
    out = buf.getvalue()
    assert "1/6" in out and "last 512 IOPS" in out and "a line from the kernel" in out


def test_line_writer_hands_over_whole_lines():
    got = []
    w = LineWriter(got.append)
    w.write("a\nb")
    w.write("c\n")
    w.write("tail")
    w.flush()
    assert got == ["a", "bc", "tail"]


def test_a_headless_sweep_shows_its_progress_in_the_terminal(tmp_path, monkeypatch, capsys):
    """A stand-in sweep notebook writes the store's events; the terminal view follows them."""
    from zbench_lib.sweeps.watching import notebook
    from zbench_lib.sweeps.planning.plan import expand
    from zbench_lib.sweeps.spec.sweep_spec import load_spec
    plan = expand(load_spec(ROOT / "templates" / "sweeps" / "demo.yaml"))
    runs = [r.run_id for r in plan.runs][:3]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("spec = ''\nout_root = ''\nsweep_id = ''\nresume_dir = ''\n"
                                          "progress = True", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(
                    "import json, time, pathlib\n"
                    "d = pathlib.Path(out_root) / sweep_id\nd.mkdir()\n"
                    "def ev(**e):\n"
                    "    with open(d / 'events.jsonl', 'a') as f:\n"
                    "        f.write(json.dumps({'ts': time.strftime('%Y-%m-%dT%H:%M:%S.000000Z', "
                    "time.gmtime()), **e}) + '\\n')\n"
                    f"ev(event='started', runs_planned={len(runs)}, cells=1)\n"
                    f"for rid in {runs!r}:\n"
                    "    ev(event='run started', run_id=rid, attempt=1); time.sleep(0.3)\n"
                    "    ev(event='run completed', run_id=rid, attempt=1)\n"
                    "print('progress given to the notebook:', progress)\n"
                    "ev(event='finished', completed=3)")]
    nbformat.write(nb, str(tmp_path / "sweep.ipynb"))
    monkeypatch.setattr(notebook, "NOTEBOOK", tmp_path / "sweep.ipynb")
    target = notebook.run_sweep_notebook(str(ROOT / "templates/sweeps/demo.yaml"), plan, str(tmp_path / "out"))
    assert (target / "sweep.ipynb").exists()                          # the executed notebook moved in
    captured = capsys.readouterr()
    assert "progress given to the notebook: False" in captured.out    # its own bars are off
    assert f"{len(runs)}/{len(runs)}" in captured.err and "finished" in captured.err
