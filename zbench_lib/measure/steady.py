"""SNIA-style steady state of a run's per-second IOPS, judged as five rounds.

SNIA SSS PTS judges a measurement window of five rounds: max - min of the round means
<= 20% of their average, and the least-squares line's rise across the window <= 10%
(docs/statistics.md, Steady state). Here the rounds are sub-windows of one run, which
is an adaptation with two consequences:

- Writes pulse with the TXG commit (`zfs_txg_timeout`, 5 s by default). A round that
  is not a whole number of TXG periods holds a varying number of pulses, and the pulse
  aliases into range and slope (6 s rounds against a 5 s pulse). For writes the rounds
  are k whole TXG periods, k as large as the window allows; the first seconds that do
  not fill a round are left out (SNIA's measurement window is the last rounds). A
  window that cannot hold five rounds of one period is not judged.
- A round of a slow device holds few I/Os, so its mean carries counting noise of about
  1/sqrt(I/Os per round) even when nothing changes. What that noise alone reaches 99%
  of the time is 4.60 noise for the range of 5 rounds (the studentized range
  q(0.99; 5, inf)) and 2.576 x 4/sqrt(10) noise for the rise. When either exceeds
  SNIA's limit, the rule could not have told a drift of that size from noise: the run
  is not judged (flag None), never "steady". When the noise fits, SNIA's limits are
  used as they are, and a rise of twice the slope limit (20%) is caught at least 99%
  of the time (the rise's noise SD is then at most 10 / 2.576 = 3.9%; simulated in
  tests/test_truth_steady.py). Counting noise is taken as Poisson; throttled
  completions are more regular, so the rule errs towards "not judged".
- A write faster than the disks drain fills ZFS's dirty-data buffer, and the write throttle
  then stalls it while a TXG syncs: bursts and silences with a cycle of one or two TXG syncs
  (28 s for 4k writes on a 4K-volblocksize raidz1 of six lab disks), not the 5 s timeout.
  The pulse period of a write is therefore read from the series itself (`pulse_period`: the
  first lag whose autocorrelation is clearly periodic) and used when longer than the TXG
  timeout; a window that cannot hold five rounds of it is not judged.
"""

from __future__ import annotations

import math

import numpy as np

STEADY_RANGE_PCT = 20.0      # max - min <= 20% of the mean
STEADY_SLOPE_PCT = 10.0      # least-squares rise across the window <= 10% of the mean
STEADY_ROUNDS = 5            # SNIA's measurement window is five rounds
STEADY_MIN_SAMPLES = 5       # one sample per round at least
STEADY_NOISE_RANGE_Q = 4.60  # 99% quantile of the range of 5 normal samples, in SDs
STEADY_NOISE_Z = 2.576       # two-sided 99% normal quantile, for the rise across the rounds
TXG_PERIOD_S = 5.0           # zfs_txg_timeout default: writes pulse with it
PULSE_MIN_ACF = 0.5          # autocorrelation of a clear pulse (white noise stays under 0.4 at 60 s)
PULSE_NEAR_MAX = 0.9         # the fundamental: the first lag within 90% of the best one, not a multiple
# SD of the least-squares rise across 5 rounds, in units of one round's SD: 4 / sqrt(10).
RISE_SD = (STEADY_ROUNDS - 1) / math.sqrt(sum((k - (STEADY_ROUNDS - 1) / 2) ** 2 for k in range(STEADY_ROUNDS)))


def _rounds(y: np.ndarray, txg_period_s: float | None, sample_s: float, what: str = "TXG periods"):
    """(round means, seconds per round, samples used) or a reason the window has no rounds."""
    if txg_period_s is None:
        return np.array([r.mean() for r in np.array_split(y, STEADY_ROUNDS)]), len(y) * sample_s / STEADY_ROUNDS, len(y)
    period = max(1, round(txg_period_s / sample_s))            # samples per TXG period
    k = len(y) // (STEADY_ROUNDS * period)                     # TXG periods per round
    if k < 1:
        return (f"{len(y) * sample_s:g} s cannot hold {STEADY_ROUNDS} rounds of whole {what} "
                f"({txg_period_s:g} s): {STEADY_ROUNDS * period * sample_s:g} s needed")
    used = y[len(y) - STEADY_ROUNDS * k * period:]
    return used.reshape(STEADY_ROUNDS, k * period).mean(axis=1), k * period * sample_s, len(used)


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


