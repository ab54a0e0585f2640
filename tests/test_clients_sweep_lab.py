"""A sweep whose load comes from client VMs on one NFS datastore (issue 30), end to end through the executor.

A tiny spec (one 1-disk stripe, one dataset, randwrite for 3 s, `clients: [1, 2]`: a cell with one
client and one with two, one run each) runs on the session's lab as `zbench sweep` runs it: the sweep
boots two client labs beside the session lab, exports the dataset once, mounts it on both, starts their
fio servers and measures each cell from its first k clients. Checked: a result row per cell, the
aggregate of its clients, with the clients' columns; clients.parquet with a row per client of each run;
the raw record of every run (the controller's report, both clock readings of each client, the storage
node's counters) and a window inside the run on the storage node's clock; the packed sweep verifies
(results, histograms and clients.parquet rebuilt from raw). Afterwards nothing is left: no client lab
running, no NFS forward on the session lab, nothing exported, no pool, no controller fio, no scratch
directory; the same after a SIGTERM in the middle of a run (`zbench sweep` exits 143).

Run: PYTHONPATH=. .venv/bin/python -m pytest -m lab tests/test_clients_sweep_lab.py (about 15-20 min on
a 2-core machine: two client labs booted per test, one after another).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.events import Event
from zbench_lib.hosts.lab_state import read_state
from zbench_lib.zfs.pools import find_leftovers

from conftest import LAB_TEST_CONFIG, sweep_child, wait_lock_free

pytestmark = pytest.mark.lab
SPEC = """\
name: clients-lab
question: Do two client VMs on one NFS datastore give a row per client and their aggregate?
surface: dataset
host: lab
lab: {disks: 1, disk_size: 1G, model: "custom:iops=400,bw=100M", extra_disks: 0}
factors:
  layout: [stripe]
  disks: [1]
  clients: [1, 2]
target: {size: 32M, recordsize: 16k, compression: "off", sync: standard, access: nfs}
workloads:
  - {name: randwrite, overrides: {runtime_s: 3, ramp_time_s: 1, bs: 16k, numjobs: 1, iodepth: 2}}
