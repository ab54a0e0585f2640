"""The NFS datastore case: a dataset exported over NFS to the lab itself, mounted with stable writes.

VMware ESXi writes every block of an NFS datastore as a stable write: the server must have
it on stable storage before it answers. `NfsDatastore` reproduces that inside one host: the
dataset of a zbench pool is exported to 127.0.0.1 only, mounted back over loopback with
options that make every write(2) a stable WRITE, and fio runs on a file in that mount. Like
`filesystems.FsOnZvol` it is a context manager: whatever happens inside the block (an
exception, Ctrl-C, SIGTERM) it unmounts, unexports and removes its directory on the way out,
with signals held. The order matters: a hard NFS mount whose server is gone hangs every
process that touches it, so it is unmounted before the export goes and long before the pool
is destroyed (callers nest this inside the pool's block). Options are read back, never assumed.

Loopback: client and server share the host's CPUs and memory, so latency has no network in it
and the client's work is counted against the same cores as ZFS's. Reads may be answered by
the client's page cache unless fio opens the file with direct=1 (O_DIRECT goes to the server).
"""

from __future__ import annotations

import posixpath
import re

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred
from zbench_lib.hosts.base import Host
from zbench_lib.zfs.filesystems import (MOUNT_ROOT, UMOUNT_WAIT_S, MountedTeardown, parse_findmnt_json,
                                        parse_proc_mounts,
                                        private_mountpoint, unmount_for_sure)
from zbench_lib.zfs.safety import POOL_PREFIX

CLIENT = "127.0.0.1"
# ESXi mounts NFS 3 or NFS 4.1. Version 3 is the same protocol on both sides. For 4.x the Linux
# client is asked for 4.2: what matters here (stable WRITEs, COMMIT, sessions since 4.1) is the
# same in 4.1 and 4.2, 4.2 only adds operations (ALLOCATE, SEEK, COPY, READ_PLUS) beside
# fio's reads and writes, and it is what Debian's client and nfsd settle on by themselves for
# `vers=4`. 4.0 (no sessions, unlike ESXi's 4.1) is not offered.
NFS_VERSIONS = ("3", "4.2")
# Exported with (each read back from `exportfs -v`):
# - sync: nfsd answers a stable WRITE or a COMMIT only once the data is on stable storage (it
#   writes with RWF_SYNC / fsyncs). On ZFS that fsync is a ZIL commit: the write is in the
#   intent log (the SLOG, or the pool's own disks without one) before the reply, and reaches
#   its place in the pool with the next txg (large writes, or logbias=throughput, go to the
#   pool at once, the log only pointing at them); the dataset's `sync` property still decides
#   (sync=disabled acknowledges without the ZIL). With `async` nfsd would turn every stable
#   write into an unstable one and answer at once: a datastore that lies.
#   (`wdelay`, which exportfs -v shows by default, gathers writes for NFSv2 only.)
# - no_subtree_check: the export is a whole filesystem; a subtree check costs a lookup per call.
# - no_root_squash: fio runs as root and the file was prefilled by root on the dataset itself;
#   squashed to nobody it could not write it.
# - insecure: requests from ports above 1023 are served too (root's mount uses a reserved port
#   anyway; this only avoids a refusal when those run out). Only 127.0.0.1 may mount it.
EXPORT_OPTIONS = "rw,sync,no_subtree_check,no_root_squash,insecure"
NFS_FILE = "fio.data"
UMOUNT_ATTEMPT_S = 120
MOUNT_TIMEOUT_S = 180             # mount.nfs itself retries for 2 minutes before it gives up
_NAME = r"[A-Za-z0-9_.:-]+"       # zfs component names, as targets.Dataset allows them
_DATASET_PATH_RE = re.compile(rf"^/({re.escape(POOL_PREFIX)}{_NAME})/({_NAME}(?:/{_NAME})*)$")


