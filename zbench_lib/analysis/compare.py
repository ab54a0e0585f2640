"""Comparing configurations: ratio of means with its interval, tests and effect sizes.

The house rule (docs/statistics.md): lead with the ratio of means and its 95% CI,
then a p-value, an effect size, and claim "no difference" only through an
equivalence test. `compare` applies all of that along one factor against a baseline.
"""

from __future__ import annotations

import inspect
import math
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from zbench_lib.core.errors import ConfigError


# scipy >= 1.15 calls the seed `rng`; older releases only know `random_state`.
_BOOTSTRAP_SEED_ARG = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"


class RatioCI(NamedTuple):
    ratio: float
    low: float
    high: float
    df: float


class TOSTResult(NamedTuple):
    ratio: float
    low: float           # (1 - 2*alpha) interval of the ratio
    high: float
    lower_bound: float   # equivalence bounds on the ratio
    upper_bound: float
    p_lower: float
    p_upper: float
    p: float
    equivalent: bool


def _values(x) -> np.ndarray:
    v = np.asarray(x, dtype=float).ravel()
    return v[~np.isnan(v)]


def log_ratio_moments(m_a, s_a, n_a, m_b, s_b, n_b):
    """ln(mA/mB), its delta-method standard error and Welch–Satterthwaite df.

    Var ln(mean) ≈ s² / (n m²) for each side; df pools the two variances like Welch's test.
    Works element-wise on arrays; a side with n < 2 gives NaN se and df.
    """
    m_a, s_a, n_a, m_b, s_b, n_b = (np.asarray(v, dtype=float) for v in (m_a, s_a, n_a, m_b, s_b, n_b))
    with np.errstate(divide="ignore", invalid="ignore"):
        v_a = s_a ** 2 / (n_a * m_a ** 2)
        v_b = s_b ** 2 / (n_b * m_b ** 2)
        est = np.log(m_a / m_b)
        se = np.sqrt(v_a + v_b)
        df = (v_a + v_b) ** 2 / (v_a ** 2 / (n_a - 1) + v_b ** 2 / (n_b - 1))
    return est, se, df


def ratio_ci_from_moments(m_a, s_a, n_a, m_b, s_b, n_b, conf=0.95):
    """Ratio mA/mB, CI low/high and df from summary moments (element-wise; see `ratio_ci`)."""
    est, se, df = log_ratio_moments(m_a, s_a, n_a, m_b, s_b, n_b)
    t = sps.t.ppf((1 + conf) / 2, df)
    return np.exp(est), np.exp(est - t * se), np.exp(est + t * se), df


def ratio_ci(a, b, conf: float = 0.95) -> RatioCI:
    """Ratio of means mean(a)/mean(b) with a log-ratio delta-method interval.

    ln(mA/mB) ± t(df) · sqrt(sA²/(nA·mA²) + sB²/(nB·mB²)), df by Welch–Satterthwaite.
    Needs positive means and at least 2 values a side (else low/high are NaN).

    Examples
    --------
    >>> r = ratio_ci([110, 112, 108], [100, 101, 99])
    >>> round(r.ratio, 3), round(r.low, 3), round(r.high, 3)
    (1.1, 1.06, 1.142)
    """
    a, b = _values(a), _values(b)
    if len(a) == 0 or len(b) == 0:
        raise ConfigError("ratio_ci: both samples need at least one value")
    r, lo, hi, df = ratio_ci_from_moments(a.mean(), a.std(ddof=1) if len(a) > 1 else np.nan, len(a),
                                           b.mean(), b.std(ddof=1) if len(b) > 1 else np.nan, len(b), conf)
    return RatioCI(float(r), float(lo), float(hi), float(df))


def bootstrap_ratio_ci(a, b, conf: float = 0.95, n_resamples: int = 9999, rng=None) -> RatioCI:
    """Ratio of means with a BCa bootstrap interval (`scipy.stats.bootstrap`).

    Resamples runs within each side independently (one level; a pool re-create level
    would need hierarchical resampling). At 3 runs a side the bootstrap distribution is
    coarse: prefer `ratio_ci` there. `df` is NaN.

    Examples
    --------
    >>> r = bootstrap_ratio_ci([110, 112, 108, 111], [100, 101, 99, 100], rng=0)
    >>> r.low < r.ratio < r.high
    True
    """
    a, b = _values(a), _values(b)

    def stat(x, y, axis=-1):
        return np.mean(x, axis=axis) / np.mean(y, axis=axis)

    seed = {_BOOTSTRAP_SEED_ARG: np.random.default_rng(rng)}
    res = sps.bootstrap((a, b), stat, vectorized=True, paired=False, confidence_level=conf,
                        n_resamples=n_resamples, method="BCa", **seed)
    ci = res.confidence_interval
    return RatioCI(float(stat(a, b)), float(ci.low), float(ci.high), math.nan)


