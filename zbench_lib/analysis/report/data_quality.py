"""What was lost, on the first screen: the data-quality banner (issue 52 item 2; docs/methods.md §8.1).

A report used to say "15 flagged result rows (excluded)" and "host_contention 3" in small grey print, and
nothing about the cells left without an interval or how to measure them again. `DataQuality` holds what a
reader needs, from the sweep's results and plan: how many runs were excluded and why, in the truth checks'
own words (`measure/truth.py`: each check's `meaning`), which planned cells have no interval because runs
were lost, and the command that measures them again. One renderer per surface says it: `quality_html` (the
report's index page), `quality_markdown` (the analysis notebooks' first output) and `quality_text` (the end
of `zbench demo`, `zbench sweep` and `zbench report`). Nothing lost gives one quiet line.

Which command: a sweep interrupted before its planned runs were recorded is completed by
`zbench sweep SPEC --resume DIR` (those runs are first attempts, so they count). A run recorded and then
excluded cannot be replaced inside its sweep: resuming a finished sweep runs nothing (every cell's
repetition rule is done or gave up) and a run added to replace one stays out of the estimate (methods §8),
so only a new sweep of the spec measures such a cell afresh (`zbench sweep DIR/spec.yaml`); no command
reruns some cells alone.

    data_quality(sweep, include_flagged, base)     the record
    quality_html(q) / quality_markdown(q) / quality_text(q)
    sweep_quality_text(sweep_dir, ...)             quality_text of a sweep directory ('' without results)
"""

from __future__ import annotations

import html
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from zbench_lib.analysis.data.catalog import IMPORTED
from zbench_lib.analysis.data.coverage import MIN_UNITS, cell_status
from zbench_lib.analysis.data.flags import FLAG_MEANINGS, admissible_mask, raised_by_kind
from zbench_lib.analysis.data.sweep_data import Sweep, load_sweep, setting_text, varying_columns
from zbench_lib.analysis.report.methods_page import methods_links
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.measure.judging import INVALIDATES

MAX_NAMED = 8           # cells named in the banner; the notebooks' planned-cells table holds them all
UNDECLARED = "a check this version of zbench does not declare"
NEW_SWEEP = ("a new sweep of the whole spec: a run excluded here cannot be replaced in this sweep, since a resume "
             "of a finished sweep runs nothing; to measure only these cells, narrow the spec's factors to them")


@dataclass(frozen=True)
class Reason:
    """One invalidating check and the runs it excluded (a run with two such flags counts under both)."""
    flag: str               # the check's name: host_contention
    words: str              # what its flag means, as the check declares it
    runs: int


@dataclass(frozen=True)
class Rerun:
    """A command that measures lost runs again: what it is for, the command, and how it does it."""
    lead: str               # "To measure these cells again"
    command: str
    does: str


@dataclass(frozen=True)
class DataQuality:
    """What a sweep lost: runs excluded and why, cells without an interval, and how to measure them again."""
    runs: int                            # every run recorded, replacements included
    excluded: int                        # runs with a check raised that invalidates them
    reasons: tuple[Reason, ...] = ()
    included: bool = False               # the analysis keeps the excluded runs (--include-flagged)
    replacements: int = 0                # runs added to replace excluded runs of the cells without an interval
    cells: int = 0                       # planned cells (cell × direction)
    no_interval: tuple[str, ...] = ()    # cells with no interval because runs were lost, by their configuration
    by_design: int = 0                   # cells planned with fewer than 2 units: no interval whatever happened
    missing: int = 0                     # planned runs not recorded (an interrupted sweep)
    rerun: tuple[Rerun, ...] = ()
    no_rerun: str = ""                   # why no command is given (synthetic, imported, several sweeps)

    @property
    def lost(self) -> bool:
        return bool(self.excluded or self.no_interval or self.missing)


def data_quality(sweep: Sweep, include_flagged: bool = False, base: Path = REPO_ROOT) -> DataQuality:
    """The record of `sweep`'s results and plan; paths in commands relative to `base` where they are under it
    (the repository root for pages and notebooks, the working directory for a terminal)."""
    df = sweep.results
    key = df["run_id"] if "run_id" in df else pd.Series(range(len(df)), index=df.index)
    cells = cell_status(df, sweep.plan, include_flagged)
    lost, by_design, missing = _cells(cells)
    q = DataQuality(runs=int(key.nunique()), excluded=int((~admissible_mask(df)).groupby(key).any().sum()),
                    reasons=_reasons(df, key), included=include_flagged,
                    replacements=int(cells.loc[lost, "replacements"].sum()) if lost.any() else 0,
                    cells=len(cells), no_interval=tuple(_names(cells, lost)), by_design=int(by_design.sum()),
                    missing=int(missing.sum()))
    if not q.lost:
        return q
    why_not = _no_rerun(sweep)
    if why_not:
        return replace(q, no_rerun=why_not)
    recorded = bool((lost & ~_short(cells)).any())     # a lost cell whose planned runs were all recorded
    return replace(q, rerun=tuple(_reruns(Path(sweep.path), base, q.missing, recorded)))


