"""Client VMs beside a lab, and the ports that connect them (several clients on one datastore).

A client is a small lab of the same image (one tiny unthrottled disk, one CPU, 1 GiB): it
runs fio's server and mounts or logs in to what the storage lab serves. Nothing here needs
root or a bridge: every lab has QEMU user networking, whose guest reaches the controller's
loopback at `CONTROLLER_FROM_GUEST` (10.0.2.2), and a port of a guest is reached from the
controller through a host forward added while the lab runs (QMP `hostfwd_add`). So a client
reaches the storage lab's NFS server as 10.0.2.2:<forwarded port>, and the controller reaches
each client's fio server as 127.0.0.1:<forwarded port>.

What that path costs is part of what a client measures: every byte crosses two user-mode
network stacks (the client's QEMU and the storage lab's) on the controller's CPUs. A
client-side number includes that network, as a hypervisor's includes its own (the report's
caveat says so); the storage lab's observers count what reached it.

To the storage lab the clients' connections all come from 10.0.2.2 (its QEMU's side of the
forward), so an export names that address and NFSv4 tells clients apart by the unique id each
client sets (`nfs_clients`), never by address.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from zbench_lib.core.errors import ZbenchError
from zbench_lib.hosts.lab import Lab
from zbench_lib.hosts.lab_config import LabConfig
from zbench_lib.hosts.lab_group import up_together
from zbench_lib.hosts.qmp import QMPClient

CONTROLLER_FROM_GUEST = "10.0.2.2"      # QEMU user networking: the controller's loopback, seen from a guest
NETDEV = "n0"                           # the lab's user-mode netdev (Lab.qemu_argv)
MiB = 1024 ** 2
# A client holds no pool: one small disk (a lab needs one), one CPU, the smallest memory a lab takes.
CLIENT_SHAPE = {"disks": 1, "disk_bytes": 64 * MiB, "model": "unthrottled", "memory_mib": 1024, "cpus": 1}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _monitor(lab_dir: Path, command_line: str) -> str:
    """One human-monitor command through the lab's QMP socket; what it printed (empty when it worked)."""
    with QMPClient(Path(lab_dir) / "qmp.sock") as q:
        return q.command("human-monitor-command", **{"command-line": command_line}) or ""


def forward(lab_dir: Path, guest_port: int, attempts: int = 3) -> int:
    """Forward a free loopback port of the controller to `guest_port` of the lab; that port.
    The port is chosen free but may be taken before QEMU binds it: then another is tried."""
    for _ in range(attempts):
        port = _free_port()
        said = _monitor(lab_dir, f"hostfwd_add {NETDEV} tcp:127.0.0.1:{port}-:{guest_port}").strip()
        if not said:
            return port
        if "could not set up host forwarding" not in said.lower():
            raise ZbenchError(f"lab {Path(lab_dir).name}: forwarding a port to guest port {guest_port}: {said}")
    raise ZbenchError(f"lab {Path(lab_dir).name}: no free loopback port for guest port {guest_port} "
                      f"after {attempts} tries")


def unforward(lab_dir: Path, port: int) -> None:
    """Remove a forward `forward` added (a lab already gone has none left: nothing to do)."""
    if not (Path(lab_dir) / "qmp.sock").exists():
        return
    said = _monitor(lab_dir, f"hostfwd_remove {NETDEV} tcp:127.0.0.1:{port}").strip()
    # QEMU says "host forwarding rule for tcp:... removed" when it was, and "... not found" when none was
    if said and not said.lower().endswith(("removed", "not found")):
        raise ZbenchError(f"lab {Path(lab_dir).name}: removing the forward of port {port}: {said}")


@contextlib.contextmanager
def forwarded(lab_dir: Path, guest_port: int) -> Iterator[int]:
    """`forward` for the length of a `with` block."""
    port = forward(lab_dir, guest_port)
    try:
        yield port
    finally:
        unforward(lab_dir, port)


def client_config(storage: LabConfig, index: int) -> LabConfig:
    """The `index`-th (1-based) client of the storage lab: its name derived from the storage's,
    its image the storage's OpenZFS release (one image: one fio release on both sides)."""
    name = f"{storage.name[:26]}-cl{index}"
    return LabConfig(**CLIENT_SHAPE, name=name, zfs=storage.zfs, accel=storage.accel)


@contextlib.contextmanager
def client_labs(storage: LabConfig, count: int) -> Iterator[list[Lab]]:
    """`count` client labs, all taken down on the way out, also when one of them failed to boot.
    Started together (`lab_group.up_together`): each is restored from the saved VM state of the
    client shape in seconds, the first client of a machine saving it while the others wait."""
    labs = [Lab(client_config(storage, i)) for i in range(1, count + 1)]
    try:
        up_together(labs)
        yield labs
    except Exception:
        _say_console_tails(labs)
        raise
    finally:
        # the last booted first: each lab puts back the signal handlers it found, so the first puts back the caller's
        for lab in reversed(labs):
            lab.down()


def _say_console_tails(labs: list[Lab], lines: int = 15) -> None:
    """Each client lab's last console lines on stderr, when what ran beside them failed: a guest that stopped
    answering (its ssh, its fio server) leaves nothing else, and its directory goes with it."""
    for lab in labs:
        tail = lab.serial_tail(lines)
        if tail:
            print(f"zbench: {lab.cfg.name}'s console, its last lines:\n{tail}", file=sys.stderr, flush=True)
