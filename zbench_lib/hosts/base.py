"""The host interface (argument lists in, Result out) and the local host.

Every command is an argument list. Over SSH the list is quoted argument by
argument with shlex.quote, so no user-supplied string is ever interpreted by
the remote shell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from zbench_lib.core.errors import CommandError, CommandTimeout, ConfigError
from zbench_lib.core.signals import signals_deferred


@dataclass(frozen=True)
class Result:
    argv: tuple
    returncode: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Host:
    """Base class: run argument lists, copy files in and out."""

    name = "host"

    def _wrap(self, argv: list[str]) -> list[str]:
        raise NotImplementedError

    def run(self, argv, *, timeout: float = 600, check: bool = True,
            input: str | bytes | None = None, on_interrupt: str = "wait") -> Result:
        """Run `argv` on the host; raise CommandError on failure when `check`.

        A signal that unwinds the caller (Ctrl-C, or SIGTERM turned into SystemExit) while
        the command runs does not abandon it: over SSH the remote command would go on after
        the local client died, and a `zpool create` finishing after the teardown looked for
        its pool leaves the pool behind. So the command is waited for, up to its own
        timeout and said on the terminal, before the signal goes on (`on_interrupt="wait"`).
        `"leave"` is for long loads whose teardown stops them on the host itself (fio,
        stopped by its pool's or disk's teardown): waiting out a measurement window would
        only delay that.
        """
        argv = [str(a) for a in argv]
        if not argv:
            raise ConfigError("empty command")
        if on_interrupt not in ("wait", "leave"):
            raise ConfigError(f"on_interrupt must be 'wait' or 'leave', not {on_interrupt!r}")
        text = not isinstance(input, bytes)
        start = time.monotonic()
        try:
            # Its own session: a Ctrl-C at the terminal reaches zbench, which decides, and
            # never kills the ssh client (and so abandons the remote command) behind its back.
            proc = subprocess.Popen(self._wrap(argv), stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text,
                                    start_new_session=True)
        except FileNotFoundError as exc:
            raise CommandError(self.name, argv, 127, str(exc)) from None
        out, err = _communicate(proc, input, timeout, start, self.name, argv, on_interrupt)
        res = Result(tuple(argv), proc.returncode, out, err, time.monotonic() - start)
        if check and proc.returncode != 0:
            raise CommandError(self.name, argv, proc.returncode, err, out)
        return res

    def popen(self, argv, **kwargs) -> subprocess.Popen:
        """Start `argv` on the host and return at once (for streamed progress)."""
        # Its own session, as in run(): the caller stops it, a terminal's Ctrl-C does not.
        kwargs.setdefault("start_new_session", True)
        return subprocess.Popen(self._wrap([str(a) for a in argv]), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)

    def put(self, local: str | os.PathLike, remote: str) -> None:
        raise NotImplementedError

    def get(self, remote: str, local: str | os.PathLike) -> None:
        raise NotImplementedError

    def read_text(self, remote: str, timeout: float = 60) -> str:
        return self.run(["cat", remote], timeout=timeout).stdout

    def write_text(self, remote: str, text: str) -> None:
        with tempfile.NamedTemporaryFile("w", delete=False, suffix=".zbench") as fh:
            fh.write(text)
        try:
            self.put(fh.name, remote)
        finally:
            os.unlink(fh.name)

    def close(self) -> None:
        """Release connections; the default host holds none."""

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}>"


class LocalHost(Host):
    """This machine. Used for a Linux box with ZFS in its own kernel."""

    name = "local"

    def _wrap(self, argv):
        return argv

    def put(self, local, remote):
        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, remote)

    def get(self, remote, local):
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(remote, local)


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _communicate(proc, input, timeout, start, host_name, argv, on_interrupt) -> tuple[str, str]:
    """(stdout, stderr) of `proc`; CommandTimeout past `timeout`; on a signal, see Host.run."""
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise CommandTimeout(host_name, argv, -1, f"timed out after {timeout}s\n{_text(err)}") from None
    except BaseException:
        if on_interrupt == "wait":
            _wait_after_interrupt(proc, max(5.0, timeout - (time.monotonic() - start)), host_name, argv)
        else:
            proc.kill()
            proc.wait()
        raise
    return _text(out), _text(err)


def _wait_after_interrupt(proc, left_s: float, host_name: str, argv: list[str]) -> None:
    """Let a command cut off by a signal end on its host before the signal unwinds the caller."""
    with signals_deferred():
        try:
            proc.communicate(timeout=1.0)
            return
        except subprocess.TimeoutExpired:
            pass
        print(f"zbench: waiting for `{' '.join(argv)[:80]}` to end on {host_name} before tearing down "
              f"(up to {left_s:.0f} s)", file=sys.stderr, flush=True)
        try:
            proc.communicate(timeout=left_s)
        except subprocess.TimeoutExpired:
            print(f"zbench: `{argv[0]}` still running on {host_name} after {left_s:.0f} s; "
                  "tearing down beside it", file=sys.stderr, flush=True)
            proc.kill()
            proc.wait()
