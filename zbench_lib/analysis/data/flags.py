"""Truth-check flags as the analysis reads them: True, False or None (docs/methods.md §7).

`flag_<check>` is True (raised), False (judged and passed) or None ("not judged": the
check could not be made; the `not_judged` text column says why, as "check: reason;
check: reason"). What a raised flag means is the check's kind, declared once in
`measure/truth.py` (`TRUTH_CHECKS`): a flag that *invalidates* the run excludes it (the
measurement did not measure the system under test); a flag that *describes* it keeps it,
counted beside the estimate. None never excludes and never reads as passed. Stored values
may arrive as bools, None, NaN or the strings of a CSV; `tristate` turns them all into
pandas' nullable boolean.

The primary estimate of a cell uses its admissible first attempts: a run added to replace
an excluded one (`replacement`, from the sweep's events) enters only a sensitivity line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from zbench_lib.measure.fio_parse import COLUMNS as FIO_COLUMNS
from zbench_lib.measure.judging import DESCRIBES, INVALIDATES
from zbench_lib.measure.truth import TRUTH_CHECKS, kind_of
from zbench_lib.measure.until_steady import FIRST_WINDOW_METRICS

FLAG_MEANINGS = {c.column: c.meaning for c in TRUTH_CHECKS}
_TRUE, _FALSE = ("true", "1", "1.0", "yes"), ("false", "0", "0.0", "no")


def flag_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("flag_")]


def tristate(s: pd.Series) -> pd.Series:
    """A flag column as nullable boolean: True, False, or <NA> (not judged).

    Examples
    --------
    >>> tristate(pd.Series([True, None, "False", "", float("nan"), 1.0])).tolist()
    [True, <NA>, False, <NA>, <NA>, True]
    """
    if s.dtype == "boolean":
        return s
    if s.dtype == bool:
        return s.astype("boolean")
    text = s.astype(str).str.strip().str.lower()
    out = pd.Series(pd.NA, index=s.index, dtype="boolean")
    out[text.isin(_TRUE)] = True
    out[text.isin(_FALSE)] = False
    return out


def raised_flags(df: pd.DataFrame) -> pd.DataFrame:
    """Plain booleans per flag column: True only where the flag is True (None is not raised)."""
    return pd.DataFrame({c: tristate(df[c]).fillna(False).astype(bool) for c in flag_columns(df)},
                        index=df.index)


def _column_kind(column: str, fault_study: pd.Series) -> pd.Series:
    """The kind of a flag column per row (device_lost's depends on the row's fault study).

    A flag no check of this version declares is read as invalidating, as every flag was before.
    """
    name = column.removeprefix("flag_")
    try:
        inside, outside = kind_of(name, True), kind_of(name, False)
    except KeyError:
        inside = outside = INVALIDATES
    return pd.Series(np.where(fault_study.to_numpy(bool), inside, outside), index=fault_study.index)


def _of_kind(df: pd.DataFrame, hits: pd.DataFrame, kind: str) -> pd.DataFrame:
    """`hits` (a boolean frame over flag columns) kept only where the flag is of `kind` for that row."""
    study = tristate(df["fault_study"]).fillna(False) if "fault_study" in df else pd.Series(False, index=df.index)
    return pd.DataFrame({c: hits[c] & _column_kind(c, study).eq(kind) for c in hits.columns}, index=df.index)


def raised_by_kind(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """`raised_flags` kept only where the flag is of `kind` (INVALIDATES or DESCRIBES) for that row."""
    return _of_kind(df, raised_flags(df), kind)


def kind_label(column: str) -> str:
    """A flag column's declared kind in words, for tables: 'describes', 'invalidates (describes in a fault study)'."""
    check = next((c for c in TRUTH_CHECKS if c.column == column), None)
    if check is None:
        return f"{INVALIDATES} (no check of this version declares it)"
    return check.kind + (f" ({check.in_fault_study} in a fault study)" if check.in_fault_study else "")


def admissible_mask(df: pd.DataFrame) -> pd.Series:
    """True for rows with no invalidating flag raised (describing flags never exclude).

    The flag columns decide, so a dataset written before flag kinds is read by today's rules;
    a table with no flag column falls back on its `flagged` column.
    """
    if flag_columns(df):
        return ~raised_by_kind(df, INVALIDATES).any(axis=1)
    if "flagged" in df:
        return ~tristate(df["flagged"]).fillna(False).astype(bool)
    return pd.Series(True, index=df.index)


def described_mask(df: pd.DataFrame) -> pd.Series:
    """True for rows with a describing flag raised (kept in the estimate, reported beside it)."""
    return raised_by_kind(df, DESCRIBES).any(axis=1)


