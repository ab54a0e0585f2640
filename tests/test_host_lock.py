"""The on-host lock's gate and a single host's sweep under the lock (issue 29), without a lab.

The gate is a few words of the shell ssh starts on the host anyway (`host_lock.Gate.shell`); its text
is run here for real by /bin/sh (and bash, the lab's login shell), as the host's shell would run it:
the exact argument list, whatever its quoting, tagged with the session's token, and refused (exit
125) once the marker is gone. The holder stops a gate's shell caught between its test and its exec
(it holds the marker open), and a process carrying the tag as an argument (sudo's, env's), but not a
process whose argument merely contains the gate's text (an ssh client of this machine). A single
host's sweep holds its host's lock around its store (refused before anything is created), through the
one `host_lock.session` a fleet uses too; `zbench sweep` refuses a held host in one line, exit 2.
The lock is a real flock on this machine (its paths in a temporary directory), never a mock; the
host's checks over ssh are stood in for by the local machine. The fleet's own lock tests (a killed
controller, a joined cluster's worker) are in tests/test_fleet.py; the lab's in tests/test_sweep_lab.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from zbench_lib.hosts import host_lock
from zbench_lib.hosts.base import LocalHost
from zbench_lib.hosts.host_lock import GATE_EXIT, GATE_REFUSAL, TAG_ENV, Gate, HostBusy, HostLock, LockOwner, \
    check_free, gate, live_path, owned_by, session
from zbench_lib.hosts.node import Node
from zbench_lib.hosts.ssh import SSHHost
from zbench_lib.sweeps.running import doctor, executor, fleet_open, sweep_host
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

ODD = ["a b", "it's", 'say "hi"', "$HOME", "${X:-y}", "new\nline", "`id`", "$(id)", "*", "", "-n", "\\", ";exit 3",
       "tab\there", "'", '"', "ü"]
# Prints its arguments and the session's tag from its environment, as JSON.
ECHO = [sys.executable, "-c", f"import json, os, sys; print(json.dumps([sys.argv[1:], os.environ.get({TAG_ENV!r})]))"]
SHELLS = ["/bin/sh"] + ([shutil.which("bash")] if shutil.which("bash") else [])
SPEC = {"name": "onehost", "question": "Does one host's sweep hold its host's lock?", "surface": "zvol",
        "host": "lab", "lab": {"disks": 1, "disk_size": "1G", "model": "hdd"},
        "factors": {"layout": ["stripe"], "disks": [1], "volblocksize": ["16k"]}, "target": {"volsize": "32M"},
        "workloads": [{"name": "randread", "overrides": {"runtime_s": 2, "ramp_time_s": 1}}],
        "repetitions": {"fixed": 1, "pool_replicates": 1, "max_attempts": 1}, "seed": 1}
BOX = "ssh://root@bench1"
OTHER = LockOwner("zbench sweep theirs from ctl9 pid 7", "07e5")       # a colleague's sweep


@pytest.fixture
def lock_path(tmp_path, monkeypatch):
    monkeypatch.setattr(host_lock, "LOCK_PATH", str(tmp_path / "zbench.lock"))
    monkeypatch.setattr(host_lock, "OWNER_PATH", str(tmp_path / "zbench.lock.owner"))
    return tmp_path


def _said(res) -> tuple[list, str | None]:
    return json.loads(res.stdout)


# -- the gate's text, run by a real shell ------------------------------------------------------------------
@pytest.mark.parametrize("shell", SHELLS)
def test_the_gates_text_runs_the_exact_argv_tagged_and_refuses_once_the_marker_is_gone(tmp_path, shell):
    g = Gate(str(tmp_path / "zbench.lock.live-feed"), f"{TAG_ENV}=feed")
    text = g.shell([*ECHO, *ODD])
    refused = subprocess.run([shell, "-c", text], capture_output=True, text=True, timeout=60)
    assert (refused.returncode, refused.stdout, refused.stderr) == (GATE_EXIT, "", GATE_REFUSAL + "\n")
    Path(g.marker).touch()
    ran = subprocess.run([shell, "-c", text], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert _said(ran) == [ODD, "feed"]
    os.unlink(g.marker)
    assert subprocess.run([shell, "-c", text], capture_output=True, timeout=60).returncode == GATE_EXIT


def test_through_sudo_the_tag_survives_sudos_reset_environment(tmp_path):
    """sudo resets the environment: the gate puts the tag back with env, inside sudo (a stand-in sudo
    that checks its options and clears the environment as the real one does)."""
    fake = tmp_path / "bin" / "sudo"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\n[ "$1" = -n ] && [ "$2" = -- ] || exit 99\nshift 2\nexec env -i PATH="$PATH" "$@"\n')
    fake.chmod(0o755)
    g = Gate(str(tmp_path / "zbench.lock.live-beef"), f"{TAG_ENV}=beef")
    Path(g.marker).touch()
    env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}")
    ran = subprocess.run(["/bin/sh", "-c", g.shell([*ECHO, *ODD], sudo=True)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert _said(ran) == [ODD, "beef"]


def test_over_ssh_the_gate_is_the_remote_command_itself_and_adds_no_process(tmp_path):
    """ssh's last word is the gate's text (the login shell runs it: no `env` or `sh -c` of its own on the
    host); here a local host's gated command is the very process popen started, its argv exactly ours."""
    ssh = SSHHost("root@bench1", control_dir=str(tmp_path))
    g = Gate(str(tmp_path / "zbench.lock.live-ab12"), f"{TAG_ENV}=ab12")
    ssh.gate = g
    argv = ["zpool", "create", "zb pool", "mirror", "/dev/x"]
    wrapped = ssh._command(argv, True)
    assert wrapped[-3:] == ["--", "root@bench1", g.shell(argv)] and "sh" not in wrapped and "env" not in wrapped
    assert ssh._command(argv, False)[-1] == "zpool create 'zb pool' mirror /dev/x"     # the lock's own: no gate
    ssh.sudo = True
    assert ssh._command(argv, True)[-1] == g.shell(argv, sudo=True)
    assert "exec sudo -n -- env ZBENCH_SESSION=ab12 zpool create 'zb pool'" in g.shell(argv, sudo=True)

    Path(g.marker).touch()
    local = LocalHost()
    local.gate = g
    proc = local.popen(["sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/cmdline").read_bytes() != b"sleep\x0030\x00":
            assert time.monotonic() < deadline, "the gate's shell never became the command"
            time.sleep(0.02)
        assert f"{TAG_ENV}=ab12".encode() in Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
    finally:
        proc.kill()
        proc.communicate()
    assert local.run([*ECHO, *ODD]).stdout == json.dumps([ODD, "ab12"]) + "\n"


# -- what the holder stops ---------------------------------------------------------------------------------
def _ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _holding(argv, **kw) -> subprocess.Popen:
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True, **kw)


