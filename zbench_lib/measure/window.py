"""When fio measured, on the host's clock: the window every counter is summed over (methods §7.1).

fio stamps its JSON output (`timestamp_ms`) when it exits. For reads that is when its
measurement ends: in the lab the zvol's last read falls within the sampler's second of the
stamp, and fio's start lags `t0` (read just before launch) by 0.3-1.3 s of set-up. For writes
to a zvol the exit can come long after the last write: closing the device flushes it. The
4k random writes of the volblocksize example (all three block sizes) exited 1-98 s after
their last write (median 8 s), a 1M sequential write on a raidz3 of six 31 s after, while the disks trickled ZIL-sized
writes; a window counted back from the stamp held that flush, not the measurement, and the
write-amplification check judged an idle pool. So a job that writes has its window counted
forward from fio's start instead: `elapsed` (whole seconds, rounded up) back from the stamp
is at or before the start, and so is `t0`; the later of the two is the closer bound, early by
fio's set-up (under a second in the lab), which is small against a write window.
"""

from __future__ import annotations


def fio_start(t0: float | None, fio_data: dict) -> float | None:
    """Closest lower bound on fio's start (host epoch s): max(t0, stamp - elapsed), or None."""
    stamp = fio_data.get("timestamp_ms")
    elapsed = [j.get("elapsed") for j in fio_data.get("jobs") or [] if j.get("elapsed") is not None]
    bounds = [t for t in (t0, stamp / 1000 - max(elapsed) if stamp and elapsed else None) if t is not None]
    return max(bounds) if bounds else None


def measurement_window(t0: float | None, fio_data: dict, ramp_s: float, runtime_s: float,
                       writes: bool, fallback_end: float) -> tuple[float, float]:
    """(t_start, t_end), `runtime_s` long. Reads: ending at fio's exit stamp. Writes: opening
    `ramp_s` after fio's start. `fallback_end` stands in for a missing stamp."""
    stamp = fio_data.get("timestamp_ms")
    start = fio_start(t0, fio_data) if writes else None
    if start is None:
        end = stamp / 1000 if stamp else fallback_end
        return end - runtime_s, end
    return start + ramp_s, start + ramp_s + runtime_s


def run_window(t0: float | None, fio_data: dict, rows: list, ramp_s: float,
               fallback: tuple[float, float]) -> tuple[float, float]:
    """The window of one fio run from its rows: runtime from fio (or `fallback`'s length), the
    rule of `measurement_window` for a job that wrote or only read."""
    runtime = max(r["runtime_ms"] for r in rows) / 1000 if rows else fallback[1] - fallback[0]
    return measurement_window(t0, fio_data, ramp_s, runtime, writes=wrote(rows), fallback_end=fallback[1])


def exit_lag(fio_data: dict, t_end: float) -> float | None:
    """Seconds fio ran past its measurement window (closing and flushing the device), or None."""
    stamp = fio_data.get("timestamp_ms")
    return round(stamp / 1000 - t_end, 1) if stamp else None


def wrote(rows: list) -> bool:
    """Did the job write (any write row with bytes)? Its exit may then lag its measurement."""
    return any(r.get("direction") == "write" and (r.get("io_bytes") or 0) > 0 for r in rows)