def replacement_mask(df: pd.DataFrame) -> pd.Series:
    """True for runs added to replace an excluded run (`replacement`; absent: none)."""
    if "replacement" not in df:
        return pd.Series(False, index=df.index)
    return tristate(df["replacement"]).fillna(False).astype(bool)


def _names(raised: pd.DataFrame, sep: str = ",") -> pd.Series:
    """'a,b' per row: the names of the flag columns True in `raised`."""
    names = pd.Series("", index=raised.index)
    for c in raised.columns:                         # vectorised: 100k-row tables stay quick
        hit = raised[c]
        names = names.where(~hit, names + np.where(names == "", "", sep) + c[5:])
    return names


def normalise_flags(df: pd.DataFrame) -> pd.DataFrame:
    """Flag columns as nullable booleans; `flagged`, `truth_flags` and `described_flags` by today's
    kinds (an older dataset named every raised flag there); `not_judged` filled in."""
    for c in flag_columns(df):
        df[c] = tristate(df[c])
    df["flagged"] = ~admissible_mask(df)
    if flag_columns(df):
        df["truth_flags"] = _names(raised_by_kind(df, INVALIDATES))
        df["described_flags"] = _names(raised_by_kind(df, DESCRIBES))
    if "not_judged" not in df:
        fl = flag_columns(df)
        na = df[fl].isna()
        df["not_judged"] = ["; ".join(f"{c[5:]}: not judged" for c in fl if r[c])
                            for r in na.to_dict("records")] if fl else ""
    nj = df["not_judged"].astype(object)
    df["not_judged"] = nj.where(nj.notna(), "").astype(str)
    return df


