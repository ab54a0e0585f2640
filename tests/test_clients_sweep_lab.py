"""A sweep whose load comes from client VMs on one NFS datastore (issue 30), end to end through the executor.

A tiny spec (one 1-disk stripe, one dataset, randwrite for 6 s, `clients: [2, 1]` as written: a cell with
two clients, then one with one, one run each) runs on the session's lab as a user runs `zbench sweep`:
the sweep boots two client labs beside the session lab, exports the dataset once, mounts it on both,
starts their fio servers and measures each cell from its first k clients. One sweep checks both
halves, so the client labs boot once: its first run (two clients) is committed, and a SIGTERM inside
its second run takes everything down (`zbench sweep` exits 143). Checked: nothing is left (no client
lab running, no NFS forward on the session lab, nothing exported, no pool, no controller fio, no
scratch directory); the committed run, its tables rebuilt from raw, gives the aggregate row of its
clients with the clients' columns and clients.parquet a row per client; its raw record holds the
controller's report, both clock readings of each client and the storage node's counters, with a
window inside the run on the storage node's clock; the packed sweep verifies.

The iSCSI half is the same with a zvol served as one LUN (`ISCSI_SPEC`: `clients: 2` on two targets,
sync standard then always): the first target's run is committed, its clients log out and its LIO
target goes, the second target is served and logged in to by the same clients, and a SIGTERM inside
its run takes everything down. Checked besides: no LIO target, backstore or iSCSI forward left on the
session lab, each client's region in its job file, the LUN's size and write cache as each client saw it.
"""

from __future__ import annotations

import contextlib
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
  clients: [2, 1]
target: {size: 32M, recordsize: 16k, compression: "off", sync: standard, access: nfs}
workloads:
  - {name: randwrite, overrides: {runtime_s: 6, ramp_time_s: 1, bs: 16k, numjobs: 1, iodepth: 2}}
repetitions: {fixed: 1, pool_replicates: 1, max_attempts: 1, metric: iops}
prefill: {fill: whole, policy: once-per-target}
order: as-written
seed: 30
"""
ISCSI_SPEC = """\
name: iscsi-clients-lab
question: Do two client VMs on one iSCSI LUN give a row per client and their aggregate?
surface: zvol
host: lab
lab: {disks: 1, disk_size: 1G, model: "custom:iops=400,bw=100M", extra_disks: 0}
factors:
  layout: [stripe]
  disks: [1]
  sync: [standard, always]
target: {volsize: 64M, volblocksize: 16k, compression: "off", access: iscsi, clients: 2}
workloads:
  - {name: randwrite, overrides: {runtime_s: 6, ramp_time_s: 1, bs: 16k, numjobs: 1, iodepth: 2}}
