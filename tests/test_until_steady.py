"""Runs extended until steady, SNIA-style (issue 27 item 2, methods §12.1).

The spec's `until_steady: {max_windows: M}` is checked at load, each bad value refused in one
line before anything exists; the plan carries it only where declared. The extension itself runs
for real: fio on a file of this machine through `runner.measure` (no pool: the raw-disk context,
whose steady-state test pulses at 1 s), the windows judged by the project's own not_steady check
from their raw files. A sweep's runs go through `run_loop.measured_run` into a real store, one
child process killed (SIGKILL) between two windows, the sweep resumed to exactly its planned rows.
The lab's version of the last test is tests/test_until_steady_lab.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from zbench_lib.analysis.data.coverage import cell_status
from zbench_lib.analysis.data.flags import SENSITIVITY_KEYS, sensitivity_alternatives
from zbench_lib.analysis.report.data_dictionary import undocumented
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.hosts.base import LocalHost
from zbench_lib.hosts.node import Node
from zbench_lib.measure.fio_parse import parse_fio_json
from zbench_lib.measure.run_context import RunContext
from zbench_lib.measure.rows import parse_results
from zbench_lib.measure.runner import measure
from zbench_lib.measure.until_steady import (MAX_WINDOWS, UntilSteady, WindowVerdict, extends, file_window,
                                             measure_windows)
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.running.executor import _schedule, run_target
from zbench_lib.sweeps.running.run_loop import measured_run
from zbench_lib.sweeps.running.surface import FioTarget, Site
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 ** 2
FILE_BYTES = 16 * MiB
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
# Buffered 4k writes into a file: any filesystem takes them (O_DIRECT is not everywhere).
LOCAL_JOB = {"bs": "4k", "iodepth": 1, "numjobs": 1, "ioengine": "psync", "direct": 0}


def spec_dict(until=None, workload="randwrite", runtime=2, fixed=2, **extra) -> dict:
    w = {"name": workload, "overrides": {"runtime_s": runtime, "ramp_time_s": 0, **LOCAL_JOB}}
    if until is not None:
        w["until_steady"] = until
    return {"question": "Does a run extended until steady keep every window?", "surface": "zvol", "host": "lab",
            "lab": {"disks": 2, "disk_size": "1G", "model": "custom:iops=400,bw=100M", "extra_disks": 0},
            "factors": {"layout": ["stripe"], "disks": [2], "volblocksize": ["16k"]},
            "target": {"volsize": "48M"}, "workloads": [w],
            "repetitions": {"fixed": fixed, "pool_replicates": 1, "max_attempts": fixed, "metric": "iops"},
            "seed": 5, **extra}


def text_of(d: dict) -> str:
    return yaml.safe_dump(d, sort_keys=False)


# -- the spec: checked at load, one line per bad value --------------------------------------------

@pytest.mark.parametrize("value, message", [
    ({"max_windows": 1}, r"max_windows: expected an integer 2\.\.25 .*got 1$"),
    ({"max_windows": 0}, r"max_windows: expected an integer 2\.\.25 .*got 0$"),
    ({"max_windows": 26}, r"max_windows: expected an integer 2\.\.25 .*SNIA PTS allows 25 rounds.*got 26$"),
    ({"max_windows": "5"}, r"max_windows: expected an integer .*got '5'$"),
    ({"max_windows": 2.5}, r"max_windows: expected an integer .*got 2\.5$"),
    ({"max_windows": True}, r"max_windows: expected an integer .*got True$"),
    ({"max_windows": None}, r"max_windows: expected an integer .*got None$"),
    (5, r"until_steady: expected a mapping, got int 5$"),
    ({}, r"until_steady: missing required key 'max_windows'$"),
    ({"max_windows": 3, "until": 0.1}, r"until_steady: unknown key\(s\) 'until'"),
])
def test_bad_until_steady_is_refused_in_one_line(value, message):
    with pytest.raises(ConfigError, match=r"^workloads\[0\]\.until_steady") as err:
        parse_spec(text_of(spec_dict(until=value)))
    assert "\n" not in str(err.value) and re.search(message, str(err.value)), str(err.value)


def test_a_read_workload_cannot_declare_it():
    with pytest.raises(ConfigError, match=r"^workloads\[0\]\.until_steady: randread only reads: its windows do "
                                          r"not precondition the target, they only warm the caches"):
        parse_spec(text_of(spec_dict(until={"max_windows": 3}, workload="randread")))


def test_a_fault_study_cannot_declare_it():
    d = spec_dict(until={"max_windows": 3}, faults={"kind": "remove", "disk": 1, "after_s": 1})
    d["factors"]["layout"] = ["mirror"]
    with pytest.raises(ConfigError, match=r"^workloads\[0\]\.until_steady: a fault study times its fault"):
        parse_spec(text_of(d))


def test_the_cli_refuses_it_before_anything_exists(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text_of(spec_dict(until={"max_windows": 26})))
    res = subprocess.run([sys.executable, "-m", "zbench_lib.cli", "sweep", str(bad), "--out", str(tmp_path / "s")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 2 and "workloads[0].until_steady.max_windows: expected an integer 2..25" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "s").exists()


def test_the_plan_carries_it_only_where_declared():
    plain, extended = expand(parse_spec(text_of(spec_dict()))), expand(parse_spec(text_of(spec_dict(
        until={"max_windows": 4}))))
    assert "until_steady" not in plain.cells[0].to_dict() and "until_steady" not in plain.to_json()
    assert extended.cells[0].until_steady == {"max_windows": 4}
    # not a factor: the same cells and runs, so declaring it never renames a run
    assert [r.run_id for r in extended.runs] == [r.run_id for r in plain.runs]
    assert "randwrite: each run measures further windows until one is steady, at most 4" in extended.describe()
    # the estimate's maxima count every window a run may measure; the expected time does not
    e0, e1 = plain.estimates, extended.estimates
    assert e1["wall_s"] == e0["wall_s"] and e1["bytes_written"] == e0["bytes_written"]
    runs = 2 * plain.cells[0].run_s
    assert e1["wall_max_s"] == pytest.approx(e0["wall_max_s"] + 3 * runs, abs=0.1)


def test_the_record_refuses_what_the_spec_refuses():
    assert UntilSteady.from_record({"max_windows": 3}) == UntilSteady(3) and UntilSteady.from_record(None) is None
    for n in (1, MAX_WINDOWS + 1, "3"):
        with pytest.raises(ConfigError, match="max_windows must be an integer 2..25"):
            UntilSteady(n)


# -- the rule: another window unless judged steady, up to the maximum ------------------------------

@pytest.mark.parametrize("flag, window, maximum, more", [
    (True, 1, 3, True),        # not steady: measure again
    (None, 1, 3, True),        # not judged is not steady: a check not made never reads as passed
    (False, 1, 3, False),      # steady: this window is the result
    (True, 3, 3, False),       # the maximum: the last window is the result, described not_steady
    (None, 2, 2, False),
    (False, 25, 25, False),
])
def test_extends(flag, window, maximum, more):
    assert extends(WindowVerdict(window, flag, "", math.nan, 0.0, 1.0), maximum) is more


def test_filing_a_window_moves_its_files_unchanged(tmp_path):
    a = tmp_path / "attempt-1"
    (a / "fio").mkdir(parents=True)
    (a / "fio" / "fio.json").write_text('{"jobs": []}')
    (a / "run.json").write_text("{}")
    before = {str(p.relative_to(a)): hashlib.sha256(p.read_bytes()).hexdigest() for p in a.rglob("*") if p.is_file()}
    dest = file_window(a, 1)
    assert dest == a / "windows" / "1" and sorted(p.name for p in a.iterdir()) == ["windows"]
    assert {str(p.relative_to(dest)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in dest.rglob("*") if p.is_file()} == before
    (a / "run.json").write_text("{}")
    with pytest.raises(FileExistsError):
        file_window(a, 1)           # a filed window is never overwritten


# -- the loop with real fio on a file ---------------------------------------------------------------

def _target(tmp_path: Path) -> Path:
    f = tmp_path / "target"
    with open(f, "wb") as fh:
        fh.truncate(FILE_BYTES)
    return f


def _local_window(tmp_path: Path, target: Path, attempt: Path, runtime: int):
    def window(k: int):
        return measure(LocalHost(), pool=None, target_path=str(target), devices=[], workload="randwrite",
                       overrides={"runtime_s": runtime, "ramp_time_s": 0, "size": FILE_BYTES, **LOCAL_JOB},
                       remote_dir=str(tmp_path / f"work-w{k}"), raw_dir=attempt,
                       context=RunContext.from_record({"surface": "raw"}))
    return window


@needs_fio
def test_judged_windows_stop_at_the_first_steady_one(tmp_path):
    """Windows long enough to be judged (6 s at 1 s rounds): whatever this busy machine's writes do,
    every window before the last was judged not steady or not judged, and the last is steady
    unless the maximum was reached; each earlier window lies filed under windows/<k>/."""
    attempt, extended = tmp_path / "attempt-1", []
    attempt.mkdir()
    w = measure_windows(_local_window(tmp_path, _target(tmp_path), attempt, 6), attempt, UntilSteady(2),
                        on_extend=extended.append)
    flags = [v.flag for v in w.verdicts]
    assert all(f is not False for f in flags[:-1])
    assert flags[-1] is False or len(flags) == 2
    assert [v.window for v in extended] == list(range(1, len(flags)))
    assert sorted(p.name for p in (attempt / "windows").glob("*")) == [str(k) for k in range(1, len(flags))] \
        if len(flags) > 1 else not (attempt / "windows").exists()
    assert all(v.reason and v.seconds > 4 for v in w.verdicts)
    assert w.result.window == (w.verdicts[-1].t_start, w.verdicts[-1].t_end)


# -- a sweep through measured_run, killed between windows and resumed ------------------------------

def _sweep_parts(sweep_dir: Path, spec_text: str, target: Path, resume: bool):
    plan = expand(parse_spec(spec_text, name="steady"))
    store = Store.resume(sweep_dir, spec_text, plan, parse_run=parse_results) if resume else \
        Store.create(sweep_dir.parent, spec_text, plan, sweep_id=sweep_dir.name)
    site = Site(request=None, node=Node(LocalHost(), (), (), owned=False), store=store, devices=(),
                work_dir=str(sweep_dir.parent / "work"), pool=None, model=None, readback={})
    fio_target = FioTarget(path=str(target), size_bytes=FILE_BYTES, target_name=None,
                           context=RunContext.from_record({"surface": "raw"}), meta={})
    return plan, store, site, fio_target


def run_local_sweep(sweep_dir: Path, spec_text: str, target: Path, resume: bool = False) -> pd.DataFrame:
    """The executor's target loop over `measured_run`, on this machine: a file instead of a zvol."""
    plan, store, site, fio_target = _sweep_parts(sweep_dir, spec_text, target, resume)
    try:
        sched = _schedule(plan, store, parse_results)
        for t in plan.targets:
            run_target(store, sched, t.target_id, lambda run: measured_run(site, fio_target, plan, run))
        return store.rebuild_results(parse_results)
    finally:
        store.close()


