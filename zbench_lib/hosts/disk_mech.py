"""Mechanism models of disks: how long a drive holds each request (issue 33).

Pure Python (standard library only): the nbdkit plugin (`nbd_disk_plugin`) runs it inside
nbdkit's own interpreter, and the unit tests run it in virtual time. Times are seconds.

A drive is driven by two calls, the same in the plugin and in `closed_loop`:
`submit(req, now)` returns the request's finish time when it completes without the
mechanism (a cache hit, an SSD, the null drive), else None: it then waits in the drive's
queue, and `dispatch(now)` (called whenever the mechanism is free) picks the next piece of
work, a `Job` holding the time it ends and the requests it completes.

HDD: seek by the Ruemmler & Wilkes (1994) law (square root for short seeks, linear for
long ones), rotation from the angular position of the head and of the sector, transfer at
the zone's media rate, NCQ reordering by shortest positioning time among the first
`queue_depth` commands, an optional volatile write cache destaged when idle and on flush.
SSD: a lognormal service time with a tail mixture on N channels, and a write cliff once
writes outrun the spare area (the SLC buffer) faster than it is reclaimed.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

READ, WRITE, FLUSH = "read", "write", "flush"


@dataclass(eq=False)
class Request:
    kind: str                  # read | write | flush
    offset: int = 0
    length: int = 0
    fua: bool = False
    arrival: float = 0.0
    finish: float | None = None
    token: object = None       # the plugin's wake-up handle


@dataclass(eq=False)
class Job:
    """Work the mechanism does now: it ends at `finish` and then completes `done`."""
    finish: float
    done: list = field(default_factory=list)
    offset: int = 0
    length: int = 0


# --- seek curve ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SeekCurve:
    """seek(d) = a + b*sqrt(d) for 0 < d < d0, c + e*d beyond; 0 for d = 0 (milliseconds)."""
    a: float
    b: float
    c: float
    e: float
    d0: float

    def ms(self, d: float) -> float:
        if d <= 0:
            return 0.0
        if d < self.d0:
            return self.a + self.b * math.sqrt(d)
        return self.c + self.e * d


def _linear_part(a: float, b: float, d0: float, n: float, full_ms: float) -> tuple[float, float]:
    # The long-seek line joins the square-root part at d0 and ends at the full stroke.
    at_d0 = a + b * math.sqrt(d0)
    e = (full_ms - at_d0) / (n - d0)
    return at_d0 - e * d0, e


def weighted_average_ms(curve: SeekCurve, n: float, steps: int = 4000) -> float:
    """The data sheets' "weighted average of all possible seeks": seek length d from 1 to n,
    weighted by (n + 1 - d), the number of start tracks that allow it (midpoint rule)."""
    total = weight = 0.0
    width = (n - 1) / steps
    for i in range(steps):
        d = 1 + (i + 0.5) * width
        w = n + 1 - d
        total += w * curve.ms(d)
        weight += w
    return total / weight


def fit_seek_curve(track_ms: float, avg_ms: float, full_ms: float, cylinders: int,
                   knee: float = 0.2) -> SeekCurve:
    """The curve through a data sheet's single-track, average and full-stroke seeks.

    The knee (where the law turns linear) is a fraction of the stroke: 383 of 1962 cylinders
    (0.195) on Ruemmler & Wilkes's HP 97560. The average is linear in b, so two evaluations
    solve it exactly. Raises ValueError when no increasing curve fits the three numbers.
    """
    n, d0 = float(cylinders), knee * cylinders

    def curve(b: float) -> SeekCurve:
        a = track_ms - b          # seek(1) = a + b
        c, e = _linear_part(a, b, d0, n, full_ms)
        return SeekCurve(a, b, c, e, d0)

    m0, m1 = weighted_average_ms(curve(0.0), n), weighted_average_ms(curve(1.0), n)
    b = (avg_ms - m0) / (m1 - m0)
    fitted = curve(b)
    if not (track_ms < avg_ms < full_ms) or fitted.b <= 0 or fitted.e < 0 or fitted.a < 0:
        raise ValueError(f"no increasing seek curve through track {track_ms} ms, average {avg_ms} ms, "
                         f"full stroke {full_ms} ms")
    return fitted


# --- HDD ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HddParams:
    rpm: float
    track_ms: float            # single-track seek (settle included)
    avg_seek_ms: float         # the data sheet's weighted average
    full_seek_ms: float
    outer_mb_s: float          # media rate, outermost zone (MB = 10^6 bytes)
    inner_mb_s: float
    overhead_ms: float = 0.2   # command processing, not overlapped with the seek
    cylinders: int = 100_000
    zones: int = 16
    queue_depth: int = 32      # NCQ: the drive reorders among at most this many commands
    write_cache: bool = True
    cache_bytes: int = 16 * 2**20
    max_wait_ms: float = 1000.0  # starvation guard: a command older than this goes first


class HddDrive:
    """One actuator, one spindle; see the module docstring."""

    def __init__(self, p: HddParams, size: int, clock0: float = 0.0):
        self.p, self.size = p, size
        self.curve = fit_seek_curve(p.track_ms, p.avg_seek_ms, p.full_seek_ms, p.cylinders)
        self.rev = 60.0 / p.rpm
        self.k = p.inner_mb_s / p.outer_mb_s          # inner / outer radius (constant density)
        self.head_cyl = 0.0
        self.last_end = -1                            # where read-ahead would continue
        self.queue: list[Request] = []
        self.dirty: list[Job] = []                    # cached writes not yet on the media
        self.dirty_bytes = 0
        self.flushes: list[Request] = []
        self.t0 = clock0

    # geometry: LBA 0 on the outer edge; bytes per unit radius grow with the radius
    def radius(self, offset: int) -> float:
        f = min(max(offset / self.size, 0.0), 1.0)
        return math.sqrt(1.0 - f * (1.0 - self.k * self.k))

    def cylinder(self, offset: int) -> float:
        return (1.0 - self.radius(offset)) / (1.0 - self.k) * self.p.cylinders

    def media_rate(self, offset: int) -> float:
        """Bytes per second of the zone holding `offset` (rate at the zone's middle radius)."""
        z = min(int((1.0 - self.radius(offset)) / (1.0 - self.k) * self.p.zones), self.p.zones - 1)
        r_mid = 1.0 - (z + 0.5) / self.p.zones * (1.0 - self.k)
        return self.p.outer_mb_s * 1e6 * r_mid

    def angle(self, offset: int) -> float:
        """Fraction of a turn where the sector starts (a track holds rate * revolution bytes)."""
        return (offset / (self.media_rate(offset) * self.rev)) % 1.0

    def positioning(self, offset: int, now: float) -> float:
        """Overhead + seek + rotational wait to reach `offset` starting at `now`."""
        seek = self.curve.ms(abs(self.cylinder(offset) - self.head_cyl)) / 1000.0
        ready = now + self.p.overhead_ms / 1000.0 + seek
        under_head = ((ready - self.t0) / self.rev) % 1.0
        return ready - now + ((self.angle(offset) - under_head) % 1.0) * self.rev

    def _service(self, offset: int, length: int, now: float, sequential: bool) -> float:
        pos = self.p.overhead_ms / 1000.0 if sequential else self.positioning(offset, now)
        return pos + length / self.media_rate(offset)

    # the queue
    def submit(self, req: Request, now: float) -> float | None:
        req.arrival = now
        if req.kind == FLUSH:
            return self._submit_flush(req, now)
        if req.kind == WRITE and self.p.write_cache and not req.fua \
                and self.dirty_bytes + req.length <= self.p.cache_bytes:
            self.dirty.append(Job(0.0, [], req.offset, req.length))
            self.dirty_bytes += req.length
            req.finish = now + self.p.overhead_ms / 1000.0
            return req.finish
        self.queue.append(req)
        return None

    def _submit_flush(self, req: Request, now: float) -> float | None:
        if not self.dirty:
            req.finish = now + self.p.overhead_ms / 1000.0
            return req.finish
        self.flushes.append(req)
        return None

    def has_work(self) -> bool:
        return bool(self.queue or self.dirty)

    def pick(self, candidates: list, now: float):
        """Shortest positioning time first among the first queue_depth candidates."""
        window = candidates[:self.p.queue_depth]
        oldest = window[0]
        if isinstance(oldest, Request) and now - oldest.arrival > self.p.max_wait_ms / 1000.0:
            return oldest
        return min(window, key=lambda r: self._cost(r, now))

    def _cost(self, r, now: float) -> float:
        # A read continuing the last one is already streaming into the read-ahead buffer.
        if isinstance(r, Request) and r.kind == READ and r.offset == self.last_end:
            return 0.0
        return self.positioning(r.offset, now)

    def dispatch(self, now: float) -> Job | None:
        """The next media access: foreground commands first, destaging when idle or flushing."""
        if self.dirty and (self.flushes or not self.queue):
            return self._destage(now)
        if not self.queue:
            return None
        req = self.pick(self.queue, now)
        self.queue.remove(req)
        sequential = req.kind == READ and req.offset == self.last_end
        job = Job(now + self._service(req.offset, req.length, now, sequential), [req], req.offset, req.length)
        self._move(job)
        req.finish = job.finish
        return job

    def _destage(self, now: float) -> Job:
        block = self.pick(self.dirty, now)
        self.dirty.remove(block)
        self.dirty_bytes -= block.length
        block.finish = now + self._service(block.offset, block.length, now, False)
        self._move(block)
        if not self.dirty:                    # the flushes waiting for the cache end with it
            block.done, self.flushes = self.flushes, []
            for f in block.done:
                f.finish = block.finish
        return block

    def _move(self, job: Job) -> None:
        self.head_cyl = self.cylinder(job.offset + job.length)
        self.last_end = job.offset + job.length


# --- SSD ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SsdParams:
    channels: int              # dies/planes working in parallel
    read_us: float             # median busy time of one page read on its channel
    write_us: float            # median busy time of one page program (into the fast buffer)
    overhead_us: float         # controller + interface, not holding a channel
    read_mb_s: float           # sequential ceilings, shared by the channels
    write_mb_s: float
    cliff_write_mb_s: float    # sequential write once the spare area is used up
    spare_fraction: float      # spare area (SLC buffer) as a fraction of capacity
    reclaim_mb_s: float = 50.0  # garbage collection returns spare area at this rate
    sigma: float = 0.15        # lognormal shape of the service time
    tail_p: float = 0.005      # share of requests delayed by a program/erase in their way
    tail_mult: float = 6.0
    stripe_bytes: int = 128 * 1024
    flush_us: float = 50.0
    seed: int = 33


class SsdDrive:
    """Every request's finish is known at submission: no reordering on flash."""

    def __init__(self, p: SsdParams, size: int, clock0: float = 0.0):
        self.p, self.size = p, size
        self.free = [clock0] * p.channels
        self.link = clock0
        self.spare_total = p.spare_fraction * size
        self.spare = self.spare_total
        self.spare_at = clock0
        self.rng = random.Random(p.seed)

    def _draw(self, median_us: float) -> float:
        s = median_us * math.exp(self.p.sigma * self.rng.gauss(0.0, 1.0))
        return s * (self.p.tail_mult if self.rng.random() < self.p.tail_p else 1.0) / 1e6

    def _reclaim(self, now: float) -> None:
        self.spare = min(self.spare_total, self.spare + (now - self.spare_at) * self.p.reclaim_mb_s * 1e6)
        self.spare_at = now

    def write_rate(self, now: float, length: int) -> float:
        """Bytes per second a write of `length` gets: the buffer's, or the cliff's once it is spent."""
        self._reclaim(now)
        self.spare -= length
        return (self.p.write_mb_s if self.spare >= 0 else self.p.cliff_write_mb_s) * 1e6

    def submit(self, req: Request, now: float) -> float:
        req.arrival = now
        if req.kind == FLUSH:
            req.finish = now + self.p.flush_us / 1e6
            return req.finish
        end = now
        for chunk_off, chunk_len in _chunks(req.offset, req.length, self.p.stripe_bytes):
            end = max(end, self._chunk(req.kind, chunk_off, chunk_len, now))
        req.finish = end + self.p.overhead_us / 1e6
        return req.finish

    def _chunk(self, kind: str, offset: int, length: int, now: float) -> float:
        # Dies work in parallel; the link to the host is one, at the sequential rate. The link
        # is a fluid cap (its backlog grows by each transfer), not a queue in submission order,
        # which would make a page ready early wait behind one reserved late.
        if kind == READ:       # data lives where it was written: a fixed die per stripe
            ch = (offset // self.p.stripe_bytes) % self.p.channels
            send = length / (self.p.read_mb_s * 1e6)
            ready = max(now, self.free[ch]) + self._draw(self.p.read_us)
            self.free[ch] = ready
        else:                  # any free die takes a write, after the data has come over the link
            send = length / self.write_rate(now, length)
            ch = min(range(self.p.channels), key=self.free.__getitem__)
            self.free[ch] = max(now + send, self.free[ch]) + self._draw(self.p.write_us)
            ready = self.free[ch] - send
        self.link = max(now, self.link) + send
        return max(ready + send, self.link)

    def has_work(self) -> bool:
        return False

    def dispatch(self, now: float) -> None:
        return None


def _chunks(offset: int, length: int, stripe: int):
    end = offset + length
    while offset < end:
        step = min(end, (offset // stripe + 1) * stripe) - offset
        yield offset, step
        offset += step


class NullDrive:
    """No delay at all: what the NBD path itself costs."""

    def __init__(self, p=None, size: int = 0, clock0: float = 0.0):
        self.p, self.size = p, size

    def submit(self, req: Request, now: float) -> float:
        req.arrival = req.finish = now
        return now

    def has_work(self) -> bool:
        return False

    def dispatch(self, now: float) -> None:
        return None


# --- virtual time --------------------------------------------------------------------------------

def closed_loop(drive, make_request, depth: int, count: int) -> list[float]:
    """Latencies (s) of `count` requests from `depth` closed-loop workers, in virtual time.

    `make_request(i)` gives the i-th Request. The mechanism is dispatched whenever it is free,
    exactly as the plugin's mechanism thread does; nothing sleeps.
    """
    now, issued, busy_until, latencies = 0.0, 0, 0.0, []
    events: list[tuple[float, int, Request]] = []        # (finish, seq, request) completions
    seq = 0

    def issue(t: float) -> None:
        nonlocal issued, seq
        req = make_request(issued)
        issued += 1
        if drive.submit(req, t) is not None:
            seq += 1
            heapq.heappush(events, (req.finish, seq, req))

    for _ in range(min(depth, count)):
        issue(now)
    while len(latencies) < count:
        if busy_until <= now and drive.has_work():
            job = drive.dispatch(now)
            if job is not None:
                busy_until = job.finish
                for r in job.done:
                    seq += 1
                    heapq.heappush(events, (job.finish, seq, r))
                continue
        nxt = events[0][0] if events else math.inf
        if busy_until > now and busy_until < nxt:
            now = busy_until
            continue
        finish, _, req = heapq.heappop(events)
        now = max(now, finish)
        latencies.append(finish - req.arrival)
        if issued < count:
            issue(now)
    return latencies
