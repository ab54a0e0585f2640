"""The ratio of two means: its interval, its test, equivalence and Holm-adjusted intervals.

One statistic serves every claim about a ratio (docs/methods.md §1–§4): ln(mA/mB) with the
delta-method standard error sqrt(sA²/(nA·mA²) + sB²/(nB·mB²)) and Welch–Satterthwaite df.
It is Welch's t test on the *linearised* log values ln m + (x − m)/m of each side (their
mean is ln m, their SD s/m), so scipy's `ttest_ind` and statsmodels' `ttost_ind` compute it:
the CI excludes 1 exactly when p < alpha, and the (1 − 2α) CI lies inside the equivalence
bounds exactly when TOST says equivalent.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import NamedTuple

import numpy as np
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_ind

from zbench_lib.core.errors import ConfigError

# scipy >= 1.15 calls the seed `rng`; older releases only know `random_state`.
_BOOTSTRAP_SEED_ARG = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"


class RatioCI(NamedTuple):
    ratio: float
    low: float
    high: float
    df: float


class RatioTest(NamedTuple):
    ratio: float
    low: float           # conf-level interval of the ratio
    high: float
    p: float             # two-sided p of H0: ratio = 1, from the same statistic
    se: float            # standard error of ln(ratio)
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


def values(x) -> np.ndarray:
    """The finite values of `x` as a flat float array."""
    v = np.asarray(x, dtype=float).ravel()
    return v[~np.isnan(v)]


def linearised_log(x) -> np.ndarray:
    """ln m + (x − m)/m per value: the delta-method image of each run on the log scale.

    Mean ln m and SD s/m, so a t test on these is the delta-method test of ln(mean).

    Examples
    --------
    >>> u = linearised_log([90.0, 100.0, 110.0])
    >>> round(float(u.mean()), 6) == round(math.log(100), 6), round(float(u.std(ddof=1)), 3)
    (True, 0.1)
    """
    v = values(x)
    m = v.mean() if len(v) else math.nan
    if not m > 0:
        raise ConfigError(f"a ratio of means needs positive means, got {m}")
    return math.log(m) + (v - m) / m


def _logs(x, geometric: bool) -> np.ndarray:
    """Each value on the log scale: its logarithm (a ratio of geometric means), or its delta-method image
    (`linearised_log`: a ratio of means)."""
    return np.log(values(x)) if geometric else linearised_log(x)


def log_ratio_moments(m_a, s_a, n_a, m_b, s_b, n_b):
    """ln(mA/mB), its delta-method standard error and Welch–Satterthwaite df (element-wise).

    A side with n < 2 gives NaN se and df.
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
    with np.errstate(invalid="ignore"):
        t = sps.t.ppf((1 + np.asarray(conf, dtype=float)) / 2, df)
    return np.exp(est), np.exp(est - t * se), np.exp(est + t * se), df


def log_ratio_test(a, b, conf: float = 0.95, geometric: bool = False) -> RatioTest:
    """Ratio of means mean(a)/mean(b), its CI and the two-sided p of the same statistic.

    Welch's t test (`scipy.stats.ttest_ind(equal_var=False)`) on the linearised log values
    of each side: t = ln(mA/mB) / sqrt(sA²/(nA·mA²) + sB²/(nB·mB²)), Welch–Satterthwaite df.
    `geometric`: the ratio of geometric means, Welch's t on the logarithms themselves (the units'
    latency percentiles, methods §18). The interval never goes below zero. A side with fewer
    than 2 values gives NaN low/high/p.

    Examples
    --------
    >>> r = log_ratio_test([110, 112, 108], [100, 101, 99])
    >>> round(r.ratio, 3), round(r.low, 3), round(r.high, 3), r.p < 0.05
    (1.1, 1.06, 1.142, True)
    """
    a, b = values(a), values(b)
    if len(a) == 0 or len(b) == 0:
        raise ConfigError("ratio: both samples need at least one value")
    ratio = float(np.exp(np.log(a).mean() - np.log(b).mean()) if geometric else a.mean() / b.mean())
    if len(a) < 2 or len(b) < 2:
        return RatioTest(ratio, math.nan, math.nan, math.nan, math.nan, math.nan)
    ua, ub = _logs(a, geometric), _logs(b, geometric)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        res = sps.ttest_ind(ua, ub, equal_var=False)
        ci = res.confidence_interval(conf)
    se = math.sqrt(ua.var(ddof=1) / len(ua) + ub.var(ddof=1) / len(ub))
    if se == 0:                      # no spread at all: the interval is the point, p undefined
        return RatioTest(ratio, ratio, ratio, math.nan, 0.0, math.nan)
    return RatioTest(ratio, float(np.exp(ci.low)), float(np.exp(ci.high)), float(res.pvalue), se,
                     float(res.df))


