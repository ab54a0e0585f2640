"""What every truth check shares: numbers that may be missing, fio's bytes, a verdict.

A verdict is three-valued: True (raised), False (judged and passed) or None (not
judged). A check that was not performed is "not judged", never "passed"
(docs/statistics.md, Claims); its `reason` says why.
"""

from __future__ import annotations

import math

MiB = 1024 * 1024
# Below this much fio I/O in a direction, layer comparisons are noise: one idle TXG's
# metadata, a label update or a few readahead blocks are worth a few MiB.
MIN_FIO_BYTES = 8 * MiB


def num(v) -> float:
    """A float, NaN for None or anything that is not a number."""
    try:
        return math.nan if v is None else float(v)
    except (TypeError, ValueError):
        return math.nan


def div(a, b) -> float:
    a, b = num(a), num(b)
    return a / b if b and not math.isnan(b) and not math.isnan(a) else math.nan


def fio_bytes(fio_rows: list[dict], direction: str) -> int:
    """Bytes fio moved in one direction (summed over job groups)."""
    return int(sum(r.get("io_bytes") or 0 for r in fio_rows if r.get("direction") == direction))


def not_judged(reason: str, **numbers) -> dict:
    """A check that could not be performed, or does not apply: flag None with the reason."""
    return {**numbers, "flag": None, "reason": reason}
