"""Steady state of a run's per-second IOPS: did the rate drift across the window beyond its noise?

The question is SNIA's slope criterion (docs/statistics.md, Steady state): does the fitted
line rise or fall across the measurement window? It is asked of the run's own series,
against the run's own noise (docs/methods.md §12):

- Rounds are whole periods of the series' pulse, so the pulse does not alias into the
  trend. Writes pulse with the TXG commit (`zfs_txg_timeout`, 5 s), or with a longer
  burst-and-stall cycle of one or two TXG syncs when ZFS's write throttle stalls them
  (28 s for 4k writes on a 4K-volblocksize raidz1 of six lab disks): the period is the TXG
  period, or the series' own pulse (`pulse_period`) when that is longer. Reads and raw
  disks have no TXG: their period is one sample. Periods are grouped into at most
  MAX_ROUNDS rounds (whole periods each), the first seconds that fill no round left out.
- The noise is estimated from the data: the scatter of the round means around their line.
  Counting noise is not modelled: a throttled device completes I/Os far more regularly than
  Poisson counting predicts, a write stalled by TXG syncs far less regularly (both measured
  on the example sweeps, methods §12).
- The drift is the least-squares line's change across the window, as a share of the mean
  (a rate going linearly from 0.95 to 1.05 of its mean drifts 10%). Its standard error
  and two-sided p-value are the ordinary regression ones with rounds - 2 degrees of freedom
  (`scipy.stats.linregress`); rounds are whole pulses, so their means are close to
  independent (the calibration in benchmarks/steady_state_calibration.py checks it).
- Not steady (flag True) when the drift is both clear (p < ALPHA) and at least
  DRIFT_PCT of the mean: a drift too small to matter is not flagged however clear it is,
  and one the noise could have made is not flagged however large.
- A window of fewer than MIN_ROUNDS whole periods is not judged (flag None). Otherwise the
  run is judged even when its noise is large: the verdict then says how large a drift the
  window could have seen (`detectable_pct`, 80% power), so "steady" is read with its
  strength.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats

DRIFT_PCT = 5.0        # practical threshold: a drift across the window of at least 5% of the mean
ALPHA = 0.05           # ... and clear: two-sided p of the regression slope below 5%
POWER = 0.80           # `detectable_pct`: the drift seen this often at ALPHA
MIN_ROUNDS = 5         # SNIA's five rounds; fewer whole periods are not judged
MAX_ROUNDS = 15        # periods are grouped into at most 15 rounds (whole periods each)
TXG_PERIOD_S = 5.0     # zfs_txg_timeout default: writes pulse with it
PULSE_MIN_ACF = 0.5    # autocorrelation of a clear pulse (white noise stays under 0.4 at 60 s)
PULSE_NEAR_MAX = 0.9   # the fundamental: the first lag within 90% of the best one, not a multiple


def pulse_period(values, min_s: float, sample_s: float = 1.0) -> float | None:
    """The period (s) of a write's burst-and-stall pulse, or None when the series has none
    longer than `min_s`. A pulse is a peak of the autocorrelation of the detrended series
    (a drift is not a pulse) at least PULSE_MIN_ACF high, after the autocorrelation has gone
    negative (bursts against stalls); the first peak within 90% of the highest is the period,
    so a multiple of it is not taken for it.

    >>> pulse_period([100, 100, 0, 0, 0, 0] * 10, min_s=3)
    6.0
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    if n < 4:
        return None
    t = np.arange(n)
    y = y - np.polyval(np.polyfit(t, y, 1), t)
    denom = float((y * y).sum())
    if denom <= 0:
        return None
    acf = np.correlate(y, y, "full")[n - 1:n // 2 + n] / denom        # lags 0 .. n // 2
    lo = max(2, math.ceil(min_s / sample_s))
    peaks = [k for k in range(lo, len(acf) - 1)
             if acf[k] >= PULSE_MIN_ACF and acf[k] >= acf[k - 1] and acf[k] >= acf[k + 1] and acf[1:k].min() < 0]
    if not peaks:
        return None
    best = max(acf[k] for k in peaks)
    return next(k for k in peaks if acf[k] >= PULSE_NEAR_MAX * best) * sample_s


def _period(y: np.ndarray, txg_period_s: float | None, sample_s: float) -> tuple[int, str, float | None]:
    """(samples per period, what a period is, the pulse found or None)."""
    if txg_period_s is None:
        return 1, "samples", None
    pulse = pulse_period(y, txg_period_s, sample_s)
    if pulse is not None and pulse > txg_period_s:
        return max(1, round(pulse / sample_s)), "write pulses", pulse
    return max(1, round(txg_period_s / sample_s)), "TXG periods", pulse


def _rounds(y: np.ndarray, per: int) -> tuple[np.ndarray, int]:
    """(round means, samples per round): whole periods of `per` samples, at most MAX_ROUNDS
    rounds, the first samples that fill no round left out (the window's end is kept)."""
    periods = len(y) // per
    k = math.ceil(periods / MAX_ROUNDS)                 # periods per round
    rounds = periods // k
    used = y[len(y) - rounds * k * per:].reshape(rounds, k * per)
    return used.mean(axis=1), k * per


@lru_cache(maxsize=64)
def _t(q: float, df: int) -> float:
    return float(stats.t.ppf(q, df))


def _drift(rounds: np.ndarray, mean: float) -> dict:
    """The least-squares drift across the window (% of the mean) with its SE, CI and p-value."""
    r = len(rounds)
    x = (np.arange(r) + 0.5) / r                         # round centres, as a share of the window
    fit = stats.linregress(x, rounds)
    df = r - 2
    drift, se = 100 * fit.slope / mean, 100 * fit.stderr / mean
    resid = rounds - (fit.intercept + fit.slope * x)
    if not se > 0:                                       # an exact line (or a flat one): no noise seen
        se, p = 0.0, (0.0 if abs(drift) > 0 else 1.0)
    else:
        p = float(fit.pvalue)
    t_crit, t_pow = _t(1 - ALPHA / 2, df), _t(POWER, df)
    return {"slope_pct": float(drift), "drift_se_pct": float(se), "p_value": p,
            "drift_ci_pct": (float(drift - t_crit * se), float(drift + t_crit * se)),
            "slope_limit_pct": float(max(DRIFT_PCT, t_crit * se)),
            "detectable_pct": float(max(DRIFT_PCT, t_crit * se) + t_pow * se),
            "noise_pct": float(100 * np.sqrt((resid ** 2).sum() / df) / mean), "df": df}


def steady_state(values, txg_period_s: float | None = None, sample_s: float = 1.0) -> dict:
    """Steady-state verdict on a per-second IOPS series: flag True (not steady), False, None.

    `txg_period_s`: the TXG period when the run wrote (rounds are whole multiples of it, or
    of the series' own pulse when that is longer, see `pulse_period`), None for reads and raw
    disks (rounds of whole samples). Returned beside the verdict: slope_pct (the signed drift
    across the window, % of the mean), drift_se_pct, drift_ci_pct (95%), p_value,
    slope_limit_pct (the drift a flag needs: DRIFT_PCT, or the critical drift of the noise when
    larger), detectable_pct (the drift seen 80% of the time), noise_pct (the scatter of one
    round's mean around the line, from the data), counting_noise_pct (what Poisson counting
    alone would give, for comparison), range_pct (max - min of the round means, reported, not
    judged), rounds, round_s, pulse_period_s.

    >>> steady_state([10000, 10100, 9900, 10050, 9950])["flag"]
    False
    """
    y = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    nan = math.nan
    out = {"samples": len(y), "samples_used": 0, "rounds": 0, "round_s": nan, "mean": nan, "range_pct": nan,
           "slope_pct": nan, "drift_se_pct": nan, "drift_ci_pct": (nan, nan), "p_value": nan, "noise_pct": nan,
           "counting_noise_pct": nan, "range_limit_pct": nan, "slope_limit_pct": DRIFT_PCT, "detectable_pct": nan,
           "drift_threshold_pct": DRIFT_PCT, "alpha": ALPHA, "txg_period_s": txg_period_s, "pulse_period_s": None}
    if len(y) == 0 or y.mean() <= 0:
        return {**out, "flag": None, "reason": "no I/O in the window"}
    per, what, pulse = _period(y, txg_period_s, sample_s)
    out["pulse_period_s"] = pulse
    if len(y) // per < MIN_ROUNDS:
        return {**out, "mean": float(y.mean()), "flag": None,
                "reason": f"too short to judge: {len(y) * sample_s:g} s hold {len(y) // per} whole {what} of "
                          f"{per * sample_s:g} s, {MIN_ROUNDS} needed ({MIN_ROUNDS * per * sample_s:g} s)"}
    rounds, per_round = _rounds(y, per)
    used, mean, round_s = len(rounds) * per_round, float(rounds.mean()), per_round * sample_s
    if mean <= 0:
        return {**out, "flag": None, "reason": "no I/O in the whole periods of the window"}
    d = _drift(rounds, mean)
    out.update(d, samples_used=used, rounds=len(rounds), round_s=round_s, mean=mean,
               range_pct=float(100 * (rounds.max() - rounds.min()) / mean),
               counting_noise_pct=100 / math.sqrt(mean * round_s))
    drift, (lo, hi) = d["slope_pct"], d["drift_ci_pct"]
    said = (f"drift {drift:+.1f}% across {used * sample_s:g} s (95% CI {lo:+.1f} to {hi:+.1f}%, "
            f"p {d['p_value']:.2g}; {len(rounds)} rounds of {round_s:g} s, whole {what})")
    if d["p_value"] < ALPHA and abs(drift) >= DRIFT_PCT:
        return {**out, "flag": True, "reason": f"{said}: clear and beyond {DRIFT_PCT:g}%"}
    tail = (f"clear but under {DRIFT_PCT:g}%" if d["p_value"] < ALPHA else
            f"within the noise; a drift of {d['detectable_pct']:.0f}% would be seen {POWER:.0%} of the time")
    return {**out, "flag": False, "reason": f"{said}: {tail}"}
