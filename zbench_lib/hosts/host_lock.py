"""One sweep at a time on a machine: an flock held on the machine itself.

The Dask scheduler already keeps two pools of one fleet off one host; this lock keeps off
everything it does not see: a second controller of the same sweep, a colleague's sweep from
another machine. `flock -n` on `LOCK_PATH` runs on the host and holds the lock while its child
reads its standard input, which is a pipe from this process through ssh: when the holder
closes it, or dies (killed, its machine lost), the pipe ends, the child exits and the host
releases the lock by itself. Who holds it is written beside it (`OWNER_PATH`), so a refusal
names the holder in one line. /run is a tmpfs: a reboot frees both.
"""

from __future__ import annotations

import subprocess

from zbench_lib.core.errors import ZbenchError
from zbench_lib.hosts.base import Host

LOCK_PATH = "/run/zbench.lock"
OWNER_PATH = "/run/zbench.lock.owner"
BUSY_EXIT = 75                 # flock -E: "the lock is held", told apart from ssh's own failures
# The holder: say it holds the lock, then wait for the end of its input (the pipe from here).
_HOLD = ["sh", "-c", "echo held; exec cat >/dev/null"]


class HostBusy(ZbenchError):
    """Another sweep holds the host's lock."""


class HostLock:
    """`with HostLock(host, owner):` holds the host's lock, or raises HostBusy naming its holder."""

    def __init__(self, host: Host, owner: str):
        self.host, self.owner = host, owner
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> HostLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        proc = self.host.popen(["flock", "-n", "-E", str(BUSY_EXIT), LOCK_PATH, *_HOLD], stdin=subprocess.PIPE)
        # One line: "held" once the lock is ours; nothing (the pipe closed) when flock gave up.
        if proc.stdout.readline().strip() != "held":
            code = proc.wait(timeout=60)
            err = proc.stderr.read().strip()
            if code == BUSY_EXIT:
                raise HostBusy(f"{self.host.name} is busy: {holder(self.host)} holds {LOCK_PATH} "
                               "(one sweep at a time on a host)")
            raise ZbenchError(f"{self.host.name}: could not take {LOCK_PATH} (exit {code}): {err[-300:]}")
        self._proc = proc
        self.host.run(["tee", OWNER_PATH], input=self.owner + "\n", timeout=60)

    def release(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.stdin.close()            # the holder's input ends: it exits and the host frees the lock
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @property
    def held(self) -> bool:
        return self._proc is not None and self._proc.poll() is None


def holder(host: Host) -> str:
    """Who wrote the owner file last (the lock's holder while it is held)."""
    res = host.run(["cat", OWNER_PATH], check=False, timeout=60)
    return res.stdout.strip() or "another process"


def owned_by(host: Host, owner: str) -> bool:
    """Does `owner` hold the host's lock now? (A worker of a controller that lost it must not go on.)"""
    return holder(host) == owner
