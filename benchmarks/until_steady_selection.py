"""What measuring until steady (`until_steady`, methods §12.1) does to an estimate, by simulation.

A write run's rate settles towards its steady state S: rate(t) = S (1 + A exp(-t / tau)), t from
the start of the run's first window (A > 0: faster while the pool or the device is fresh, as
writes into empty space; A < 0: slower at first). Each window is a per-second series of the lab's
random writes (steady_state_calibration's TXG-burst model: a base rate with bursts of 1.8x it,
Poisson counts) under that profile, judged by the project's steady-state test (`steady_state`,
5 s TXG period) exactly as a run's window is, and the run goes on by `until_steady.extends` up
to M windows. Printed per model: runs extended, the mean number of windows, the share that ended
at M still not steady, and the estimate's bias against S (mean over runs of window mean / S - 1)
and its spread across runs (SD of the same) for the window the run reports (the last), for its
first window, and for the window M every run would reach with a fixed M windows of preconditioning.

    python benchmarks/until_steady_selection.py [--sims 400] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from steady_state_calibration import BURST_GAIN, BURSTS, GAPS, _mark, _renewal  # noqa: E402

from zbench_lib.measure.steady import steady_state  # noqa: E402
from zbench_lib.measure.until_steady import WindowVerdict, extends  # noqa: E402

TXG_S = 5
# (label, window s, IOPS at steady state, A, tau s); M = 5 windows
MODELS = [("steady", 60, 100, 0.0, 60), ("steady", 150, 100, 0.0, 60),
          ("fresh +20%, tau 60 s", 60, 100, 0.2, 60), ("fresh +20%, tau 60 s", 150, 100, 0.2, 60),
          ("fresh +50%, tau 120 s", 60, 100, 0.5, 120), ("fresh +50%, tau 120 s", 150, 100, 0.5, 120),
          ("slow start -30%, tau 60 s", 60, 100, -0.3, 60), ("fresh +20%, tau 60 s", 60, 1000, 0.2, 60)]
MAX_WINDOWS = 5


def bursts(rng, sims: int, n: int) -> np.ndarray:
    """(sims, n) intensity of the lab's TXG-burst writes, mean 1 (steady_state_calibration.txg_bursts)."""
    g, gp = np.array(list(GAPS)), np.array(list(GAPS.values()), float) / sum(GAPS.values())
    b, bp = np.array(list(BURSTS)), np.array(list(BURSTS.values()), float) / sum(BURSTS.values())
    k = int(n / (g * gp).sum() * 3) + 4
    starts = _renewal(rng, sims, n, rng.choice(g, size=(sims, k), p=gp))
    profile = np.where(_mark(sims, n, starts, rng.choice(b, size=(sims, k), p=bp)), BURST_GAIN, 1.0)
    return profile / (1 + (BURST_GAIN - 1) * (b * bp).sum() / (g * gp).sum())


def simulate(rng, sims: int, window: int, rate: float, a: float, tau: float) -> dict:
    """Every run's M windows (a run's later windows are only read when it goes on)."""
    series, means = [], np.empty((sims, MAX_WINDOWS))
    for k in range(MAX_WINDOWS):
        t = k * window + np.arange(window) + 0.5
        counts = rng.poisson(rate * bursts(rng, sims, window) * (1 + a * np.exp(-t / tau)))
        series.append(counts)
        means[:, k] = counts.mean(axis=1) / rate
    used = np.empty(sims, int)
    still = np.zeros(sims, bool)
    for i in range(sims):
        for k in range(MAX_WINDOWS):
            flag = steady_state(series[k][i].astype(float).tolist(), txg_period_s=TXG_S)["flag"]
            if not extends(WindowVerdict(k + 1, flag, "", math.nan, 0.0, float(window)), MAX_WINDOWS):
                used[i], still[i] = k + 1, flag is not False
                break
    reported = means[np.arange(sims), used - 1]
    return {"extended": float((used > 1).mean()), "windows": float(used.mean()),
            "at_max_not_steady": float(still.mean()),
            **{f"{name}_bias": float((v - 1).mean()) for name, v in
               (("reported", reported), ("first", means[:, 0]), ("fixed", means[:, -1]))},
            **{f"{name}_sd": float(v.std(ddof=1)) for name, v in
               (("reported", reported), ("first", means[:, 0]), ("fixed", means[:, -1]))}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    print(f"M = {MAX_WINDOWS} windows, {args.sims} runs per model; bias and SD of window mean / S - 1\n")
    print("| model                        | window s | IOPS | extended | windows | at M, not steady "
          "| reported bias (SD) | first window | fixed M windows |")
    print("|------------------------------|----------|------|----------|---------|------------------"
          "|--------------------|--------------|-----------------|")
    for label, window, rate, a, tau in MODELS:
        r = simulate(rng, args.sims, window, rate, a, tau)
        pct = lambda k: f"{100 * r[k + '_bias']:+5.1f}% ({100 * r[k + '_sd']:4.1f})"  # noqa: E731
        print(f"| {label:<28} | {window:>8} | {rate:>4} | {100 * r['extended']:7.1f}% | {r['windows']:7.2f} "
              f"| {100 * r['at_max_not_steady']:15.1f}% | {pct('reported'):>18} | {pct('first'):>12} "
              f"| {pct('fixed'):>15} |")
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
