"""hosts.node without a lab: what a node can do decides what a sweep may ask of its disks, and
the faults and disk models act through its DeviceControl (a fake here, recording each call;
the QMP one against a fake QMP socket). tests/test_node_lab.py drives the real one."""

from __future__ import annotations

import json
import pickle
from dataclasses import asdict
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from zbench_lib.core import paths
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.events import event_name
from zbench_lib.hosts.base import Host, Result
from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.hosts.lab_config import LabConfig, guest_disk_path
from zbench_lib.hosts.mech_models import parse_mech
from zbench_lib.hosts.lab_node import LAB_CAPABILITIES, QmpDeviceControl, booted_node, running_node
from zbench_lib.hosts.node import DEVICE_CONTROL, EMULATED_DISKS, Node
from zbench_lib.hosts.resolve import capabilities_of
from zbench_lib.sweeps.running import faults as faults_mod
from zbench_lib.sweeps.running.faults import CRAWL, FaultInjector
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.running.pool_setup import pool_setup
from zbench_lib.zfs.layouts import Layout

DISKS = tuple(guest_disk_path(f"zbdata0{i}") for i in range(3))
MODEL = parse_model("custom:iops=400,bw=100M")
UNTHROTTLED = {k: 0 for k in ("iops", "iops_rd", "iops_wr", "bps", "bps_rd", "bps_wr")}


class Recorder(Host):
    name = "ssh://root@bench1"

    def __init__(self):
        self.calls: list[list[str]] = []

    def run(self, argv, *, timeout=600, check=True, input=None):
        self.calls.append([str(a) for a in argv])
        return Result(tuple(argv), 0, "", "", 0.0)


class FakeControl:
    """A DeviceControl that keeps each disk's throttle and plug state in memory."""

    capabilities = LAB_CAPABILITIES
    qemu_pid = 4242

    def __init__(self, unplugged=(), served=None, answer=None):
        self.calls: list[tuple] = []
        self.throttles: dict[str, dict] = {}
        self.unplugged = set(unplugged)
        self.served = dict(served or {})        # device -> the model its nbdkit serves (absent: a file)
        self.answer = answer or {}              # model asked -> the model the status then says (a liar)

    def read_served(self, device):
        if device not in self.served:
            return None
        m = parse_mech(self.served[device])
        return {"seq": 1, "model": m.name, "kind": m.kind, "params": asdict(m.params) if m.params else {}}

    def serve(self, device, mech):
        self.calls.append(("serve", device, mech))
        if device not in self.served:
            raise ConfigError(f"{device} is not served through nbdkit")
        self.served[device] = self.answer.get(mech, mech)
        return self.read_served(device)

    def disk_id(self, device):
        return device.rsplit("-", 1)[-1]

    def set_model(self, device, model):
        model = parse_model(model)
        self.calls.append(("set_model", device, model.name))
        if model.mech:
            self.serve(device, model.mech)
        self.throttles[device] = model.qmp_throttle_arguments()

    def read_throttle(self, device):
        return dict(self.throttles.get(device, UNTHROTTLED))

    def set_throttle(self, device, throttle):
        self.calls.append(("set_throttle", device, dict(throttle)))
        self.throttles[device] = dict(throttle)

    def remove(self, device):
        self.calls.append(("remove", device))
        self.unplugged.add(device)
        return 0.5

    def reattach(self, device, model):
        self.calls.append(("reattach", device, parse_model(model).name))
        self.unplugged.discard(device)

    def missing(self, devices):
        return [d for d in devices if d in self.unplugged]


class Events:
    def __init__(self):
        self.recorded: list[dict] = []

    def record(self, event, **fields):          # refuses a name outside the vocabulary, as Store.record does
        self.recorded.append({"event": event_name(event).value, **fields})

    def names(self):
        return [e["event"] for e in self.recorded]


def _lab_node(control=None, host=None) -> Node:
    return Node(host or Recorder(), DISKS, (), owned=True, disk_model=MODEL, control=control or FakeControl())


