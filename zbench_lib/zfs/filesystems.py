"""A plain filesystem on a zvol, as a baseline: the same fio workloads on ext4 over ZFS.

`FsOnZvol` is a context manager like `pools.Pool`: it makes the filesystem on a zvol
of a zbench pool, mounts it in a private directory under MOUNT_ROOT and, whatever
happens inside the block (an exception, Ctrl-C, SIGTERM), unmounts it and removes the
directory on the way out, with signals held. Only a zvol of a pool zbench made is
ever formatted. The filesystem's effective settings are read back, never assumed.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
import time

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred, terminate_as_exit
from zbench_lib.hosts.base import Host
from zbench_lib.zfs.raw_device import stop_fio_on
from zbench_lib.zfs.safety import POOL_PREFIX

MOUNT_ROOT = "/mnt/zbench"
KNOWN_FS = ("ext4", "xfs")
SUPPORTED_FS = ("ext4",)          # xfs is known, but neither the lab image nor zbench make it yet
UMOUNT_WAIT_S = 30.0              # retrying a busy unmount this long, then `umount -l`
MKFS_TIMEOUT_S = 3600             # inode tables written up front take a while on slow disks
_ZVOL_RE = re.compile(rf"^/dev/zvol/{re.escape(POOL_PREFIX)}[A-Za-z0-9_.:-]+(/[A-Za-z0-9_.:-]+)+$")
_DIR_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")


def mkfs_argv(fs: str, device: str) -> list[str]:
    """The mkfs command line for `fs` on `device`."""
    if fs == "ext4":
        # By default mke2fs leaves the inode tables and the journal unzeroed and the
        # kernel's ext4lazyinit thread zeroes them in the background after the first
        # mount, for minutes on a large device: writes no workload asked for, landing
        # in the first measurements. Zeroing them here, before anything is measured,
        # leaves the filesystem quiet once mounted.
        # 4K blocks whatever the size: mke2fs picks 1K blocks below 512M, which would not
        # be the baseline a 4K-block production filesystem is.
        # -m 0: no blocks reserved for root, as on a data filesystem (fio's file is the data).
        return ["mkfs.ext4", "-F", "-q", "-b", "4096", "-m", "0",
                "-E", "lazy_itable_init=0,lazy_journal_init=0", device]
    raise ConfigError(f"no mkfs command for filesystem {fs!r} (supported: {', '.join(SUPPORTED_FS)})")


def mount_argv(fs: str, device: str, mountpoint: str) -> list[str]:
    # noatime: reads of fio's file must not turn into inode writes of their own.
    return ["mount", "-t", fs, "-o", "noatime", device, mountpoint]


def findmnt_argv(mountpoint: str) -> list[str]:
    return ["findmnt", "-J", "-b", "-M", mountpoint, "-o", "TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL"]


def parse_findmnt_json(text: str, mountpoint: str) -> dict:
    """`findmnt -J -b -o TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL` -> the entry of `mountpoint`
    (with vfs_options and fs_options too when VFS-OPTIONS and FS-OPTIONS were asked for)."""
    try:
        entries = json.loads(text).get("filesystems") or []
    except (ValueError, AttributeError):
        raise ZbenchError(f"cannot read findmnt's JSON: {text.strip()[:200]!r}") from None
    for e in entries:
        if e.get("target") == mountpoint:
            def num(v):
                return int(v) if isinstance(v, (int, str)) and str(v).isdigit() else None
            out = {"target": e["target"], "source": e.get("source"), "fstype": e.get("fstype"),
                   "options": e.get("options"), "size_bytes": num(e.get("size")),
                   "avail_bytes": num(e.get("avail"))}
            # VFS-OPTIONS (per mount: rw, sync, noatime) and FS-OPTIONS (the filesystem's own:
            # vers=3, wsize=...), when they were asked for; OPTIONS is the two joined.
            out.update({k.replace("-", "_"): e[k] for k in ("vfs-options", "fs-options") if k in e})
            return out
    raise ZbenchError(f"findmnt does not list {mountpoint}")


def _unescape(field: str) -> str:
    # /proc/self/mounts writes space, tab, newline and backslash as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_proc_mounts(text: str) -> list[dict]:
    """/proc/self/mounts -> [{source, target, fstype, options}], escapes decoded."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4:
            out.append({"source": _unescape(f[0]), "target": _unescape(f[1]), "fstype": f[2],
                        "options": f[3]})
    return out


