"""A signal while a host command runs: the command ends on its host before the signal unwinds.

Issue 34: a SIGTERM that landed while `zpool create` ran over SSH killed the local ssh
client; the remote command finished after the teardown had looked for the pool, and the
pool was left. Host.run now waits for the command (on_interrupt="wait", the default) or,
for loads whose teardown stops them on the host, lets it go (on_interrupt="leave").
These run real commands on the local host, with real signals to this process.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.signals import terminate_as_exit
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


def test_a_load_left_to_its_teardown_is_stopped_at_once(tmp_path):
    marker = tmp_path / "created"
    t0 = time.monotonic()
    with pytest.raises(SystemExit), terminate_as_exit():
        _signal_me_after([0.3])
        LocalHost().run(_write_after(marker, 2.0), timeout=60, on_interrupt="leave")
    assert time.monotonic() - t0 < 1.5
    time.sleep(2.5)                            # it was stopped, not left to finish
    assert not marker.exists()


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


def test_a_bad_interrupt_policy_is_refused():
    with pytest.raises(ConfigError, match="on_interrupt"):
        LocalHost().run(["true"], on_interrupt="ignore")