repetitions: {fixed: 1, pool_replicates: 1, max_attempts: 1, metric: iops}
prefill: {fill: whole, policy: once-per-target}
order: as-written
seed: 30
"""
CLIENT_LABS = [f"{LAB_TEST_CONFIG['name']}-cl{i}" for i in (1, 2)]
NFS_PORT, ISCSI_PORT = 2049, 3260
MiB = 1024 ** 2


def _spec(tmp_path: Path, text: str = SPEC) -> Path:
    path = tmp_path / "clients-lab.yaml"
    path.write_text(text)
    return path


def _events(sweep_dir: Path) -> list[dict]:
    path = sweep_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _nothing_left(lab, lab_host, started: float) -> None:
    """No client lab, no NFS or iSCSI forward, no export, no LIO target or backstore, no pool, no
    controller fio, no scratch directory."""
    assert [n for n in CLIENT_LABS if read_state(n) is not None] == []
    qemus = subprocess.run(["pgrep", "-af", "zbench-lab-pytest-cl"], capture_output=True, text=True).stdout
    assert qemus.strip() == "", qemus
    usernet = lab.qmp("human-monitor-command", **{"command-line": "info usernet"})
    assert [f for f in usernet.splitlines()
            if "HOST_FORWARD" in f and (f" {NFS_PORT} " in f or f" {ISCSI_PORT} " in f)] == [], usernet
    lio = lab_host.run(["sh", "-c", "ls /sys/kernel/config/target/iscsi /sys/kernel/config/target/core 2>/dev/null; "
                                    "true"]).stdout
    assert "zbench" not in lio and "zb-" not in lio, lio
    exported = lab_host.run(["exportfs", "-v"]).stdout
    assert "/zbench" not in exported, exported
    assert find_leftovers(lab_host) == []
    assert _sweeps_controller_fio() == []
    scratch = [p for p in Path("/tmp").glob("zbench-clients-*") if p.stat().st_mtime >= started]
    assert scratch == [], scratch


def _sweeps_controller_fio() -> list[str]:
    """A sweep's `fio --client` calls on this machine: those working in a sweep's scratch directory
    (client_surface's zbench-clients-*), not another test's fio client on localhost."""
    found = subprocess.run(["pgrep", "-af", "fio --output-format=json\\+"], capture_output=True, text=True).stdout
    out = []
    for line in found.splitlines():
        with contextlib.suppress(OSError):          # ended meanwhile
            if os.readlink(f"/proc/{line.split()[0]}/cwd").startswith("/tmp/zbench-clients-"):
                out.append(line)
    return out


def _wait_for_the_controllers_fio(deadline: float, log_path: Path) -> None:
    """Until the controller runs the run's `fio --client` call: the kill is placed by watching for the
    command, not by a fixed delay (a run's setup, its clocks read, takes a while on a busy machine)."""
    while time.monotonic() < deadline:
        if _sweeps_controller_fio():
            return
        time.sleep(0.1)
    raise AssertionError("the second run's fio --client call never started: " + log_path.read_text()[-3000:])


def _run_until_the_second_run_then_sigterm(spec: Path, out: Path, log_path: Path) -> tuple[int, Path | None]:
    """`zbench sweep` as a user runs it, SIGTERMed inside its second run's fio --client call: (rc, sweep dir)."""
    argv, env = sweep_child(spec, out, cli=True, ZBENCH_LAB=LAB_TEST_CONFIG["name"])
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, sweep_dir, seen = time.monotonic() + 1500, None, []
        while time.monotonic() < deadline and proc.poll() is None:
            # the sweep's directory: papermill's notebook executes beside it (.<sweep>.executing.ipynb), which
            # pathlib's glob("*") lists too, in no fixed order
            dirs = [p for p in out.glob("*") if p.is_dir()]
            sweep_dir = dirs[0] if dirs else None
            starts = sum(e["event"] == Event.RUN_STARTED for e in _events(sweep_dir)) if sweep_dir else -1
            seen.append((time.strftime("%T"), starts))
            if starts >= 2:
                break
            time.sleep(0.5)
        assert proc.poll() is None, (" ".join(f"{t}:{n}" for t, n in seen[-40:]), log_path.read_text()[-3000:])
        print(f"\n{time.strftime('%T')} the second run started")
        _wait_for_the_controllers_fio(deadline=time.monotonic() + 60, log_path=log_path)
        time.sleep(0.5)                                  # inside the run's fio --client call
        print(f"{time.strftime('%T')} fio --client seen; SIGTERM (sweep alive: {proc.poll() is None})")
        os.kill(proc.pid, signal.SIGTERM)
        rc = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    return rc, sweep_dir


def test_a_clients_sweep_gives_the_aggregate_and_a_row_per_client_and_a_sigterm_leaves_nothing(lab, lab_host,
                                                                                                tmp_path):
    """One sweep (two client labs booted once) checks both: its first run (two clients) is committed and
    gives its rows; a SIGTERM inside its second run (one client) takes everything down, exit 143."""
    from zbench_lib.measure.rows import parse_results
    from zbench_lib.sweeps.store.publish import pack, verify
    from zbench_lib.sweeps.store.store import Store

    started = time.time()
    rc, sweep_dir = _run_until_the_second_run_then_sigterm(_spec(tmp_path), tmp_path / "out", tmp_path / "sweep.log")
    assert rc == 128 + signal.SIGTERM, (tmp_path / "sweep.log").read_text()[-3000:]
    wait_lock_free(lab_host)
    _nothing_left(lab, lab_host, started)
    # the derived tables rebuilt from the raw record of the committed run, as a resume or verify does
    Store.open(sweep_dir).rebuild_results(parse_results)
    df = pd.read_parquet(sweep_dir / "results.parquet")
    clients = pd.read_parquet(sweep_dir / "clients.parquet")
    print("\n", df[["run_id", "clients", "iops", "lat_p99_ns", "client_skew_ms", "client_iops_min_share",
                    "client_iops_max_share", "client_clock_uncertainty_ms", "truth_flags"]].to_string(),
          "\n", clients.to_string())
    # the committed run: two clients' aggregate, one row (writes only)
    assert len(df) == 1 and list(df["clients"]) == [2] and list(df["direction"]) == ["write"]
    two = df.iloc[0]
    assert two["iops"] > 0 and two["total_ios"] > 0
    assert 0 < two["client_iops_min_share"] <= 0.5 <= two["client_iops_max_share"] < 1
    assert two["client_skew_ms"] >= 0 and 0 < two["client_window_overlap"] <= 1
    # clients.parquet: c1 and c2, each wrote, its clock read; their I/O counts add up to the aggregate's
    assert sorted(clients["client"]) == ["c1", "c2"] and set(clients["run_id"]) == {two["run_id"]}
    assert (clients["iops"] > 0).all() and (clients["total_ios"] > 0).all()
    assert clients["clock_offset_ms"].map(math.isfinite).all()
    assert (clients["clock_uncertainty_ms"] < 5000).all()
    assert clients["total_ios"].sum() == two["total_ios"]
    # client_hist.parquet: each client's own bins, which summed over the clients are latency_hist.parquet's
    own = pd.read_parquet(sweep_dir / "client_hist.parquet")
    summed = pd.read_parquet(sweep_dir / "latency_hist.parquet").set_index(["run_id", "direction", "bin_ns"])["count"]
    assert sorted(own["client"].unique()) == ["c1", "c2"] and (own["count"] > 0).all()
    assert own.groupby(["run_id", "direction", "bin_ns"])["count"].sum().sort_index().equals(summed.sort_index())
    # the committed run's raw record: the controller's report, the clocks at both ends, the storage node's counters
    for complete in (sweep_dir / "raw").rglob("COMPLETE"):
        attempt = complete.parent
        rec = json.loads((attempt / "run.json").read_text())
        clocks = json.loads((attempt / "clients" / "clocks.json").read_text())
        assert len(clocks["start"]) == len(rec["clients"]["endpoints"]) == len(clocks["end"]) == 2
        assert (attempt / "clients" / "fio.json").is_file() and (attempt / "counters").is_dir()
        assert not (attempt / "fio").exists()           # no fio ran on the storage node
        assert rec["t0"] - 2 <= rec["t_start"] < rec["t_end"] <= rec["t1"] + 2, rec
    mounted = [e for e in _events(sweep_dir) if e["event"] == Event.NFS_DATASTORE_MOUNTED]
    assert len(mounted) == 1 and mounted[0]["clients"] == ["c1", "c2"]
    assert all(o and "vers=4.2" in o for o in mounted[0]["mount_options"].values()), mounted
    # packed, it verifies: results, histograms, clients.parquet and client_hist.parquet rebuilt from raw alone
    verify(pack(sweep_dir, tmp_path / "packed"))


def test_an_iscsi_clients_sweep_logs_out_between_targets_and_a_sigterm_leaves_nothing(lab, lab_host, tmp_path):
    """Two client labs on one shared LUN per target: the first target's run (both clients, each in its
    half) is committed and the clients log out before its target goes; the second target is served and
    logged in to by the same clients; a SIGTERM inside its run takes everything down, exit 143."""
    from zbench_lib.measure.rows import parse_results
    from zbench_lib.sweeps.store.publish import pack, verify
    from zbench_lib.sweeps.store.store import Store

    started = time.time()
    rc, sweep_dir = _run_until_the_second_run_then_sigterm(_spec(tmp_path, ISCSI_SPEC), tmp_path / "out",
                                                           tmp_path / "sweep.log")
    log = (tmp_path / "sweep.log").read_text()[-3000:]
    assert rc == 128 + signal.SIGTERM, log
    wait_lock_free(lab_host)
    _nothing_left(lab, lab_host, started)
    # both targets served and logged in to by both clients: the first one's logout let the second's login in
    logged = [e for e in _events(sweep_dir) if e["event"] == Event.ISCSI_DATASTORE_LOGGED_IN]
    print("\n", json.dumps(logged, indent=1))
    assert len(logged) == 2 and len({e["iqn"] for e in logged}) == 2, log
    for e in logged:
        assert e["clients"] == ["c1", "c2"] and e["lun_bytes"] == {"c1": 64 * MiB, "c2": 64 * MiB}
        assert set(e["client_write_cache"]) == {"c1", "c2"}
        assert all(v in ("write back", "write through") for v in e["client_write_cache"].values())
    Store.open(sweep_dir).rebuild_results(parse_results)
    df = pd.read_parquet(sweep_dir / "results.parquet")
    clients = pd.read_parquet(sweep_dir / "clients.parquet")
    print("\n", df[["run_id", "sync", "clients", "access", "iops", "lat_p99_ns", "client_skew_ms",
                    "client_iops_min_share", "truth_flags"]].to_string(), "\n", clients.to_string())
    assert len(df) == 1 and list(df["clients"]) == [2] and list(df["access"]) == ["iscsi"]
    assert list(df["sync"]) == ["standard"] and df.iloc[0]["iops"] > 0
    assert sorted(clients["client"]) == ["c1", "c2"] and (clients["total_ios"] > 0).all()
    assert clients["total_ios"].sum() == df.iloc[0]["total_ios"]
    # each client in its half of the LUN, on the same device
    [attempt] = [c.parent for c in (sweep_dir / "raw").rglob("COMPLETE")]
    jobs = {p.stem: p.read_text() for p in (attempt / "clients").glob("job-*.fio")}
    assert sorted(jobs) == ["job-c1", "job-c2"]
    assert "\nsize=33554432\n" in jobs["job-c1"] and "offset=" not in jobs["job-c1"]
    assert "\nsize=33554432\n" in jobs["job-c2"] and "\noffset=33554432\n" in jobs["job-c2"]
    assert len({j.split("filename=")[1].split("\n")[0] for j in jobs.values()}) == 1
    verify(pack(sweep_dir, tmp_path / "packed"))
