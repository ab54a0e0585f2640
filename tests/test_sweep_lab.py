"""Sweeps on the lab: resume after crashes, and the notebook under papermill."""

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.zfs.pools import find_leftovers, remove_leftovers

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parent.parent
SPECS = Path(__file__).parent / "specs"


def _digests(sweep_dir: Path) -> dict:
    return {str(p.relative_to(sweep_dir)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in (sweep_dir / "raw").rglob("*") if p.is_file()}


def _run(out_root, resume=None, crash_at=None, sweep_id=None):
    env = dict(os.environ, ZBENCH_LAB="pytest")
    env.pop("ZBENCH_CRASH_AT", None)
    if crash_at:
        env["ZBENCH_CRASH_AT"] = crash_at
    code = ("import sys\nfrom zbench_lib.sweeps.running.executor import run_sweep\n"
            "run_sweep(sys.argv[1], sys.argv[2], resume_dir=sys.argv[3] or None, "
            "sweep_id=sys.argv[4] or None, progress=False)\n")
    return subprocess.run([sys.executable, "-c", code, str(SPECS / "resume.yaml"), str(out_root),
                           str(resume or ""), sweep_id or ""], env=env, capture_output=True,
                          text=True, timeout=900)


def test_killed_sweep_resumes_to_exactly_the_planned_rows(lab, lab_host, tmp_path):
    sweep_dir = tmp_path / "resume-test"
    first = _run(tmp_path, crash_at="pool-create", sweep_id="resume-test")
    assert first.returncode == -9, first.stderr[-2000:]
    history = {}
    for point in ("prefill", "run", "run", "results"):
        # A crash leaves its pool behind: it is reported, and removed because we ask.
        assert find_leftovers(lab_host), f"no leftover pool after a crash at {point}"
        remove_leftovers(lab_host)
        before = _digests(sweep_dir)
        res = _run(tmp_path, resume=sweep_dir, crash_at=point)
        assert res.returncode == -9, (point, res.stderr[-2000:])
        after = _digests(sweep_dir)
        assert all(after.get(k) == v for k, v in before.items()), f"raw files changed ({point})"
        history[point] = len(after)
    remove_leftovers(lab_host)
    final = _run(tmp_path, resume=sweep_dir)
    assert final.returncode == 0, final.stderr[-3000:]
    df = pd.read_parquet(sweep_dir / "results.parquet")
    plan = json.loads((sweep_dir / "plan.json").read_text())
    assert len(plan["runs"]) == 4
    assert sorted(df["run_id"]) == sorted(r["run_id"] for r in plan["runs"])   # one row each
    assert not df.duplicated(["run_id", "direction"]).any()
    events = [json.loads(l)["event"] for l in (sweep_dir / "events.jsonl").read_text().splitlines()]
    assert events.count("run discarded") >= 2          # runs cut off mid-way were redone
    assert events[-1] == "finished"
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
    assert (df["clat_p99_ns"].gt(0) | df["tail_not_judged"].str.contains("p99 needs 1000")).all()
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
