"""The summary table to paste into a write-up: one row per configuration × workload × direction.

    summary_table(results)        numbers in the units people use: configuration as written
                                  ("raidz1 1x6": vdevs x disks per vdev), drives, data disks,
                                  the other factors that vary, IOPS and MiB/s with the 95% CI
                                  of the metric the workload is judged in (`metric`: MiB/s for
                                  sequential workloads, IOPS for random ones, methods §9), p99
                                  and p99.9 in ms, each a typical pool's with its 95% CI
                                  and the pools it rests on (methods §18: each pool's own from
                                  its merged bins, or its runs' own fio percentile without
                                  them), n (admissible first attempts: pools where pools were
                                  replicated, else runs), the runs excluded by an invalidating
                                  truth check, and of the n those kept with a describing flag
                                  and those with a check not judged (never more than n); a
                                  configuration whose runs were all excluded keeps its row
                                  (n = 0) and says why (`no_value_reason`: "3 of 3 runs excluded
                                  (host_contention 3)"). Where compression or the declared data
                                  varies, the disks' MiB/s (physical) beside fio's (logical) and
                                  the compressratio after the runs
    display_table(table)          the same as text cells (what Markdown and HTML show); a row with no
                                  value says why in its interval cell, short ("3 of 3 runs excluded")
    paper_table(table)            the display as a paper prints it (what LaTeX shows): the throughput in
                                  the workload's own metric with its interval, the direction only where
                                  a workload has two, the plumbing columns (drives, data disks, the
                                  counts beside n) left to the caption: 10 columns for one factor
    summary_gt(table, ...)        a great_tables GT (HTML)
    legend(columns)               each column's label and meaning (`summary_columns`), the legend under
                                  every displayed table
    row_notes(table)              the notes under a displayed table that name rows: those with no
                                  admissible run and why (`no_value_notes`), the units short of I/Os for a
                                  percentile, counted and named (`tail_notes`)
    export_table(table, fmt)      'md', 'csv', 'latex' or 'html' as a string
    latex_table(table, ...)       floats that compile in a bare `article`, one- or two-column (USENIX, ACM
                                  and IEEE storage papers are two-column, where a longtable stops), with
                                  LATEX_PREAMBLE: a `table*` of a `tabular` up to 10 columns (portrait),
                                  a rotated `sidewaystable*` beyond; a table longer than a page goes on
                                  in further floats of the same number, "(continued)"; never wider than
                                  the line (a table a little wider is shrunk to it)
    write_tables(table, dir)      summary.md, summary.csv, summary.tex, summary-preamble.tex and
                                  summary-columns.csv (every column of summary.csv defined) into `dir`

Every export carries the source note the caller gives: the report puts the caveat line (lab,
emulated disks) and zbench's version and commit in it (`report.stamp`), so a pasted table keeps
them, and every export says what its p99 and p99.9 estimate (`tails_note`: "a typical pool's p99
and p99.9, from ...") and names the units that could not support them (`tail_notes`). An interval
of zero width reads "one value (n = 3)", never "175–175" (`wording.interval_text`). Every column
is defined: in a legend under the Markdown, LaTeX and HTML tables, and in summary-columns.csv for
the CSV. CSV headers carry their units (`iops_ci95_low`, `mib_s`, `p99_ms`, `p99_9_ci95_high_ms`),
`metric` the one each row is judged in, and each row its tails' estimand and short units
(`tail_estimand`, `tail_units`); its source note is its last column, `source_note`, the same in
every row, so that `pandas.read_csv(path)` reads the table's own rows and columns and a copied
row keeps its caveat. LaTeX puts the source note in the caption, the legend and the row notes in
small type after the floats (in the text, where they can be as long as they need).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from zbench_lib.analysis.data.flags import admissible_mask, described_mask, replacement_mask, select_admissible
from zbench_lib.analysis.claims.wording import interval_text
from zbench_lib.analysis.data.coverage import NOT_JUDGED, bare_reason, group_status
from zbench_lib.analysis.figures.plot_base import LAYOUT_ORDER, fmt
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.analysis.stats.tails import TYPICAL, cell_tails, estimand_text
from zbench_lib.analysis.data.columns import LAYOUT_COLUMNS
from zbench_lib.analysis.data.metrics import judged_metrics
from zbench_lib.analysis.data.replication import to_units
from zbench_lib.analysis.report.summary_columns import column_dictionary, meaning
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size

FORMATS = ("md", "csv", "latex", "html")
# The CSV's source note is a last column, the same in every row, not a sidecar file: summary.csv is what gets
# mailed alone, opened in a sheet or concatenated across sweeps (pd.concat keeps each row's lab, version and
# commit), and a sidecar is lost on the first copy. A commented first line broke `pd.read_csv` with no options
# (the note's commas made it the header: 19 rows of 4 columns for 18 of 30) and shows as a row in a sheet.
SOURCE_NOTE = "source_note"
_SHAPE = ["layout", "vdevs", "width", "total_disks", "data_disks"]
_LABELS = {"configuration": "Configuration", "drives": "Drives", "data_disks": "Data disks",
           "workload": "Workload", "direction": "Direction", "iops": "IOPS", "iops_ci": "IOPS 95% CI",
           "mib_s": "MiB/s", "mib_s_ci": "MiB/s 95% CI", "physical_mib_s": "Disks MiB/s",
           "compressratio": "compressratio",
           "p99_ms": "p99 (ms)", "p99_ci": "p99 95% CI", "p99_9_ms": "p99.9 (ms)", "p99_9_ci": "p99.9 95% CI",
           "tail_units": "Units short of I/Os", "n": "n", "excluded": "Excluded runs",
           "described": "Described (of n)", "not_judged": "Not fully judged (of n)",
           "throughput": "Throughput", "throughput_ci": "Throughput 95% CI"}
_RUNS = ("n", "excluded", "described", "not_judged")      # the run counts beside each estimate
_PLUMBING = ("drives", "data_disks", *_RUNS[1:])          # a paper's table says them in its caption
NO_VALUE = "no_value_reason"                              # why a row has no value ('' where it has one)
TAIL_QUANTILES = {0.99: "p99", 0.999: "p99_9"}           # the tails every export carries: their columns' prefix
TAIL_TABLE_COLUMNS = (*(f"{p}{end}" for p in TAIL_QUANTILES.values()
                        for end in ("_ms", "_ci95_low_ms", "_ci95_high_ms", "_n")), "tail_units", "tail_estimand")
_LATENCY = tuple(f"{p}{end}" for p in TAIL_QUANTILES.values() for end in ("_ms", "_ci"))   # the displayed tails
# What summary.tex needs, and nothing else: written beside it as summary-preamble.tex and documented in
# its first lines. No longtable: it stops a two-column document ("longtable not in 1-column mode"), the shape of
# USENIX, ACM and IEEE storage papers; a table longer than a page is continued in further floats instead.
LATEX_PREAMBLE = ("\\usepackage{booktabs}   % \\toprule, \\midrule, \\bottomrule\n"
                  "\\usepackage{rotating}   % sidewaystable*: a rotated page for tables with many columns\n"
                  "\\usepackage{graphicx}   % \\resizebox: a table a little wider than the line shrunk to it\n")
# A bare article's \textwidth (345 pt at 10 pt type; 469 pt in two columns, 505-516 pt in USENIX, ACM and IEEE
# papers) against the table's width estimated from its longest cell per column: scriptsize averages under
# 3.6 pt a character, and each column adds 6 pt of separation.
PORTRAIT_PT, CHAR_PT, COLUMN_PT = 345.0, 3.6, 6.0
# Portrait up to 10 columns (issue 52) and up to a width a bare article shrinks to its line by at most 15%
# (scriptsize at 85% is still 6 pt type); rotated beyond, on a page 550 pt wide and 345 pt high.
PORTRAIT_COLUMNS, MAX_SHRINK = 10, 0.85
# What a float holds (`_rows_per_float`): a bare article's page is 550 pt high (a rotated one 345 pt, its
# \textwidth); a float fills at most 90% of it, less 45 pt for the header, its rules and the caption's skip;
# rows are 8 pt in scriptsize, the caption's lines 9.5 pt at about 4.4 pt a character in footnotesize.
PAGE_PT, FLOAT_FILL, FLOAT_HEAD_PT, ROW_PT, CAPTION_LINE_PT, CAPTION_CHAR_PT = 550.0, 0.9, 45.0, 8.0, 9.5, 4.4
# The estimate runs about 5% short of pdflatex's measure, so a table estimated past TIGHT_PT (a rotated one of
# many factors) gets 2 pt a column side.
TIGHT_PT = 500.0
# Two-line LaTeX headers: the long labels would set each column's width.
_TEX_HEADERS = {"throughput_ci": "Throughput\\\\95\\% CI", "p99_ms": "p99\\\\(ms)",
                "p99_ci": "p99\\\\95\\% CI", "p99_9_ms": "p99.9\\\\(ms)", "p99_9_ci": "p99.9\\\\95\\% CI",
                "physical_mib_s": "Disks\\\\MiB/s", "compressratio": "compress-\\\\ratio"}
# Where these vary, fio's MiB/s (logical) is half the story: the disks' MiB/s and the ratio join it.
COMPRESSION_FACTORS = ("compression", "compressible_percent")
_PHYSICAL = ("physical_mib_s", "compressratio")
# Each throughput with its interval column: a row's interval is given in the metric its workload is judged in.
_JUDGED = {"iops": ("iops", "iops_ci"), "bw_bytes_s": ("mib_s", "mib_s_ci")}
# The summary table's columns that are not a factor of the sweep (the display shows the others as they are).
_NOT_FACTORS = {"configuration", "layout", "vdevs", "width", "drives", "data_disks", "workload", "direction", "metric",
                "iops", "iops_ci95_low", "iops_ci95_high", "mib_s", "mib_s_ci95_low", "mib_s_ci95_high", *_PHYSICAL,
                *TAIL_TABLE_COLUMNS, *_RUNS, NO_VALUE, SOURCE_NOTE}
# The display's right-aligned (numeric) columns, in every format.
_RIGHT = {"drives", "data_disks", "iops", "iops_ci", "mib_s", "mib_s_ci", "throughput", "throughput_ci", *_PHYSICAL,
          *_LATENCY, *_RUNS}


def config_label(layout, vdevs, width) -> str:
    """'raidz1 1x6': the layout, then vdevs x disks per vdev."""
    return f"{layout} {int(vdevs)}x{int(width)}"


def _runs(df: pd.DataFrame, keys, mask) -> pd.Series:
    key = "run_id" if "run_id" in df else None
    sel = df[mask.fillna(False).astype(bool)]
    return sel.groupby(keys, dropna=False)[key].nunique() if key else sel.groupby(keys, dropna=False).size()


def _units_with(adm: pd.DataFrame, keys: list, mask: pd.Series) -> pd.Series:
    """Per cell, how many of its n units have a run where `mask` holds. Counted among the runs n rests on and in
    n's own unit (a pool where n counts pools, `replication.to_units` as `stats.summary` does), so a count beside
    n is a part of it: before, the runs not fully judged were counted over every run of the cell, the excluded
    and the replacement ones too, and could exceed n."""
    d = adm[adm["iops"].notna()]
    units, _ = to_units(d.assign(_hit=mask.reindex(d.index).fillna(False).astype(float)), "_hit", keys)
    return units.assign(_hit=units["_hit"] > 0).groupby(keys, dropna=False)["_hit"].sum()


def _really_unjudged(text) -> bool:
    """A `not_judged` text names a check that could have been made and was not: a check that
    does not apply to the run (no writes to amplify, compression as the question) is no gap."""
    return any(part and "does not apply" not in part for part in str(text or "").split("; "))


def _not_judged_mask(df: pd.DataFrame) -> pd.Series:
    if "not_judged" in df:              # reasons: a check that does not apply is not counted
        return df["not_judged"].map(_really_unjudged).astype(bool)
    if "checks_not_judged" in df:
        return pd.to_numeric(df["checks_not_judged"], errors="coerce").fillna(0) > 0
    flags = [c for c in df.columns if c.startswith("flag_")]
    return df[flags].isna().any(axis=1) if flags else pd.Series(False, index=df.index)


def _short_units(r) -> str:
    """'p99.9: 1 of 3 pools short of 10,000 I/Os (p3 has 812 I/Os)': the units a cell's percentile could not
    use, counted and named; '' where every unit supports it."""
    if not r["unsupported"]:
        return "" if r["judged"] else f"{r['percentile']}: {bare_reason(r['status'])}"
    short = int(r["n_units"]) - int(r["n"])
    return (f"{r['percentile']}: {short} of {int(r['n_units'])} {r['unit']}s short of {int(r['min_ios']):,} I/Os "
            f"({r['unsupported']})")


def _tail_columns(adm: pd.DataFrame, hist: pd.DataFrame | None, keys: list) -> pd.DataFrame:
    """Each cell's p99 and p99.9, a typical unit's with its interval (`tails.cell_tails`, methods §18), in ms;
    `p99_n` the units each rests on; `tail_units` the units short of I/Os; `tail_estimand` what they are."""
    binned = hist is not None and len(hist) > 0
    # a percentile the runs never recorded (no bins, no column of fio's own) is left blank, not "not judged"
    qs = [q for q, p in TAIL_QUANTILES.items() if binned or f"lat_{p}_ns" in adm]
    if not qs or not len(adm):
        return pd.DataFrame(columns=keys + list(TAIL_TABLE_COLUMNS))
    rows = []
    for key, g in cell_tails(adm, hist, by=keys, quantiles=tuple(qs)).groupby(keys, dropna=False, sort=False):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        for r in g.itertuples(index=False):
            p = TAIL_QUANTILES[r.q]
            row |= {f"{p}_ms": r.value_ns / 1e6, f"{p}_ci95_low_ms": r.ci_low_ns / 1e6,
                    f"{p}_ci95_high_ms": r.ci_high_ns / 1e6, f"{p}_n": int(r.n)}
        row["tail_units"] = "; ".join(t for t in (_short_units(r) for _, r in g.iterrows()) if t)
        unit, source = g["unit"].iloc[0], g["source"].iloc[0]
        row["tail_estimand"] = (f"{estimand_text(TYPICAL, unit, 'p99 and p99.9')}, from {source}; 95% t interval "
                                f"across {unit}s on the log scale, rounded out to fio's bins")
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=keys + list(TAIL_TABLE_COLUMNS))


def summary_table(results: pd.DataFrame, include_flagged: bool = False,
                  hist: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per configuration × workload × direction (see the module docstring). p99 and p99.9 are a
    typical unit's (`tails.cell_tails`, methods §18), each with its 95% interval and the units it rests on
    (`p99_n`, `p99_9_n`): each pool's own percentile from its runs' merged bins in `hist` (the store's
    histograms, `Sweep.histograms`), or without them (runs before json+) from its runs' own fio percentile;
    `tail_estimand` says which. A pool whose I/Os cannot support a percentile is named in `tail_units`."""
    need = set(_SHAPE) | {"iops"}
    if not need <= set(results.columns):
        raise ConfigError(f"the summary table needs columns {sorted(need - set(results.columns))}")
    df = results.copy()
    factors = [c for c in varying_columns(df, exclude=LAYOUT_COLUMNS) if c not in ("workload", "direction")]
    keys = _SHAPE + factors + [c for c in ("workload", "direction") if c in df]
    df["metric"] = judged_metrics(df)
    adm = select_admissible(df, include_flagged)
    s = _throughput(adm, "iops", keys, "iops").merge(_throughput(adm, "bw_bytes_s", keys, "bw"), on=keys, how="left")
    physical = bool(set(factors) & set(COMPRESSION_FACTORS))
    all_keys = df[keys + ["metric"]].drop_duplicates(keys)      # a cell without admissible runs keeps its metric
    out = all_keys.merge(s, on=keys, how="left")
    if physical:
        out = out.merge(adm.groupby(keys, dropna=False).agg(**_physical_aggs(adm)).reset_index(), on=keys, how="left")
    out = out.merge(_tail_columns(adm, hist, keys), on=keys, how="left")
    counts = [_runs(df, keys, ~admissible_mask(df) & ~replacement_mask(df)).rename("excluded"),
              _units_with(adm, keys, described_mask(adm)).rename("described"),
              _units_with(adm, keys, _not_judged_mask(adm)).rename("not_judged")]
    for c in counts:
        out = out.merge(c.reset_index(), on=keys, how="left")
    out[list(_RUNS)] = out[list(_RUNS)].fillna(0).astype(int)
    if include_flagged:
        out["excluded"] = 0
    out = out.merge(_no_value_reasons(df, keys, include_flagged), on=keys, how="left")
    out[NO_VALUE] = out[NO_VALUE].where(out["n"] == 0, "")
    shape = out[["layout", "vdevs", "width"]].itertuples(index=False)
    out.insert(0, "configuration", [config_label(*r) for r in shape])
    out = out.rename(columns={"total_disks": "drives"})
    for c in ("bw", "bw_ci95_low", "bw_ci95_high"):
        out[c.replace("bw", "mib_s")] = out.pop(c) / 2 ** 20
    for metric, (value, _) in _JUDGED.items():           # the interval of the metric the workload is judged in
        judged = out["metric"] == metric
        for end in ("ci95_low", "ci95_high"):
            out[f"{value}_{end}"] = out[f"{value}_{end}"].where(judged).clip(lower=0)
    out[["tail_units", "tail_estimand"]] = out[["tail_units", "tail_estimand"]].fillna("")
    if physical:
        out["physical_mib_s"] = out.pop("physical_bw") / 2 ** 20
    out["_rank"] = out["layout"].map(lambda v: LAYOUT_ORDER.index(v) if v in LAYOUT_ORDER else len(LAYOUT_ORDER))
    order = [c for c in ("workload", "direction") if c in out] + ["_rank", "drives", "vdevs"] + factors
    out = out.sort_values(order, kind="stable").drop(columns=["_rank"]).reset_index(drop=True)
    cols = ["configuration", "layout", "vdevs", "width", "drives", "data_disks", *factors,
            *[c for c in ("workload", "direction") if c in out], "metric", "iops", "iops_ci95_low", "iops_ci95_high",
            "mib_s", "mib_s_ci95_low", "mib_s_ci95_high", *(_PHYSICAL if physical else ()), *TAIL_TABLE_COLUMNS,
            *_RUNS, NO_VALUE]
    return out[cols]


