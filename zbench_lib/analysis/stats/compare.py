"""Comparing configurations: ratio of means with its interval, tests and effect sizes.

The house rule (docs/methods.md §1–§6): lead with the ratio of means and its 95% CI, then
the p-value of the same statistic (log ratio, Welch df), Holm-adjusted within the family
with the matching adjusted CI; "higher"/"lower" only from the adjusted test, "no
difference" only from TOST at a stated margin, at the same Holm level (`decision.decide`, methods
§3.1: one rule for every page). `compare` applies all of that along one
factor against a baseline, on runs or on pool replicates (`replication.py`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from zbench_lib.analysis.stats.decision import NOT_JUDGED, decide
from zbench_lib.analysis.stats.decision import VERDICTS as VERDICTS  # re-exported: the verdicts a table holds
from zbench_lib.analysis.stats.ratio import holm, log_ratio_test, tost, values
from zbench_lib.analysis.stats.tails import geomean, percentile_units, quantile_of
from zbench_lib.analysis.data.replication import to_units
from zbench_lib.measure.fio_hist import percentile_name
from zbench_lib.core.errors import ConfigError


def hedges_g(a, b) -> float:
    """Standardised mean difference (a − b) / pooled SD, small-sample corrected.

    Uses J = 1 − 3 / (4(nA + nB) − 9), as R's effsize::cohen.d(hedges.correction=TRUE)
    and pingouin do.
    """
    a, b = values(a), values(b)
    n_a, n_b = len(a), len(b)
    if n_a < 2 or n_b < 2:
        return math.nan
    sp = math.sqrt(((n_a - 1) * a.var(ddof=1) + (n_b - 1) * b.var(ddof=1)) / (n_a + n_b - 2))
    if sp == 0:
        return math.nan
    return (a.mean() - b.mean()) / sp * (1 - 3 / (4 * (n_a + n_b) - 9))


def cliffs_delta(a, b) -> float:
    """Cliff's δ = P(a > b) − P(a < b) over all pairs, in [−1, 1].

    From the Mann–Whitney U of a (ties count one half): δ = 2U / (nA·nB) − 1.
    """
    a, b = values(a), values(b)
    if not len(a) or not len(b):
        return math.nan
    ranks = sps.rankdata(np.concatenate([a, b]))
    u = ranks[:len(a)].sum() - len(a) * (len(a) + 1) / 2
    return float(2 * u / (len(a) * len(b)) - 1)


def mannwhitney_min_p(n_a: int, n_b: int) -> float:
    """Smallest two-sided p the exact Mann–Whitney U test can reach: 2 / C(nA+nB, nA).

    Examples
    --------
    >>> mannwhitney_min_p(3, 3), round(mannwhitney_min_p(5, 5), 4)
    (0.1, 0.0079)
    """
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


MW_EXACT_MAX = 40      # runs a side up to which the exact null distribution is computed


def mannwhitney(a, b, alpha: float = 0.05) -> tuple[float, str]:
    """Exact two-sided Mann–Whitney p (scipy, method="exact") and a note.

    Reported only where the smallest achievable p at these sizes is below `alpha`; else NaN
    and the note says why. scipy's exact distribution assumes no ties: ties are noted.
    Beyond MW_EXACT_MAX values a side (far from benchmark run counts) the normal
    approximation with tie correction is used, and the note says so.
    """
    a, b = values(a), values(b)
    min_p = mannwhitney_min_p(len(a), len(b))
    if min_p >= alpha:
        return math.nan, (f"too small: smallest achievable two-sided p at {len(a)} vs {len(b)} "
                          f"is {min_p:.3g} >= alpha {alpha}")
    exact = max(len(a), len(b)) <= MW_EXACT_MAX
    p = float(sps.mannwhitneyu(a, b, alternative="two-sided", method="exact" if exact else "asymptotic").pvalue)
    if not exact:
        return p, f"asymptotic: more than {MW_EXACT_MAX} values a side"
    ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
    return p, "exact p assumes no ties; the samples have ties" if ties else ""


EFFECT_MIN_UNITS = 4     # units a side from which a standardised effect size is computed (methods §5)
EFFECT_NOTE = ("effect sizes (Hedges' g, Cliff's δ) not computed: a side has 3 units or fewer (the pooled SD of "
               "3 against 3 rests on 4 degrees of freedom, its 95% interval a factor of 4.8 wide)")


def effect_sizes(x, base) -> dict:
    """Hedges' g and Cliff's δ of `x` against `base`, with `effect_size_note`; none where a side has fewer than
    EFFECT_MIN_UNITS units: the SD that standardises g is then a guess (g ran to −113 from 3 pools a side on the
    scaling example), and δ is ±1 whenever the samples do not overlap."""
    if min(len(x), len(base)) < EFFECT_MIN_UNITS:
        return dict(hedges_g=math.nan, cliffs_delta=math.nan, effect_size_note=EFFECT_NOTE)
    return dict(hedges_g=hedges_g(x, base), cliffs_delta=cliffs_delta(x, base), effect_size_note="")


def _one(x, base, alpha: float, margin: float, geometric: bool = False) -> dict:
    """Every statistic of one comparison (level values `x` against baseline values `base`); `geometric` for
    units' latency percentiles: the ratio of geometric means, Welch's t on the logs (methods §18)."""
    r = log_ratio_test(x, base, 1 - alpha, geometric)
    ok = len(x) > 1 and len(base) > 1 and np.isfinite(r.low)
    t = tost(x, base, margin, alpha, geometric) if ok else None
    mw_p, mw_note = mannwhitney(x, base, alpha)
    return dict(ratio=r.ratio, ratio_ci_low=r.low, ratio_ci_high=r.high, p=r.p,
                tost_ci90_low=t.low if t else math.nan, tost_ci90_high=t.high if t else math.nan,
                tost_p=t.p if t else math.nan, equivalent=bool(t.equivalent) if t else False,
                margin=margin, **effect_sizes(values(x), values(base)),
                mannwhitney_p=mw_p, mannwhitney_note=mw_note, log_se=r.se, welch_df=r.df)


def adjust(out: pd.DataFrame, family, alpha: float = 0.05, valid=None) -> pd.DataFrame:
    """Holm p, the family's one Holm level, the adjusted CI and the verdict, per family (`ratio.holm`).

    `family` lists the columns whose values delimit a family (None: the whole table).
    `valid` (a boolean per row, default all) marks the comparisons that may enter a family:
    the others (a side pooling several configurations) are "not judged" and, since their p
    tests no configuration, they do not count in m nor shift the others' Holm levels.
    """
    fam = [family] if isinstance(family, str) else list(family or [])
    out = out.copy()
    valid = pd.Series(True, index=out.index) if valid is None else pd.Series(valid, index=out.index).astype(bool)
    out["holm_p"], out["holm_alpha"] = math.nan, math.nan
    for _, g in (out.groupby(fam, dropna=False) if fam else [(None, out)]):
        adj, level = holm(g["p"].where(valid[g.index]).to_numpy(float), alpha)
        out.loc[g.index, "holm_p"], out.loc[g.index, "holm_alpha"] = adj, level
    with np.errstate(invalid="ignore"):
        t = sps.t.ppf(1 - out["holm_alpha"].to_numpy(float) / 2, out["welch_df"].to_numpy(float))
        est, se = np.log(out["ratio"].to_numpy(float)), out["log_se"].to_numpy(float)
        out["adj_ci_low"], out["adj_ci_high"] = np.exp(est - t * se), np.exp(est + t * se)
    out["significant"] = out["holm_p"].lt(alpha)
    out["family_size"] = 0
    for _, g in (out.groupby(fam, dropna=False) if fam else [(None, out)]):
        out.loc[g.index, "family_size"] = int((valid[g.index] & g["p"].notna()).sum())    # m, as Holm counts it
    decisions = [_decision(r) if ok else None for ok, (_, r) in zip(valid, out.iterrows())]
    out["verdict"] = [d.verdict if d else NOT_JUDGED for d in decisions]
    out["decided_low"] = [d.low if d else math.nan for d in decisions]
    out["decided_high"] = [d.high if d else math.nan for d in decisions]
    out["decided_level"] = [d.level if d else math.nan for d in decisions]
    return out


def _decision(row):
    """The comparison's `decision.Decision` (None: not judged, fewer than 2 units a side)."""
    if min(row["n_level"], row["n_baseline"]) < 2 or not np.isfinite(row["ratio_ci_low"]):
        return None
    margin = float(row["margin"]) if "margin" in row and np.isfinite(row["margin"]) else 0.05
    return decide(math.log(row["ratio"]), float(row["log_se"]), float(row["welch_df"]), float(row["holm_alpha"]),
                  margin, int(row.get("family_size", 1) or 1))


