"""The focused lab subset on OpenZFS 2.1.11 (Debian 12's own release): no `-j` there.

Pools of every vdev class, targets, device safety and one measured run with its
counters, on a second lab booted from the 2.1 image. The whole suite runs on 2.3;
this subset is what differs between the releases (how state is read back, the
counters' sources), kept small so CI stays within its budget.
"""

import pytest

from zbench_lib.core.errors import ConfigError
from conftest import own_lab
from zbench_lib.hosts.lab import LabConfig
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool, find_leftovers
from zbench_lib.zfs.prefill import prefill
from zbench_lib.measure.runner import measure
from zbench_lib.zfs.safety import check_devices
from zbench_lib.zfs.targets import Dataset, Zvol
from zbench_lib.zfs.version import openzfs_version
from zbench_lib.measure.run_context import RunContext

MiB = 1024 ** 2
LAB21 = LabConfig(disks=4, disk_bytes=512 * MiB, model="custom:iops=400,bw=100M", extra_disks=4,
                  extra_disk_bytes=256 * MiB, name="pytest-zfs21", zfs="2.1")
# idle_labs_ok: pools, properties, refusals and one run's counter layers; no check here is a
# host-contention or a speed bound, so the labs of the modules after it may wait up beside it.
pytestmark = [pytest.mark.lab, pytest.mark.boots(LAB21, idle_labs_ok=True)]


@pytest.fixture(scope="module")
def lab21():
    with own_lab(LAB21) as lab:
        yield lab


def test_the_lab_runs_openzfs_2_1_without_json(lab21):
    v = openzfs_version(lab21.host)
    assert (v.major, v.minor) == (2, 1) and not v.has_json
    assert not lab21.host.run(["zpool", "status", "-j"], check=False).ok


@pytest.mark.parametrize("layout, n_data, n_extra", [
    # a special vdev must match the pool's redundancy: mirrored beside raidz
    (Layout("raidz1", 3, log=1, cache=1, special=2, special_mirror=True), 3, 4),
    (Layout("mirror", 2, vdevs=2), 4, 0),
    (Layout("raidz2", 4), 4, 0),
], ids=["raidz1+log+cache+mirrored special", "2x mirror", "raidz2(4)"])
def test_pools_are_created_read_back_and_destroyed(lab21, layout, n_data, n_extra):
    devices = lab21.data_disks[:n_data] + lab21.extra_disks[:n_extra]
    with Pool(lab21.host, layout, devices, owned_devices=True) as pool:
        assert pool.topology is not None                # checked against the layout in create()
        assert pool.pool_properties["ashift"] == 12
        assert pool.status()["scan"] == "none"
        name = pool.name
    assert name not in find_leftovers(lab21.host)


def test_target_properties_are_read_back_from_text(lab21):
    with Pool(lab21.host, Layout("stripe", 2), lab21.data_disks[:2], owned_devices=True) as pool:
        z = pool.create_target(Zvol("vol", 64 * MiB, 8192, compression="off", sync="always"))
        assert z.properties["volblocksize"] == 8192 and z.properties["volsize"] == 64 * MiB
        assert z.mismatches == {}
        d = pool.create_target(Dataset("fs", 16384, atime="off", compression="lz4"))
        assert d.properties["recordsize"] == 16384 and d.mismatches == {}


def test_a_disk_of_an_imported_pool_and_one_with_a_filesystem_are_refused(lab21):
    h = lab21.host
    ext4, member = lab21.extra_disks[0], lab21.extra_disks[1]
    for d in (ext4, member):
        h.run(["wipefs", "-a", "-q", d])
    h.run(["mkfs.ext4", "-q", "-F", ext4])
    h.run(["zpool", "create", "-f", "tank21", member])
    try:
        with pytest.raises(ConfigError) as exc:
            check_devices(h, [ext4, member])
        text = str(exc.value)
        assert "ext4" in text and "belongs to an imported ZFS pool" in text
    finally:
        h.run(["zpool", "destroy", "tank21"], check=False)
        for d in (ext4, member):
            h.run(["zpool", "labelclear", "-f", d], check=False)
            h.run(["wipefs", "-a", "-q", d], check=False)


def test_a_measured_run_has_every_counter_layer(lab21, tmp_path):
    disks = lab21.data_disks[:2]
    with Pool(lab21.host, Layout("stripe", 2), disks, owned_devices=True) as pool:
        z = pool.create_target(Zvol("vol", 96 * MiB, 16384, compression="off", primarycache="metadata"))
        prefill(pool, z, "whole", progress=False)
        res = measure(lab21.host, pool=pool.name, target_path=z.path, devices=disks, workload="randread",
                      overrides={"runtime_s": 4, "ramp_time_s": 1, "bs": "16k", "numjobs": 1, "iodepth": 4},
                      remote_dir=f"{pool.work_dir()}/t21", raw_dir=tmp_path / "run21",
                      context=RunContext.recording(cache="cold", lab=True, scan_at_start="none"),
                      target_name=z.full_name)
    r = res.rows[0]
    assert r["iops"] > 0 and r["samples_disk"] >= 2 and r["samples_cpu"] >= 2
    assert 0.8 <= r["dev_read_bytes"] / r["io_bytes"] <= 1.3, r
    assert 0.85 <= r["pool_read_bytes"] / r["io_bytes"] <= 1.3, r   # 0.76 with whole-second stamps
    # An idle pool opens no TXG while it is only read, so a 4 s read window may hold none:
    # the txg layer may be empty; every other layer must be there.
    missing = set(filter(None, (r.get("missing_layers") or "").split(",")))
    assert missing <= {"txg"}, missing