def _no_value_reasons(df: pd.DataFrame, keys: list, include_flagged: bool) -> pd.DataFrame:
    """`keys` and NO_VALUE: what became of each cell's runs ('3 of 3 runs excluded (host_contention 3)', the
    words of `coverage.group_status`), for the rows with no admissible run to say why instead of '—' only."""
    status = group_status(df, keys, include_flagged)
    judged = ~status["status"].str.startswith(NOT_JUDGED)        # admissible runs, none with a throughput
    status[NO_VALUE] = status["status"].map(bare_reason).where(~judged, "no throughput recorded")
    return status.drop(columns="status")


def _throughput(adm: pd.DataFrame, metric: str, keys: list, name: str) -> pd.DataFrame:
    """n (units), mean and 95% CI of `metric` per cell (`stats.summary`), the value columns named after `name`."""
    cols = ["mean", "ci95_low", "ci95_high"]
    if not len(adm) or metric not in adm:
        return pd.DataFrame(columns=keys + (["n"] if metric == "iops" else []) + [name, f"{name}_ci95_low",
                                                                                  f"{name}_ci95_high"])
    s = summary(adm, metric, keys)[keys + (["n"] if metric == "iops" else []) + cols]
    return s.rename(columns={"mean": name, "ci95_low": f"{name}_ci95_low", "ci95_high": f"{name}_ci95_high"})