def verdict(row, alpha: float = 0.05) -> str:
    """The row's verdict under the one decision rule (`decision.decide`, methods §3.1): higher / lower
    (the Holm-adjusted interval excludes 1 and clears the margin), different, within the margin,
    equivalent (the same interval includes 1 and lies inside the margin), inconclusive, or not judged.
    `alpha` is the row's family's: its Holm level `holm_alpha` carries it."""
    d = _decision(row)
    return d.verdict if d else NOT_JUDGED


COLUMNS = ("factor", "level", "baseline", "unit", "estimand", "n_level", "n_baseline", "runs_level",
           "runs_baseline", "mean_level", "mean_baseline", "ratio", "ratio_ci_low", "ratio_ci_high", "p", "holm_p",
           "holm_alpha", "adj_ci_low", "adj_ci_high", "significant", "tost_ci90_low", "tost_ci90_high",
           "tost_p", "equivalent", "margin", "hedges_g", "cliffs_delta", "effect_size_note", "mannwhitney_p",
           "mannwhitney_note", "verdict", "decided_low", "decided_high", "decided_level", "family_size",
           "log_se", "welch_df", "note")
# The statistics of a comparison that has none (a side's unit cannot support the percentile compared).
_NO_STATS = dict(ratio=math.nan, ratio_ci_low=math.nan, ratio_ci_high=math.nan, p=math.nan, tost_ci90_low=math.nan,
                 tost_ci90_high=math.nan, tost_p=math.nan, equivalent=False, hedges_g=math.nan,
                 cliffs_delta=math.nan, effect_size_note="", mannwhitney_p=math.nan, mannwhitney_note="",
                 log_se=math.nan, welch_df=math.nan)


