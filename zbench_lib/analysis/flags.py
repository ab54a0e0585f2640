"""Truth-check flags as the analysis reads them: True, False or None (docs/methods.md §7).

`flag_<check>` is True (raised: the run is excluded), False (judged and passed) or None
("not judged": the check could not be made; the `not_judged` text column says why, as
"check: reason; check: reason"). A run is admissible iff no flag is True: None never
excludes and never reads as passed. Stored values may arrive as bools, None, NaN or the
strings of a CSV; `tristate` turns them all into pandas' nullable boolean.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

FLAG_MEANINGS = {
    "flag_cache_served": "a disk-read test was served from ARC",
    "flag_no_device_io": "fio, pool and device byte counts disagree (a layer was suspiciously quiet)",
    "flag_write_amplification": "the disks wrote far fewer bytes than fio reported: writes were absorbed "
                                "by memory within the window",
    "flag_read_amplification": "the disks read far more bytes than fio asked for, beyond what block size "
                               "and parity explain",
    "flag_not_steady": "never reached steady state",
    "flag_background_work": "scrub, resilver or trim running at start",
    "flag_compressible_data": "data was compressible although the question is not about compression",
    "flag_emulation_bound": "the lab's emulation, not the disk model, was the bottleneck",
    "flag_host_contention": "other processes on the lab's host took CPU from the emulation during the run",
    "flag_device_lost": "a disk of the pool was missing or faulted after the run: a degraded pool was measured",
    "flag_slow_device": "one data disk served requests far slower than its peers (a failing or throttled drive)",
}
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


def admissible_mask(df: pd.DataFrame) -> pd.Series:
    """True for rows with no flag raised (and `flagged`, when present, not True)."""
    bad = raised_flags(df).any(axis=1)
    if "flagged" in df:
        bad |= tristate(df["flagged"]).fillna(False).astype(bool)
    return ~bad


def normalise_flags(df: pd.DataFrame) -> pd.DataFrame:
    """Flag columns as nullable booleans, `flagged` as any flag raised, `not_judged` filled in."""
    for c in flag_columns(df):
        df[c] = tristate(df[c])
    df["flagged"] = ~admissible_mask(df)
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
    """Per check, runs where it was raised (True), passed (False) and not judged (None).

    A run with several rows counts once: raised if any row raised it, else passed if any
    row passed it. The last row, `flagged`, counts runs with any flag raised, admissible
    runs with every check judged (passed) and admissible runs with some check not judged.
    `not_judged_reasons` collects the reasons from the `not_judged` text column.
    """
    key = df["run_id"] if "run_id" in df.columns else pd.Series(np.arange(len(df)), index=df.index)
    total = key.nunique()
    texts = df.groupby(key)["not_judged"].first().fillna("").astype(str) if "not_judged" in df else None
    rows, any_true, any_none = [], pd.Series(False, index=key.unique()), pd.Series(False, index=key.unique())
    for col in flag_columns(df):
        v = tristate(df[col])
        t = v.eq(True).fillna(False).groupby(key).any()
        f = v.eq(False).fillna(False).groupby(key).any()
        nj = ~t & ~f
        any_true, any_none = any_true | t, any_none | nj
        check = col[5:]
        rows.append(dict(flag=col, meaning=FLAG_MEANINGS.get(col, ""), raised=int(t.sum()),
                         passed=int((~t & f).sum()), not_judged=int(nj.sum()), runs=total,
                         share_raised=t.sum() / total if total else math.nan,
                         not_judged_reasons=_not_judged_reasons(texts, check) if texts is not None else ""))
    if "flagged" in df:
        any_true = any_true | tristate(df["flagged"]).fillna(False).astype(bool).groupby(key).any()
    rows.append(dict(flag="flagged", meaning="any flag raised (run excluded)", raised=int(any_true.sum()),
                     passed=int((~any_true & ~any_none).sum()), not_judged=int((~any_true & any_none).sum()),
                     runs=total, share_raised=any_true.sum() / total if total else math.nan,
                     not_judged_reasons=""))
    return pd.DataFrame(rows)


def flagged_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with a flag raised, their identifying columns and the names of the flags raised."""
    raised = raised_flags(df)
    f = df[~admissible_mask(df)]
    ids = [c for c in ("run_id", "config_id", "rep", "workload", "direction") if c in f.columns]
    names = pd.Series("", index=f.index)
    for c in raised.columns:                         # vectorised: 100k-row tables stay quick
        hit = raised.loc[f.index, c]
        names = names.where(~hit, names + np.where(names == "", "", ", ") + c[5:])
    out = f[ids].assign(flags=names)
    if "not_judged" in f:
        out["not_judged"] = f["not_judged"]
    return out.reset_index(drop=True)


def select_admissible(df: pd.DataFrame, include_flagged: bool = False) -> pd.DataFrame:
    """Rows with no truth-check flag raised (all rows when `include_flagged`).

    A flag that is None (not judged) does not exclude a run; NaN reads the same.
    """
    return df.copy() if include_flagged else df[admissible_mask(df)].copy()
