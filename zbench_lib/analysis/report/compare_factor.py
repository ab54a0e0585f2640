"""Which factor a single sweep's comparison takes by default, and against which level.

The client count where a sweep varies it, else the OpenZFS release, else the layout, else the first other
factor that varies, in the order below (the questions users ask most first; the workload's own settings, I/O
size and queue depth, last; a vdev's width and count only where the data disks stay the same, else the scaling
notebook's); the baseline is ZFS's default where the factor has one (sync=standard, fs none, access local), the
bare disks where a sweep has them (layout raw), else the first level (layouts in their usual order, numbers
smallest first), as long as it has admissible units to be judged: else the level with the most
(`baseline_choice`).

The report's first screen takes the factor the sweep's `question:` names first, by its name or one of its levels,
where the question names one (`question_factor`).

    comparison_choice(df, factor, baseline)   the compare notebook's factor and baseline ("auto" or named)
    block_choice(df, baseline)                the block-size notebook's column and baseline (16K, else the largest)
    question_factor(question, df)             the varying factor a spec's question names first (None: none)
    baseline_choice(df, factor, planned)      the baseline level, and why where it is not the usual one
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from zbench_lib.analysis.data.columns import LABEL_PREFIX, MODULE_PARAM_COLUMNS
from zbench_lib.analysis.data.coverage import MIN_UNITS
from zbench_lib.analysis.data.replication import pool_replicates, resolve_unit
from zbench_lib.analysis.data.sweep_data import (AUX_VDEVS, data_disks_vary, parse_level, setting_text,
                                                 varying_columns)
from zbench_lib.analysis.figures.plot_base import LAYOUT_ORDER
from zbench_lib.analysis.stats.tables import block_column, comparison_by
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size

# clients first: only a sweep whose load came from client VMs has the column, and where it varies the sweep asks
# how the aggregate scales with clients (issue 30); its pool settings (sync, layout) are then the held groups.
# The pool's shape (width, vdevs) and sector size (ashift) after the layout, the I/O size (bs_bytes) first of the
# workload's settings: a sweep of any of them alone had no analysis (issue 52 item 8).
COMPARE_ORDER = ("clients", "zfs", "layout", "width", "vdevs", "ashift", "sync", "log", "log_mirror", "cache",
                 "special", "special_small_blocks", "model", "log_model", "cache_model", "special_model", "fs",
                 "access", "fill", "logbias", "compression", "primarycache", "secondarycache", "checksum", "copies",
                 "atime", *MODULE_PARAM_COLUMNS, "bs_bytes", "iodepth", "numjobs")  # the workload's settings last
# raw: ZFS layouts beside the bare disks are read as a share of what the disks give
BASE_LEVEL = {"sync": "standard", "logbias": "latency", "fs": "none", "access": "local", "fill": "whole",
              "layout": "raw"}


WORKLOAD_SETTINGS = ("bs_bytes", "iodepth", "numjobs")
SHAPE_FACTORS = ("width", "vdevs")


def _varies(df: pd.DataFrame, column: str) -> bool:
    # A workload's own depth and I/O size differ between workloads (8 for random reads, 4 for sequential; 4K
    # and 1M): each is a factor only where it varies within one workload.
    if column in WORKLOAD_SETTINGS and "workload" in df:
        return bool((df.groupby("workload")[column].nunique() > 1).any())
    # Where a layout's data disks vary, the scaling notebook's families set each width and vdev count against
    # the layout's smallest pool; a shape factor is compared on its own only where the data disks stay the same
    # (2-way against 3-way mirrors of the same vdevs).
    if column in SHAPE_FACTORS and data_disks_vary(df):
        return False
    return df[column].nunique() > 1


def _factors(df: pd.DataFrame) -> list[str]:
    """The factors of COMPARE_ORDER that take two or more values in `df`, in that order; an imported sweep's user
    labels (a kernel, a branch) come before the workload's own settings."""
    labels = sorted(c for c in df.columns if str(c).startswith(LABEL_PREFIX))
    order = [c for c in COMPARE_ORDER if c not in WORKLOAD_SETTINGS] + labels + list(WORKLOAD_SETTINGS)
    return [c for c in order if c in df and _varies(df, c)]


