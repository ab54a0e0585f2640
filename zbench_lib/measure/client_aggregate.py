"""zbench's own aggregate of several fio clients on one datastore (docs/methods.md §20).

fio's client/server mode gives one entry per client job (`fio_client_json`): its I/O count,
bytes and runtime per direction and its json+ completion-latency bins, but neither where in
time the client ran nor (in 3.33) any percentile of the clients together. zbench therefore
computes the aggregate itself, direction by direction:

- **The shared window**: from the latest client start to the earliest client end, end =
  start + the client's runtime for the direction. The starts are fio's own per-client
  ``job_start`` where the release gives it, else the client's iops log stamped with
  ``log_unix_epoch`` (`fio_client_json.log_starts`), both on each client's wall clock (on
  one machine, or clocks kept in step: the lab part places them on the storage node's clock).
  Without either, fio gives only runtimes: the clients are then assumed to start together (the
  controller starts them one after another in one loop) and the window is the shortest
  runtime; ``source`` says so and the start skew is None, not 0.
- **Totals**: the clients' I/O counts and bytes, summed over their whole runs.
- **Throughput over the window**: fio reports how much each client did over its run, not when
  within it, so a client's I/O inside the window is its count x window / its runtime (its mean
  rate over its run), and the aggregate rate is the sum of the clients' mean rates. That is
  exact for a steady load and wrong by at most the load that changed while the window was
  not covering a client: `SharedWindow.overlap` (window / longest runtime) says how much of
  the runs the window is; an empty window (clients that never ran together) has no rate.
- **Percentiles** from the SUM of every client job's bins, read as fio reads its own
  (`fio_hist.percentile_of`), never an average of the clients' percentiles (two clients whose
  p99s are 1 and 2 ms do not have a 1.5 ms p99 together); each judged by its I/O count
  (`fio_hist.min_ios`) and given with the bin it lies in, its precision.
- **A cross-check against fio's "All clients" entry** where fio printed one: totals exactly,
  fio's rate within the clients' runtime spread (fio divides the summed I/O by the longest
  runtime), and the latency count, mean, min and max within the bins' resolution; its
  percentiles or bins too when a release prints them (3.33 does not: "not judged").

Pure: records in, records out; never a host.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from zbench_lib.core.errors import ZbenchError
from zbench_lib.measure.fio_client_json import ClientJob, ClientStats, DirectionStats
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


@dataclass(frozen=True)
class SharedWindow:
    """The time every client was running (ms on the clients' clocks)."""
    start_ms: float | None  # None with source "runtime only"
    end_ms: float | None
    length_ms: float        # 0 when the clients never ran together
    overlap: float          # length / the longest client runtime
    source: str             # "fio job_start", "iops log stamps" or "runtime only"
    start_skew_ms: float | None   # latest start - earliest; None when not measured
    skew_note: str


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

    def percentile(self, name: str) -> Percentile:
        return next(p for p in self.percentiles if p.name == name)


def sum_bins(parts) -> tuple[tuple[int, int], ...]:
    """Histograms (each (bin_ns, count) pairs) summed bin by bin."""
    total: Counter = Counter()
    for bins in parts:
        for key, count in bins:
            total[key] += count
    return tuple(sorted(total.items()))


def read_percentile(bins, name: str, q: Fraction) -> Percentile:
    """The q-quantile of summed bins, fio's way, with its bin and whether its count supports it."""
    n = sum(c for _, c in bins)
    if not n:
        return Percentile(name, math.nan, math.nan, math.nan, False, "no histogram (json+ bins)")
    value = percentile_of([k for k, _ in bins], [c for _, c in bins], q)
    low, high = bin_edges(value)
    need = min_ios(q)
    return Percentile(name, value, float(low), float(high), n >= need,
                      "" if n >= need else f"{n} I/Os: {name} needs {need}")


def _rate(d: DirectionStats, amount: float) -> float:
    return amount * 1000.0 / d.runtime_ms if d.runtime_ms else 0.0


def _by_client(stats: ClientStats, direction: str) -> dict[str, list[tuple[ClientJob, DirectionStats]]]:
    out: dict[str, list] = {}
    for job in stats.jobs:
        d = job.direction(direction)
        if d is not None:
            out.setdefault(job.endpoint, []).append((job, d))
    return out


def _starts(groups: dict, log_starts: dict[str, float] | None) -> tuple[dict[str, float], str]:
    """Each client's start and where it came from: fio's job_start, else the stamped iops log."""
    fio_own = {ep: min(j.job_start_ms for j, _ in jobs) for ep, jobs in groups.items()
               if all(j.job_start_ms for j, _ in jobs)}
    if len(fio_own) == len(groups):
        return fio_own, "fio job_start"
    logged = {ep: s for ep, s in (log_starts or {}).items() if ep in groups}
    if len(logged) == len(groups):
        return logged, "iops log stamps"
    return {}, "runtime only"


def shared_window(runtimes: dict[str, int], starts: dict[str, float], source: str) -> SharedWindow:
    """The window from the latest start to the earliest end (see the module's docstring)."""
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
    return SharedWindow(begin, end, length, length / longest if longest else 0.0, source, skew, note)


def _client_row(endpoint: str, jobs: list, start: float | None) -> ClientRow:
    dirs = [d for _, d in jobs]
    bins = sum_bins(d.bins for d in dirs)
    p99 = read_percentile(bins, "p99", Fraction(99, 100))
    return ClientRow(endpoint=endpoint, jobs=len(jobs), total_ios=sum(d.total_ios for d in dirs),
                     io_bytes=sum(d.io_bytes for d in dirs), runtime_ms=max(d.runtime_ms for d in dirs),
                     iops=sum(_rate(d, d.total_ios) for d in dirs),
                     bw_bytes_s=sum(_rate(d, d.io_bytes) for d in dirs),
                     start_ms=start, p99_ns=p99.value_ns, p99_supported=p99.supported, bins=bins)


def aggregate(stats: ClientStats, direction: str, log_starts: dict[str, float] | None = None,
              expected: tuple[str, ...] | None = None) -> ClientAggregate:
    """The aggregate of `stats`' clients in `direction` ("read", "write" or "trim").

    `log_starts` are the starts read from the clients' stamped iops logs ({endpoint: ms}),
    used when fio gives no ``job_start``. `expected` are the endpoints the run was given:
    fio leaves a client it could not reach, or whose job file it refused, out of its report
    and still exits 0, so one missing here is an error, never a smaller aggregate.
    """
    groups = _by_client(stats, direction)
    missing = [ep for ep in (expected or ()) if ep not in groups]
    if missing or not groups:
        raise ZbenchError(f"fio reported no {direction} I/O from client(s) {', '.join(missing) or 'at all'} "
                          f"(unreachable, a refused job file, or no {direction}s in the job)")
    starts, source = _starts(groups, log_starts)
    rows = tuple(_client_row(ep, jobs, starts.get(ep)) for ep, jobs in groups.items())
    window = shared_window({r.endpoint: r.runtime_ms for r in rows}, starts, source)
    dirs = [d for jobs in groups.values() for _, d in jobs]
    bins = sum_bins(d.bins for d in dirs)
    iops, bw = sum(r.iops for r in rows), sum(r.bw_bytes_s for r in rows)
    together = window.length_ms > 0
    return ClientAggregate(
        direction=direction, clients=rows, total_ios=sum(r.total_ios for r in rows),
        total_io_bytes=sum(r.io_bytes for r in rows), window=window,
        window_ios=iops * window.length_ms / 1000 if together else None,
        window_io_bytes=bw * window.length_ms / 1000 if together else None,
        iops=iops if together else None, bw_bytes_s=bw if together else None, bins=bins,
        percentiles=tuple(read_percentile(bins, name, q) for name, q in QUANTILES),
        check=check_all_clients(stats, direction, dirs, bins))


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
