"""The declared L2ARC warm-up of one target, between its prefill and its first measured run.

Called by the ZFS surfaces after the prefill each time a target is set up (zfs_surfaces), never skipped because
an earlier session recorded one: like the prefill, a resumed target is on a pool created anew
(the old one died with the session), and its cache devices start empty. Each warm-up is an
``l2arc warmed`` event; its record rides in the run context, so the rows of the runs that
followed it carry its columns (zfs/l2arc_warmup.result_columns).
"""

from __future__ import annotations

from zbench_lib.core.events import Event
from zbench_lib.sweeps.planning.records import Target
from zbench_lib.zfs.l2arc_warmup import WarmupRule, warm_l2arc


def cache_devices(layout, devices: list[str]) -> list[str]:
    """The cache devices of a pool's device list (ordered data, log, cache, special)."""
    start = layout.total_disks + layout.log
    return list(devices[start:start + layout.cache])


def warm_target(declared: dict | None, store, pool, tinfo, target: Target, caches: list[str],
                fill: dict) -> dict | None:
    """Warm the L2ARC with `target` (read at `tinfo.path`) if `declared` (the spec's warmup.l2arc)
    and the pool has cache devices."""
    if declared is None or not caches:
        return None
    rule = WarmupRule(until=declared["until"], max_s=declared["max_s"], chunk_s=declared["chunk_s"])
    # A file in a dataset is read buffered (O_DIRECT would bypass the ARC from OpenZFS 2.3);
    # a zvol, or a file on its filesystem, with O_DIRECT (the zvol still reads through the ARC).
    record = warm_l2arc(pool.host, tinfo.path, size_bytes=target.fio_bytes,
                        cache_devices=caches, rule=rule, direct=target.kind != "dataset",
                        work_dir=pool.work_dir(), compressratio=(fill or {}).get("compressratio"))
    store.record(Event.L2ARC_WARMED, target_id=target.target_id, **record)
    return record
