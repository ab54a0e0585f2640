"""Baseline surfaces: ext4 on a zvol (mkfs, mount, guaranteed unmount) and the raw device
(safety checks before a write, wipe only on request), against a fake host recording argvs."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.hosts.base import Host, Result
from zbench_lib.zfs import filesystems
from zbench_lib.zfs.filesystems import (FsOnZvol, mkfs_argv, parse_e2fs_header, parse_findmnt_json,
                                        parse_proc_mounts)
from zbench_lib.zfs.raw_device import RawDevice, parse_queue, parse_scheduler

FIX = Path(__file__).parent / "fixtures" / "filesystems"
ZVOL = "/dev/zvol/zbench-t-1a2b3c/fsvol"
MNT = "/mnt/zbench/fs-test"
MiB = 1024 ** 2
BASE_MOUNTS = ("/dev/vda / ext4 rw,relatime 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
               "zbench-t-1a2b3c /zbench-t-1a2b3c zfs rw,xattr,noacl,casesensitive 0 0\n")
LSBLK = {"blockdevices": [
    {"name": "/dev/vda", "path": "/dev/vda", "type": "disk", "mountpoints": ["/"], "fstype": "ext4"},
    {"name": "/dev/vdb", "path": "/dev/vdb", "type": "disk", "mountpoints": [None], "fstype": None},
    {"name": "/dev/vdc", "path": "/dev/vdc", "type": "disk", "mountpoints": ["/srv"], "fstype": "ext4"},
]}


class FakeHost(Host):
    """Records every argv; keeps a mount table that mount/umount change."""

    name = "fake"

    def __init__(self, busy_umounts=0, mkfs_xfs=False, signatures=None, pool_devices=(),
                 fail=()):
        self.calls: list[list[str]] = []
        self.mounted: dict[str, str] = {}
        self.busy_umounts, self.mkfs_xfs = busy_umounts, mkfs_xfs
        self.signatures = signatures or {}
        self.pool_devices, self.fail = list(pool_devices), set(fail)

    def run(self, argv, *, timeout=600, check=True, input=None):
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        rc, out, err = self.respond(argv)
        if check and rc:
            raise CommandError(self.name, argv, rc, err, out)
        return Result(tuple(argv), rc, out, err, 0.0)

    def respond(self, argv):
        if argv[0] in self.fail:
            return 32, "", f"{argv[0]}: failed"
        match argv:
            case ["readlink", "-e", path]:
                real = "/dev/zd0" if path.startswith("/dev/zvol/") else path
                return (0, real + "\n", "") if not path.endswith("missing") else (1, "", "")
            case ["test", "-f", path]:
                return (0 if path.endswith(".img") else 1), "", ""
            case ["test", "-b", path]:
                return (1 if path.endswith(".img") else 0), "", ""
            case ["cat", "/proc/self/mounts"]:
                return 0, BASE_MOUNTS + "".join(f"{s} {t} ext4 rw,noatime 0 0\n"
                                                for t, s in self.mounted.items()), ""
            case ["cat", "/proc/swaps"]:
                return 0, "Filename\tType\tSize\tUsed\tPriority\n", ""
            case ["mkdir", path] if path in self.mounted:
                return 1, "", f"mkdir: cannot create directory '{path}': File exists"
            case ["mount", "-t", _, "-o", _, dev, target]:
                self.mounted[target] = "/dev/zd0" if dev.startswith("/dev/zvol/") else dev
            case ["umount", target]:
                if self.busy_umounts:
                    self.busy_umounts -= 1
                    return 32, "", f"umount: {target}: target is busy."
                self.mounted.pop(target, None)
            case ["umount", "-l", target]:
                self.mounted.pop(target, None)
            case ["findmnt", "-J", "-b", "-M", target, *_]:
                doc = json.loads((FIX / "findmnt-J-b.json").read_text())
                doc["filesystems"][0]["target"] = target
                return 0, json.dumps(doc), ""
            case ["findmnt", "-n", "-o", "SOURCE", "/"]:
                return 0, "/dev/vda\n", ""
            case ["tune2fs", "-l", _]:
                return 0, (FIX / "tune2fs-l-512M.txt").read_text(), ""
            case ["dumpe2fs", "-h", _]:
                return 0, (FIX / "dumpe2fs-h-64M.txt").read_text(), "dumpe2fs 1.47.0 (5-Feb-2023)\n"
            case ["which", "mkfs.xfs"]:
                return (0, "/usr/sbin/mkfs.xfs\n", "") if self.mkfs_xfs else (1, "", "")
            case ["lsblk", *_]:
                return 0, json.dumps(LSBLK), ""
            case ["zfs", "version"]:
                return 0, "zfs-2.3.1-1~bpo12+1\nzfs-kmod-2.3.1-1~bpo12+1\n", ""
            case ["zpool", "status", "-P", "-L", "-j"]:
                vdevs = {d: {"name": d, "path": d} for d in self.pool_devices}
                return 0, json.dumps({"pools": {"tank": {"vdevs": {"tank": {"vdevs": vdevs}}}}}), ""
            case ["zdb", "-l", _]:
                return 2, "failed to unpack label 0\n", ""
            case ["blkid", "-p", "-o", "export", dev]:
                sig = self.signatures.get(dev)
                return (0, f"DEVNAME={dev}\nTYPE={sig}\n", "") if sig else (2, "", "")
            case ["blockdev", "--getsize64", _]:
                return 0, "10737418240\n", ""
            case ["grep", "-H", "", *files]:
                values = {"logical_block_size": "512", "physical_block_size": "4096",
                          "rotational": "1", "scheduler": "[mq-deadline] kyber none"}
                return 0, "".join(f"{f}:{values[f.rsplit('/', 1)[1]]}\n" for f in files), ""
        return 0, "", ""

    def index(self, argv) -> int:
        return self.calls.index(argv)

    def ran(self, *prefix) -> list[list[str]]:
        return [c for c in self.calls if c[:len(prefix)] == list(prefix)]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.now += s


# --- ext4 on a zvol --------------------------------------------------------------------------

def test_mkfs_mount_and_unmount_argvs_in_order():
    host = FakeHost()
    with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=512 * MiB) as fs:
        assert host.mounted == {MNT: "/dev/zd0"}
        assert fs.file_path == f"{MNT}/fio.data"
    mkfs = ["mkfs.ext4", "-F", "-q", "-b", "4096", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", ZVOL]
    order = [["mkdir", "-p", "/mnt/zbench"], ["mkdir", MNT], mkfs,
             ["mount", "-t", "ext4", "-o", "noatime", ZVOL, MNT], ["umount", MNT], ["rmdir", MNT]]
    positions = [host.index(a) for a in order]
    assert positions == sorted(positions)
    assert host.mounted == {} and not fs.mounted and not fs.dir_made and not fs.lazy_unmounted
    assert not host.ran("umount", "-l") and not host.ran("rm")


def test_a_default_mountpoint_is_new_and_private():
    a, b = (FsOnZvol(FakeHost(), ZVOL, size_bytes=MiB) for _ in range(2))
    assert a.mountpoint.startswith("/mnt/zbench/fs-") and a.mountpoint != b.mountpoint


def test_an_exception_in_the_block_still_unmounts_and_removes_the_directory():
    host = FakeHost()
    with pytest.raises(RuntimeError, match="fio died"):
        with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB):
            raise RuntimeError("fio died")
    assert host.mounted == {} and host.ran("umount", MNT) and host.ran("rmdir", MNT)


def test_a_failed_mount_removes_the_directory_and_unmounts_nothing():
    host = FakeHost(fail={"mount"})
    with pytest.raises(CommandError, match="mount"):
        with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB):
            pytest.fail("the block must not run")
    assert not host.ran("umount") and host.ran("rmdir", MNT)


def test_an_existing_directory_is_never_used_nor_removed():
    host = FakeHost()
    host.mounted[MNT] = "/dev/vdz"      # someone else's mount there
    with pytest.raises(CommandError, match="File exists"):
        with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB):
            pass
    assert not host.ran("mkfs.ext4") and not host.ran("rmdir") and not host.ran("umount")


def test_a_file_larger_than_the_filesystem_is_refused_after_cleaning_up():
    host = FakeHost()
    with pytest.raises(ConfigError, match="does not fit the 938688512 bytes free"):
        with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=2048 * MiB):
            pass
    assert host.mounted == {} and host.ran("rmdir", MNT)


def test_a_busy_mount_is_retried_and_its_fio_stopped():
    host = FakeHost(busy_umounts=2)
    with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB) as fs:
        pass
    assert len(host.ran("umount", MNT)) == 3 and not host.ran("umount", "-l")
    kills = host.ran("sh", "-c")
    assert len(kills) == 1 and kills[0][-1] == MNT and not fs.lazy_unmounted


def test_a_mount_busy_past_the_wait_is_detached_lazily_and_said_so(monkeypatch, capsys):
    clock = FakeClock()
    monkeypatch.setattr(filesystems, "time", clock)
    host = FakeHost(busy_umounts=10 ** 6)
    with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB, umount_wait_s=10) as fs:
        pass
    plain = host.ran("umount", MNT)
    assert 2 <= len(plain) <= 10 and clock.now <= 10
    assert host.index(["umount", "-l", MNT]) > host.calls.index(plain[-1])
    assert fs.lazy_unmounted and host.mounted == {} and host.ran("rmdir", MNT)
    assert "umount -l" in capsys.readouterr().err


def test_teardown_runs_with_signals_held(monkeypatch):
    held = []

    @contextlib.contextmanager
    def deferred():
        held.append(True)
        yield
        held.append(False)

    monkeypatch.setattr(filesystems, "signals_deferred", deferred)
    host = FakeHost()
    with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB):
        assert held == []
    assert held == [True, False]


def test_xfs_is_refused_with_a_reason_before_anything_is_touched():
    host = FakeHost()
    with pytest.raises(ConfigError, match=r"^fs 'xfs': mkfs.xfs is not installed on fake") as exc:
        with FsOnZvol(host, ZVOL, fs="xfs", size_bytes=MiB):
            pass
    assert "\n" not in str(exc.value) and host.calls == [["which", "mkfs.xfs"]]
    host = FakeHost(mkfs_xfs=True)
    with pytest.raises(ConfigError, match="known but not supported by zbench yet"):
        FsOnZvol(host, ZVOL, fs="xfs", size_bytes=MiB).create()
    assert host.calls == [["which", "mkfs.xfs"]]


@pytest.mark.parametrize("kwargs, message", [
    (dict(zvol_device=ZVOL, fs="btrfs"), "filesystem 'btrfs' is not known"),
    (dict(zvol_device="/dev/sdb"), "not a zvol of a zbench pool"),
    (dict(zvol_device="/dev/zvol/tank/vol"), "not a zvol of a zbench pool"),
    (dict(zvol_device="/dev/zvol/zbench-t/../../sda"), "not a zvol of a zbench pool"),
    (dict(zvol_device=ZVOL, mountpoint="/mnt/data"), "directly under /mnt/zbench"),
    (dict(zvol_device=ZVOL, mountpoint="/mnt/zbench/.."), "directly under /mnt/zbench"),
    (dict(zvol_device=ZVOL, mountpoint="/mnt/zbench/a/b"), "directly under /mnt/zbench"),
    (dict(zvol_device=ZVOL, size_bytes=0), "size_bytes must be a positive"),
])
def test_bad_arguments_are_refused_without_a_command(kwargs, message):
    host = FakeHost()
    with pytest.raises(ConfigError, match=message):
        FsOnZvol(host, **{"size_bytes": MiB, **kwargs})
    assert host.calls == []


def test_a_zvol_already_mounted_is_not_formatted():
    host = FakeHost()
    host.mounted["/srv/old"] = "/dev/zd0"
    with pytest.raises(ConfigError, match=r"is mounted \(/srv/old\)"):
        with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB):
            pass
    assert not host.ran("mkfs.ext4") and not host.ran("mkdir")


def test_readback_of_a_mounted_ext4():
    host = FakeHost()
    with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=64 * MiB) as fs:
        rb = fs.readback()
    assert rb == {"fs": "ext4", "device": ZVOL, "mountpoint": MNT, "mount_source": "/dev/zd0",
                  "mount_fstype": "ext4", "mount_options": "rw,noatime", "fs_block_size": 4096,
                  "fs_size_bytes": 1006632960, "fs_avail_bytes": 938688512,
                  "file_path": f"{MNT}/fio.data", "file_size_bytes": 64 * MiB}


def test_readback_falls_back_to_dumpe2fs():
    host = FakeHost()
    with FsOnZvol(host, ZVOL, mountpoint=MNT, size_bytes=MiB) as fs:
        host.fail = {"tune2fs"}
        assert fs.readback()["fs_block_size"] == 1024
    assert host.ran("dumpe2fs", "-h", ZVOL)


def test_e2fs_headers_parse():
    t = parse_e2fs_header((FIX / "tune2fs-l-512M.txt").read_text())
    d = parse_e2fs_header((FIX / "dumpe2fs-h-64M.txt").read_text())
    assert t["Block size"] == "4096" and d["Block size"] == "1024"
    assert t["Inode size"] == "256"              # a tab inside the padding
    assert t["Filesystem created"].count(":") == 2  # values keep their colons
    assert "has_journal" in t["Filesystem features"].split()


def test_findmnt_json_parses_and_names_a_missing_mount():
    text = (FIX / "findmnt-J-b.json").read_text()
    got = parse_findmnt_json(text, "/mnt/zbench/fs-1a2b3c4d")
    assert got["options"] == "rw,noatime" and got["size_bytes"] == 1006632960
    as_strings = text.replace("1006632960", '"1006632960"')      # older findmnt quotes numbers
    assert parse_findmnt_json(as_strings, "/mnt/zbench/fs-1a2b3c4d")["size_bytes"] == 1006632960
    with pytest.raises(Exception, match="does not list /mnt/other"):
        parse_findmnt_json(text, "/mnt/other")


def test_proc_mounts_decode_escapes():
    m = parse_proc_mounts("/dev/zd0 /mnt/zbench/a\\040b ext4 rw,noatime 0 0\n")
    assert m == [{"source": "/dev/zd0", "target": "/mnt/zbench/a b", "fstype": "ext4",
                  "options": "rw,noatime"}]


def test_mkfs_argv_only_for_supported_filesystems():
    assert mkfs_argv("ext4", "/dev/zd0")[0] == "mkfs.ext4"
    with pytest.raises(ConfigError):
        mkfs_argv("xfs", "/dev/zd0")


# --- the raw device --------------------------------------------------------------------------

def test_a_device_the_host_did_not_give_is_refused_without_a_command():
    host = FakeHost()
    with pytest.raises(ConfigError, match="not one of the host's devices"):
        RawDevice(host, "/dev/vda", host_devices=["/dev/vdb"])
    assert host.calls == []


def test_a_mounted_device_is_refused_and_never_written():
    host = FakeHost(signatures={"/dev/vdc": "ext4"})
    with pytest.raises(ConfigError, match=r"/dev/vdc: is mounted \(/srv\)"):
        with RawDevice(host, "/dev/vdc", host_devices=["/dev/vdc"], allow_signatures=["/dev/vdc"],
                       wipe_after=True):
            pytest.fail("the block must not run")
    assert not host.ran("wipefs") and not host.ran("fio")


def test_a_device_of_an_imported_pool_is_refused_even_when_owned():
    host = FakeHost(pool_devices=["/dev/vdb"])
    with pytest.raises(ConfigError, match="belongs to an imported ZFS pool"):
        RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb"], owned=True).check()


def test_a_signature_is_refused_unless_that_device_is_allowed():
    host = FakeHost(signatures={"/dev/vdb": "xfs"})
    with pytest.raises(ConfigError, match="carries a xfs signature"):
        RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb", "/dev/vdd"],
                  allow_signatures=["/dev/vdd"]).check()
    assert RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb"], allow_signatures=["/dev/vdb"]).check().checked
    assert RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb"], owned=True).check().checked


def test_a_file_vdev_is_not_a_raw_device():
    path = "/var/tmp/zbench-vdev00.img"
    with pytest.raises(ConfigError, match="is not a block device"):
        RawDevice(FakeHost(), path, host_devices=[path]).check()


def test_raw_readback_and_wipe_only_when_asked():
    host = FakeHost()
    with RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb"]) as raw:
        assert raw.file_path == "/dev/vdb"
        assert raw.readback() == {"device": "/dev/vdb", "resolved": "/dev/vdb", "size_bytes": 10737418240,
                                  "logical_block_size": 512, "physical_block_size": 4096,
                                  "rotational": True, "scheduler": "mq-deadline"}
    assert not host.ran("wipefs")
    with RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb"], wipe_after=True) as raw:
        pass
    assert host.ran("wipefs") == [["wipefs", "-a", "-q", "/dev/vdb"]] and raw.wiped


def test_a_wipe_is_refused_when_the_device_got_mounted_meanwhile():
    host = FakeHost()
    raw = RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb"]).check()
    LSBLK["blockdevices"][1]["mountpoints"] = ["/media/x"]
    try:
        with pytest.raises(ConfigError, match=r"not wiped, it is mounted \(/media/x\)"):
            raw.wipe()
    finally:
        LSBLK["blockdevices"][1]["mountpoints"] = [None]
    assert not host.ran("wipefs")
    with pytest.raises(ConfigError, match="never checked"):
        RawDevice(host, "/dev/vdb", host_devices=["/dev/vdb"]).wipe()


def test_queue_and_scheduler_parse():
    assert parse_scheduler("none") == "none" and parse_scheduler("[none] mq-deadline") == "none"
    q = parse_queue("/sys/block/vdb/queue/rotational:0\n/sys/block/vdb/queue/scheduler:[bfq] none\n")
    assert q == {"rotational": False, "scheduler": "bfq"}
