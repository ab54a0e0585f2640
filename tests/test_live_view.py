"""The live chart of the sweep notebook: built from the store's events and raw fio files."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from zbench_lib.sweeps.watching.live_view import LiveSweepView, per_second_iops

FIXTURES = Path(__file__).parent / "fixtures" / "fio"
PLAN = {"cells": [{"cell_id": "c1", "run_s": 10.0, "factors": {"layout_label": "mirror(2)", "workload": "randread"}},
                  {"cell_id": "c2", "run_s": 10.0, "factors": {"layout_label": "stripe(2)", "workload": "randread"}}],
        "runs": [{"run_id": f"c{c}-r0{r}", "cell_id": f"c{c}"} for c in (1, 2) for r in (1, 2)]}


def _raw_run(sweep_dir: Path, run_id: str, iops: float) -> None:
    fio = sweep_dir / "raw" / run_id / "attempt-1" / "fio"
    fio.mkdir(parents=True)
    fio.joinpath("fio.json").write_text(json.dumps({"fio version": "fio-3.33", "jobs": [
        {"jobname": "j", "groupid": 0, "job options": {"rw": "randread", "bs": "4k"},
         "read": {"iops": iops, "bw_bytes": 4096 * iops, "io_bytes": 2 ** 24, "total_ios": 4096, "runtime": 8000},
         "write": {"iops": 0, "bw_bytes": 0, "io_bytes": 0, "runtime": 0}}]}))
    shutil.copy(FIXTURES / "host-mixed_iops.1.log", fio / "randread_iops.1.log")


def _events(sweep_dir: Path, runs) -> None:
    with open(sweep_dir / "events.jsonl", "a") as fh:
        for rid in runs:
            for kind in ("run started", "run completed"):
                fh.write(json.dumps({"event": kind, "run_id": rid, "attempt": 1,
                                     "ts": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())}) + "\n")


def test_per_second_iops_sums_jobs_and_directions_per_second(tmp_path):
    assert per_second_iops(tmp_path, "c1-r01", 1) == ([], [])           # no raw files: nothing, no error
    _raw_run(tmp_path, "c1-r01", 400.0)
    rows = [[int(x) for x in line.split(",")[:3]]
            for line in (FIXTURES / "host-mixed_iops.1.log").read_text().splitlines() if line.strip()]
    by_s: dict = {}
    for t_ms, value, _ in rows:                                        # reads and writes, one job
        by_s[t_ms // 1000] = by_s.get(t_ms // 1000, 0) + value
    t, v = per_second_iops(tmp_path, "c1-r01", 1)
    first = min(by_s)
    assert t == [float(s - first) for s in sorted(by_s)] and v == [float(by_s[s]) for s in sorted(by_s)]
    assert len({d for _, _, d in rows}) == 2                           # the fixture mixes directions


def test_the_chart_gains_a_point_per_finished_run_and_the_last_runs_seconds(tmp_path):
    for rid, iops in (("c1-r01", 400.0), ("c1-r02", 420.0), ("c2-r01", 800.0)):
        _raw_run(tmp_path, rid, iops)
    view = LiveSweepView(tmp_path, plan=PLAN, interval=0.05, display=False)
    with view:
        _events(tmp_path, ["c1-r01", "c1-r02"])
        time.sleep(0.3)
        fig = view.figure()
        bars, dots = fig.data[0], fig.data[1]
        assert list(bars.x) == ["mirror(2) randread"] and bars.y[0] == pytest.approx(410.0)
        assert list(dots.y) == [400.0, 420.0] and list(dots.text) == ["c1-r01", "c1-r02"]
        _events(tmp_path, ["c2-r01"])
        with open(tmp_path / "events.jsonl", "a") as fh:          # the executor's verdict on the run
            fh.write(json.dumps({"event": "run judged", "run_id": "c2-r01", "attempt": 1,
                                 "truth_flags": ["device_lost"], "ts": "2026-11-22T10:00:00.000000Z"}) + "\n")
        time.sleep(0.3)
    fig = view.figure()
    assert list(fig.data[0].x) == ["mirror(2) randread", "stripe(2) randread"]
    assert list(fig.data[0].y) == pytest.approx([410.0, 800.0])
    t, v = per_second_iops(tmp_path, "c2-r01", 1)
    line = fig.data[2]
    assert line.name == "c2-r01" and list(line.y) == v and list(line.x) == t and t[0] == 0.0
    assert "3/4 runs" in fig.layout.title.text
    dots = fig.data[1]
    assert list(dots.marker.symbol) == ["circle", "circle", "x"] and dots.customdata[2] == "device_lost"
    assert dots.marker.color[2] == "firebrick" and dots.customdata[0] == "admissible"
    assert fig.layout.yaxis.title.text == "IOPS" and "second" in fig.layout.xaxis2.title.text


def test_in_a_real_kernel_the_displayed_chart_is_updated_in_place(tmp_path):
    """papermill applies the kernel's update_display_data to the one output: it ends current."""
    import papermill as pm
    from zbench_lib.sweeps.watching.notebook import ipc_kernel_manager
    for rid, iops in (("c1-r01", 400.0), ("c1-r02", 420.0), ("c2-r01", 800.0), ("c2-r02", 790.0)):
        _raw_run(tmp_path, rid, iops)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        "import json, time, pathlib\n"
        "from zbench_lib.sweeps.watching.live_view import LiveSweepView\n"
        f"d = pathlib.Path({str(tmp_path)!r})\n"
        f"plan = {PLAN!r}\n"
        "with LiveSweepView(d, plan, interval=0.1):\n"
        "    for rid in [r['run_id'] for r in plan['runs']]:\n"
        "        with open(d / 'events.jsonl', 'a') as f:\n"
        "            f.write(json.dumps({'event': 'run completed', 'run_id': rid, 'attempt': 1,\n"
        "                                'ts': '2026-11-22T10:00:00.000000Z'}) + '\\n')\n"
        "        time.sleep(0.4)\n")]
    nbformat.write(nb, str(tmp_path / "live.ipynb"))
    pm.execute_notebook(str(tmp_path / "live.ipynb"), str(tmp_path / "out.ipynb"), progress_bar=False,
                       kernel_manager_class=ipc_kernel_manager())
    outputs = nbformat.read(str(tmp_path / "out.ipynb"), as_version=4).cells[0].outputs
    figs = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(figs) == 1                                       # one chart, updated, not four
    data = figs[0]["data"]["application/vnd.plotly.v1+json"]["data"]
    assert data[1]["y"] == [400.0, 420.0, 800.0, 790.0]
    assert data[2]["name"] == "c2-r02"


def test_the_kernels_ipc_sockets_go_to_the_runtime_directory_not_the_working_directory(tmp_path, monkeypatch):
    """A kernel killed with its sweep leaves its sockets behind: never in the user's project."""
    from jupyter_core.paths import jupyter_runtime_dir
    from zbench_lib.sweeps.watching.notebook import ipc_kernel_manager
    monkeypatch.chdir(tmp_path)
    km = ipc_kernel_manager()()
    assert km.transport == "ipc"
    assert Path(km.ip).is_absolute() and Path(km.ip).parent == Path(jupyter_runtime_dir())