def test_the_holder_stops_a_gates_shell_between_its_test_and_its_exec_but_not_an_ssh_client(lock_path):
    """At the session's end the holder stops what still holds the marker open (a gate's shell that passed
    its test and has not exec'd yet: here a process that opened it, untagged) and what carries the tag as
    an argument (sudo's, env's before their exec), and leaves a process whose argument only contains the
    gate's text (this machine's ssh client of a gated command) alone."""
    mine = LockOwner("zbench sweep mine", "5e55")
    sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
    lock = HostLock(LocalHost(), mine)
    lock.acquire()
    procs = []
    try:
        opened = f"exec 9< {shlex.quote(live_path(mine.token))}; exec {shlex.join(sleep)}"
        procs.append(_holding(["/bin/sh", "-c", opened]))
        procs.append(_holding([*sleep, f"{TAG_ENV}={mine.token}"]))
        procs.append(_holding([*sleep, gate(mine).shell(["true"])]))        # an ssh client's argument
        time.sleep(0.5)                         # the shell has opened the marker and exec'd
        lock.release()
        assert _ended(procs[0].pid) and _ended(procs[1].pid), "a process of the session outlived its lock"
        assert not _ended(procs[2].pid), "an argument merely containing the tag is not the session's"
        check_free(LocalHost())
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait()
        lock.release()


def test_a_signal_during_the_locks_handshake_lets_the_lock_go(lock_path):
    """Ctrl-C lands as the holder says "held": the lock is not left held behind the unwinding sweep."""
    class Interrupted(LocalHost):
        def popen(self, argv, **kw):
            proc = super().popen(argv, **kw)
            real = proc.stdout

            class Said:
                def readline(self):
                    assert real.readline() == "held\n"     # the lock is ours now
                    raise KeyboardInterrupt
            proc.stdout = Said()
            return proc
    with pytest.raises(KeyboardInterrupt):
        HostLock(Interrupted(), LockOwner("zbench sweep cut", "c07")).acquire()
    check_free(LocalHost())


# -- one session, one function: a single host's sweep and a fleet's ------------------------------------------
def test_the_single_host_and_the_fleet_hold_their_hosts_through_one_function():
    assert sweep_host.session is host_lock.session and fleet_open.session is host_lock.session
    assert executor.open_session is sweep_host.open_session