def _physical_aggs(adm: pd.DataFrame) -> dict:
    """Means of the disks' bytes/s and of the compressratio after each run (the prefill's for
    runs recorded before it was kept), for a study of compression."""
    nan = ("iops", lambda v: np.nan)
    ratio = next((c for c in ("compressratio_after_run", "compressratio") if c in adm), None)
    return {"physical_bw": ("physical_bw_bytes_s", "mean") if "physical_bw_bytes_s" in adm else nan,
            "compressratio": (ratio, "mean") if ratio else nan}


def _factor_cell(col, v) -> str:
    if pd.isna(v):
        return ""
    return format_size(int(v)) if col.endswith("_bytes") else str(v)


def _no_ci(n) -> str:
    """An interval cell without an interval: 'n=1, no CI' for a value on one unit (or on two, the others
    short of I/Os: `tail_units` names them), '—' for none."""
    return f"n={int(n)}, no CI" if pd.notna(n) and n >= 1 else "—"


def _tail_cells(r) -> dict:
    """A row's p99 and p99.9 cells, each with its interval ("one value (n = 3)" at zero width); a value without
    one says on how many units it rests ("n=2, no CI": the units short of I/Os are in `tail_units`)."""
    out = {}
    for p in TAIL_QUANTILES.values():
        value, lo, hi, n = (r.get(f"{p}{end}") for end in ("_ms", "_ci95_low_ms", "_ci95_high_ms", "_n"))
        if pd.isna(value):
            out |= {f"{p}_ms": "—", f"{p}_ci": "not judged" if pd.notna(n) else "—"}
            continue
        ci = interval_text(lo, hi, int(n), fmt) if pd.notna(lo) and pd.notna(hi) else _no_ci(n)
        out |= {f"{p}_ms": fmt(value), f"{p}_ci": ci}
    return out


