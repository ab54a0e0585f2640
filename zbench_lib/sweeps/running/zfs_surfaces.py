"""The ZFS surfaces (zvol, dataset, fs-on-zvol, nfs) and the zpool they stand on (``surface``).

``ZfsPool.open`` names the pool in the store before ``zpool create`` (a crash's leftover is then
known to be this sweep's own, and the resume destroys it), applies the pool's settings around it
(``pool_setup``), creates it (``zfs.pools.Pool``, safety-checked devices) and records it; its
``before_teardown`` gives the faults their turn (a pulled disk back, a resilver timed) and records
the teardown; leaving it destroys the pool and puts the settings back.

Each surface creates its ZFS target (a zvol or a dataset with its properties, read back) and:
- zvol, dataset: fio runs on the target itself; the prefill writes it first;
- fs-on-zvol (``fs: ext4``): the zvol is formatted and mounted (zfs/filesystems), fio runs on a file
  inside, which the prefill writes; unmounted on the way out;
- nfs (``access: nfs``): the dataset is exported over NFS to the host itself and mounted with stable
  writes, as an ESXi datastore is (zfs/nfs_share); the prefill writes the file locally first (a
  datastore's disks are written before they are measured), fio then runs through the mount;
  unmounted, then unexported, before the pool goes.
After the prefill comes the declared L2ARC warm-up (``warmup``), read where the prefill wrote, on
every setup of the target (a resumed one too: its pool is new, its cache devices empty).
"""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath

from zbench_lib.core.crash import crash_point
from zbench_lib.core.events import Event
from zbench_lib.hosts.node import Node
from zbench_lib.measure.run_context import RunContext
from zbench_lib.sweeps.planning.records import Target
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.running.pool_setup import pool_setup
from zbench_lib.sweeps.running.run_loop import model_context
from zbench_lib.sweeps.running.surface import FioTarget, Site
from zbench_lib.sweeps.running.warmup import cache_devices, warm_target
from zbench_lib.zfs.filesystems import FsOnZvol
from zbench_lib.zfs.nfs_share import NfsDatastore
from zbench_lib.zfs.pools import Pool, TargetInfo, new_pool_name
from zbench_lib.zfs.prefill import prefill
from zbench_lib.zfs.targets import Dataset, Zvol


class ZfsPool:
    """The ground of a pool request with a layout: a zpool made for it."""

    @contextlib.contextmanager
    def open(self, request: PoolRequest, node: Node, store, progress: bool):
        layout = request.layout
        devices = list(node.data_devices[:layout.total_disks] + node.extra_devices[:layout.extra_disks])
        name = new_pool_name(request.pool_id)
        store.record(Event.POOL_CREATING, pool_id=request.pool_id, pool=name)
        with pool_setup(request, layout, devices, node, store) as (model, readback), \
                Pool(node.host, layout, devices, name=name, owned_devices=node.owned,
                     allow_signatures=request.allow_signatures) as pool:
            crash_point("pool-create")
            store.record(Event.POOL_CREATED, pool_id=request.pool_id, pool=pool.name, layout=request.label,
                         topology=pool.topology, pool_replicate=request.replicate, block=request.block)
            yield Site(request, node, store, tuple(devices), pool.work_dir(), pool, model, readback,
                       progress=progress)

    def before_teardown(self, site: Site, faults, load_on: dict | None) -> None:
        """The faults' turn (a pulled disk back, the resilver timed on `load_on`), then the teardown's record."""
        r = site.request
        try:
            faults.before_teardown(site.pool, r.pool_id, r.label, fill=r.fill, target=load_on)
        finally:
            faults.cleanup()
            site.store.record(Event.POOL_TEARDOWN, pool_id=r.pool_id, pool=site.pool.name)


def zfs_target(t: Target) -> Zvol | Dataset:
    """The zvol (also under a filesystem: fs-on-zvol) or dataset of a target, with its properties."""
    props = t.zfs_properties()
    if t.kind == "zvol":
        return Zvol(t.target_id.replace("-", "_"), t.size_bytes, t.volblocksize_bytes, **props)
    return Dataset(t.target_id.replace("-", "_"), t.recordsize_bytes or 131072,
                   atime=t.atime, special_small_blocks=t.special_small_blocks, **props)


