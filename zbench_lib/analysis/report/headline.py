"""What the first screen of a report says: the answer to the sweep's question and its headline figure.

Each study type has its own (issue 31): a scaling sweep the throughput against the drives with
the ideal and the model, and the efficiency of each family at its largest pool; a block-size
sweep IOPS and p99 / p99.9 per size; any other factor (queue depth, sync, log device, release)
its judged metric and tails per level, each level against the baseline. The sentences come from
`claims.answer`, the figures from `figures.report_figures`; this module picks which.

    study_headline(sweep, adm, names, include_flagged)   {kind, answers, figure, note}
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.analysis.claims.answer import (COMPARE_NOTE, SCALING_NOTE, answer_compare, answer_scaling,
                                               latency_tails)
from zbench_lib.analysis.claims.conclusions import LINEAR_BAND
from zbench_lib.analysis.data.coverage import cell_status
from zbench_lib.analysis.data.sweep_data import LAYOUT_COLUMNS, Sweep
from zbench_lib.analysis.figures.report_figures import plot_iops_vs_drives, plot_levels
from zbench_lib.analysis.report.compare_factor import auto_baseline, auto_factor
from zbench_lib.analysis.stats.tables import block_column, compare_table, comparison_by, scaling_table

MARGIN = 0.05               # compare_table's default equivalence margin, named in the note
BLOCK_BASELINE = 16384      # the block-size notebook's default baseline, where the sweep has it


def _block(adm: pd.DataFrame) -> str | None:
    col = block_column(adm)
    return col if col in adm and adm[col].nunique() > 1 else None


def _factor_study(sweep: Sweep, adm: pd.DataFrame, factor: str, baseline, cells) -> dict:
    held, _ = comparison_by(adm, factor)
    cmp = compare_table(adm, "auto", factor, baseline, cells=cells)
    by = list(dict.fromkeys([c for c in ("workload", "direction") if c in adm] + held + [factor]))
    tails = latency_tails(adm, sweep.histograms, by)
    series = "layout" if factor not in LAYOUT_COLUMNS and "layout" in held else None
    workloads = adm["workload"].dropna().unique() if "workload" in adm else []
    subject = str(workloads[0]) if len(workloads) == 1 else "all runs"
    return dict(answers=answer_compare(cmp, tails, subject=subject), figure=plot_levels(adm, factor, tails, series))


def study_headline(sweep: Sweep, adm: pd.DataFrame, include_flagged: bool = False) -> dict:
    """The answer sentences and headline figure of the study the admissible runs `adm` make: scaling
    where a layout's disk count varies, else block size where it varies, else the first factor that
    does (`compare_factor.auto_factor`), whichever notebooks the report runs.

    `kind` is scaling, block, factor or none; `figure` a plotly figure or None.
    """
    out = dict(kind="none", answers=[], figure=None, note=COMPARE_NOTE.format(margin=MARGIN))
    if adm.empty:
        return out
    cells = cell_status(sweep.results, sweep.plan, include_flagged)
    if {"layout", "data_disks"} <= set(adm) and (adm.groupby("layout")["data_disks"].nunique() > 1).any():
        scal = scaling_table(adm, "auto", cells=cells)
        return {**out, "kind": "scaling", "answers": answer_scaling(scal), "figure": plot_iops_vs_drives(adm),
                "note": SCALING_NOTE.format(lo=1 - LINEAR_BAND, hi=1 + LINEAR_BAND)}
    block = _block(adm)
    if block:
        levels = sorted(adm[block].dropna().unique())
        base = BLOCK_BASELINE if BLOCK_BASELINE in levels else levels[-1]
        return {**out, "kind": "block", **_factor_study(sweep, adm, block, base, cells)}
    factor = auto_factor(adm)
    if factor is None:
        return out
    return {**out, "kind": "factor", **_factor_study(sweep, adm, factor, auto_baseline(adm, factor), cells)}
