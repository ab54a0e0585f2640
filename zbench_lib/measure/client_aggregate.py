"""zbench's own aggregate of several fio clients on one datastore (docs/methods.md §20).

fio's client/server mode gives one entry per client job (`fio_client_json`): its I/O count,
bytes and runtime per direction and its json+ completion-latency bins, but neither where in
time the client ran nor (in 3.33) any percentile of the clients together. zbench therefore
computes the aggregate itself, direction by direction:

- **The shared window**: from the latest client start to the earliest client end, end =
  start + the client's runtime for the direction. The starts are the clients' iops logs
  stamped with ``log_unix_epoch`` (`fio_client_json.stamped_logs`; the caller places them on
  one clock: the lab part moves them onto the storage node's), else fio's own per-client
  ``job_start`` where the release gives it (on each client's clock). Without either, fio gives
  only runtimes: the clients are then assumed to start together (the controller starts them
  one after another in one loop) and the window is the shortest runtime; ``source`` says so and
  the start skew is None, not 0.
- **The clocks against the window** (`ClockCheck`, three-valued): each start is placed to within
  the clocks' uncertainty u (half the round trip of the clock readings plus half the offset's
  drift over the run), so the window's length and the start skew are known to within 2u. A
  window no longer than 2u is not judged: it may be empty, and its throughput has no number.
  Without clock readings, or without starts, the check is None with the reason, never passed.
- **Totals**: the clients' I/O counts and bytes, summed over their whole runs.
- **Throughput over the window**: a client's I/O inside the window is read from its stamped log
  where the window was placed by the logs: each sample's interval holds value x spent / 1000 I/Os,
  spread evenly inside its 500 ms, and what fio counted beyond the logged samples lies in the jobs'
  unlogged tails: each job's from its own last sample to its own end (a client's jobs keep their own
  logs, and one that ended just before the helper woke has no sample for its last whole interval;
  seen on a busy host, 2 jobs whose logs ended 500 ms apart), by the tails' lengths. The aggregate
  rate is the clients' I/O in the window over its length, so seconds a client ran alone (start skew)
  are not counted as shared. Without logs a client's I/O inside the window is its mean rate over its
  run times its time in the window, exact for a steady load only. Bytes in the window are its I/Os
  times the client's mean I/O size (exact for one block size). `SharedWindow.overlap` (window /
  longest runtime) says how much of the runs the window is, `ClientAggregate.outside_share` how much
  of the I/O fell outside it; an empty window (clients that never ran together) has no rate.
- **Fairness**: each client's share of the window's IOPS, and Jain's index (Σx)² / (n·Σx²) of
  the clients' window IOPS (1 when they are equal, 1/n when one client had it all).
- **Percentiles** from the SUM of every client job's bins, read as fio reads its own
  (`fio_hist.percentile_of`), never an average of the clients' percentiles (two clients whose
  p99s are 1 and 2 ms do not have a 1.5 ms p99 together); each judged by its I/O count
  (`fio_hist.min_ios`) and given with the bin it lies in, its precision. fio keeps one histogram
  per job over its whole run, so a percentile cannot be restricted to the window: it is the whole
  runs', and where the logs measure a share f of the I/O outside the window, the window's own
  q-quantile is bounded by the whole runs' quantiles at (1 − f)·q and (1 − f)·q + f
  (`Percentile.window_low_ns`, `window_high_ns`), distribution-free.
- **A cross-check against fio's "All clients" entry** where fio printed one: totals exactly,
  fio's rate within the clients' runtime spread (fio divides the summed I/O by the longest
  runtime), and the latency count, mean, min and max within the bins' resolution; its
  percentiles or bins too when a release prints them (3.33 does not: "not judged").

Pure: records in, records out; never a host.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction

from zbench_lib.core.errors import ZbenchError
from zbench_lib.measure.fio_client_json import ClientJob, ClientStats, DirectionStats, StampedLog
from zbench_lib.measure.fio_hist import MAX_REL_WIDTH, bin_edges, bin_index, min_ios, percentile_of

QUANTILES = (("p50", Fraction(1, 2)), ("p99", Fraction(99, 100)), ("p99.9", Fraction(999, 1000)))
# fio's keys for the same quantiles in its own percentile list.
FIO_KEYS = {"p50": "50.000000", "p99": "99.000000", "p99.9": "99.900000"}
# fio prints rates with 6 decimals from integer ms runtimes: what two equal rates may differ by.
RATE_SLACK = 1e-3


@dataclass(frozen=True)
class Percentile:
    name: str               # p50, p99, p99.9
    value_ns: float         # the bin's value as fio names it (NaN without bins)
    bin_low_ns: float       # the bin it lies in: its precision
    bin_high_ns: float
    supported: bool         # enough I/Os for it (fio_hist.min_ios)
    note: str               # why not, when not
    # the shared window's own percentile lies between these (the whole runs' quantiles at (1 - f) q and
    # (1 - f) q + f, f the share of I/O outside the window); NaN where f was not measured
    window_low_ns: float = math.nan
    window_high_ns: float = math.nan


@dataclass(frozen=True)
class ClientRow:
    """One client (one fio server) beside the aggregate: its jobs summed."""
    endpoint: str
    jobs: int
    total_ios: int
    io_bytes: int
    runtime_ms: int         # its longest job's runtime for the direction
    iops: float             # sum of its jobs' mean rates
    bw_bytes_s: float
    start_ms: float | None  # on its own clock; None when fio gave no start
    p99_ns: float           # from its own summed bins
    p99_supported: bool
    bins: tuple[tuple[int, int], ...] = ()  # its jobs' bins summed: a cell's p99 of this client merges them
    window_ios: float | None = None         # its I/Os inside the shared window (None: empty window)
    window_iops: float | None = None        # over the shared window


@dataclass(frozen=True)
class ClockCheck:
    """The clocks' uncertainty against the window and the skew: `ok` True (the window is longer than
    the uncertainty), False (it is not: the window's throughput is not judged) or None (not judged)."""
    ok: bool | None
    uncertainty_ms: float | None    # each start placed to within +- this
    skew_resolved: bool | None      # the start skew beyond 2 x uncertainty (None: not judged)
    reason: str


NO_STARTS = ClockCheck(None, None, None, "not judged: no stamped starts, so where the clients ran is not known")


@dataclass(frozen=True)
class SharedWindow:
    """The time every client was running (ms on the clients' clocks)."""
    start_ms: float | None  # None with source "runtime only"
    end_ms: float | None
    length_ms: float        # 0 when the clients never ran together
    overlap: float          # length / the longest client runtime
    source: str             # "iops log stamps", "fio job_start" or "runtime only"
    start_skew_ms: float | None   # latest start - earliest; None when not measured
    skew_note: str
    clock: ClockCheck = NO_STARTS

    @property
    def judged(self) -> bool:
        """Whether a throughput over the window can be given: the clients ran together, and the window is
        not narrower than the clocks' uncertainty."""
        return self.length_ms > 0 and self.clock.ok is not False


@dataclass(frozen=True)
class CheckItem:
    name: str
    zbench: float
    fio: float
    tolerance: float
    agree: bool


@dataclass(frozen=True)
class AllClientsCheck:
    """zbench's aggregate against fio's "All clients" entry: True / False, or None = not judged."""
    agree: bool | None
    reason: str
    items: tuple[CheckItem, ...]
    not_judged: tuple[str, ...]


@dataclass(frozen=True)
class ClientAggregate:
    direction: str
    clients: tuple[ClientRow, ...]
    total_ios: int
    total_io_bytes: int
    window: SharedWindow
    window_ios: float | None        # I/Os inside the shared window (None: empty window)
    window_io_bytes: float | None
    iops: float | None              # over the shared window
    bw_bytes_s: float | None
    bins: tuple[tuple[int, int], ...]   # every client's bins summed
    percentiles: tuple[Percentile, ...]
    check: AllClientsCheck
    outside_share: float | None = None  # of total_ios, outside the window, by the stamped logs (None: not measured)

    def percentile(self, name: str) -> Percentile:
        return next(p for p in self.percentiles if p.name == name)

    def shares(self) -> list[float]:
        """Each client's share of the window's IOPS, in client order (NaN without a judged window: the clients
        never ran together, or the clocks cannot place the window)."""
        rates = [c.window_iops for c in self.clients]
        total = sum(rates) if None not in rates else 0
        return [r / total for r in rates] if total else [math.nan] * len(rates)

    @property
    def jain(self) -> float | None:
        """Jain's index of the clients' window IOPS (None without a judged window)."""
        rates = [c.window_iops for c in self.clients]
        return None if any(r is None for r in rates) else jain_index(rates)


def jain_index(values) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when every x is equal, 1/n when one x holds all (NaN if all 0).

    >>> jain_index([1000, 1500])
    0.9615384615384616
    """
    xs = [float(x) for x in values]
    squares = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * squares) if squares else math.nan


def sum_bins(parts) -> tuple[tuple[int, int], ...]:
    """Histograms (each (bin_ns, count) pairs) summed bin by bin."""
    total: Counter = Counter()
    for bins in parts:
        for key, count in bins:
            total[key] += count
    return tuple(sorted(total.items()))


def read_percentile(bins, name: str, q: Fraction, outside: float | None = None) -> Percentile:
    """The q-quantile of summed bins, fio's way, with its bin and whether its count supports it; with
    `outside`, the share f of the I/Os outside the shared window, the bounds of the window's own
    q-quantile: the whole runs' quantiles at (1 - f) q and (1 - f) q + f (see the module's text)."""
    n = sum(c for _, c in bins)
    if not n:
        return Percentile(name, math.nan, math.nan, math.nan, False, "no histogram (json+ bins)")
    keys, counts = [k for k, _ in bins], [c for _, c in bins]
    value = percentile_of(keys, counts, q)
    low, high = bin_edges(value)
    need = min_ios(q)
    bounds = (math.nan, math.nan)
    if outside is not None:
        inside = (1 - outside) * float(q)
        bounds = (percentile_of(keys, counts, inside), percentile_of(keys, counts, min(1.0, inside + outside)))
    return Percentile(name, value, float(low), float(high), n >= need,
                      "" if n >= need else f"{n} I/Os: {name} needs {need}", *bounds)


def _rate(d: DirectionStats, amount: float) -> float:
    return amount * 1000.0 / d.runtime_ms if d.runtime_ms else 0.0


def _by_client(stats: ClientStats, direction: str) -> dict[str, list[tuple[ClientJob, DirectionStats]]]:
    out: dict[str, list] = {}
    for job in stats.jobs:
        d = job.direction(direction)
        if d is not None:
            out.setdefault(job.endpoint, []).append((job, d))
    return out


def _starts(groups: dict, logs: dict[str, StampedLog] | None) -> tuple[dict[str, float], str]:
    """Each client's start and where it came from: the stamped iops logs, which the caller placed on one
    clock, else fio's job_start (each client's own clock)."""
    logged = {ep: log.start_ms for ep, log in (logs or {}).items() if ep in groups}
    if len(logged) == len(groups):
        return logged, "iops log stamps"
    fio_own = {ep: min(j.job_start_ms for j, _ in jobs) for ep, jobs in groups.items()
               if all(j.job_start_ms for j, _ in jobs)}
    if len(fio_own) == len(groups):
        return fio_own, "fio job_start"
    return {}, "runtime only"


def clock_check(length_ms: float, skew_ms: float | None, uncertainty_ms: float | None) -> ClockCheck:
    """The window's length and the start skew against the clocks' uncertainty u (each start within +-u, so
    both are known to within 2u); not judged without starts (`skew_ms` None) or without clock readings."""
    if skew_ms is None:
        return NO_STARTS
    if uncertainty_ms is None:
        return ClockCheck(None, None, None, "not judged: the clients' clocks were not read against a common clock "
                                            "(the window is as their own stamps place it)")
    two_u = 2 * uncertainty_ms
    skew = (f"the start skew ({skew_ms:.0f} ms) is beyond it" if skew_ms > two_u else
            f"the start skew ({skew_ms:.0f} ms) is within it: the clients may have started together")
    if length_ms <= two_u:
        return ClockCheck(False, uncertainty_ms, skew_ms > two_u,
                          f"not judged: the shared window ({length_ms:.0f} ms) is no longer than its uncertainty, "
                          f"each start placed within ±{uncertainty_ms:.0f} ms by the clocks; {skew}")
    return ClockCheck(True, uncertainty_ms, skew_ms > two_u,
                      f"each start placed within ±{uncertainty_ms:.0f} ms by the clocks: the shared window "
                      f"({length_ms:.0f} ms) is longer than its uncertainty; {skew}")


def shared_window(runtimes: dict[str, int], starts: dict[str, float], source: str,
                  uncertainty_ms: float | None = None) -> SharedWindow:
    """The window from the latest start to the earliest end, and the clocks' check of it (see the module's
    docstring); `uncertainty_ms`: how closely the clocks place each start (None: no clock readings)."""
    longest = max(runtimes.values())
    if not starts:
        length = float(min(runtimes.values()))
        return SharedWindow(None, None, length, length / longest if longest else 0.0, source, None,
                            "fio gave no per-client start (no job_start, no stamped iops log): clients "
                            "assumed to start together, the window is the shortest runtime")
    begin = max(starts.values())
    end = min(starts[ep] + runtimes[ep] for ep in runtimes)
    length = max(0.0, end - begin)
    skew = begin - min(starts.values())
    note = f"latest start {skew:.0f} ms after the earliest ({source})"
    return SharedWindow(begin, end, length, length / longest if longest else 0.0, source, skew, note,
                        clock_check(length, skew, uncertainty_ms))


def _client_row(endpoint: str, jobs: list, start: float | None) -> ClientRow:
    dirs = [d for _, d in jobs]
    bins = sum_bins(d.bins for d in dirs)
    p99 = read_percentile(bins, "p99", Fraction(99, 100))
    return ClientRow(endpoint=endpoint, jobs=len(jobs), total_ios=sum(d.total_ios for d in dirs),
                     io_bytes=sum(d.io_bytes for d in dirs), runtime_ms=max(d.runtime_ms for d in dirs),
                     iops=sum(_rate(d, d.total_ios) for d in dirs),
                     bw_bytes_s=sum(_rate(d, d.io_bytes) for d in dirs),
                     start_ms=start, p99_ns=p99.value_ns, p99_supported=p99.supported, bins=bins)


Part = tuple[float, float, float]       # (begin ms, end ms, I/Os spread evenly between them)


def _log_parts(log: StampedLog, direction: str, c: ClientRow) -> list[Part]:
    """A client's I/O over time from its stamped logs: each sample's interval, then what fio counted
    beyond the logged samples (fio writes no sample for a job's part interval, nor for its last whole
    one when it ends just before the helper wakes) spread over the jobs' unlogged tails, each from
    that job's last sample to its own end (its start + the client's runtime), by their lengths."""
    mine = [iv for iv in log.intervals if iv.direction == direction]
    logged = sum(iv.ios for iv in mine)
    scale = min(1.0, c.total_ios / logged) if logged else 1.0   # truncated rates log a hair more, never much
    parts = [(iv.begin_ms, iv.end_ms, iv.ios * scale) for iv in mine]
    return parts + _tails(mine, log.job_starts or (c.start_ms,), c, c.total_ios - logged * scale)


def _tails(mine: list, job_starts: tuple[float, ...], c: ClientRow, rest: float) -> list[Part]:
    """`rest` I/Os over the unlogged tails of the jobs that logged this direction (all of them, from
    their starts, when none did), in proportion to the tails' lengths (evenly when all are empty)."""
    jobs = sorted({iv.job for iv in mine}) or list(range(len(job_starts)))
    spans = []
    for k in jobs:
        last = max((iv.end_ms for iv in mine if iv.job == k), default=job_starts[k])
        spans.append((last, max(job_starts[k] + c.runtime_ms, last)))
    length = sum(end - begin for begin, end in spans)
    return [(begin, end, rest * ((end - begin) / length if length else 1 / len(spans))) for begin, end in spans]


