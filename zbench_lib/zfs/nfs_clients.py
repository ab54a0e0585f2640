"""One NFS datastore mounted by several clients: a dataset exported once, mounted on each client.

Seed 002's datastore is mounted by ESXi hosts, plural. `SharedNfsDatastore` exports the dataset
of a zbench pool (with the loopback datastore's options, `nfs_share.EXPORT_OPTIONS`: sync, read
back) to the address the clients come from, and mounts it on every client with the same stable
writes (`nfs_share.nfs_mount_options`), each client in a directory of its own. It is a context
manager: on the way out, also on an error, Ctrl-C or SIGTERM, every client is unmounted (each
tried whatever the one before did), then the export goes, then the directories; a hard mount
whose server went first would hang its client.

NFS 4.x tells its clients apart by the client's unique id, not by its address: behind QEMU's
user networking every client reaches the server from the same address (hosts.lab_clients), and
lab clients share one hostname, so each client is given its own `nfs4_unique_id` before it
mounts. NFS 3 (no client state beyond locks, which are off) needs none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred
from zbench_lib.hosts.base import Host
from zbench_lib.zfs.filesystems import MOUNT_ROOT, MountedTeardown, parse_proc_mounts, private_mountpoint, \
    unmount_for_sure
from zbench_lib.zfs.nfs_share import (MOUNT_TIMEOUT_S, NFS_FILE, UMOUNT_ATTEMPT_S, NfsDatastore, export_argv,
                                      export_options, nfs_mount_argv)

UNIQUE_ID = "/sys/module/nfs/parameters/nfs4_unique_id"
UMOUNT_WAIT_S = 60.0


@dataclass
class ClientMount:
    """One client's mount of the datastore: where, and what is left to undo."""
    host: Host
    label: str
    mountpoint: str
    dir_made: bool = False
    mounted: bool = False
    commands: list = field(default_factory=list)

    @property
    def file_path(self) -> str:
        return f"{self.mountpoint}/{self.label}-{NFS_FILE}"     # a file per client: its own VM disk

    def run(self, argv, **kw):
        self.commands.append(list(argv))
        return self.host.run(argv, **kw)

    def is_mounted(self) -> bool:
        try:
            mounts = parse_proc_mounts(self.run(["cat", "/proc/self/mounts"], timeout=30).stdout)
        except CommandError:
            return True             # cannot tell: try to unmount, `umount` says if it was not
        return any(m["target"] == self.mountpoint for m in mounts)


class SharedNfsDatastore(MountedTeardown):
    """The dataset at `dataset_mountpoint` on `server`, exported to `export_to` and mounted on
    each of `clients` ({label: host}) from `reach` (the server's address and port as the
    clients see it); fio's file on each client is `file_path(label)`."""

    def __init__(self, server: Host, dataset_mountpoint: str, clients: dict[str, Host], *, export_to: str,
                 reach: tuple[str, int | None], vers: str = "4.2", size_bytes: int):
        if not clients:
            raise ConfigError("nfs clients: at least one client is needed")
        # The loopback datastore checks the path, the version and the size; its server half is reused.
        self.server = NfsDatastore(server, dataset_mountpoint, size_bytes=size_bytes, vers=vers)
        self.host, self.export_to, self.reach, self.vers = server, export_to, reach, vers
        self.mounts = {label: ClientMount(host, label, private_mountpoint(None, "nfs", "nfs client"))
                       for label, host in clients.items()}
        self.exported = False

    @property
    def export_spec(self) -> str:
        return f"{self.export_to}:{self.server.server_path}"

    def file_path(self, label: str) -> str:
        return self.mounts[label].file_path

    def create(self) -> "SharedNfsDatastore":
        self.server.ensure_server()
        self.server.check_dataset()
        exports = self.server.exports()
        if export_options(exports, self.server.server_path, self.export_to) is not None:
            raise ConfigError(f"nfs clients: {self.export_spec} is exported already (not by this datastore); "
                              f"`exportfs -u {self.export_spec}` it if it is a leftover")
        self.exported = True            # marked first: an interrupted export is still undone
        self.host.run(export_argv(self.server.server_path, self.export_to), timeout=60)
        opts = export_options(self.server.exports(), self.server.server_path, self.export_to)
        if opts is None or "async" in opts.split(","):
            raise ZbenchError(f"nfs clients: {self.export_spec} reads back as exported with {opts!r}")
        for mount in self.mounts.values():
            self._mount(mount)
        return self

    def _mount(self, m: ClientMount) -> None:
        if self.vers != "3":
            # before the first NFS 4 mount of this client's kernel: its identity to the server
            m.run(["modprobe", "nfs"], timeout=60)
            m.run(["sh", "-c", 'printf %s "$1" > "$2"', "unique-id", f"zbench-{m.label}", UNIQUE_ID], timeout=30)
        m.run(["mkdir", "-p", MOUNT_ROOT], timeout=30)
        m.run(["mkdir", m.mountpoint], timeout=30)        # new: ours alone to remove
        m.dir_made = m.mounted = True
        address, port = self.reach
        m.run(nfs_mount_argv(self.server.server_path, m.mountpoint, self.vers, server=address, port=port),
              timeout=MOUNT_TIMEOUT_S)
        if not m.is_mounted():
            raise ZbenchError(f"nfs clients: {m.label} ({m.host.name}) has no mount at {m.mountpoint} after mount")

    def readback(self) -> dict:
        """Each client's mount options, as its kernel has them, and the export's."""
        per_client = {}
        for label, m in self.mounts.items():
            mounts = parse_proc_mounts(m.run(["cat", "/proc/self/mounts"], timeout=30).stdout)
            per_client[label] = next((x["options"] for x in mounts if x["target"] == m.mountpoint), None)
        return {"export_options": export_options(self.server.exports(), self.server.server_path, self.export_to),
                "export_to": self.export_to, "server_path": self.server.server_path, "mount_options": per_client}

    def teardown(self) -> None:
        """Every client unmounted, then the export removed, then the directories: each step
        tried whatever the one before did; signals meanwhile come afterwards."""
        with signals_deferred():
            errors = []
            for m in self.mounts.values():
                try:
                    self._unmount(m)
                except Exception as exc:    # noqa: BLE001 (the other clients are unmounted too, then raised)
                    errors.append(exc)
            if self.exported:
                res = self.host.run(["exportfs", "-u", self.export_spec], check=False, timeout=60)
                if not res.ok and "could not find" not in res.stderr.lower():
                    errors.append(CommandError(self.host.name, res.argv, res.returncode, res.stderr, res.stdout))
                self.exported = False
            for m in self.mounts.values():
                if m.dir_made and not m.mounted:
                    m.run(["rmdir", m.mountpoint], check=False, timeout=30)
                    m.dir_made = False
            if errors:
                raise errors[0]

    @staticmethod
    def _unmount(m: ClientMount) -> None:
        if m.mounted:
            unmount_for_sure(m.host, m.mountpoint, run=m.run, is_mounted=m.is_mounted, wait_s=UMOUNT_WAIT_S,
                             force=True, attempt_timeout_s=UMOUNT_ATTEMPT_S)
            m.mounted = False
