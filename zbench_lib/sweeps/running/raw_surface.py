"""Raw disks (layout raw, ``raw_cells``): a surface over no pool, checked, measured bare, wiped.

A pool request of raw disks stands on ``NoPool`` (the ``surface.Ground`` of no zpool) and its
target is on ``RawSurface``; the executor runs them in the same loop as a zpool's targets. They
touch exactly the first N data disks the host gave (never an extra disk), in this order:

1. the pool's disk model, if a factor, is set around it (``pool_setup``, as for a pool);
2. any fio still holding one of the disks is stopped: fio started over SSH outlives an
   interrupted session, and would write under the new runs (the disks are the ones the
   spec gave to be written, so nothing else of the host is stopped);
3. a lab disk's leftovers of earlier pools are cleared (``RawDevice.clear_leftovers``, which
   refuses an in-use disk first), then every disk must pass ``RawDevice.check`` (the pool
   checks of ``zfs.safety``: in the host's list, whole, unmounted, not swap or root, in no
   imported pool, no foreign signature unless allowed);
4. their read-back (size, queue settings; in the lab the QEMU throttle) is the event
   ``raw devices checked``, and the region must fit every disk before a byte is written;
5. with fill whole, each disk's region is written once (``prefill.prefill_raw``: RawSurface.prepare);
6. the runs: fio on the N disks at once (``filename=a:b:...``), no pool, no target name;
7. on the way out, whatever happened, each disk is wiped (``RawDevice.wipe``: fio stopped,
   re-checked unused, ``wipefs -a``), so the next pool of the sweep starts clean. Only
   signatures are erased; the region keeps fio's random bytes, which ``zpool create``
   overwrites and the checks do not read as a signature.
"""

from __future__ import annotations

import contextlib

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.events import Event
from zbench_lib.core.sizes import format_size
from zbench_lib.hosts.node import Node
from zbench_lib.measure.run_context import Ground, RunContext
from zbench_lib.sweeps.planning.records import Target
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.running.pool_setup import pool_setup
from zbench_lib.sweeps.spec.raw_cells import RAW
from zbench_lib.sweeps.running.run_loop import model_context
from zbench_lib.sweeps.running.surface import FioTarget, Site
from zbench_lib.zfs.pools import REMOTE_WORK, new_pool_name
from zbench_lib.zfs.prefill import prefill_raw
from zbench_lib.zfs.raw_device import RawDevice, stop_fio_on


@contextlib.contextmanager
def raw_disks(host, devices: list, host_devices: list, *, owned: bool, allow_signatures=()):
    """Yield the RawDevices of `devices`, each checked; each checked one is wiped on the way out."""
    with contextlib.ExitStack() as stack:
        raws = []
        for device in devices:
            real = host.run(["readlink", "-e", device], check=False, timeout=30).stdout.strip()
            if real:                        # /proc/<pid>/fd names the resolved device
                stop_fio_on(host, real)
            raw = RawDevice(host, device, host_devices=host_devices, allow_signatures=allow_signatures,
                            owned=owned, wipe_after=True)
            if owned:
                raw.clear_leftovers()
            raws.append(stack.enter_context(raw))
        yield raws


def _throttles(control, devices: list) -> dict:
    """QEMU's throttle of each lab disk now (what the disks' model is), or why it was not read."""
    if control is None:
        return {"not_read": "not a lab: a real disk has no QEMU throttle"}
    try:
        return {control.disk_id(d): control.read_throttle(d) for d in devices}
    except (ZbenchError, ValueError, OSError) as exc:
        return {"not_read": " ".join(str(exc).split())[:300]}


def _reclaim_work_dirs(host, store) -> None:
    """Stop what an interrupted session of this sweep left running on raw disks (its sampler and
    fio live on under their work directory, named in the store) and remove the directories."""
    for old in {e.get("work_dir") for e in store.events() if e.get("event") == Event.RAW_DEVICES_CHECKING} - {None}:
        host.run(["pkill", "-TERM", "-f", f"{old}/"], check=False, timeout=30)
        host.run(["rm", "-rf", old], check=False, timeout=60)