def sweep_quality_text(sweep_dir, include_flagged: bool = False, base: Path = REPO_ROOT) -> str:
    """`quality_text` of the sweep in `sweep_dir`, for the end of `zbench demo`, `sweep` and `report`; '' for a
    sweep that recorded no results table (nothing measured, nothing lost to say)."""
    try:
        sweep = load_sweep(sweep_dir)
    except ConfigError:
        return ""
    return quality_text(data_quality(sweep, include_flagged, base))


def _reasons(df: pd.DataFrame, key: pd.Series) -> tuple[Reason, ...]:
    """Each invalidating check raised, with its runs, most runs first."""
    per_run = raised_by_kind(df, INVALIDATES).groupby(key).any().sum()
    hits = sorted(((c, int(n)) for c, n in per_run.items() if n), key=lambda cn: -cn[1])
    return tuple(Reason(c.removeprefix("flag_"), FLAG_MEANINGS.get(c, UNDECLARED), n) for c, n in hits)


def _short(cells: pd.DataFrame) -> pd.Series:
    """Cells with planned runs not recorded (the planned count where the plan has one)."""
    if cells.empty or "runs_planned" not in cells:
        return pd.Series(False, index=cells.index)
    return cells["runs_planned"].fillna(0).gt(cells["runs"])


