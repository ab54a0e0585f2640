"""The NFS datastore surface: a dataset exported to the host itself and mounted back with stable
writes; guaranteed unmount, unexport and cleanup, against a fake host recording argvs."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.hosts.base import Host, Result
from zbench_lib.zfs import filesystems, nfs_share
from zbench_lib.zfs.filesystems import parse_findmnt_json
from zbench_lib.zfs.nfs_share import NfsDatastore, export_options, nfs_mount_argv, parse_exportfs_v

FIX = Path(__file__).parent / "fixtures" / "nfs_share"
DS = "/zbench-t-1a2b3c/ds"
MNT = "/mnt/zbench/nfs-test"
MiB = 1024 ** 2
BASE_MOUNTS = ("/dev/vda / ext4 rw,relatime 0 0\n"
               "zbench-t-1a2b3c /zbench-t-1a2b3c zfs rw,xattr,noacl,casesensitive 0 0\n"
               "zbench-t-1a2b3c/ds /zbench-t-1a2b3c/ds zfs rw,xattr,noacl,casesensitive 0 0\n")
SHOWN = "sync,wdelay,hide,no_subtree_check,sec=sys,rw,insecure,no_root_squash,no_all_squash"
V3_OPTS = "vers=3,proto=tcp,hard,sync,noac,rsize=1048576,wsize=1048576,nolock"


class FakeHost(Host):
    """Records every argv; keeps the NFS server's state, its exports and the mount table."""

    name = "fake"

    def __init__(self, server="active", busy_umounts=0, busy_force=False, fail=(), shown=SHOWN):
        self.calls: list[list[str]] = []
        self.server, self.busy_umounts, self.busy_force = server, busy_umounts, busy_force
        self.fail, self.shown = set(fail), shown
        self.exports: dict[tuple, str] = {}        # (path, client) -> options shown
        self.mounted: dict[str, tuple] = {}        # target -> (source, fstype)
        self.dirs: set[str] = set()

    def run(self, argv, *, timeout=600, check=True, input=None):
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        rc, out, err = self.respond(argv)
        if check and rc:
            raise CommandError(self.name, argv, rc, err, out)
        return Result(tuple(argv), rc, out, err, 0.0)

    def respond(self, argv):
        if argv[0] in self.fail or " ".join(argv[:2]) in self.fail:
            return 32, "", f"{argv[0]}: failed"
        match argv:
            case ["systemctl", "is-active", "nfs-server"]:
                return (0 if self.server == "active" else 3), "active\n" if self.server == "active" \
                    else "inactive\n", ""
            case ["systemctl", "start", "nfs-server"]:
                if self.server == "missing":
                    return 5, "", "Failed to start nfs-server.service: Unit nfs-server.service not found.\n"
                self.server = "active"
            case ["cat", "/proc/self/mounts"]:
                return 0, BASE_MOUNTS + "".join(f"{s} {t} {f} rw,sync,relatime,vers=3 0 0\n"
                                                for t, (s, f) in self.mounted.items()), ""
            case ["exportfs", "-v"]:
                return 0, "".join(f"{p}\n\t\t{c}({o})\n" if len(p) > 14 else f"{p:<14}\t{c}({o})\n"
                                  for (p, c), o in self.exports.items()), ""
            case ["exportfs", "-o", _, spec]:
                client, path = spec.split(":", 1)
                self.exports[(path, client)] = self.shown
            case ["exportfs", "-u", spec]:
                client, path = spec.split(":", 1)
                if self.exports.pop((path, client), None) is None:
                    return 1, "", f"exportfs: Could not find '{spec}' to unexport.\n"
            case ["mkdir", path] if path in self.dirs:
                return 1, "", f"mkdir: cannot create directory '{path}': File exists"
            case ["mkdir", path]:
                self.dirs.add(path)
            case ["rmdir", path]:
                if path in self.mounted:
                    return 1, "", f"rmdir: failed to remove '{path}': Device or resource busy"
                self.dirs.discard(path)
            case ["mount", "-t", "nfs", "-o", opts, source, target]:
                self.mounted[target] = (source, "nfs4" if "vers=4.2" in opts else "nfs")
            case ["umount", target]:
                if self.busy_umounts:
                    self.busy_umounts -= 1
                    return 32, "", f"umount.nfs: {target}: device is busy"
                self.mounted.pop(target, None)
            case ["umount", "-f", target]:
                if self.busy_force:
                    return 32, "", f"umount.nfs: {target}: device is busy"
                self.mounted.pop(target, None)
            case ["umount", "-l", target]:
                self.mounted.pop(target, None)
            case ["findmnt", "-J", "-M", target, "-o", _]:
                nfs4 = self.mounted.get(target, ("", ""))[1] == "nfs4"
                doc = json.loads((FIX / f"findmnt-J-nfs{'4.2' if nfs4 else '3'}.json").read_text())
                doc["filesystems"][0]["target"] = target
                return 0, json.dumps(doc), ""
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


