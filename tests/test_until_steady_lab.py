"""A sweep with `until_steady` on the lab (methods §12.1): one small pool, 3 s write windows (too
short for the steady-state test to judge, so every run measures its maximum of 3), killed between
two windows of its first run (SIGKILL, its pool left behind), resumed to exactly its planned rows
with every window kept in raw. Short: about 2 minutes of a booted lab. The same path runs with
real fio on a local file in tests/test_until_steady.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "until-steady.yaml"


def _run(out_root: Path, resume: Path | None = None, crash_at: str | None = None, sweep_id: str = ""):
    env = dict(os.environ, ZBENCH_LAB="pytest")
    env.pop("ZBENCH_CRASH_AT", None)
    if crash_at:
        env["ZBENCH_CRASH_AT"] = crash_at
    code = ("import sys\nfrom zbench_lib.sweeps.running.executor import run_sweep\n"
            "run_sweep(sys.argv[1], sys.argv[2], resume_dir=sys.argv[3] or None, "
            "sweep_id=sys.argv[4] or None, progress=False)\n")
    return subprocess.run([sys.executable, "-c", code, str(SPEC), str(out_root), str(resume or ""), sweep_id],
                          env=env, capture_output=True, text=True, timeout=900)


def test_a_sweep_until_steady_killed_between_windows_ends_with_its_planned_rows(lab, lab_host, tmp_path):
    sweep_dir = tmp_path / "until-steady"
    first = _run(tmp_path, crash_at="window", sweep_id=sweep_dir.name)
    assert first.returncode == -9, first.stderr[-2000:]
    (cut,) = list((sweep_dir / "raw").glob("*/attempt-1"))
    assert [p.name for p in (cut / "windows").iterdir()] == ["1"] and not (cut / "COMPLETE").exists()

    final = _run(tmp_path, resume=sweep_dir)       # destroys the pool the kill left, redoes the cut run
    assert final.returncode == 0, final.stderr[-3000:]
    df = pd.read_parquet(sweep_dir / "results.parquet")
    plan = json.loads((sweep_dir / "plan.json").read_text())
    assert sorted(df["run_id"]) == sorted(r["run_id"] for r in plan["runs"]) and len(df) == 2
    assert not df.duplicated(["run_id", "direction"]).any()
    assert (df["windows"] == 3).all() and (df["result_window"] == 3).all() and (df["windows_max"] == 3).all()
    assert df["first_window_iops"].gt(0).all() and df["iops"].gt(0).all()
    assert df.set_index("run_id").loc[cut.parent.name, "attempt"] == 2
    for row in df.itertuples():
        a = sweep_dir / "raw" / row.run_id / f"attempt-{row.attempt}"
        for k in (1, 2):                            # the preconditioning windows, kept whole
            assert (a / "windows" / str(k) / "fio" / "fio.json").is_file()
            assert (a / "windows" / str(k) / "run.json").is_file() and (a / "windows" / str(k) / "counters").is_dir()
        assert (a / "fio" / "fio.json").is_file() and (a / "COMPLETE").is_file()
        verdicts = json.loads((a / "meta.json").read_text())["until_steady"]["verdicts"]
        assert [v["window"] for v in verdicts] == [1, 2, 3] and all(v["not_steady"] is None for v in verdicts)
    events = [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]
    names = [e["event"] for e in events]
    assert names.count("run extended") == 1 + 2 * 2 and names.count("run discarded") == 1
    assert names[-1] == "finished"
    assert find_leftovers(lab_host) == []
