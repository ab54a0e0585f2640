"""A run extended until steady, SNIA PTS-style: further windows on the same target (methods §12.1).

A workload that declares ``until_steady: {max_windows: M}`` in its spec gets runs that measure a
window as any run does (fio and its counters into the attempt directory) and ask the project's
own steady-state test (the not_steady check, ``steady.py``) of it, read from its raw files as the
results will read them. Not steady, or not judged (a check not made never reads as passed), and
fewer than M windows measured: the window is preconditioning. Its files are moved, unchanged,
under ``windows/<k>/`` of the attempt and the next window is measured at once, the same job on
the same target (no prefill, no new pool). The run's result is its last window, which stays at
the attempt's top level where every reader (rows, histograms, timeline, live view) looks; a run
still not steady after M windows keeps its last window and is described not_steady.

Why moved and not measured into ``windows/<k>/`` from the start: whether a window is the result
is known only once it is judged, and the readers of an attempt should not have to learn where
its result lives. The move happens before the attempt is COMPLETE, so a run cut off during an
extension leaves an attempt the resume discards whole (with every window it holds) and redoes.

``window_columns`` derives the run's window columns from the raw tree for ``rows.parse_results``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from zbench_lib.core.crash import crash_point
from zbench_lib.core.errors import ConfigError
from zbench_lib.measure.fio_hist import judge_run_tails
from zbench_lib.measure.fio_parse import load_fio_json, parse_fio_json
from zbench_lib.measure.load import PROBE_DIR

MIN_WINDOWS = 2          # one window is a plain run
MAX_WINDOWS = 25         # SNIA PTS: steady state must be reached within 25 rounds
WINDOWS_DIR = "windows"  # the attempt's preconditioning windows: windows/<k>/, k from 1
CHECK = "not_steady"     # the check that decides (measure/checks/not_steady.py)
# The first window's figures kept beside the result's: the sensitivity of the estimate to
# having measured until steady (analysis/data/flags.py, methods §12.1).
FIRST_WINDOW_METRICS = ("iops", "bw_bytes_s", "lat_mean_ns", "lat_p99_ns")


@dataclass(frozen=True)
class UntilSteady:
    """A workload's declaration: measure further windows until one is steady, at most `max_windows`."""
    max_windows: int

    def __post_init__(self):
        n = self.max_windows
        if isinstance(n, bool) or not isinstance(n, int) or not MIN_WINDOWS <= n <= MAX_WINDOWS:
            raise ConfigError(f"max_windows must be an integer {MIN_WINDOWS}..{MAX_WINDOWS}, got {n!r}")

    def to_record(self) -> dict:
        """As plan.json's cell and meta.json hold it."""
        return {"max_windows": self.max_windows}

    @classmethod
    def from_record(cls, record) -> UntilSteady | None:
        """From a cell's or meta.json's record; None where the workload declared none."""
        return cls(int(record["max_windows"])) if isinstance(record, dict) and "max_windows" in record else None


@dataclass(frozen=True)
class WindowVerdict:
    """What the steady-state test said of one window, and when it was measured (host clock)."""
    window: int                 # 1, 2, ...
    flag: bool | None           # not_steady: True not steady, False steady, None not judged
    reason: str
    slope_pct: float            # the drift the check judged (a write: its level's), % of the mean
    t_start: float
    t_end: float

    @property
    def seconds(self) -> float:
        return self.t_end - self.t_start

    def to_record(self) -> dict:
        slope = self.slope_pct if math.isfinite(self.slope_pct) else None      # JSON has no NaN
        return {"window": self.window, "not_steady": self.flag, "slope_pct": slope, "reason": self.reason,
                "t_start": self.t_start, "t_end": self.t_end}


def extends(verdict: WindowVerdict, max_windows: int) -> bool:
    """Another window follows unless this one was judged steady or the maximum is reached.

    Not judged counts as not steady: a check that was not made never reads as passed.

    >>> extends(WindowVerdict(1, None, "", math.nan, 0, 3), 3), extends(WindowVerdict(3, True, "", 9, 0, 3), 3)
    (True, False)
    """
    return verdict.flag is not False and verdict.window < max_windows


class MeasuredWindow(Protocol):
    """What measuring a window gives back (``runner.RunResult``): its window and its checks."""
    window: tuple
    checks: dict


