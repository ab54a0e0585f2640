"""A clients run's rows, from its raw files only (several clients on one datastore, issue 30).

A run whose load came from client VMs keeps, beside the storage node's counters, the controller's
raw record in ``clients/``: fio's report (``fio.json``, ``client_stats``), the clients' job files and
stamped iops logs, and the clients' clock readings (``clocks.json``, `client_clock`). From them:

- **the window on the storage node's clock**: each client's stamped iops log (its start and when it
  did its I/O, on its own clock) moved onto the storage node's by its offset, then `client_aggregate`'s
  shared window (the latest start to the earliest end), checked against the clocks' uncertainty (each
  client's `ClientClock.placement_s`, the largest); the counters are summed over it, as over a local
  fio's window;
- **one row per direction, the aggregate**, in fio's row shape (`fio_parse.COLUMNS`) so the truth
  checks and the analysis read it as any run's: the throughput over the shared window (the clients'
  I/O inside it, by their logs), the bytes in it (``io_bytes``: what the checks compare with the disks'
  bytes over the same window), every client's I/O count (``total_ios``: what supports a percentile)
  and the percentiles from the summed bins (the whole runs': fio keeps no histogram per interval);
  beside them the clients' columns (``CLIENT_COLUMNS``: the skew, the shares and Jain's index of the
  window's IOPS, the share of I/O outside the window and the window p99's bounds, the clocks' check);
- **one row per client and direction** (`client_table`): its IOPS over its run and over the window,
  bandwidth, p99, share, start and clock, rebuilt into clients.parquet by the same path as
  results.parquet;
- **each client's completion-latency bins per direction** (`client_histograms`): its jobs' json+
  bins summed, rebuilt into client_hist.parquet beside it, from which the analysis reads a client's
  p99 over a cell's runs by merging them (methods §18: never a statistic of its per-run p99s).

Pure: an attempt directory in, rows out; never a host.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path

from zbench_lib.measure.client_aggregate import ClientAggregate, aggregate, read_percentile
from zbench_lib.measure.client_clock import ClientClock, clocks_from_record, to_storage_ms
from zbench_lib.measure.fio_client_json import ClientStats, StampedLog, parse_client_json, stamped_logs
from zbench_lib.measure.fio_parse import COLUMNS, DIRECTIONS, PERCENTILES, io_path, seed_of

CLIENTS_DIR = "clients"
# The aggregate row's own columns (documented in analysis/report/data_dictionary.py).
CLIENT_COLUMNS = ("clients", "client_skew_ms", "client_iops_min_share", "client_iops_max_share", "client_jain",
                  "client_p99_max_ns", "client_window_overlap", "client_outside_share", "client_p99_window_low_ns",
                  "client_p99_window_high_ns", "client_clock_uncertainty_ms", "client_clock_check",
                  "client_clock_note", "client_fio_sum_agrees")
CLIENT_TABLE_COLUMNS = ("direction", "client", "endpoint", "iops", "window_iops", "bw_bytes_s", "iops_share",
                        "total_ios", "window_ios",
                        "io_bytes", "runtime_ms", "p99_ns", "p99_supported", "start_after_first_ms",
                        "clock_offset_ms", "clock_drift_ms", "clock_uncertainty_ms")
# client_hist.parquet's columns of a run (the store adds run_id and attempt, as latency_hist.parquet's).
CLIENT_HIST_COLUMNS = ("direction", "client", "bin_ns", "count")
_OPTION = re.compile(r"^\s*(rw|bs|iodepth|numjobs|ioengine|direct|sync)\s*=\s*(\S+)\s*$", re.M)


def is_clients_run(raw_dir) -> bool:
    return (Path(raw_dir) / CLIENTS_DIR / "fio.json").is_file()


class ClientsRecord:
    """A clients run's raw record, read once: fio's report, the labels, the clocks and the stamped logs
    on the storage node's clock."""

    def __init__(self, raw_dir):
        self.dir = Path(raw_dir) / CLIENTS_DIR
        rec = json.loads((Path(raw_dir) / "run.json").read_text())["clients"]
        self.labels: dict[str, str] = dict(rec["endpoints"])      # {label: endpoint}
        self.stats: ClientStats = parse_client_json((self.dir / "fio.json").read_text())
        clocks = self.dir / "clocks.json"
        self.clocks: dict[str, ClientClock] = clocks_from_record(json.loads(clocks.read_text())) \
            if clocks.is_file() else {}
        by_endpoint = {ep: lab for lab, ep in self.labels.items()}
        own = stamped_logs(self.dir, by_endpoint, int(rec["interval_ms"]))
        # a log without its client's clock stays off the storage clock: no window is better than a wrong one
        self.logs: dict[str, StampedLog] = {      # shifted as to_storage_ms moves any time of the client's
            ep: log.shifted(to_storage_ms(0.0, self.clocks[by_endpoint[ep]].offset_s))
            for ep, log in own.items() if by_endpoint[ep] in self.clocks}
        placed = [self.clocks[by_endpoint[ep]].placement_s for ep in self.logs]
        self.uncertainty_ms = max(placed) * 1000.0 if placed else None

    def directions(self) -> list[str]:
        return [d for d in DIRECTIONS if any(j.direction(d) for j in self.stats.jobs)]

    def aggregate(self, direction: str) -> ClientAggregate:
        return aggregate(self.stats, direction, self.logs, tuple(self.labels.values()), self.uncertainty_ms)

    def options(self) -> dict:
        """rw, bs, iodepth, numjobs and the I/O path (ioengine, direct, sync) of the first client's job file
        (every client runs the same job)."""
        first = sorted(self.dir.glob("job-*.fio"))
        return dict(_OPTION.findall(first[0].read_text())) if first else {}