def _tail_display(table: pd.DataFrame) -> list[str]:
    """The tail columns a display shows: each percentile's value and interval (the units short of I/Os are notes
    under the table, `tail_notes`: a column of them would run off any page)."""
    return [c for p in TAIL_QUANTILES.values() for c in (f"{p}_ms", f"{p}_ci") if f"{p}_ms" in table]


def tail_notes(table: pd.DataFrame) -> list[str]:
    """'raidz3 1x8, seqread read: p99: 1 of 3 pools short of 1,000 I/Os (p3 has 816 I/Os)': each row's units
    that could not support a percentile, counted and named, for the notes under a displayed table."""
    return _row_notes(table, "tail_units")


def no_value_notes(table: pd.DataFrame) -> list[str]:
    """'mirror 3x2, 16K, randwrite, write: 3 of 3 runs excluded (host_contention 3)': each row with no admissible
    run and why, for the notes under a displayed table (its cell says it short)."""
    return _row_notes(table, NO_VALUE)


@dataclass(frozen=True)
class RowNotes:
    """Notes under a displayed table that name rows: their heading and one line per row."""
    heading: str
    lines: list[str]


def row_notes(table: pd.DataFrame) -> list[RowNotes]:
    """The notes every displayed export carries under its table: the rows with no admissible run and why, then
    the units short of I/Os for a percentile; a list without a line is left out."""
    notes = [RowNotes("No admissible run", no_value_notes(table)),
             RowNotes("Units short of I/Os (named, never left out silently)", tail_notes(table))]
    return [n for n in notes if n.lines]


