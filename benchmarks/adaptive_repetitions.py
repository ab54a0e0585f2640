"""Does the repetition rule keep its error rates? Simulated as zbench runs it.

Every simulated cell goes through ``RepetitionRule.decide`` one run at a time, exactly
as the executor calls it (queue the pilot; after each run ask the rule; queue what it
adds), with the rule built from a spec's ``repetitions`` block by the spec parser.
Runs are normal with the given CoV (mean 1); a share of runs may be flagged at random
(excluded and replaced, as truth checks do). Printed per CoV and design:

  runs      mean admissible runs per cell (attempts: runs including excluded ones)
  coverage  of the nominal 95% interval of the mean (Stein: mean +- t_{n0-1} s0/sqrt(n),
            the pilot's quantile and SD; fixed: the t interval)
  type I    two cells with equal means found different at 5% (log ratio of means;
            Stein: pilot SDs and t_{n0-1}, ``stein_log_ratio``; fixed: Welch df, as the
            analysis does)
  power     the same with a true +10% difference
  plain     what the usual t interval / Welch test on all runs gives for the same Stein
            cells: the analysis must use Stein's interval, not these
  old rule  the former "stop once the rel CI half-width <= 5%, min 3, max 10" rule

    python benchmarks/adaptive_repetitions.py [--cells 20000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time

import numpy as np
from scipy import stats as sps

from zbench_lib.sweeps.planning.repetitions import Outcome, RepetitionRule, stein_interval, stein_log_ratio
from zbench_lib.sweeps.spec.values import repetitions

COVS = (0.02, 0.05, 0.10, 0.20)
STEIN = {"pilot": 3, "max": 10, "target_rel_ci": 0.05}      # declared: the default is fixed 5
DESIGNS = [("Stein pilot 3, max 10, 5%", STEIN, 0.0),
           ("Stein pilot 5, max 10, 5%", {"pilot": 5}, 0.0),
           ("Stein pilot 3, 10% runs flagged", STEIN, 0.10),
           ("fixed 5 (default)", {}, 0.0)]


def simulate_cell(rule: RepetitionRule, cov: float, mean: float, flag_rate: float, rng: random.Random):
    """One cell as the executor runs it: (admissible values by rep, attempts)."""
    outcomes, pending, nxt = [], list(range(1, rule.pilot + 1)), rule.pilot + 1
    while pending:
        rep = pending.pop(0)
        outcomes.append(Outcome(rep, rng.gauss(mean, cov * mean), rng.random() >= flag_rate))
        add = rule.decide(outcomes, pending).add
        pending += range(nxt, nxt + add)
        nxt += add
    return [o.value for o in sorted(outcomes, key=lambda o: o.rep) if o.admissible], len(outcomes)


def moments(cells) -> tuple:
    """(n, mean, SD) arrays of lists of values."""
    n = np.array([len(v) for v in cells], dtype=float)
    m = np.array([math.fsum(v) / len(v) for v in cells])
    sd = np.array([math.sqrt(math.fsum((x - mu) ** 2 for x in v) / (len(v) - 1)) for v, mu in zip(cells, m)])
    return n, m, sd


def welch_rejects(a, b, conf=0.95) -> np.ndarray:
    """Delta-method log ratio of means, Welch-Satterthwaite df, all runs (the analysis' test)."""
    (na, ma, sa), (nb, mb, sb) = moments(a), moments(b)
    va, vb = sa ** 2 / (na * ma ** 2), sb ** 2 / (nb * mb ** 2)
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    return np.abs(np.log(ma / mb)) > sps.t.ppf((1 + conf) / 2, df) * np.sqrt(va + vb)


def plain_covers(cells, mu=1.0, conf=0.95) -> np.ndarray:
    n, m, sd = moments(cells)
    return np.abs(m - mu) <= sps.t.ppf((1 + conf) / 2, n - 1) * sd / np.sqrt(n)


def run_design(block: dict, flag_rate: float, cov: float, cells: int, rng: random.Random) -> dict:
    rule = RepetitionRule.from_config(repetitions(block))
    h0 = [simulate_cell(rule, cov, 1.0, flag_rate, rng) for _ in range(cells)]
    h1 = [simulate_cell(rule, cov, 1.1, flag_rate, rng) for _ in range(cells // 2)]
    enough = max(2, rule.pilot)
    ok = [v for v, _ in h0 if len(v) >= enough]          # cells that gave up short are left out
    a, b = ok[:len(ok) // 2], ok[len(ok) // 2:2 * (len(ok) // 2)]      # pairs of equal cells
    shifted = [v for v, _ in h1 if len(v) >= enough]
    p1, p0 = shifted[:len(ok)], ok[:len(shifted)]
    if rule.design == "stein":                           # the pilot's SD and t quantile (Stein)
        def rejects(x, y):
            return np.array([not lo <= 1 <= hi for _, lo, hi in
                             (stein_log_ratio(u, v, rule.pilot) for u, v in zip(x, y))])
    else:
        rejects = welch_rejects
    covered = [lo <= 1.0 <= hi for _, lo, hi in (stein_interval(v, rule.pilot) for v in ok)]
    stein = rule.design == "stein"
    return {"runs": np.mean([len(v) for v, _ in h0]), "attempts": np.mean([k for _, k in h0]),
            "gave_up": 1 - len(ok) / len(h0), "coverage": np.mean(covered),
            "type1": rejects(a, b).mean(), "power": rejects(p1, p0).mean(),
            "plain_cov": plain_covers(ok).mean() if stein else None,
            "plain_t1": welch_rejects(a, b).mean() if stein else None}


def old_rule(cov: float, cells: int, rng: np.random.Generator, lo=3, hi=10, target=0.05) -> dict:
    """The former optional-stopping rule, vectorised, for reference (it is no longer in zbench)."""
    def cells_of(mu, k):
        x = rng.normal(mu, cov * mu, size=(k, hi))
        stop = np.full(k, hi)
        for n in range(hi, lo - 1, -1):            # the first n whose rel half-width reaches the target
            v = x[:, :n]
            rel = sps.t.ppf(0.975, n - 1) * v.std(1, ddof=1) / math.sqrt(n) / np.abs(v.mean(1))
            stop = np.where(rel <= target, n, stop)
        return [list(row[:n]) for row, n in zip(x, stop)]
    a, b = cells_of(1.0, cells), cells_of(1.1, cells // 2)
    return {"runs": np.mean([len(v) for v in a]), "attempts": np.mean([len(v) for v in a]), "gave_up": 0.0,
            "coverage": plain_covers(a).mean(), "type1": welch_rejects(a[0::2], a[1::2]).mean(),
            "power": welch_rejects(b, a[:len(b)]).mean(), "plain_cov": None, "plain_t1": None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", type=int, default=20000, help="simulated cells per design and CoV")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng, nrng, t0 = random.Random(args.seed), np.random.default_rng(args.seed), time.monotonic()
    pct = lambda x: "" if x is None else f"{100 * x:5.1f}%"   # noqa: E731
    print(f"{args.cells} cells per row (type I: {args.cells // 2} pairs of equal cells; power: +10%), "
          "nominal 95%, normal runs")
    head = (f"{'CoV':>4}  {'design':<38}{'runs':>6}{'attempts':>9}{'coverage':>10}{'type I':>8}{'power':>8}"
            f"{'plain cov':>11}{'plain t1':>10}")
    print(head + "\n" + "-" * len(head))
    worst = {"coverage": 1.0, "type1": 0.0}
    for cov in COVS:
        rows = [(name, run_design(block, flag, cov, args.cells, rng)) for name, block, flag in DESIGNS]
        rows.append(("old: stop at 5% (min 3, max 10)", old_rule(cov, args.cells, nrng)))
        for name, r in rows:
            print(f"{cov * 100:3.0f}%  {name:<38}{r['runs']:6.2f}{r['attempts']:9.2f}{pct(r['coverage']):>10}"
                  f"{pct(r['type1']):>8}{pct(r['power']):>8}{pct(r['plain_cov']):>11}{pct(r['plain_t1']):>10}"
                  + (f"  ({pct(r['gave_up']).strip()} cells gave up)" if r["gave_up"] else ""))
            if name.startswith("Stein"):
                worst = {"coverage": min(worst["coverage"], r["coverage"]), "type1": max(worst["type1"], r["type1"])}
        print()
    ok = worst["coverage"] >= 0.94 and worst["type1"] <= 0.055
    print(f"Stein rows, CoV 2-20%: lowest coverage {pct(worst['coverage']).strip()}, highest type I "
          f"{pct(worst['type1']).strip()} -> {'meets' if ok else 'MISSES'} coverage >= 94%, type I <= 5.5%  "
          f"({time.monotonic() - t0:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
