"""Mechanism disk models in the lab (issue 33): QEMU reaches nbdkit's socket, the guest sees a disk.

Its own small lab ("pytest-mech"), booted once for this module beside the session's lab:
two data disks on the 7200 rpm model served by nbdkit, one extra disk on today's `hdd`
throttle for comparison. Run alone:

    .venv/bin/python -m pytest -q -m lab tests/test_disk_model_lab.py
"""

import json

import pytest

from conftest import own_lab
from zbench_lib.hosts.lab import LabConfig
from zbench_lib.hosts.lab_state import is_lab_nbdkit
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool

GiB = 1024 ** 3
REV_MS = 60_000 / 7200          # one turn of the 7200 rpm model
MECH_LAB = LabConfig(disks=2, disk_bytes=1 * GiB, model="mech:hdd-7200", extra_disks=1,
                     extra_disk_bytes=1 * GiB, extra_model="hdd", name="pytest-mech")
pytestmark = [pytest.mark.lab, pytest.mark.boots(MECH_LAB)]


@pytest.fixture(scope="module")
def mech_lab():
    with own_lab(MECH_LAB) as lab:
        yield lab


def _fio(host, device, rw, depth, runtime=8, **extra):
    argv = ["fio", "--name=m", f"--filename={device}", f"--rw={rw}", "--bs=4k", f"--iodepth={depth}",
            "--ioengine=libaio", "--direct=1", "--time_based", f"--runtime={runtime}", "--size=512M",
            "--output-format=json", *[f"--{k}={v}" for k, v in extra.items()]]
    return json.loads(host.run(argv, timeout=runtime + 120).stdout)["jobs"][0]


def test_each_modelled_disk_has_its_own_nbdkit_recorded_in_the_state(mech_lab):
    state = json.loads((mech_lab.dir / "state.json").read_text())
    assert set(state["nbdkit"]) == set(mech_lab.cfg.data_serials)        # the throttled extra has none
    assert all(is_lab_nbdkit(e, mech_lab.dir) for e in state["nbdkit"].values())
    assert "driver=raw,file.driver=nbd" in " ".join(mech_lab.qemu_argv())


def test_a_pool_on_modelled_disks_is_created_measured_and_destroyed(mech_lab):
    with Pool(mech_lab.host, Layout("mirror", 2), mech_lab.data_disks, owned_devices=True) as pool:
        mech_lab.host.run(["zfs", "create", "-V", "256M", "-o", "volblocksize=8K",
                           "-o", "primarycache=metadata", f"{pool.name}/v"])
        dev = f"/dev/zvol/{pool.name}/v"
        mech_lab.host.run(["udevadm", "settle"])
        mech_lab.host.run(["fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M",
                           "--ioengine=libaio", "--direct=1", "--iodepth=4"], timeout=600)
        job = _fio(mech_lab.host, dev, "randread", 4, runtime=10)
        # A mirror of two 7200 rpm disks: more than one disk's ~79 IOPS at depth 1, far below the
        # emulation's ceiling (lab-facts: ~8.7k), so the disks, not QEMU, set it.
        assert 60 < job["read"]["iops"] < 1000
    assert pool.name not in mech_lab.host.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()


def test_random_read_iops_grow_with_depth_on_the_model_not_on_the_throttle(mech_lab):
    model_disk, throttled = mech_lab.data_disks[0], mech_lab.extra_disks[0]
    for disk in (model_disk, throttled):     # allocated blocks: reads of holes skip nothing here,
        mech_lab.host.run(["fio", "--name=fill", f"--filename={disk}", "--rw=write", "--bs=1M",
                           "--ioengine=libaio", "--direct=1", "--iodepth=4", "--size=512M"], timeout=900)
    model = {d: _fio(mech_lab.host, model_disk, "randread", d)["read"]["iops"] for d in (1, 16)}
    throttle = {d: _fio(mech_lab.host, throttled, "randread", d)["read"]["iops"] for d in (1, 16)}
    assert model[16] > 1.5 * model[1], model            # NCQ: shortest positioning time first
    assert throttle[16] < 1.2 * throttle[1], throttle   # a constant-service-time device (150 IOPS)


def test_a_flush_after_a_sequential_write_costs_about_a_rotation(mech_lab):
    job = _fio(mech_lab.host, mech_lab.data_disks[1], "write", 1, runtime=6, fsync=1)
    p50_ms = job["sync"]["lat_ns"]["percentile"]["50.000000"] / 1e6
    assert 0.5 * REV_MS < p50_ms < 1.5 * REV_MS, p50_ms
