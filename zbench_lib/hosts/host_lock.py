"""One sweep at a time on a machine: an flock held on the machine itself, and nothing of a
sweep left running there once it lets the lock go.

Every sweep holds it for its whole session through `session`: a single host's (`running.executor`)
as each host of a fleet (`running.fleet_open`). The Dask scheduler already keeps two pools of one
fleet off one host; this lock keeps off everything it does not see: a second controller of the same
sweep, a colleague's sweep from another machine. `flock -n` on `LOCK_PATH` runs on the host and holds
the lock while its child (the holder, `_HOLDER`) reads its standard input, which is a pipe from the
controller through ssh: when the controller closes it, or dies (killed, its machine lost), the pipe ends.

A dead controller's Dask workers, or the commands they had started on the host, may still be
running its pool there: Dask's local workers die with their controller, but not what they
started over ssh, and a worker of a cluster joined with `--scheduler` goes on by itself. So the
session is fenced on the host itself. While the lock is held its holder keeps a marker file
(`live_path`); every command of the session's hosts goes through its `Gate`, which runs it only
while that marker is there, with the session's token in its environment (`TAG_ENV`), inherited by
its children. The gate starts no process of its own: it is a few words of the shell ssh starts on
the host anyway (`Gate.shell`: the marker opened, which fails once it is gone; the tag exported; the
command exec'd, argument list as it was). When the holder's input ends it removes the marker (no
command of the session starts after that), stops every process of the session (the token in its
environment, or the marker held open: a gate's shell that opened it before it went and has not
exec'd yet) until none is left, and only then lets the lock go: until then a new controller is
refused in one line naming the one whose work is being stopped. What the session leaves (its pool)
is reclaimed by the next run of the sweep. A holder killed on the host itself cannot do that: so a
new holder, before it says it holds the lock, removes every other marker and stops every process of
any session (none belongs to a session holding the lock).

Who holds the lock is written beside it (`OWNER_PATH`, the holder's pid under it) by the holder
itself, before it says "held", and removed before it exits. /run is a tmpfs: a reboot frees all.
The host's login shell is a POSIX shell (sh, bash, dash), as the quoting of every command already needs.
"""

from __future__ import annotations

import contextlib
import os
import platform
import secrets
import shlex
import subprocess
from dataclasses import dataclass

from zbench_lib.core.errors import ZbenchError
from zbench_lib.hosts.base import Host

LOCK_PATH = "/run/zbench.lock"
OWNER_PATH = "/run/zbench.lock.owner"
TAG_ENV = "ZBENCH_SESSION"
BUSY_EXIT = 75                 # flock -E: "the lock is held", told apart from ssh's own failures
GATE_EXIT = 125                # a command of a session that no longer holds its host, never run
STOPPING = "stopping what its sweep left running"
GATE_REFUSAL = "zbench: its sweep no longer holds this host (its controller stopped)"

