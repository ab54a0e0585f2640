"""The offered load of a run (the ``load`` factor, issue 33 item 6): open loop or saturation.

A run without a load is closed loop: fio keeps its iodepth outstanding and the latency it reports is
the latency at saturation, whatever the disks' queueing makes it. A run with a load is open loop:
fio issues I/O at a stated rate with Poisson arrivals (``rate_iops``, ``rate_process=poisson``), so
its latency is the latency *at that load* (docs/methods.md §21). A level is

- ``saturation``: closed loop, as every run was before (the level a sweep without the factor has);
- a fraction of the cell's own saturation throughput, ``0.5`` or ``50%`` (0 < f <= 1): the rate is
  the fraction times the IOPS of a closed-loop probe of the same job on the same target (short for a
  read, the cell's own window for a write: `probe_overrides`);
- an absolute rate, ``2000iops``: the IOPS offered, all jobs and directions together.

Standard library only: the spec checks levels with `parse_level` and the analysis reads them back
with `Load.of`, neither of which may load fio's machinery.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zbench_lib.core.errors import ConfigError

if TYPE_CHECKING:       # a record passed in: the levels' parsing never loads the registry
    from zbench_lib.measure.workloads import Workload

SATURATION = "saturation"
MAX_IOPS = 10_000_000           # no device offers more; a typo's 2e9 is refused rather than tried
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_IOPS = re.compile(r"(\d+(?:\.\d+)?)\s*iops", re.IGNORECASE)
# Open loop needs room in the queue for the arrivals' bursts: with the queue capped, fio waits for a
# completion before issuing and the run is closed loop again. By Little's law a job at a fraction f of
# the saturation its closed-loop depth D reached keeps about f*D outstanding on average (its latency is
# at most saturation's), so 4*D leaves room for bursts; and Poisson arrivals at 90% of a server's rate
# exceed 64 outstanding with probability 0.9**65 = 0.1% (M/M/1), hence the floor of 64. A rate beyond
# what the target sustains fills any queue: the cap keeps such a run finite, and `load_achieved` says
# it fell short (measure rows; it is described, never dropped).
OPEN_LOOP_DEPTH_FLOOR, OPEN_LOOP_DEPTH_FACTOR, OPEN_LOOP_DEPTH_CAP = 64, 4, 1024
# The saturation probe: the cell's job, closed loop, with its own ramp; a read probe's window at most this
# long, a write probe's the cell's own (`probe_overrides` says why). Its files in the attempt's PROBE_DIR
# (beside fio/, which the rows read; a window filed leaves it).
PROBE_RUNTIME_MAX_S = 10
PROBE_DIR = "probe"


@dataclass(frozen=True)
class Load:
    """One level of the load factor; neither field set is saturation."""
    fraction: float | None = None       # of the cell's saturation IOPS (its probe's), 0 < f <= 1
    iops: float | None = None           # absolute, all jobs and directions together

    @classmethod
    def of(cls, level) -> Load:
        """The Load a canonical level names (what `parse_level` returned, a results column's value)."""
        if level is None or level == SATURATION or (isinstance(level, float) and math.isnan(level)):
            return cls()
        m = _IOPS.fullmatch(str(level))
        return cls(iops=float(m.group(1))) if m else cls(fraction=float(level))

    saturation = property(lambda self: self.fraction is None and self.iops is None,
                          doc="Closed loop: fio keeps its depth outstanding (no rate).")
    needs_probe = property(lambda self: self.fraction is not None,
                           doc="A fraction of saturation: the cell's probe must be measured first.")

    def offered(self, probe_iops: float | None) -> float:
        """The IOPS to offer: the absolute rate, or the fraction of the probe's (ConfigError without one)."""
        if self.iops is not None:
            return self.iops
        if self.fraction is None:
            raise ConfigError("a run at saturation offers no rate")
        if probe_iops is None or not probe_iops > 0:
            raise ConfigError(f"load {self.fraction:g} of saturation needs the cell's probe IOPS, got {probe_iops!r}")
        return self.fraction * probe_iops

    def label(self) -> str:
        """How a report names it: 'at saturation', '50% of saturation', '2,000 IOPS'."""
        if self.saturation:
            return "at saturation"
        return f"{self.fraction * 100:g}% of saturation" if self.fraction is not None else f"{self.iops:,.0f} IOPS"


def parse_level(v, path: str) -> str:
    """A spec's level, canonical ('saturation', '0.5', '2000iops'), or the one-line ConfigError of `path`."""
    if v == SATURATION:
        return SATURATION
    frac = _fraction(v)
    if frac is not None:
        if math.isfinite(frac) and 0 < frac <= 1:
            return f"{frac:g}"
        raise ConfigError(f"{path}: a fraction of saturation must be in (0, 1] (or a percentage in (0%, 100%]), "
                          f"got {v!r}")
    m = _IOPS.fullmatch(v.strip()) if isinstance(v, str) else None
    if m and 0 < float(m.group(1)) <= MAX_IOPS:
        return f"{float(m.group(1)):g}iops"
    raise ConfigError(f"{path}: expected 'saturation', a fraction of saturation (0.5 or '50%', in (0, 1]) or "
                      f"an absolute rate like '2000iops' (at most {MAX_IOPS:,}), got {str(v)[:60]!r}")


def _fraction(v) -> float | None:
    """A level's fraction if it is spelled as one (a number or 'N%'), else None (bools are not numbers)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = _PERCENT.fullmatch(v.strip()) if isinstance(v, str) else None
    return float(m.group(1)) / 100 if m else None


def open_loop_iodepth(declared: int) -> int:
    """The depth of an open-loop job whose closed-loop depth is `declared` (see the constants' comment)."""
    return min(OPEN_LOOP_DEPTH_CAP, max(OPEN_LOOP_DEPTH_FLOOR, OPEN_LOOP_DEPTH_FACTOR * declared))


def fio_rate(total_iops: float, numjobs: int, read_share: float | None) -> str:
    """fio's `rate_iops` value for `total_iops` offered: fio's rate is per job, so the total is split
    between the jobs, and a mixed job (`read_share`, 0-1) takes fio's per-direction 'reads,writes'
    form, split by its read share. Whole IOPS, at least 1 (fio takes integers)."""
    per_job = total_iops / numjobs
    whole = lambda x: str(max(1, round(x)))  # noqa: E731
    if read_share is None:
        return whole(per_job)
    return f"{whole(per_job * read_share)},{whole(per_job * (1 - read_share))}"


def probe_overrides(params: dict, workload: Workload) -> dict:
    """The probe's fio parameters: the cell's job (`params` over `workload`'s defaults), closed loop.
    A workload that writes keeps its own ramp and window: ZFS absorbs a short write window in memory
    (the dirty-data buffer fills before the write throttle settles, a few TXGs of ~5 s), so a 10 s
    write probe read 1,319 IOPS where the same job's 40 s runs sustained 952 (methods §21). A read
    probe is disk-bound from its start: its own ramp and a window of at most PROBE_RUNTIME_MAX_S,
    longer than the ramp as every job's window is (measure/fio.py)."""
    runtime = int(params.get("runtime_s", workload.defaults["runtime_s"]))
    if not workload.reads_only:
        return {**params, "runtime_s": runtime}
    ramp = int(params.get("ramp_time_s", workload.defaults["ramp_time_s"]))
    return {**params, "runtime_s": min(runtime, max(PROBE_RUNTIME_MAX_S, ramp + 1))}


def probe_seconds(params: dict, workload: Workload) -> float:
    """A probe's fio time (ramp plus window), for the plan's estimate."""
    p = probe_overrides(params, workload)
    return float(p["runtime_s"]) + float(p.get("ramp_time_s", workload.defaults["ramp_time_s"]))