def _units(df: pd.DataFrame, metric: str, keys: list, unit: str, hist) -> tuple[pd.DataFrame, str, str]:
    """The experimental units of a comparison, their unit and what a side's value estimates: the mean of each
    unit's runs (`replication.to_units`), or for a latency percentile each unit's own, from its merged bins or
    its runs' own fio percentile (`tails.percentile_units`), whose sides compare as geometric means."""
    if quantile_of(metric) is None:
        units, unit = to_units(df, metric, keys, unit)
        return units, unit, f"the mean over {unit}s"
    return percentile_units(df, hist, metric, keys, unit)


def _short_note(sides: pd.DataFrame, metric: str, unit: str) -> str:
    """'not judged: 1 of 6 pools cannot support a p99 (p3 has 800 I/Os)' where a unit of either side has no
    value of the percentile; leaving it out would compare the faster units (slow ones complete fewer I/Os)."""
    if "supported" not in sides or sides["supported"].all():
        return ""
    short = sides[~sides["supported"].astype(bool)]
    pct = percentile_name(quantile_of(metric))
    return f"not judged: {len(short)} of {len(sides)} {unit}s cannot support a {pct} ({'; '.join(short['short'])})"


def _row(g: pd.DataFrame, gl: pd.DataFrame, is_base, metric: str, alpha: float, margin: float, unit: str) -> dict:
    """One level's comparison with the baseline: its sizes and statistics, or why it has none (`note`)."""
    x, base = values(gl[metric]), values(g.loc[is_base, metric])
    note = _short_note(pd.concat([g[is_base], gl]), metric, unit)
    geometric = quantile_of(metric) is not None
    stats = _one(x, base, alpha, margin, geometric) if not note and len(x) and len(base) else _NO_STATS
    return dict(n_level=len(x), n_baseline=len(base), runs_level=int(gl["n_runs"].sum()),
                runs_baseline=int(g.loc[is_base, "n_runs"].sum()), mean_level=_centre(x, geometric),
                mean_baseline=_centre(base, geometric), **{**stats, "margin": margin}, note=note)