def _real_node() -> Node:
    return Node(Recorder(), ("/dev/sdb", "/dev/sdc"), ("/dev/sdd",), owned=False)


# --- what a node can do -------------------------------------------------------------------------

def test_a_real_host_node_has_no_device_control_and_says_so_in_one_line():
    node = _real_node()
    assert node.capabilities == frozenset() and not node.is_lab and node.qemu_pid is None
    with pytest.raises(ConfigError) as e:
        node.require(DEVICE_CONTROL, "faults")
    assert str(e.value) == ("faults needs device_control, which host ssh://root@bench1 lacks "
                            "(only the lab's disks are controlled: host: lab)")


def test_a_lab_node_answers_from_its_control():
    control = FakeControl()
    node = _lab_node(control)
    assert node.capabilities == {DEVICE_CONTROL, EMULATED_DISKS} and node.is_lab and node.qemu_pid == 4242
    assert node.require(DEVICE_CONTROL, "faults") is control and node.name == "ssh://root@bench1"


def test_capabilities_are_known_from_the_host_spelling_before_a_node_opens():
    assert capabilities_of("lab") == LAB_CAPABILITIES == QmpDeviceControl.capabilities
    assert {DEVICE_CONTROL, EMULATED_DISKS} <= LAB_CAPABILITIES
    assert capabilities_of("local") == capabilities_of("ssh://root@bench1") == frozenset()


def test_the_lab_nodes_are_built_from_a_lab_or_its_state_and_their_control_pickles():
    cfg = LabConfig(disks=2, extra_disks=1, name="unit")
    lab = SimpleNamespace(host=Recorder(), dir=Path("/labs/unit"), proc=SimpleNamespace(pid=77), cfg=cfg,
                          data_disks=[guest_disk_path(s) for s in cfg.data_serials],
                          extra_disks=[guest_disk_path(s) for s in cfg.extra_serials],
                          provenance=lambda: {"lab_accel": "tcg"})
    node = booted_node(lab)
    assert node.data_devices == tuple(lab.data_disks) and node.extra_devices == tuple(lab.extra_disks)
    assert node.owned and node.disk_model == cfg.model and node.qemu_pid == 77 and node.is_lab
    assert node.provenance == {"lab_accel": "tcg"} and node.control.lab_dir == Path("/labs/unit")
    assert pickle.loads(pickle.dumps(node.control)) == node.control        # a description, not a connection
    state = {"pid": 88, "config": cfg.to_dict(), "data_disks": lab.data_disks, "extra_disks": []}
    again = running_node("unit", state, Recorder())
    assert again.control == QmpDeviceControl(paths.labs_dir() / "unit", 88, "none")
    assert again.disk_model == cfg.model and again.provenance is None and again.extra_devices == ()


def test_the_qmp_control_names_a_lab_disk_by_its_serial_and_refuses_any_other():
    control = QmpDeviceControl(Path("/labs/unit"), None)
    assert control.disk_id(DISKS[1]) == "zbdata01"
    with pytest.raises(ValueError, match="not a lab disk: /dev/sdb"):
        control.read_throttle("/dev/sdb")


# --- faults through the control -----------------------------------------------------------------

FAULT = {"kind": "remove", "disk": 2, "after_s": 0.0, "resilver": False, "resilver_load": None}


def test_a_fault_study_on_a_node_without_device_control_is_refused_as_it_opens():
    with pytest.raises(ConfigError, match="^faults needs device_control, which host ssh://root@bench1 lacks"):
        FaultInjector(FAULT, Events(), _real_node())
    idle = FaultInjector(None, Events(), _real_node())      # no faults: nothing asked of the disks
    idle.reattach_missing(["/dev/sdb"])
    idle.cleanup()


def _during(injector, control, want: str):
    """One faulted run: wait inside it until the control saw `want`."""
    with injector.during("p1", "zb-p1", "r1", list(DISKS)):
        deadline = time.monotonic() + 10
        while not any(c[0] == want for c in control.calls) and time.monotonic() < deadline:
            time.sleep(0.01)