def nfs_mount_options(vers: str) -> str:
    """The client's mount options for NFS version `vers` ("3" or "4.2")."""
    if vers not in NFS_VERSIONS:
        raise ConfigError(f"nfs datastore: vers {vers!r} is not offered; expected one of "
                          f"{', '.join(NFS_VERSIONS)} (ESXi mounts 3 or 4.1; 4.2 stands for 4.1)")
    opts = [f"vers={vers}",
            # ESXi's NFS runs over TCP (UDP is deprecated for NFS on Linux).
            "proto=tcp",
            # A datastore never drops a write: on a timeout the client retries for ever instead
            # of failing fio's write with EIO (soft). The price: a hard mount whose server is
            # gone hangs, hence unmount before unexport.
            "hard",
            # Every write(2) is sent at once and returns only once the server has it on stable
            # storage: as a stable FILE_SYNC WRITE when it fits one call (split over several,
            # as UNSTABLE WRITEs and a COMMIT). ESXi writes a datastore that way. The kernel
            # lists `sync` among the VFS options, not the NFS ones.
            "sync",
            # No attribute cache: size and times are asked from the server on every getattr,
            # never taken from a cache that may be stale (noac on its own would also make
            # writes synchronous: the kernel sets `sync` for it).
            "noac",
            # The Linux maximum, so one fio request up to 1 MiB is one READ or WRITE call.
            # nfsd caps its own maximum by the server's memory and the smaller wins: the
            # effective rsize/wsize are read back.
            "rsize=1048576", "wsize=1048576"]
    if vers == "3":
        # NLM locks need lockd and rpc.statd over loopback; fio takes no locks on its file and
        # ESXi's NFS 3 client does not use NLM either (it locks with .lck files). NFS 4 has
        # its locking inside the protocol, so the option is left out there.
        opts.append("nolock")
    return ",".join(opts)


def nfs_mount_argv(server_path: str, mountpoint: str, vers: str = "3", server: str = CLIENT,
                   port: int | None = None) -> list[str]:
    """`mount` of `server`:`server_path` (the loopback datastore's own host by default); `port`
    where the server is reached through a forward (a lab client: nfs_clients)."""
    opts = nfs_mount_options(vers) + (f",port={port}" if port else "")
    return ["mount", "-t", "nfs", "-o", opts, f"{server}:{server_path}", mountpoint]


def export_argv(server_path: str, client: str = CLIENT) -> list[str]:
    # exportfs -o puts the export in the kernel's table (and etab) only, never in /etc/exports:
    # nothing of it outlives a reboot (an `exportfs -ra` or a restart of nfs-server drops it too).
    return ["exportfs", "-o", EXPORT_OPTIONS, f"{client}:{server_path}"]


def nfs_findmnt_argv(mountpoint: str) -> list[str]:
    # No SIZE/AVAIL: those would statfs through the mount, a call to the server.
    return ["findmnt", "-J", "-M", mountpoint, "-o", "TARGET,SOURCE,FSTYPE,OPTIONS,VFS-OPTIONS,FS-OPTIONS"]


def parse_exportfs_v(text: str) -> list[dict]:
    """`exportfs -v` -> [{path, client, options}] (options as printed, comma-separated).

    exportfs prints a path longer than 14 characters on a line of its own, its client and
    options on the next after two tabs; a shorter path shares the line, padded. Each client of
    a path is an entry of its own, the path repeated.
    """
    out, pending = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            path, rest = pending, line.strip()
        else:
            path, *tail = line.split(None, 1)
            rest = tail[0].strip() if tail else ""
        if not rest:
            pending = path          # the client follows on the next line
            continue
        pending = None
        if path is None:
            raise ZbenchError(f"cannot read exportfs -v: a client without a path: {line.strip()!r}")
        m = re.match(r"^([^(\s]+)(?:\((.*)\))?$", rest)
        if not m:
            raise ZbenchError(f"cannot read exportfs -v line: {line.strip()!r}")
        out.append({"path": path, "client": m.group(1), "options": m.group(2) or ""})
    return out