def _inside(parts: list[Part], w0: float, w1: float) -> float:
    """The I/Os of `parts` inside [w0, w1], each part's spread evenly over it (a point part counts whole)."""
    out = 0.0
    for begin, end, ios in parts:
        if end > begin:
            out += ios * max(0.0, min(end, w1) - max(begin, w0)) / (end - begin)
        elif w0 <= begin <= w1:
            out += ios
    return out


def _window_ios(c: ClientRow, log: StampedLog | None, direction: str, window: SharedWindow) -> float:
    """A client's I/Os in the window: from its stamped log, else its mean rate over its time in the window."""
    if window.start_ms is None:         # runtime only: every client assumed to start with the window
        return c.iops * window.length_ms / 1000.0
    if log is not None:
        return _inside(_log_parts(log, direction, c), window.start_ms, window.end_ms)
    return _inside([(c.start_ms, c.start_ms + c.runtime_ms, c.iops * c.runtime_ms / 1000.0)],
                   window.start_ms, window.end_ms)


def _in_window(rows: tuple[ClientRow, ...], logs: dict, direction: str, window: SharedWindow) -> tuple[ClientRow, ...]:
    if not window.judged:
        return rows
    use = logs if window.source == "iops log stamps" else {}
    out = []
    for c in rows:
        ios = _window_ios(c, use.get(c.endpoint), direction, window)
        out.append(replace(c, window_ios=ios, window_iops=ios * 1000.0 / window.length_ms))
    return tuple(out)