def steady_state(values, txg_period_s: float | None = None, sample_s: float = 1.0) -> dict:
    """Steady-state verdict on a per-second IOPS series: flag True (not steady), False, None.

    `txg_period_s`: the TXG period when the run wrote (rounds are whole multiples of it, or
    of the series' own pulse when that is longer, see `pulse_period`), None for reads.
    Returns the round statistics beside the verdict: range_pct, slope_pct
    (signed rise across the rounds, % of the mean), noise_pct (counting noise of one
    round), the limits judged against and the limits noise alone would need.

    >>> steady_state([10000, 10100, 9900, 10050, 9950])["flag"]
    False
    """
    y = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    out = dict(samples=len(y), samples_used=0, round_s=math.nan, mean=math.nan, range_pct=math.nan,
               slope_pct=math.nan, noise_pct=math.nan, range_limit_pct=STEADY_RANGE_PCT,
               slope_limit_pct=STEADY_SLOPE_PCT, noise_range_pct=math.nan, noise_slope_pct=math.nan,
               txg_period_s=txg_period_s)
    if len(y) < STEADY_MIN_SAMPLES:
        return {**out, "flag": None, "reason": f"too short to judge ({len(y)} < {STEADY_MIN_SAMPLES} samples)"}
    mean = float(y.mean())
    if mean <= 0:
        return {**out, "mean": mean, "flag": None, "reason": "no I/O in the window"}
    pulse = pulse_period(y, txg_period_s, sample_s) if txg_period_s is not None else None
    out["pulse_period_s"] = pulse
    longer = pulse is not None and pulse > txg_period_s
    got = _rounds(y, pulse if longer else txg_period_s, sample_s, "write pulses" if longer else "TXG periods")
    if isinstance(got, str):
        return {**out, "mean": mean, "flag": None, "reason": got}
    rounds, round_s, used = got
    mean = float(y[len(y) - used:].mean())
    x = np.arange(STEADY_ROUNDS)
    slope = float(np.polyfit(x, rounds, 1)[0])
    rng = 100 * float(rounds.max() - rounds.min()) / mean
    rise = 100 * slope * (STEADY_ROUNDS - 1) / mean
    noise = 100 / math.sqrt(mean * round_s)
    noise_range, noise_slope = STEADY_NOISE_RANGE_Q * noise, STEADY_NOISE_Z * RISE_SD * noise
    out.update(samples_used=used, round_s=round_s, mean=mean, range_pct=rng, slope_pct=rise, noise_pct=noise,
               noise_range_pct=noise_range, noise_slope_pct=noise_slope)
    if noise_range > STEADY_RANGE_PCT or noise_slope > STEADY_SLOPE_PCT:
        return {**out, "flag": None,
                "reason": f"could not have detected a drift of this size: {mean * round_s:.0f} I/Os per "
                          f"{round_s:g} s round, counting noise {noise:.1f}% needs limits of range "
                          f"{noise_range:.3g}% and slope {noise_slope:.3g}% (SNIA: "
                          f"{STEADY_RANGE_PCT:g}%, {STEADY_SLOPE_PCT:g}%)"}
    fails = [f"range {rng:.1f}% > {STEADY_RANGE_PCT:g}%"] * (rng > STEADY_RANGE_PCT) + \
            [f"slope {rise:+.1f}% > {STEADY_SLOPE_PCT:g}%"] * (abs(rise) > STEADY_SLOPE_PCT)
    return {**out, "flag": bool(fails), "reason": "; ".join(fails) or "steady"}