def _row_notes(table: pd.DataFrame, column: str) -> list[str]:
    """'<the row's configuration, factors, workload, direction>: <its text in `column`>' for each row with one."""
    if column not in table:
        return []
    d = display_table(table)
    label = [c for c in d.columns if c not in _RIGHT and c not in ("drives", "data_disks")]
    return [f"{', '.join(str(v) for v in d.loc[i, label] if v)}: {text}"
            for i, text in zip(d.index, table[column].fillna("")) if text]


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """Text cells: numbers with separators and no scientific notation; '—' where n = 0."""
    factors = [c for c in table.columns if c not in _NOT_FACTORS]
    shown = [ci for m, (_, ci) in _JUDGED.items() if (table.get("metric", pd.Series("iops")) == m).any()]
    tails = _tail_display(table)
    rows = []
    for _, r in table.iterrows():
        judged = r["n"] > 0
        row = {"configuration": r["configuration"], "drives": str(int(r["drives"])),
               "data_disks": str(int(r["data_disks"]))}
        row.update({f: _factor_cell(f, r[f]) for f in factors})
        row.update({c: str(r[c]) for c in ("workload", "direction") if c in table})
        row.update({ci: _judged_interval(r, metric) for metric, (_, ci) in _JUDGED.items() if ci in shown})
        row.update(iops=fmt(r["iops"]) if judged else "—", mib_s=fmt(r["mib_s"]) if judged else "—",
                   **{c: fmt(r[c]) if judged else "—" for c in _PHYSICAL if c in table},
                   **(_tail_cells(r) if judged else {c: "—" for c in tails}),
                   **{c: str(int(r[c])) for c in _RUNS if c in table})
        rows.append(row)
    cols = ["configuration", "drives", "data_disks", *factors, *[c for c in ("workload", "direction") if c in table],
            *[c for c in ("iops", "iops_ci", "mib_s", "mib_s_ci") if c in ("iops", "mib_s", *shown)],
            *[c for c in _PHYSICAL if c in table], *tails, *[c for c in _RUNS if c in table]]
    return pd.DataFrame(rows, columns=cols)


