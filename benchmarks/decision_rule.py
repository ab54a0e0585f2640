"""Does the one decision rule (methods §3.1, `analysis/stats/decision.py`) keep its error rates?

Families of m comparisons (m = 1, 5, 6, 12, 24: the examples' family sizes), each comparison a level
against its own baseline, 3 units a side, lognormal units with CoV 5% or 10%. Per family: the log
ratio, its delta-method SE and Welch df (methods §1), the family's one Holm level (`ratio.holm`), then the
verdict of `decision.decide` on the one interval at that level. The hot loop is vectorised numpy; the first
families of every setting are decided again by `ratio.holm` and `decision.decide` themselves and must agree
verdict for verdict.

Printed per CoV and family size:

  null FWER diff   all true ratios 1: a family with any difference claim (higher, lower, margin not
                   cleared, different within the margin); must be <= 5%
  null FWER h/l    the same for "higher/lower" (clearing the margin) alone
  margin FWER      all true ratios exactly 1 + margin: a family with any false claim, "equivalent"
                   (the ratio is not inside the margin) or "higher" (it is not beyond); must be <= 5%
  margin eq        the same for "equivalent" alone
  power 10% / 20%  all true ratios 1.10 / 1.20: the share of comparisons called "higher" (in brackets:
                   any difference claim of the right direction, margin cleared or not)
  eq power         all true ratios 1: the share of comparisons called "equivalent" (the power of
                   "no meaningful difference")

    python benchmarks/decision_rule.py [--families 20000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats as sps

from zbench_lib.analysis.stats.decision import (EQUIVALENT, HIGHER, HIGHER_UNCLEAR, INCONCLUSIVE, LOWER,
                                                LOWER_UNCLEAR, WITHIN, decide)
from zbench_lib.analysis.stats.ratio import holm

ALPHA, MARGIN, UNITS = 0.05, 0.05, 3
SIZES = (1, 5, 6, 12, 24)
COVS = (0.05, 0.10)
CODES = (HIGHER, LOWER, HIGHER_UNCLEAR, LOWER_UNCLEAR, WITHIN, EQUIVALENT, INCONCLUSIVE)
CHECKED = 20           # families per setting decided again by the real functions


def _stats(rng, n_fam: int, m: int, cov: float, ratio: float):
    """(log ratio, SE, df) of each comparison, shape (n_fam, m): delta method and Welch df (methods §1)."""
    sigma = math.sqrt(math.log(1 + cov ** 2))
    mu = -sigma ** 2 / 2                                  # unit mean 1 on the linear scale
    x = np.exp(rng.normal(mu, sigma, (n_fam, m, UNITS))) * ratio
    b = np.exp(rng.normal(mu, sigma, (n_fam, m, UNITS)))
    mx, mb = x.mean(-1), b.mean(-1)
    vx, vb = x.var(-1, ddof=1) / (UNITS * mx ** 2), b.var(-1, ddof=1) / (UNITS * mb ** 2)
    se = np.sqrt(vx + vb)
    df = (vx + vb) ** 2 / (vx ** 2 / (UNITS - 1) + vb ** 2 / (UNITS - 1))
    return np.log(mx / mb), se, df


def _holm_levels(p: np.ndarray) -> np.ndarray:
    """The one Holm level of each family, per row (the vectorised `ratio.holm`): its last step's."""
    n_fam, m = p.shape
    sp = np.sort(p, axis=1)
    steps = ALPHA / (m - np.arange(m))
    fails = sp >= steps
    k_star = np.where(fails.any(1), fails.argmax(1), m - 1)      # the last step Holm tests, 0-based
    return np.repeat((ALPHA / (m - k_star))[:, None], m, axis=1)


