"""Checks of single spec values; each failure names its key path (``factors.disks[1]``)."""

from __future__ import annotations

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size, parse_size
from zbench_lib.zfs.targets import ALLOWED


def fail(path: str, message: str):
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


def integer(v, path: str, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        fail(path, f"expected an integer, got {v!r}")
    if v < lo:
        fail(path, f"must be at least {lo}, got {v}")
    if hi is not None and v > hi:
        fail(path, f"must be at most {hi}, got {v}")
    return v


def size(v, path: str) -> int:
    n = parse_size(v, path)
    if n <= 0:
        fail(path, f"must be greater than zero, got {v!r}")
    return n


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
    if v not in ALLOWED[key]:
        shown = ", ".join(sorted(ALLOWED[key])) if len(ALLOWED[key]) < 12 else "on, off, lz4, gzip[-N], zstd[-N], ..."
        fail(path, f"{v!r} is not a valid {key}; expected one of {shown}")
    return v


METRICS = ("iops", "bw_bytes_s", "clat_mean_ns", "clat_p50_ns", "clat_p99_ns", "clat_p99_9_ns",
           "lat_p99_ns")
REPETITION_KEYS = ("pilot", "min", "max", "fixed", "target_rel_ci", "metric", "max_attempts",
                   "pool_replicates")


def _fraction(v, path: str) -> float:
    t = v
    if isinstance(t, str) and t.endswith("%"):
        try:
            t = float(t[:-1]) / 100
        except ValueError:
            pass
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < 1:
        fail(path, f"expected a fraction in (0, 1) such as 0.05 or '5%', got {v!r}")
    return float(t)


def repetitions(d) -> dict:
    """The ``repetitions`` block, normalised: design 'stein' (pilot, max, target_rel_ci) or 'fixed'.

    ``min`` is the old name of ``pilot``; ``min == max`` (or ``fixed: n``) is a fixed design.
    ``max_attempts`` caps the runs of a cell, excluded ones included (default max + pilot);
    ``pool_replicates`` re-creates every pool that many times, in randomised blocks.
    """
    r = mapping({} if d is None else d, "repetitions", REPETITION_KEYS)
    if "min" in r and "pilot" in r:
        fail("repetitions.min", "is the old name of pilot; give one of them")
    metric = r.get("metric", "iops")
    if metric not in METRICS:
        fail("repetitions.metric", f"{metric!r} is not a result column; choose one of {', '.join(METRICS)}")
    replicates = integer(r.get("pool_replicates", 1), "repetitions.pool_replicates", 1, 10)
    if "fixed" in r:
        others = [k for k in ("pilot", "min", "max", "target_rel_ci") if k in r]
        if others:
            fail("repetitions.fixed", f"a fixed design takes no {', '.join(others)}")
        pilot = top = integer(r["fixed"], "repetitions.fixed", 1, 100)
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
