"""The truth-check registry: one module per check, each declaring its record.

Each module of this package (``cache_served.py``, ...) defines ``CHECK``, a `judging.TruthCheck`:
the check's name, how it judges a run (a function of fio's rows, the counters and the run's
`run_context.RunFacts`), its kind (a raised flag invalidates the run or describes it), its meaning
in words, its place in the report (`rank`) and the result columns it adds beside its flag. The
judging itself may live elsewhere (``compressibility.py``, ``read_amp.py``, ...) when other code
shares it; the record is here. `truth.py` runs them in report order, the results table takes their
flags and columns from the records, and the sweep's repetition rule and the analysis read their
kinds: adding a check is a module here (and its test), nothing else in the code.
"""

from __future__ import annotations

import importlib
import pkgutil

from zbench_lib.core.errors import ConfigError
from zbench_lib.measure.judging import TruthCheck


def in_report_order() -> tuple[TruthCheck, ...]:
    """Every check of this package's modules, ordered by rank (the order of the flag columns)."""
    found: dict[str, TruthCheck] = {}
    for mod in pkgutil.iter_modules(__path__):
        check = importlib.import_module(f"{__name__}.{mod.name}").CHECK
        if check.name in found:
            raise ConfigError(f"truth check {check.name} is declared twice")
        found[check.name] = check
    ranks = [c.rank for c in found.values()]
    if len(set(ranks)) != len(ranks):
        raise ConfigError(f"two truth checks share a rank: {sorted(ranks)}")
    return tuple(sorted(found.values(), key=lambda c: c.rank))