def check_region(disks: list, region: int) -> None:
    """Every disk holds the region fio uses from its start; ConfigError before anything is written."""
    small = [f"{d['device']} ({format_size(d['size_bytes'])})" for d in disks if d["size_bytes"] < region]
    if small:
        raise ConfigError(f"raw disks smaller than the {format_size(region)} region each run uses from their "
                          f"start: {', '.join(small)}")


def raw_context(node: Node, model, disks: list, region: int, fill: dict, readback: dict) -> RunContext:
    """What the runs on raw disks record beside fio (no pool: RunContext.no_pool), in this order
    (run.json's format: the pool's keys recorded as None, the disks' model last)."""
    blocks = [d["logical_block_size"] for d in disks if d.get("logical_block_size")]
    return RunContext.recording(
        surface=Ground.NO_POOL.value, file_bytes=region * len(disks),
        # O_DIRECT on a bare disk: no ARC and no page cache between fio and the disk
        cache="cold", scan_at_start=None, pool_capacity_pct=None, pool_fragmentation_pct=None,
        compressratio=None, space=fill, txg_timeout_s=None, lab=node.is_lab, qemu_pid=node.qemu_pid,
        # the disk's own unit: a read of whole sectors reads no more than fio asked for
        block_bytes=max(blocks) if blocks else None,
        data_device_count=len(disks), settings_readback=readback, **model_context(model))


class NoPool:
    """The ground of a raw pool request: its data disks, checked, measured bare and wiped, no pool."""

    @contextlib.contextmanager
    def open(self, request: PoolRequest, node: Node, store, progress: bool):
        host, layout = node.host, request.layout
        devices = list(node.data_devices[:layout.disks])   # data disks only, never an extra disk
        if len(devices) < layout.disks:
            raise ConfigError(f"{request.label} needs {layout.disks} data disks, the host gave {len(devices)}")
        _reclaim_work_dirs(host, store)
        work_dir = f"{REMOTE_WORK}/{new_pool_name('raw-' + request.pool_id)}"     # never another sweep's
        store.record(Event.RAW_DEVICES_CHECKING, pool_id=request.pool_id, devices=devices, work_dir=work_dir)
        with pool_setup(request, layout, devices, node, store) as (model, readback), \
                raw_disks(host, devices, list(node.data_devices), owned=node.owned,
                          allow_signatures=request.allow_signatures) as raws:
            disks = [r.readback() for r in raws]
            check_region(disks, max(t.size_bytes for t in request.targets))
            store.record(Event.RAW_DEVICES_CHECKED, pool_id=request.pool_id, layout=request.label, devices=disks,
                         throttles=_throttles(node.control, devices), pool_replicate=request.replicate,
                         block=request.block)
            host.run(["mkdir", "-p", work_dir])
            try:
                yield Site(request, node, store, tuple(devices), work_dir, None, model, readback, tuple(disks),
                           progress=progress)
            finally:
                host.run(["pkill", "-TERM", "-f", f"{work_dir}/"], check=False, timeout=30)
                host.run(["rm", "-rf", work_dir], check=False, timeout=60)
        store.record(Event.RAW_DEVICES_WIPED, pool_id=request.pool_id, devices=devices)

    def before_teardown(self, site: Site, faults, load_on: dict | None) -> None:
        """Nothing: no pool to lose a disk from (a raw sweep refuses faults at load)."""


class RawSurface:
    """fio on the bare disks at once (``filename=a:b:...``), each over its region from offset 0."""
    name = RAW

    @contextlib.contextmanager
    def prepare(self, site: Site, target: Target):
        devices = list(site.devices)
        fill = {}
        if site.request.fill != "none":
            fill = prefill_raw(site.host, devices, target.size_bytes, site.work_dir, site.progress)
            site.store.record(Event.PREFILLED, target_id=target.target_id, **fill)
        ctx = raw_context(site.node, site.model or site.node.disk_model, list(site.disks), target.size_bytes, fill,
                          site.readback)
        # no pool, no target name: nothing of ZFS to read back after a run
        yield FioTarget(tuple(devices), ctx.file_bytes, None, ctx,
                        meta=dict(pool=None, target=None, target_properties={}, raw_devices=devices))