def _judged_interval(r, metric: str) -> str:
    """The row's 95% CI cell in `metric`: its interval where its workload is judged in it ('' elsewhere: the
    other metric's), "one value (n = 3)" at zero width, "n=1, no CI" on a single unit, '—' with none."""
    if r.get("metric", "iops") != metric:
        return ""
    value = _JUDGED[metric][0]
    lo, hi = r[f"{value}_ci95_low"], r[f"{value}_ci95_high"]
    if r["n"] > 0 and pd.notna(lo) and pd.notna(hi):
        return interval_text(lo, hi, int(r["n"]), fmt)
    return _no_ci(r["n"]) if r["n"] > 0 else _short_reason(r.get(NO_VALUE, ""))


def _short_reason(reason) -> str:
    """'3 of 3 runs excluded' of '3 of 3 runs excluded (host_contention 3)': a cell short enough for a page's
    column, the flags that excluded the runs in the notes under the table (`no_value_notes`); '—' for none."""
    return str(reason or "").split(" (")[0].split(", ")[0] or "—"


def _header(col: str) -> str:
    if col in _LABELS:
        return _LABELS[col]
    return col.replace("_bytes", "").replace("_", " ")


def legend(columns) -> list[str]:
    """'Not fully judged (of n): of the n, those with ...': each column's label and meaning
    (`summary_columns`), for the legend under a displayed table: every column it shows is defined."""
    return [f"{_header(c)}: {meaning(c)}" for c in columns]


def summary_gt(table: pd.DataFrame, title: str = "Summary", source_note: str = ""):
    """The table as a great_tables GT (`.as_raw_html()`, `.as_latex()`)."""
    from great_tables import GT
    d = display_table(table)
    gt = GT(d).tab_header(title=title).cols_label(**{c: _header(c) for c in d.columns})
    numeric = [c for c in d.columns if c in _RIGHT]
    throughput = [c for c in ("iops", "iops_ci", "mib_s", "mib_s_ci", *_PHYSICAL) if c in d]
    gt = gt.cols_align("right", columns=numeric).tab_spanner("Throughput", throughput) \
        .tab_spanner("Latency", [c for c in _LATENCY if c in d]) \
        .tab_spanner("Runs", [c for c in _RUNS if c in d])
    columns = "Columns. " + "; ".join(legend(d.columns)) + "."
    for line in [source_note, columns, *(f"{notes.heading}: {n}" for notes in row_notes(table) for n in notes.lines)]:
        gt = gt.tab_source_note(line) if line else gt
    return gt


def _markdown(d: pd.DataFrame, right) -> str:
    cells = [[_header(c) for c in d.columns]] + d.astype(str).to_numpy().tolist()
    esc = [[str(v).replace("|", "\\|") for v in row] for row in cells]
    widths = [max(len(row[i]) for row in esc) for i in range(len(d.columns))]
    line = lambda row: "| " + " | ".join(v.rjust(w) if d.columns[i] in right else v.ljust(w)  # noqa: E731
                                         for i, (v, w) in enumerate(zip(row, widths))) + " |"
    rule = "|" + "|".join(("-" * (w + 1) + ":") if c in right else ("-" * (w + 2))
                          for c, w in zip(d.columns, widths)) + "|"
    return "\n".join([line(esc[0]), rule] + [line(r) for r in esc[1:]]) + "\n"


def tails_note(table: pd.DataFrame) -> str:
    """The caption's sentence on the tails: what p99 and p99.9 estimate, said once (every export carries it)."""
    said = [t for t in dict.fromkeys(table.get("tail_estimand", pd.Series(dtype=str)).fillna("")) if t]
    return f"p99 and p99.9: {' / '.join(said)} (methods §18)." if said else ""