def _not_judged_reasons(texts: pd.Series, check: str) -> str:
    """The distinct reasons given for `check` in "check: reason; ..." texts, most frequent first."""
    pattern = re.compile(rf"(?:^|;\s*){re.escape(check)}:\s*(.*?)(?=;\s*[a-z_]+:|$)")
    counts: dict[str, int] = {}
    for text, n in texts.value_counts().items():          # few distinct texts, many runs
        for reason in pattern.findall(str(text)):
            counts[reason.strip()] = counts.get(reason.strip(), 0) + int(n)
    return "; ".join(f"{r} ({n})" for r, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def truth_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per check, its kind and the runs where it was raised (True), passed (False) and not judged (None).

    A run with several rows counts once: raised if any row raised it, else passed if any
    row passed it. Row `flagged` counts runs with an invalidating flag raised (excluded),
    admissible runs with every check judged (passed) and admissible runs with some check
    not judged; row `described` counts, among the admissible runs, those with a describing
    flag raised (kept), those whose describing checks all passed and those with one not
    judged. `not_judged_reasons` collects the reasons from the `not_judged` text column.
    """
    key = df["run_id"] if "run_id" in df.columns else pd.Series(np.arange(len(df)), index=df.index)
    total = key.nunique()
    texts = df.groupby(key)["not_judged"].first().fillna("").astype(str) if "not_judged" in df else None
    rows = []
    for col in flag_columns(df):
        v = tristate(df[col])
        t = v.eq(True).fillna(False).groupby(key).any()
        f = v.eq(False).fillna(False).groupby(key).any()
        nj = ~t & ~f
        rows.append(dict(flag=col, kind=kind_label(col), meaning=FLAG_MEANINGS.get(col, ""), raised=int(t.sum()),
                         passed=int((~t & f).sum()), not_judged=int(nj.sum()), runs=total,
                         share_raised=t.sum() / total if total else math.nan,
                         not_judged_reasons=_not_judged_reasons(texts, col[5:]) if texts is not None else ""))
    excluded = (~admissible_mask(df)).groupby(key).any()
    unjudged = _run_any(df, key, lambda d: d[flag_columns(d)].isna() if flag_columns(d) else None)
    described = (described_mask(df).groupby(key).any()) & ~excluded
    unjudged_desc = _run_any(df, key, lambda d: _of_kind(d, d[flag_columns(d)].isna(), DESCRIBES)
                             if flag_columns(d) else None)
    for name, meaning, hit, base, nj in (
            ("flagged", "an invalidating flag raised (run excluded)", excluded, ~excluded, unjudged),
            ("described", "a describing flag raised (run kept, counted beside the estimate)", described,
             ~excluded & ~described, unjudged_desc)):
        rows.append(dict(flag=name, kind="", meaning=meaning, raised=int(hit.sum()), passed=int((base & ~nj).sum()),
                         not_judged=int((base & nj).sum()), runs=total,
                         share_raised=hit.sum() / total if total else math.nan, not_judged_reasons=""))
    return pd.DataFrame(rows)


def _run_any(df: pd.DataFrame, key: pd.Series, frame_of) -> pd.Series:
    """Per run: does any of its rows hold a True in `frame_of(df)` (a boolean frame, or None)?"""
    frame = frame_of(df)
    hit = frame.any(axis=1) if frame is not None else pd.Series(False, index=df.index)
    return hit.groupby(key).any()


def flagged_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The excluded rows (an invalidating flag raised): identifying columns, the invalidating flags
    raised (`flags`) and any describing ones (`described`)."""
    f = df[~admissible_mask(df)]
    ids = [c for c in ("run_id", "config_id", "rep", "workload", "direction") if c in f.columns]
    out = f[ids].assign(flags=_names(raised_by_kind(f, INVALIDATES), ", "),
                        described=_names(raised_by_kind(f, DESCRIBES), ", "))
    if "not_judged" in f:
        out["not_judged"] = f["not_judged"]
    return out.reset_index(drop=True)


def select_admissible(df: pd.DataFrame, include_flagged: bool = False, replacements: bool = False) -> pd.DataFrame:
    """The runs a primary estimate uses: admissible first attempts.

    A run is admissible when no invalidating flag is raised (all runs are, with
    `include_flagged`); a describing flag or None (not judged; NaN reads the same) never
    excludes it. Runs added to replace excluded ones are left out unless `replacements`:
    they exist because an earlier run was excluded, so they enter only the sensitivity line.
    """
    keep = pd.Series(True, index=df.index) if include_flagged else admissible_mask(df)
    if not replacements:
        keep &= ~replacement_mask(df)
    return df[keep].copy()


SENSITIVITY_KEYS = ("flagged", "replacements", "described", "windows")   # Alternative.key, in the order lines name them
# fio's figures of a run (not its ids or settings): what a first window replaces, or leaves unknown
_FIO_FIGURES = FIO_COLUMNS[FIO_COLUMNS.index("iops"):FIO_COLUMNS.index("sys_cpu_pct") + 1]


@dataclass(frozen=True)
class Alternative:
    """Another selection of runs for a sensitivity line, and the runs it adds or leaves out."""
    key: str                 # sensitivity_<key>_* columns
    label: str               # "replacement runs included"
    runs: pd.DataFrame
    changed: pd.DataFrame    # the rows added to, or left out of, the estimate's runs


def sensitivity_alternatives(df: pd.DataFrame, all_runs: pd.DataFrame) -> list[Alternative]:
    """The selections a sensitivity line recomputes an estimate with, each only when it differs.

    `df` holds the estimate's runs (`select_admissible`), `all_runs` every run. Flagged runs
    (invalidated) included, or excluded when `df` has them; replacement runs included, or
    left out when `df` has them; runs with describing flags left out.
    """
    out = []
    invalid, repl = ~admissible_mask(df), replacement_mask(df)
    if invalid.any():
        out.append(Alternative("flagged", "flagged runs excluded", df[~invalid], df[invalid]))
    else:
        extra = all_runs[~admissible_mask(all_runs)]
        extra = extra[~replacement_mask(extra)] if not repl.any() else extra
        if len(extra):
            out.append(Alternative("flagged", "flagged runs included", pd.concat([df, extra]), extra))
    if repl.any():
        out.append(Alternative("replacements", "replacement runs left out", df[~repl], df[repl]))
    else:
        ok = all_runs if invalid.any() else all_runs[admissible_mask(all_runs)]
        extra = ok[replacement_mask(ok)]
        if len(extra):
            out.append(Alternative("replacements", "replacement runs included", pd.concat([df, extra]), extra))
    described = described_mask(df)
    if described.any():
        out.append(Alternative("described", "runs with describing flags left out", df[~described], df[described]))
    return out + first_windows(df)


def extended_mask(df: pd.DataFrame) -> pd.Series:
    """True for runs measured until steady that took more than one window (`windows`; absent: none)."""
    if "windows" not in df:
        return pd.Series(False, index=df.index)
    return pd.to_numeric(df["windows"], errors="coerce").fillna(1).gt(1)


def first_windows(df: pd.DataFrame) -> list[Alternative]:
    """The estimate from each extended run's first window instead of its last (methods §12.1).

    Measuring until a window is judged steady conditions the result on the steady test: this
    alternative shows what the estimate would have been without that selection. A fio figure
    with no first-window column (`first_window_<m>`, measure/until_steady.py) is unknown (NaN)
    for an extended run here, never its last window's value passed off as the first's.
    """
    extended = extended_mask(df)
    if not extended.any():
        return []
    runs = df.copy()
    for col in (c for c in _FIO_FIGURES if c in runs):
        first = runs[f"first_window_{col}"] if col in FIRST_WINDOW_METRICS and f"first_window_{col}" in runs \
            else pd.Series(np.nan, index=runs.index)
        runs[col] = runs[col].where(~extended, first)
    return [Alternative("windows", "first windows instead of the last (runs extended until steady)",
                        runs, df[extended])]