def test_a_session_holds_the_lock_gates_every_command_and_gives_the_host_back_as_it_was(lock_path):
    host, mine = LocalHost(), LockOwner("zbench sweep mine", "5e55")
    with session(host, mine, "box1") as held:
        assert held is host and host.gate == gate(mine) and owned_by(host, mine)
        with pytest.raises(HostBusy, match=r"^box1 is busy: zbench sweep mine token 5e55 holds "):
            with session(LocalHost(), OTHER, "box1"):
                pass
        assert host.run(["true"]).ok
    assert host.gate is None and not os.path.exists(live_path(mine.token))
    check_free(host)


def test_a_fleet_opens_its_hosts_through_the_session(lock_path, monkeypatch):
    from test_fleet import _fp
    spec = parse_spec(yaml.safe_dump({**{k: v for k, v in SPEC.items() if k not in ("host", "lab")},
                                      "hosts": [{"host": "ssh://root@127.0.0.1:2201", "name": "b1",
                                                 "devices": ["/dev/zb-a"]},
                                                {"host": "ssh://root@127.0.0.1:2202", "name": "b2",
                                                 "devices": ["/dev/zb-b"]}]}), name="onehost")
    nodes = {}
    (lock_path / "b2").mkdir()

    class Elsewhere(LocalHost):
        """This machine as a second box: its /run (the lock's directory) is another directory."""
        def _wrap(self, argv):
            return [a.replace(str(lock_path / "zbench.lock"), str(lock_path / "b2" / "zbench.lock")) for a in argv]

    def reached(spec, entry, stack):            # each box is this machine, answering as a distinct one
        nodes[entry.name] = Node(LocalHost() if entry.name == "b1" else Elsewhere(), entry.data_devices, (),
                                 owned=False)
        return nodes[entry.name], _fp(boot_id=entry.name)
    monkeypatch.setattr(fleet_open, "_probe", reached)
    mine = LockOwner("zbench sweep fleet", "f1ee7")
    with fleet_open.open_fleet(spec, mine, log=lambda m: None):
        assert [n.host.gate for n in nodes.values()] == [gate(mine)] * 2
        assert all(owned_by(n.host, mine) and n.host.run(["true"]).ok for n in nodes.values())
        assert (lock_path / "b2" / "zbench.lock.owner").exists()
    assert [n.host.gate for n in nodes.values()] == [None, None]
    for n in nodes.values():
        check_free(n.host)


# -- a single host's sweep: the lock before the store, held to the end ----------------------------------------
class Box(LocalHost):
    """The spec's ssh host, stood in for by this machine (its lock is this machine's, in tmp_path)."""
    name = BOX


def _spec_file(tmp_path, **changes) -> Path:
    path = tmp_path / "onehost.yaml"
    spec = {k: v for k, v in {**SPEC, **changes}.items() if v is not None}     # None: the key dropped
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture
def box(monkeypatch):
    """A spec's `ssh://root@bench1` is this machine: checked (doctor's preflight is the fleet's and the
    doctor's own tests'), reached and locked for real."""
    monkeypatch.setattr(doctor, "preflight", lambda host, devices, overrides=(): [])
    monkeypatch.setattr("zbench_lib.hosts.resolve.parse_host", lambda text: Box())
    monkeypatch.setattr(sweep_host, "parse_host", lambda text: Box())


def test_a_single_hosts_sweep_on_a_held_host_is_refused_before_anything_is_created(lock_path, tmp_path, box):
    from zbench_lib.sweeps.running.executor import run_sweep
    spec, out = _spec_file(tmp_path, host=BOX, lab=None, devices=["/dev/zb-a"]), tmp_path / "sweeps"
    with HostLock(LocalHost(), OTHER):
        with pytest.raises(HostBusy, match=rf"^{re.escape(BOX)} is busy: {OTHER.text} holds "):
            run_sweep(spec, out, progress=False, log=lambda m: None)
        with pytest.raises(HostBusy, match=rf"^lab:x is busy: {OTHER.text} holds "):   # a given node too
            run_sweep(_spec_file(tmp_path), out, progress=False, log=lambda m: None,
                      host=Node(type("Lab", (LocalHost,), {"name": "lab:x"})(), ("/dev/zb-a",), (), owned=True))
    assert not out.exists()


