"""The host interface (argument lists in, Result out) and the local host.

Every command is an argument list. Over SSH the list is quoted argument by
argument with shlex.quote, so no user-supplied string is ever interpreted by
the remote shell.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import posixpath
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from zbench_lib.core.errors import CommandError, CommandTimeout, ConfigError
from zbench_lib.core.signals import signals_deferred


# How long a load is stopped on its host (stop_on_host) before the teardown goes on beside it.
STOP_BUDGET_S = 60.0
# `ZBENCH_TRACE_COMMANDS=<file>`: every command a host runs is appended to <file> as one JSON line
# (its host, argument list, start, seconds, status, pid): what benchmarks/command_profile.py reads to
# say where a lab run's time goes between the measurements.
TRACE_ENV = "ZBENCH_TRACE_COMMANDS"


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
    # A sweep's session (hosts.host_lock.session: one host's, or each host of a fleet) runs every command
    # through its lock's gate (a hosts.host_lock.Gate), so none starts once the session has lost the host.
    gate = None

    def _wrap(self, argv: list[str]) -> list[str]:
        raise NotImplementedError

    def _gated(self, argv: list[str], gate) -> list[str]:
        """`argv` through `gate`: its shell text, run by /bin/sh on this machine (SSHHost: the remote
        command, run by the shell ssh starts on the host)."""
        return self._wrap(["/bin/sh", "-c", gate.shell(argv)])

    def _command(self, argv: list[str], prefixed: bool) -> list[str]:
        return self._gated(argv, self.gate) if prefixed and self.gate is not None else self._wrap(argv)

    def run(self, argv, *, timeout: float = 600, check: bool = True,
            input: str | bytes | None = None, stop_with: list | None = None, prefixed: bool = True,
            binary_stdout: bool = False) -> Result:
        """Run `argv` on the host; raise CommandError on failure when `check`.

        A signal that unwinds the caller (Ctrl-C, or SIGTERM turned into SystemExit) while
        the command runs does not abandon it: over SSH the remote command goes on after the
        local client dies, and a `zpool create` finishing after the teardown looked for its
        pool left the pool behind (issue 34). So the command is waited for, up to its own
        timeout and said on the terminal, before the signal goes on. A long load (fio) gives
        `stop_with`, a command that stops it on the host: that is run until the load has
        ended there (see stop_on_host), rather than waiting out a measurement window.
        `prefixed=False` runs it without the host's `gate` (the lock's own commands).
        `binary_stdout=True` keeps the standard output as bytes (an archive streamed back).
        """
        argv = [str(a) for a in argv]
        if not argv:
            raise ConfigError("empty command")
        text = not isinstance(input, bytes) and not binary_stdout
        if binary_stdout and isinstance(input, str):
            input = input.encode()
        start = time.monotonic()
        try:
            # Its own session: a Ctrl-C at the terminal reaches zbench, which decides, and
            # never kills the ssh client (and so abandons the remote command) behind its back.
            proc = subprocess.Popen(self._command(argv, prefixed),
                                    stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text,
                                    start_new_session=True)
        except FileNotFoundError as exc:
            raise CommandError(self.name, argv, 127, str(exc)) from None
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            # Only the local side is stopped; the host may still run it (the callers that
            # expect that, like a slow `zpool destroy`, look again). No second communicate:
            # an ssh multiplexing master holds the pipes while the remote command lives.
            proc.kill()
            proc.wait()
            raise CommandTimeout(self.name, argv, -1, f"timed out after {timeout}s\n{_text(exc.stderr)}") from None
        except BaseException:
            if stop_with:
                self.stop_on_host(proc, stop_with, argv)
            else:
                _wait_after_interrupt(proc, max(5.0, timeout - (time.monotonic() - start)), self.name, argv)
            raise
        out, err = (out or b"") if binary_stdout else _text(out), _text(err)
        res = Result(tuple(argv), proc.returncode, out, err, time.monotonic() - start)
        _trace(self.name, res)
        if check and proc.returncode != 0:
            raise CommandError(self.name, argv, proc.returncode, err, _text(out))
        return res

    def stop_on_host(self, proc: subprocess.Popen, stop_with: list, argv=None, budget_s: float = STOP_BUDGET_S) -> None:
        """Stop a command started by run() or popen() on its host, and see it end there.

        The local client of a remote command ends when the command has (an ssh client
        reports its exit status), so it is waited for while `stop_with` is run on the host
        every second: a load whose process had not yet started when the first stop ran
        (the signal landed between the ssh request and the exec) is caught by the next one,
        instead of starting after the teardown and holding the pool busy.
        """
        label = " ".join(map(str, argv or proc.args))[:80]
        with signals_deferred():
            deadline = time.monotonic() + budget_s
            while proc.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(CommandError):
                    self.run(stop_with, check=False, timeout=30)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    _drain(proc, 1.0)
            if proc.poll() is None:
                print(f"zbench: `{label}` still running on {self.name} after {budget_s:.0f} s of stopping it; "
                      "tearing down beside it", file=sys.stderr, flush=True)
                proc.kill()
                proc.wait()

    def popen(self, argv, *, prefixed: bool = True, **kwargs) -> subprocess.Popen:
        """Start `argv` on the host and return at once (for streamed progress)."""
        # Its own session, as in run(): the caller stops it, a terminal's Ctrl-C does not.
        kwargs.setdefault("start_new_session", True)
        kwargs.setdefault("stdin", subprocess.DEVNULL)      # a holder of a lock on the host gives PIPE
        return subprocess.Popen(self._command([str(a) for a in argv], prefixed),
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

    def write_files(self, remote_dir: str, files: dict[str, str], dirs: tuple[str, ...] = (),
                    timeout: float = 120) -> None:
        """Make `remote_dir` (with its missing parents, as mkdir -p), the subdirectories `dirs` and
        the text files `files` (path relative to `remote_dir` -> text) in one command: a tar
        stream on the standard input of `tar -x` on the host.

        Not a mkdir and one copy per file: each was a round trip, and a lab's emulated guest
        takes 0.3-0.6 s to start any process. The archive names no directory above
        `remote_dir` (tar makes missing ones and leaves existing ones as they are); files are
        0644 and directories 0755, owned by whoever runs the command (--no-same-owner).
        """
        base = _checked_remote_dir(remote_dir)
        buf = io.BytesIO()
        now = time.time()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
            for rel in dirs:
                info = tarfile.TarInfo(_member(base, rel))
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
                tf.addfile(info)
            for rel, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(_member(base, rel))
                info.size, info.mode, info.mtime = len(data), 0o644, now
                tf.addfile(info, io.BytesIO(data))
        # the members are remote_dir's path without its leading '/', extracted from '/'
        self.run(["tar", "-x", "--no-same-owner", "-C", "/", "-f", "-"], input=buf.getvalue(), timeout=timeout)

    def close(self) -> None:
        """Release connections; the default host holds none."""

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}>"


def _trace(host: str, res: Result) -> None:
    path = os.environ.get(TRACE_ENV)
    if not path:
        return
    line = json.dumps({"host": host, "argv": list(res.argv), "end": time.time(), "s": round(res.duration_s, 4),
                       "rc": res.returncode, "pid": os.getpid()})
    with open(path, "a") as fh:          # one write of one line: lines of several processes do not mix
        fh.write(line + "\n")


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


def _checked_remote_dir(remote_dir: str) -> str:
    """`remote_dir` without its leading '/' (a tar member's prefix); ConfigError unless it is an
    absolute, normal path below '/' (no '.', '..' or empty component)."""
    parts = remote_dir.rstrip("/").split("/")
    if not remote_dir.startswith("/") or len(parts) < 2 or any(p in ("", ".", "..") for p in parts[1:]):
        raise ConfigError(f"remote directory must be an absolute, normal path below /: {remote_dir!r}")
    return "/".join(parts[1:])


def _member(base: str, rel: str) -> str:
    """The tar member name of `rel` (relative, normal) under `base`."""
    if rel == ".":
        return base
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or any(c in rel for c in "\n\0"):
        raise ConfigError(f"file name must be a relative, normal path: {rel!r}")
    return posixpath.join(base, rel)


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _drain(proc: subprocess.Popen, timeout: float) -> None:
    """Wait for `proc`, reading its pipes if it has them (a full pipe would stall it)."""
    if proc.stdout is None and proc.stderr is None:
        proc.wait(timeout=timeout)
    else:
        proc.communicate(timeout=timeout)


def _wait_after_interrupt(proc, left_s: float, host_name: str, argv: list[str]) -> None:
    """Let a command cut off by a signal end on its host before the signal unwinds the caller."""
    with signals_deferred():
        try:
            _drain(proc, 1.0)
            return
        except subprocess.TimeoutExpired:
            pass
        print(f"zbench: waiting for `{' '.join(argv)[:80]}` to end on {host_name} before tearing down "
              f"(up to {left_s:.0f} s)", file=sys.stderr, flush=True)
        try:
            _drain(proc, left_s)
        except subprocess.TimeoutExpired:
            print(f"zbench: `{argv[0]}` still running on {host_name} after {left_s:.0f} s; "
                  "tearing down beside it", file=sys.stderr, flush=True)
            proc.kill()
            proc.wait()
