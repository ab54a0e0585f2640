"""The lab as a Node on the session's lab: its QMP device control throttles a disk to a model,
reads the throttle back and puts the one it had back exactly; every disk is plugged in; the
node opened from the lab's state.json is the same machine as the booted one."""

import pytest

from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.hosts.lab_node import booted_node, running_node
from zbench_lib.hosts.lab_state import connect_lab, read_state
from zbench_lib.hosts.node import DEVICE_CONTROL

pytestmark = pytest.mark.lab


def test_the_lab_node_controls_its_disks_through_qmp(lab):
    node = booted_node(lab)
    assert node.is_lab and node.qemu_pid == lab.proc.pid and node.data_devices == tuple(lab.data_disks)
    control = node.require(DEVICE_CONTROL, "this test")
    disk = node.data_devices[0]
    before = control.read_throttle(disk)
    assert {k: before[k] for k in lab.cfg.model.qmp_throttle_arguments()} == lab.cfg.model.qmp_throttle_arguments()
    try:
        control.set_model(disk, "sata-ssd")
        want = parse_model("sata-ssd").qmp_throttle_arguments()
        assert {k: control.read_throttle(disk)[k] for k in want} == want
    finally:
        control.set_throttle(disk, before)
    assert control.read_throttle(disk) == before
    assert control.missing(list(node.data_devices + node.extra_devices)) == []


def test_the_node_from_the_labs_state_is_the_same_machine(lab):
    host = connect_lab(lab.cfg.name)
    try:
        node = running_node(lab.cfg.name, read_state(lab.cfg.name), host)
        assert node.control == booted_node(lab).control and node.disk_model == lab.cfg.model
        assert node.data_devices == tuple(lab.data_disks) and node.extra_devices == tuple(lab.extra_disks)
        assert node.host.run(["test", "-e", node.data_devices[0]], check=False).ok
    finally:
        host.close()