def storage_window(raw_dir, fallback: tuple[float, float]) -> tuple[float, float]:
    """The clients' shared window on the storage node's clock (epoch s), or `fallback` when the clients
    gave no starts (the window is then only a length, not a place)."""
    record = ClientsRecord(raw_dir)
    for d in record.directions():
        w = record.aggregate(d).window
        if w.start_ms is not None and w.length_ms > 0:
            return w.start_ms / 1000.0, w.end_ms / 1000.0
    return fallback


def _size(text) -> float:
    m = re.fullmatch(r"(\d+)([kmg]?)", str(text or "").lower())
    return float(int(m[1]) * 1024 ** "_kmg".index(m[2] or "_")) if m else math.nan


def _shares(agg: ClientAggregate) -> tuple[float, float]:
    shares = agg.shares()
    return min(shares), max(shares)


def _latency(agg: ClientAggregate, stats: ClientStats) -> dict:
    n = sum(c for _, c in agg.bins)
    dirs = [d for j in stats.jobs if (d := j.direction(agg.direction)) is not None]
    out = {"lat_mean_ns": sum(k * c for k, c in agg.bins) / n if n else math.nan, "lat_stddev_ns": math.nan,
           "lat_min_ns": min(d.lat_min_ns for d in dirs), "lat_max_ns": max(d.lat_max_ns for d in dirs)}
    for key, name in PERCENTILES.items():
        out[f"lat_{name}_ns"] = read_percentile(agg.bins, name, Fraction(key) / 100).value_ns
    return out


def _nan(v) -> float:
    return math.nan if v is None else v


def _client_columns(record: ClientsRecord, agg: ClientAggregate) -> dict:
    low, high = _shares(agg)
    p99s = [c.p99_ns for c in agg.clients if c.p99_supported]
    clocks = list(record.clocks.values())
    p99 = agg.percentile("p99")
    return {"clients": len(record.labels), "client_skew_ms": agg.window.start_skew_ms,
            "client_iops_min_share": low, "client_iops_max_share": high, "client_jain": _nan(agg.jain),
            "client_p99_max_ns": max(p99s) if p99s else math.nan,
            "client_window_overlap": agg.window.overlap, "client_outside_share": _nan(agg.outside_share),
            "client_p99_window_low_ns": p99.window_low_ns, "client_p99_window_high_ns": p99.window_high_ns,
            "client_clock_uncertainty_ms": max(c.uncertainty_s for c in clocks) * 1000 if clocks else math.nan,
            "client_clock_check": agg.window.clock.ok, "client_clock_note": agg.window.clock.reason,
            "client_fio_sum_agrees": agg.check.agree}