def parse_e2fs_header(text: str) -> dict:
    """`tune2fs -l` or `dumpe2fs -h` output -> {field: value} ('Block size' -> '4096')."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t")):
            out.setdefault(key.strip(), value.strip())
    return out


def _has_command(host: Host, name: str) -> bool:
    try:
        return host.run(["which", name], check=False, timeout=30).ok
    except CommandError:        # a local host without `which` at all
        return False


def private_mountpoint(mountpoint: str | None, prefix: str, what: str) -> str:
    """`mountpoint`, or a new random `<MOUNT_ROOT>/<prefix>-<hex>`; refused unless it is a plain
    directory name directly under MOUNT_ROOT (it is made new, so it is ours alone to remove)."""
    if mountpoint is None:
        mountpoint = f"{MOUNT_ROOT}/{prefix}-{secrets.token_hex(4)}"
    parent, _, leaf = str(mountpoint).rpartition("/")
    if parent != MOUNT_ROOT or not _DIR_RE.match(leaf) or leaf in (".", ".."):
        raise ConfigError(f"{what}: mountpoint {mountpoint!r} must be a new directory "
                          f"directly under {MOUNT_ROOT}")
    return mountpoint


def unmount_for_sure(host: Host, mountpoint: str, *, run, is_mounted, wait_s: float,
                     force: bool = False, attempt_timeout_s: float = 300) -> bool:
    """Unmount `mountpoint` for sure; True when it had to be detached lazily.

    A busy unmount is retried until `wait_s` is spent, the fio that holds it stopped after
    the first refusal. Then, with `force` (NFS), `umount -f`: it aborts the RPCs in flight, which
    a plain `umount` of a hard mount waits for forever when the server does not answer. Last
    of all `umount -l` detaches it; the filesystem is released when its last user closes it.
    `run` runs (and records) one argv like Host.run; `is_mounted()` reads the mount table.
    """
    deadline = time.monotonic() + wait_s
    attempt = 0
    while is_mounted():
        try:
            res = run(["umount", mountpoint], check=False, timeout=attempt_timeout_s)
            if res.ok or "not mounted" in res.stderr:
                return False
        except CommandError:        # a timeout: it may still be flushing; look again
            pass
        attempt += 1
        if attempt == 1:
            stop_fio_on(host, mountpoint)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if force:
                try:
                    res = run(["umount", "-f", mountpoint], check=False, timeout=attempt_timeout_s)
                    if (res.ok or "not mounted" in res.stderr) and not is_mounted():
                        return False
                except CommandError:
                    pass
            print(f"zbench: {mountpoint} on {host.name} still busy after {wait_s:.0f} s; detaching "
                  "it with `umount -l` (the filesystem is released when its last user closes it)",
                  file=sys.stderr)
            run(["umount", "-l", mountpoint], timeout=120)
            return True
        time.sleep(min(attempt, 5, remaining))
    return False


class MountedTeardown:
    """Enter = create(); leave (or a failed create) = teardown(), SIGTERM/SIGHUP made exits meanwhile.
    Shared by the mounts made under MOUNT_ROOT (FsOnZvol, nfs_share.NfsDatastore)."""

    def __enter__(self):
        self._signals = terminate_as_exit()
        self._signals.__enter__()
        try:
            return self.create()
        except BaseException:
            try:
                self.teardown()
            finally:
                self._signals.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        try:
            self.teardown()
        finally:
            self._signals.__exit__(None, None, None)

    def _remove_mountpoint(self) -> None:
        if self.dir_made:
            # rmdir, never rm -r: if anything were still mounted there it would refuse.
            res = self._run(["rmdir", self.mountpoint], check=False, timeout=30)
            if not res.ok:
                print(f"zbench: could not remove {self.mountpoint} on {self.host.name}: "
                      f"{res.stderr.strip()}", file=sys.stderr)
            self.dir_made = False


class FsOnZvol(MountedTeardown):
    """`fs` made on `zvol_device`, mounted at `mountpoint`, fio's file of `size_bytes` inside."""

    def __init__(self, host: Host, zvol_device: str, fs: str = "ext4", mountpoint: str | None = None,
                 *, size_bytes: int, umount_wait_s: float = UMOUNT_WAIT_S):
        if fs not in KNOWN_FS:
            raise ConfigError(f"filesystem {fs!r} is not known; expected one of {', '.join(KNOWN_FS)}")
        if not isinstance(zvol_device, str) or not _ZVOL_RE.match(zvol_device) or \
                ".." in zvol_device.split("/"):
            raise ConfigError(f"fs-on-zvol: {zvol_device!r} is not a zvol of a zbench pool "
                              f"(/dev/zvol/{POOL_PREFIX}<pool>/<name>); only those are formatted")
        if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes <= 0:
            raise ConfigError(f"fs-on-zvol: size_bytes must be a positive number of bytes, got {size_bytes!r}")
        mountpoint = private_mountpoint(mountpoint, "fs", "fs-on-zvol")
        self.host, self.zvol_device, self.fs = host, zvol_device, fs
        self.mountpoint, self.size_bytes, self.umount_wait_s = mountpoint, size_bytes, umount_wait_s
        self.dir_made = self.mounted = self.lazy_unmounted = False
        self.commands: list = []

    @property
    def file_path(self) -> str:
        """The file fio uses, inside the mounted filesystem."""
        return f"{self.mountpoint}/fio.data"

    def _run(self, argv, **kw):
        self.commands.append(list(argv))
        return self.host.run(argv, **kw)

    def check_fs(self) -> None:
        """Refuse a filesystem zbench cannot make on this host, with a one-line reason."""
        if self.fs in SUPPORTED_FS:
            return
        if not _has_command(self.host, f"mkfs.{self.fs}"):
            raise ConfigError(f"fs {self.fs!r}: mkfs.{self.fs} is not installed on {self.host.name} "
                              f"(xfsprogs; the lab image has e2fsprogs only): use ext4")
        raise ConfigError(f"fs {self.fs!r}: known but not supported by zbench yet (its mkfs options and "
                          f"read-back are not written): use ext4")

    def _check_device(self) -> str:
        res = self._run(["readlink", "-e", self.zvol_device], check=False, timeout=30)
        real = res.stdout.strip()
        if not res.ok or not real:
            raise ConfigError(f"fs-on-zvol: {self.zvol_device} does not exist")
        if not self._run(["test", "-b", real], check=False).ok:
            raise ConfigError(f"fs-on-zvol: {self.zvol_device} is not a block device")
        used = [m["target"] for m in self._mounts() if m["source"] in (real, self.zvol_device)]
        if used:
            raise ConfigError(f"fs-on-zvol: {self.zvol_device} is mounted ({', '.join(used)})")
        return real

    def _mounts(self) -> list[dict]:
        return parse_proc_mounts(self._run(["cat", "/proc/self/mounts"], timeout=30).stdout)

    def _is_mounted(self) -> bool:
        try:
            return any(m["target"] == self.mountpoint for m in self._mounts())
        except CommandError:
            return True             # cannot tell: try to unmount, `umount` says if it was not

    def create(self) -> "FsOnZvol":
        self.check_fs()
        self._check_device()
        self._run(["mkdir", "-p", MOUNT_ROOT])
        # Not -p: the directory must be new, so it is ours alone and ours to remove.
        self._run(["mkdir", self.mountpoint])
        self.dir_made = True
        self._run(mkfs_argv(self.fs, self.zvol_device), timeout=MKFS_TIMEOUT_S)
        # Marked before the command runs: an interrupted mount is still looked for on exit.
        self.mounted = True
        self._run(mount_argv(self.fs, self.zvol_device, self.mountpoint), timeout=120)
        mnt = parse_findmnt_json(self._run(findmnt_argv(self.mountpoint), timeout=30).stdout,
                                 self.mountpoint)
        if mnt["avail_bytes"] is not None and mnt["avail_bytes"] < self.size_bytes:
            raise ConfigError(f"fs-on-zvol: fio's file of {self.size_bytes} bytes does not fit the "
                              f"{mnt['avail_bytes']} bytes free on {self.fs} over {self.zvol_device}")
        return self

    def readback(self) -> dict:
        """The filesystem as mounted: options, sizes and block size, read from the host."""
        mnt = parse_findmnt_json(self._run(findmnt_argv(self.mountpoint), timeout=30).stdout,
                                 self.mountpoint)
        res = self._run(["tune2fs", "-l", self.zvol_device], check=False, timeout=60)
        if not res.ok:
            res = self._run(["dumpe2fs", "-h", self.zvol_device], timeout=60)
        header = parse_e2fs_header(res.stdout)
        block = header.get("Block size", "")
        return {"fs": self.fs, "device": self.zvol_device, "mountpoint": self.mountpoint,
                "mount_source": mnt["source"], "mount_fstype": mnt["fstype"],
                "mount_options": mnt["options"], "fs_block_size": int(block) if block.isdigit() else None,
                "fs_size_bytes": mnt["size_bytes"], "fs_avail_bytes": mnt["avail_bytes"],
                "file_path": self.file_path, "file_size_bytes": self.size_bytes}

    def _unmount(self) -> None:
        """Unmount for sure: retry while busy (stopping fio on it), `umount -l` as a last resort."""
        self.lazy_unmounted = unmount_for_sure(self.host, self.mountpoint, run=self._run,
                                               is_mounted=self._is_mounted, wait_s=self.umount_wait_s)
        self._run(["udevadm", "settle"], check=False, timeout=60)

    def teardown(self) -> None:
        """Unmount and remove the directory; signals that arrive meanwhile come afterwards."""
        with signals_deferred():
            if self.mounted:
                self._unmount()
                self.mounted = False
            self._remove_mountpoint()