@needs_fio
def test_a_sweep_killed_between_windows_resumes_to_exactly_its_planned_rows(tmp_path):
    """2 s windows are too short to judge (5 rounds of 1 s needed), so every run measures its
    maximum, 3 windows: the child is killed before its first run's second window."""
    spec_text, target, sweep_dir = text_of(spec_dict(until={"max_windows": 3})), _target(tmp_path), tmp_path / "sw"
    args = [str(sweep_dir), spec_text, str(target)]
    child = subprocess.run([sys.executable, __file__, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, ZBENCH_CRASH_AT="window", PYTHONPATH=str(ROOT)))
    assert child.returncode == -9, child.stderr[-2000:]
    (cut,) = [a for a in (sweep_dir / "raw").glob("*/attempt-1")]
    assert sorted(p.relative_to(cut).as_posix() for p in (cut / "windows").glob("*")) == ["windows/1"]
    assert not (cut / "COMPLETE").exists() and not (cut / "fio").exists()      # cut off between windows

    df = run_local_sweep(sweep_dir, spec_text, target, resume=True)
    plan = json.loads((sweep_dir / "plan.json").read_text())
    assert sorted(df["run_id"]) == sorted(r["run_id"] for r in plan["runs"]) and len(df) == 2
    assert (df["windows"] == 3).all() and (df["result_window"] == 3).all() and (df["windows_max"] == 3).all()
    killed = cut.parent.name
    assert df.set_index("run_id").loc[killed, "attempt"] == 2              # redone whole, from window 1
    # Issue 45: every attempt draws its own randseed, sha256 of "seed:run:attempt" (48 bits), as fio's
    # own report gives it; the plan lists each run's first one, which a resume draws again.
    by_run = df.set_index("run_id")
    for r in plan["runs"]:
        attempt = int(by_run.loc[r["run_id"], "attempt"])
        want = int.from_bytes(hashlib.sha256(f"5:{r['run_id']}:{attempt}".encode()).digest()[:6], "big")
        assert by_run.loc[r["run_id"], "randseed"] == want
        assert r["randseed"] == int.from_bytes(hashlib.sha256(f"5:{r['run_id']}:1".encode()).digest()[:6], "big")
        assert f"randseed={want}" in (sweep_dir / "raw" / r["run_id"] / f"attempt-{attempt}" / "fio" /
                                      "job.fio").read_text()
    assert by_run["randseed"].nunique() == 2 and by_run.loc[killed, "randseed"] != next(
        r["randseed"] for r in plan["runs"] if r["run_id"] == killed)      # the redone attempt: a new sequence
    events = Store.open(sweep_dir).events()
    assert [e["run_id"] for e in events if e["event"] == Event.RUN_DISCARDED] == [killed]
    extended = [e for e in events if e["event"] == Event.RUN_EXTENDED]
    assert len(extended) == 1 + 2 * 2            # the cut attempt's first window, then two per run
    assert all(e["not_steady"] is None and "too short to judge" in e["reason"] for e in extended)
    for row in df.itertuples():
        a = sweep_dir / "raw" / row.run_id / f"attempt-{row.attempt}"
        meta = json.loads((a / "meta.json").read_text())
        assert meta["until_steady"]["windows"] == 3 and len(meta["until_steady"]["verdicts"]) == 3
        # every window kept: the result at the top, the two before it filed with their index
        assert [sorted(p.name for p in (a / "windows" / str(k)).iterdir()) for k in (1, 2)] == \
            [sorted(["counters", "fio", "run.json"])] * 2
        first = parse_fio_json((a / "windows" / "1" / "fio" / "fio.json").read_text())[0]
        last = parse_fio_json((a / "fio" / "fio.json").read_text())[0]
        assert row.first_window_iops == pytest.approx(first["iops"]) and row.iops == pytest.approx(last["iops"])
        assert row.first_window_bw_bytes_s == first["bw_bytes_s"]
    assert undocumented(df.columns) == []          # docs/results-columns.csv has the window columns
    # the rebuild from raw gives the same rows again (a resume, `zbench verify`)
    again = Store.open(sweep_dir).rebuild_results(parse_results)
    pd.testing.assert_frame_equal(again, df)


