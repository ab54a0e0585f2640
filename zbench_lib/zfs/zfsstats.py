"""Pure parsers for OpenZFS counters: arcstats (kstat), txgs and `zpool iostat -Hpvy -l`."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from zbench_lib.core.errors import ZbenchError

if TYPE_CHECKING:  # imported where used: spec validation reads parse_kstat and needs no pandas
    import pandas as pd

# ARC counters turned into per-second rates; everything else named here is a gauge.
ARC_COUNTERS = [
    "hits", "iohits", "misses", "demand_data_hits", "demand_data_iohits", "demand_data_misses",
    "demand_metadata_hits", "demand_metadata_misses", "prefetch_data_hits", "prefetch_data_misses",
    "prefetch_metadata_hits", "prefetch_metadata_misses", "mru_hits", "mfu_hits",
    "mru_ghost_hits", "mfu_ghost_hits", "l2_hits", "l2_misses", "memory_throttle_count",
]
ARC_GAUGES = ["size", "c", "c_min", "c_max", "data_size", "metadata_size", "compressed_size",
              "uncompressed_size", "mru_size", "mfu_size", "l2_size", "l2_asize"]

TXG_COLUMNS = ["txg", "birth_ns", "state", "ndirty", "nread", "nwritten", "reads", "writes",
               "otime_ns", "qtime_ns", "wtime_ns", "stime_ns"]

ZPOOL_BASE = ["alloc_bytes", "free_bytes", "read_ops_s", "write_ops_s", "read_bytes_s", "write_bytes_s"]
ZPOOL_LATENCY = ["total_wait_read_ns", "total_wait_write_ns", "disk_wait_read_ns", "disk_wait_write_ns",
                 "syncq_wait_read_ns", "syncq_wait_write_ns", "asyncq_wait_read_ns",
                 "asyncq_wait_write_ns", "scrub_wait_ns", "trim_wait_ns", "rebuild_wait_ns"]
ZPOOL_COLUMNS = ["sample", "t_s", "name", "kind", "parent", "section", *ZPOOL_BASE, *ZPOOL_LATENCY]
_GROUP_VDEV = re.compile(r"^(mirror|raidz[123]?|draid[123]?(:[0-9a-z:]*)?|spare|replacing)-\d+$")


def parse_kstat(text: str) -> dict[str, int | str]:
    """A /proc/spl/kstat file of named values (arcstats, zil, ...): {name: value}.

    Format: a kstat header line, a `name type data` line, then one row per value.
    Numeric types (0-4) become ints; strings (7) stay strings.
    """
    lines = text.splitlines()
    if len(lines) < 2 or lines[1].split() != ["name", "type", "data"]:
        raise ZbenchError("not a named kstat: expected a header line and 'name type data'")
    values = {}
    for line in lines[2:]:
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        name, kind, data = parts
        values[name] = int(data) if kind in ("0", "1", "2", "3", "4") else data.strip()
    return values


def arc_delta(before, after, dt_s: float) -> dict[str, float]:
    """ARC activity between two arcstats snapshots (text or parsed).

    Counters become `<name>_s` rates, gauges `<name>_bytes` (from the later
    snapshot), plus hit ratios over the interval (NaN when there was no access).
    Since OpenZFS 2.2 `iohits` (hits on blocks still being read) count separately.
    """
    if dt_s <= 0:
        raise ZbenchError(f"snapshots must be taken in order (dt_s={dt_s})")
    a = parse_kstat(before) if isinstance(before, str) else before
    b = parse_kstat(after) if isinstance(after, str) else after
    out: dict[str, float] = {}
    d = {k: b[k] - a[k] for k in ARC_COUNTERS if k in a and k in b}
    for k, v in d.items():
        out[f"{k}_s"] = v / dt_s
    for k in ARC_GAUGES:
        if k in b:
            out[f"{k}_bytes"] = float(b[k])

    def ratio(hit_keys, miss_key):
        hits = sum(d.get(k, 0) for k in hit_keys)
        total = hits + d.get(miss_key, 0)
        return hits / total if total else math.nan

    out["hit_ratio"] = ratio(["hits", "iohits"], "misses")
    out["demand_data_hit_ratio"] = ratio(["demand_data_hits", "demand_data_iohits"], "demand_data_misses")
    out["prefetch_data_hit_ratio"] = ratio(["prefetch_data_hits"], "prefetch_data_misses")
    return out


def parse_txgs(text: str) -> pd.DataFrame:
    """/proc/spl/kstat/zfs/<pool>/txgs: one row per TXG (times in ns, state O/Q/W/S/C)."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != len(TXG_COLUMNS) or not parts[0].isdigit():
            continue
        rows.append([int(parts[0]), int(parts[1]), parts[2], *(int(p) for p in parts[3:])])
    import pandas as pd

    return pd.DataFrame(rows, columns=TXG_COLUMNS)


def _value(field: str) -> float:
    return math.nan if field in ("-", "") else float(field)


def parse_zpool_iostat(text: str, pool: str | None = None) -> pd.DataFrame:
    """Output of `zpool iostat -Hpvy [-l] [-T u] <pool> <interval>` as one row per vdev per sample.

    With -H each sample is a block of tab-separated rows: the pool first, then its
    vdevs depth-first; a blank line opens each further class (logs, cache, ...),
    numbered in `section` (0 data, then 1, 2, ... in the order printed: logs before cache).
    With -T u an epoch line precedes each sample (t_s); the first block may follow two of
    them (with -y the skipped since-boot sample still prints its stamp), so the last
    stamp before a block is its time.
    -p prints raw numbers (bytes, ops/s, ns); '-' (no I/O, so no latency) is NaN.
    `kind` is pool, vdev (mirror/raidz/draid group) or disk; `parent` is the pool for
    top-level vdevs and disks with capacity, else the group above.
    """
    rows = []
    sample, t_s, section, group = -1, math.nan, 0, None
    pending_t = math.nan
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            section, group = section + 1, None
            continue
        if re.fullmatch(r"\d+(\.\d+)?", stripped):  # -T u timestamp (zbench's sampler: epoch.ns)
            pending_t = float(stripped)
            continue
        fields = line.rstrip("\n").split("\t")
        if len(fields) not in (7, 17, 18):
            raise ZbenchError(f"unexpected zpool iostat line ({len(fields)} fields; use -H -p): {line!r}")
        name = fields[0]
        if pool is None:
            pool = name
        if name == pool:
            sample, t_s, section, group = sample + 1, pending_t, 0, None
            pending_t = math.nan
        if sample < 0:
            raise ZbenchError(f"zpool iostat output does not start with pool {pool!r}: {line!r}")
        values = [_value(f) for f in fields[1:]]
        base = dict(zip(ZPOOL_BASE, values[:6]))
        lat = dict(zip(ZPOOL_LATENCY, values[6:]))
        if name == pool:
            kind, parent = "pool", None
        elif _GROUP_VDEV.match(name):
            kind, parent, group = "vdev", pool, name
        else:
            has_space = any(v > 0 for v in (base["alloc_bytes"], base["free_bytes"]))  # NaN > 0 is False
            kind, parent = "disk", (pool if has_space or group is None else group)
            if has_space:
                group = None
        row = dict(sample=sample, t_s=t_s, name=name, kind=kind, parent=parent, section=section,
                   **base, **{c: lat.get(c, math.nan) for c in ZPOOL_LATENCY})
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows, columns=ZPOOL_COLUMNS)
