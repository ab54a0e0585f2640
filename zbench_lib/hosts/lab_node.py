"""The lab as a Node: its SSH host, its disks and model, and their control through QMP.

`QmpDeviceControl` is the lab's `node.DeviceControl`: `lab_faults` on the lab's directory
(its QMP socket, disk files and, for a disk nbdkit serves, its model's control and status files),
so it works as well on a lab another process booted.
`booted_node` makes the Node of a Lab this process runs, `running_node` the one of a lab
found by its state.json (`zbench lab up`, the test session's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from zbench_lib.core import paths
from zbench_lib.hosts import lab_faults
from zbench_lib.hosts.disk_models import DiskModel
from zbench_lib.hosts.lab_config import serial_of
from zbench_lib.hosts.node import DEVICE_CONTROL, EMULATED_DISKS, Node

LAB_CAPABILITIES = frozenset({DEVICE_CONTROL, EMULATED_DISKS})


@dataclass(frozen=True)
class QmpDeviceControl:
    lab_dir: Path
    qemu_pid: int | None
    cache: str = "none"          # the lab's -drive cache mode: a disk plugged back gets the same
    capabilities: ClassVar[frozenset[str]] = LAB_CAPABILITIES

    def disk_id(self, device: str) -> str:
        return serial_of(device)

    def set_model(self, device: str, model: DiskModel | str) -> None:
        lab_faults.restore_speed(self.lab_dir, serial_of(device), model)

    def read_throttle(self, device: str) -> dict:
        return lab_faults.throttle_of(self.lab_dir, serial_of(device))

    def set_throttle(self, device: str, throttle: dict) -> None:
        lab_faults.set_throttle(self.lab_dir, serial_of(device), throttle)

    def read_served(self, device: str) -> dict | None:
        return lab_faults.served(self.lab_dir, serial_of(device))

    def serve(self, device: str, mech: str) -> dict:
        return lab_faults.serve(self.lab_dir, serial_of(device), mech)

    def remove(self, device: str) -> float:
        return lab_faults.remove_disk(self.lab_dir, serial_of(device))

    def reattach(self, device: str, model: DiskModel | str) -> None:
        lab_faults.restore_disk(self.lab_dir, serial_of(device), model, self.cache)

    def missing(self, devices: list[str]) -> list[str]:
        plugged = lab_faults.plugged(self.lab_dir)
        return [d for d in devices if serial_of(d) not in plugged]


def booted_node(lab) -> Node:
    """The Node of a running `lab.Lab` of this process (its provenance recorded with the sweep's)."""
    control = QmpDeviceControl(Path(lab.dir), lab.proc.pid if lab.proc else None, lab.cfg.disk_cache)
    return Node(lab.host, tuple(lab.data_disks), tuple(lab.extra_disks), owned=True,
                disk_model=lab.cfg.model, control=control, provenance=lab.provenance())


def running_node(name: str, state: dict, host) -> Node:
    """The Node of lab `name` from its state.json, reached through `host` (lab_state.connect_lab)."""
    cfg = state["config"]
    control = QmpDeviceControl(paths.labs_dir() / name, state.get("pid"), cfg.get("disk_cache", "none"))
    # A mech: model's record carries its parameters (`mech_model`) beside the DiskModel's fields.
    model = DiskModel(**{k: v for k, v in cfg["model"].items() if k != "mech_model"})
    return Node(host, tuple(state["data_disks"]), tuple(state["extra_disks"]), owned=True,
                disk_model=model, control=control)
