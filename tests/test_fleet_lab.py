"""A sweep on a fleet of two labs (issue 29), with real OpenZFS: one sweep, four behaviours.

The fleet is the session's lab (tests/conftest.py) and a second lab of the same shape, booted
for this module alongside it (fingerprints equal: one fleet). One sweep runs in a child process,
as `zbench sweep` runs it; while it runs, a second controller is started through the CLI (the
on-host lock refuses it in one line) and the Dask worker of the second lab is killed at its
first run (its pool goes to the other host). The tests then read what the sweep left:
- every planned run has exactly one row, naming the host that ran it; which lab that was is
  read from the run's own raw record (the QEMU pid its context names, the test's own labs' pids);
- a host never ran two runs at once (the store's event timestamps), and the two hosts ran at once;
- the second controller was refused in one line naming the host (the fleet's name and the lab's)
  and the sweep that holds it, before it created anything (the CLI's pre-flight looks at the locks);
- the lost pool was discarded on its host, re-run on the other, and no pool was left on either lab.
A second sweep of the same spec has its controller SIGKILLed once its first run is committed, and is
resumed: the resume runs only what was missing (no run committed before the kill is run again), every
planned run has one row, and no pool is left on either lab.

Kept short for `make test`'s budget: one booted lab (the session's is reused), one-disk pools of a
32M zvol, 2 s windows, one run per pool, four pool replicates (whole blocks to each host, and one
left for the host that lost its pool whatever the two hosts' pace), then the killed controller's
sweep. About 4 min of lab time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import LAB_TEST_CONFIG, own_lab, sweep_child, wait_lock_free
from zbench_lib.core.events import Event
from zbench_lib.hosts.lab import LabConfig
from zbench_lib.zfs.pools import find_leftovers

ROOT = Path(__file__).resolve().parent.parent
SECOND_LAB = "pytest-fleet"
FLEET_LAB = LabConfig(**dict(LAB_TEST_CONFIG, name=SECOND_LAB))     # the session lab's shape
# idle_labs_ok: rows, hosts, event order, a refusal and a requeue; one run a cell whatever a
# busy machine flags (SPEC), so the labs of the modules after it may wait up beside it.
pytestmark = [pytest.mark.lab, pytest.mark.boots(FLEET_LAB, idle_labs_ok=True)]
SWEEP_ID = "fleet"
REPLICATES = 4
SPEC = {"name": "fleetlab", "question": "Does a fleet of two labs run every pool once, one pool a host?",
        "surface": "zvol", "host": "lab",
        # the session lab's shape (tests/conftest.py); the pools use one of its disks
        "lab": {"disks": 1, "disk_size": "1G", "model": "custom:iops=400,bw=100M", "count": 2},
        "factors": {"layout": ["stripe"], "disks": [1], "volblocksize": ["16k"]},
        "target": {"volsize": "32M", "compression": "off", "primarycache": "metadata"},
        "workloads": [{"name": "randread", "template": "randread",
                       "overrides": {"runtime_s": 2, "ramp_time_s": 1, "bs": "16k", "iodepth": 4, "numjobs": 1}}],
        # one run a cell and no replacement: exactly the planned runs, whatever a busy machine flags
        "repetitions": {"fixed": 1, "max_attempts": 1, "pool_replicates": REPLICATES}, "seed": 7}


@pytest.fixture(scope="module")
def fleet_labs(lab):
    """(lab1, lab2): the session's lab and a second one of its shape."""
    with own_lab(FLEET_LAB) as second:
        yield lab, second


@dataclass(frozen=True)
class FleetRun:
    """What the module's sweep left, and what the test did to it."""
    sweep: Path
    events: tuple[dict, ...]
    rows: pd.DataFrame
    planned: frozenset[str]                     # plan.json's run ids
    measured_on: dict                           # run id -> the lab whose QEMU its raw record names
    killed_host: str
    controller_pid: int
    refusal: subprocess.CompletedProcess        # the second controller's
    refused_out: Path                           # where the second controller was told to write
    leftovers: dict                             # lab name -> zbench pools on it after the sweep