def ratio_ci(a, b, conf: float = 0.95) -> RatioCI:
    """Ratio of means with its log-ratio delta-method interval (see `log_ratio_test`).

    Examples
    --------
    >>> r = ratio_ci([110, 112, 108], [100, 101, 99])
    >>> round(r.ratio, 3), round(r.low, 3), round(r.high, 3)
    (1.1, 1.06, 1.142)
    """
    r = log_ratio_test(a, b, conf)
    return RatioCI(r.ratio, r.low, r.high, r.df)


def bootstrap_ratio_ci(a, b, conf: float = 0.95, n_resamples: int = 9999, rng=None) -> RatioCI:
    """Ratio of means with a BCa bootstrap interval (`scipy.stats.bootstrap`).

    Resamples runs within each side (one level: pass pool means to resample pools). At
    3 runs a side the bootstrap distribution is coarse: prefer `ratio_ci` there. df is NaN.

    Examples
    --------
    >>> r = bootstrap_ratio_ci([110, 112, 108, 111], [100, 101, 99, 100], rng=0)
    >>> r.low < r.ratio < r.high
    True
    """
    a, b = values(a), values(b)

    def stat(x, y, axis=-1):
        return np.mean(x, axis=axis) / np.mean(y, axis=axis)

    seed = {_BOOTSTRAP_SEED_ARG: np.random.default_rng(rng)}
    res = sps.bootstrap((a, b), stat, vectorized=True, paired=False, confidence_level=conf,
                        n_resamples=n_resamples, method="BCa", **seed)
    ci = res.confidence_interval
    return RatioCI(float(stat(a, b)), float(ci.low), float(ci.high), math.nan)


def equivalence_bounds(margin_ratio: float) -> tuple[float, float]:
    """Bounds on the ratio for a ±margin: [1/(1+m), 1+m], symmetric on the log scale."""
    if not margin_ratio > 0:
        raise ConfigError(f"the equivalence margin must be positive, got {margin_ratio}")
    return 1 / (1 + margin_ratio), 1 + margin_ratio


def tost(a, b, margin_ratio: float = 0.05, alpha: float = 0.05, geometric: bool = False) -> TOSTResult:
    """Equivalence of mean(a)/mean(b) within ±margin: TOST on the log ratio.

    statsmodels `ttost_ind(usevar="unequal")` on the linearised log values (`geometric`: on the
    logarithms, as `log_ratio_test`), with bounds ±ln(1+m) (the ratio within [1/(1+m), 1+m]);
    p = max of the two one-sided p. The (1 − 2α) `ratio_ci` lies inside the bounds exactly when
    `equivalent` is True.

    Examples
    --------
    >>> r = tost([100, 101, 99, 100, 100], [100, 100.5, 99.5, 100, 100.2], margin_ratio=0.05)
    >>> bool(r.equivalent)
    True
    """
    a, b = values(a), values(b)
    if len(a) < 2 or len(b) < 2:
        raise ConfigError("tost: needs at least 2 values on each side")
    lo_b, hi_b = equivalence_bounds(margin_ratio)
    ua, ub = _logs(a, geometric), _logs(b, geometric)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        p, (_, p_lower, _), (_, p_upper, _) = ttost_ind(ua, ub, math.log(lo_b), math.log(hi_b),
                                                        usevar="unequal")
    r = log_ratio_test(a, b, conf=1 - 2 * alpha, geometric=geometric)
    p, p_lower, p_upper = float(p), float(p_lower), float(p_upper)
    return TOSTResult(r.ratio, r.low, r.high, lo_b, hi_b, p_lower, p_upper, p, bool(p < alpha))


def holm(p, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p (statsmodels `multipletests`) and the one level of the family's adjusted CIs.

    Step-down Bonferroni–Holm: sorted p_(1) <= ... <= p_(m) are tested at α/m, α/(m−1), ...
    until the first that fails, k*. Every comparison of the family gets the level of that last step,
    α* = α/(m − k* + 1) (α where Holm rejects all: the last step's). Then the (1 − α*) CI excludes 1
    exactly when the Holm p is below α: a rejected p_(k), k < k*, is below α/(m − k + 1) <= α*, and
    every other is at least p_(k*) >= α*. One level, so a page states it once (methods §3; before, each
    rejected comparison had its own step's, ten levels on one page). NaN p stay NaN, not counted in m.

    Examples
    --------
    >>> adj, level = holm([0.01, 0.04, 0.03])
    >>> [round(float(v), 3) for v in adj], [round(float(v), 4) for v in level]
    ([0.03, 0.06, 0.06], [0.025, 0.025, 0.025])
    >>> [round(float(v), 4) for v in holm([0.001, 0.002])[1]]      # both rejected: the last step's, α
    [0.05, 0.05]
    """
    p = np.asarray(p, dtype=float)
    adj, level = np.full(p.shape, np.nan), np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if not len(ok):
        return adj, level
    adj[ok] = multipletests(p[ok], alpha=alpha, method="holm")[1]
    m = len(ok)
    failed = np.flatnonzero(np.sort(adj[ok]) >= alpha)       # Holm's adjusted p rise with the rank
    k_star = failed[0] if len(failed) else m - 1            # 0-based rank of the last step Holm tests
    level[ok] = alpha / (m - k_star)
    return adj, level
