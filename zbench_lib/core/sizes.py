"""Byte sizes as people write them: 512, 8k, 128K, 1G, 2GiB (binary units)."""

from __future__ import annotations

import re

from zbench_lib.core.errors import ConfigError

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(value, what: str = "size") -> int:
    """Parse a size to bytes; ints pass through. Raises ConfigError on garbage."""
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a size, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{what}: cannot be negative, got {value}")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{what}: expected a size like 8k or 1G, got {value!r}")
    m = _SIZE_RE.match(value)
    if not m:
        raise ConfigError(f"{what}: cannot parse {value!r} as a size (examples: 4096, 8k, 128K, 1G)")
    number = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if number > 2 ** 63:                # also a 400-digit number, which float() makes inf
        raise ConfigError(f"{what}: {value[:30]!r}{'...' if len(value) > 30 else ''} is far too large")
    if number != int(number):
        raise ConfigError(f"{what}: {value!r} is not a whole number of bytes")
    return int(number)


def format_size(n: int) -> str:
    """Shortest exact binary form: 8192 -> '8K', 1073741824 -> '1G'."""
    for unit, mult in (("T", 1024 ** 4), ("G", 1024 ** 3), ("M", 1024 ** 2), ("K", 1024)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


_ZPOOL_FIGURE = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)B?")


def zpool_bytes(text) -> int | None:
    """A size as `zpool status` prints it ('98.9M': binary units, rounded) -> bytes;
    None when absent or printed some other way."""
    m = _ZPOOL_FIGURE.fullmatch(str(text).strip()) if text is not None else None
    return round(float(m.group(1)) * 1024 ** " KMGTP".index(m.group(2) or " ")) if m else None