def test_a_pulled_disk_goes_through_the_control_and_comes_back_before_teardown(monkeypatch):
    monkeypatch.setattr(faults_mod, "SAMPLING_LEAD_S", 0.0)
    control, store = FakeControl(), Events()
    node = _lab_node(control)
    injector = FaultInjector(FAULT, store, node)
    _during(injector, control, "remove")
    assert control.calls == [("remove", DISKS[1])] and injector.removed == {"zb-p1": DISKS[1]}
    injector.before_teardown(SimpleNamespace(name="zb-p1"), "p1", "mirror")
    assert control.calls[-1] == ("reattach", DISKS[1], MODEL.name) and not control.unplugged
    assert any("wait-disk" in argv for argv in node.host.calls)         # the guest sees it again
    assert store.names() == ["fault injected", "fault undone"]
    assert store.recorded[0]["took_s"] == 0.5 and store.recorded[0]["device"] == DISKS[1]


def test_a_slowed_disk_crawls_through_the_run_and_gets_its_model_back(monkeypatch):
    monkeypatch.setattr(faults_mod, "SAMPLING_LEAD_S", 0.0)
    control, store = FakeControl(), Events()
    injector = FaultInjector({**FAULT, "kind": "slow"}, store, _lab_node(control))
    _during(injector, control, "set_model")
    assert control.calls == [("set_model", DISKS[1], parse_model(CRAWL).name), ("set_model", DISKS[1], MODEL.name)]
    assert store.names() == ["fault injected", "fault undone"]


def test_a_disk_an_interrupted_sweep_left_unplugged_is_plugged_back_and_no_other():
    control = FakeControl(unplugged={DISKS[2]})
    FaultInjector(FAULT, Events(), _lab_node(control)).reattach_missing(list(DISKS))
    assert control.calls == [("reattach", DISKS[2], MODEL.name)]


# --- disk models through the control ------------------------------------------------------------

def _request(pool_id: str, settings: dict | None = None) -> PoolRequest:
    """A mirror's pool request, with no target: what pool_setup reads of one is its id and settings."""
    return PoolRequest(pool_id, "mirror(2)", Layout("mirror", 2), replicate=1, block=1, fill="none", targets=(),
                       settings=settings)


def test_disk_models_are_set_read_back_and_put_back_through_the_control():
    control, store = FakeControl(), Events()
    control.throttles[DISKS[0]] = {**UNTHROTTLED, "iops": 7}
    pool = _request("p1", {"model": "sata-ssd"})
    with pool_setup(pool, pool.layout, list(DISKS[:2]), _lab_node(control), store) as (model, readback):
        assert model == "sata-ssd" and readback == {"data_model_readback": "sata-ssd"}
        want = parse_model("sata-ssd").qmp_throttle_arguments()
        assert all(control.throttles[d] == want for d in DISKS[:2])
    assert control.throttles[DISKS[0]] == {**UNTHROTTLED, "iops": 7} and control.throttles[DISKS[1]] == UNTHROTTLED
    (event,) = store.recorded
    assert event["event"] == "disk models set" and event["models"] == {"zbdata00": "sata-ssd", "zbdata01": "sata-ssd"}
    assert set(event["throttles"]) == {"zbdata00", "zbdata01"}


HDD_7200 = {"model": "mech:hdd-7200", "kind": "hdd"}


