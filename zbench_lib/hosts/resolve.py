"""Turn a host string from a spec or the CLI into a Host.

This sits above both kinds of host: the lab is an SSH host onto a VM it owns, so
neither ssh.py nor lab.py needs to know about the other's callers.
"""

from __future__ import annotations

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.base import Host, LocalHost
from zbench_lib.hosts.lab_node import LAB_CAPABILITIES
from zbench_lib.hosts.lab_state import connect_lab
from zbench_lib.hosts.ssh import SSHHost


def parse_host(spec: str) -> Host:
    """`local`, `ssh://[user@]host[:port]`; `lab` is the running lab (lab_state.connect_lab)."""
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
        return connect_lab()
    raise ConfigError(f"unknown host {spec!r}: use 'local', 'lab' or 'ssh://[user@]host[:port]'")


def capabilities_of(spec: str) -> frozenset[str]:
    """What the node of host `spec` can do (node.DEVICE_CONTROL...), known before it is opened:
    a spec is refused at load for a capability its host lacks."""
    return LAB_CAPABILITIES if spec == "lab" else frozenset()
