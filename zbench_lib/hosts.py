"""One host interface for `local`, `ssh://host` and the lab.

Every command is an argument list. Over SSH the list is quoted argument by
argument with shlex.quote, so no user-supplied string is ever interpreted by
the remote shell.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import CommandError, CommandTimeout, ConfigError


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


class SSHHost(Host):
    """A remote host through the system's OpenSSH client.

    The user's ssh config, agent and jump hosts apply. A ControlMaster socket is
    kept so that a sweep of thousands of short commands pays one handshake.
    """

    def __init__(self, destination: str, *, port: int | None = None,
                 identity: str | None = None, known_hosts: str | None = None,
                 host_key_alias: str | None = None, control_dir: str | None = None,
                 connect_timeout: int = 10, name: str | None = None):
        if not destination or destination.startswith("-"):
            raise ConfigError(f"invalid ssh destination: {destination!r}")
        self.destination = destination
        self.name = name or f"ssh://{destination}" + (f":{port}" if port else "")
        self._own_control_dir = control_dir is None
        # ControlPath must be short (sun_path is 108 bytes): keep it in /tmp.
        self.control_dir = control_dir or tempfile.mkdtemp(prefix="zb-ssh-")
        opts = [
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={connect_timeout}",
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={self.control_dir}/cm-%C",
            "-o", "ControlPersist=120",
            "-o", "ServerAliveInterval=15",
            "-o", "LogLevel=ERROR",
        ]
        if identity:
            opts += ["-i", str(identity), "-o", "IdentitiesOnly=yes"]
        if known_hosts:
            opts += ["-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes"]
        if host_key_alias:
            opts += ["-o", f"HostKeyAlias={host_key_alias}"]
        self._opts = opts
        self._port = port

    def _ssh_base(self):
        return ["ssh", *self._opts] + (["-p", str(self._port)] if self._port else [])

    def _wrap(self, argv):
        remote = " ".join(shlex.quote(a) for a in argv)
        return [*self._ssh_base(), "--", self.destination, remote]

    def _scp(self, src, dst, timeout=600):
        argv = ["scp", "-q", *self._opts] + (["-P", str(self._port)] if self._port else []) + [src, dst]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise CommandError(self.name, argv, proc.returncode, proc.stderr)

    def put(self, local, remote):
        self._scp(str(local), f"{self.destination}:{remote}")

    def get(self, remote, local):
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        self._scp(f"{self.destination}:{remote}", str(local))

    def close(self):
        subprocess.run([*self._ssh_base(), "-O", "exit", self.destination],
                       capture_output=True, stdin=subprocess.DEVNULL, timeout=20)
        if self._own_control_dir:
            shutil.rmtree(self.control_dir, ignore_errors=True)


def parse_host(spec: str) -> Host:
    """`local`, `ssh://[user@]host[:port]`; `lab` is resolved by lab.connect_lab()."""
    if spec == "local":
        return LocalHost()
    if spec.startswith("ssh://"):
        rest = spec[len("ssh://"):]
        if not rest:
            raise ConfigError("ssh:// needs a host, e.g. ssh://root@bench1")
        port = None
        if rest.count(":") == 1:
            rest, p = rest.split(":")
            if not p.isdigit() or not 0 < int(p) < 65536:
                raise ConfigError(f"invalid ssh port in {spec!r}")
            port = int(p)
        return SSHHost(rest, port=port)
    if spec == "lab":
        from .lab import connect_lab
        return connect_lab()
    raise ConfigError(f"unknown host {spec!r}: use 'local', 'lab' or 'ssh://[user@]host[:port]'")
