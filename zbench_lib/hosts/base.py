"""The host interface (argument lists in, Result out) and the local host.

Every command is an argument list. Over SSH the list is quoted argument by
argument with shlex.quote, so no user-supplied string is ever interpreted by
the remote shell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from zbench_lib.core.errors import CommandError, CommandTimeout, ConfigError


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
            input: str | bytes | None = None) -> Result:
        """Run `argv` on the host; raise CommandError on failure when `check`."""
        argv = [str(a) for a in argv]
        if not argv:
            raise ConfigError("empty command")
        full = self._wrap(argv)
        text = not isinstance(input, bytes)
        start = time.monotonic()
        try:
            proc = subprocess.run(full, input=input, capture_output=True, text=text,
                                  timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr or b""
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            raise CommandTimeout(self.name, argv, -1, f"timed out after {timeout}s\n{err}") from None
        except FileNotFoundError as exc:
            raise CommandError(self.name, argv, 127, str(exc)) from None
        out, err = proc.stdout, proc.stderr
        if isinstance(out, bytes):
            out, err = out.decode(errors="replace"), err.decode(errors="replace")
        res = Result(tuple(argv), proc.returncode, out, err, time.monotonic() - start)
        if check and proc.returncode != 0:
            raise CommandError(self.name, argv, proc.returncode, err, out)
        return res

    def popen(self, argv, **kwargs) -> subprocess.Popen:
        """Start `argv` on the host and return at once (for streamed progress)."""
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
