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
- Writes are judged on their *level*, with the burst-and-stall pattern modelled instead of
  averaged into the noise (`_level_drift`): each second is a stall (under STALL_FRAC of the
  series' 90th percentile), a burst or a base second (the two groups of the other seconds'
  log counts, split where they separate best, Otsu's rule, when they are at least BURST_GAP
  apart); the burst/base step is estimated within rounds of whole TXG periods, and the level
  of each round (its mean log count, burst seconds brought down by that step, stalls left out)
  is regressed on time. A drift of the whole rate is also tested on whole-pulse round means
  (`_drift`), as for reads: a drift that shows only as bursts or stalls growing more frequent
  keeps the base level flat. Each of the two tests is run at ALPHA / 2 (Bonferroni), so the
  run's false-alarm rate stays under ALPHA; a write with no burst or stall seconds has only the
  level test, at ALPHA.
- The noise is estimated from the data: the scatter of the round means (levels) around their
  line, its standard error inflated by sqrt((1 + r) / (1 - r)) when the line's residuals have a
  positive lag-1 autocorrelation r (a rate that wanders across neighbouring rounds). Counting
  noise is not modelled: a throttled device completes I/Os far more regularly than Poisson
  counting predicts, a write stalled by TXG syncs far less regularly (methods §12).
- The drift is the line's change across the window, as a share of the mean (a rate going
  linearly from 0.95 to 1.05 of its mean drifts 10%; for the level, 2 tanh(b / 2) of the log
  slope b, the same scale). Its p-value is the regression t test with rounds - 2 degrees of
  freedom.