def test_a_single_hosts_sweep_holds_the_lock_from_before_its_store_to_its_end(lock_path, tmp_path, box, monkeypatch):
    from zbench_lib.sweeps.running.executor import run_sweep
    seen = {}

    def execute(spec, plan, store, progress, log, open_node):
        with open_node(None) as node:
            seen.update(gate=node.host.gate, ours=owned_by(node.host, seen["owner"]), store=store.path.is_dir(),
                        refused=_busy_line(LocalHost()))
    real_owner = executor.sweep_owner

    def owner(sweep_id):
        seen["owner"] = real_owner(sweep_id)
        return seen["owner"]
    monkeypatch.setattr(executor, "sweep_owner", owner)
    monkeypatch.setattr(executor, "_execute", execute)
    monkeypatch.setattr(executor, "finish_sweep", lambda store, log: None)
    path = run_sweep(_spec_file(tmp_path, host=BOX, lab=None, devices=["/dev/zb-a"]), tmp_path / "sweeps",
                     sweep_id="s1", progress=False, log=lambda m: None)
    assert path == tmp_path / "sweeps" / "s1"
    assert seen["gate"] == gate(seen["owner"]) and seen["ours"] and seen["store"]
    assert re.match(rf"{re.escape(BOX)} is busy: zbench sweep s1 from \S+ pid {os.getpid()} token [0-9a-f]+ holds",
                    seen["refused"]), seen["refused"]
    check_free(LocalHost())                     # let go at the end


def _busy_line(host) -> str:
    try:
        check_free(host, BOX)
    except HostBusy as exc:
        return str(exc)
    return "free"


def test_a_single_hosts_session_lets_go_when_a_signal_unwinds_the_sweep(lock_path, tmp_path, box, monkeypatch):
    """A Ctrl-C (or SIGTERM, which zbench turns into SystemExit) inside the session: the teardown's
    path, and the lock goes with it."""
    from zbench_lib.sweeps.running.executor import run_sweep

    def execute(spec, plan, store, progress, log, open_node):
        with open_node(None):
            os.kill(os.getpid(), signal.SIGINT)
    monkeypatch.setattr(executor, "_execute", execute)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(_spec_file(tmp_path, host=BOX, lab=None, devices=["/dev/zb-a"]), tmp_path / "sweeps",
                  progress=False, log=lambda m: None)
    check_free(LocalHost())


# -- `zbench sweep`: one line, exit 2, nothing written ------------------------------------------------------
def _cli(argv, capsys) -> tuple[int, list[str]]:
    from zbench_lib.cli import main
    rc = main(argv)
    return rc, capsys.readouterr().err.strip().splitlines()


def test_zbench_sweep_refuses_a_held_host_in_one_line_exit_2_before_anything_is_written(lock_path, tmp_path,
                                                                                       box, capsys):
    spec, out = _spec_file(tmp_path, host=BOX, lab=None, devices=["/dev/zb-a"]), tmp_path / "sweeps"
    with HostLock(LocalHost(), OTHER):
        rc, err = _cli(["sweep", str(spec), "--out", str(out)], capsys)
    assert rc == 2 and len(err) == 1, err
    assert re.fullmatch(rf"zbench: {re.escape(BOX)} is busy: {OTHER.text} holds \S+/zbench\.lock "
                        r"\(one sweep at a time on a host\)", err[0]), err
    assert not out.exists()


def test_zbench_sweep_refuses_a_running_lab_another_sweep_holds(lock_path, tmp_path, capsys, monkeypatch):
    """ZBENCH_LAB's lab (this machine here), held: the same line. A lab the sweep would boot is nobody's:
    with none running, the sweep goes on."""
    monkeypatch.setenv("ZBENCH_LAB", "pytest")
    monkeypatch.setattr(sweep_host, "read_state", lambda name: {"config": {}, "data_disks": ["/dev/zb-a"]})
    monkeypatch.setattr(sweep_host, "connect_lab", lambda name: type("Lab", (LocalHost,), {"name": f"lab:{name}"})())
    started = []
    # as the real one, it gives the sweep's directory (here one that recorded nothing: no banner to print)
    monkeypatch.setattr("zbench_lib.sweeps.watching.notebook.run_sweep_notebook",
                        lambda *a, **kw: started.append(a) or tmp_path / "sweeps" / "unrecorded")
    spec, out = _spec_file(tmp_path), tmp_path / "sweeps"
    with HostLock(LocalHost(), OTHER):
        rc, err = _cli(["sweep", str(spec), "--out", str(out)], capsys)
    assert rc == 2 and len(err) == 1 and not out.exists() and not started, err
    assert re.fullmatch(rf"zbench: lab:pytest is busy: {OTHER.text} holds \S+ \(one sweep at a time on a host\)",
                        err[0]), err
    assert _cli(["sweep", str(spec), "--out", str(out)], capsys)[0] == 0 and len(started) == 1    # free
    monkeypatch.delenv("ZBENCH_LAB")
    monkeypatch.setattr(sweep_host, "read_state", lambda name: None)
    with HostLock(LocalHost(), OTHER):          # no lab of the sweep's running: the one it boots is its own
        assert _cli(["sweep", str(spec), "--out", str(out)], capsys)[0] == 0 and len(started) == 2
