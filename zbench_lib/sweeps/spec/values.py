"""Checks of single spec values; each failure names its key path (``factors.disks[1]``)."""

from __future__ import annotations

import math
import re

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size, parse_size
from zbench_lib.zfs.targets import ALLOWED


MAX_INT = 2 ** 31 - 1           # any integer of a spec (counts, seconds, depths)
MAX_SIZE = 1024 ** 5            # 1 PiB: any size of a spec
MAX_NAME = 64                   # sweep and workload names become directory and column values
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# fio overrides that are numbers, with their upper bounds (fio's own limits or far beyond sense)
_FIO_NUMBERS = {"iodepth": 65536, "numjobs": 4096, "runtime_s": 7 * 86400, "ramp_time_s": 7 * 86400,
                "ss_dur_s": 7 * 86400, "ss_ramp_s": 7 * 86400, "randseed": 2 ** 63 - 1,
                "compressible_percent": 100, "fsync": MAX_INT, "rwmixread": 100, "direct": 1, "sync": 1}


def fail(path: str, message: str):
    """Raise the one-line ConfigError of ``path`` (a value quoted in it is cut short)."""
    message = message.replace("\n", " ")
    if len(message) > 600:
        message = f"{message[:560]}... ({len(message)} characters)"
    raise ConfigError(f"{path}: {message}")


def mapping(d, path: str, allowed, required=()) -> dict:
    if not isinstance(d, dict):
        fail(path, f"expected a mapping, got {type(d).__name__} {d!r}")
    unknown = [k for k in d if k not in allowed]
    if unknown:
        fail(path, f"unknown key(s) {', '.join(map(repr, unknown))} (allowed: {', '.join(allowed)})")
    for k in required:
        if k not in d:
            fail(path, f"missing required key {k!r}")
    return d


