"""Pure parsers for Linux block-device and CPU counters (/proc/diskstats, /proc/stat).

Two snapshots and the seconds between them give what `iostat -x` shows. The
kernel counts sectors of 512 bytes whatever the device's logical block size.
"""

from __future__ import annotations

import math

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


def parse_diskstats(text: str) -> pd.DataFrame:
    """/proc/diskstats as one row per device: major, minor, device and the raw counters.

    Counters a kernel does not report (older kernels have 11 or 15) are NaN.
    """
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


def _ratio(num, den):
    return num / den if den else math.nan


def diskstats_rates(before, after, dt_s: float) -> pd.DataFrame:
    """iostat -x figures per device between two /proc/diskstats snapshots (text or parsed).

    r_s/w_s (IOPS), read/write bytes/s, merges/s, r_await_ms/w_await_ms/await_ms
    (mean time per completed request, queueing included), aqu_sz, request sizes in
    bytes, util_pct (share of wall time with I/O in flight). A device whose counters
    went backwards (re-created, counter wrap) gets NaN rather than a negative rate.
    """
    if dt_s <= 0:
        raise ZbenchError(f"snapshots must be taken in order (dt_s={dt_s})")
    a = parse_diskstats(before) if isinstance(before, str) else before
    b = parse_diskstats(after) if isinstance(after, str) else after
    merged = b.merge(a, on="device", suffixes=("", "_0"))
    rows = []
    for _, r in merged.iterrows():
        d = {f: r[f] - r[f + "_0"] for f in DISKSTATS_FIELDS if f != "in_flight"}
        if any(v < 0 for v in d.values() if not math.isnan(v)):
            rows.append([r["device"]] + [math.nan] * (len(RATE_COLUMNS) - 1))
            continue
        ios = d["reads"] + d["writes"]
        rows.append([
            r["device"], d["reads"] / dt_s, d["writes"] / dt_s,
            d["sectors_read"] * SECTOR / dt_s, d["sectors_written"] * SECTOR / dt_s,
            d["reads_merged"] / dt_s, d["writes_merged"] / dt_s,
            _ratio(d["read_ms"], d["reads"]), _ratio(d["write_ms"], d["writes"]),
            _ratio(d["read_ms"] + d["write_ms"], ios), d["weighted_ms"] / (dt_s * 1000),
            _ratio(d["sectors_read"] * SECTOR, d["reads"]),
            _ratio(d["sectors_written"] * SECTOR, d["writes"]),
            _ratio((d["sectors_read"] + d["sectors_written"]) * SECTOR, ios),
            min(100.0, d["io_ms"] / (dt_s * 1000) * 100),
        ])
    return pd.DataFrame(rows, columns=RATE_COLUMNS)


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