def _centre(v: np.ndarray, geometric: bool) -> float:
    """A side's mean, geometric for the units' percentiles (the estimand their ratio compares)."""
    if not len(v):
        return math.nan
    return geomean(v) if geometric else float(v.mean())


def compare(df: pd.DataFrame, metric: str, factor: str, baseline, by=None, alpha: float = 0.05,  # noqa: PLR0913 (the notebooks' API: keyword options)
            family=None, margin: float = 0.05, unit: str = "auto", hist: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each level of `factor` against `baseline`, within each group of `by`.

    Rows of `df` are repetitions; `by` must list every other column that varies between
    configurations, or runs of different configurations get pooled. `family` lists the `by`
    columns that delimit a Holm family (default: the whole table is one family). `unit`:
    'auto' works on pool replicates when any configuration has two or more, else on runs
    (`replication.resolve_unit`); n_level / n_baseline count units, runs_* count runs.

    Columns: `ratio` with its (1 − alpha) CI `ratio_ci_low/high`; `p`, the two-sided p of the
    log ratio (the CI excludes 1 iff p < alpha); `holm_p` within the family; `holm_alpha`, the
    family's one level (Holm's last step), and `adj_ci_low/high`, the (1 − holm_alpha) CI, which excludes
    1 iff holm_p < alpha (`significant`); TOST at ±`margin` (`tost_*`, `equivalent`);
    Hedges' g and Cliff's δ from 4 units a side (`effect_sizes`; else `effect_size_note` says why they are
    absent); exact Mann–Whitney where n allows; `verdict` (see `verdict`) with the
    interval that decided it, `decided_low/high` at confidence `decided_level`, in a family of
    `family_size` comparisons (`decision.decide`). `tost_*` and `equivalent` are the unadjusted
    TOST, kept for reference; the verdict never reads them. `estimand` says what a side's value is.

    A latency percentile (`lat_p99_ns`, ...) compares a typical unit's: each unit's own percentile from
    its runs' merged bins in `hist` (latency_hist.parquet; without, from its runs' own fio percentile),
    the ratio of geometric means with Welch's t on the logs (methods §18). A unit whose I/Os cannot
    support the percentile is never left out: its comparison is "not judged", the unit named in
    `note`, and kept out of the Holm family.

    Examples
    --------
    >>> df = pd.DataFrame({"layout": ["mirror"] * 3 + ["raidz1"] * 3,
    ...                    "iops": [100, 102, 98, 80, 82, 79]})
    >>> out = compare(df, "iops", "layout", "mirror")
    >>> round(float(out.loc[0, "ratio"]), 3), out.loc[0, "verdict"], out.loc[0, "mannwhitney_note"][:9]
    (0.803, 'lower', 'too small')
    """
    by = [by] if isinstance(by, str) else list(by or [])
    if baseline not in set(df[factor]):
        raise ConfigError(f"compare: baseline {baseline!r} is not a level of {factor!r}")
    units, unit, estimand = _units(df, metric, by + [factor], unit, hist)
    rows = []
    for key, g in (units.groupby(by, sort=True, dropna=False) if by else [((), units)]):
        key = key if isinstance(key, tuple) else (key,)
        is_base = g[factor] == baseline
        if not is_base.any():
            continue
        for level, gl in g[~is_base].groupby(factor, sort=True):
            rows.append({**dict(zip(by, key)), "factor": factor, "level": level, "baseline": baseline, "unit": unit,
                         "estimand": estimand, **_row(g, gl, is_base, metric, alpha, margin, unit)})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return adjust(out, family, alpha, valid=out["note"] == "")[by + list(COLUMNS)]