def _shown(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"


def integer(v, path: str, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        fail(path, f"expected an integer, got {_shown(v)}")
    hi = MAX_INT if hi is None else hi
    if v < lo:
        fail(path, f"must be at least {lo}, got {_shown(v)}")
    if v > hi:
        fail(path, f"must be at most {hi}, got {_shown(v)}")
    return v


def finite(v, path: str):
    """Refuse .inf and .nan (YAML floats that no duration, size or ratio can be)."""
    if isinstance(v, float) and not math.isfinite(v):
        fail(path, f"must be a finite number, got {v!r}")
    return v


def size(v, path: str) -> int:
    finite(v, path)
    if isinstance(v, str) and len(v.strip()) > 24:
        fail(path, f"{_shown(v)} is too long for a size (at most {format_size(MAX_SIZE)})")
    if isinstance(v, int) and not isinstance(v, bool) and v > MAX_SIZE:
        fail(path, f"must be at most {format_size(MAX_SIZE)} (1 PiB), got {_shown(v)}")
    try:
        n = parse_size(v, path)
    except (OverflowError, ValueError):
        fail(path, f"cannot parse {_shown(v)} as a size")
    if n <= 0:
        fail(path, f"must be greater than zero, got {v!r}")
    if n > MAX_SIZE:
        fail(path, f"must be at most {format_size(MAX_SIZE)} (1 PiB), got {_shown(v)}")
    return n


def name(v, path: str) -> str:
    """A plain name, matched in full (no trailing newline), at most MAX_NAME characters."""
    if not isinstance(v, str) or len(v) > MAX_NAME or not _NAME_RE.fullmatch(v):
        fail(path, f"must be a plain name (letters, digits, '_', '.', '-'; at most {MAX_NAME}), got {_shown(v)}")
    return v


def fio_overrides(overrides: dict, path: str) -> dict:
    """What fio's own checks assume: finite, bounded numbers and one-line strings."""
    for k, v in overrides.items():
        p = f"{path}.{k}"
        if v is not None and not isinstance(v, (str, int, float)):
            fail(p, f"expected a single value, got {type(v).__name__} {_shown(v)}")
        finite(v, p)
        if k in _FIO_NUMBERS and isinstance(v, (int, float)) and not isinstance(v, bool) \
                and not 0 <= v <= _FIO_NUMBERS[k]:
            fail(p, f"must be between 0 and {_FIO_NUMBERS[k]}, got {_shown(v)}")
        if k == "bs":
            size(v, p)
        if isinstance(v, str) and (len(v) > 64 or any(ord(c) < 32 or ord(c) == 127 for c in v)):
            fail(p, f"must be a short one-line value, got {_shown(v)}")
    return overrides


def blocksize(v, path: str, lo: int, hi: int) -> int:
    n = size(v, path)
    if n & (n - 1):
        fail(path, f"{v!r} is not a power of two")
    if not lo <= n <= hi:
        fail(path, f"{v!r} is outside {format_size(lo)}..{format_size(hi)}")
    return n


def zfs_property(key: str, v, path: str):
    if key == "copies":
        return integer(v, path, 1, 3)
    if isinstance(v, bool):             # YAML 1.1 reads on/off as booleans
        v = "on" if v else "off"
    if not isinstance(v, (str, int, float)) or v not in ALLOWED[key]:
        shown = ", ".join(sorted(ALLOWED[key])) if len(ALLOWED[key]) < 12 else "on, off, lz4, gzip[-N], zstd[-N], ..."
        fail(path, f"{v!r} is not a valid {key}; expected one of {shown}")
    return v


# Latencies are fio's lat (issue to completion, measure/fio_parse.py); clat, the completion half, stays a
# result column (specs written before 2026-12-02 name it), never the reported latency.
METRICS = ("iops", "bw_bytes_s", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "lat_p99_9_ns", "clat_mean_ns",
           "clat_p99_ns")
REPETITION_KEYS = ("pilot", "min", "max", "fixed", "target_rel_ci", "metric", "max_attempts",
                   "pool_replicates")
# Keys that declare Stein's two-stage design; without them (and without ``fixed``) the design
# is fixed at DEFAULT_FIXED runs on each of DEFAULT_POOLS pools (docs/methods.md §6, §13, §22).
ADAPTIVE_KEYS = ("pilot", "min", "max", "target_rel_ci")
# The default unit is an independently created pool (issue 45): reruns of one pool say how that pool
# varies, not how the layout does. Two runs on each pool let the sweep split its variance into the
# pool's and the run's (zbench plan-advice), at the cost of a pool create and prefill each.
DEFAULT_FIXED = 2
DEFAULT_POOLS = 3


def _fraction(v, path: str) -> float:
    t = v
    if isinstance(t, str) and t.endswith("%"):
        try:
            t = float(t[:-1]) / 100
        except ValueError:
            pass
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < 1:
        fail(path, f"expected a fraction in (0, 1) such as 0.05 or '5%', got {_shown(v)}")
    return float(t)


def repetitions(d) -> dict:
    """The ``repetitions`` block, normalised: design 'fixed' (the default) or 'stein'.

    Without ``pilot``, ``min``, ``max`` or ``target_rel_ci`` a cell gets a fixed design of
    ``DEFAULT_FIXED`` runs: the analysis's Welch intervals are valid for it, not for Stein's
    data-dependent n (docs/methods.md §13). Stein's two-stage rule is used only when one of
    those keys declares it. ``min`` is the old name of ``pilot``; ``min == max`` (or
    ``fixed: n``) is a fixed design.
    ``max_attempts`` caps the runs of a cell, excluded ones included (default max + pilot);
    ``pool_replicates`` re-creates every pool that many times, in randomised blocks: DEFAULT_POOLS
    unless given, and 1 under Stein's rule (which sizes the runs of one pool: state it to replicate).
    """
    r = mapping({} if d is None else d, "repetitions", REPETITION_KEYS)
    if "min" in r and "pilot" in r:
        fail("repetitions.min", "is the old name of pilot; give one of them")
    metric = r.get("metric", "iops")
    if metric not in METRICS:
        fail("repetitions.metric", f"{metric!r} is not a result column; choose one of {', '.join(METRICS)}")
    adaptive = [k for k in ADAPTIVE_KEYS if k in r]
    replicates = integer(r.get("pool_replicates", 1 if adaptive else DEFAULT_POOLS), "repetitions.pool_replicates",
                         1, 10)
    if "fixed" in r:
        if adaptive:
            fail("repetitions.fixed", f"a fixed design takes no {', '.join(adaptive)}")
        pilot = top = integer(r["fixed"], "repetitions.fixed", 1, 100)
    elif not adaptive:
        pilot = top = DEFAULT_FIXED
    else:
        key = "min" if "min" in r else "pilot"
        pilot = integer(r.get(key, 3), f"repetitions.{key}", 1, 100)
        top = integer(r.get("max", 10), "repetitions.max", 1, 100)
        if top < pilot:
            fail("repetitions.max", f"{top} is smaller than {key} {pilot}")
    target = _fraction(r.get("target_rel_ci", 0.05), "repetitions.target_rel_ci")
    design = "fixed" if pilot == top else "stein"
    if design == "stein" and pilot < 2:
        fail(f"repetitions.{'min' if 'min' in r else 'pilot'}",
             "Stein's two-stage rule needs a pilot of at least 2 runs (for its SD); "
             "use fixed for a single run per cell")
    attempts = integer(r.get("max_attempts", top + pilot), "repetitions.max_attempts", top, 1000)
    return {"design": design, "pilot": pilot, "max": top,
            "target_rel_ci": target if design == "stein" else None, "metric": metric,
            "max_attempts": attempts, "pool_replicates": replicates}