def _left_nothing(host):
    assert host.exports == {} and host.mounted == {} and host.dirs == set()


def test_server_export_mkdir_mount_then_umount_unexport_rmdir_in_order():
    host = FakeHost()
    with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=512 * MiB) as nfs:
        assert host.mounted == {MNT: (f"127.0.0.1:{DS}", "nfs")}
        assert host.exports == {(DS, "127.0.0.1"): SHOWN}
        assert nfs.file_path == f"{MNT}/fio.data"
    order = [["systemctl", "is-active", "nfs-server"],
             ["exportfs", "-o", "rw,sync,no_subtree_check,no_root_squash,insecure", f"127.0.0.1:{DS}"],
             ["mkdir", "-p", "/mnt/zbench"], ["mkdir", MNT],
             ["mount", "-t", "nfs", "-o", V3_OPTS, f"127.0.0.1:{DS}", MNT],
             ["umount", MNT], ["exportfs", "-u", f"127.0.0.1:{DS}"], ["rmdir", MNT]]
    positions = [host.index(a) for a in order]
    assert positions == sorted(positions)
    assert not host.ran("systemctl", "start") and not host.ran("umount", "-f")
    assert not host.ran("umount", "-l") and not host.ran("rm")
    assert not nfs.mounted and not nfs.exported and not nfs.dir_made and not nfs.lazy_unmounted
    _left_nothing(host)


def test_a_stopped_server_is_started_first():
    host = FakeHost(server="inactive")
    with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
        pass
    assert host.index(["systemctl", "start", "nfs-server"]) < host.index(host.ran("exportfs", "-o")[0])