def test_a_mech_level_is_served_by_nbdkit_read_back_and_the_disk_put_back_as_it_was():
    control, store = FakeControl(served={DISKS[0]: "mech:null", DISKS[1]: "mech:null"}), Events()
    control.throttles[DISKS[0]] = {**UNTHROTTLED, "iops": 7}
    pool = _request("p1", {"model": "mech:hdd-7200"})
    with pool_setup(pool, pool.layout, list(DISKS[:2]), _lab_node(control), store) as (model, readback):
        assert model == "mech:hdd-7200" and readback == {"data_model_readback": "mech:hdd-7200"}
        assert control.served == {DISKS[0]: "mech:hdd-7200", DISKS[1]: "mech:hdd-7200"}
        assert all(control.throttles[d] == UNTHROTTLED for d in DISKS[:2])       # no throttle on a model
    (event,) = store.recorded
    assert event["models"] == {"zbdata00": "mech:hdd-7200", "zbdata01": "mech:hdd-7200"}
    assert {d: {k: v[k] for k in HDD_7200} for d, v in event["served"].items()} == \
        {"zbdata00": HDD_7200, "zbdata01": HDD_7200}
    assert event["served"]["zbdata00"]["params"]["rpm"] == 7200 and event["throttles"]["zbdata00"] == UNTHROTTLED
    # put back: the model it served, then exactly the throttle it had
    assert control.served == {DISKS[0]: "mech:null", DISKS[1]: "mech:null"}
    assert control.throttles[DISKS[0]] == {**UNTHROTTLED, "iops": 7}
    assert control.calls[-2:] == [("serve", DISKS[1], "mech:null"), ("set_throttle", DISKS[1], UNTHROTTLED)]


def test_a_throttle_level_on_a_disk_nbdkit_serves_is_throttled_over_passthrough():
    control, store = FakeControl(served={DISKS[0]: "mech:hdd-7200", DISKS[1]: "mech:hdd-7200"}), Events()
    pool = _request("p1", {"model": "hdd"})
    with pool_setup(pool, pool.layout, list(DISKS[:2]), _lab_node(control), store):
        assert control.served == {DISKS[0]: "mech:null", DISKS[1]: "mech:null"}
        assert control.throttles[DISKS[0]] == {**UNTHROTTLED, "iops": 150, "bps": 180 << 20}
    assert store.recorded[0]["served"]["zbdata00"]["model"] == "mech:null"
    assert control.served == {DISKS[0]: "mech:hdd-7200", DISKS[1]: "mech:hdd-7200"}      # its boot model back


def test_a_served_model_read_back_other_than_set_stops_the_pool_and_the_disk_is_put_back():
    control = FakeControl(served={DISKS[0]: "mech:null", DISKS[1]: "mech:null"},
                          answer={"mech:hdd-7200": "mech:hdd-5400"})
    pool = _request("p1", {"model": "mech:hdd-7200"})
    with pytest.raises(ZbenchError, match=r"^lab disk zbdata00: nbdkit serves mech:hdd-5400 .*, set mech:hdd-7200"):
        with pool_setup(pool, pool.layout, list(DISKS[:2]), _lab_node(control), Events()):
            pass
    assert control.served[DISKS[0]] == "mech:null" and DISKS[1] not in control.throttles


def test_a_mech_level_on_a_disk_qemu_opens_is_refused_before_the_pool():
    pool = _request("p1", {"model": "mech:hdd-7200"})
    with pytest.raises(ConfigError, match="is not served through nbdkit"):
        with pool_setup(pool, pool.layout, list(DISKS[:2]), _lab_node(FakeControl()), Events()):
            pass


def test_disk_models_on_a_node_without_device_control_are_refused_before_the_pool():
    pool = _request("p1", {"model": "sata-ssd"})
    with pytest.raises(ConfigError, match="^disk models as factors needs device_control"):
        with pool_setup(pool, pool.layout, ["/dev/sdb", "/dev/sdc"], _real_node(), Events()):
            pass
    with pool_setup(_request("p2"), pool.layout, ["/dev/sdb", "/dev/sdc"], _real_node(),
                    Events()) as (model, readback):          # no model factor: nothing asked of the disks
        assert model is None and readback == {}


# --- the QMP control against a fake QMP socket --------------------------------------------------

class FakeQmp:
    """A QMP server on a unix socket: a greeting, then each command's canned return."""

    def __init__(self, path: Path, returns: dict):
        self.returns, self.commands = returns, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rwb") as f:
                f.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
                f.flush()
                for line in f:
                    msg = json.loads(line)
                    self.commands.append(msg)
                    f.write(json.dumps({"return": self.returns.get(msg["execute"], {})}).encode() + b"\n")
                    f.flush()


