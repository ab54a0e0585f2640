"""A sweep on a fleet of hosts (issue 29), without a lab: the fleet's checks (fingerprints, one
machine under two names, mixed releases, the labs' memory), block-to-host assignment, the on-host
lock (a real controller process killed: its worker ends, and what it started on the host is stopped
before the lock goes), the staging store and its commit, and the dispatch on REAL Dask workers (a
SpecCluster of two Nanny workers on this machine) with a trivial picklable task: resources keep one
pool per host, a worker killed mid-pool gives its pool to the next free host and its cut-off
attempt is discarded. No result is ever produced without a lab: tests/test_fleet_lab.py runs real pools.

The malformed fleet specs are in tests/test_malformed_inputs.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from types import SimpleNamespace

import cloudpickle
import pytest
import yaml

from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.core.events import Event
from zbench_lib.hosts import host_lock
from zbench_lib.hosts.base import LocalHost
from zbench_lib.hosts.fleet import LAB, Fingerprint, HostEntry, check_fleet, check_lab_cores, check_lab_count, \
    lab_cores, \
    meminfo_available_mib, read_fingerprint
from zbench_lib.hosts.host_lock import HostBusy, HostLock, LockOwner, check_free, gate, owned_by
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.running.pool_request import pool_requests
from zbench_lib.sweeps.running.fleet import Dispatcher, fleet_client
from zbench_lib.sweeps.running.fleet_open import OpenFleet, blocks_line, labs_to_boot
from zbench_lib.sweeps.running.fleet_worker import PoolDone, pool_plan
from zbench_lib.sweeps.running.host_queue import HostQueue, idle_hosts
from zbench_lib.sweeps.running.staging import COMMITTED, Committer, new_execution, staged_executions
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store

SPEC = {"name": "fleet", "question": "Does a fleet run every pool once?", "surface": "zvol", "host": "lab",
        "lab": {"disks": 2, "disk_size": "1G", "model": "hdd", "count": 2},
        "factors": {"layout": ["stripe", "mirror"], "disks": [2], "volblocksize": ["16k"]},
        "target": {"volsize": "128M"},
        "workloads": [{"name": "randread", "overrides": {"runtime_s": 3, "ramp_time_s": 1}}],
        "repetitions": {"fixed": 2, "pool_replicates": 3}, "seed": 3}


def _plan(**changes):
    return expand(parse_spec(yaml.safe_dump({**SPEC, **changes}), name="fleet"))


def _fp(**changes) -> Fingerprint:
    base = dict(cpu_model="Xeon", cpus=2, memory_gib=2, kernel="6.1.0-28-amd64", openzfs="2.3.2-1~bpo12+1",
                fio="fio-3.33", disks=("1073741824 ",) * 2, disk_model="hdd", machine_id="m1", boot_id="b1")
    return Fingerprint(**{**base, **changes})


# -- fingerprints and the fleet's checks ---------------------------------------------------------
def test_identical_hosts_are_one_fleet_and_labs_of_one_image_are_not_one_machine():
    check_fleet([("a", _fp()), ("b", _fp(boot_id="b2"))])       # one image's machine-id, two boots


def test_one_machine_under_two_names_is_refused():
    with pytest.raises(ConfigError, match=r"hosts: a and b are the same machine \(machine-id m1, one boot\)"):
        check_fleet([("a", _fp()), ("b", _fp())])


def test_mixed_releases_are_refused_even_with_host_as_a_factor():
    with pytest.raises(ConfigError, match=r"mixes OpenZFS releases \(a 2.3.2-1~bpo12\+1, b 2.1.15-1\)"):
        check_fleet([("a", _fp()), ("b", _fp(openzfs="2.1.15-1", boot_id="x"))], host_factor=True)
    check_fleet([("a", _fp()), ("b", _fp(openzfs="2.1.15-1", boot_id="x"))], release_factor=True)


@pytest.mark.parametrize("field, value", [("cpu_model", "EPYC"), ("cpus", 4), ("memory_gib", 4),
                                          ("kernel", "6.12"), ("fio", "fio-3.38"), ("disk_model", "ssd"),
                                          ("disks", ("2147483648 ",) * 2), ("openzfs", "2.3.4-1")])
def test_hosts_that_differ_are_refused_unless_host_is_a_factor(field, value):
    other = _fp(boot_id="b2", **{field: value})
    with pytest.raises(ConfigError, match=rf"hosts: a and b differ \({field}: .* vs .*\); .*host_factor: true"):
        check_fleet([("a", _fp()), ("b", other)])
    check_fleet([("a", _fp()), ("b", other)], host_factor=True)


def test_a_fingerprint_is_read_over_the_hosts_commands():
    fp = read_fingerprint(LocalHost(), ())
    assert fp.cpus == os.cpu_count() and fp.memory_gib >= 1 and fp.kernel == os.uname().release
    assert len(fp.machine_id) == 32 and fp.boot_id and fp.release in ("none",) + (fp.release,)


def test_the_lab_count_must_fit_in_memory_and_the_refusal_says_the_numbers():
    check_lab_count(2, 2048, 22_000)
    with pytest.raises(ConfigError, match=r"lab\.count: 9 labs need 25088 MiB \(9 x \(2048 MiB guest \+ 512 MiB "
                                          r"QEMU\) \+ 2048 MiB for the controller\) but this machine has 22000 MiB "
                                          r"available: at most 7 fit"):
        check_lab_count(9, 2048, 22_000)
    assert meminfo_available_mib("MemTotal: 1 kB\nMemAvailable:   2097152 kB\n") == 2048


def test_a_fleet_of_tcg_labs_must_fit_in_the_cores_and_the_refusal_says_the_rule():
    check_lab_cores(2, "tcg", 0, 2)                  # two throttled labs on two cores: a core each
    check_lab_cores(1, "tcg", 8, 2)                  # one lab is never refused: its runs are judged
    check_lab_cores(6, "kvm", 0, 2)                  # KVM runs the guest on the CPU: no emulation to count
    with pytest.raises(ConfigError, match=r"lab\.count: 3 TCG labs want 3\.0 cores when busy \(3 x \(1 of "
                                          r"emulation\)\) but this machine has 2 CPUs: at most 2 run without "
                                          r"starving each other"):
        check_lab_cores(3, "tcg", 0, 2)
    # nbdkit's model counts: two labs of 4 mech: disks want 2 x (1 + 1.2) = 4.4 cores
    with pytest.raises(ConfigError, match=r"2 TCG labs want 4\.4 cores .* \+ 4 mech: disks x 0\.3\).* at most 1 run"):
        check_lab_cores(2, "tcg", 4, 2)
    assert lab_cores("tcg", 2) == pytest.approx(1.6) and lab_cores("kvm", 2) == pytest.approx(0.6)


def test_a_plan_with_fewer_blocks_than_labs_boots_only_the_labs_it_can_use_and_says_so():
    spec = parse_spec(yaml.safe_dump({**SPEC, "repetitions": {"fixed": 2, "pool_replicates": 1},
                                      "lab": {**SPEC["lab"], "count": 3},
                                      "factors": {**SPEC["factors"], "layout": ["mirror"]}}), name="fleet")
    blocks = len(pool_requests(expand(spec)))
    assert blocks == 1 and labs_to_boot(spec, blocks) == 1 and labs_to_boot(spec, None) == 3
    assert blocks_line(spec, blocks) == ("the plan has 1 block (pools) for 3 hosts: 1 of the 3 labs boot; give it "
                                         "more blocks with repetitions.pool_replicates (each replicate a pool of "
                                         "its own)")
    assert blocks_line(spec, 3) is None and labs_to_boot(spec, 5) == 3


# -- blocks to hosts ---------------------------------------------------------------------------------
def test_whole_blocks_go_to_hosts_a_free_host_taking_the_next():
    plan = _plan()
    q = HostQueue.of(pool_requests(plan))
    ran = {"a": [], "b": []}
    for host in ["a", "b", "a", "b", "a", "a"]:
        r = q.next_for(host)
        if r is not None:
            ran[host].append(r)
    assert [r.block for r in ran["a"]] == [1, 1, 3, 3] and [r.block for r in ran["b"]] == [2, 2]
    assert [r.pool_id for r in ran["a"][:2]] == plan.blocks[0]          # the plan's order within a block
    assert q.next_for("b") is None and q.pending() == 0


def test_a_lost_pool_and_the_rest_of_its_block_go_first_to_the_next_free_other_host():
    plan = _plan()
    q = HostQueue.of(pool_requests(plan))
    first = q.next_for("a")
    assert q.give_back("a", first)
    assert q.next_for("a").pool_id == plan.blocks[1][0]         # the host that lost it takes another block
    taken = [q.next_for("b"), q.next_for("b")]
    assert [r.pool_id for r in taken] == [first.pool_id, plan.blocks[0][1]]
    assert q.dispatches[first.pool_id] == 2


def test_a_host_alone_takes_back_the_block_it_lost():
    plan = _plan(repetitions={"fixed": 2, "pool_replicates": 1})
    q = HostQueue.of(pool_requests(plan))
    first = q.next_for("a")
    q.give_back("a", first)
    assert q.next_for("a") is None and q.next_for("a", alone=True).pool_id == first.pool_id


def test_a_pool_lost_too_often_is_not_given_back():
    q = HostQueue(deque([[SimpleNamespace(pool_id="p", block=1)]]))
    for _ in range(3):
        r = q.next_for("a", alone=True)
        kept = q.give_back("a", r)
    assert not kept and q.pending() == 0


def test_fewer_blocks_than_hosts_is_said():
    assert idle_hosts(3, 2) is None
    assert "1 block(s) of pools for 2 hosts: 1 host(s) will idle" in idle_hosts(1, 2)


def test_a_pool_plan_holds_one_pool_and_pickles():
    plan = _plan()
    small = pool_plan(plan, plan.blocks[1][0])
    assert {c.pool_id for c in small.cells} == {plan.blocks[1][0]} and small.blocks == [[plan.blocks[1][0]]]
    assert cloudpickle.loads(cloudpickle.dumps(small)).runs == small.runs


# -- the on-host lock -------------------------------------------------------------------------------
@pytest.fixture
def lock_path(tmp_path, monkeypatch):
    monkeypatch.setattr(host_lock, "LOCK_PATH", str(tmp_path / "zbench.lock"))
    monkeypatch.setattr(host_lock, "OWNER_PATH", str(tmp_path / "zbench.lock.owner"))
    return tmp_path


A, B = LockOwner("sweep A from ctl1", "a1"), LockOwner("sweep B", "b2")


def test_a_second_holder_is_refused_in_one_line_naming_the_first_and_the_host_by_both_names(lock_path):
    host = LocalHost()
    with HostLock(host, A, "lab1 (local)"):
        assert owned_by(host, A) and not owned_by(host, B)
        with pytest.raises(HostBusy, match=r"^lab1 \(local\) is busy: sweep A from ctl1 token a1 holds "
                                           r".*zbench\.lock \(one sweep at a time on a host\)$"):
            HostLock(host, B, "lab1 (local)").acquire()
        with pytest.raises(HostBusy, match=r"^lab1 \(local\) is busy: sweep A"):
            check_free(host, "lab1 (local)")
    check_free(host)
    with HostLock(host, B):                  # released on the way out
        assert owned_by(host, B) and not owned_by(host, A)


def _processes_with(token: str) -> list[int]:
    """Pids of the processes whose environment carries the session token (what the holder stops)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"{host_lock.TAG_ENV}={token}".encode() in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:
            continue                        # gone, or not ours to read
    return found