def test_a_missing_nfs_server_is_named_before_anything_is_made():
    host = FakeHost(server="missing")
    with pytest.raises(ConfigError, match=r"^nfs-kernel-server is not installed on fake$"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            pytest.fail("the block must not run")
    assert host.calls == [["systemctl", "is-active", "nfs-server"], ["systemctl", "start", "nfs-server"]]


def test_another_failure_to_start_the_server_is_a_command_error():
    host = FakeHost(server="inactive", fail={"systemctl start"})
    with pytest.raises(CommandError, match="systemctl start nfs-server"):
        NfsDatastore(host, DS, size_bytes=MiB).ensure_server()


def test_an_exception_in_the_block_still_unmounts_unexports_and_removes_the_directory():
    host = FakeHost()
    with pytest.raises(RuntimeError, match="fio died"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            raise RuntimeError("fio died")
    assert host.index(["umount", MNT]) < host.index(["exportfs", "-u", f"127.0.0.1:{DS}"]) \
        < host.index(["rmdir", MNT])
    _left_nothing(host)


def test_a_failed_mount_unexports_and_removes_the_directory_and_unmounts_nothing():
    host = FakeHost(fail={"mount"})
    with pytest.raises(CommandError, match="mount"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            pytest.fail("the block must not run")
    assert not host.ran("umount") and host.ran("exportfs", "-u") and host.ran("rmdir", MNT)
    _left_nothing(host)


def test_an_existing_directory_is_never_mounted_on_nor_removed_and_the_export_goes():
    host = FakeHost()
    host.dirs.add(MNT)
    with pytest.raises(CommandError, match="File exists"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            pass
    assert not host.ran("mount") and not host.ran("rmdir") and host.exports == {}


def test_a_busy_mount_is_retried_and_its_fio_stopped():
    host = FakeHost(busy_umounts=2)
    with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB) as nfs:
        pass
    assert len(host.ran("umount", MNT)) == 3 and not host.ran("umount", "-f")
    kills = host.ran("sh", "-c")
    assert len(kills) == 1 and kills[0][-1] == MNT and not nfs.lazy_unmounted
    _left_nothing(host)


def test_past_the_wait_umount_f_comes_before_umount_l(monkeypatch, capsys):
    monkeypatch.setattr(filesystems, "time", FakeClock())
    host = FakeHost(busy_umounts=10 ** 6, busy_force=True)
    with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB, umount_wait_s=10) as nfs:
        pass
    plain, force, lazy = host.ran("umount", MNT), ["umount", "-f", MNT], ["umount", "-l", MNT]
    assert 2 <= len(plain) <= 10
    assert host.calls.index(plain[-1]) < host.index(force) < host.index(lazy) \
        < host.index(["exportfs", "-u", f"127.0.0.1:{DS}"]) < host.index(["rmdir", MNT])
    assert nfs.lazy_unmounted and "umount -l" in capsys.readouterr().err
    _left_nothing(host)


def test_a_forced_unmount_that_works_needs_no_lazy_one(monkeypatch):
    monkeypatch.setattr(filesystems, "time", FakeClock())
    host = FakeHost(busy_umounts=10 ** 6)
    with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB, umount_wait_s=10) as nfs:
        pass
    assert host.ran("umount", "-f", MNT) and not host.ran("umount", "-l") and not nfs.lazy_unmounted
    _left_nothing(host)


def test_a_failed_unexport_is_raised_after_the_directory_is_removed():
    host = FakeHost()
    with pytest.raises(CommandError, match="exportfs -u"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            host.fail.add("exportfs -u")
    assert host.ran("rmdir", MNT) and host.mounted == {}


def test_teardown_runs_with_signals_held(monkeypatch):
    held = []

    @contextlib.contextmanager
    def deferred():
        held.append(True)
        yield
        held.append(False)

    monkeypatch.setattr(nfs_share, "signals_deferred", deferred)
    with NfsDatastore(FakeHost(), DS, mountpoint=MNT, size_bytes=MiB):
        assert held == []
    assert held == [True, False]


@pytest.mark.parametrize("kwargs, message", [
    (dict(dataset_mountpoint="/tank/ds"), "not the mountpoint of a dataset of a zbench pool"),
    (dict(dataset_mountpoint="/zbench-t-1a2b3c"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="zbench-t-1a2b3c/ds"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="/zbench-t-1a2b3c/ds/"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="/zbench-t-1a2b3c//ds"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="/zbench-t-1a2b3c/../etc"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="/zbench-t-1a2b3c/ds/./x"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="/zbench-/ds"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="/zbench-t/a b"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint="/dev/zvol/zbench-t/vol"), "not the mountpoint of a dataset"),
    (dict(dataset_mountpoint=None), "not the mountpoint of a dataset"),
    (dict(vers="4"), "vers '4' is not offered"),
    (dict(vers="4.1"), "vers '4.1' is not offered"),
    (dict(vers=3), "vers 3 is not offered"),
    (dict(mountpoint="/mnt/data"), "directly under /mnt/zbench"),
    (dict(mountpoint="/mnt/zbench/.."), "directly under /mnt/zbench"),
    (dict(size_bytes=0), "size_bytes must be a positive"),
])
def test_bad_arguments_are_refused_without_a_command(kwargs, message):
    host = FakeHost()
    with pytest.raises(ConfigError, match=message):
        NfsDatastore(host, **{"dataset_mountpoint": DS, "size_bytes": MiB, **kwargs})
    assert host.calls == []


def test_nested_datasets_and_a_default_mountpoint_are_accepted():
    a = NfsDatastore(FakeHost(), "/zbench-sweep-0a1b2c/vm/disk0", size_bytes=MiB)
    b = NfsDatastore(FakeHost(), DS, size_bytes=MiB)
    assert a.dataset == "zbench-sweep-0a1b2c/vm/disk0"
    assert a.mountpoint.startswith("/mnt/zbench/nfs-") and a.mountpoint != b.mountpoint


def test_a_path_zfs_did_not_mount_there_is_not_exported():
    host = FakeHost()
    with pytest.raises(ConfigError, match=r"is not where ZFS mounted zbench-t-1a2b3c/other \(mounted "
                                          r"there: nothing\)"):
        with NfsDatastore(host, "/zbench-t-1a2b3c/other", mountpoint=MNT, size_bytes=MiB):
            pass
    assert not host.ran("exportfs", "-o") and not host.ran("exportfs", "-u") and not host.ran("mkdir")


def test_an_export_already_there_is_neither_changed_nor_removed():
    host = FakeHost()
    host.exports[(DS, "127.0.0.1")] = "sync,rw,secure,root_squash"
    with pytest.raises(ConfigError, match="exported already"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            pass
    assert not host.ran("exportfs", "-o") and not host.ran("exportfs", "-u")
    assert host.exports == {(DS, "127.0.0.1"): "sync,rw,secure,root_squash"}


def test_an_async_export_read_back_is_refused_and_removed():
    host = FakeHost(shown="async,wdelay,hide,no_subtree_check,sec=sys,rw,insecure,no_root_squash")
    with pytest.raises(ZbenchError, match="reads back as exported with 'async,"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            pass
    assert not host.ran("mount") and host.ran("exportfs", "-u")
    _left_nothing(host)


def test_readback_of_an_nfs3_datastore():
    host = FakeHost()
    with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=64 * MiB) as nfs:
        rb = nfs.readback()
    fs_opts = json.loads((FIX / "findmnt-J-nfs3.json").read_text())["filesystems"][0]["fs-options"]
    assert rb == {"nfs_vers": "3", "mount_options": "rw,sync,relatime," + fs_opts.removeprefix("rw,"),
                  "mount_vfs_options": "rw,sync,relatime", "mount_fs_options": fs_opts,
                  "export_options": SHOWN, "server_path": DS, "mountpoint": MNT,
                  "file_path": f"{MNT}/fio.data", "file_size_bytes": 64 * MiB}
    assert "wsize=524288" in rb["mount_fs_options"]          # what nfsd granted, not what was asked


def test_nfs42_mounts_without_nolock_and_reads_back_its_version():
    host = FakeHost()
    with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB, vers="4.2") as nfs:
        assert nfs.readback()["nfs_vers"] == "4.2"
    assert host.ran("mount") == [["mount", "-t", "nfs", "-o",
                                  "vers=4.2,proto=tcp,hard,sync,noac,rsize=1048576,wsize=1048576",
                                  f"127.0.0.1:{DS}", MNT]]
    _left_nothing(host)


def test_a_mount_read_back_with_another_version_is_refused_and_cleaned_up(monkeypatch):
    host = FakeHost()
    real = nfs_share.nfs_mount_argv
    monkeypatch.setattr(nfs_share, "nfs_mount_argv", lambda p, m, v: real(p, m, "4.2"))
    with pytest.raises(ZbenchError, match="not vers=3 with sync"):
        with NfsDatastore(host, DS, mountpoint=MNT, size_bytes=MiB):
            pass
    _left_nothing(host)


def test_exportfs_v_parses_wrapped_and_one_line_entries():
    entries = parse_exportfs_v((FIX / "exportfs-v.txt").read_text())
    assert [(e["path"], e["client"]) for e in entries] == [
        ("/srv/iso", "192.168.122.0/24"), (DS, "127.0.0.1"), ("/srv/exports/scratch", "<world>"),
        (DS, "10.0.2.2")]
    assert entries[1]["options"] == SHOWN
    text = (FIX / "exportfs-v.txt").read_text()
    assert export_options(text, DS) == SHOWN
    assert export_options(text, DS, "10.0.2.2").startswith("async,")
    assert export_options(text, "/srv/iso") is None
    assert parse_exportfs_v("") == [] and parse_exportfs_v("/srv/a        \t<world>\n") == [
        {"path": "/srv/a", "client": "<world>", "options": ""}]
    with pytest.raises(ZbenchError, match="client without a path"):
        parse_exportfs_v("\t\t127.0.0.1(rw)\n")


def test_findmnt_vfs_and_fs_options_are_kept_apart():
    got = parse_findmnt_json((FIX / "findmnt-J-nfs3.json").read_text(), "/mnt/zbench/nfs-test")
    assert got["vfs_options"] == "rw,sync,relatime" and "sync" not in got["fs_options"].split(",")
    assert got["fstype"] == "nfs" and got["size_bytes"] is None


def test_mount_argv_per_version():
    assert nfs_mount_argv(DS, MNT)[4] == V3_OPTS
    assert "nolock" not in nfs_mount_argv(DS, MNT, "4.2")[4]
    with pytest.raises(ConfigError):
        nfs_mount_argv(DS, MNT, "2")
