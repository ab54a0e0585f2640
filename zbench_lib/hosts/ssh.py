"""A remote host through the system's OpenSSH client (the lab is one too).

Every command is an argument list, quoted argument by argument with shlex.quote,
so no user-supplied string is ever interpreted by the remote shell.

`ZBENCH_SSH_CONFIG=<file>` hands that file to ssh and scp (`-F`) instead of
~/.ssh/config: a project's own host aliases (`host: ssh://root@bench-box`) without
touching the user's configuration.

A user other than root works through passwordless sudo: `use_privilege()` checks it
once (a clear error when sudo would prompt), then every command runs as
`sudo -n -- argv...`, and files are copied through `sudo dd` / `sudo cat` over the same
connection (scp would write them as the user, into directories root made).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.hosts.base import Host

SSH_CONFIG_ENV = "ZBENCH_SSH_CONFIG"


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
        config = os.environ.get(SSH_CONFIG_ENV)
        if config and not Path(config).is_file():
            raise ConfigError(f"{SSH_CONFIG_ENV}={config!r} is not a file")
        opts = (["-F", config] if config else []) + [
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
        self.sudo = False

    def use_privilege(self) -> str:
        """Root, or passwordless sudo from here on; 'root' or 'sudo'. ConfigError otherwise."""
        uid = self.run(["id", "-u"], timeout=60).stdout.strip()
        if uid == "0":
            return "root"
        if not self.run(["sudo", "-n", "true"], check=False, timeout=60).ok:
            raise ConfigError(f"{self.name}: user uid {uid} is not root and `sudo -n` would prompt for a "
                              "password: zpool, zfs and fio need root (give this user NOPASSWD sudo, "
                              "or connect as root)")
        self.sudo = True
        return "sudo"

    def _ssh_base(self):
        return ["ssh", *self._opts] + (["-p", str(self._port)] if self._port else [])

    def _wrap(self, argv):
        if self.sudo:
            argv = ["sudo", "-n", "--", *argv]
        return self._remote(" ".join(shlex.quote(a) for a in argv))

    def _gated(self, argv, gate):
        # The gate's text is the remote command itself: the login shell sshd starts anyway runs it
        # (no shell or env of its own on the host), with sudo inside it.
        return self._remote(gate.shell(argv, sudo=self.sudo))

    def _remote(self, command: str) -> list[str]:
        """ssh running `command`, one string for the remote login shell."""
        return [*self._ssh_base(), "--", self.destination, command]

    def _scp(self, src, dst, timeout=600):
        argv = ["scp", "-q", *self._opts] + (["-P", str(self._port)] if self._port else []) + [src, dst]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise CommandError(self.name, argv, proc.returncode, proc.stderr)

    def put(self, local, remote):
        if self.sudo:
            self.run(["dd", f"of={remote}", "status=none"], input=Path(local).read_bytes(), timeout=600)
            return
        self._scp(str(local), f"{self.destination}:{remote}")

    def get(self, remote, local):
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        if self.sudo:
            argv = ["cat", remote]
            proc = subprocess.run(self._command(argv, True), capture_output=True, stdin=subprocess.DEVNULL,
                                  timeout=600)
            if proc.returncode != 0:
                raise CommandError(self.name, argv, proc.returncode, proc.stderr.decode(errors="replace"))
            Path(local).write_bytes(proc.stdout)
            return
        self._scp(f"{self.destination}:{remote}", str(local))

    def close(self):
        subprocess.run([*self._ssh_base(), "-O", "exit", self.destination],
                       capture_output=True, stdin=subprocess.DEVNULL, timeout=20)
        if self._own_control_dir:
            shutil.rmtree(self.control_dir, ignore_errors=True)
