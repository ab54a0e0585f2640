"""A signal while a host command runs: the command ends on its host before the signal unwinds.

Issue 34: a SIGTERM that landed while `zpool create` ran over SSH killed the local ssh
client; the remote command finished after the teardown had looked for the pool, and the
pool was left. Host.run now waits for the command or, for a load given `stop_with`, stops
it on the host and sees it end there (a prefill that started after the teardown's first
`pkill` held its zvol open under `zpool destroy`).
These run real commands on the local host, with real signals to this process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from zbench_lib.core.signals import terminate_as_exit
from zbench_lib.core.stopping import stop_by_args
from zbench_lib.hosts.base import LocalHost


def _signal_me_after(delays: list[float]) -> None:
    for d in delays:
        threading.Timer(d, os.kill, (os.getpid(), signal.SIGTERM)).start()


def _write_after(path, seconds: float) -> list[str]:
    return ["sh", "-c", f'sleep {seconds}; echo done > "$1"', "writer", str(path)]


def test_a_command_cut_off_by_sigterm_ends_before_the_exit_goes_on(tmp_path, capfd):
    marker = tmp_path / "created"
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as exc, terminate_as_exit():
        _signal_me_after([0.3, 1.5])          # the second one must not cut the wait short
        LocalHost().run(_write_after(marker, 2.5), timeout=60)
    assert exc.value.code == 128 + signal.SIGTERM
    # The command had finished its work when SystemExit reached the caller.
    assert marker.read_text() == "done\n"
    assert time.monotonic() - t0 >= 2.4
    assert "waiting for `sh -c" in capfd.readouterr().err


def test_a_load_with_a_stop_command_is_stopped_on_its_host_at_once(tmp_path):
    marker = tmp_path / "created"
    t0 = time.monotonic()
    with pytest.raises(SystemExit), terminate_as_exit():
        _signal_me_after([0.3])
        LocalHost().run(_write_after(marker, 20.0), timeout=60, stop_with=stop_by_args(f"{marker}"))
    assert time.monotonic() - t0 < 5
    time.sleep(0.5)
    assert not marker.exists()


# Becomes `sleep 31.5` only after 1.5 s: a stop sent at once finds nothing to stop.
_LATE = [sys.executable, "-c", "import os, time; time.sleep(1.5); os.execvp('sleep', ['sleep', '31.5'])"]


def test_a_load_that_starts_after_the_first_stop_is_stopped_too():
    host = LocalHost()
    proc = host.popen(_LATE)
    t0 = time.monotonic()
    host.stop_on_host(proc, stop_by_args("^sleep 31.5"))
    assert proc.returncode == -signal.SIGTERM                 # ended by a later stop, not waited out
    assert 1.4 <= time.monotonic() - t0 < 10
    assert subprocess.run(["pgrep", "-f", "^sleep 31.5"], capture_output=True).returncode == 1


def test_the_wait_is_bounded_by_the_commands_timeout(tmp_path, capfd):
    marker = tmp_path / "created"
    t0 = time.monotonic()
    with pytest.raises(SystemExit), terminate_as_exit():
        _signal_me_after([0.2])
        LocalHost().run(_write_after(marker, 30), timeout=6)
    took = time.monotonic() - t0
    assert 4.5 <= took < 15, took
    assert "still running on local after" in capfd.readouterr().err
    assert not marker.exists()
