"""Bad lab input is refused before anything is created (no VM, no files)."""

import pytest

from zbench_lib.core import paths
from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.lab import Lab, LabConfig


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("kwargs, message", [
    (dict(disks=0), "needs at least 1 data disk, got 0"),
    (dict(disks=-2), "needs at least 1 data disk"),
    (dict(disks=30), "at most 24 disks"),
    (dict(extra_disks=-1), "extra_disks cannot be negative"),
    (dict(disk_bytes=1024), "at least 64 MiB"),
    (dict(memory_mib=256), "memory_mib must be at least 1024"),
    (dict(model="floppy"), "unknown disk model 'floppy'"),
    (dict(model="custom:iops=-100"), "iops must be positive"),
    (dict(accel="xen"), "accel must be auto, kvm or tcg"),
    (dict(name="../etc"), "name must be 1-32 letters"),
    (dict(disks="4"), "disks must be an integer"),
])
def test_bad_lab_config(kwargs, message):
    with pytest.raises(ConfigError) as exc:
        LabConfig(**kwargs)
    assert message in str(exc.value)


def test_no_space_for_disk_files_is_refused_before_anything_is_created(cache):
    cfg = LabConfig(disks=4, disk_bytes=1024 ** 5)   # 4 PiB of sparse disks
    lab = Lab(cfg)
    with pytest.raises(ConfigError, match="no space for the lab's disk files"):
        lab.up()
    assert not (paths.labs_dir() / cfg.name).exists()


def test_missing_qemu_is_refused(cache, monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ConfigError, match="qemu-system-x86_64 or qemu-img not found"):
        Lab(LabConfig()).up()
    assert not (paths.labs_dir() / "default").exists()


def test_qemu_argv_applies_the_disk_model_to_every_data_disk(cache):
    lab = Lab(LabConfig(disks=3, model="hdd", extra_disks=1))
    lab.image, lab.port, lab.accel = paths.cache_dir() / "img", 2222, "tcg"
    argv = lab.qemu_argv()
    drives = [a for a in argv if a.startswith("file=") and ".raw" in a]
    assert len(drives) == 4
    assert all("throttling.iops-total=150" in d for d in drives[:3])
    assert "throttling" not in drives[3]            # extra disks default to unthrottled
    assert "hostfwd=tcp:127.0.0.1:2222-:22" in " ".join(argv)
    assert any("qmp.sock" in a for a in argv)


def test_disks_served_through_nbdkit_for_a_mech_factor_keep_their_throttle_over_it(cache):
    # nbd_data: the data disks reach nbdkit's sockets (passthrough at boot) under the hdd throttle; the
    # extra disk stays a file QEMU opens.
    lab = Lab(LabConfig(disks=2, model="hdd", extra_disks=1, nbd_data=True, name="nbdf"))
    lab.image, lab.port, lab.accel = paths.cache_dir() / "img", 2222, "tcg"
    drives = [a for a in lab.qemu_argv() if "id=zb" in a]
    assert len(drives) == 3
    for serial, drive in zip(("zbdata00", "zbdata01"), drives[:2]):
        assert drive.startswith("driver=raw,file.driver=nbd,file.server.type=unix,"
                                f"file.server.path={lab.dir / (serial + '.nbd.sock')},")
        assert drive.endswith(",cache=writeback,discard=unmap,throttling.iops-total=150,"
                              f"throttling.bps-total={180 * 2**20}")
    assert drives[2].startswith(f"file={lab.dir / 'zbextra00.raw'},")
    cfg = lab.cfg
    assert [cfg.served(s) for s in ("zbdata00", "zbdata01", "zbextra00")] == [True, True, False]
    assert LabConfig(model="mech:nvme").served("zbdata00") and not LabConfig().served("zbdata00")
    assert LabConfig(extra_disks=1, nbd_extra=True).served("zbextra00")
    with pytest.raises(ConfigError, match="lab: nbd_data must be true or false, got 1"):
        LabConfig(nbd_data=1)
