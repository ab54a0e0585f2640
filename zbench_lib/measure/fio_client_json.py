"""fio's client/server output read into typed records: one per client job, and fio's own sum.

A controller run (`fio --client=<host>,<port> <job> ...  --output-format=json+`) prints one
document whose ``client_stats`` array holds, per client, one entry per job (per group with
``group_reporting``) tagged with the client's ``hostname`` and ``port``, in the order the
clients finished; when more than one entry was reported, fio adds a last entry named
``All clients`` (client.c ``handle_ts``: ``sum_thread_stats`` over every entry). In fio 3.33
that entry has totals, rates and the latency min/max/mean/N but neither percentiles nor
json+ bins (its summed thread_stat never gets ``clat_percentiles`` or ``lat_percentiles`` set), and its hostname and
port are those of whichever client reported last: they name no client.

fio gives no start time per client in 3.33 (later releases add ``job_start``, ms on the
client's clock, read here when present and non-zero). `log_starts` reads the start from the
client's iops log instead, when the job wrote one with ``log_unix_epoch=1``
(`fio_clients.client_job` asks for it): fio's averaging helper writes a sample every
``log_avg_msec`` after the job's start (after its ramp: fio resets the log's epoch then),
stamped on the client's wall clock, so sample k (k = 1, 2, ...) is stamped start + k x interval
plus the helper's wake-up delay (0-5 ms in the runs here); the least delayed sample gives the
start. The same log says when the client did its I/O (`stamped_logs`): a sample's value is
the I/Os completed since the previous sample times 1000 over the ms between them (3.33's
stat.c ``__add_samples``: ``rate = delta * 1000 / spent``, then the sample time becomes the
previous), so value x spent / 1000 is the interval's I/O count, to within the integer rate's
truncation (under one I/O a sample). An interval without I/O writes no sample; the part
interval after the last sample is never written. The controller writes each client's logs as
``<prefix>_iops.<n>.log.<hostname>``: clients that share a hostname (several servers on one
machine) are told apart only by their prefix, the client's label.

Pure: fio's text or dict in, records out; never a host.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path

from zbench_lib.core.errors import ZbenchError
from zbench_lib.measure.fio_hist import run_histograms
from zbench_lib.measure.fio_parse import ALL_CLIENTS, DIRECTIONS, load_fio_json, parse_fio_log


@dataclass(frozen=True)
class DirectionStats:
    """One direction of one client job, as fio reported it (rates over the job's own runtime)."""
    io_bytes: int
    total_ios: int
    runtime_ms: int
    iops: float
    bw_bytes_s: float
    lat_n: int
    lat_mean_ns: float
    lat_min_ns: float
    lat_max_ns: float
    bins: tuple[tuple[int, int], ...]               # (bin_ns, count), json+ only; () without
    fio_percentiles: tuple[tuple[str, float], ...]  # fio's own list ("99.000000", ns); () without


@dataclass(frozen=True)
class ClientJob:
    """One entry of ``client_stats``: a job (or group) run by one fio server."""
    hostname: str
    port: int
    jobname: str
    groupid: int
    error: int
    job_runtime_ms: int
    job_start_ms: int | None        # fio's job_start on the client's clock; None before fio had it
    directions: tuple[tuple[str, DirectionStats], ...]

    @property
    def endpoint(self) -> str:
        """The client as `--client=` spells it: host,port."""
        return f"{self.hostname},{self.port}"

    def direction(self, name: str) -> DirectionStats | None:
        """The direction's stats if it did I/O, else None."""
        return dict(self.directions).get(name)


@dataclass(frozen=True)
class ClientStats:
    """A controller run's output: its fio version, the client jobs and fio's own sum."""
    fio_version: str
    jobs: tuple[ClientJob, ...]
    all_clients: ClientJob | None   # fio's "All clients" entry, None when fio printed none

    def endpoints(self) -> tuple[str, ...]:
        """The clients that reported, in first-report order."""
        return tuple(dict.fromkeys(j.endpoint for j in self.jobs))


def _direction(entry: dict, name: str) -> DirectionStats | None:
    d = entry.get(name) or {}
    if not d.get("io_bytes"):
        return None
    lat = d.get("lat_ns") or {}     # issue to completion, as every zbench latency (fio_parse)
    # fio_hist reads a job's bins; an entry of client_stats has the same shape as one of jobs.
    bins = tuple((h["bin_ns"], h["count"]) for h in run_histograms({"jobs": [entry]}) if h["direction"] == name)
    pct = tuple((k, float(v)) for k, v in (lat.get("percentile") or {}).items())
    return DirectionStats(
        io_bytes=int(d["io_bytes"]), total_ios=int(d.get("total_ios", 0)), runtime_ms=int(d["runtime"]),
        iops=float(d["iops"]), bw_bytes_s=float(d["bw_bytes"]), lat_n=int(lat.get("N", 0)),
        lat_mean_ns=float(lat.get("mean", "nan")), lat_min_ns=float(lat.get("min", "nan")),
        lat_max_ns=float(lat.get("max", "nan")), bins=bins, fio_percentiles=pct)


def _job(entry: dict) -> ClientJob:
    start = entry.get("job_start")
    dirs = tuple((name, stats) for name in DIRECTIONS if (stats := _direction(entry, name)) is not None)
    return ClientJob(hostname=str(entry.get("hostname", "")), port=int(entry.get("port", 0)),
                     jobname=str(entry.get("jobname", "")), groupid=int(entry.get("groupid", 0)),
                     error=int(entry.get("error", 0)), job_runtime_ms=int(entry.get("job_runtime", 0)),
                     job_start_ms=int(start) if start else None, directions=dirs)


def parse_client_json(data) -> ClientStats:
    """Typed records from a controller's JSON (its text or the decoded dict).

    Raises ZbenchError when the document has no ``client_stats`` (not a client-mode run).
    """
    if isinstance(data, (str, bytes)):
        data = load_fio_json(data.decode() if isinstance(data, bytes) else data, key="client_stats")
    if not isinstance(data.get("client_stats"), list):
        raise ZbenchError("fio JSON has no 'client_stats' list: not the output of `fio --client`")
    entries = [_job(e) for e in data["client_stats"]]
    summed = [e for e in entries if e.jobname == ALL_CLIENTS]
    return ClientStats(fio_version=str(data.get("fio version", "")),
                       jobs=tuple(e for e in entries if e.jobname != ALL_CLIENTS),
                       all_clients=summed[-1] if summed else None)


def _start_of(stamps: list[int], interval_ms: int) -> float:
    first = stamps[0]
    return float(min(t - (round((t - first) / interval_ms) + 1) * interval_ms for t in stamps))


def log_start_ms(text: str, interval_ms: int) -> float | None:
    """The job's start (ms, the client's wall clock) from an iops log written with
    ``log_unix_epoch=1`` and ``log_avg_msec=interval_ms``, or None if it holds no sample.

    Sample k is stamped start + k x interval + the helper's delay (>= 0): the start is the
    smallest stamp - k x interval, k counted from the stamps themselves (a skipped interval
    does not shift the count).
    """
    stamps = sorted(set(parse_fio_log(text)["t_ms"].tolist()))
    return _start_of(stamps, interval_ms) if stamps else None


@dataclass(frozen=True)
class LogInterval:
    """The I/Os a client's job completed in one direction between two samples of its iops log (ms);
    `job` indexes the client's logs (`StampedLog.job_starts`)."""
    direction: str
    begin_ms: float
    end_ms: float
    ios: float
    job: int = 0


@dataclass(frozen=True)
class StampedLog:
    """A client's stamped iops log(s): where its run started and what it did when, on one clock; one
    log per job, each with its own start (`job_starts`: a job's part interval ends at its own end)."""
    start_ms: float
    intervals: tuple[LogInterval, ...]
    job_starts: tuple[float, ...] = ()

    def shifted(self, by_ms: float) -> StampedLog:
        """The same log on a clock `by_ms` later (a client's stamps moved onto the storage node's clock)."""
        return replace(self, start_ms=self.start_ms + by_ms, job_starts=tuple(s + by_ms for s in self.job_starts),
                       intervals=tuple(replace(iv, begin_ms=iv.begin_ms + by_ms, end_ms=iv.end_ms + by_ms)
                                       for iv in self.intervals))


def log_intervals(text: str, interval_ms: int) -> StampedLog | None:
    """One iops log as its start and the I/O count of each sample's interval (see the module's text).

    A sample's interval runs from the previous sample (any direction: fio samples them together) or
    the start; after a gap of more than 1.5 intervals (an interval without I/O, whose sample fio took
    but did not write) it is the last interval only.
    """
    samples = sorted((int(r.t_ms), str(r.direction), int(r.value)) for r in parse_fio_log(text).itertuples())
    if not samples:
        return None
    start = _start_of(sorted({t for t, _, _ in samples}), interval_ms)
    out, prev = [], start
    for t, group in groupby(samples, key=lambda s: s[0]):
        begin = prev if t - prev <= 1.5 * interval_ms else t - interval_ms
        out += [LogInterval(d, float(begin), float(t), value * (t - begin) / 1000.0) for _, d, value in group]
        prev = t
    return StampedLog(start, tuple(out), (start,))


def stamped_logs(log_dir, labels: dict[str, str], interval_ms: int) -> dict[str, StampedLog]:
    """{endpoint: StampedLog} from the controller's copies of the clients' iops logs.

    `labels` maps each endpoint to its label, the log prefix its job file was given; a client
    with several jobs started when its first did, and its intervals are all its jobs'. A client
    without a log is left out.
    """
    out = {}
    for endpoint, label in labels.items():
        host = endpoint.rsplit(",", 1)[0]
        logs = [s for p in sorted(Path(log_dir).glob(f"{label}_iops.*.log.{host}"))
                if (s := log_intervals(p.read_text(), interval_ms)) is not None]
        if logs:
            out[endpoint] = StampedLog(min(s.start_ms for s in logs),
                                       tuple(replace(iv, job=k) for k, s in enumerate(logs) for iv in s.intervals),
                                       tuple(s.start_ms for s in logs))
    return out