def auto_factor(df: pd.DataFrame) -> str | None:
    """The first factor of COMPARE_ORDER that takes two or more values in `df` (None: none does)."""
    return next(iter(_factors(df)), None)


# What a question may call a factor beside its column's name and its levels: an auxiliary vdev by its role
# ("a fast SLOG", "an L2ARC"), the queue depth and the I/O size (bs) by their plain names.
QUESTION_WORDS = {**{c: (role,) for c, role in AUX_VDEVS.items()}, "iodepth": ("depth",), "bs_bytes": ("I/O size",)}


def _question_words(df: pd.DataFrame, column: str) -> list[str]:
    """What a question names `column` by: its name (volblocksize for volblocksize_bytes, kernel for label_kernel),
    QUESTION_WORDS, and each level as a spec writes it (stripe, 8K, always). A level without a letter (4, 0.5,
    2.3.2) is left out: bare numbers are everywhere in a question's prose (four disks, 4k reads)."""
    name = column.removeprefix(LABEL_PREFIX).removesuffix("_bytes")
    levels = [format_size(int(v)) if column.endswith("_bytes") else str(v) for v in _levels(df, column)]
    return [name, *QUESTION_WORDS.get(column, ()), *(v for v in levels if re.search("[a-z]", v, re.IGNORECASE))]


def _first_mention(question: str, words: list[str]) -> int | None:
    """Where the first of `words` stands in `question`, as a whole word (a plural too: mirrors), case ignored."""
    hits = (re.search(rf"(?<!\w){re.escape(w)}s?(?!\w)", question, re.IGNORECASE) for w in words)
    return min((m.start() for m in hits if m), default=None)


def question_factor(question: str, df: pd.DataFrame) -> str | None:
    """The factor that varies in `df` which `question` names first, by its name or one of its levels
    (`_question_words`); None where it names none. "How do stripe, mirror and raidz1 compare ... with 8k versus
    64k volblocksize?" names the layout first: the demo asks about layouts, not block sizes. Where two factors
    are named at one place, the block size comes first, then COMPARE_ORDER's."""
    block = _block(df)
    at = {c: _first_mention(question, _question_words(df, c)) for c in [block] * bool(block) + _factors(df)}
    named = {c: i for c, i in at.items() if i is not None}
    return min(named, key=named.get) if named else None


def _levels(df: pd.DataFrame, factor: str) -> list:
    # plain Python values: a numpy scalar printed as np.int64(1) in the notebook's heading
    return [v.item() if hasattr(v, "item") else v for v in df[factor].dropna().unique()]