def export_table(table: pd.DataFrame, fmt_name: str, title: str = "Summary", source_note: str = "") -> str:
    """The summary table as Markdown, CSV (numbers, units in the column names), LaTeX or HTML."""
    if fmt_name not in FORMATS:
        raise ConfigError(f"table format must be one of {', '.join(FORMATS)}, got {fmt_name!r}")
    if fmt_name == "csv":             # each row carries its tails' estimand and short units in its own columns
        rows = table.assign(**{SOURCE_NOTE: source_note}) if source_note else table
        return rows.to_csv(index=False, float_format="%.6g")
    source_note = " ".join(t for t in (source_note, tails_note(table)) if t)
    if fmt_name == "md":
        d = display_table(table)
        notes = [RowNotes("Columns", legend(d.columns)), *row_notes(table)]
        return (f"**{title}**\n\n" if title else "") + _markdown(d, _RIGHT) \
            + (f"\n{source_note}\n" if source_note else "") \
            + "".join(f"\n{n.heading}:\n\n" + "".join(f"- {line}\n" for line in n.lines) for n in notes)
    if fmt_name == "latex":
        return latex_table(table, title, source_note)
    return summary_gt(table, title, source_note).as_raw_html()


_TEX_ESCAPES = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
                "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\^{}", "–": "--", "—": "---",
                "×": "$\\times$", "±": "$\\pm$"}


def _tex(text) -> str:
    """Text escaped for LaTeX in one pass (a backslash's replacement is not escaped again).

    Examples
    --------
    >>> print(_tex("95% CI 1–2 & a_b {x}"))
    95\\% CI 1--2 \\& a\\_b \\{x\\}
    """
    return re.sub("|".join(map(re.escape, _TEX_ESCAPES)), lambda m: _TEX_ESCAPES[m.group(0)], str(text))


def _tex_header(col: str) -> str:
    if col in _TEX_HEADERS:
        return "\\begin{tabular}[b]{@{}c@{}}" + _TEX_HEADERS[col] + "\\end{tabular}"
    return _tex(_header(col))


def _width_pt(d: pd.DataFrame) -> float:
    """The table's estimated width in points (two-line headers count their longer line)."""
    width = 0.0
    for c in d.columns:
        head = max(_TEX_HEADERS.get(c, _header(c)).split("\\\\"), key=len)
        width += max([len(head)] + [len(str(v)) for v in d[c]]) * CHAR_PT + COLUMN_PT
    return width


def paper_table(table: pd.DataFrame) -> pd.DataFrame:
    """The displayed table as a paper prints it (summary.tex): each row's throughput in its workload's own metric
    with its interval in one pair of columns, the direction only where a workload has rows in two, and the
    plumbing columns (drives, data disks, the counts beside n) left to the caption (`_plumbing`): a sweep of
    one factor fits 10 columns, a portrait table of a two-column page."""
    d = display_table(table)
    mib = table.get("metric", pd.Series("iops", index=table.index)).eq("bw_bytes_s").to_numpy()
    blank = pd.Series("", index=d.index)
    value = np.where(mib, d["mib_s"] + " MiB/s", d["iops"] + " IOPS")
    ci = np.where(mib, d.get("mib_s_ci", blank), d.get("iops_ci", blank))
    out = d.drop(columns=[c for c in (*_PLUMBING, "iops", "iops_ci", "mib_s", "mib_s_ci") if c in d])
    if {"workload", "direction"} <= set(table) and table.groupby("workload")["direction"].nunique().max() <= 1:
        out = out.drop(columns="direction")            # randread reads: the workload says it
    at = next((i for i, c in enumerate(out.columns) if c in _RIGHT), len(out.columns))   # after the labels
    out.insert(at, "throughput", np.where(table["n"].to_numpy() > 0, value, "—"))
    out.insert(at + 1, "throughput_ci", ci)
    return out


def _plumbing(table: pd.DataFrame) -> str:
    """The caption's sentences for the columns a paper's table leaves out: each configuration's drives and data
    disks, and the run counts beside n summed (each row's are in summary.md and summary.csv)."""
    d = display_table(table).drop_duplicates("configuration")
    disks = ", ".join(f"{c} {dr}/{dd}" for c, dr, dd in zip(d["configuration"], d["drives"], d["data_disks"]))
    counts = ", ".join(f"{_header(c)} {int(table[c].sum())}" for c in _RUNS if c in table)
    return f"Drives/data disks: {disks}. Summed over the rows: {counts} (each row's in summary.md and summary.csv)."


