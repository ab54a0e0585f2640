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