def _verdicts(est, se, df, level) -> np.ndarray:
    """The code (index into CODES) of each comparison's verdict (the vectorised `decision.decide`): where its
    one (1 − level) interval lies against 1 and the margin."""
    lo_b, hi_b = 1 / (1 + MARGIN), 1 + MARGIN
    t1 = sps.t.ppf(1 - level / 2, df)
    lo, hi = np.exp(est - t1 * se), np.exp(est + t1 * se)
    code = np.full(est.shape, CODES.index(INCONCLUSIVE))
    code[(lo > lo_b) & (hi < hi_b)] = CODES.index(EQUIVALENT)
    excl = (lo > 1) | (hi < 1)
    code[excl & (lo > 1)] = CODES.index(HIGHER_UNCLEAR)
    code[excl & (hi < 1)] = CODES.index(LOWER_UNCLEAR)
    code[excl & (lo > lo_b) & (hi < hi_b)] = CODES.index(WITHIN)
    code[excl & (lo > hi_b)] = CODES.index(HIGHER)
    code[excl & (hi < lo_b)] = CODES.index(LOWER)
    return code


def _check(est, se, df, code) -> None:
    """The first families decided by `ratio.holm` and `decision.decide` themselves: the same verdicts."""
    for f in range(min(CHECKED, len(est))):
        p = 2 * sps.t.sf(np.abs(est[f] / se[f]), df[f])
        _, level = holm(p, ALPHA)
        for j in range(est.shape[1]):
            d = decide(float(est[f, j]), float(se[f, j]), float(df[f, j]), float(level[j]), MARGIN, est.shape[1])
            if d.verdict != CODES[code[f, j]]:
                sys.exit(f"vectorised rule disagrees with decide(): family {f}, comparison {j}: "
                         f"{CODES[code[f, j]]} vs {d.verdict}")


def simulate(rng, n_fam: int, m: int, cov: float, ratio: float) -> np.ndarray:
    est, se, df = _stats(rng, n_fam, m, cov, ratio)
    p = 2 * sps.t.sf(np.abs(est / se), df)
    code = _verdicts(est, se, df, _holm_levels(p))
    _check(est, se, df, code)
    return code


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.process_time()
    diff = [CODES.index(v) for v in (HIGHER, LOWER, HIGHER_UNCLEAR, LOWER_UNCLEAR, WITHIN)]
    hl = [CODES.index(HIGHER), CODES.index(LOWER)]
    eq, hi = CODES.index(EQUIVALENT), CODES.index(HIGHER)
    right = [CODES.index(HIGHER), CODES.index(HIGHER_UNCLEAR), CODES.index(WITHIN)]
    print(f"{args.families} families per row, {UNITS} units a side, lognormal, alpha {ALPHA}, margin ±{MARGIN:.0%}")
    print(f"{'CoV':>4} {'m':>3} | {'null FWER diff':>14} {'null FWER h/l':>13} | {'margin FWER':>11} "
          f"{'margin eq':>9} | {'power 10%':>15} {'power 20%':>15} | {'eq power':>8}")
    worst = 0.0
    for cov in COVS:
        for m in SIZES:
            null = simulate(rng, args.families, m, cov, 1.0)
            at = simulate(rng, args.families, m, cov, 1 + MARGIN)
            p10 = simulate(rng, args.families, m, cov, 1.10)
            p20 = simulate(rng, args.families, m, cov, 1.20)
            fw_diff = np.isin(null, diff).any(1).mean()
            fw_hl = np.isin(null, hl).any(1).mean()
            fw_margin = np.isin(at, [eq, hi]).any(1).mean()
            fw_eq = (at == eq).any(1).mean()
            worst = max(worst, fw_diff, fw_margin)
            print(f"{cov:>4.0%} {m:>3} | {fw_diff:>14.2%} {fw_hl:>13.2%} | {fw_margin:>11.2%} {fw_eq:>9.2%} | "
                  f"{(p10 == hi).mean():>6.1%} ({np.isin(p10, right).mean():>5.1%}) "
                  f"{(p20 == hi).mean():>6.1%} ({np.isin(p20, right).mean():>5.1%}) | {(null == eq).mean():>8.1%}")
    print(f"worst family-wise error {worst:.2%} (bound 5%); CPU {time.process_time() - t0:.1f} s; "
          f"the first {CHECKED} families of every row agreed with ratio.holm + decision.decide")
    return 0 if worst <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / args.families) else 1


if __name__ == "__main__":
    sys.exit(main())