def export_options(text: str, server_path: str, client: str = CLIENT) -> str | None:
    """The options `server_path` is exported with to `client`, or None when it is not."""
    for e in parse_exportfs_v(text):
        if e["path"] == server_path and e["client"] == client:
            return e["options"]
    return None


def _option(options: str, key: str) -> str | None:
    for opt in (options or "").split(","):
        k, sep, v = opt.partition("=")
        if sep and k == key:
            return v
    return None


class NfsDatastore(MountedTeardown):
    """The dataset mounted at `dataset_mountpoint` exported to 127.0.0.1 and mounted back at
    `mountpoint` over NFS `vers` with stable writes; fio's file of `size_bytes` inside."""

    def __init__(self, host: Host, dataset_mountpoint: str, *, size_bytes: int, vers: str = "3",
                 mountpoint: str | None = None, umount_wait_s: float = UMOUNT_WAIT_S):
        m = _DATASET_PATH_RE.match(dataset_mountpoint) if isinstance(dataset_mountpoint, str) else None
        # A dataset `name` of a zbench pool is mounted at /<pool>/<name> (pools.Pool._target_path);
        # nothing else is exported. The mount table confirms it on entry.
        if not m or posixpath.normpath(dataset_mountpoint) != dataset_mountpoint or \
                {".", ".."} & set(dataset_mountpoint.split("/")):
            raise ConfigError(f"nfs datastore: {dataset_mountpoint!r} is not the mountpoint of a dataset "
                              f"of a zbench pool (/{POOL_PREFIX}<pool>/<name>); only those are exported")
        nfs_mount_options(vers)         # refuses a version not offered, with the reason
        if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes <= 0:
            raise ConfigError(f"nfs datastore: size_bytes must be a positive number of bytes, "
                              f"got {size_bytes!r}")
        self.host, self.server_path, self.vers = host, dataset_mountpoint, vers
        self.dataset = f"{m.group(1)}/{m.group(2)}"
        self.mountpoint = private_mountpoint(mountpoint, "nfs", "nfs datastore")
        self.size_bytes, self.umount_wait_s = size_bytes, umount_wait_s
        self.exported = self.dir_made = self.mounted = self.lazy_unmounted = False
        self.commands: list = []

    @property
    def file_path(self) -> str:
        """The file fio uses, inside the NFS mount."""
        return f"{self.mountpoint}/{NFS_FILE}"

    @property
    def export_spec(self) -> str:
        return f"{CLIENT}:{self.server_path}"

    def _run(self, argv, **kw):
        self.commands.append(list(argv))
        return self.host.run(argv, **kw)

    def _mounts(self) -> list[dict]:
        # /proc/self/mounts never calls the NFS server (findmnt's SIZE or a stat would).
        return parse_proc_mounts(self._run(["cat", "/proc/self/mounts"], timeout=30).stdout)

    def _is_mounted(self) -> bool:
        try:
            return any(m["target"] == self.mountpoint for m in self._mounts())
        except CommandError:
            return True             # cannot tell: try to unmount, `umount` says if it was not

    def exports(self) -> str:
        return self._run(["exportfs", "-v"], timeout=60).stdout

    def ensure_server(self) -> None:
        """Start the kernel NFS server unless it runs; ConfigError when it is not installed."""
        if self._run(["systemctl", "is-active", "nfs-server"], check=False, timeout=30).ok:
            return
        res = self._run(["systemctl", "start", "nfs-server"], check=False, timeout=120)
        if res.ok:
            return
        # systemctl exits 5 for a unit it does not know ("Unit nfs-server.service not found.").
        if res.returncode == 5 or "not found" in res.stderr.lower():
            raise ConfigError(f"nfs-kernel-server is not installed on {self.host.name}")
        raise CommandError(self.host.name, res.argv, res.returncode, res.stderr, res.stdout)

    def check_dataset(self) -> None:
        here = [m for m in self._mounts() if m["target"] == self.server_path]
        if not any(m["fstype"] == "zfs" and m["source"] == self.dataset for m in here):
            seen = ", ".join(f"{m['source']} ({m['fstype']})" for m in here) or "nothing"
            raise ConfigError(f"nfs datastore: {self.server_path} is not where ZFS mounted "
                              f"{self.dataset} (mounted there: {seen})")

    def create(self) -> "NfsDatastore":
        self.ensure_server()
        self.check_dataset()
        if export_options(self.exports(), self.server_path) is not None:
            raise ConfigError(f"nfs datastore: {self.export_spec} is exported already (not by this "
                              f"datastore); `exportfs -u {self.export_spec}` it if it is a leftover")
        # Marked before the command runs: an interrupted export is still looked for on exit.
        self.exported = True
        self._run(export_argv(self.server_path), timeout=60)
        opts = export_options(self.exports(), self.server_path)
        if opts is None or "async" in opts.split(","):
            raise ZbenchError(f"nfs datastore: {self.export_spec} reads back as exported with "
                              f"{opts!r}, not {EXPORT_OPTIONS}")
        self._run(["mkdir", "-p", MOUNT_ROOT])
        # Not -p: the directory must be new, so it is ours alone and ours to remove.
        self._run(["mkdir", self.mountpoint])
        self.dir_made = True
        self.mounted = True
        self._run(nfs_mount_argv(self.server_path, self.mountpoint, self.vers), timeout=MOUNT_TIMEOUT_S)
        mnt = self._findmnt()
        got_vers = _option(mnt.get("fs_options") or mnt["options"], "vers")
        # noac sets the superblock's sync flag too: the kernel lists `sync` with the VFS options.
        synced = "sync" in f"{mnt.get('vfs_options') or ''},{mnt['options'] or ''}".split(",")
        if got_vers != self.vers or not synced:
            raise ZbenchError(f"nfs datastore: {self.mountpoint} reads back as mounted with "
                              f"{mnt['options']!r}, not vers={self.vers} with sync")
        return self

    def _findmnt(self) -> dict:
        return parse_findmnt_json(self._run(nfs_findmnt_argv(self.mountpoint), timeout=30).stdout,
                                  self.mountpoint)

    def readback(self) -> dict:
        """The mount and the export as the kernel has them."""
        mnt = self._findmnt()
        return {"nfs_vers": _option(mnt.get("fs_options") or mnt["options"], "vers"),
                "mount_options": mnt["options"], "mount_vfs_options": mnt.get("vfs_options"),
                "mount_fs_options": mnt.get("fs_options"),
                "export_options": export_options(self.exports(), self.server_path),
                "server_path": self.server_path, "mountpoint": self.mountpoint,
                "file_path": self.file_path, "file_size_bytes": self.size_bytes}

    def _unexport(self) -> None:
        res = self._run(["exportfs", "-u", self.export_spec], check=False, timeout=60)
        if not res.ok and "could not find" not in res.stderr.lower():
            raise CommandError(self.host.name, res.argv, res.returncode, res.stderr, res.stdout)
        self.exported = False

    def teardown(self) -> None:
        """Unmount, then unexport, then remove the directory, each tried whatever the one
        before did; signals that arrive meanwhile come afterwards."""
        with signals_deferred():
            try:
                if self.mounted:
                    self.lazy_unmounted = unmount_for_sure(
                        self.host, self.mountpoint, run=self._run, is_mounted=self._is_mounted,
                        wait_s=self.umount_wait_s, force=True, attempt_timeout_s=UMOUNT_ATTEMPT_S)
                    self.mounted = False
            finally:
                try:
                    if self.exported:
                        self._unexport()
                finally:
                    self._remove_mountpoint()

