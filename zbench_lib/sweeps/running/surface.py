"""What fio runs on, as one protocol: a Surface on a Ground.

A pool request's **ground** is what its targets stand on: a zpool made for it
(``zfs_surfaces.ZfsPool``) or no pool at all, the raw disks checked, measured bare and wiped
(``raw_surface.NoPool``). ``Ground.open`` makes it, records what it read back and yields a
``Site``; ``Ground.before_teardown`` runs once the targets are done (a pulled disk put back, a
resilver timed), and leaving ``open`` takes it down.

A target's **surface** is how fio reaches it: zvol, dataset, fs-on-zvol (ext4 made on a zvol),
nfs (a dataset through an NFS mount), nfs-clients (the dataset mounted by client VMs, fio's
client/server mode from them: ``client_surface``), iscsi-clients (a zvol logged in to by client VMs
over iSCSI, each in a region of its own: ``client_surface``) or raw (the bare disks' regions); ``surfaces.surface_of``
picks it by ``Target.surface``. ``Surface.prepare(site, target)`` is a context manager: it makes
what fio needs, writes it first (the prefill, and an L2ARC warm-up where declared), records the
read-back events, and yields a ``FioTarget``: the path(s) and size fio uses, the ZFS target to
read back after each run, and the run context (what the truth checks that apply to it read);
leaving it unmounts or unexports what it made. The executor runs one loop over both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ContextManager, Protocol

from zbench_lib.measure.fio_clients import ClientLoad
from zbench_lib.measure.run_context import RunContext

if TYPE_CHECKING:
    from zbench_lib.hosts.node import Node
    from zbench_lib.sweeps.running.faults import FaultInjector
    from zbench_lib.sweeps.planning.records import Target
    from zbench_lib.sweeps.running.pool_request import PoolRequest
    from zbench_lib.sweeps.store.store import Store
    from zbench_lib.zfs.pools import Pool


@dataclass(frozen=True)
class Site:
    """A pool request's ground, made: where its targets' surfaces are prepared and its runs go."""
    request: PoolRequest
    node: Node
    store: Store
    devices: tuple[str, ...]        # the devices it uses: data disks, then log, cache, special
    work_dir: str                   # the host directory of its runs' files
    pool: Pool | None               # None: raw disks, no pool
    model: str | None               # the data disks' model when a factor (pool_setup), else None
    readback: dict                  # pool_setup's read-back as result columns (settings_readback)
    disks: tuple[dict, ...] = ()    # the raw disks' read-back (RawDevice.readback), no pool
    progress: bool = False

    @property
    def host(self):
        return self.node.host

    @property
    def pool_name(self) -> str | None:
        return None if self.pool is None else self.pool.name


@dataclass(frozen=True)
class FioTarget:
    """What a surface prepared for fio."""
    path: str | tuple[str, ...]     # a block device or a file, or the raw disks (fio's filename list)
    size_bytes: int | None          # fio's size (the file, or the raw disks' regions), None: the device's
    target_name: str | None         # the ZFS target whose properties a run reads back (None on raw disks)
    context: RunContext             # the run context: what the truth checks read beside fio's numbers
    meta: dict                      # what meta.json says of the pool and the target
    clients: ClientLoad | None = None   # nfs/iscsi-clients: the clients' servers and files; a run uses its first k


class Surface(Protocol):
    """How fio reaches a target (see the module's text)."""
    name: str                       # a Target.surface value

    def prepare(self, site: Site, target: Target) -> ContextManager[FioTarget]: ...


class Ground(Protocol):
    """What a pool request's surfaces stand on: a zpool, or no pool (see the module's text)."""

    def open(self, request: PoolRequest, node: Node, store: Store, progress: bool) -> ContextManager[Site]: ...

    def before_teardown(self, site: Site, faults: FaultInjector, load_on: dict | None) -> None: ...
