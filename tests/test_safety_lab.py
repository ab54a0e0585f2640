"""Disks in use or holding data are refused, with a reason, and nothing is written."""

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool
from zbench_lib.zfs.safety import check_devices

pytestmark = pytest.mark.lab


def _digest(host, dev):
    # md5 is plenty to detect a write and several times cheaper under emulation.
    return host.run(["md5sum", dev], timeout=300).stdout.split()[0]


@pytest.fixture
def dirty_disks(lab, lab_host):
    ext4, parted, exported = lab.extra_disks[:3]
    imported = lab.data_disks[7]
    swap = lab.extra_disks[3]
    h = lab_host
    for d in (ext4, parted, exported, imported, swap):
        h.run(["zpool", "labelclear", "-f", d], check=False)
        h.run(["wipefs", "-a", "-q", d])
    h.run(["mkfs.ext4", "-q", "-F", ext4])
    h.run(["sfdisk", "-q", parted], input="label: gpt\n,\n")
    h.run(["udevadm", "settle"])
    h.run(["zpool", "create", "-f", "foreign", exported])
    h.run(["zpool", "export", "foreign"])
    h.run(["zpool", "create", "-f", "tank", imported])
    h.run(["mkswap", "-q", swap])
    h.run(["swapon", swap])
    disks = {"ext4": ext4, "parted": parted, "exported": exported, "imported": imported,
             "swap": swap}
    yield disks
    h.run(["swapoff", swap], check=False)
    h.run(["zpool", "destroy", "tank"], check=False)
    for d in disks.values():
        h.run(["zpool", "labelclear", "-f", d], check=False)
        h.run(["wipefs", "-a", "-q", d], check=False)
    h.run(["udevadm", "settle"], check=False)


def test_each_dirty_disk_is_refused_with_its_reason_and_left_untouched(lab_host, dirty_disks):
    before = {k: _digest(lab_host, d) for k, d in dirty_disks.items() if k != "imported"}
    devices = list(dirty_disks.values()) + ["/dev/vda"]
    with pytest.raises(ConfigError) as exc:
        check_devices(lab_host, devices)
    msg = str(exc.value)
    lines = {k: next(l for l in msg.splitlines() if l.strip().startswith(d + ":"))
             for k, d in list(dirty_disks.items()) + [("root", "/dev/vda")]}
    assert "carries a ext4 signature" in lines["ext4"]
    assert "has partitions" in lines["parted"] and "gpt partition table" in lines["parted"]
    assert "ZFS label of pool 'foreign'" in lines["exported"]
    assert "belongs to an imported ZFS pool" in lines["imported"]
    assert "in use as swap" in lines["swap"]
    assert "holds the root filesystem" in lines["root"] and "is mounted (/)" in lines["root"]
    after = {k: _digest(lab_host, d) for k, d in dirty_disks.items() if k != "imported"}
    assert before == after


def test_pool_creation_on_dirty_disks_runs_no_command(lab_host, dirty_disks):
    pool = Pool(lab_host, Layout("mirror", 2), [dirty_disks["ext4"], dirty_disks["exported"]])
    with pytest.raises(ConfigError, match="refusing devices"):
        pool.create()
    assert pool.commands == [] and not pool.created


def test_signature_override_is_per_device_and_by_name(lab_host, dirty_disks):
    ext4 = dirty_disks["ext4"]
    checks = check_devices(lab_host, [ext4], overrides=[ext4])
    assert checks[0].signatures == ["carries a ext4 signature"]
    with pytest.raises(ConfigError, match="override names devices not in the list"):
        check_devices(lab_host, [ext4], overrides=["/dev/disk/by-id/other"])
    # An override never covers hard reasons such as a foreign ZFS label.
    with pytest.raises(ConfigError, match="ZFS label of pool 'foreign'"):
        check_devices(lab_host, [dirty_disks["exported"]], overrides=[dirty_disks["exported"]])


def test_clean_disks_pass(lab, lab_host):
    for d in lab.data_disks[:2]:
        lab_host.run(["zpool", "labelclear", "-f", d], check=False)
        lab_host.run(["wipefs", "-a", "-q", d])
    checks = check_devices(lab_host, lab.data_disks[:2])
    assert all(not c.refused() for c in checks)
