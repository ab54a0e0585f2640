"""What every column of the summary table and its exports means (issue 52: "Runs not fully judged" was
defined nowhere, and a reader of a pasted table could not tell what n counted or what the counts beside it
were counts of).

    COLUMNS                   the exports' own columns: the summary table's (CSV) and the displayed ones
                              (`iops_ci`, the LaTeX table's `throughput`), each with its unit and meaning
    column_dictionary(cols)   name, unit, meaning of each column, the results' own (layout, the factors,
                              workload) from docs/results-columns.csv: summary-columns.csv beside summary.csv
    meaning(col)              one column's meaning, for the legend under a displayed table

The counts beside n are of n (`pub_tables._units_with`): "Described" and "Not fully judged" never exceed it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from zbench_lib.analysis.report.data_dictionary import describe


@dataclass(frozen=True)
class Column:
    """A column the exports define: in the legend under a displayed table and in summary-columns.csv."""
    name: str        # the summary table's (CSV) name, or a displayed column's
    unit: str
    meaning: str


_NO_VALUE_SAYS_WHY = "a row with no admissible run says why instead"
# The tails' columns, alike for p99 and p99.9 (pub_tables.TAIL_QUANTILES).
_TAILS = tuple(c for p, q in (("p99", "p99"), ("p99_9", "p99.9")) for c in (
    Column(f"{p}_ms", "ms", f"a typical unit's {q} latency, issue to completion (what it estimates and from what: "
                            "under the table, or tail_estimand; methods §18)"),
    Column(f"{p}_ci95_low_ms", "ms", f"the 95% CI of that {q}, low end"),
    Column(f"{p}_ci95_high_ms", "ms", f"the 95% CI of that {q}, high end"),
    Column(f"{p}_n", "count", f"the units the {q} rests on (fewer than n where a unit has too few I/Os for it: "
                              "tail_units names them)"),
    Column(f"{p}_ci", "ms", f"the 95% CI of that {q}; 'n=2, no CI' where too few units support it, 'not judged' "
                            "where none does (the units short of I/Os are named under the table)")))


def _throughput(name: str, unit: str, mean: str, io: str, other: str) -> tuple[Column, ...]:
    """The mean of a throughput metric, its CI's ends (CSV) and its CI as displayed: alike for IOPS and MiB/s."""
    blank = f"(blank where the workload is judged in {other})"
    return (Column(name, unit, mean),
            Column(f"{name}_ci95_low", unit, f"the 95% CI of the mean {unit}, low end {blank}"),
            Column(f"{name}_ci95_high", unit, f"the 95% CI of the mean {unit}, high end {blank}"),
            Column(f"{name}_ci", unit, f"the 95% CI of the mean {unit}, where the workload is judged in {unit} "
                                       f"({io} I/O, methods §9); {_NO_VALUE_SAYS_WHY}"))


COLUMNS: tuple[Column, ...] = (
    Column("configuration", "", "the layout, then vdevs x disks per vdev ('raidz1 1x6': one raidz1 vdev of 6 disks)"),
    Column("drives", "count", "the disks in the pool's data vdevs"),
    Column("data_disks", "count", "the drives minus parity (raidz) or mirror copies"),
    Column("metric", "", "the metric the workload is judged in: iops for random I/O, bw_bytes_s (given in MiB/s) "
                         "for sequential (methods §9); its interval is given, the other metric's is blank"),
    *_throughput("iops", "IOPS", "the mean IOPS over the n units", "random", "MiB/s"),
    *_throughput("mib_s", "MiB/s", "the mean MiB/s over the n units, fio's (logical: what the application saw)",
                 "sequential", "IOPS"),
    Column("throughput", "IOPS or MiB/s", "the mean over the n units in the metric the workload is judged in: IOPS "
                                          "for random I/O, MiB/s for sequential (methods §9)"),
    Column("throughput_ci", "IOPS or MiB/s", f"its 95% CI; {_NO_VALUE_SAYS_WHY}"),
    Column("physical_mib_s", "MiB/s", "the disks' MiB/s (physical, from /proc/diskstats), beside fio's logical "
                                      "MiB/s"),
    Column("compressratio", "ratio", "the target's compressratio after the runs"),
    *_TAILS,
    Column("tail_units", "", "the units short of I/Os for a percentile, counted and named (blank where every unit "
                             "supports it)"),
    Column("tail_estimand", "", "what p99 and p99.9 estimate, and from what (each unit's merged fio histogram "
                                "bins, or its runs' own fio percentile)"),
    Column("n", "count", "the units the mean rests on: admissible first attempts, counted as pools where pools "
                         "were replicated (each pool's runs averaged first, methods §6), else as runs"),
    Column("excluded", "runs", "first attempts left out by an invalidating truth check (not in n; a run added to "
                               "replace one is not counted; 0 where flagged runs are included)"),
    Column("described", "count", "of the n, those with a describing flag raised (kept in the estimate: not "
                                 "steady, read amplification ...; methods §8)"),
    Column("not_judged", "count", "of the n, those with a truth check that could have been made and was not (a "
                                  "check that does not apply to the run is no gap)"),
    Column("no_value_reason", "", "why a row has no value: what became of its runs ('3 of 3 runs excluded "
                                  "(host_contention 3)'); blank where it has one"),
    Column("source_note", "", "the sweep, the estimate's rules, the lab's caveat (emulated disks) and zbench's "
                              "version and commit: the same in every row, so that a copied row keeps them"),
)
_DEFINED = {c.name: c for c in COLUMNS}


def column_dictionary(columns) -> pd.DataFrame:
    """name, unit, meaning of each of `columns` in order: the exports' own from COLUMNS, a results column's
    (layout, vdevs, width, a factor, workload, direction) from docs/results-columns.csv."""
    results = describe([c for c in columns if c not in _DEFINED]).set_index("name")
    rows = [_DEFINED.get(c) or Column(c, results.at[c, "unit"], results.at[c, "meaning"]) for c in columns]
    return pd.DataFrame([asdict(r) for r in rows], columns=["name", "unit", "meaning"])


def meaning(column: str) -> str:
    """What one column means ('(not documented)' for one neither dictionary has)."""
    return str(column_dictionary([column])["meaning"].iloc[0])