@pytest.fixture
def lab_dir():
    d = Path(tempfile.mkdtemp(prefix="zbq", dir="/tmp"))     # a unix socket path stays short
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_the_qmp_control_finds_unplugged_disks_and_reads_a_throttle_back(lab_dir):
    (lab_dir / "zbdata00.raw").touch()
    qmp = FakeQmp(lab_dir / "qmp.sock", {
        "qom-list": [{"name": "dev-zbdata00"}, {"name": "dev-zbdata02"}, {"name": "net0"}],
        "query-block": [{"qdev": "/machine/peripheral/dev-zbdata00/virtio-backend",
                         "inserted": {"iops": 400, "bps": 100 << 20, "detect_zeroes": "off"}}]})
    control = QmpDeviceControl(lab_dir, 99)
    assert control.missing(list(DISKS)) == [DISKS[1]]
    assert control.read_throttle(DISKS[0]) == {**UNTHROTTLED, "iops": 400, "bps": 100 << 20}
    control.set_throttle(DISKS[0], {"iops": 400})
    sent = qmp.commands[-1]
    assert sent["execute"] == "block_set_io_throttle" and sent["arguments"] == {
        "id": "/machine/peripheral/dev-zbdata00/virtio-backend", **UNTHROTTLED, "iops": 400}
    qmp.sock.close()


def test_the_qmp_control_refuses_a_mech_model_as_a_throttle_on_a_disk_qemu_opens(lab_dir):
    # Before: block_set_io_throttle with six zeros, read back as six zeros: the disk ran unthrottled as mech:hdd-7200.
    (lab_dir / "zbdata00.raw").touch()                          # no status beside it: no nbdkit serves it
    qmp = FakeQmp(lab_dir / "qmp.sock", {})
    with pytest.raises(ConfigError, match=r"^lab disk zbdata00: mech:hdd-7200 is a mechanism model, served by "
                                          r"nbdkit, never a QEMU throttle; this disk is a file QEMU opens"):
        QmpDeviceControl(lab_dir, 99).set_model(DISKS[0], "mech:hdd-7200")
    assert qmp.commands == [] and not (lab_dir / "zbdata00.model").exists()    # refused before anything is asked
    qmp.sock.close()


def test_the_qmp_control_has_nbdkit_serve_a_mech_model_and_clears_the_throttle(lab_dir):
    from test_nbd_model import FakePlugin
    (lab_dir / "zbdata00.raw").touch()
    plugin = FakePlugin(lab_dir / "zbdata00.raw")               # nbdkit in passthrough, as the lab boots it
    qmp = FakeQmp(lab_dir / "qmp.sock", {})
    control = QmpDeviceControl(lab_dir, 99)
    try:
        assert control.read_served(DISKS[0])["model"] == "mech:null"
        control.set_model(DISKS[0], "mech:hdd-7200")
        assert control.read_served(DISKS[0])["model"] == "mech:hdd-7200" and plugin.seen == [(1, "mech:hdd-7200")]
        (sent,) = [c for c in qmp.commands if c["execute"] == "block_set_io_throttle"]
        assert sent["arguments"] == {"id": "/machine/peripheral/dev-zbdata00/virtio-backend", **UNTHROTTLED}
        assert control.serve(DISKS[0], "mech:null")["seq"] == 2
    finally:
        plugin.stop()
        qmp.sock.close()


def test_a_running_lab_of_a_mech_model_gives_its_node(lab_dir):
    # its state's model record carries the mech model's parameters beside the DiskModel's fields
    state = {"pid": 88, "config": LabConfig(disks=2, model="mech:hdd-7200", name="unit").to_dict(),
             "data_disks": list(DISKS[:2]), "extra_disks": []}
    node = running_node("unit", state, Recorder())
    assert node.disk_model == parse_model("mech:hdd-7200") and node.disk_model.mech == "mech:hdd-7200"