def aggregate(stats: ClientStats, direction: str, logs: dict[str, StampedLog] | None = None,
              expected: tuple[str, ...] | None = None, clock_uncertainty_ms: float | None = None) -> ClientAggregate:
    """The aggregate of `stats`' clients in `direction` ("read", "write" or "trim").

    `logs` are the clients' stamped iops logs ({endpoint: StampedLog}, on one clock): where each
    started and when it did its I/O. `expected` are the endpoints the run was given: fio leaves a
    client it could not reach, or whose job file it refused, out of its report and still exits 0,
    so one missing here is an error, never a smaller aggregate. `clock_uncertainty_ms`: how closely
    the clocks place each start (None: the clocks were not read).
    """
    groups = _by_client(stats, direction)
    missing = [ep for ep in (expected or ()) if ep not in groups]
    if missing or not groups:
        raise ZbenchError(f"fio reported no {direction} I/O from client(s) {', '.join(missing) or 'at all'} "
                          f"(unreachable, a refused job file, or no {direction}s in the job)")
    starts, source = _starts(groups, logs)
    rows = tuple(_client_row(ep, jobs, starts.get(ep)) for ep, jobs in groups.items())
    window = shared_window({r.endpoint: r.runtime_ms for r in rows}, starts, source, clock_uncertainty_ms)
    rows = _in_window(rows, logs or {}, direction, window)
    dirs = [d for jobs in groups.values() for _, d in jobs]
    bins = sum_bins(d.bins for d in dirs)
    total = sum(r.total_ios for r in rows)
    inside = sum(r.window_ios for r in rows) if window.judged else None
    window_bytes = sum(r.window_ios * r.io_bytes / r.total_ios for r in rows if r.total_ios) if window.judged else None
    outside = max(0.0, 1 - inside / total) if window.source == "iops log stamps" and inside is not None and total \
        else None
    return ClientAggregate(
        direction=direction, clients=rows, total_ios=total, total_io_bytes=sum(r.io_bytes for r in rows),
        window=window, window_ios=inside, window_io_bytes=window_bytes,
        iops=inside * 1000.0 / window.length_ms if window.judged else None,
        bw_bytes_s=window_bytes * 1000.0 / window.length_ms if window.judged else None, bins=bins,
        percentiles=tuple(read_percentile(bins, name, q, outside) for name, q in QUANTILES),
        check=check_all_clients(stats, direction, dirs, bins), outside_share=outside)