def verdict_of(window: int, result: MeasuredWindow) -> WindowVerdict:
    """The steady-state verdict of a window just measured (its checks derived from its raw files)."""
    c = result.checks.get(CHECK, {})
    slope = c.get("slope_pct")
    return WindowVerdict(window, c.get("flag"), str(c.get("reason", "")),
                         float(slope) if isinstance(slope, (int, float)) else math.nan,
                         float(result.window[0]), float(result.window[1]))


def file_window(attempt: Path, window: int) -> Path:
    """Move a preconditioning window's files, unchanged, from the attempt's top level to
    windows/<window>/ (one rename each), so the next window measures into a clean top level."""
    attempt = Path(attempt)
    dest = attempt / WINDOWS_DIR / str(window)
    dest.mkdir(parents=True)            # never an existing window's directory
    # the saturation probe measured before the run (measure/load.py) is the attempt's, not a window's
    for entry in sorted(p for p in attempt.iterdir() if p.name not in (WINDOWS_DIR, PROBE_DIR)):
        os.rename(entry, dest / entry.name)
    return dest


@dataclass(frozen=True)
class Windows:
    """A run measured until steady: its result (the last window) and every window's verdict."""
    result: MeasuredWindow
    verdicts: tuple[WindowVerdict, ...]
    max_windows: int

    @property
    def seconds(self) -> float:
        """Seconds inside fio's measurement windows, all windows together."""
        return sum(v.seconds for v in self.verdicts)

    def to_record(self) -> dict:
        """meta.json's "until_steady": the declaration, the windows measured and why each one ended."""
        return {"max_windows": self.max_windows, "windows": len(self.verdicts),
                "verdicts": [v.to_record() for v in self.verdicts]}


def measure_windows(measure_window: Callable[[int], MeasuredWindow], attempt: Path, until: UntilSteady,
                    on_extend: Callable[[WindowVerdict], None] = lambda v: None) -> Windows:
    """Measure windows into `attempt` until one is judged steady or `until.max_windows` are measured.

    ``measure_window(k)`` measures window k into the attempt's top level; ``on_extend(verdict)``
    hears of each window that is followed by another (the executor records it as an event).
    """
    verdicts: list[WindowVerdict] = []
    while True:
        result = measure_window(len(verdicts) + 1)
        verdicts.append(verdict_of(len(verdicts) + 1, result))
        if not extends(verdicts[-1], until.max_windows):
            return Windows(result, tuple(verdicts), until.max_windows)
        file_window(attempt, verdicts[-1].window)
        on_extend(verdicts[-1])
        crash_point("window")       # the resume tests kill a sweep here, between two windows


def window_columns(attempt_dir: Path, meta: dict, rows: list[dict]) -> list[dict]:
    """`rows` with the run's window columns where its workload declared until_steady (else as they are).

    ``windows_max`` the declaration, ``windows`` the windows measured (from the raw tree: the
    filed ones and the result), ``result_window`` the window the row's figures come from (the
    last), and ``first_window_<m>`` the first window's figures of the row's direction (the
    result's own where the run was not extended), read from its raw fio.json like the result's.
    """
    until = UntilSteady.from_record(meta.get("until_steady"))
    if until is None:
        return rows
    filed = sorted(int(p.name) for p in (Path(attempt_dir) / WINDOWS_DIR).glob("*") if p.name.isdigit())
    first = rows if not filed else _fio_rows(Path(attempt_dir) / WINDOWS_DIR / str(filed[0]))
    by_direction = {r.get("direction"): r for r in first}
    out = []
    for row in rows:
        f = by_direction.get(row.get("direction"), {})
        out.append({**row, "windows_max": until.max_windows, "windows": len(filed) + 1,
                    "result_window": len(filed) + 1,
                    **{f"first_window_{m}": f.get(m, math.nan) for m in FIRST_WINDOW_METRICS}})
    return out


def _fio_rows(window_dir: Path) -> list[dict]:
    """A filed window's fio rows, percentiles its I/O count cannot support blanked (as the result's)."""
    data = load_fio_json((window_dir / "fio" / "fio.json").read_text())
    return judge_run_tails(parse_fio_json(data), data)

