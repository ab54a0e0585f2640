"""Truth checks: is a run's headline number about what it claims to measure?

`truth_checks(fio_rows, counters, facts)` compares the layers of one run: fio's rows
(`fio_parse.parse_fio_json`), the counter summary over the same window
(`run_summary.summarize_counters`) and facts recorded around the run (see below). Each check
is a dict with `flag` and a `reason` beside the numbers behind it. A flag is three-valued:
True (raised), False (judged, passed) or None (not judged: the check does not apply, or what
it needs was not measured; the reason says which). A check that was not performed never
reads as passed. `flag_columns()` flattens them for the results table.

Each check declares once, in its module of `checks/` (the registry, `TRUTH_CHECKS` here in
report order), what its raised flag means for the run (docs/methods.md §7): it *invalidates*
the run (the measurement did not measure the system under test: the run is excluded and may be
replaced) or *describes* it (the system behaved this way: the run is kept, counted and shown
beside the estimate), and the result columns it keeps beside its flag. The sweep's repetition
rule and the analysis both read the kinds from here.

What the checks read of the run beside fio and the counters is its `run_context.RunFacts`:
the context recorded in run.json (declared cache state, pool status at start, compressratio,
the lab's disk model, the declared data, the pool's health after the run, ...) with what is
derived from the raw files (per-second IOPS, the controller's load, each disk's service
time), each field commented there. On raw disks (`RunFacts.no_pool`) the checks of a pool's
layer, its background work, its compression and its TXGs do not apply.
"""

from __future__ import annotations

import math

from zbench_lib.measure import checks as registry
from zbench_lib.measure.judging import DESCRIBES, INVALIDATES, Kind
from zbench_lib.measure.judging import num as _num
from zbench_lib.measure.run_context import RunFacts

# The checks in report order (tests/test_flag_kinds.py fails on a flag column without a declared kind).
TRUTH_CHECKS = registry.in_report_order()
CHECKS = tuple(c.name for c in TRUTH_CHECKS)  # the flags, in report order; fill_level is informational
_BY_NAME = {c.name: c for c in TRUTH_CHECKS}


def kind_of(name: str, fault_study: bool = False) -> Kind:
    """What check `name`'s raised flag means for a run (KeyError for a name no check declares)."""
    return _BY_NAME[name].kind_for(fault_study)


def split_by_kind(raised, fault_study: bool = False) -> tuple[list[str], list[str]]:
    """The raised checks' names as (invalidating, describing), each in report order."""
    raised = set(raised)
    names = [n for n in CHECKS if n in raised]
    return ([n for n in names if kind_of(n, fault_study) == INVALIDATES],
            [n for n in names if kind_of(n, fault_study) == DESCRIBES])


def truth_checks(fio_rows: list[dict], counters: dict, ctx: RunFacts) -> dict:
    """Every check (see CHECKS) plus the informational `fill_level`, keyed by name."""
    c = counters or {}
    out = {check.name: check.judge(fio_rows or [], c, ctx) for check in TRUTH_CHECKS}
    out["fill_level"] = dict(flag=None, info=True, pool_capacity_pct=_num(ctx.pool_capacity_pct),
                             pool_fragmentation_pct=_num(ctx.pool_fragmentation_pct),
                             prefilled=ctx.prefilled, missing_layers=c.get("missing_layers"),
                             reason="recorded at start")
    return out


def flag_columns(checks: dict, fault_study: bool = False) -> dict:
    """Flat columns for the tidy results table: `flag_<check>` (True, False or None) and key numbers.

    `flagged` is True when an invalidating flag is (the run is excluded, and may be replaced);
    `truth_flags` names those flags and `described_flags` the describing flags raised (the run
    is kept). `fault_study` (the spec injects faults) is recorded, since it sets device_lost's
    kind. `not_judged` lists the checks that were not judged with their reasons ("check:
    reason; check: reason"), and `checks_judged` / `checks_not_judged` count them.
    """
    names = [name for name in CHECKS if name in checks]
    cols = {f"flag_{name}": checks[name]["flag"] for name in names}
    for check in sorted(TRUTH_CHECKS, key=lambda c: c.columns_rank):      # each check's numbers
        cols.update({col.name: col.read(checks.get(check.name, {})) for col in check.columns})
    fill = checks.get("fill_level", {})
    cols.update(pool_capacity_pct=fill.get("pool_capacity_pct", math.nan),
                pool_fragmentation_pct=fill.get("pool_fragmentation_pct", math.nan))
    invalidating, describing = split_by_kind([name for name in names if checks[name]["flag"] is True], fault_study)
    unjudged = [name for name in names if checks[name]["flag"] is None]
    cols.update(flagged=bool(invalidating), truth_flags=",".join(invalidating), described_flags=",".join(describing),
                fault_study=bool(fault_study),
                not_judged="; ".join(f"{name}: {checks[name].get('reason', '')}" for name in unjudged),
                checks_judged=len(names) - len(unjudged), checks_not_judged=len(unjudged))
    return cols
