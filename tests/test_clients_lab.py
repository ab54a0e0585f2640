"""Several clients on one NFS datastore (issue 30): client VMs beside the session's lab.

Two client labs boot beside the session's lab (hosts.lab_clients: QEMU user networking, no root,
no bridge). The session lab exports one dataset of a zbench pool; each client mounts it with
stable writes through a forward of the storage lab's NFS port (zfs.nfs_clients); each client
runs fio's server, reached by the controller through a forward of its own; the controller runs
one `fio --client` against both (measure.fio_clients), each client writing its own file. Checked:
a report per client and zbench's aggregate of them; the clients' mounts read back with stable
writes; and afterwards nothing mounted on a client, nothing exported, no forward left on any
lab, no fio server running, no pool left.
"""

from __future__ import annotations

import contextlib
import posixpath

import pytest

from zbench_lib.hosts.base import LocalHost
from zbench_lib.hosts.lab_clients import CONTROLLER_FROM_GUEST, client_labs, forwarded
from zbench_lib.measure import fio
from zbench_lib.measure.fio_clients import DEFAULT_PORT, FioServers, ServerSpec, run_clients
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.nfs_clients import SharedNfsDatastore
from zbench_lib.zfs.pools import Pool, find_leftovers
from zbench_lib.zfs.targets import Dataset

pytestmark = pytest.mark.lab
MiB = 1024 ** 2
FILE_BYTES = 16 * MiB
NFS_PORT = 2049


def _forwards(lab) -> str:
    """QEMU's own list of the lab's user-network forwards (`info usernet`), read independently."""
    return lab.qmp("human-monitor-command", **{"command-line": "info usernet"})


def _job(path: str) -> str:
    return fio.build_job("randwrite", filename=path, size=FILE_BYTES, runtime_s=3, ramp_time_s=1,
                         bs="16k", iodepth=2, numjobs=1)


def test_two_clients_write_to_one_nfs_datastore_and_nothing_is_left(lab, lab_host, tmp_path):
    with client_labs(lab.cfg, 2) as clients:
        hosts = {f"c{i}": c.host for i, c in enumerate(clients)}
        with Pool(lab_host, Layout("stripe", 1), lab.data_disks[:1], owned_devices=True) as pool:
            ds = pool.create_target(Dataset("store", 16384, compression="off"))
            exported_path = posixpath.dirname(ds.path)          # the dataset's mountpoint (ds.path: fio's file)
            with forwarded(lab.dir, NFS_PORT) as nfs_port, \
                    SharedNfsDatastore(lab_host, exported_path, hosts, export_to=CONTROLLER_FROM_GUEST,
                                       reach=(CONTROLLER_FROM_GUEST, nfs_port), size_bytes=FILE_BYTES) as store:
                readback = store.readback()
                exported = lab_host.run(["exportfs", "-v"]).stdout
                with contextlib.ExitStack() as stack:
                    specs = [ServerSpec(c.host, "0.0.0.0", DEFAULT_PORT, "/var/tmp/zbench-fio-server", label,
                                        reach=("127.0.0.1", stack.enter_context(forwarded(c.dir, DEFAULT_PORT))))
                             for label, c in zip(hosts, clients)]
                    with FioServers(specs, LocalHost()) as servers:
                        run = run_clients(LocalHost(), servers, {lab_: _job(store.file_path(lab_)) for lab_ in hosts},
                                          str(tmp_path / "controller"), tmp_path / "raw")
                    print("\nforwards while running:", [_forwards(c) for c in clients])
            mountpoints = {label: m.mountpoint for label, m in store.mounts.items()}
            # what each client's kernel still has mounted from the storage lab, or at the datastore's place
            left_mounted = {label: [ln for ln in c.host.run(["cat", "/proc/self/mounts"]).stdout.splitlines()
                                    if ln.startswith(f"{CONTROLLER_FROM_GUEST}:")
                                    or f" {mountpoints[label]} " in ln]
                            for label, c in zip(hosts, clients)}
            # a connection just closed stays listed (TIME_WAIT) a while; a forward is a HOST_FORWARD line
            nfs_forward_left = [f for f in _forwards(lab).splitlines() if "HOST_FORWARD" in f and f" {NFS_PORT} " in f]
            server_forwards_left = [f for c in clients for f in _forwards(c).splitlines() if "HOST_FORWARD" in f
                                    and f" {DEFAULT_PORT} " in f]
            still_exported = lab_host.run(["exportfs", "-v"]).stdout
        agg = run.aggregate("write")
        print("\nexport:", exported.strip(), "\nmounts:", readback["mount_options"],
              "\naggregate:", agg)
        # each client reported, and wrote
        assert set(run.endpoints) == {s.endpoint for s in specs}
        per_client = {j.endpoint: j for j in run.stats.jobs}
        written = {ep: j.direction("write") for ep, j in per_client.items()}
        assert len(written) == 2 and all(w and w.total_ios > 0 for w in written.values()), per_client
        assert agg.total_ios == sum(w.total_ios for w in written.values())
        # the export as asked (sync, to the clients' address) and every client's mount with stable writes
        assert exported_path in exported and CONTROLLER_FROM_GUEST in exported and "sync" in exported
        assert all(o and "vers=4.2" in o and f"port={nfs_port}" in o for o in readback["mount_options"].values())
        # nothing left: no NFS mount on a client, no export, no forward, no server, no pool
        assert left_mounted == {"c0": [], "c1": []}, left_mounted
        assert exported_path not in still_exported
        assert nfs_forward_left == [] and server_forwards_left == [], (nfs_forward_left, server_forwards_left)
        for c in clients:
            assert not c.host.run(["pgrep", "-x", "fio"], check=False).ok
    assert find_leftovers(lab_host) == []