# The holder, run by flock while it holds the lock: $1 owner, $2 owner file, $3 marker, $4 TAG_ENV, $5 the
# token, $6 what it says while it stops the session. A process of the session (`pids`) carries "$4=$5" in its
# environment or as an argument (sudo's and env's, before the tagged exec), or holds the marker open (a gate's
# shell, from its test to its exec; once removed, its link ends in " (deleted)"). The tag's patterns are written
# "$4[=]..." so that no argument of the holder's, nor grep's own, matches them. Before it says "held" it clears
# what no holder of the lock owns: markers and processes of a session whose holder was killed on the host (it
# could not stop them). Stopping: TERM first, KILL from the 10th round; a process in the kernel (a zpool
# command) is waited for. The marker is readable by all: a gate's shell runs as the ssh user, sudo after it.
_HOLDER = r"""
owner=$1 file=$2 live=$3 tag="$4[=]$5" any="$4[=][0-9a-f]*"
umask 022
pids() {
    { grep -lzx -e "$1" /proc/[0-9]*/environ /proc/[0-9]*/cmdline
      find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( -lname "$2" -o -lname "$2 (deleted)" \); } 2>/dev/null |
        cut -d/ -f3 | sort -u
}
stop() {
    n=0
    while p=$(pids "$1" "$2") && [ -n "$p" ]; do
        n=$((n + 1))
        if [ "$n" -lt 10 ]; then kill -TERM $p 2>/dev/null; else kill -KILL $p 2>/dev/null; fi
        sleep 1
    done
}
rm -f -- "${live%-*}"-*
stop "$any" "${live%-*}-*"
printf '%s\n%s\n' "$owner" "$$" > "$file" && : > "$live" || exit 1
echo held
cat >/dev/null
rm -f "$live"
printf '%s (%s)\n%s\n' "$owner" "$6" "$$" > "$file"
stop "$tag" "$live"
rm -f "$file"
"""
_GATE_FD = 9                   # the marker, held open by a gate's shell (and inherited by its command)
# Prints the owner while its holder lives, nothing otherwise (a file a killed holder left names no one).
_OWNER = r'{ read -r who; read -r pid; } < "$1" 2>/dev/null && kill -0 "$pid" 2>/dev/null && printf "%s\n" "$who"'


@dataclass(frozen=True)
class LockOwner:
    """Who holds a host's lock: what a refusal says of it, and the hex token its session's commands carry."""
    who: str                        # e.g. "zbench sweep s1 from ctl1 pid 42"
    token: str                      # hex: it names a file and is matched in processes' environments

    def __post_init__(self):
        if not self.token or any(c not in "0123456789abcdef" for c in self.token):
            raise ValueError(f"a lock token is lowercase hex, got {self.token!r}")

    @property
    def text(self) -> str:
        return f"{self.who} token {self.token}"


class HostBusy(ZbenchError):
    """Another sweep holds the host's lock."""


def live_path(token: str) -> str:
    """The marker that exists while the session of `token` holds the host."""
    return f"{LOCK_PATH}.live-{token}"


@dataclass(frozen=True)
class Gate:
    """The gate of a session's commands on a host (`Host.gate`; see the module's text)."""
    marker: str                     # live_path(token)
    tag: str                        # f"{TAG_ENV}={token}"

    def shell(self, argv, sudo: bool = False) -> str:
        """The shell text that runs `argv` (an argument list, each quoted) only while the marker is there,
        with the tag in its environment, as the very shell that runs it: ssh's remote command (ssh hands
        its one string to the login shell on the host), or `/bin/sh -c` here. The test is the marker
        opened (`command exec`: a failed open is a status, not the shell's exit), so from its test to
        its exec the shell holds the marker, and the holder finds it. Refused: exit GATE_EXIT and
        GATE_REFUSAL on standard error. `sudo`: the command through `sudo -n`, which resets the
        environment, so `env` puts the tag back (an argument of sudo's and env's meanwhile)."""
        run = ["sudo", "-n", "--", "env", self.tag, *argv] if sudo else list(argv)
        return (f"{{ command exec {_GATE_FD}< {shlex.quote(self.marker)}; }} 2>/dev/null || "
                f"{{ echo {shlex.quote(GATE_REFUSAL)} >&2; exit {GATE_EXIT}; }}; "
                f"export {shlex.quote(self.tag)}; exec {' '.join(shlex.quote(str(a)) for a in run)}")


def gate(owner: LockOwner) -> Gate:
    """The gate of every command of `owner`'s session on a host (`Host.gate`): run only while the
    session holds the host, tagged with its token (see the module's text)."""
    return Gate(live_path(owner.token), f"{TAG_ENV}={owner.token}")


def sweep_owner(sweep_id: str) -> LockOwner:
    """The lock's owner for a session of sweep `sweep_id` from this process, with a token of its own."""
    return LockOwner(f"zbench sweep {sweep_id} from {platform.node()} pid {os.getpid()}", secrets.token_hex(4))


