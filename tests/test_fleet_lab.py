"""A sweep on a fleet of two labs (issue 29), with real OpenZFS.

The module boots its own two small labs once (not the session's lab) and gives them to each sweep
by name (ZBENCH_LABS); every sweep runs in a child process, as `zbench sweep` does, so it can be
killed. Four things are shown: rows on both hosts, blocks whole on one host, and nothing left on
the labs (with a second controller refused by the on-host lock while the first runs); a worker
killed mid-pool (its pool given to the next free host, nothing left on its lab, every run once);
the controller killed and resumed (only what was missing runs).

Kept short: 2 tiny disks per lab, 3 s windows, 2 runs per cell, 4 pools in 2 blocks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from zbench_lib.core.events import Event
from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab

MiB = 1024 ** 2
NAMES = ("fleet-a", "fleet-b")
LAB = dict(disks=2, disk_bytes=512 * MiB, model="custom:iops=400,bw=100M", extra_disks=0, memory_mib=2048)
SPEC = {"name": "fleetlab", "question": "Do two labs share one sweep's blocks?", "surface": "zvol", "host": "lab",
        "lab": {"disks": 2, "disk_size": "512M", "model": "custom:iops=400,bw=100M", "count": 2},
        "factors": {"layout": ["stripe", "mirror"], "disks": [2], "volblocksize": ["16k"]},
        "target": {"volsize": "64M", "compression": "off", "primarycache": "metadata"},
        "workloads": [{"name": "randread", "template": "randread",
                       "overrides": {"runtime_s": 3, "ramp_time_s": 1, "iodepth": 4, "numjobs": 1}}],
        "repetitions": {"fixed": 2, "pool_replicates": 2}, "seed": 7}


@pytest.fixture(scope="module")
def labs():
    if os.environ.get("ZBENCH_SKIP_LAB"):
        pytest.skip("ZBENCH_SKIP_LAB is set")
    with Lab(LabConfig(**LAB, name=NAMES[0])) as a, Lab(LabConfig(**LAB, name=NAMES[1])) as b:
        yield a, b


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "fleetlab.yaml"
    path.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    return path


def _start(spec, out, sweep_id="", resume=""):
    env = dict(os.environ, ZBENCH_LABS=",".join(NAMES))
    env.pop("ZBENCH_CRASH_AT", None)
    code = ("import sys\nfrom zbench_lib.sweeps.running.executor import run_sweep\n"
            "print(run_sweep(sys.argv[1], sys.argv[2], sweep_id=sys.argv[3] or None, resume_dir=sys.argv[4] or None,"
            " progress=False))\n")
    return subprocess.Popen([sys.executable, "-c", code, str(spec), str(out), sweep_id, resume], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc, timeout=900):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out, err


def _events(sweep: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep / "events.jsonl").read_text().splitlines() if line.strip()]


def _wait_for(predicate, timeout=600, what=""):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.5)


def _no_pools_left(labs):
    for lab in labs:
        assert find_leftovers(lab.host) == [], f"pools left on {lab.cfg.name}"


def _planned(sweep: Path) -> set[str]:
    return {r["run_id"] for r in json.loads((sweep / "plan.json").read_text())["runs"]}


def test_a_two_lab_fleet_runs_whole_blocks_on_both_and_refuses_a_second_controller(labs, spec, tmp_path):
    out = tmp_path / "sweeps"
    first = _start(spec, out, "one")
    sweep = out / "one"
    _wait_for(lambda: (sweep / "events.jsonl").exists()
              and any(e["event"] == Event.POOL_CREATED for e in _events(sweep)), what="a pool")
    t0 = time.monotonic()
    second = _start(spec, out, "two")
    _, err = second.communicate(timeout=300)
    assert second.returncode != 0 and not (out / "two").exists()
    assert "is busy: zbench sweep one from" in err and "holds /run/zbench.lock" in err, err[-2000:]
    assert time.monotonic() - t0 < 240             # refused at open, before any pool (a loaded machine: slow ssh)
    _finish(first)
    df = pd.read_parquet(sweep / "results.parquet")
    assert set(df["host"]) == {"lab1", "lab2"}
    assert set(df["run_id"]) >= _planned(sweep)        # (the rule may add a run to replace an excluded one)
    events = _events(sweep)
    by_block: dict = {}
    for e in (e for e in events if e["event"] == Event.POOL_DISPATCHED):
        by_block.setdefault(e["block"], set()).add(e["host"])
    assert sorted(len(h) for h in by_block.values()) == [1, 1], by_block
    assert {e["host"] for e in events if e["event"] == Event.HOST_FINGERPRINT} == {"lab1", "lab2"}
    _no_pools_left(labs)


def test_a_worker_killed_mid_pool_gives_its_pool_to_the_next_free_host(labs, spec, tmp_path):
    out = tmp_path / "sweeps"
    proc = _start(spec, out, "kill")
    staging = out / ".kill.staging"

    def lab1_running():
        if not staging.is_dir():
            return False
        for d in staging.iterdir():
            host = (d / "HOST").read_text().split()[0] if (d / "HOST").exists() else ""
            staged = (d / "events.jsonl").read_text() if (d / "events.jsonl").exists() else ""
            if host == "lab1" and '"run started"' in staged:
                return d
        return False

    _wait_for(lab1_running, what="a run on lab1")
    pid = int(lab1_running().name.rsplit("-", 1)[1])          # the worker's pid names its staging directory
    os.kill(pid, signal.SIGKILL)
    _finish(proc)
    sweep = out / "kill"
    events = _events(sweep)
    (lost,) = [e for e in events if e["event"] == Event.POOL_LOST]
    assert lost["host"] == "lab1" and lost["requeued"] and "KilledWorker" in lost["reason"]
    assert any(e["event"] == Event.RUN_DISCARDED and e.get("host") == "lab1" for e in events)
    again = [e for e in events if e["event"] == Event.POOL_DISPATCHED and e["pool_id"] == lost["pool_id"]]
    assert [e["host"] for e in again] == ["lab1", "lab2"]          # re-queued on the other host
    returned = [e for e in events if e["event"] == Event.POOL_RETURNED]
    assert sorted(e["pool_id"] for e in returned) == sorted({e["pool_id"] for e in returned})   # each pool once
    df = pd.read_parquet(sweep / "results.parquet")
    assert set(df["run_id"]) >= _planned(sweep)        # (the rule may add a run to replace an excluded one)
    assert df.groupby("run_id").size().max() <= 2               # one attempt per run (a read and a write row at most)
    _no_pools_left(labs)


def test_a_killed_controller_resumes_with_only_what_is_missing(labs, spec, tmp_path):
    out = tmp_path / "sweeps"
    proc = _start(spec, out, "ctl")
    sweep = out / "ctl"
    _wait_for(lambda: (sweep / "events.jsonl").exists()
              and sum(e["event"] == Event.RUN_COMPLETED for e in _events(sweep)) >= 3, what="3 runs")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {e["run_id"] for e in _events(sweep) if e["event"] == Event.RUN_COMPLETED}
    time.sleep(25)              # the killed controller's Dask workers close when they lose their scheduler
    _finish(_start(spec, out, resume=str(sweep)))
    events = _events(sweep)
    resumed_at = max(i for i, e in enumerate(events) if e["event"] == Event.RESUMED)
    after = [e["run_id"] for e in events[resumed_at:] if e["event"] == Event.RUN_COMPLETED]
    assert not set(after) & before, "a run complete before the kill ran again"
    assert set(after) | before >= _planned(sweep)
    df = pd.read_parquet(sweep / "results.parquet")
    assert set(df["run_id"]) >= _planned(sweep) and set(df["host"]) <= {"lab1", "lab2"}
    _no_pools_left(labs)
