"""L2ARC warm-up: read a target until the cache devices hold (most of) it, and say how far it got.

The L2ARC is fed only from the ARC: a feed thread copies buffers near the tail of the ARC's
lists to the cache devices (at most ``l2arc_write_max`` per second) before they are evicted.
So the target is *read*, through the ARC: a file in a dataset buffered (from OpenZFS 2.3 an
O_DIRECT read of a dataset bypasses the ARC and would feed nothing), a zvol or a file on a
zvol's filesystem with O_DIRECT (which a zvol still serves through the ARC, up to 2.3 at least;
it only keeps Linux's page cache from answering repeated reads before they reach ZFS). Reads
are random, in 1 MiB pieces: several records per read so an IOPS-bound pool warms in fewer
seconds, and random offsets so ZFS's prefetcher does not read them ahead (while
``l2arc_noprefetch=1``, the default, prefetched buffers stay out of the L2ARC).

It reads in chunks (``chunk_s`` each, one fio per chunk, an argument list) and reads arcstats
after each, until one of, in this order:

- reached: ``l2_size`` >= ``until`` x what can be warm (``warm_bytes``);
- plateau: two chunks together added less than 1% of the goal (the feed has nothing left to
  copy: the ARC holds the rest, or ``l2arc_headroom`` does not look deep enough);
- time limit: ``max_s`` seconds have passed (the last chunk is cut to fit).

Before any read the stop rule is asked once: an L2ARC the prefill already fed may be warm.
arcstats is host-wide: ``l2_size`` counts every pool's L2ARC contents, other targets of the same
pool included, so with several targets in a pool a later target's ``reached`` is an upper bound.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from zbench_lib.core.stopping import stop_by_cwd
from zbench_lib.core.errors import ZbenchError
from zbench_lib.zfs.zfsstats import parse_kstat

# `host` below is a hosts.base.Host (run, read_text), deliberately not imported: measure.rows
# takes result_columns from here, and the analysis, which rebuilds rows, may not reach a host.

ARCSTATS = "/proc/spl/kstat/zfs/arcstats"
WRITE_MAX = "/sys/module/zfs/parameters/l2arc_write_max"
L2_FIELDS = ("l2_size", "l2_asize", "l2_hits", "l2_misses")
MiB = 1024 ** 2
READ_BS = 1 * MiB
IODEPTH = 16
PLATEAU_SHARE = 0.01            # of the goal, added over PLATEAU_CHUNKS chunks
PLATEAU_CHUNKS = 2
# What a cache device cannot hold: its two front labels and boot block (VDEV_LABEL_START_SIZE,
# 4 MiB) and two back labels (VDEV_LABEL_END_SIZE, 512 KiB). The L2ARC's device header and the
# log blocks of a persistent L2ARC take a little more (about 1% of what they index at most):
# left to the slack of the declared `until`.
LABEL_BYTES = 4 * MiB + 512 * 1024


@dataclass(frozen=True)
class WarmupRule:
    until: float            # the share of warm_bytes to reach, in (0, 1]
    max_s: int              # seconds of reading at most
    chunk_s: int = 10       # seconds per fio chunk; arcstats is read after each


def l2_reading(text: str) -> dict:
    """The L2ARC gauges and counters of one arcstats snapshot; ZbenchError if any is missing."""
    values = parse_kstat(text)
    missing = [k for k in L2_FIELDS if k not in values]
    if missing:
        raise ZbenchError(f"arcstats has no {', '.join(missing)}: cannot follow an L2ARC warm-up")
    return {k: int(values[k]) for k in L2_FIELDS}


def warm_bytes(target_bytes: int, cache_bytes: int, compressratio=None) -> int:
    """What "all warm" is, in l2_size's unit.

    l2_size sums the *logical* (uncompressed) size of every buffer on the cache devices
    (HDR_GET_LSIZE; l2_asize is what they take there, compressed as on the pool). The target's
    bytes are logical too, so they compare directly. The devices' capacity is physical: it holds
    ``compressratio`` logical bytes per byte when the data compresses (the prefill's data does
    not: 1.00x), never fewer, so it is scaled by the target's compressratio, at least 1.
    """
    ratio = compressratio if isinstance(compressratio, (int, float)) and compressratio > 1 else 1.0
    return max(0, min(int(target_bytes), int(cache_bytes * ratio)))


def stop_reason(sizes: list, goal: int, elapsed_s: float, max_s: float) -> str | None:
    """Why to stop after the readings `sizes` (l2_size before any read, then one per chunk), or None.

    Plateau is growth against the goal, not against l2_size itself: from an empty cache any
    growth is "100%", and a cache held back at a few MiB would never look flat.
    """
    if sizes[-1] >= goal:
        return "reached"
    if len(sizes) > PLATEAU_CHUNKS and sizes[-1] - sizes[-1 - PLATEAU_CHUNKS] < PLATEAU_SHARE * goal:
        return "plateau"
    if max_s - elapsed_s < 1:           # fio reads for whole seconds: not one left
        return "time limit"
    return None


def warmup_argv(path: str, size_bytes: int, direct: bool, seconds: int, work_dir: str) -> list[str]:
    """One chunk of random reads over the whole target (randrepeat=0: a new order each chunk).

    fio runs inside the pool's work directory (env -C, no shell), as every fio of a pool does: an
    interrupted sweep's teardown finds and stops it there (pools._kill_workers) before the destroy.
    """
    bs = min(READ_BS, size_bytes - size_bytes % 4096) or 4096
    return ["env", "-C", work_dir, "fio", "--name=l2arc-warmup", f"--filename={path}", "--rw=randread", f"--bs={bs}",
            f"--iodepth={IODEPTH}", "--ioengine=libaio", f"--direct={int(direct)}", f"--size={size_bytes}",
            "--time_based", f"--runtime={seconds}", "--randrepeat=0", "--group_reporting",
            "--output-format=json"]


def _read_bytes(stdout: str):
    """Bytes fio read in one chunk, from its JSON (None when it printed none to read)."""
    try:
        data = json.loads(stdout[stdout.index("{"):])
        return sum(int(j["read"]["io_bytes"]) for j in data["jobs"])
    except (ValueError, KeyError, TypeError):
        return None


def cache_capacity(host, devices: list[str]) -> int:
    """Bytes the cache devices can hold at once: each device's size less its labels and less the
    room the feed keeps free ahead of its write hand (it evicts one write's worth, l2arc_write_max
    but at most a quarter of the device, before writing there), so a full L2ARC is this size."""
    write_max = int(host.read_text(WRITE_MAX).strip())
    total = 0
    for dev in devices:
        argv = ["blockdev", "--getsize64", dev] if dev.startswith("/dev/") else ["stat", "-L", "-c", "%s", dev]
        usable = max(0, int(host.run(argv, timeout=60).stdout.strip()) - LABEL_BYTES)
        total += usable - min(write_max, usable // 4)
    return total


def warm_l2arc(host, path: str, *, size_bytes: int, cache_devices: list[str], rule: WarmupRule,  # noqa: PLR0913 (keyword-only: the warm-up's description)
               direct: bool, work_dir: str, compressratio=None, clock=time.monotonic) -> dict:
    """Read `path` until the stop rule says stop; the record of what happened (an event's fields)."""
    cache = cache_capacity(host, cache_devices)
    whole = warm_bytes(size_bytes, cache, compressratio)
    if whole <= 0:
        raise ZbenchError(f"L2ARC warm-up of {path}: nothing can be warm (target {size_bytes} bytes, "
                          f"cache devices {cache} bytes usable)")
    goal = int(rule.until * whole)
    readings = [l2_reading(host.read_text(ARCSTATS))]
    read, t0 = 0, clock()
    while (reason := stop_reason([r["l2_size"] for r in readings], goal, clock() - t0, rule.max_s)) is None:
        seconds = max(1, min(rule.chunk_s, int(rule.max_s - (clock() - t0))))
        res = host.run(warmup_argv(path, size_bytes, direct, seconds, work_dir), timeout=seconds + 300,
                       stop_with=stop_by_cwd(work_dir))     # stopped on the host on a signal
        got = _read_bytes(res.stdout)
        read = None if read is None or got is None else read + got
        readings.append(l2_reading(host.read_text(ARCSTATS)))
    first, last = readings[0], readings[-1]
    return {"stopped": reason, "reached": reason == "reached", "seconds": round(clock() - t0, 1),
            "chunks": len(readings) - 1, "until": rule.until, "max_s": rule.max_s, "chunk_s": rule.chunk_s,
            "target_bytes": int(size_bytes), "cache_bytes": cache, "warm_bytes": whole, "goal_bytes": goal,
            "l2_size_before": first["l2_size"], "l2_size_after": last["l2_size"],
            "l2_asize_before": first["l2_asize"], "l2_asize_after": last["l2_asize"],
            "l2_hits": last["l2_hits"] - first["l2_hits"], "l2_misses": last["l2_misses"] - first["l2_misses"],
            "warm_fraction": round(last["l2_size"] / whole, 4) if whole else None,
            "read_bytes": read, "direct": bool(direct), "path": path,
            "l2_sizes": [r["l2_size"] for r in readings]}


def result_columns(record: dict | None) -> dict:
    """The columns a warmed target's rows carry; none without a warm-up (no cache device)."""
    if not record:
        return {}
    return {"l2arc_warmup_s": record["seconds"], "l2arc_warm_fraction": record["warm_fraction"],
            "l2arc_warm_until": record["until"], "l2arc_warm_reached": bool(record["reached"]),
            "l2arc_warmup_stop": record["stopped"]}