@contextlib.contextmanager
def session(host: Host, owner: LockOwner, label: str | None = None):
    """`with session(host, owner, label):` a sweep's session on `host`: its lock held (HostBusy, one line
    naming the holder, when another holds it) and every command of `host` through the session's gate
    meanwhile; the host's gate as it was, then the lock let go (once the holder has stopped what the
    session left there), on every way out. Yields the host. One host's sweep and each host of a fleet."""
    with HostLock(host, owner, label):
        was, host.gate = host.gate, gate(owner)
        try:
            yield host
        finally:
            host.gate = was


class HostLock:
    """`with HostLock(host, owner):` holds the host's lock, or raises HostBusy naming its holder.
    `label` is what a refusal calls the host (a fleet's name for it beside its address)."""

    def __init__(self, host: Host, owner: LockOwner, label: str | None = None):
        self.host, self.owner, self.label = host, owner, label or host.name
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> HostLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        # The holder must not carry the token it stops: started without the host's gate, and given the
        # token and its variable's name apart (none of its arguments is the tag "NAME=token").
        holder_argv = ["flock", "-n", "-E", str(BUSY_EXIT), LOCK_PATH, "sh", "-c", _HOLDER, "zbench-lock",
                       self.owner.text, OWNER_PATH, live_path(self.owner.token), TAG_ENV, self.owner.token, STOPPING]
        proc = self.host.popen(holder_argv, stdin=subprocess.PIPE, prefixed=False)
        # One line: "held" once the lock is ours; nothing (the pipe closed) when flock gave up.
        try:
            said = proc.stdout.readline().strip()
        except BaseException:           # a signal mid-way: the holder may hold the lock already, let it go
            self._proc = proc
            self.release()
            raise
        if said != "held":
            code = proc.wait(timeout=60)
            err = proc.stderr.read().strip()
            if code == BUSY_EXIT:
                raise busy(self.host, self.label)
            raise ZbenchError(f"{self.label}: could not take {LOCK_PATH} (exit {code}): {err[-300:]}")
        self._proc = proc

    def release(self, timeout: float = 120) -> None:
        """Let the lock go, once the holder has stopped what the session left on the host."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.stdin.close()            # the holder's input ends: it stops the session's leftovers and exits
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()               # the host then frees the lock when it has stopped them
            proc.wait()

    @property
    def held(self) -> bool:
        return self._proc is not None and self._proc.poll() is None


def busy(host: Host, label: str) -> HostBusy:
    """The one-line refusal of a host whose lock another holds."""
    return HostBusy(f"{label} is busy: {holder(host)} holds {LOCK_PATH} (one sweep at a time on a host)")


def check_free(host: Host, label: str | None = None) -> None:
    """HostBusy when the host's lock is held now (the lock is taken and let go at once, nothing else)."""
    res = host.run(["flock", "-n", "-E", str(BUSY_EXIT), LOCK_PATH, "true"], check=False, timeout=60,
                   prefixed=False)
    if res.returncode == BUSY_EXIT:
        raise busy(host, label or host.name)
    if not res.ok:
        raise ZbenchError(f"{label or host.name}: could not look at {LOCK_PATH} (exit {res.returncode}): "
                          f"{res.stderr.strip()[-300:]}")


def holder(host: Host) -> str:
    """Who holds the lock, as its holder wrote it (with what it is doing while it stops a session)."""
    res = host.run(["cat", OWNER_PATH], check=False, timeout=60, prefixed=False)
    return res.stdout.split("\n", 1)[0].strip() or "another process"


def owned_by(host: Host, owner: LockOwner) -> bool:
    """Does `owner` hold the host's lock now, its holder alive and not stopping? (A worker of a
    controller that lost the host must not go on.)"""
    res = host.run(["sh", "-c", _OWNER, "zbench-owner", OWNER_PATH], check=False, timeout=60, prefixed=False)
    return res.stdout.strip() == owner.text