def _level_key(v) -> tuple:
    """Layouts in their usual order, then numbers smallest first, then the rest by name."""
    if v in LAYOUT_ORDER:
        return (0, LAYOUT_ORDER.index(v), "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (1, float(v), "")
    return (2, 0.0, str(v))


def _usual(levels: list, factor: str, block: bool = False):
    """The usual baseline of `levels`: ZFS's default where the factor has one, the bare disks, else the first
    level; a block size's (`block`) 16K where the sweep has it, else the largest."""
    if block:
        return BLOCK_BASELINE if BLOCK_BASELINE in levels else max(levels)
    if BASE_LEVEL.get(factor) in levels:
        return BASE_LEVEL[factor]
    return sorted(levels, key=_level_key)[0]


def _judged_units(df: pd.DataFrame, factor: str) -> tuple[pd.Series, str]:
    """Per level of `factor`, its units in the cells where it has the MIN_UNITS an interval needs (a cell: one
    group of what a comparison along `factor` holds equal), and the unit: pools where pools were replicated,
    else runs (`replication.resolve_unit`), as a comparison counts them."""
    held, _ = comparison_by(df, factor)
    keys = list(dict.fromkeys([c for c in ("workload", "direction") if c in df] + held + [factor]))
    unit = resolve_unit(df, keys)
    if unit == "pool":
        units = pool_replicates(df, keys).set_index(keys)["n_pools"]
    else:
        runs = df["run_id"] if "run_id" in df else pd.Series(df.index, index=df.index)
        units = df.assign(_run=runs).groupby(keys, dropna=False)["_run"].nunique()
    judged = units[units >= MIN_UNITS].groupby(level=factor).sum()
    return judged.rename(index=lambda v: v.item() if hasattr(v, "item") else v), unit


@dataclass(frozen=True)
class Baseline:
    """The level a comparison takes as its baseline; where it is not the `usual` level, the `reason`, as a
    page says it: "stripe had no admissible run: mirror is the baseline"."""
    level: object
    usual: object
    reason: str = ""


def baseline_choice(df: pd.DataFrame, factor: str, planned=(), block: bool = False) -> Baseline:
    """The usual baseline (`_usual`) where it has units a comparison can judge (MIN_UNITS in a cell), else the
    level with the most such units, then the usual order: a baseline without them left every comparison
    "not judged" while two measured levels were never compared (the demo's stripe, issue 52). Where no level
    has such units, the usual one of the levels `df` has. `df` holds the estimate's runs (`select_admissible`:
    the admissible ones, or all with include_flagged); `planned` are the levels the sweep planned, so that a
    usual level with no admissible run is named; `block` takes the block size's usual (`block_choice`)."""
    present = _levels(df, factor)
    usual = _usual(present + [v for v in planned if v not in present], factor, block)
    units, unit = _judged_units(df, factor)
    if units.get(usual, 0) > 0 or (usual in present and units.empty):
        return Baseline(usual, usual)
    level = min(units.index, key=lambda v: (-units[v], _level_key(v))) if len(units) else \
        _usual(present, factor, block)
    why = "had no admissible run" if usual not in present else \
        f"had fewer than {MIN_UNITS} admissible {unit}s in each cell (an interval needs {MIN_UNITS})"
    return Baseline(level, usual, f"{setting_text(factor, usual)} {why}: {setting_text(factor, level)} is the baseline")


def auto_baseline(df: pd.DataFrame, factor: str):
    """The level others are compared with along `factor` (`baseline_choice`)."""
    return baseline_choice(df, factor).level


def level_order(df: pd.DataFrame, factor: str) -> list:
    """The factor's levels as a figure lists them: the baseline first (`auto_baseline`), the others after
    it in the order above (sync standard, always, disabled; no log device, then one)."""
    base = auto_baseline(df, factor)
    return [base] + sorted((v for v in _levels(df, factor) if v != base), key=_level_key)


def comparison_choice(df: pd.DataFrame, factor: str = "auto", baseline: str = "auto") -> tuple[str, object]:
    """The factor a comparison takes and its baseline level: as named, else `auto_factor` (the sweeps themselves,
    `sweep_id`, when the rows hold two; the block size where nothing else varies) and `auto_baseline` (the first
    sweep's id along sweep_id; along the block size `block_choice`'s, as the report's block-size answer has it)."""
    two_sweeps = "sweep_id" in df and df["sweep_id"].nunique() > 1
    chosen = factor if factor != "auto" else "sweep_id" if two_sweeps else auto_factor(df) or _block(df) or "layout"
    if chosen not in df or df[chosen].nunique() < 2:
        raise ConfigError(f"factor {chosen!r} takes fewer than two values in these results; "
                          f"columns that vary: {varying_columns(df)}")
    if baseline != "auto":
        return chosen, parse_level(df, chosen, baseline)
    if chosen == "sweep_id":
        return chosen, pd.unique(df["sweep_id"])[0]
    if factor == "auto" and chosen == _block(df):
        return block_choice(df)
    return chosen, auto_baseline(df, chosen)


def _block(df: pd.DataFrame) -> str | None:
    """The block size where it is all a sweep varies: a latency-vs-load sweep's (its loads are a curve, which
    the volblocksize notebook would pool, so the compare notebook compares its block sizes at each load)."""
    block = block_column(df)
    return block if block in df and df[block].nunique() > 1 else None


BLOCK_BASELINE = 16384      # the block size others are compared with where a sweep has it: OpenZFS's default


def block_choice(df: pd.DataFrame, baseline: str = "auto") -> tuple[str, int]:
    """The block-size column a sweep varies (volblocksize, else recordsize) and its baseline: as named, else
    16K where the sweep has it, else the largest size."""
    block = block_column(df)
    if block not in df or df[block].nunique() < 2:
        raise ConfigError("these results do not vary volblocksize or recordsize: use analysis-scaling or "
                          "analysis-compare for this sweep")
    if baseline != "auto":
        return block, parse_level(df, block, baseline)
    return block, int(baseline_choice(df, block, block=True).level)