def _row(record: ClientsRecord, agg: ClientAggregate, options: dict) -> dict:
    job = record.stats.jobs[0]
    row = dict(workload=job.jobname, jobname=job.jobname, groupid=job.groupid, direction=agg.direction,
               rw=options.get("rw"), bs_bytes=_size(options.get("bs")),
               iodepth=float(options.get("iodepth", 1)), numjobs=float(options.get("numjobs", 1)),
               iops=math.nan if agg.iops is None else agg.iops,
               bw_bytes_s=0 if agg.bw_bytes_s is None else int(agg.bw_bytes_s),
               io_bytes=0 if agg.window_io_bytes is None else int(round(agg.window_io_bytes)),
               total_ios=agg.total_ios, runtime_ms=int(agg.window.length_ms),
               clat_mean_ns=math.nan, clat_p99_ns=math.nan, slat_mean_ns=math.nan,
               sync_lat_mean_ns=math.nan, sync_lat_p99_ns=math.nan, usr_cpu_pct=math.nan, sys_cpu_pct=math.nan,
               ss_attained=None, error=max(j.error for j in record.stats.jobs),
               fio_version=record.stats.fio_version, **_latency(agg, record.stats),
               **io_path(options), randseed=seed_of(options.get("randseed")))
    return {**{c: row[c] for c in COLUMNS}, **_client_columns(record, agg)}


def client_fio_rows(raw_dir) -> list[dict]:
    """The aggregate rows of a clients run, one per direction (see the module's text)."""
    record = ClientsRecord(raw_dir)
    options = record.options()
    return [_row(record, record.aggregate(d), options) for d in record.directions()]


def client_table(raw_dir) -> list[dict]:
    """One row per client and direction (CLIENT_TABLE_COLUMNS): what clients.parquet holds of a run."""
    record = ClientsRecord(raw_dir)
    label_of = {ep: lab for lab, ep in record.labels.items()}
    out = []
    for d in record.directions():
        agg = record.aggregate(d)
        first = min((c.start_ms for c in agg.clients if c.start_ms is not None), default=None)
        for c, share in zip(agg.clients, agg.shares()):
            clock = record.clocks.get(label_of[c.endpoint])
            out.append(dict(
                direction=d, client=label_of[c.endpoint], endpoint=c.endpoint, iops=c.iops,
                window_iops=_nan(c.window_iops), bw_bytes_s=c.bw_bytes_s, iops_share=share, total_ios=c.total_ios,
                window_ios=_nan(c.window_ios), io_bytes=c.io_bytes,
                runtime_ms=c.runtime_ms, p99_ns=c.p99_ns if c.p99_supported else math.nan,
                p99_supported=c.p99_supported,
                start_after_first_ms=math.nan if first is None or c.start_ms is None else c.start_ms - first,
                clock_offset_ms=math.nan if clock is None else clock.offset_s * 1000,
                clock_drift_ms=math.nan if clock is None or clock.drift_s is None else clock.drift_s * 1000,
                clock_uncertainty_ms=math.nan if clock is None else clock.uncertainty_s * 1000))
    return out


def client_histograms(raw_dir) -> list[dict]:
    """Each client's latency bins (issue to completion) per direction (CLIENT_HIST_COLUMNS), its jobs' bins summed:
    what client_hist.parquet holds of a run. Summed over the clients, they are the run's latency_hist rows."""
    record = ClientsRecord(raw_dir)
    label_of = {ep: lab for lab, ep in record.labels.items()}
    return [dict(direction=d, client=label_of[c.endpoint], bin_ns=int(k), count=int(n))
            for d in record.directions() for c in record.aggregate(d).clients for k, n in c.bins]