- Not steady (flag True) when a drift is both clear (p under its test's level) and at least
  DRIFT_PCT of the mean: a drift too small to matter is not flagged however clear it is,
  and one the noise could have made is not flagged however large.
- A window with fewer than MIN_ROUNDS rounds for both tests is not judged (flag None).
  Otherwise the run is judged even when its noise is large: the verdict then says how large a
  drift the window could have seen (`detectable_pct`, 80% power), so "steady" is read with its
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
STALL_FRAC = 0.2       # a write's second under 20% of its 90th percentile is a stall
BURST_GAP = math.log(1.25)  # burst and base seconds: their mean log counts at least 25% apart ...
BURST_MIN_SHARE = 0.1  # ... and the smaller group at least 10% of the active seconds (and 3 s)
LEVEL_MAX_ROUNDS = 30  # the level test: rounds of whole TXG periods, at most 30
# A write's window shorter than this sees a 10% drift under 80% of the time at the lab's noise, in the
# most favourable case calibrated (methods §12: TXG bursts at 100 IOPS 81% at 150 s; the scaling example's
# 4k random writes 78% at 150 s, 90% at 300 s; its sequential writes and the volblocksize example's
# random writes need 10-20 min or more). Known-noise (oracle) tests do no better: the lab's write
# noise, not the test, sets it. The plan's dry run says so for shorter write windows.
WRITE_WINDOW_10PCT_S = 150.0


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


def _autocorr(resid: np.ndarray) -> float:
    """Lag-1 autocorrelation of a line's residuals, 0 when negative (no deflation)."""
    den = float((resid * resid).sum())
    return max(0.0, float((resid[1:] * resid[:-1]).sum()) / den) if den > 0 else 0.0


def _line(x: np.ndarray, y: np.ndarray, alpha: float) -> dict:
    """The least-squares line of y on x in [0, 1]: slope, its SE (inflated for a positive lag-1
    autocorrelation of the residuals), two-sided p, critical t and the residual scatter."""
    fit = stats.linregress(x, y)
    df = len(y) - 2
    resid = y - (fit.intercept + fit.slope * x)
    rho = _autocorr(resid)
    se = float(fit.stderr) * math.sqrt((1 + rho) / (1 - rho)) if rho < 1 else math.inf
    if not se > 0:                                       # an exact line (or a flat one): no noise seen
        se, p = 0.0, (0.0 if abs(fit.slope) > 0 else 1.0)
    else:
        p = float(2 * stats.t.sf(abs(fit.slope) / se, df))
    return {"slope": float(fit.slope), "se": se, "p": p, "df": df, "rho": rho,
            "t_crit": _t(1 - alpha / 2, df), "t_pow": _t(POWER, df),
            "scatter": float(np.sqrt((resid ** 2).sum() / df))}


def _judged(drift: float, se: float, line: dict, noise: float) -> dict:
    """The fields of one test: drift, SE and CI (% of the mean), p, the drift a flag needs and
    the drift seen POWER of the time."""
    t_crit, t_pow = line["t_crit"], line["t_pow"]
    return {"slope_pct": float(drift), "drift_se_pct": float(se), "p_value": line["p"],
            "drift_ci_pct": (float(drift - t_crit * se), float(drift + t_crit * se)),
            "slope_limit_pct": float(max(DRIFT_PCT, t_crit * se)),
            "detectable_pct": float(max(DRIFT_PCT, t_crit * se) + t_pow * se),
            "noise_pct": float(noise), "df": line["df"], "round_autocorr": line["rho"]}


def _drift(rounds: np.ndarray, mean: float, alpha: float = ALPHA) -> dict:
    """The least-squares drift of the round means across the window (% of the mean) with its SE,
    CI and p-value."""
    r = len(rounds)
    x = (np.arange(r) + 0.5) / r                         # round centres, as a share of the window
    line = _line(x, rounds, alpha)
    return {**_judged(100 * line["slope"] / mean, 100 * line["se"] / mean, line, 100 * line["scatter"] / mean),
            "alpha": alpha}


def _states(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(active, burst) masks of a write's seconds: a stall is a second under STALL_FRAC of the
    90th percentile; the active seconds' log counts split in two groups where they separate
    best (Otsu), bursts the upper group, when the groups are BURST_GAP apart and the smaller
    holds BURST_MIN_SHARE of them. The split is made on the whole window, the same for its
    start and its end, so it cannot make a drift of a steady series."""
    active = (y > 0) & (y >= STALL_FRAC * np.quantile(y, 0.9))
    burst = np.zeros(len(y), dtype=bool)
    z = np.sort(np.log(y[active]))
    n = len(z)
    if n < 6:
        return active, burst
    i = np.arange(1, n)
    c = np.cumsum(z)
    m0, m1 = c[:-1] / i, (c[-1] - c[:-1]) / (n - i)
    best = int(np.argmax(i * (n - i) * (m1 - m0) ** 2))
    if m1[best] - m0[best] >= BURST_GAP and min(i[best], n - i[best]) >= max(3, BURST_MIN_SHARE * n):
        burst = active & (np.log(np.where(active, y, 1.0)) > (z[best] + z[best + 1]) / 2)
    return active, burst


def _level_drift(y: np.ndarray, per: int, active: np.ndarray, burst: np.ndarray, alpha: float) -> dict | None:
    """The drift of a write's level: rounds of whole TXG periods (at most LEVEL_MAX_ROUNDS, the
    window's end kept); the burst step g of the log counts estimated within rounds (a burst
    against the base seconds of its own round); a round's level its mean log count of active
    seconds less g times its share of bursts; the line through the levels. None when fewer than
    MIN_ROUNDS rounds hold an active second."""
    n = len(y)
    periods = n // per
    if periods < MIN_ROUNDS:
        return None
    k = math.ceil(periods / LEVEL_MAX_ROUNDS)
    rounds = periods // k
    rid = np.full(n, -1)
    rid[n - rounds * k * per:] = np.repeat(np.arange(rounds), k * per)
    use = active & (rid >= 0)
    g, z, b = rid[use], np.log(y[use]), burst[use].astype(float)
    cnt = np.bincount(g, minlength=rounds)
    ok = cnt > 0
    if ok.sum() < MIN_ROUNDS:
        return None
    zm, bm = (np.bincount(g, v, rounds) / np.maximum(cnt, 1) for v in (z, b))
    db = b - bm[g]
    step = float((db * (z - zm[g])).sum() / (db * db).sum()) if (db * db).sum() > 0 else 0.0
    x = (np.arange(rounds) + 0.5) / rounds
    line = _line(x[ok], (zm - step * bm)[ok], alpha)
    slope, se = line["slope"], line["se"]
    sech2 = 1 / math.cosh(slope / 2) ** 2                # drift = 2 tanh(b / 2): a ratio (1 + d/2) / (1 - d/2)
    return {**_judged(200 * math.tanh(slope / 2), 100 * se * sech2, line, 100 * line["scatter"]),
            "alpha": alpha, "rounds": int(ok.sum()), "round_s": k * per, "burst_step_pct": 100 * math.expm1(step)}


def _said(name: str, d: dict, what: str, secs: float) -> str:
    lo, hi = d["drift_ci_pct"]
    return (f"{name}{d['slope_pct']:+.1f}% across {secs:g} s (95% CI {lo:+.1f} to {hi:+.1f}%, p {d['p_value']:.2g}"
            + (f" against {d['alpha']:.3g}" if d["alpha"] != ALPHA else "") + f"; {what})")


def _write_tests(y: np.ndarray, txg_period_s: float, sample_s: float, mean_rounds: np.ndarray | None,
                 mean: float, what: str) -> tuple[dict | None, dict | None, dict]:
    """(level test, whole-rate test, the burst-and-stall fields) of a write: the level test at
    ALPHA / 2 beside the whole-rate test at ALPHA / 2 when the series has bursts or stalls and
    enough whole pulses; either alone at ALPHA."""
    active, burst = _states(y)
    patterned = bool(burst.any() or not active.all())
    both = patterned and mean_rounds is not None
    per = max(1, round(txg_period_s / sample_s))
    level = _level_drift(y, per, active, burst, ALPHA / 2 if both else ALPHA)
    rate = None
    if mean_rounds is not None and (level is None or patterned):
        rate = _drift(mean_rounds, mean, ALPHA / 2 if level is not None else ALPHA)
    pattern = {"burst_share": float(burst.mean()), "stall_share": float(1 - active.mean()),
               "burst_step_pct": level["burst_step_pct"] if level else math.nan}
    return level, rate, pattern


def steady_state(values, txg_period_s: float | None = None, sample_s: float = 1.0) -> dict:
    """Steady-state verdict on a per-second IOPS series: flag True (not steady), False, None.

    `txg_period_s`: the TXG period when the run wrote, None for reads and raw disks. Reads are
    judged on the line through round means of whole samples; writes on their level (bursts and
    stalls modelled, rounds of whole TXG periods) and on the line through round means of whole
    pulses (the TXG period, or the series' own pulse when longer, see `pulse_period`), each at
    ALPHA / 2. Returned beside the verdict: slope_pct (the signed drift across the window, % of
    the mean: the level's for a write, else the round means'), drift_se_pct, drift_ci_pct (95%),
    p_value, slope_limit_pct (the drift a flag needs: DRIFT_PCT, or the critical drift of the
    noise when larger), detectable_pct (the drift seen 80% of the time), noise_pct (the scatter
    of one round around the line, from the data), model ("rounds", "level", "level + rate"),
    level_slope_pct / level_p_value and mean_slope_pct / mean_p_value (each test's drift and p),
    burst_share, stall_share, burst_step_pct (a write's pattern), counting_noise_pct (what
    Poisson counting alone would give, for comparison), range_pct (max - min of the round means,
    reported, not judged), rounds, round_s, pulse_period_s.

    >>> steady_state([10000, 10100, 9900, 10050, 9950])["flag"]
    False
    """
    y = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    nan = math.nan
    out = {"samples": len(y), "samples_used": 0, "rounds": 0, "round_s": nan, "mean": nan, "range_pct": nan,
           "slope_pct": nan, "drift_se_pct": nan, "drift_ci_pct": (nan, nan), "p_value": nan, "noise_pct": nan,
           "counting_noise_pct": nan, "range_limit_pct": nan, "slope_limit_pct": DRIFT_PCT, "detectable_pct": nan,
           "drift_threshold_pct": DRIFT_PCT, "alpha": ALPHA, "txg_period_s": txg_period_s, "pulse_period_s": None,
           "model": None, "level_slope_pct": nan, "level_p_value": nan, "mean_slope_pct": nan, "mean_p_value": nan,
           "burst_share": nan, "stall_share": nan, "burst_step_pct": nan, "round_autocorr": nan}
    if len(y) == 0 or y.mean() <= 0:
        return {**out, "flag": None, "reason": "no I/O in the window"}
    per, what, pulse = _period(y, txg_period_s, sample_s)
    out["pulse_period_s"] = pulse
    rounds = mean = None
    if len(y) // per >= MIN_ROUNDS:
        rounds, per_round = _rounds(y, per)
        mean, round_s = float(rounds.mean()), per_round * sample_s
        if mean <= 0:
            return {**out, "flag": None, "reason": "no I/O in the whole periods of the window"}
        out.update(samples_used=len(rounds) * per_round, rounds=len(rounds), round_s=round_s, mean=mean,
                   range_pct=float(100 * (rounds.max() - rounds.min()) / mean),
                   counting_noise_pct=100 / math.sqrt(mean * round_s))
    level = None
    if txg_period_s is not None:
        level, rate, pattern = _write_tests(y, txg_period_s, sample_s, rounds, mean, what)
        out.update(pattern)
    else:
        rate = _drift(rounds, mean) if rounds is not None else None
    if level is None and rate is None:
        return {**out, "mean": float(y.mean()), "flag": None,
                "reason": f"too short to judge: {len(y) * sample_s:g} s hold {len(y) // per} whole {what} of "
                          f"{per * sample_s:g} s, {MIN_ROUNDS} needed ({MIN_ROUNDS * per * sample_s:g} s)"}
    tests, said = [], []
    if level is not None:
        secs = level["rounds"] * level["round_s"] * sample_s
        tests.append(level)
        said.append(_said("drift of the level ", level, f"{level['rounds']} rounds of {level['round_s'] * sample_s:g}"
                          f" s; bursts {100 * out['burst_share']:.0f}% of seconds at {level['burst_step_pct']:+.0f}%,"
                          f" stalls {100 * out['stall_share']:.0f}%", secs))
        out.update(level_slope_pct=level["slope_pct"], level_p_value=level["p_value"])
        if rounds is None:
            out.update(mean=float(y.mean()), rounds=level["rounds"], round_s=level["round_s"] * sample_s,
                       samples_used=level["rounds"] * level["round_s"])
    if rate is not None:
        tests.append(rate)
        said.append(_said("drift " if level is None else "drift of the rate ", rate,
                          f"{len(rounds)} rounds of {out['round_s']:g} s, whole {what}",
                          out["samples_used"] * sample_s))
        out.update(mean_slope_pct=rate["slope_pct"], mean_p_value=rate["p_value"])
    main = tests[0]
    out.update({k: main[k] for k in ("slope_pct", "drift_se_pct", "drift_ci_pct", "p_value", "slope_limit_pct",
                                     "detectable_pct", "noise_pct", "df", "round_autocorr")})
    out["model"] = "rounds" if level is None else "level + rate" if rate is not None else "level"
    text = "; ".join(said)
    hit = [t for t in tests if t["p_value"] < t["alpha"] and abs(t["slope_pct"]) >= DRIFT_PCT]
    if hit:
        return {**out, "flag": True, "reason": f"{text}: clear and beyond {DRIFT_PCT:g}%"}
    clear = any(t["p_value"] < t["alpha"] for t in tests)
    tail = (f"clear but under {DRIFT_PCT:g}%" if clear else
            f"within the noise; a drift of {main['detectable_pct']:.0f}% would be seen {POWER:.0%} of the time")
    return {**out, "flag": False, "reason": f"{text}: {tail}"}
