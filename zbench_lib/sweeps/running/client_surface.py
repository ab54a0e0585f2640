"""The client surfaces (issue 30): a dataset mounted over NFS, or a zvol logged in to over iSCSI, by
the sweep's client VMs.

A target with clients (``Target.clients``: its cells' largest count) is a dataset whose every
client has a file of its own (``<label>-fio.data``, `zfs.nfs_clients`), each written first by the
prefill on the storage node (a datastore's disks are written before they are measured; the same
fill the loopback datastore gets, once per client). Then, for as long as the target is measured:

- the storage lab's NFS port is forwarded (`hosts.lab_clients.forwarded`) and the dataset exported to
  the clients' address, mounted by every client with stable writes (`zfs.nfs_clients`);
- every client runs fio's server behind a forward of its own (`measure.fio_clients.FioServers`: one
  fio release everywhere, no leftover server, the port answers from the controller);
- the `FioTarget` carries them as a `ClientLoad`: each run of a cell with `clients: k` is one
  `fio --client` call from the first k (`runner.measure_clients`, through `run_loop`).

Leaving it, also on an error, Ctrl-C or SIGTERM: the servers stopped, their forwards removed, every
client unmounted, the export removed, the NFS forward removed; the pool goes after (its ground).

The iscsi-clients surface is the same with a zvol (``surface: zvol``, ``access: iscsi``): written whole
on the storage node first (a zvol surface's prefill), then served as one LUN by LIO and logged in to
by every client through a forward of port 3260 (`zfs.iscsi_share.IscsiDatastore`), as hypervisors
share a VMFS datastore. Each client's fio works in a region of its own (`iscsi_share.region`, a
share of the LUN fixed by the target's largest client count), so a client writes the same blocks
whatever the cell's count; leaving it, every client logs out before the target goes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath
import tempfile

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.hosts.base import LocalHost
from zbench_lib.hosts.lab_clients import CONTROLLER_FROM_GUEST, forwarded
from zbench_lib.hosts.node import ClientNodes
from zbench_lib.measure.fio_clients import DEFAULT_PORT, ClientLoad, FioServers, ServerSpec
from zbench_lib.sweeps.planning.records import Target
from zbench_lib.sweeps.running.surface import FioTarget, Site
from zbench_lib.sweeps.running.zfs_surfaces import pool_context, write_target, zfs_target
from zbench_lib.zfs.iscsi_share import ISCSI_PORT, IscsiDatastore, region
from zbench_lib.zfs.nfs_clients import SharedNfsDatastore
from zbench_lib.zfs.nfs_share import NFS_FILE
from zbench_lib.zfs.pools import TargetInfo

NFS_PORT = 2049
SERVER_DIR = "/var/tmp/zbench-fio-server"       # on each client: the fio server's pidfile and working directory


def _clients(site: Site, target: Target) -> ClientNodes:
    clients = site.node.clients
    if clients is None or len(clients.nodes) < (target.clients or 0):
        have = 0 if clients is None else len(clients.nodes)
        raise ConfigError(f"target {target.target_id} is mounted by {target.clients} client(s), "
                          f"the sweep booted {have}")
    return dataclasses.replace(clients, nodes=clients.nodes[:target.clients])


def _written(site: Site, tinfo: TargetInfo, target: Target, labels: list[str]) -> tuple[dict, dict | None]:
    """Every client's file prefilled on the storage node: the first one's records (each one's is an event)."""
    directory = posixpath.dirname(tinfo.path)
    records = [write_target(site, dataclasses.replace(tinfo, path=f"{directory}/{label}-{NFS_FILE}"), target)
               for label in labels]
    return records[0]


@contextlib.contextmanager
def _servers(clients: ClientNodes):
    """Each client's fio server behind a forward of its own, for the length of the block."""
    with contextlib.ExitStack() as stack:
        specs = [ServerSpec(n.host, "0.0.0.0", DEFAULT_PORT, SERVER_DIR, n.label,
                            reach=("127.0.0.1", stack.enter_context(forwarded(n.lab_dir, DEFAULT_PORT))))
                 for n in clients.nodes]
        yield stack.enter_context(FioServers(specs, LocalHost()))


@contextlib.contextmanager
def _loaded(site: Site, target: Target, tinfo: TargetInfo, written: tuple, clients: ClientNodes,  # noqa: PLR0913 (what a surface made)
            event: Event, store, files: dict[str, str], regions: dict[str, dict]):
    """The clients' fio servers on a served datastore (`store`, read back into `event`), and the `FioTarget`
    whose runs are their `fio --client` calls on `files` (in `regions` of them, where given)."""
    labels = [n.label for n in clients.nodes]
    with _servers(clients) as servers, tempfile.TemporaryDirectory(prefix="zbench-clients-") as controller_dir:
        site.store.record(event, target_id=target.target_id, clients=labels, fio=servers.version, **store.readback())
        ctx = pool_context(site, tinfo, target, *written)
        # the controller's job files and report land in the attempt's raw clients/; this is its scratch
        load = ClientLoad(servers, files, LocalHost(), controller_dir, regions=regions)
        yield FioTarget(tinfo.path, ctx.file_bytes, tinfo.full_name, ctx,
                        meta=dict(pool=site.pool.name, target=tinfo.full_name, target_properties=tinfo.properties,
                                  client_labs=labels, **({"client_regions": regions} if regions else {})),
                        clients=load)


class _ClientsSurface:
    """A datastore the sweep's client VMs reach through a forward of the storage lab's `port`: the target
    written on the storage node (`write`), served to the clients (`serve`, read back into `event`), and
    each client's fio on its file (`files`), in a region of it where they share one (`regions`)."""
    name: str
    port: int
    event: Event

    @contextlib.contextmanager
    def prepare(self, site: Site, target: Target):
        clients = _clients(site, target)
        labels = [n.label for n in clients.nodes]
        tinfo = site.pool.create_target(zfs_target(target))
        written, regions = self.write(site, tinfo, target, labels), self.regions(target, labels)
        with forwarded(clients.storage_dir, self.port) as port, \
                self.serve(site, tinfo, target, clients, port) as store, \
                _loaded(site, target, tinfo, written, clients, self.event, store, self.files(store, labels),
                        regions) as fio_target:
            yield fio_target

    def regions(self, target: Target, labels: list[str]) -> dict[str, dict]:
        return {}


class NfsClientsSurface(_ClientsSurface):
    """fio's client/server mode on the clients' NFS mounts of the dataset (see the module's text)."""
    name, port, event = "nfs-clients", NFS_PORT, Event.NFS_DATASTORE_MOUNTED

    def write(self, site: Site, tinfo: TargetInfo, target: Target, labels: list[str]) -> tuple:
        return _written(site, tinfo, target, labels)    # every client's file

    def serve(self, site: Site, tinfo: TargetInfo, target: Target, clients: ClientNodes, port: int):
        return SharedNfsDatastore(site.host, posixpath.dirname(tinfo.path), {n.label: n.host for n in clients.nodes},
                                  export_to=CONTROLLER_FROM_GUEST, reach=(CONTROLLER_FROM_GUEST, port),
                                  size_bytes=target.size_bytes)

    def files(self, store: SharedNfsDatastore, labels: list[str]) -> dict[str, str]:
        return {label: store.file_path(label) for label in labels}      # a file per client: its own VM disk


class IscsiClientsSurface(_ClientsSurface):
    """fio's client/server mode on one zvol shared over iSCSI, each client in its region (see the module's text)."""
    name, port, event = "iscsi-clients", ISCSI_PORT, Event.ISCSI_DATASTORE_LOGGED_IN

    def write(self, site: Site, tinfo: TargetInfo, target: Target, labels: list[str]) -> tuple:
        return write_target(site, tinfo, target)        # the zvol once, as its zvol surface would

    def serve(self, site: Site, tinfo: TargetInfo, target: Target, clients: ClientNodes, port: int):
        return IscsiDatastore(site.host, tinfo.path, {n.label: n.host for n in clients.nodes},
                              reach=(CONTROLLER_FROM_GUEST, port))

    def files(self, store: IscsiDatastore, labels: list[str]) -> dict[str, str]:
        return dict.fromkeys(labels, store.device())    # one LUN, the same path on every client

    def regions(self, target: Target, labels: list[str]) -> dict[str, dict]:
        # each client's share of the LUN, fixed by the target's largest client count (the module's text)
        return {label: dict(zip(("offset", "size"), region(i, target.clients, target.size_bytes)))
                for i, label in enumerate(labels)}