# -- the analysis: the estimate from the first windows, where any run was extended -----------------

def test_the_sensitivity_line_offers_the_first_windows():
    df = pd.DataFrame({"run_id": ["a", "b", "c"], "iops": [100.0, 110.0, 120.0], "lat_p99_9_ns": [5.0, 6.0, 7.0],
                       "windows": [1, 3, math.nan], "first_window_iops": [100.0, 80.0, math.nan]})
    (alt,) = [a for a in sensitivity_alternatives(df, df) if a.key == "windows"]
    assert "windows" in SENSITIVITY_KEYS and alt.label.startswith("first windows")
    assert alt.changed["run_id"].tolist() == ["b"]
    assert alt.runs["iops"].tolist() == [100.0, 80.0, 120.0]
    # a figure without its first window's value is not known for that run under the alternative
    assert alt.runs["lat_p99_9_ns"].isna().tolist() == [False, True, False]
    assert not [a for a in sensitivity_alternatives(df.assign(windows=1), df) if a.key == "windows"]



def test_the_cell_status_says_how_many_runs_were_extended():
    df = pd.DataFrame({"cell_id": ["c1"] * 3 + ["c2"] * 2, "run_id": ["c1-r01", "c1-r02", "c1-r03", "c2-r01", "c2-r02"],
                       "direction": "write", "iops": 1.0, "flag_not_steady": [True, False, None, False, False],
                       "windows": [3, 1, 2, 1, 1], "windows_max": 3})
    s = cell_status(df).set_index("cell_id")
    assert s.loc["c1", "extended"] == "2 of 3 runs in 2-3 windows (at most 3)"
    assert s.loc["c1", "status"] == ("judged: 3 of 3 runs admissible, runs measured until steady: "
                                     "2 of 3 runs in 2-3 windows (at most 3)")
    assert s.loc["c2", "extended"] == "" and s.loc["c2", "status"] == "judged: 2 of 2 runs admissible"
    assert "extended" not in cell_status(df.drop(columns=["windows", "windows_max"]))   # other sweeps as before


if __name__ == "__main__":      # the child of the kill test: one session of the sweep
    run_local_sweep(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