repetitions: {fixed: 1, max_attempts: 1, metric: iops}
prefill: {fill: whole, policy: once-per-target}
order: as-written
seed: 30
"""
CLIENT_LABS = [f"{LAB_TEST_CONFIG['name']}-cl{i}" for i in (1, 2)]
NFS_PORT = 2049


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "clients-lab.yaml"
    path.write_text(SPEC)
    return path


def _events(sweep_dir: Path) -> list[dict]:
    path = sweep_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _nothing_left(lab, lab_host, started: float) -> None:
    """No client lab, no NFS forward, no export, no pool, no controller fio, no scratch directory."""
    assert [n for n in CLIENT_LABS if read_state(n) is not None] == []
    qemus = subprocess.run(["pgrep", "-af", "zbench-lab-pytest-cl"], capture_output=True, text=True).stdout
    assert qemus.strip() == "", qemus
    usernet = lab.qmp("human-monitor-command", **{"command-line": "info usernet"})
    assert [f for f in usernet.splitlines() if "HOST_FORWARD" in f and f" {NFS_PORT} " in f] == [], usernet
    exported = lab_host.run(["exportfs", "-v"]).stdout
    assert "/zbench" not in exported, exported
    assert find_leftovers(lab_host) == []
    controller = subprocess.run(["pgrep", "-af", "fio --output-format=json\\+"], capture_output=True, text=True)
    assert controller.stdout.strip() == "", controller.stdout
    scratch = [p for p in Path("/tmp").glob("zbench-clients-*") if p.stat().st_mtime >= started]
    assert scratch == [], scratch


def test_a_clients_sweep_gives_the_aggregate_and_a_row_per_client_and_leaves_nothing(lab, lab_host,
                                                                                      sweep_on_lab, tmp_path):
    from zbench_lib.sweeps.store.publish import pack, verify

    started = time.time()
    res = sweep_on_lab(_spec(tmp_path), tmp_path, "clients")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "clients"
    df = pd.read_parquet(sweep_dir / "results.parquet")
    clients = pd.read_parquet(sweep_dir / "clients.parquet")
    print("\n", df[["run_id", "clients", "iops", "clat_p99_ns", "client_skew_ms", "client_iops_min_share",
                    "client_iops_max_share", "client_clock_uncertainty_ms", "flagged" if "flagged" in df else
                    "truth_flags"]].to_string(), "\n", clients.to_string())
    # a row per cell (writes only), the aggregate of its clients
    assert len(df) == 2 and sorted(df["clients"]) == [1, 2] and set(df["direction"]) == {"write"}
    assert (df["iops"] > 0).all() and (df["total_ios"] > 0).all()
    one, two = (df[df["clients"] == k].iloc[0] for k in (1, 2))
    assert one["client_iops_min_share"] == 1.0 == one["client_iops_max_share"]
    assert 0 < two["client_iops_min_share"] <= 0.5 <= two["client_iops_max_share"] < 1
    assert two["client_skew_ms"] >= 0 and 0 < two["client_window_overlap"] <= 1
    # clients.parquet: c1 alone, then c1 and c2; each wrote, its share, its clock
    by_run = clients.groupby("run_id")["client"].apply(sorted).to_dict()
    assert by_run == {one["run_id"]: ["c1"], two["run_id"]: ["c1", "c2"]}
    assert (clients["iops"] > 0).all() and (clients["total_ios"] > 0).all()
    assert clients["clock_offset_ms"].map(math.isfinite).all()
    assert (clients["clock_uncertainty_ms"] < 5000).all()
    # the aggregate is the clients' sum: the clients' I/O counts add up to the row's
    two_rows = clients[clients["run_id"] == two["run_id"]]
    assert two_rows["total_ios"].sum() == two["total_ios"]
    # each run's raw record: the controller's report, the clocks at both ends, the storage node's counters
    for run_json in (sweep_dir / "raw").rglob("run.json"):
        attempt = run_json.parent
        rec = json.loads(run_json.read_text())
        clocks = json.loads((attempt / "clients" / "clocks.json").read_text())
        n = len(rec["clients"]["endpoints"])
        assert len(clocks["start"]) == n == len(clocks["end"])
        assert (attempt / "clients" / "fio.json").is_file() and (attempt / "counters").is_dir()
        assert not (attempt / "fio").exists()           # no fio ran on the storage node
        assert rec["t0"] - 2 <= rec["t_start"] < rec["t_end"] <= rec["t1"] + 2, rec
    mounted = [e for e in _events(sweep_dir) if e["event"] == Event.NFS_DATASTORE_MOUNTED]
    assert len(mounted) == 1 and mounted[0]["clients"] == ["c1", "c2"]
    assert all(o and "vers=4.2" in o for o in mounted[0]["mount_options"].values()), mounted
    # packed, it verifies: results, histograms and clients.parquet rebuilt from raw alone
    verify(pack(sweep_dir, tmp_path / "packed"))
    _nothing_left(lab, lab_host, started)


def test_sigterm_mid_run_takes_everything_down(lab, lab_host, tmp_path):
    started = time.time()
    argv, env = sweep_child(_spec(tmp_path), tmp_path / "out", cli=True, ZBENCH_LAB=LAB_TEST_CONFIG["name"])
    with open(tmp_path / "sweep.log", "w") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 1500
        while time.monotonic() < deadline and proc.poll() is None:
            dirs = list((tmp_path / "out").glob("*"))
            if dirs and any(e["event"] == Event.RUN_STARTED for e in _events(dirs[0])):
                break
            time.sleep(0.5)
        assert proc.poll() is None, (tmp_path / "sweep.log").read_text()[-3000:]
        time.sleep(1.5)                                  # inside the run's fio --client call
        os.kill(proc.pid, signal.SIGTERM)
        rc = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 128 + signal.SIGTERM, (tmp_path / "sweep.log").read_text()[-3000:]
    wait_lock_free(lab_host)
    _nothing_left(lab, lab_host, started)