def _events(sweep: Path, strict: bool = False) -> list[dict]:
    path = sweep / "events.jsonl"
    out = []
    for line in path.read_text().splitlines() if path.exists() else ():
        try:
            out.append(json.loads(line))
        except ValueError:
            if strict:
                raise
            # the line being written
    return out


def _wait_for(predicate, proc: subprocess.Popen, log: Path, what: str, timeout: float = 600):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert proc.poll() is None, f"the sweep ended (exit {proc.returncode}) before {what}:\n" \
                                    f"{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.5)
    return found


def _worker_mid_run(staging: Path, host: str) -> int | None:
    """The pid of the Dask worker running a pool on `host` once a run of it started, else None."""
    for d in sorted(staging.iterdir()) if staging.is_dir() else ():
        try:
            staged_host = (d / "HOST").read_text().split()[0]
            staged = (d / "events.jsonl").read_text()
        except (OSError, IndexError):
            continue                            # being made, or already committed and removed
        if staged_host == host and f'"{Event.RUN_STARTED.value}"' in staged:
            return int(d.name.rsplit("-", 1)[1])    # staging.new_execution: the worker's pid comes last
    return None


def _measured_on(sweep: Path, labs) -> dict:
    """run id -> lab1 or lab2, by the QEMU pid in the context of the run's complete attempt."""
    names = {lab.proc.pid: f"lab{i}" for i, lab in enumerate(labs, 1)}     # ZBENCH_LABS' order
    out = {}
    for complete in (sweep / "raw").glob("*/attempt-*/COMPLETE"):
        context = json.loads((complete.parent / "run.json").read_text())["context"]
        out[complete.parent.parent.name] = names.get(context["qemu_pid"], f"QEMU pid {context['qemu_pid']}")
    return out


