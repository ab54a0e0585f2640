"""What every truth check shares: numbers that may be missing, fio's bytes, a verdict, a kind.

A verdict is three-valued: True (raised), False (judged and passed) or None (not
judged). A check that was not performed is "not judged", never "passed"
(docs/statistics.md, Claims); its `reason` says why. A check's kind says what its raised
flag means for the run (`TruthCheck`; each check declares its record in a module of `checks/`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from zbench_lib.measure.run_context import RunFacts

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


Kind = Literal["invalidates", "describes"]
INVALIDATES: Kind = "invalidates"       # the run did not measure the system under test: excluded, may be replaced
DESCRIBES: Kind = "describes"           # the system behaved this way: kept, counted, shown beside the estimate


@dataclass(frozen=True)
class Column:
    """A result column a check adds beside its flag: `key` of the check's result (`default` when
    the check's result lacks it), a list `joined` with commas."""
    name: str
    key: str
    default: Any = math.nan
    joined: bool = False

    def read(self, result: dict):
        value = result.get(self.key, self.default)
        return ",".join(value) if self.joined else value


@dataclass(frozen=True)
class TruthCheck:
    """One truth check: how it judges a run and what its raised flag means for the run.

    `in_fault_study` is the kind where the spec injects faults on purpose (`faults:`), when
    it differs from `kind`. The reason for each kind is in docs/methods.md §7. `regime`: a raised flag
    says the system ran in another mode (a slow mode: reads amplified, a disk far slower), so a ratio of
    runs that all carry it against runs that do not compares two regimes, not a scaling law or a
    setting (the analysis gives such a figure without a verdict, issue 46). `rank` orders
    the checks (the report's order, and the flag columns'); `columns` are the numbers the results
    table keeps beside the flag, placed among the other checks' by `columns_rank` (the order
    results.parquet has always had; a new check's go after them).
    """
    name: str
    judge: Callable[[list, dict, RunFacts], dict]
    kind: Kind
    meaning: str
    rank: int
    in_fault_study: Kind | None = None
    columns: tuple[Column, ...] = ()
    columns_rank: int = 1000
    regime: bool = False

    @property
    def column(self) -> str:
        return f"flag_{self.name}"

    def kind_for(self, fault_study: bool) -> Kind:
        return self.in_fault_study if fault_study and self.in_fault_study else self.kind
