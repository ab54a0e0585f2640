"""Is scaling linear? The efficiency verdicts a page states, as one Holm family (docs/methods.md §10, §3.1).

An efficiency E = (T(D)/T(D0)) / (D/D0) is a ratio of two means divided by a constant, so ln E has
the standard error and Welch df of that ratio's log (§1; `stats.scaling`'s `log_se`, `welch_df`).
"Linear" is E = 1, and "close to linear" is E inside the band [1/(1+b), 1+b]: the two questions the
one decision rule (`decision.decide`) answers about a ratio and its margin. So the verdicts come from
it, at the one level Holm's step-down gives their family: every verdict the page states (each
scaling family's efficiency at its largest judged pool, for every workload), as the verdicts of a
comparison come from theirs (§3). Before, each was an unadjusted 95% statement, 24 of them on the
scaling example's first screen.

    decide's verdict            the scaling verdict (`conclusions.efficiency_verdict` words it)
    higher / lower              above / below linear: the adjusted interval lies beyond the band
    ..., margin unclear         above / below linear, margin unclear: it excludes 1, reaches into the band
    different, within margin    close to linear: the adjusted interval lies inside the band, excluding 1
    equivalent                  close to linear: the adjusted interval lies inside the band, including 1
    inconclusive                too uncertain to call

A ratio across two regimes (every run of one side in a mode a truth check declares `regime`, the
other side's not, issue 46 item 3) is no scaling law: it states no verdict and, like a comparison
that pools configurations (§3), stays out of the family, where it would shift the others' levels.

    judge_linearity(scal, band, alpha)   the scaling table with its verdicts and deciding intervals
    regime_change(base, row)             what differs in regime between a baseline and a row ('' if none)
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from scipy import stats as sps

from zbench_lib.analysis.data.columns import CONFIG_COLUMNS, LAYOUT_COLUMNS
from zbench_lib.analysis.data.flags import SENSITIVITY_KEYS
from zbench_lib.analysis.stats.decision import NOT_JUDGED, decide
from zbench_lib.analysis.stats.ratio import holm
from zbench_lib.measure import checks

LINEAR_BAND = 0.10      # "close to linear": the deciding interval inside [1/(1 + this), 1 + this]
ALPHA = 0.05            # the family-wise level of the page's scaling verdicts
DECIDED = ("verdict", "decided_low", "decided_high", "decided_level")
# What a sensitivity alternative recomputes (`tables._scaling_sensitivity`): the row as those runs give it.
ALTERNATIVE = ("baseline_disks", "n", "efficiency", "efficiency_ci_low", "efficiency_ci_high", "log_se", "welch_df")

# The truth checks whose flag says the system ran in another mode (judging.TruthCheck.regime).
REGIMES = frozenset(c.name for c in checks.in_report_order() if c.regime)


def _all_runs_carry(described) -> set[str]:
    """The regime flags every run of a row carries, from its `described` text
    ('not_steady 3 of 3 runs, read_amplification 3 of 3 runs')."""
    found = (re.match(r"\s*(\w+) (\d+) of (\d+) runs?$", part) for part in re.split(r"[,;]", str(described or "")))
    return {m[1] for m in found if m and m[2] == m[3] and m[1] in REGIMES}


def regime_change(base: pd.DataFrame, row) -> str:
    """'' when the baseline's runs and the row's ran in one regime; else what differs ('the 1-data-disk
    baseline in read amplification, every run'): a ratio across two regimes is not interpretable."""
    if base.empty or "described" not in base:
        return ""
    b, r = _all_runs_carry(base["described"].iloc[0]), _all_runs_carry(row.get("described"))
    words = lambda flags: " and ".join(sorted(f.replace("_", " ") for f in flags))  # noqa: E731
    parts = ([f"the {int(base['data_disks'].iloc[0])}-data-disk baseline in {words(b - r)}, every run"] if b - r
             else []) + ([f"the {int(row['data_disks'])}-data-disk pool in {words(r - b)}, every run"] if r - b else [])
    return "; ".join(parts)


def _groups(scal: pd.DataFrame) -> list[str]:
    """The columns of one scaling family: the workload and the other settings held, the family's name."""
    held = [c for c in scal.columns if c in CONFIG_COLUMNS and c not in LAYOUT_COLUMNS]
    return held + ["family" if "family" in scal else "layout"]


def _stated(scal: pd.DataFrame) -> pd.Series:
    """The row each scaling family states its verdict at: its largest pool with 2 or more units, unless that
    is its baseline (no scaling to state)."""
    stated = pd.Series(False, index=scal.index)
    for _, f in scal.groupby(_groups(scal), sort=False, dropna=False):
        judged = f[f["n"].fillna(0) >= 2].sort_values("data_disks")
        if len(judged) and judged["data_disks"].iloc[-1] != f["baseline_disks"].iloc[0]:
            stated[judged.index[-1]] = True
    return stated


def _regimes(scal: pd.DataFrame, stated: pd.Series) -> pd.Series:
    """Per stated row, what differs in regime from its family's baseline ('' elsewhere)."""
    out = pd.Series("", index=scal.index, dtype=object)
    for _, f in scal.groupby(_groups(scal), sort=False, dropna=False):
        base = f[f["data_disks"] == f["baseline_disks"]]
        for i in f.index[stated[f.index]]:
            out[i] = regime_change(base, f.loc[i])
    return out


def _linear_p(scal: pd.DataFrame) -> np.ndarray:
    """Two-sided p of "E = 1": t = ln E / se with Welch df (NaN where there is no SE)."""
    est = np.log(scal["efficiency"].to_numpy(float))
    se, df = scal["log_se"].to_numpy(float), scal["welch_df"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * sps.t.sf(np.abs(est / se), df)
    return np.where((se > 0) & np.isfinite(p), p, np.nan)


def _decided(r, band: float) -> tuple:
    """The row's verdict and deciding interval (`decision.decide` at its Holm level)."""
    if not (r["stated"] and r["regime"] == "" and np.isfinite(r["holm_alpha"])):
        return (NOT_JUDGED, math.nan, math.nan, math.nan)
    d = decide(math.log(r["efficiency"]), float(r["log_se"]), float(r["welch_df"]), float(r["holm_alpha"]), band,
               int(r["family_size"]))
    return (d.verdict, d.low, d.high, d.level)


def _judged(scal: pd.DataFrame, band: float, alpha: float) -> pd.DataFrame:
    out = scal.copy()
    out["stated"] = _stated(out)
    out["regime"] = _regimes(out, out["stated"])
    valid = out["stated"] & (out["regime"] == "")
    p = np.where(valid, _linear_p(out) if {"log_se", "welch_df"} <= set(out) else np.nan, np.nan)
    out["linear_p"] = p
    out["holm_p"], out["holm_alpha"] = holm(p, alpha)
    out["family_size"] = int(np.isfinite(p).sum())
    decided = [_decided(r, band) for _, r in out.iterrows()]
    for i, c in enumerate(DECIDED):
        out[c] = [d[i] for d in decided]
    return out


def _alternative(scal: pd.DataFrame, key: str) -> pd.DataFrame:
    """The table as the runs of sensitivity alternative `key` give it (its values where it changes a run)."""
    return scal.assign(**{c: scal[f"sensitivity_{key}_{c}"] for c in ALTERNATIVE if f"sensitivity_{key}_{c}" in scal})


def judge_linearity(scal: pd.DataFrame, band: float = LINEAR_BAND, alpha: float = ALPHA) -> pd.DataFrame:
    """The scaling table (`tables.scaling_table`) with the verdicts the page states, one Holm family.

    Adds `stated` (the row a family's verdict is given at), `regime` (what differs in regime from the
    baseline: no verdict then), `linear_p` (two-sided p of E = 1), `holm_p`, `holm_alpha` (the family's one
    Holm level), `family_size` (the verdicts in the family), and `verdict` (`decision.decide`'s, with margin
    `band`) with the interval that decided it, `decided_low/high` at confidence `decided_level`. Where the
    table has sensitivity alternatives, `sensitivity_<key>_verdict` and `_decided_*`: the verdicts that
    alternative's runs give, the family judged again (as `tables.compare_table`'s are).

    Examples
    --------
    >>> scal = pd.DataFrame({"workload": "randread", "layout": "stripe", "family": "stripe", "data_disks": [1, 4],
    ...                      "baseline_disks": 1, "n": 3, "efficiency": [1.0, 0.60], "log_se": [np.nan, 0.02],
    ...                      "welch_df": [np.nan, 4.0]})
    >>> r = judge_linearity(scal).iloc[1]
    >>> r["verdict"], int(r["family_size"]), round(float(r["decided_level"]), 2)
    ('lower', 1, 0.95)
    """
    out = _judged(scal, band, alpha)
    for key in SENSITIVITY_KEYS:
        if f"sensitivity_{key}_efficiency" in scal:
            alt = _judged(_alternative(scal, key), band, alpha)
            for c in DECIDED:
                out[f"sensitivity_{key}_{c}"] = alt[c].to_numpy()
    return out