@contextlib.contextmanager
def _reaped(proc: subprocess.Popen):
    """`proc`, killed on the way out if a failed check left it running."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _cli_sweep(spec: Path, out: Path, labs: str) -> subprocess.Popen:
    """`zbench sweep SPEC` on the labs named, as a user starts it (its one-line errors on stderr)."""
    argv, env = sweep_child(spec, out, cli=True, ZBENCH_LABS=labs)
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def fleet(fleet_labs, start_sweep, tmp_path_factory) -> FleetRun:
    """The module's one sweep, with a second controller started and lab2's worker killed while it runs."""
    tmp = tmp_path_factory.mktemp("fleet")
    spec, out, log, refused_out = tmp / "fleetlab.yaml", tmp / "sweeps", tmp / "controller.log", tmp / "second"
    spec.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    labs = ",".join(lab.cfg.name for lab in fleet_labs)         # lab1: the session's, lab2: the second
    sweep = out / SWEEP_ID
    with _reaped(start_sweep(spec, out, SWEEP_ID, log, ZBENCH_LABS=labs)) as controller:
        # The store is made once every host is locked: the second controller starts then, its whole
        # start-up (CLI, notebook kernel, probing the labs) well inside the first one's pools.
        _wait_for(lambda: any(e["event"] == Event.STARTED for e in _events(sweep)), controller, log, "the store")
        with _reaped(_cli_sweep(spec, refused_out, labs)) as second:
            worker = _wait_for(lambda: _worker_mid_run(out / f".{SWEEP_ID}.staging", "lab2"), controller, log,
                               "a run on lab2")
            os.kill(worker, signal.SIGKILL)
            refusal_out, refusal_err = second.communicate(timeout=600)
        controller.wait(timeout=900)
    assert controller.returncode == 0, log.read_text()[-5000:]
    return FleetRun(sweep=sweep, events=tuple(_events(sweep, strict=True)),
                    rows=pd.read_parquet(sweep / "results.parquet"),
                    planned=frozenset(r["run_id"] for r in json.loads((sweep / "plan.json").read_text())["runs"]),
                    measured_on=_measured_on(sweep, fleet_labs), killed_host="lab2", controller_pid=controller.pid,
                    refusal=subprocess.CompletedProcess(second.args, second.returncode, refusal_out, refusal_err),
                    refused_out=refused_out,
                    leftovers={f"lab{i}": find_leftovers(lab.host) for i, lab in enumerate(fleet_labs, 1)})


def _run_spans(events) -> dict:
    """host -> its runs' (start, end) timestamps, sorted: an attempt from "run started" to "run completed",
    or to "run discarded" (its worker killed); the host from its "run judged" or "run discarded".
    The timestamps are fixed-width UTC text: they sort as they compare."""
    start, end, host = {}, {}, {}
    for e in events:
        key = (e.get("run_id"), e.get("attempt"))
        if e["event"] == Event.RUN_STARTED:
            start[key] = e["ts"]
        elif e["event"] in (Event.RUN_COMPLETED, Event.RUN_DISCARDED):
            end[key] = e["ts"]
        if e["event"] in (Event.RUN_JUDGED, Event.RUN_DISCARDED):
            host[key] = e["host"]
    assert set(start) == set(end) == set(host), "an attempt without its end or its host"
    return _by_host((host[k], start[k], end[k]) for k in start)


def _pool_spans(events) -> dict:
    """host -> the (start, end) timestamps of the pools it held, sorted: from "pool dispatched" to
    "pool returned" or "pool lost"."""
    held, spans = {}, []
    for e in events:
        if e["event"] == Event.POOL_DISPATCHED:
            held[e["pool_id"]] = (e["host"], e["ts"])
        elif e["event"] in (Event.POOL_RETURNED, Event.POOL_LOST) and e["pool_id"] in held:
            host, since = held.pop(e["pool_id"])
            spans.append((host, since, e["ts"]))
    assert not held, f"pools dispatched and never back: {sorted(held)}"
    return _by_host(spans)


def _by_host(spans) -> dict:
    out: dict = {}
    for host, start, end in spans:
        out.setdefault(host, []).append((start, end))
    return {host: sorted(s) for host, s in out.items()}


def _disjoint(spans: list) -> bool:
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def test_every_planned_run_has_one_row_naming_the_host_that_ran_it(fleet):
    assert len(fleet.planned) == REPLICATES                 # 1 configuration x 4 pool replicates x 1 run
    rows = fleet.rows
    assert sorted(rows["run_id"]) == sorted(fleet.planned)  # each planned run, once (randread: one row)
    assert dict(zip(rows["run_id"], rows["host"])) == fleet.measured_on
    assert set(rows["host"]) == {"lab1", "lab2"}


def test_a_host_never_ran_two_runs_at_once_and_the_two_hosts_ran_together(fleet):
    runs = _run_spans(fleet.events)
    assert set(runs) == {"lab1", "lab2"}
    assert sum(len(s) for s in runs.values()) == REPLICATES + 1          # the planned runs and the cut-off one
    for host, spans in runs.items():
        assert _disjoint(spans), f"{host} ran two runs at once: {spans}"
    pools = _pool_spans(fleet.events)
    for host, spans in pools.items():
        assert _disjoint(spans), f"{host} held two pools at once: {spans}"
    assert any(a[0] < b[1] and b[0] < a[1] for a in pools["lab1"] for b in pools["lab2"]), \
        "the two hosts never held a pool at the same time"


def test_a_second_controller_is_refused_by_the_on_host_lock_in_one_line(fleet):
    res = fleet.refusal
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr[-3000:]
    assert re.fullmatch(rf"zbench: lab1 \(lab:\S+\) is busy: zbench sweep {SWEEP_ID} from \S+ pid "
                        rf"{fleet.controller_pid} token [0-9a-f]+ holds /run/zbench\.lock \(one sweep at a time on a "
                        r"host\)", lines[0]), res.stderr[-3000:]
    assert not fleet.refused_out.exists()           # refused before anything was written: no log, no notebook


def test_a_host_lost_mid_pool_sends_its_pool_to_the_other_host(fleet):
    (lost,) = [e for e in fleet.events if e["event"] == Event.POOL_LOST]
    assert lost["host"] == fleet.killed_host and lost["requeued"] and "KilledWorker" in lost["reason"]
    dispatched = [e["host"] for e in fleet.events if e["event"] == Event.POOL_DISPATCHED
                  and e["pool_id"] == lost["pool_id"]]
    assert dispatched == ["lab2", "lab1"]
    (discarded,) = [e for e in fleet.events if e["event"] == Event.RUN_DISCARDED]
    assert discarded["host"] == "lab2" and discarded["run_id"] in fleet.planned
    assert lost["discarded_runs"] == [discarded["run_id"]]
    # its run was measured again, on the other lab, once
    assert list(fleet.rows.loc[fleet.rows["run_id"] == discarded["run_id"], "host"]) == ["lab1"]
    assert fleet.measured_on[discarded["run_id"]] == "lab1"
    assert fleet.leftovers == {"lab1": [], "lab2": []}


@dataclass(frozen=True)
class KilledFleet:
    """A fleet sweep whose controller was SIGKILLed, then resumed."""
    events: tuple[dict, ...]
    rows: pd.DataFrame
    planned: frozenset[str]
    committed_at_kill: frozenset[str]           # the runs the store held complete when the controller died
    resume: subprocess.CompletedProcess
    leftovers: dict


def _completed(sweep: Path) -> frozenset[str]:
    return frozenset(e["run_id"] for e in _events(sweep) if e["event"] == Event.RUN_COMPLETED)


@pytest.fixture(scope="module")
def killed_fleet(fleet, fleet_labs, start_sweep, tmp_path_factory) -> KilledFleet:
    """The module's spec again on both labs, its controller killed (SIGKILL: nothing of it runs its
    teardown) once its first run is committed; then resumed as a user would, once the labs' locks went."""
    tmp = tmp_path_factory.mktemp("killed")
    spec, out, log = tmp / "fleetlab.yaml", tmp / "sweeps", tmp / "controller.log"
    spec.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    labs = ",".join(lab.cfg.name for lab in fleet_labs)
    sweep = out / "killed"
    with _reaped(start_sweep(spec, out, "killed", log, ZBENCH_LABS=labs)) as controller:
        _wait_for(lambda: _completed(sweep), controller, log, "a committed run")
        os.kill(controller.pid, signal.SIGKILL)
        controller.wait(timeout=60)
    committed = _completed(sweep)
    for lab in fleet_labs:          # its sessions' commands stopped on each host, then the lock goes
        wait_lock_free(lab.host, timeout=300)
    argv, env = sweep_child(spec, out, resume=sweep, ZBENCH_LABS=labs)
    resume = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200)
    assert resume.returncode == 0, resume.stderr[-5000:]
    return KilledFleet(events=tuple(_events(sweep, strict=True)), rows=pd.read_parquet(sweep / "results.parquet"),
                       planned=frozenset(r["run_id"] for r in json.loads((sweep / "plan.json").read_text())["runs"]),
                       committed_at_kill=committed, resume=resume,
                       leftovers={f"lab{i}": find_leftovers(lab.host) for i, lab in enumerate(fleet_labs, 1)})


def test_a_killed_controller_is_resumed_running_only_what_was_missing(killed_fleet):
    k = killed_fleet
    assert k.committed_at_kill and k.committed_at_kill < k.planned, \
        f"killed after {len(k.committed_at_kill)} of {len(k.planned)} runs: nothing left to resume"
    assert sorted(k.rows["run_id"]) == sorted(k.planned)              # each planned run, once
    (resumed_at,) = [i for i, e in enumerate(k.events) if e["event"] == Event.RESUMED]
    started_after = {e["run_id"] for e in k.events[resumed_at:] if e["event"] == Event.RUN_STARTED}
    assert started_after and not started_after & k.committed_at_kill, (sorted(started_after),
                                                                      sorted(k.committed_at_kill))
    # every planned run complete exactly once in the store: the resume measured no run twice
    completed = [e["run_id"] for e in k.events if e["event"] == Event.RUN_COMPLETED]
    assert sorted(completed) == sorted(k.planned), completed
    assert k.leftovers == {"lab1": [], "lab2": []}
