"""Pure parsers for fio output: the JSON report and the per-second logs.

One tidy row per job group x direction that did I/O (a mixed job gives a read
row and a write row). Units are in the column names. fio's own per-job stddevs
are reported as they are and must never be averaged across runs.

The latency a row reports (``lat_*``: mean, spread, extremes, every percentile) is fio's
``lat_ns``, the time from an I/O's issue to its completion: the wait the application saw.
fio splits it into submission (``slat``) and completion (``clat``) and where the split falls
depends on the I/O path, not on the storage: libaio on a ZFS file blocks in ``io_submit`` (ZFS
has no asynchronous file AIO), so most of a dataset's wait is slat and clat is a fraction of it;
on a block device (a zvol) io_submit returns at once and clat is nearly all of it; a sync engine
(psync) has no slat. ``clat_mean_ns``, ``clat_p99_ns`` and ``slat_mean_ns`` are kept to show
the split, never as the reported latency (docs/methods.md §18.1).

The I/O path each row measured is recorded from the job's own options: ``ioengine``, ``direct``
(0 buffered, 1 O_DIRECT) and ``o_sync`` (fio's ``sync``: "none", "sync" for O_SYNC, "dsync").
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from zbench_lib.core.errors import ZbenchError

if TYPE_CHECKING:
    import pandas as pd

DIRECTIONS = ("read", "write", "trim")
ALL_CLIENTS = "All clients"     # the jobname fio gives its summed entry in client mode (fio_client_json)
PERCENTILES = {"50.000000": "p50", "90.000000": "p90", "95.000000": "p95",
               "99.000000": "p99", "99.900000": "p99_9", "99.990000": "p99_99"}
COLUMNS = [
    "workload", "jobname", "groupid", "direction", "rw", "bs_bytes", "iodepth", "numjobs",
    "iops", "bw_bytes_s", "io_bytes", "total_ios", "runtime_ms",
    "lat_mean_ns", "lat_stddev_ns", "lat_min_ns", "lat_max_ns",
    *(f"lat_{p}_ns" for p in PERCENTILES.values()),
    "clat_mean_ns", "clat_p99_ns", "slat_mean_ns",
    "sync_lat_mean_ns", "sync_lat_p99_ns", "ioengine", "direct", "o_sync",
    "usr_cpu_pct", "sys_cpu_pct", "ss_attained", "error", "fio_version", "randseed",
]
_SIZE_SUFFIX = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
_LOG_NAME = re.compile(r"^(?P<prefix>.+)_(?P<metric>iops|bw|lat|clat|slat)(?:\.(?P<job>\d+))?\.log$")
_LOG_DIR = {0: "read", 1: "write", 2: "trim", 3: "sync"}
# fio prints C's "nan"/"-nan"/"inf" bare (e.g. steadystate slope over one sample).
_BARE_NAN = re.compile(r"([:\[,]\s*)-?nan\b")
_BARE_INF = re.compile(r"([:\[,]\s*)(-?)inf\b")


def load_fio_json(text: str, key: str = "jobs") -> dict:
    """Decode fio's JSON output, skipping any warning lines fio prints before it.

    `key` is the list the document must hold: ``jobs``, or ``client_stats`` for the output
    of a controller (`fio --client`, measure/fio_client_json.py).
    """
    start = text.find("{")
    if start < 0:
        raise ZbenchError("fio output holds no JSON object")
    text = text[start:]
    # rare, and the substitutions cost more than the decoding: only where a bare word may be (every job's
    # "minf", its minor faults, holds "inf")
    if "nan" in text or text.count("inf") > text.count("minf"):
        text = _BARE_INF.sub(r"\1\2Infinity", _BARE_NAN.sub(r"\1NaN", text))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ZbenchError(f"fio output is not valid JSON: {exc}") from None
    if key not in data:
        raise ZbenchError(f"fio JSON has no {key!r} list")
    return data


def _bytes(value):
    """fio option strings such as '4k', '1M', '8192' to bytes (None if absent)."""
    if value is None:
        return None
    m = re.match(r"^\s*(\d+)\s*([kmg]?)i?b?\s*$", str(value), re.I)
    return int(m.group(1)) * _SIZE_SUFFIX[m.group(2).lower()] if m else None


def _num(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _pct(stats: dict | None, key: str) -> float:
    if not stats:
        return math.nan
    return float(stats.get("percentile", {}).get(key, math.nan))


def _stat(stats: dict | None, key: str) -> float:
    if not stats or not stats.get("N"):
        return math.nan
    return float(stats.get(key, math.nan))


def io_path(opts: dict) -> dict:
    """The I/O path of a job from its options: ioengine, direct (0/1) and o_sync ("none", "sync"
    for O_SYNC, "dsync" for O_DSYNC), with fio's own defaults where the job file left one out.

    >>> io_path({"ioengine": "psync", "direct": "0", "sync": "1"})
    {'ioengine': 'psync', 'direct': 0, 'o_sync': 'sync'}
    """
    sync = str(opts.get("sync", "0")).lower()
    return {"ioengine": str(opts.get("ioengine", "psync")), "direct": int(_num(opts.get("direct", 0)) or 0),
            "o_sync": {"0": "none", "none": "none", "1": "sync", "sync": "sync"}.get(sync, sync)}


def seed_of(value):
    """The job's randseed as fio's options give it (a string of up to 64 bits), or None."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def job_options(data: dict, job: dict) -> dict:
    """A job's options as fio ran it: the report's global options, then the job's own over them."""
    return {**(data.get("global options") or {}), **(job.get("job options") or {})}


