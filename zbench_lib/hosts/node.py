"""The machine a sweep runs on, as one record: its host, its disks and what it can do to them.

A `Node` is what `sweeps.sweep_host.open_host` yields. Its disks are controlled (throttled,
pulled, plugged back, read back) through a `DeviceControl`: the lab's goes through QMP
(`hosts.lab_node.QmpDeviceControl`); a real host has none, since its disks are never
touched on purpose. A disk a lab serves through nbdkit also has the mechanism model it serves
(`read_served`, `serve`). What a node can do is its `capabilities`, so a study that needs device
control is refused by naming the capability it lacks, never by asking what kind of host it is.

Everything but `host` (the live connection) is plain data: the devices, the model and the
control (a directory and a pid) pickle, so a node can be described to another process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.base import Host
from zbench_lib.hosts.disk_models import DiskModel

# Disks throttled to a model, pulled, plugged back and their throttle read back (faults, disk models).
DEVICE_CONTROL = "device_control"
# Disks a VM emulates on this machine: the emulation can bound a run (truth: emulation_bound)
# and its QEMU process is sampled beside each run (truth: host_contention).
EMULATED_DISKS = "emulated_disks"


class DeviceControl(Protocol):
    """What the sweeps do to a node's disks; `device` is a path the node's host knows."""

    capabilities: frozenset[str]
    qemu_pid: int | None            # the process emulating the disks on this machine, if any

    def disk_id(self, device: str) -> str:
        """The disk's name in the control and in the events (the lab: its serial)."""

    def set_model(self, device: str, model: DiskModel | str) -> None:
        """Give the disk a model's envelope: a throttle model's throttle (on top of what nbdkit serves, if
        it serves the disk), or a mech: model served by its nbdkit, unthrottled (refused on any other disk)."""

    def read_throttle(self, device: str) -> dict:
        """The throttle applied to the disk now, as set_throttle takes it."""

    def set_throttle(self, device: str, throttle: dict) -> None:
        """Put back exactly a throttle read by read_throttle."""

    def read_served(self, device: str) -> dict | None:
        """The model the disk's nbdkit serves now, its status (seq, model, kind, params); None for a disk
        served otherwise (a file QEMU opens)."""

    def serve(self, device: str, mech: str) -> dict:
        """Have the disk's nbdkit serve `mech` (nbd_model.PASSTHROUGH under a throttle) from its next idle
        moment, a fresh drive; its status. What read_served read, put back by its model."""

    def remove(self, device: str) -> float:
        """Pull the disk; the seconds the host took to let it go."""

    def reattach(self, device: str, model: DiskModel | str) -> None:
        """Plug a pulled disk back in, as it was, with the model's envelope."""

    def missing(self, devices: list[str]) -> list[str]:
        """Those of `devices` that are unplugged now."""


@dataclass(frozen=True)
class ClientNode:
    """A load generator beside a node (several clients on one datastore, issue 30): a client VM that
    mounts what the node serves and runs fio's server."""
    label: str                      # c1, c2, ...: names its job, its logs and its file on the datastore
    host: Host
    lab_dir: Path                   # its lab: where the forward of its fio server's port is added


@dataclass(frozen=True)
class ClientNodes:
    """A node's clients, and where the forward of the node's own NFS port is added (its lab)."""
    storage_dir: Path
    nodes: tuple[ClientNode, ...]


@dataclass(frozen=True)
class Node:
    host: Host
    data_devices: tuple[str, ...]
    extra_devices: tuple[str, ...]           # for log / cache / special vdevs
    owned: bool                              # the disks are the node's own (a lab's), leftovers cleared
    disk_model: DiskModel | None = None      # the data disks' envelope (a lab's), None on real disks
    control: DeviceControl | None = None
    provenance: dict | None = None           # what the opener adds to the host's (a booted lab's config)
    alias: str | None = None                 # its name in a fleet (hosts.fleet.HostEntry.name)
    clients: ClientNodes | None = None       # client VMs booted beside it for a sweep with clients (issue 30)

    @property
    def name(self) -> str:
        return self.alias or self.host.name

    @property
    def capabilities(self) -> frozenset[str]:
        return self.control.capabilities if self.control is not None else frozenset()

    @property
    def is_lab(self) -> bool:
        """Its disks are a VM's emulation (recorded as the run context's `lab`)."""
        return EMULATED_DISKS in self.capabilities

    @property
    def qemu_pid(self) -> int | None:
        return self.control.qemu_pid if self.control is not None else None

    def require(self, capability: str, what: str) -> DeviceControl:
        """The control, when the node has `capability`; a one-line ConfigError naming it otherwise."""
        if capability not in self.capabilities:
            raise ConfigError(f"{what} needs {capability}, which host {self.name} lacks "
                              "(only the lab's disks are controlled: host: lab)")
        return self.control
