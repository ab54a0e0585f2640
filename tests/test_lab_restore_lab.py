"""Labs restored from a saved VM state (issue 51), with real QEMU and OpenZFS: what a restored guest
must get right, and the cold boot that replaces a state QEMU cannot load.

Two small labs of the default shape (2 GiB, 2 CPUs: the session lab's, so its saved state is the one
the suite restores everywhere) are restored side by side with `up_together`, as a fleet's hosts and
a storage lab's clients are. A third lab is given a state that cannot be loaded (its vm.state is not a
migration stream): it must boot cold, say why, remove the state, and work as a lab. The cold lab is
also the reference for the ZFS module: a restored guest's zfs and spl parameters must be a fresh
boot's. About 2 min of lab time (one cold boot; the restores are seconds).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from zbench_lib.hosts import lab_image, lab_restore
from zbench_lib.hosts.kvm import choose_accel
from zbench_lib.hosts.fleet import check_fleet, read_fingerprint
from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.hosts.lab_group import up_together

pytestmark = pytest.mark.lab
MiB = 1024 ** 2
MEMORY_SIZED = {"zfs.zfs_dirty_data_max", "zfs.zfs_dirty_data_max_max", "zfs.zfs_wrlog_data_max",
                "zfs.zfs_dedup_log_mem_max"}
SMALL = dict(disks=2, disk_bytes=128 * MiB, model="custom:iops=400,bw=100M")


@pytest.fixture(scope="module")
def twins():
    if not lab_restore.enabled():
        pytest.skip("ZBENCH_LAB_RESTORE=0: labs boot cold")
    labs = [Lab(LabConfig(**SMALL, name=f"pytest-twin{i}")) for i in (1, 2)]
    up_together(labs)
    try:
        yield labs
    finally:
        for lab in reversed(labs):
            lab.down()


@pytest.fixture(scope="module")
def fallback(tmp_path_factory):
    """A lab whose saved state cannot be loaded: it boots cold. The state lives in a directory of its
    own (the suite's real states are not touched)."""
    states = tmp_path_factory.mktemp("states")
    cfg = LabConfig(**SMALL, name="pytest-coldfallback")
    image = lab_image.cached_image(cfg.zfs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lab_restore, "states_dir", lambda: states)
        mp.setenv("ZBENCH_LAB_RESTORE", "1")
        lab = Lab(cfg)
        bad = states / lab_restore.state_key(image, cfg, choose_accel(cfg.accel, image / "vmlinuz"))
        bad.mkdir()
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(image / "rootfs.raw"),
                        str(bad / "root.qcow2")], check=True)
        (bad / "vm.state").write_bytes(b"not a migration stream\n" * 1000)
        (bad / "manifest.json").write_text(json.dumps({"zfs_parameters": {}}))
        lab.up()
    try:
        yield lab, bad
    finally:
        lab.down()


def test_restored_labs_are_restored_in_seconds_with_their_own_clock(twins):
    for lab in twins:
        assert lab.start_kind == "restored", lab.start_note
        assert lab.provenance()["lab_start"] == "restored"
        drift = lab.provenance()["lab_clock_drift_s"]
        assert isinstance(drift, float)
        before = time.time()
        guest = float(lab.host.run(["date", "+%s.%N"]).stdout)
        # set on restore to the controller's time: within one ssh round trip of it
        assert before - 5 <= guest <= time.time() + 5, (guest, before)


def test_restored_labs_are_two_machines_to_a_fleet_and_to_zfs(twins):
    a, b = twins
    ids = [lab.host.run(["cat", "/etc/machine-id"]).stdout.strip() for lab in twins]
    assert ids[0] != ids[1] and all(len(i) == 32 for i in ids)
    hostids = [lab.host.run(["hostid"]).stdout.strip() for lab in twins]
    assert hostids[0] != hostids[1], hostids
    assert hostids == [lab.restored["hostid"] for lab in twins]
    fps = [(lab.cfg.name, read_fingerprint(lab.host, tuple(lab.data_disks))) for lab in twins]
    check_fleet(fps)          # raises "one machine under two names" if the two were one


def test_restored_lab_holds_no_state_of_an_earlier_lab_and_its_disks_work(twins):
    lab = twins[0]
    assert lab.host.run(["zpool", "list", "-H"]).stdout.strip() == ""
    assert not lab.host.run(["test", "-e", "/etc/zfs/zpool.cache"], check=False).ok
    mounts = lab.host.run(["cat", "/proc/mounts"]).stdout
    assert not [m for m in mounts.splitlines() if m.split()[2] == "zfs"], mounts
    # the hot-plugged data disks are the lab's own, of its size, and take a pool
    sizes = lab.host.run(["blockdev", "--getsize64", *lab.data_disks]).stdout.split()
    assert sizes == [str(128 * MiB)] * 2
    lab.host.run(["zpool", "create", "-f", "ptwin", *lab.data_disks])
    try:
        assert "ONLINE" in lab.host.run(["zpool", "list", "-H", "-o", "health", "ptwin"]).stdout
    finally:
        lab.host.run(["zpool", "destroy", "ptwin"])


def test_a_state_that_cannot_be_loaded_boots_cold_and_says_why(fallback):
    lab, bad = fallback
    assert lab.start_kind == "cold"
    assert "not loaded" in lab.start_note and "removed" in lab.start_note, lab.start_note
    assert not bad.exists()
    assert lab.provenance()["lab_start_note"] == lab.start_note
    assert lab.host.run(["zpool", "list", "-H"]).ok


def test_restored_zfs_module_has_a_fresh_boots_parameters(twins, fallback):
    cold, _ = fallback
    fresh = lab_restore.zfs_parameters(cold.host)
    restored = lab_restore.zfs_parameters(twins[1].host)
    assert len(fresh) > 100
    assert fresh.keys() == restored.keys()
    differ = {k: (fresh[k], restored[k]) for k in fresh if fresh[k] != restored[k]}
    # Sized at module load from the memory the kernel counted, which a cold boot with its data disks
    # on the command line has a few pages less of than the bare machine the state was saved from
    # (measured: 24 KiB of 2 GiB). Those must agree to 0.01%; every other parameter exactly.
    assert set(differ) <= MEMORY_SIZED, differ
    for name, (cold_value, restored_value) in differ.items():
        assert abs(int(cold_value) - int(restored_value)) <= 1e-4 * int(cold_value), (name, differ[name])