def _totals_items(dirs: list[DirectionStats], fio: DirectionStats) -> list[CheckItem]:
    ios, nbytes = sum(d.total_ios for d in dirs), sum(d.io_bytes for d in dirs)
    ours = sum(_rate(d, d.total_ios) for d in dirs)
    # fio's rate is the summed I/O over the longest runtime; zbench's the sum of each client's
    # rate over its own: equal runtimes give equal rates, else they differ by the spread.
    spread = ours - ios * 1000.0 / max(d.runtime_ms for d in dirs) + RATE_SLACK
    return [CheckItem("total_ios", ios, fio.total_ios, 0, ios == fio.total_ios),
            CheckItem("io_bytes", nbytes, fio.io_bytes, 0, nbytes == fio.io_bytes),
            CheckItem("iops", ours, fio.iops, spread, abs(ours - fio.iops) <= spread)]


def _in_bin(key: int, value: float) -> tuple[float, bool]:
    low, high = bin_edges(key)
    return float(high - low), bool(low <= value < high)


def _latency_items(bins, fio: DirectionStats) -> list[CheckItem]:
    keys = [k for k, _ in bins]
    n = sum(c for _, c in bins)
    mean = sum(k * c for k, c in bins) / n
    # Each bin's value is within half a bin, at most 1/128, of every latency counted in it.
    tol = fio.lat_mean_ns * MAX_REL_WIDTH / 2
    low_w, low_ok = _in_bin(keys[0], fio.lat_min_ns)
    high_w, high_ok = _in_bin(keys[-1], fio.lat_max_ns)
    return [CheckItem("lat_n", n, fio.lat_n, 0, n == fio.lat_n),
            CheckItem("lat_mean_ns", mean, fio.lat_mean_ns, tol, abs(mean - fio.lat_mean_ns) <= tol),
            CheckItem("lat_min_ns", keys[0], fio.lat_min_ns, low_w, low_ok),
            CheckItem("lat_max_ns", keys[-1], fio.lat_max_ns, high_w, high_ok)]