def write_target(site: Site, tinfo: TargetInfo, t: Target) -> tuple[dict, dict | None]:
    """The prefill at the pool's fill level, then the declared L2ARC warm-up: (their records)."""
    level, pool = site.request.fill, site.pool
    fill = {} if level == "none" else prefill(pool, tinfo, level, progress=site.progress, size_bytes=t.fio_bytes,
                                              compressible_percent=t.compressible_percent or 0)
    if fill:
        site.store.record(Event.PREFILLED, target_id=t.target_id, **fill)
    caches = cache_devices(site.request.layout, list(site.devices))
    return fill, warm_target(site.request.l2arc_warmup, site.store, pool, tinfo, t, caches, fill)


def pool_context(site: Site, tinfo: TargetInfo, t: Target, fill: dict, warm: dict | None) -> RunContext:
    """What a run on a ZFS target records beside fio: the pool's state, the target's cache and block.
    The keys are recorded in this order (run.json's format)."""
    node, request = site.node, site.request
    status = site.pool.status()
    primarycache = tinfo.properties.get("primarycache", "all")
    txg = node.host.run(["cat", "/sys/module/zfs/parameters/zfs_txg_timeout"], check=False).stdout.strip()
    return RunContext.recording(
        file_bytes=t.file_bytes or (t.size_bytes if t.kind == "dataset" else None),
        cache="cold" if primarycache in ("metadata", "none") else "warm",
        scan_at_start=status["scan"], pool_capacity_pct=status["capacity_pct"],
        pool_fragmentation_pct=status["fragmentation_pct"],
        # the target's compression as read back: what the compressible_data check expects of
        # the declared data (the declaration itself is the run's: run_loop.declared_data)
        compressratio=fill.get("compressratio"), compression=tinfo.properties.get("compression"),
        lab=node.is_lab, qemu_pid=node.qemu_pid, space=fill,
        txg_timeout_s=int(txg) if txg.isdigit() else None,
        block_bytes=t.volblocksize_bytes if t.kind == "zvol" else t.recordsize_bytes or 131072,
        **model_context(site.model or node.disk_model),
        data_device_count=request.layout.total_disks, settings_readback=site.readback,
        l2arc_warmup=warm, fault_study=request.fault_study)


class ZvolSurface:
    """fio on the ZFS target itself: a zvol's device."""
    name = "zvol"

    @contextlib.contextmanager
    def prepare(self, site: Site, target: Target):
        made = site.pool.create_target(zfs_target(target))
        with self.reach(site, made, target) as (tinfo, (fill, warm)):
            ctx = pool_context(site, tinfo, target, fill, warm)
            yield FioTarget(tinfo.path, ctx.file_bytes, tinfo.full_name, ctx,
                            meta=dict(pool=site.pool.name, target=tinfo.full_name, target_properties=tinfo.properties))

    @contextlib.contextmanager
    def reach(self, site: Site, tinfo: TargetInfo, target: Target):
        """Yield (the TargetInfo fio uses, write_target's records), writing the target first."""
        yield tinfo, write_target(site, tinfo, target)


class DatasetSurface(ZvolSurface):
    """fio on a file in the dataset, read and written locally."""
    name = "dataset"


class FsOnZvolSurface(ZvolSurface):
    """fio on a file in a filesystem made on the zvol (ext4), mounted only while it is measured."""
    name = "fs-on-zvol"

    @contextlib.contextmanager
    def reach(self, site: Site, tinfo: TargetInfo, target: Target):
        with FsOnZvol(site.host, tinfo.path, fs=target.fs, size_bytes=target.file_bytes) as fs:
            site.store.record(Event.FILESYSTEM_MADE, target_id=target.target_id, **fs.readback())
            mounted = dataclasses.replace(tinfo, path=fs.file_path)
            yield mounted, write_target(site, mounted, target)


class NfsSurface(ZvolSurface):
    """fio through an NFS mount of the dataset (an ESXi datastore's path), mounted only while measured."""
    name = "nfs"

    @contextlib.contextmanager
    def reach(self, site: Site, tinfo: TargetInfo, target: Target):
        written = write_target(site, tinfo, target)
        with NfsDatastore(site.host, posixpath.dirname(tinfo.path), size_bytes=target.size_bytes) as nfs:
            site.store.record(Event.NFS_DATASTORE_MOUNTED, target_id=target.target_id, **nfs.readback())
            yield dataclasses.replace(tinfo, path=nfs.file_path), written
