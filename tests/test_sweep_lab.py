"""Sweeps on the lab: resume after crashes, the notebook under papermill, and the lab's lock held
by another sweep (a single host's sweep is refused in one line, then runs once it is free)."""

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.hosts.host_lock import HostLock, LockOwner, check_free
from zbench_lib.zfs.pools import find_leftovers

from conftest import LAB_TEST_CONFIG, sweep_child

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parent.parent
SPECS = Path(__file__).parent / "specs"


def _digests(sweep_dir: Path) -> dict:
    return {str(p.relative_to(sweep_dir)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in (sweep_dir / "raw").rglob("*") if p.is_file()}


def _events(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]


def test_killed_sweep_resumes_to_exactly_the_planned_rows(lab, lab_host, sweep_on_lab, tmp_path):
    """SIGKILLed at the two crash points a signal from outside cannot aim at (test_kill_resume_lab
    kills `zbench sweep` at startup, pool creation, prefill, mid-run and teardown): after a run's
    raw files are written but before its COMPLETE marker, and after every run is complete but
    before results.parquet is built; then resumed to exactly the planned rows."""
    spec, sweep_dir = SPECS / "resume.yaml", tmp_path / "resume-test"
    first = sweep_on_lab(spec, tmp_path, sweep_dir.name, crash_at="run")
    assert first.returncode == -9, first.stderr[-2000:]
    (cut,) = list((sweep_dir / "raw").glob("*/attempt-1"))
    assert (cut / "fio" / "fio.json").is_file() and not (cut / "COMPLETE").exists()   # measured, not complete
    left = find_leftovers(lab_host)
    assert left, "no leftover pool after a crash mid-run"          # a crash leaves its pool behind: it is reported

    before = _digests(sweep_dir)
    second = sweep_on_lab(spec, tmp_path, resume=sweep_dir, crash_at="results")
    assert second.returncode == -9, second.stderr[-2000:]
    after = _digests(sweep_dir)
    assert all(after.get(k) == v for k, v in before.items()), "raw files changed (results)"
    events = _events(sweep_dir)
    # ... and removed by the resume, which knows it as its own
    assert sorted(p for e in events if e["event"] == "leftovers removed" for p in e["pools"]) == sorted(left)
    assert [(e["run_id"], e["attempt"]) for e in events if e["event"] == "run discarded"] == \
        [(cut.parent.name, 1)]                      # the run cut off mid-way is redone, not counted
    assert not (sweep_dir / "results.parquet").exists() and find_leftovers(lab_host) == []

    final = sweep_on_lab(spec, tmp_path, resume=sweep_dir)       # nothing left to run: the rows from raw alone
    assert final.returncode == 0, final.stderr[-3000:]
    assert _digests(sweep_dir) == after, "raw files changed (final resume)"
    df = pd.read_parquet(sweep_dir / "results.parquet")
    plan = json.loads((sweep_dir / "plan.json").read_text())
    assert len(plan["runs"]) == 4
    assert sorted(df["run_id"]) == sorted(r["run_id"] for r in plan["runs"])   # one row each
    assert not df.duplicated(["run_id", "direction"]).any()
    assert (df.loc[df["run_id"] == cut.parent.name, "attempt"] == 2).all()
    events = _events(sweep_dir)
    assert [e["event"] for e in events].count("run discarded") == 1
    assert events[-1]["event"] == "finished"
    assert find_leftovers(lab_host) == []


def test_sweep_notebook_runs_headless_with_parameters(lab, tmp_path):
    out = tmp_path / "executed.ipynb"
    env = dict(os.environ, ZBENCH_LAB="pytest")
    res = subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / "sweep.ipynb"),
                          str(out), "-p", "spec", str(SPECS / "resume.yaml"),
                          "-p", "out_root", str(tmp_path / "sweeps"), "-p", "progress", "False",
                          "-p", "live", "True",
                          "--cwd", str(ROOT)], env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    nb = json.loads(out.read_text())
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert "sweep 'resume'" in text and "SWEEP_DIR" in text
    sweep_dir = Path(text.split("SWEEP_DIR ")[1].split()[0])
    df = pd.read_parquet(sweep_dir / "results.parquet")
    assert len(df) == 4 and set(df["workload"]) == {"randread", "randwrite"}
    # The live chart, updated in place as runs finished, ends with one dot per run.
    figs = [o["data"]["application/vnd.plotly.v1+json"] for c in nb["cells"] for o in c.get("outputs", [])
            if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(figs) == 1, len(figs)
    dots = figs[0]["data"][1]
    assert sorted(dots["text"]) == sorted(df["run_id"].unique())
    assert figs[0]["layout"]["title"]["text"].startswith(f"sweep {sweep_dir.name}: 4/4 runs")
    # Each p99 is positive, or blank with its reason (fewer than 1,000 I/Os: methods §18).
    assert (df["lat_p99_ns"].gt(0) | df["tail_not_judged"].str.contains("p99 needs 1000")).all()
    assert "flag_cache_served" in df


def test_zbench_sweep_shows_progress_in_the_terminal_on_a_lab_sweep(lab, tmp_path):
    """The CLI's progress view on a real sweep: runs done / planned, the cell, the last IOPS."""
    env = dict(os.environ, ZBENCH_LAB="pytest", COLUMNS="160")
    res = subprocess.run([sys.executable, "-m", "zbench_lib.cli", "sweep", str(SPECS / "resume.yaml"),
                          "--out", str(tmp_path)], env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    err = res.stderr.replace("\r", "\n")
    assert "runs 4/4" in err and "finished" in err, err[-2000:]
    assert "randread" in err and "randwrite" in err                 # the current cell was shown
    last = [float(m.replace(",", "")) for m in re.findall(r"last ([\d,]+) IOPS", err)]
    sweep_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    df = pd.read_parquet(sweep_dir / "results.parquet")
    per_run = df.groupby("run_id")["iops"].sum()                     # fio's IOPS, all directions
    assert last and any(abs(last[-1] - v) <= 0.5 for v in per_run), (last, per_run.to_dict())
    assert "Kernel is running over TCP" not in res.stderr             # the transport warning is gone
    assert (sweep_dir / "sweep.ipynb").exists()


# One run of one pool on one of the session lab's disks: 2 s window, no prefill.
HELD = """name: held
question: Is a sweep on a lab another sweep holds refused, and run once the lab is free?
surface: zvol
host: lab
lab: {disks: 1, disk_size: 1G, model: "custom:iops=400,bw=100M", extra_disks: 0}
factors: {layout: [stripe], disks: [1], volblocksize: [16k]}
target: {volsize: 32M, compression: "off", primarycache: metadata}
workloads:
  - {name: randread, overrides: {runtime_s: 2, ramp_time_s: 1, bs: 16k, numjobs: 1, iodepth: 4}}
repetitions: {fixed: 1, pool_replicates: 1, max_attempts: 1}
seed: 5
"""


def test_a_sweep_on_a_lab_another_sweep_holds_is_refused_in_one_line_and_runs_once_it_is_free(lab, lab_host,
                                                                                             tmp_path):
    """The lab's on-host lock held from here by a foreign owner (a colleague's sweep, or a second
    controller): `zbench sweep` on the lab is refused in one line naming that owner, exit 2, with no
    store directory and no pool; let go, the same command runs its sweep, and lets the lock go at its end."""
    spec, out = tmp_path / "held.yaml", tmp_path / "sweeps"
    spec.write_text(HELD)
    argv, env = sweep_child(spec, out, cli=True, ZBENCH_LAB=LAB_TEST_CONFIG["name"])
    theirs = LockOwner("zbench sweep theirs from ctl9 pid 7", "07e5")
    with HostLock(lab_host, theirs):
        refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert find_leftovers(lab_host) == []
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr[-3000:]
    assert re.fullmatch(rf"zbench: lab:{LAB_TEST_CONFIG['name']} is busy: {re.escape(theirs.text)} holds "
                        r"/run/zbench\.lock \(one sweep at a time on a host\)", lines[0]), lines
    assert not out.exists()
    ran = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stderr[-3000:]
    (sweep_dir,) = [p for p in out.iterdir() if p.is_dir()]
    assert len(pd.read_parquet(sweep_dir / "results.parquet")["run_id"].unique()) == 1
    assert find_leftovers(lab_host) == []
    check_free(lab_host)                        # the sweep let the lab's lock go at its end
