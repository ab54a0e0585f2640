"""Pure parsers for Linux block-device and CPU counters (/proc/diskstats, /proc/stat).

Two snapshots and the seconds between them give what `iostat -x` shows. The
kernel counts sectors of 512 bytes whatever the device's logical block size.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from zbench_lib.core.errors import ZbenchError

SECTOR = 512
DISKSTATS_FIELDS = [
    "reads", "reads_merged", "sectors_read", "read_ms",
    "writes", "writes_merged", "sectors_written", "write_ms",
    "in_flight", "io_ms", "weighted_ms",
    "discards", "discards_merged", "sectors_discarded", "discard_ms",  # Linux 4.18+
    "flushes", "flush_ms",  # Linux 5.5+
]
CPU_FIELDS = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"]
RATE_COLUMNS = ["device", "r_s", "w_s", "read_bytes_s", "write_bytes_s", "rrqm_s", "wrqm_s",
                "r_await_ms", "w_await_ms", "await_ms", "aqu_sz", "rareq_bytes", "wareq_bytes",
                "avg_req_bytes", "util_pct"]


def diskstats_counters(text: str) -> tuple[list[str], np.ndarray]:
    """/proc/diskstats as (device names, counters): one float row of DISKSTATS_FIELDS per device.

    Counters a kernel does not report (older kernels have 11 or 15) are NaN. Floats hold the
    counters exactly (below 2**53), so the rates below are the same as integer arithmetic's.
    """
    devices, rows = [], []
    width = len(DISKSTATS_FIELDS)
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        try:
            values = [int(v) for v in parts[3:3 + width]]
        except ValueError:
            raise ZbenchError(f"unexpected /proc/diskstats line: {line!r}") from None
        devices.append(parts[2])
        rows.append(values + [math.nan] * (width - len(values)))
    return devices, np.array(rows, dtype=float).reshape(len(rows), width)


def parse_diskstats(text: str) -> pd.DataFrame:
    """/proc/diskstats as one row per device: major, minor, device and the raw counters (NaN
    where a kernel does not report one)."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        try:
            values = [int(v) for v in parts[3:3 + len(DISKSTATS_FIELDS)]]
        except ValueError:
            raise ZbenchError(f"unexpected /proc/diskstats line: {line!r}") from None
        values += [math.nan] * (len(DISKSTATS_FIELDS) - len(values))
        rows.append([int(parts[0]), int(parts[1]), parts[2], *values])
    return pd.DataFrame(rows, columns=["major", "minor", "device", *DISKSTATS_FIELDS])


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 (no request completed: no mean time, no mean size)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / den, math.nan)


def rate_arrays(before, after, dt_s: float) -> tuple[list[str], dict[str, np.ndarray]]:
    """iostat -x figures between two `diskstats_counters` snapshots: (devices, column -> values).

    The devices present in both, in the order of `after`. A device whose counters went
    backwards (re-created, counter wrap) gets NaN rather than a negative rate.
    """
    if dt_s <= 0:
        raise ZbenchError(f"snapshots must be taken in order (dt_s={dt_s})")
    (dev_a, a), (dev_b, b) = before, after
    row_a = {d: i for i, d in enumerate(dev_a)}
    both = [i for i, d in enumerate(dev_b) if d in row_a]
    d = b[both] - a[[row_a[dev_b[i]] for i in both]]
    f = {name: d[:, i] for i, name in enumerate(DISKSTATS_FIELDS)}
    ios = f["reads"] + f["writes"]
    sectors = f["sectors_read"] + f["sectors_written"]
    cols = {"r_s": f["reads"] / dt_s, "w_s": f["writes"] / dt_s,
            "read_bytes_s": f["sectors_read"] * SECTOR / dt_s, "write_bytes_s": f["sectors_written"] * SECTOR / dt_s,
            "rrqm_s": f["reads_merged"] / dt_s, "wrqm_s": f["writes_merged"] / dt_s,
            "r_await_ms": _ratio(f["read_ms"], f["reads"]), "w_await_ms": _ratio(f["write_ms"], f["writes"]),
            "await_ms": _ratio(f["read_ms"] + f["write_ms"], ios), "aqu_sz": f["weighted_ms"] / (dt_s * 1000),
            "rareq_bytes": _ratio(f["sectors_read"] * SECTOR, f["reads"]),
            "wareq_bytes": _ratio(f["sectors_written"] * SECTOR, f["writes"]),
            "avg_req_bytes": _ratio(sectors * SECTOR, ios)}
    util = f["io_ms"] / (dt_s * 1000) * 100
    cols["util_pct"] = np.where(util < 100.0, util, 100.0)      # as min(100, x) does
    moved = np.delete(d, DISKSTATS_FIELDS.index("in_flight"), axis=1)   # a gauge, not a counter
    back = (np.nan_to_num(moved, nan=0.0) < 0).any(axis=1)
    for v in cols.values():
        v[back] = math.nan
    return [dev_b[i] for i in both], cols


def diskstats_rates(before, after, dt_s: float) -> pd.DataFrame:
    """iostat -x figures per device between two /proc/diskstats snapshots (text), a row each.

    r_s/w_s (IOPS), read/write bytes/s, merges/s, r_await_ms/w_await_ms/await_ms
    (mean time per completed request, queueing included), aqu_sz, request sizes in
    bytes, util_pct (share of wall time with I/O in flight). A device whose counters
    went backwards (re-created, counter wrap) gets NaN rather than a negative rate.
    """
    devices, cols = rate_arrays(diskstats_counters(before), diskstats_counters(after), dt_s)
    return pd.DataFrame({"device": devices, **cols}, columns=RATE_COLUMNS)


def parse_cpu_stat(text: str) -> dict[str, dict[str, int]]:
    """The cpu lines of /proc/stat: {'cpu': {...}, 'cpu0': {...}} in jiffies."""
    cpus = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *values = line.split()
        counts = [int(v) for v in values[:len(CPU_FIELDS)]]
        cpus[name] = dict(zip(CPU_FIELDS, counts + [0] * (len(CPU_FIELDS) - len(counts))))
    if "cpu" not in cpus:
        raise ZbenchError("no aggregate 'cpu' line in /proc/stat text")
    return cpus


def cpu_percent(before, after, cpu: str = "cpu") -> dict[str, float]:
    """usr/sys/iowait/steal/guest/idle percentages between two /proc/stat snapshots.

    As sysstat does: guest time is already inside user (and guest_nice inside nice),
    so it is taken out of usr_pct; sys_pct includes irq and softirq. The six add up to 100.
    """
    a = (parse_cpu_stat(before) if isinstance(before, str) else before)[cpu]
    b = (parse_cpu_stat(after) if isinstance(after, str) else after)[cpu]
    d = {k: b[k] - a[k] for k in CPU_FIELDS}
    total = sum(d[k] for k in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"))
    if total <= 0:
        return {k: math.nan for k in ("usr_pct", "sys_pct", "iowait_pct", "steal_pct", "guest_pct", "idle_pct")}
    pct = lambda v: 100.0 * v / total  # noqa: E731
    guest = d["guest"] + d["guest_nice"]
    return dict(usr_pct=pct(d["user"] + d["nice"] - guest), sys_pct=pct(d["system"] + d["irq"] + d["softirq"]),
                iowait_pct=pct(d["iowait"]), steal_pct=pct(d["steal"]), guest_pct=pct(guest),
                idle_pct=pct(d["idle"]))