def _tagged(pid: int, token: str, timeout: float = 10) -> bool:
    """Does `pid` carry the token once it has exec'd its command (just started, it has not yet)?"""
    deadline = time.monotonic() + timeout
    while pid not in _processes_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _ended(pid: int) -> bool:
    """Gone, or a zombie waiting for its reaper (its work ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _free_once_stopped(owner: LockOwner, timeout: float = 30) -> None:
    """Wait until the lock is free, and assert that nothing of `owner`'s session runs by then."""
    start = time.monotonic()
    while True:
        try:
            check_free(LocalHost())
            break
        except HostBusy as exc:
            # its owner while it holds it (then what it is doing), "another process" as it lets go
            assert re.search(rf"{owner.text}|another process", str(exc)), str(exc)
            assert time.monotonic() - start < timeout, "the lock outlived its holder"
            time.sleep(0.2)
    assert _processes_with(owner.token) == [], "the lock was let go while its session still ran on the host"


def test_a_killed_holder_stops_its_sessions_commands_on_the_host_before_its_lock_goes(lock_path):
    doomed = LockOwner("doomed", "d00d")
    code = ("import sys, time\nfrom zbench_lib.hosts import host_lock\nfrom zbench_lib.hosts.base import LocalHost\n"
            f"host_lock.LOCK_PATH = {str(lock_path / 'zbench.lock')!r}\n"
            f"host_lock.OWNER_PATH = {str(lock_path / 'zbench.lock.owner')!r}\n"
            "owner = host_lock.LockOwner('doomed', 'd00d')\nhost = LocalHost()\n"
            "host_lock.HostLock(host, owner).acquire()\nhost.gate = host_lock.gate(owner)\n"
            "print(host.popen(['sleep', '300']).pid, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    sleeper = int(proc.stdout.readline())
    with pytest.raises(HostBusy, match="doomed token d00d holds"):
        HostLock(LocalHost(), B).acquire()
    assert _tagged(sleeper, "d00d"), "the session's command does not carry its token"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _free_once_stopped(doomed)
    assert _ended(sleeper)
    late = LocalHost()                  # a worker of the dead controller, at its next step
    late.gate = gate(doomed)
    with pytest.raises(CommandError, match=r"(?s)exit 125.*its sweep no longer holds this host"):
        late.run(["true"])
    assert not owned_by(late, doomed)


def test_a_holder_killed_on_the_host_leaves_nothing_the_next_holder_would_share_the_host_with(lock_path):
    """A holder killed on the host itself cannot stop its session: the lock goes at once, its marker and
    its session's commands stay. The next holder clears both before it says it holds the lock."""
    lost, host = LockOwner("killed on the host", "dead"), LocalHost()
    orphan = HostLock(host, lost)
    orphan.acquire()
    host.gate = gate(lost)
    sleeper = host.popen(["sleep", "300"]).pid
    assert _tagged(sleeper, lost.token)
    os.kill(int((lock_path / "zbench.lock.owner").read_text().split()[-1]), signal.SIGKILL)   # the holder's sh
    orphan.release()                # its `cat` kept the lock's descriptor: it goes when the input ends
    _until(_free, "the lock outlived its killed holder")
    assert _processes_with(lost.token) == [sleeper] and Path(host_lock.live_path(lost.token)).exists()
    try:
        with HostLock(LocalHost(), B):
            assert _ended(sleeper) and not Path(host_lock.live_path(lost.token)).exists()
            with pytest.raises(CommandError, match=r"(?s)exit 125.*its sweep no longer holds this host"):
                host.run(["true"])
    finally:
        if not _ended(sleeper):             # a failed check leaves nothing running
            os.kill(sleeper, signal.SIGKILL)


def _free() -> bool:
    try:
        check_free(LocalHost())
    except HostBusy:
        return False
    return True


CONTROLLER = """
import sys, time
from zbench_lib.hosts import host_lock
from zbench_lib.hosts.base import LocalHost
from zbench_lib.hosts.fleet import LAB, HostEntry
from zbench_lib.sweeps.running.fleet import fleet_client


def pool(owner, lock_dir, report):
    # a pool's remote step that outlives a dead controller unless something stops it, then its next step
    import os
    from pathlib import Path
    from zbench_lib.core.errors import CommandError
    from zbench_lib.hosts import host_lock
    from zbench_lib.hosts.base import LocalHost
    was, host_lock.LOCK_PATH = host_lock.LOCK_PATH, f"{lock_dir}/zbench.lock"   # the gate's marker is beside it
    try:
        host = LocalHost()
        host.gate = host_lock.gate(owner)
        step = host.popen(["sleep", "300"])
        Path(report).write_text(f"{os.getpid()} {step.pid}\\n")
        step.wait()
        try:
            host.run(["true"])
            outcome = "ran"
        except CommandError as exc:
            outcome = f"refused {exc.returncode}"
        with open(report, "a") as f:
            f.write(outcome + "\\n")
    finally:
        host_lock.LOCK_PATH = was


if __name__ == "__main__":
    lock_dir, report, scheduler = sys.argv[1], sys.argv[2], sys.argv[3] or None
    host_lock.LOCK_PATH, host_lock.OWNER_PATH = f"{lock_dir}/zbench.lock", f"{lock_dir}/zbench.lock.owner"
    owner = host_lock.LockOwner("zbench sweep killed", "c0ffee")
    host_lock.HostLock(LocalHost(), owner).acquire()
    entries = (HostEntry("h1", LAB, "lab-h1"),)
    with fleet_client(entries, scheduler, lambda m: None) as client:
        future = client.submit(pool, owner, lock_dir, report, resources={entries[0].resource: 1}, pure=False)
        time.sleep(600)
"""
KILLED = LockOwner("zbench sweep killed", "c0ffee")


@contextlib.contextmanager
def _controller(tmp_path, lock_path, scheduler: str = ""):
    """A controller process (the host's lock held, one pool's step started through its gate on a Dask
    worker: its own, or one of the cluster at `scheduler`); yields (it, worker pid, step pid, report)."""
    script, report = tmp_path / "controller.py", tmp_path / "report"
    script.write_text(CONTROLLER)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    with open(tmp_path / "controller.log", "w") as log:
        controller = subprocess.Popen([sys.executable, str(script), str(lock_path), str(report), scheduler],
                                      env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while not (report.exists() and report.read_text().endswith("\n")):
            assert controller.poll() is None, (tmp_path / "controller.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the pool never started"
            time.sleep(0.2)
        worker, step = map(int, report.read_text().split())
        assert _tagged(step, KILLED.token)
        yield controller, worker, step, report
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait()


def _until(predicate, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_killed_controller_leaves_no_worker_and_nothing_of_its_pool_running(lock_path, tmp_path):
    """A real controller (its Dask worker on this machine, the host's lock held, a pool's step running
    through the gate) is SIGKILLed: its worker ends, and the step it started on the host is stopped
    before the host's lock goes."""
    with _controller(tmp_path, lock_path) as (controller, worker, step, _):
        controller.send_signal(signal.SIGKILL)
        controller.wait()
        _free_once_stopped(KILLED)
        _until(lambda: _ended(worker) and _ended(step), f"worker {worker} or its step {step} outlived the controller")


def test_a_joined_clusters_worker_goes_on_after_its_controller_died_and_the_host_refuses_it(client, lock_path,
                                                                                           tmp_path):
    """With `--scheduler` the worker is not the controller's to end: killed, the controller's running
    step is stopped on the host, and the worker's next step is refused there (its pool goes no further)."""
    c, _ = client
    with _controller(tmp_path, lock_path, c.scheduler.address) as (controller, worker, step, report):
        controller.send_signal(signal.SIGKILL)
        controller.wait()
        _free_once_stopped(KILLED)
        _until(lambda: len(report.read_text().splitlines()) == 2, "the worker's pool never ended")
        assert report.read_text().splitlines()[1] == "refused 125" and _ended(step) and not _ended(worker)


# -- the CLI's checks of a fleet, before anything is created ---------------------------------------
def _box_spec(tmp_path, *ports: int) -> Path:
    """SPEC on boxes at 127.0.0.1:<port>, written as a file."""
    spec = {k: v for k, v in SPEC.items() if k not in ("host", "lab")}
    spec["hosts"] = [{"host": f"ssh://root@127.0.0.1:{port}", "name": f"b{i}", "devices": ["/dev/zb-a", "/dev/zb-b"]}
                     for i, port in enumerate(ports, 1)]
    path = tmp_path / "boxes.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _closed_port() -> int:
    """A port of this machine where nothing listens (bound, then let go)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli_sweep(argv, capsys) -> tuple[int, str, list[str]]:
    """`zbench ARGV` in this process: its exit code, standard output and standard error's lines."""
    from zbench_lib.cli import main
    rc = main(argv)
    said = capsys.readouterr()
    return rc, said.out, said.err.strip().splitlines()


def test_the_cli_refuses_an_unreachable_fleet_in_one_line_before_anything_is_created(tmp_path, monkeypatch,
                                                                                    capsys):
    from zbench_lib.sweeps.running import fleet_open
    monkeypatch.setattr(fleet_open, "PROBE_WAIT_S", 0.1)        # ssh's refusal is tried again, not waited for
    config = tmp_path / "ssh_config"
    config.write_text("")                                       # no ssh config of the user's in the way
    monkeypatch.setenv("ZBENCH_SSH_CONFIG", str(config))
    port = _closed_port()
    out = tmp_path / "sweeps"
    rc, _, err = _cli_sweep(["sweep", str(_box_spec(tmp_path, port, _closed_port())), "--out", str(out)], capsys)
    assert rc != 0 and len(err) == 1, err
    assert err[0].startswith(f"zbench: host b1 (ssh://root@127.0.0.1:{port}) is unreachable: "), err
    assert not out.exists()


def test_the_cli_refuses_a_locked_fleet_host_in_one_line_naming_its_holder(tmp_path, monkeypatch, capsys, lock_path):
    """A resume (or a second controller) started while a host's lock is held, by a controller or by the
    holder of a killed one still stopping what it left there: one line, and nothing written."""
    from zbench_lib.hosts.node import Node
    from zbench_lib.sweeps.running import fleet_open

    def reached(spec, entry, stack):          # each box is this machine, and answers as a distinct one
        return Node(LocalHost(), entry.data_devices, (), owned=False), _fp(boot_id=entry.name)
    monkeypatch.setattr(fleet_open, "_probe", reached)
    out = tmp_path / "sweeps"
    spec = _box_spec(tmp_path, 2201, 2202)
    with HostLock(LocalHost(), A):
        rc, _, err = _cli_sweep(["sweep", str(spec), "--out", str(out)], capsys)
    assert rc != 0 and len(err) == 1, err
    assert re.fullmatch(r"zbench: b1 \(local\) is busy: sweep A from ctl1 token a1 holds \S+/zbench\.lock "
                        r"\(one sweep at a time on a host\)", err[0]), err
    assert not out.exists()
    rc, said, _ = _cli_sweep(["sweep", str(spec), "--out", str(out), "--dry-run"], capsys)   # free: what was found
    assert rc == 0 and not out.exists()
    assert "host b2 (local): reachable, checked, not locked; 2 CPUs, 2 GiB, OpenZFS 2.3.2-1~bpo12+1" in said


def test_a_dry_run_of_a_fleet_of_labs_the_cores_cannot_serve_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """More TCG labs than the controller's CPUs: refused before anything boots or is written."""
    from zbench_lib.sweeps.running import fleet_open
    monkeypatch.setattr(fleet_open, "planned_accel", lambda requested, zfs: "tcg")   # a controller without KVM
    cpus = os.cpu_count() or 1
    spec = tmp_path / "many.yaml"
    spec.write_text(yaml.safe_dump({**SPEC, "lab": {**SPEC["lab"], "count": cpus + 1},
                                    "repetitions": {"fixed": 1, "pool_replicates": cpus + 1}}))
    out = tmp_path / "sweeps"
    rc, said, err = _cli_sweep(["sweep", str(spec), "--out", str(out), "--dry-run"], capsys)
    assert rc != 0 and len(err) == 1, err
    assert err[0].startswith(f"zbench: lab.count: {cpus + 1} TCG labs want {cpus + 1:.1f} cores when busy"), err
    assert f"this machine has {cpus} CPUs: at most {cpus} run without starving each other" in err[0]
    assert not out.exists()


# -- staging and commit ------------------------------------------------------------------------------
def _store(tmp_path, plan=None):
    plan = plan or _plan()
    return plan, Store.create(tmp_path / "sweeps", plan.spec.text, plan, sweep_id="s")


def _stage_run(staged, run_id: str, complete: bool = True):
    """What a worker's run loop does to its store, with placeholder files (nothing is parsed here)."""
    attempt = staged.begin_attempt(run_id)
    (attempt / "fio").mkdir()
    (attempt / "fio" / "fio.json").write_text("{}")
    if complete:
        staged.complete_attempt(run_id, attempt, {"cell_id": run_id.rsplit("-r", 1)[0], "rep": 1})
        staged.record(Event.RUN_JUDGED, run_id=run_id, attempt=1, invalidating_flags=[], described_flags=[])


def test_staged_work_is_committed_in_order_with_the_host_and_the_stores_attempt_numbers(tmp_path):
    plan, store = _store(tmp_path)
    run = plan.runs[0].run_id
    (store.raw / run / "attempt-1").mkdir(parents=True)        # an earlier cut-off attempt: the store numbers on
    root = tmp_path / "staging"
    staged = new_execution(root, plan.runs[0].pool_id, "lab2", store.events())
    staged.record(Event.POOL_CREATING, pool_id=plan.runs[0].pool_id, pool="zbench-x")
    _stage_run(staged, run)
    assert not (store.raw / run / "attempt-2").exists()         # nothing reaches the store but through the controller
    committer = Committer(store)
    assert committer.commit_all(root) == 4
    attempt = store.raw / run / "attempt-2"
    assert (attempt / "COMPLETE").exists() and (attempt / "fio" / "fio.json").read_text() == "{}"
    meta = json.loads((attempt / "meta.json").read_text())
    assert meta["host"] == "lab2" and meta["attempt"] == 2
    mine = [e for e in store.events() if e.get("run_id") == run or e.get("pool") == "zbench-x"]
    assert [e["event"] for e in mine] == ["pool creating", "run started", "run completed", "run judged"]
    assert mine[0]["host"] == "lab2" and mine[-1]["attempt"] == 2 and mine[-1]["host"] == "lab2"
    assert committer.commit_all(root) == 0                      # committed once
    store.close()


def test_a_lost_execution_has_its_cut_off_attempt_discarded_and_its_staging_removed(tmp_path):
    plan, store = _store(tmp_path)
    root = tmp_path / "staging"
    staged = new_execution(root, plan.runs[0].pool_id, "lab1")
    _stage_run(staged, plan.runs[0].run_id)
    _stage_run(staged, plan.runs[1].run_id, complete=False)
    committer = Committer(store)
    committer.commit_all(root)
    assert committer.close(staged.path, "lab1", lost="KilledWorker") == [plan.runs[1].run_id]
    assert store.completed_runs() == {plan.runs[0].run_id} and not staged.path.exists()
    (d,) = [e for e in store.events() if e["event"] == Event.RUN_DISCARDED]
    assert d["run_id"] == plan.runs[1].run_id and "KilledWorker" in d["reason"] and d["host"] == "lab1"
    store.close()


def test_a_killed_controller_commits_what_was_staged_and_not_handed_over_on_resume(tmp_path):
    plan, store = _store(tmp_path)
    root = tmp_path / "staging"
    staged = new_execution(root, plan.runs[0].pool_id, "lab1")
    _stage_run(staged, plan.runs[0].run_id)
    Committer(store).commit(staged.path, "lab1")
    _stage_run(staged, plan.runs[1].run_id)                    # staged after the controller's last commit
    store.close()
    mark = int((staged.path / COMMITTED).read_text())
    store = Store.resume(store.path, plan.spec.text, plan)     # the controller's successor
    committer = Committer(store)
    for host, d in staged_executions(root):
        committer.close(d, host, lost="the controller stopped")
    assert store.completed_runs() == {plan.runs[0].run_id, plan.runs[1].run_id} and mark > 0
    assert sum(e["event"] == Event.RUN_COMPLETED for e in store.events()) == 2
    store.close()


# -- dispatch on real Dask workers -------------------------------------------------------------------
def _trivial(job):
    """A pool that runs nothing: it stages its pool's name and one run started, notes when it held its
    host, and (the first time on the host named in KILL) kills its own worker mid-pool."""
    staged = new_execution(job.staging_root, job.request.pool_id, job.entry.name, job.known_events)
    staged.record(Event.POOL_CREATING, pool_id=job.request.pool_id, pool=f"zbench-{job.request.pool_id}")
    start = time.time()
    staged.begin_attempt(job.request.targets[0].target_id + "-probe")
    kill = Path(job.staging_root).parent / "KILL"
    if kill.exists() and kill.read_text() == job.entry.name:
        kill.unlink()
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.3)
    with open(Path(job.staging_root).parent / "held.jsonl", "a") as f:
        f.write(json.dumps({"host": job.entry.name, "pool": job.request.pool_id, "start": start,
                            "end": time.time()}) + "\n")
    return PoolDone(job.request.pool_id, job.entry.name, start, time.time(), 0.0)


@pytest.fixture(scope="module")
def client():
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    entries = (HostEntry("h1", LAB, "lab-h1"), HostEntry("h2", LAB, "lab-h2"))
    with fleet_client(entries, None, lambda m: None) as c:
        yield c, entries


def _dispatch(client, tmp_path, kill: str | None = None):
    c, entries = client
    plan, store = _store(tmp_path)
    staging = tmp_path / "sweeps" / ".s.staging"
    if kill:
        (tmp_path / "sweeps" / "KILL").write_text(kill)
    log = []
    done = Dispatcher(c, OpenFleet(entries, (), ()), plan, store, staging, A, log.append,
                      task=_trivial).run(pool_requests(plan))
    held = [json.loads(line) for line in (tmp_path / "sweeps" / "held.jsonl").read_text().splitlines()]
    events = store.events()
    store.close()
    return plan, done, held, events, log


def _never_two_at_once(held):
    for host in {h["host"] for h in held}:
        spans = sorted((h["start"], h["end"]) for h in held if h["host"] == host)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), f"{host} ran two pools at once"


def test_each_host_runs_one_pool_at_a_time_and_whole_blocks(client, tmp_path):
    plan, done, held, events, _ = _dispatch(client, tmp_path)
    assert sorted(d.pool_id for d in done) == sorted(p.pool_id for p in plan.pools)
    _never_two_at_once(held)
    by_block = {}
    for e in (e for e in events if e["event"] == Event.POOL_DISPATCHED):
        by_block.setdefault(e["block"], set()).add(e["host"])
    assert all(len(hosts) == 1 for hosts in by_block.values()), by_block     # the host never splits a block
    assert {h["host"] for h in held} == {"h1", "h2"}
    assert sum(e["event"] == Event.POOL_CREATING for e in events) == len(plan.pools)   # committed, with the host
    assert all(e.get("host") in ("h1", "h2") for e in events if e["event"] == Event.POOL_CREATING)


def test_a_worker_killed_mid_pool_gives_its_pool_to_the_next_free_host(client, tmp_path):
    plan, done, held, events, log = _dispatch(client, tmp_path, kill="h1")
    assert sorted(d.pool_id for d in done) == sorted(p.pool_id for p in plan.pools)   # every pool ran once
    losses = [e for e in events if e["event"] == Event.POOL_LOST]
    assert len(losses) == 1, (losses, log)
    lost = losses[0]
    assert lost["host"] == "h1" and lost["requeued"] and "KilledWorker" in lost["reason"]
    assert lost["discarded_runs"] and lost["discarded_runs"][0].endswith("-probe")
    again = [e for e in events if e["event"] == Event.POOL_DISPATCHED and e["pool_id"] == lost["pool_id"]]
    assert [e["dispatch"] for e in again] == [1, 2] and again[1]["host"] == "h2"     # another host
    _never_two_at_once(held)
    assert any("lost" in line for line in log)


def test_the_terminal_view_shows_each_hosts_pool():
    from zbench_lib.sweeps.watching.progress import SweepProgress
    state = SweepProgress(planned=8)
    for ev in ({"event": "pool dispatched", "pool_id": "p01-pr1", "host": "lab1"},
               {"event": "pool dispatched", "pool_id": "p01-pr2", "host": "lab2"},
               {"event": "pool lost", "pool_id": "p01-pr2", "host": "lab2"},
               {"event": "pool dispatched", "pool_id": "p02-pr1", "host": "lab1"}):
        state.apply(ev)
    assert state.postfix().startswith("lab1:p02-pr1 lab2:lost p01-pr2")


def test_the_analysis_says_which_host_ran_what_and_whether_hosts_agree():
    import pandas as pd
    from zbench_lib.analysis import host_agreement, host_coverage
    rows = [{"run_id": f"c1-pr{k}-r{r}", "config_id": f"c1-pr{k}", "pool_id": f"p01-pr{k}", "pool_replicate": k,
             "host": host, "direction": "read", "iops": iops, "flagged": False}
            for k, host, iops in ((1, "lab1", 100.0), (2, "lab2", 104.0), (3, "lab1", 98.0)) for r in (1, 2)]
    rows += [{"run_id": "c2-pr1-r1", "config_id": "c2-pr1", "pool_id": "p02-pr1", "pool_replicate": 1,
              "host": "lab2", "direction": "read", "iops": 50.0, "flagged": False}]
    df = pd.DataFrame(rows)
    cov = host_coverage(df).set_index("host")
    assert cov.loc["lab1", "runs"] == 4 and cov.loc["lab1", "pools"] == 2 and cov.loc["lab2", "configurations"] == 2
    (agree,) = host_agreement(df).to_dict("records")
    assert agree["configuration"] == "c1" and agree["hosts"] == 2 and agree["agree"] and agree["ratio"] == 1.051
    assert host_coverage(df.drop(columns="host")).empty


def test_coverage_says_which_hosts_ran_each_cell():
    import pandas as pd
    from zbench_lib.analysis import cell_status
    rows = [{"run_id": f"c1-pr{k}-r1", "cell_id": f"c1-pr{k}", "pool_id": f"p01-pr{k}", "pool_replicate": k,
             "host": host, "direction": "read", "iops": 100.0, "flagged": False}
            for k, host in ((1, "lab1"), (2, "lab2"))]
    status = cell_status(pd.DataFrame(rows))
    assert status["hosts"].tolist() == ["lab1, lab2"]
    assert "hosts" not in cell_status(pd.DataFrame(rows).drop(columns="host"))


def test_joining_an_existing_cluster_needs_one_worker_per_host(client):
    from distributed import LocalCluster
    c, entries = client
    address = c.scheduler.address
    with fleet_client(entries, address, lambda m: None) as joined:         # --scheduler ADDRESS
        assert joined.submit(lambda: 1, resources={"host-h2": 1}).result(timeout=60) == 1
    with pytest.raises(ConfigError, match=r"has no worker holding host-h3: start one per host"):
        with fleet_client((HostEntry("h3", LAB, "x"),), address, lambda m: None):
            pass
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, resources={"host-h1": 1},
                      dashboard_address=None) as twice:
        with pytest.raises(ConfigError, match=r"has 2 workers holding host-h1: one worker per host"):
            with fleet_client(entries[:1], twice.scheduler_address, lambda m: None):
                pass