def _cells(cells: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per row of `cell_status`: lost (no interval, though it was planned with enough units), by design (planned
    with fewer than MIN_UNITS units: a lost run is not why it has none) and its planned runs not recorded."""
    if cells.empty:
        empty = pd.Series(dtype=bool)
        return empty, empty, pd.Series(dtype=int)
    planned = cells["runs"]
    if "runs_planned" in cells:
        planned = cells["runs_planned"].fillna(0).clip(lower=cells["runs"])
    units = cells["pools"] if (cells["unit"] == "pool").any() else planned
    by_design = ~cells["judged"] & units.lt(MIN_UNITS)
    # a cell's directions share its runs: its missing runs are counted on its first row only
    ids = cells["cell_id" if "cell_id" in cells else "config_id"]
    missing = (planned - cells["runs"]).where(~ids.duplicated(), 0)
    return ~cells["judged"] & ~by_design, by_design, missing


def _names(cells: pd.DataFrame, which: pd.Series) -> list[str]:
    """The cells of `which` as a reader names them: what varies between the planned cells, the workload last
    ("stripe 8K randwrite"), the direction where a workload has two."""
    if cells.empty or not which.any():
        return []
    config = varying_columns(cells, exclude=("cell_id", "workload", "direction"))
    tail = [c for c in ("workload",) if c in cells]
    if "direction" in cells and tail and (cells.groupby("workload")["direction"].nunique() > 1).any():
        tail.append("direction")
    return [" ".join(setting_text(c, r[c]) for c in config + tail) for r in cells[which].to_dict("records")]


def _no_rerun(sweep: Sweep) -> str:
    """Why no command can measure this sweep's cells again, or '' where `zbench sweep` can."""
    df = sweep.results
    if sweep.spec.get("synthetic") or ("synthetic" in df and df["synthetic"].fillna(False).astype(bool).any()):
        return "synthetic data: made up, nothing to measure again"
    if (sweep.provenance or {}).get("origin") == IMPORTED:
        return "imported fio results: measure again where they were measured, then import again"
    if "sweep_id" in df and df["sweep_id"].nunique() > 1:
        return "several sweeps read as one: each sweep's own report gives the command that reruns its cells"
    if not (Path(sweep.path) / "spec.yaml").is_file():
        return f"{sweep.path} holds no spec.yaml to run again"
    return ""


def _reruns(path: Path, base: Path, missing: int, recorded_lost: bool) -> list[Rerun]:
    """Resume where planned runs are missing; a new sweep where a cell lost runs that were all recorded."""
    where = _shown(path, base)
    spec = shlex.quote(f"{where}/spec.yaml")
    out = []
    if missing:
        runs = f"{missing} planned run{'s' * (missing > 1)}"
        out.append(Rerun(f"To run the {runs} not recorded", f"zbench sweep {spec} --resume {shlex.quote(where)}",
                         "it completes the interrupted sweep, and runs made now are first attempts: they count"))
    if recorded_lost:
        out.append(Rerun("To measure these cells again", f"zbench sweep {spec}", NEW_SWEEP))
    return out


def _shown(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(Path(base).resolve()).as_posix()
    except ValueError:
        return path.as_posix()


# -- what each surface says: the same parts, in its own markup ---------------------------------------------

def _title(q: DataQuality) -> str:
    missing = f"{q.missing} planned run{'s' * (q.missing > 1)} not recorded" if q.missing else ""
    if not q.excluded:
        return missing or f"All {q.runs} runs admissible"
    what = "analysed with a flag that would exclude them (--include-flagged)" if q.included else "excluded"
    return f"{q.excluded} of {q.runs} runs {what}" + (f", {missing}" if missing else "")


def _heading(q: DataQuality) -> str:
    """The banner's first line: runs lost, or kept in the analysis with their flags (--include-flagged)."""
    return f"{'Runs flagged' if q.included and q.excluded else 'Runs lost'}: {_title(q)}."


def _items(q: DataQuality) -> list[str]:
    """The banner's sentences, without markup: each reason, the replacements, the cells."""
    items = [f"{r.runs} run{'s' * (r.runs > 1)} ({r.flag}): {r.words}." for r in q.reasons]
    if not q.no_interval:
        return items + ([_all_judged(q)] if q.cells else [])
    named = ", ".join(q.no_interval[:MAX_NAMED]) + \
        (f" and {len(q.no_interval) - MAX_NAMED} more" if len(q.no_interval) > MAX_NAMED else "")
    one = len(q.no_interval) == 1
    items.append(f"{len(q.no_interval)} of {q.cells} planned cells {'has' if one else 'have'} no interval: {named}.")
    if q.replacements:      # why a cell whose excluded runs were replaced still has none
        items.append(f"{'Its' if one else 'Their'} {q.replacements} replacement run{'s' * (q.replacements > 1)} "
                     "stay out of the estimate: a cell's estimate is its first attempts (methods §8).")
    if q.by_design:
        items.append(f"{q.by_design} more {_design_cells(q)}.")
    return items


def _all_judged(q: DataQuality) -> str:
    if not q.by_design:
        return "Every planned cell still has its interval."
    return f"Every cell planned with two or more units has its interval; {q.by_design} {_design_cells(q)}."


def _design_cells(q: DataQuality) -> str:
    """Cells no lost run explains: one unit planned gives no interval whatever happens."""
    one = q.by_design == 1
    return f"cell{'' if one else 's'} planned with one unit ha{'s' if one else 've'} none by design (plan more " \
        "runs or pools)"


def _quiet(q: DataQuality) -> str:
    """The one line of a sweep that lost nothing."""
    cells = f"; {q.by_design} of {q.cells} {_design_cells(q)}" if q.by_design else ""
    return f"{_title(q)}{cells}."


def quality_text(q: DataQuality) -> str:
    """The banner for a terminal: a title line, an indented line per sentence, each command on its own line."""
    if not q.lost:
        return _quiet(q)
    lines = [_heading(q)] + [f"  {s}" for s in _items(q)]
    for r in q.rerun:
        lines += [f"  {r.lead}: {r.command}", f"    ({r.does})"]
    if q.no_rerun:
        lines.append(f"  No rerun command: {q.no_rerun}.")
    return "\n".join(lines)


def quality_markdown(q: DataQuality, escape=lambda s: s) -> str:
    """The banner as Markdown (`escape` makes text literal: `notebook_sections.md_escape`), a quote block the
    notebook shows before the answer; the quiet line in small print."""
    if not q.lost:
        return f"<small>{escape(_quiet(q))}</small>"
    lines = [f"> **{escape(_heading(q))}**", ">"] + [f"> - {escape(s)}" for s in _items(q)]
    for r in q.rerun:
        lines.append(f"> - {escape(r.lead)}: `{r.command}` ({escape(r.does)}).")
    if q.no_rerun:
        lines.append(f"> - No rerun command: {escape(q.no_rerun)}.")
    return "\n".join(lines)


def quality_html(q: DataQuality) -> str:
    """The banner for the report's index page: a boxed section, or the quiet line as a note."""
    if not q.lost:
        return f'<p class="note" id="data-quality">{html.escape(_quiet(q))}</p>'
    items = [f"<li>{methods_links(s)}</li>" for s in _items(q)]
    items += [f"<li>{html.escape(r.lead)}: <code>{html.escape(r.command)}</code> ({methods_links(r.does)}).</li>"
              for r in q.rerun]
    if q.no_rerun:
        items.append(f"<li>No rerun command: {html.escape(q.no_rerun)}.</li>")
    return (f'<section id="data-quality" class="data-quality"><p><strong>{html.escape(_heading(q))}</strong></p>'
            f'<ul>{"".join(items)}</ul></section>')