def _percentile_items(bins, fio: DirectionStats) -> list[CheckItem]:
    theirs = dict(fio.fio_percentiles)
    items = []
    for name, q in QUANTILES:
        if FIO_KEYS[name] in theirs:
            ours = read_percentile(bins, name, q)
            same_bin = bool(bin_index(ours.value_ns) == bin_index(theirs[FIO_KEYS[name]]))
            items.append(CheckItem(name, ours.value_ns, theirs[FIO_KEYS[name]],
                                   ours.bin_high_ns - ours.bin_low_ns, same_bin))
    if fio.bins:
        items.append(CheckItem("bins", len(bins), len(fio.bins), 0, tuple(bins) == tuple(fio.bins)))
    return items


def check_all_clients(stats: ClientStats, direction: str, dirs: list[DirectionStats], bins) -> AllClientsCheck:
    """zbench's sums against fio's "All clients" entry (see the module's docstring)."""
    entry = stats.all_clients
    fio = entry.direction(direction) if entry else None
    if fio is None:
        why = ("fio printed no 'All clients' entry (one client job, or a release without it)" if entry is None
               else f"fio's 'All clients' entry has no {direction} I/O")
        return AllClientsCheck(None, why, (), ())
    items, skipped = _totals_items(dirs, fio), []
    if bins:
        items += _latency_items(bins, fio) + _percentile_items(bins, fio)
    else:
        skipped.append("latency: the clients' output has no json+ bins")
    if bins and not fio.fio_percentiles and not fio.bins:
        skipped.append(f"percentiles: {stats.fio_version or 'this fio'}'s 'All clients' entry has "
                       "no percentiles or bins")
    agree = all(i.agree for i in items)
    failed = [i.name for i in items if not i.agree]
    reason = (f"{len(items)} figures agree" if agree
              else f"{', '.join(failed)} disagree with fio's 'All clients' entry")
    return AllClientsCheck(agree, reason, tuple(items), tuple(skipped))
