"""What the first screen of a report says: the answer to the sweep's question and its headline figure.

Each study type has its own (issue 31): a sweep of client VMs on one datastore the aggregate along the client
count, a line per configuration held equal (issue 30); a scaling sweep the throughput against the drives with
the ideal and the model, and the efficiency of each family at its largest pool; a block-size
sweep IOPS and p99 / p99.9 per size; a sync or log-device sweep a bar per configuration with its
interval; a queue-depth sweep the IOPS-p99 curve with both axes labelled; any other factor (release,
numjobs, ...) its judged metric and tails per level, each level against the baseline. The sentences
come from `claims.answer`, the figures from `figures.report_figures`; this module picks which, in
one place: STUDY_TYPES, after the factor the sweep's question names first (`_asked`). A sweep whose load
came from clients also answers how fairly they shared the datastore: a line per workload after the others
(`claims.client_answer`), whatever its study. The analysis
notebooks open with the same answer and figure, each asking for its own study (a `Focus`: the scaling study, or
the factor and baseline the notebook compares).

    study_headline(sweep, adm, include_flagged, focus=Focus())   {kind, answers, figure, note}
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import pandas as pd

from zbench_lib.analysis.claims.answer import (ALL_RUNS, COMPARE_NOTE, SCALING_NOTE, answer_compare, answer_scaling,
                                               latency_tails)
from zbench_lib.analysis.claims.client_answer import FAIRNESS_NOTE, answer_fairness
from zbench_lib.analysis.data.coverage import cell_status
from zbench_lib.analysis.data.columns import LAYOUT_COLUMNS
from zbench_lib.analysis.data.sweep_data import Sweep, data_disks_vary, setting_text
from zbench_lib.analysis.figures.report_figures import (plot_configurations, plot_depth_curve, plot_iops_vs_drives,
                                                        plot_levels)
from zbench_lib.analysis.report.client_section import client_by
from zbench_lib.analysis.report.compare_factor import (Baseline, auto_factor, baseline_choice, level_order,
                                                       question_factor)
from zbench_lib.analysis.stats.fairness import fairness_table, has_clients
from zbench_lib.analysis.stats.linearity import LINEAR_BAND
from zbench_lib.analysis.stats.ratio import equivalence_bounds
from zbench_lib.analysis.stats.tables import block_column, compare_table, comparison_by, scaling_table

MARGIN = 0.05               # compare_table's default equivalence margin, named in the note
BASELINE_SUBJECT = "Baseline"   # the subject of the line that says why the baseline is not the usual level
# A study of durability: what sync writes cost, and what a separate log device (SLOG) gives back.
SYNC_LOG_FACTORS = ("sync", "log", "log_mirror", "logbias")


@dataclass(frozen=True)
class Focus:
    """What a headline answers: the study type `kind` (None: the first of STUDY_TYPES that applies), or the
    `factor` compared and its `baseline` level (None: the study type's own choice), within `margin`."""
    kind: str | None = None
    factor: str | None = None
    baseline: object = None
    margin: float = MARGIN


@dataclass(frozen=True)
class Study:
    """What a headline is built from: the sweep, its admissible runs, the status of its planned cells, and
    what it is asked about."""
    sweep: Sweep
    adm: pd.DataFrame
    cells: pd.DataFrame
    focus: Focus = Focus()

    def chosen(self, factor: str) -> tuple[str, object]:
        """The factor and baseline compared: the focus's where it names them, else `factor` and its baseline."""
        factor = self.focus.factor or factor
        base = self.focus.baseline
        return factor, self.baseline(factor).level if base is None else base

    def baseline(self, factor: str) -> Baseline:
        """`factor`'s baseline as `compare_factor.baseline_choice` picks it, knowing the levels the sweep planned
        (to name a usual level with no admissible run); a block size's as `block_choice`'s (16K)."""
        planned = self.cells[factor].dropna().unique().tolist() if factor in self.cells else []
        return baseline_choice(self.adm, factor, planned, block=factor == block_column(self.adm))


@dataclass(frozen=True)
class StudyType:
    """A kind of study: whether a sweep's admissible runs make one, and its answer and headline figure.

    `build` returns the `answers` (`claims.answer` records), the plotly `figure` and, where it
    differs from COMPARE_NOTE, the `note` that says how to read them.
    """
    kind: str
    applies: Callable[[pd.DataFrame], bool]
    build: Callable[[Study], dict]


def _block(adm: pd.DataFrame) -> str | None:
    col = block_column(adm)
    return col if col in adm and adm[col].nunique() > 1 else None


def _is_scaling(adm: pd.DataFrame) -> bool:
    return data_disks_vary(adm)


def _comparison(study: Study, factor: str, baseline, also=()) -> tuple[list[dict], pd.DataFrame, list[str]]:
    """The answer sentences of a comparison along `factor`, the latency tails behind them (per cell of the
    held-equal columns, those `also` names and the factor), and the columns the comparison holds equal."""
    adm = study.adm
    held, _ = comparison_by(adm, factor)
    cmp = compare_table(adm, "auto", factor, baseline, margin=study.focus.margin, cells=study.cells)
    by = list(dict.fromkeys([c for c in ("workload", "direction") if c in adm] + held + list(also) + [factor]))
    tails = latency_tails(adm, study.sweep.histograms, by)
    workloads = adm["workload"].dropna().unique() if "workload" in adm else []
    subject = str(workloads[0]) if len(workloads) == 1 else ALL_RUNS
    loads = adm["load"].dropna().unique() if "load" in adm else []
    answers = answer_compare(cmp, tails, subject=subject, load=loads[0] if len(loads) == 1 else None)
    return _baseline_line(study, factor, baseline) + answers, tails, held


def _baseline_line(study: Study, factor: str, baseline) -> list[dict]:
    """The answer's first line where the baseline stands in for the usual level, which had no admissible unit to
    be judged with ("stripe had no admissible run: mirror is the baseline"); also where a notebook named the
    stand-in, as `comparison_choice` picks it. Not along sweep_id: two sweeps' baseline is the first sweep."""
    choice = study.baseline(factor) if factor != "sweep_id" else None
    if choice is None or not choice.reason or choice.level != baseline:
        return []
    return [dict(subject=BASELINE_SUBJECT, text=f"{choice.reason} (methods §9).")]


def _levels_study(study: Study, factor: str, baseline) -> dict:
    answers, tails, held = _comparison(study, factor, baseline)
    series = "layout" if factor not in LAYOUT_COLUMNS and "layout" in held else None
    return dict(answers=answers, figure=plot_levels(study.adm, factor, tails, series))


def _scaling(study: Study) -> dict:
    scal = scaling_table(study.adm, "auto", cells=study.cells)
    lo, hi = equivalence_bounds(LINEAR_BAND)
    return dict(answers=answer_scaling(scal), figure=plot_iops_vs_drives(study.adm),
                note=SCALING_NOTE.format(lo=lo, hi=hi))


def _block_study(study: Study) -> dict:
    return _levels_study(study, *study.chosen(block_column(study.adm)))    # 16K where the sweep has it (Study.baseline)


def _is_sync_log(adm: pd.DataFrame) -> bool:
    return auto_factor(adm) in SYNC_LOG_FACTORS


def _sync_log(study: Study) -> dict:
    """Bars, not lines: sync=standard/always and a SLOG or none are settings side by side, not a scale."""
    factor, baseline = study.chosen(auto_factor(study.adm))
    answers, tails, _ = _comparison(study, factor, baseline)
    return dict(answers=answers, figure=plot_configurations(study.adm, factor, level_order(study.adm, factor),
                                                            tails))


def _is_depth(adm: pd.DataFrame) -> bool:
    return auto_factor(adm) == "iodepth" and "lat_p99_ns" in adm


def _depth(study: Study) -> dict:
    """The IOPS-p99 curve, the compare page's own (one builder, one interval): how far depth raises IOPS
    and what each step costs in p99 latency, read off one chart."""
    hue = "layout" if "layout" in study.adm else "workload"       # the line's name, varying or not
    answers, tails, _ = _comparison(study, *study.chosen("iodepth"), also=(hue,))
    return dict(answers=answers, figure=plot_depth_curve(study.adm, tails, hue=hue))


def _factor_study(study: Study) -> dict:
    return _levels_study(study, *study.chosen(auto_factor(study.adm)))


def _is_clients(adm: pd.DataFrame) -> bool:
    return auto_factor(adm) == "clients"


def _clients(study: Study) -> dict:
    """How the aggregate scales from one client to several: each count against the fewest, a line per
    configuration held equal (sync standard, always) in the figure."""
    return _levels_study(study, *study.chosen("clients"))


# The first type whose `applies` holds names the study: clients where the client count varies (only a sweep of
# client VMs has one, and its question is theirs, whatever else it varies), else scaling where a layout's disk
# count varies, else the type of the factor the sweep's question names first (`_asked`), else block size where it
# varies, else sync or log device, else queue depth, else the first factor that varies
# (`compare_factor.auto_factor`). A new study type is one record here.
STUDY_TYPES = (
    StudyType("clients", _is_clients, _clients),
    StudyType("scaling", _is_scaling, _scaling),
    StudyType("block", lambda adm: _block(adm) is not None, _block_study),
    StudyType("sync-log", _is_sync_log, _sync_log),
    StudyType("depth", _is_depth, _depth),
    StudyType("factor", lambda adm: auto_factor(adm) is not None, _factor_study),
)


def _kind_of_factor(adm: pd.DataFrame, factor: str) -> str:
    """The study type a comparison along `factor` makes: the client count, block size, sync or log device, queue
    depth (where the runs have p99), else a factor's levels."""
    if factor == "clients":
        return "clients"
    if factor == block_column(adm):
        return "block"
    if factor in SYNC_LOG_FACTORS:
        return "sync-log"
    return "depth" if factor == "iodepth" and "lat_p99_ns" in adm else "factor"


def _asked(sweep: Sweep, adm: pd.DataFrame, focus: Focus) -> Focus:
    """The focus the spec's question gives where the caller asked for none: the factor the question names first
    (`compare_factor.question_factor`: the demo's "how do stripe, mirror and raidz1 compare ... with 8k versus 64k
    volblocksize?" asks about layouts, though block size comes before layout in STUDY_TYPES). A sweep of clients
    and a scaling sweep keep their own study: their answer holds every client count, every layout's drives."""
    if focus.kind or focus.factor or _is_clients(adm) or _is_scaling(adm):
        return focus
    factor = question_factor(str(sweep.spec.get("question") or ""), adm)
    return replace(focus, factor=factor) if factor else focus


def _study_type(adm: pd.DataFrame, focus: Focus) -> StudyType | None:
    """The focus's study type (a named factor makes its own), else the first of STUDY_TYPES that applies."""
    if focus.factor:          # the caller checked that the factor varies: no `applies` of an auto factor
        kind = _kind_of_factor(adm, focus.factor)
        return next(t for t in STUDY_TYPES if t.kind == kind)
    return next((t for t in STUDY_TYPES if (focus.kind in (None, t.kind)) and t.applies(adm)), None)


def study_headline(sweep: Sweep, adm: pd.DataFrame, include_flagged: bool = False, focus: Focus = Focus()) -> dict:
    """The answer sentences and headline figure of the study the admissible runs `adm` make (the one `focus` asks
    for, else the factor the sweep's question names first, else the first of STUDY_TYPES that applies), whichever
    notebooks the report runs.

    `kind` is the study type's (scaling, block, sync-log, depth, factor) or none; `figure` a plotly figure or None.
    """
    out = dict(kind="none", answers=[], figure=None, note=COMPARE_NOTE.format(margin=focus.margin))
    if adm.empty:
        return out
    focus = _asked(sweep, adm, focus)
    study_type = _study_type(adm, focus)
    if study_type is None:
        return out
    study = Study(sweep, adm, cell_status(sweep.results, sweep.plan, include_flagged), focus)
    built = {**out, "kind": study_type.kind, **study_type.build(study)}
    return _with_fairness({**built, "answers": _at_load(built["answers"], adm)}, study)


def _with_fairness(built: dict, study: Study) -> dict:
    """A sweep whose load came from clients asks how fairly they shared the datastore: its fairness lines after
    the answer's others, and the note says how to read them. Not for two sweeps compared: the clients' own
    files are the first sweep's."""
    adm, sweep = study.adm, study.sweep
    if not has_clients(adm) or ("sweep_id" in adm and adm["sweep_id"].nunique() > 1):
        return built
    by = client_by(adm)
    lines = answer_fairness(fairness_table(adm, sweep.clients, sweep.histograms, by, sweep.client_histograms), by)
    return {**built, "answers": built["answers"] + lines, "note": f"{built['note']} {FAIRNESS_NOTE}"} if lines \
        else built


def _at_load(answers: list[dict], adm: pd.DataFrame) -> list[dict]:
    """Answers of a sweep with the load factor at one level, each saying the load its numbers were measured
    at (with several levels the load is held equal, and each answer's subject names its own; methods §21)."""
    if "load" not in adm or adm["load"].nunique() != 1:
        return answers
    at = setting_text("load", adm["load"].dropna().iloc[0])
    return [a if a["subject"] == BASELINE_SUBJECT else {**a, "subject": f"{a['subject']}, {at}"} for a in answers]
