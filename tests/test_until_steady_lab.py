"""A sweep with `until_steady` on the lab (methods §12.1): one small pool, one run of 2 s write
windows (too short for the steady-state test to judge, so it measures its maximum of 3), killed
between its first two windows (SIGKILL, its pool left behind), resumed to exactly its planned row
with every window kept in raw. The same path with two runs, one cut and one whole, runs with real
fio on a local file in tests/test_until_steady.py: here each window costs a run on the lab.
About 1.5 minutes of a booted lab."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "until-steady.yaml"


def test_a_sweep_until_steady_killed_between_windows_ends_with_its_planned_rows(lab, lab_host, sweep_on_lab,
                                                                                 tmp_path):
    sweep_dir = tmp_path / "until-steady"
    first = sweep_on_lab(SPEC, tmp_path, sweep_dir.name, crash_at="window")
    assert first.returncode == -9, first.stderr[-2000:]
    (cut,) = list((sweep_dir / "raw").glob("*/attempt-1"))
    assert [p.name for p in (cut / "windows").iterdir()] == ["1"] and not (cut / "COMPLETE").exists()

    final = sweep_on_lab(SPEC, tmp_path, resume=sweep_dir)       # destroys the pool the kill left, redoes the cut run
    assert final.returncode == 0, final.stderr[-3000:]
    df = pd.read_parquet(sweep_dir / "results.parquet")
    plan = json.loads((sweep_dir / "plan.json").read_text())
    assert sorted(df["run_id"]) == sorted(r["run_id"] for r in plan["runs"]) and len(df) == 1
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
    assert names.count("run extended") == 1 + 2 and names.count("run discarded") == 1
    assert names[-1] == "finished"
    assert find_leftovers(lab_host) == []