def tost(a, b, margin_ratio: float = 0.05, alpha: float = 0.05) -> TOSTResult:
    """Equivalence test of mean(a)/mean(b) within ±margin, on the log scale.

    Bounds are symmetric in log space: [1/(1+m), 1+m] (m=0.25 gives the familiar
    0.80–1.25). Two one-sided Welch-type t tests on ln(mA/mB) with the delta-method
    standard error and Welch–Satterthwaite df; p = max of the two. Equivalently, the
    (1 − 2α) `ratio_ci` lies inside the bounds exactly when `equivalent` is True.

    Examples
    --------
    >>> r = tost([100, 101, 99, 100, 100], [100, 100.5, 99.5, 100, 100.2], margin_ratio=0.05)
    >>> bool(r.equivalent)
    True
    """
    a, b = _values(a), _values(b)
    if len(a) < 2 or len(b) < 2:
        raise ConfigError("tost: needs at least 2 values on each side")
    if margin_ratio <= 0:
        raise ConfigError(f"tost: margin_ratio must be positive, got {margin_ratio}")
    est, se, df = log_ratio_moments(a.mean(), a.std(ddof=1), len(a), b.mean(), b.std(ddof=1), len(b))
    hi_log = math.log1p(margin_ratio)
    p_lower = float(sps.t.sf((est + hi_log) / se, df))    # H0: ln r <= -ln(1+m)
    p_upper = float(sps.t.cdf((est - hi_log) / se, df))   # H0: ln r >= +ln(1+m)
    t = sps.t.ppf(1 - alpha, df)
    p = max(p_lower, p_upper)
    return TOSTResult(float(np.exp(est)), float(np.exp(est - t * se)), float(np.exp(est + t * se)),
                      1 / (1 + margin_ratio), 1 + margin_ratio, p_lower, p_upper, p, bool(p < alpha))


def hedges_g(a, b) -> float:
    """Standardised mean difference (a − b) / pooled SD, small-sample corrected.

    Uses J = 1 − 3 / (4(nA + nB) − 9), as R's effsize::cohen.d(hedges.correction=TRUE)
    and pingouin do.
    """
    a, b = _values(a), _values(b)
    n_a, n_b = len(a), len(b)
    if n_a < 2 or n_b < 2:
        return math.nan
    sp = math.sqrt(((n_a - 1) * a.var(ddof=1) + (n_b - 1) * b.var(ddof=1)) / (n_a + n_b - 2))
    if sp == 0:
        return math.nan
    return (a.mean() - b.mean()) / sp * (1 - 3 / (4 * (n_a + n_b) - 9))


def cliffs_delta(a, b) -> float:
    """Cliff's δ = P(a > b) − P(a < b) over all pairs, in [−1, 1]."""
    a, b = _values(a), _values(b)
    diff = np.sign(a[:, None] - b[None, :])
    return float(diff.mean()) if diff.size else math.nan


def mannwhitney_min_p(n_a: int, n_b: int) -> float:
    """Smallest two-sided p the exact Mann–Whitney U test can reach: 2 / C(nA+nB, nA).

    Examples
    --------
    >>> mannwhitney_min_p(3, 3), round(mannwhitney_min_p(5, 5), 4)
    (0.1, 0.0079)
    """
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def compare(df: pd.DataFrame, metric: str, factor: str, baseline, by=None,
            alpha: float = 0.05, family=None) -> pd.DataFrame:
    """Each level of `factor` against `baseline`, within each group of `by`.

    Rows of `df` are repetitions; `by` must list every other column that varies
    between configurations, or runs of different configurations get pooled.
    `family` lists the `by` columns that delimit a Holm family (default: the whole
    table is one family). Mann–Whitney p is reported only where its smallest
    achievable two-sided p at those sample sizes is below `alpha`.

    Examples
    --------
    >>> df = pd.DataFrame({"layout": ["mirror"] * 3 + ["raidz1"] * 3,
    ...                    "iops": [100, 102, 98, 80, 82, 79]})
    >>> out = compare(df, "iops", "layout", "mirror")
    >>> round(float(out.loc[0, "ratio"]), 3), out.loc[0, "mannwhitney_note"][:9]
    (0.803, 'too small')
    """
    by = [by] if isinstance(by, str) else list(by or [])
    if baseline not in set(df[factor]):
        raise ConfigError(f"compare: baseline {baseline!r} is not a level of {factor!r}")
    rows = []
    groups = df.groupby(by, sort=True, dropna=False) if by else [((), df)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        base = _values(g.loc[g[factor] == baseline, metric])
        if len(base) == 0:
            continue
        for level, gl in g.groupby(factor, sort=True):
            if level == baseline:
                continue
            x = _values(gl[metric])
            row = dict(zip(by, key))
            row.update(factor=factor, level=level, baseline=baseline, n_level=len(x),
                       n_baseline=len(base), mean_level=x.mean(), mean_baseline=base.mean())
            r = ratio_ci(x, base)
            row.update(ratio=r.ratio, ratio_ci_low=r.low, ratio_ci_high=r.high)
            row["welch_p"] = (float(sps.ttest_ind(x, base, equal_var=False).pvalue)
                              if len(x) > 1 and len(base) > 1 else math.nan)
            row["hedges_g"] = hedges_g(x, base)
            row["cliffs_delta"] = cliffs_delta(x, base)
            min_p = mannwhitney_min_p(len(x), len(base))
            if min_p < alpha:
                row["mannwhitney_p"] = float(sps.mannwhitneyu(x, base, alternative="two-sided").pvalue)
                row["mannwhitney_note"] = ""
            else:
                row["mannwhitney_p"] = math.nan
                row["mannwhitney_note"] = (f"too small: smallest achievable two-sided p at "
                                           f"{len(x)} vs {len(base)} is {min_p:.3g} >= alpha {alpha}")
            rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    fam = [family] if isinstance(family, str) else list(family or [])
    out["holm_p"] = math.nan
    for _, g in (out.groupby(fam, dropna=False) if fam else [(None, out)]):
        p = g["welch_p"]
        ok = p.notna()
        if ok.any():
            out.loc[p[ok].index, "holm_p"] = multipletests(p[ok], alpha=alpha, method="holm")[1]
    cols = [c for c in out.columns if c not in ("holm_p", "hedges_g", "cliffs_delta",
                                                  "mannwhitney_p", "mannwhitney_note")]
    i = cols.index("welch_p") + 1
    cols[i:i] = ["holm_p", "hedges_g", "cliffs_delta", "mannwhitney_p", "mannwhitney_note"]
    return out[cols]
