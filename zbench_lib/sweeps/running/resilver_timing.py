"""Time a full resilver of one lost disk, idle or under a foreground load (faults: resilver).

The situation timed is always the same: a degraded pool with one disk OFFLINE, replaced by
a new drive (labels wiped) with `zpool replace`, timed until `zpool wait -t resilver`
returns. The new drive is a lab data disk the pool does not use, so it has the same size
and envelope; not the returned disk itself, which zed onlines the moment it comes back (a
resilver of only what changed meanwhile), and which `zpool replace` refuses as busy.

With a load (spec.faults: `resilver_load`) a pool is resilvered twice: the first replacement
takes the lost disk's place, then it is taken offline in turn and the original drive, now
out of the pool and wiped, replaces it. Same pool, same data, same fill, one resilver idle and
one while fio runs on the pool's target; which comes first is drawn per pool from the seed,
so an order effect (a warmer ARC, a fuller log) cannot pass for the load's effect.
Each resilver is one `resilver` event with the load's own IOPS while it ran.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

from zbench_lib.core.events import Event
from zbench_lib.core.sizes import zpool_bytes
from zbench_lib.measure.fio_background import BackgroundFio
from zbench_lib.sweeps.spec.faults import load_job, load_label
from zbench_lib.zfs import readback

RESILVER_BUDGET_S = 3600


def resilver_order(seed, pool_id: str, with_load: bool) -> list[bool]:
    """Under-load flags in the order the pool is resilvered: [False] without a load, else a
    per-pool draw of [False, True] or [True, False] (stable across resumes)."""
    if not with_load:
        return [False]
    pair = [False, True]
    random.Random(f"{seed}-{pool_id}-resilver").shuffle(pair)
    return pair


def _offline_guid(host, pool: str, device: str) -> str:
    """Take `device` offline; the GUID zpool shows for it (the name it is replaced by)."""
    host.run(["zpool", "offline", pool, device], check=False, timeout=120)
    guids = host.run(["zpool", "status", "-g", pool], timeout=60).stdout
    return next((line.split()[0] for line in guids.splitlines() if "OFFLINE" in line.split()[1:2]), device)


def pool_has_device(host, pool: str, device: str) -> bool:
    """Is `device` (a by-id path) still a vdev of `pool`? (`zpool status -P` lists full paths.)"""
    text = host.run(["zpool", "status", "-P", pool], check=False, timeout=60).stdout
    return any(part.startswith(device) for line in text.splitlines() for part in line.split()[:1])


def _wipe(host, device: str) -> None:
    """A new drive: no ZFS label on its data partition, no partition table."""
    host.run(["zpool", "labelclear", "-f", f"{device}-part1"], check=False, timeout=60)
    host.run(["wipefs", "-a", "-q", device], check=False, timeout=60)
    host.run(["udevadm", "settle"], check=False, timeout=60)


def resilvered_bytes(status: str) -> tuple[str | None, int | None]:
    """'resilvered 98.9M in 00:00:06' -> ('98.9M', 103704166)."""
    m = re.search(r"resilvered (\S+) in", status)
    return (m.group(1), zpool_bytes(m.group(1))) if m else (None, None)


def time_resilver(host, store, pool, *, pool_id: str, label: str, lost: str, replacement: str,  # noqa: PLR0913 (keyword-only: a resilver's description; debt, issue 28)
                  order: int, load: dict | None, target: dict | None, fill: str | None) -> None:
    """Replace `lost` (in the pool) by `replacement` (not in it) and record the resilver."""
    run = host.run
    run(["zpool", "wait", "-t", "resilver", pool.name], timeout=RESILVER_BUDGET_S)
    health = readback.pool_health(host, pool.name)
    old = _offline_guid(host, pool.name, lost)
    _wipe(host, replacement)
    props = readback.pool_properties(host, pool.name)
    background = None
    if load:
        background = BackgroundFio(host, load_job(load, target["path"], target.get("size_bytes")),
                                   f"{pool.work_dir()}/resilver-{order}",
                                   Path(store.path) / "resilver" / f"{pool_id}-{order}").start()
    figures = {}
    try:
        t0 = time.monotonic()
        run(["zpool", "replace", "-f", pool.name, old, replacement], timeout=300)
        run(["zpool", "wait", "-t", "resilver", pool.name], timeout=RESILVER_BUDGET_S)
        seconds = time.monotonic() - t0
    finally:
        if background is not None:
            figures = background.stop()
    text, nbytes = resilvered_bytes(run(["zpool", "status", pool.name], check=False, timeout=60).stdout)
    store.record(Event.RESILVER, pool_id=pool_id, pool=pool.name, layout=label, fill=fill, device=lost,
                 replacement=replacement, order=order, seconds=round(seconds, 2), resilvered=text,
                 resilvered_bytes=nbytes, allocated_bytes=props.get("allocated"),
                 capacity_pct=props.get("capacity"), state_before=health["state"],
                 health_after=readback.pool_health(host, pool.name)["state"],
                 under_load=load is not None, load=load_label(load),
                 load_read_iops=figures.get("read_iops"), load_write_iops=figures.get("write_iops"),
                 load_runtime_s=figures.get("runtime_s"))


def resilver_pool(host, store, pool, *, seed, pool_id: str, label: str, device: str, spares: list[str],  # noqa: PLR0913 (keyword-only: a resilver's description; debt, issue 28)
                  load: dict | None, target: dict | None, fill: str | None) -> None:
    """One resilver (idle), or the idle/loaded pair, of the pool that lost `device`."""
    spare = next((d for d in spares if d not in pool.devices), None)
    if spare is None:
        raise RuntimeError("no unused lab data disk to replace the lost one with (lab: disks)")
    if load is not None and target is None:
        raise RuntimeError("no target of this pool was created in this session to run the load on")
    lost, new = device, spare
    try:
        for order, under_load in enumerate(resilver_order(seed, pool_id, load is not None), 1):
            time_resilver(host, store, pool, pool_id=pool_id, label=label, lost=lost, replacement=new,
                          order=order, load=load if under_load else None, target=target, fill=fill)
            lost, new = new, lost      # the next resilver takes the replacement out, the original back
    finally:
        # The drive replaced last left the pool while OFFLINE: its label still names the pool
        # as active, and the pool's destroy will not clear it (a later `zpool create` would
        # refuse the disk as "part of potentially active pool"). A lab disk: wiped here.
        for d in (lost, new):
            if not pool_has_device(host, pool.name, d):
                _wipe(host, d)