def parse_fio_json(data) -> list[dict]:
    """Rows (dicts with COLUMNS) from fio's JSON report: a dict, or its text."""
    if isinstance(data, (str, bytes)):
        data = load_fio_json(data.decode() if isinstance(data, bytes) else data)
    version = data.get("fio version")
    rows = []
    for job in data["jobs"]:
        opts = job_options(data, job)
        ss = job.get("steadystate")
        sync = job.get("sync") or {}
        sync_lat = sync.get("lat_ns") if sync.get("total_ios") else None
        for direction in DIRECTIONS:
            d = job.get(direction)
            if not d or not d.get("io_bytes"):
                continue
            row = dict(
                workload=job.get("jobname"), jobname=job.get("jobname"), groupid=job.get("groupid"),
                direction=direction, rw=opts.get("rw"), bs_bytes=_bytes(opts.get("bs")),
                iodepth=_num(opts.get("iodepth", 1)), numjobs=_num(opts.get("numjobs", 1)),
                iops=float(d["iops"]), bw_bytes_s=int(d["bw_bytes"]), io_bytes=int(d["io_bytes"]),
                total_ios=int(d.get("total_ios", 0)), runtime_ms=int(d["runtime"]),
                lat_mean_ns=_stat(d.get("lat_ns"), "mean"), lat_stddev_ns=_stat(d.get("lat_ns"), "stddev"),
                lat_min_ns=_stat(d.get("lat_ns"), "min"), lat_max_ns=_stat(d.get("lat_ns"), "max"),
                clat_mean_ns=_stat(d.get("clat_ns"), "mean"),
                clat_p99_ns=_pct(d.get("clat_ns"), "99.000000"),
                slat_mean_ns=_stat(d.get("slat_ns"), "mean"),
                # fsync/fdatasync latency belongs to the writes it made durable.
                sync_lat_mean_ns=_stat(sync_lat, "mean") if direction == "write" else math.nan,
                sync_lat_p99_ns=_pct(sync_lat, "99.000000") if direction == "write" else math.nan,
                usr_cpu_pct=float(job.get("usr_cpu", math.nan)),
                sys_cpu_pct=float(job.get("sys_cpu", math.nan)),
                ss_attained=bool(ss["attained"]) if ss and "attained" in ss else None,
                error=int(job.get("error", 0)), fio_version=version, **io_path(opts),
                randseed=seed_of(opts.get("randseed")),
            )
            for key, name in PERCENTILES.items():
                row[f"lat_{name}_ns"] = _pct(d.get("lat_ns"), key)
            rows.append({c: row[c] for c in COLUMNS})
    return rows


def parse_fio_log(text: str) -> pd.DataFrame:
    """A per-second fio log (iops/bw/lat) as t_ms, value, direction, bs.

    fio 3.x writes `time, value, ddir, bs[, offset][, prio]`; bw is in KiB/s and
    latencies in ns. With log_avg_msec the bs column is 0 (averaged windows).
    """
    import pandas as pd  # here: the CLI imports this module to validate specs, which needs no pandas

    records = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        records.append((int(parts[0]), int(parts[1]), _LOG_DIR.get(int(parts[2]), parts[2]), int(parts[3])))
    return pd.DataFrame.from_records(records, columns=["t_ms", "value", "direction", "bs"])


def parse_fio_logs_dir(path) -> pd.DataFrame:
    """Every `<prefix>_<metric>.<job>.log` under `path` as one long table.

    Columns: prefix, metric (iops, bw, lat, clat, slat), job, t_ms, value, direction, bs.
    """
    import pandas as pd

    frames = []
    for file in sorted(Path(path).glob("*.log")):
        m = _LOG_NAME.match(file.name)
        if not m:
            continue
        df = parse_fio_log(file.read_text())
        df.insert(0, "job", int(m.group("job") or 1))
        df.insert(0, "metric", m.group("metric"))
        df.insert(0, "prefix", m.group("prefix"))
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["prefix", "metric", "job", "t_ms", "value", "direction", "bs"])
    return pd.concat(frames, ignore_index=True)