def _rows_per_float(caption: str, upright: bool) -> int:
    """How many rows a float holds under `caption` on the lowest page it may land on: a bare article's portrait
    page (550 pt) or its rotated one (345 pt), the caption wrapped at the width of each."""
    height, width = (PAGE_PT, PORTRAIT_PT) if upright else (PORTRAIT_PT, PAGE_PT)
    caption_pt = math.ceil(len(caption) * CAPTION_CHAR_PT / width) * CAPTION_LINE_PT
    return max(1, int((FLOAT_FILL * height - FLOAT_HEAD_PT - caption_pt) // ROW_PT))


def _tex_rows(rows: pd.DataFrame) -> list[str]:
    return [" & ".join(_tex(v) for v in row) + " \\\\" for row in rows.astype(str).to_numpy().tolist()]


def _float(env: str, caption: str, spec: str, head: str, rows: list[str], sep: int) -> list[str]:
    """One float of the table: its caption, then the tabular in small type, shrunk to the line only where the
    estimate of its width fell short (`\\zbenchbox`: a table never runs off the page)."""
    return [f"\\begin{{{env}}}[tp]", "\\centering\\footnotesize", caption,
            f"\\scriptsize\\setlength{{\\tabcolsep}}{{{sep}pt}}",
            f"\\sbox{{\\zbenchbox}}{{\\begin{{tabular}}{{@{{}}{spec}@{{}}}}", "\\toprule", head, "\\midrule", *rows,
            "\\bottomrule", "\\end{tabular}}%",
            "\\ifdim\\wd\\zbenchbox>\\linewidth\\resizebox{\\linewidth}{!}{\\usebox{\\zbenchbox}}"
            "\\else\\usebox{\\zbenchbox}\\fi", f"\\end{{{env}}}"]


def latex_table(table: pd.DataFrame, title: str = "Summary", source_note: str = "") -> str:
    """The summary table as floats for any `article`, one- or two-column, with LATEX_PREAMBLE (see the module
    docstring): `table*` (a page's width in a two-column paper), rotated (`sidewaystable*`) past 10 columns or a
    portrait page's width; a table longer than a page goes on in further floats, "(continued)". The caption
    carries the source note and the plumbing columns; the legend and the row notes follow the floats."""
    d = paper_table(table)
    width = _width_pt(d)
    upright = len(d.columns) <= PORTRAIT_COLUMNS and width <= PORTRAIT_PT / MAX_SHRINK
    env = "table*" if upright else "sidewaystable*"
    spec = "".join("r" if c in _RIGHT else "l" for c in d.columns)
    head = " & ".join(_tex_header(c) for c in d.columns) + " \\\\"
    caption = " ".join(t for t in (f"{title}.", source_note, _plumbing(table)) if t)
    lines = ["% " + title, "% Needs, in the preamble (summary-preamble.tex):",
             *("% " + line for line in LATEX_PREAMBLE.splitlines()),
             "\\ifdefined\\zbenchbox\\else\\newsavebox{\\zbenchbox}\\fi"]
    start, more = 0, f"{title} (continued)"
    while start == 0 or start < len(d):                  # one float a page; the later ones keep its number
        per = _rows_per_float(caption if start == 0 else more, upright)
        cap = (f"\\caption[{{{_tex(title)}}}]{{{_tex(caption)}}}" if start == 0 else
               f"\\addtocounter{{table}}{{-1}}\\caption[{{{_tex(more)}}}]{{{_tex(more)}}}")
        lines += _float(env, cap, spec, head, _tex_rows(d.iloc[start:start + per]), 2 if width > TIGHT_PT else 3)
        start += per
    legend_of = [*d.columns, *(c for c in _PLUMBING if c in table)]      # the caption's terms are defined too
    lines += ["{\\footnotesize\\raggedright Columns of the table above. " + _tex("; ".join(legend(legend_of)))
              + ".\\par}"]
    for notes in row_notes(table):
        lines += ["{\\footnotesize\\raggedright " + _tex(notes.heading) + ":\\par",
                  *(_tex(n) + "\\par" for n in notes.lines), "}"]
    return "\n".join(lines) + "\n"


def write_tables(table: pd.DataFrame, out_dir, title: str = "Summary", source_note: str = "",
                 stem: str = "summary") -> list[Path]:
    """summary.md, summary.csv, summary.tex, summary-preamble.tex (what the .tex needs) and summary-columns.csv
    (what each column of summary.csv means: `summary_columns.column_dictionary`) in `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt_name, ext in (("md", "md"), ("csv", "csv"), ("latex", "tex")):
        p = out_dir / f"{stem}.{ext}"
        p.write_text(export_table(table, fmt_name, title, source_note), encoding="utf-8")
        paths.append(p)
    pre = out_dir / f"{stem}-preamble.tex"
    pre.write_text(LATEX_PREAMBLE, encoding="utf-8")
    columns = out_dir / f"{stem}-columns.csv"
    column_dictionary([*table.columns, *([SOURCE_NOTE] if source_note else [])]).to_csv(columns, index=False)
    return paths + [pre, columns]
