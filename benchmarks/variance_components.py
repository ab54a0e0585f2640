"""Does the variance-components estimator recover known components, and does its allocation pick the right design?

Simulated two-level studies, as a sweep measures a family: `--cells` cells (different means), each on
`--pools` pool replicates with `--runs` runs on each; a run's value is lognormal,
log y = mu_cell + b_pool + e_run, b ~ N(0, sigma2_b), e ~ N(0, sigma2_w), with the total relative
variance held at CoV 5% (sigma2_b + sigma2_w = 0.05²) and several true ratios sigma2_w / sigma2_b.
Each study goes through `variance_components.fit_components` exactly as a sweep's results would
(REML by statsmodels MixedLM, profile-likelihood interval of sigma2_b, Satterthwaite of sigma2_w).
Printed per ratio:

  est mean / median   of the estimates (true values beside them)
  cover               share of the studies whose 95% interval holds the true value
  at 0                share of the studies with sigma2_b estimated at the boundary
  design              the design `allocate` recommends for the given costs and budget (the most
                      frequent one, and how often), against the true optimum (`best_design` on the
                      true components)
  efficiency          true expected half-width at the optimum / at the recommended design (1 = as
                      good), mean over studies

A second table checks `expected_rel_halfwidth` itself: cells simulated on the optimal designs,
their pool-level t interval of the mean computed as stats.summary does, its coverage and root
mean square relative half-width against the expected one. Then `zbench plan-advice` on
data/examples/scaling.

    python benchmarks/variance_components.py [--studies 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter

import numpy as np
import pandas as pd
from scipy import stats as sps

from zbench_lib.analysis.report.plan_advice import plan_advice, render
from zbench_lib.analysis.stats.variance_components import (Components, Costs, Interval, allocate, best_design,
                                                           design_words,
                                                           expected_rel_halfwidth, fit_components, r_star)

TOTAL = 0.05 ** 2
RATIOS = (0.25, 1.0, 4.0, 16.0)
COSTS = Costs(create_s=100.0, prefill_s=20.0, teardown_s=0.0, run_s=30.0, cells_per_pool=1.0, n_pools=1, n_runs=1)
WALL_S = 30 * 60


def truth(sb: float, sw: float) -> Components:
    """Components with the true values (their 'intervals' degenerate): the allocation's oracle."""
    def iv(v):
        return Interval(v, v, v, math.inf, "true")
    return Components((("case", "true"),), "iops", 1, 1, 2, 1.0, 2.0, iv(sb), iv(sw), iv(sb + sw), True, True,
                      "", "true")


def study(rng, sb: float, sw: float, cells: int, pools: int, runs: int) -> pd.DataFrame:
    c = np.repeat(np.arange(cells), pools * runs)
    p = np.repeat(np.arange(cells * pools), runs)
    b = rng.normal(0, math.sqrt(sb), cells * pools)[p]
    y = np.exp(np.log(1000.0 * (1 + c)) + b + rng.normal(0, math.sqrt(sw), len(c)))
    return pd.DataFrame({"workload": "randread", "direction": "read", "layout": [f"L{k}" for k in c],
                         "pool_id": [f"p{k}" for k in p], "pool_replicate": p % pools + 1,
                         "rep": np.tile(np.arange(1, runs + 1), cells * pools), "iops": y})


def one_ratio(rng, ratio: float, args) -> dict:
    sb, sw = TOTAL / (1 + ratio), TOTAL * ratio / (1 + ratio)
    true_c = truth(sb, sw)
    best = best_design(true_c, COSTS, WALL_S)
    rows, designs, eff, rstars = [], Counter(), [], []
    for _ in range(args.studies):
        c = fit_components(study(rng, sb, sw, args.cells, args.pools, args.runs), "iops")[0]
        rows.append((c.between.estimate, c.between.low <= sb <= c.between.high, c.between.estimate <= 0,
                     c.within.estimate, c.within.low <= sw <= c.within.high))
        rec = allocate(c, COSTS, WALL_S).best
        designs[(rec.pools, rec.runs_per_pool)] += 1
        eff.append(best.expected.rel_halfwidth
                   / expected_rel_halfwidth(true_c, rec.pools, rec.runs_per_pool).rel_halfwidth)
        rs = r_star(c, COSTS)
        rstars.append(rs if rs is not None else math.nan)
    a = np.array(rows, dtype=float)
    (mp, mr), k = designs.most_common(1)[0]
    return dict(ratio=ratio, sb=sb, sb_mean=a[:, 0].mean(), sb_median=np.median(a[:, 0]), sb_cover=a[:, 1].mean(),
                sb_zero=a[:, 2].mean(), sw=sw, sw_mean=a[:, 3].mean(), sw_median=np.median(a[:, 3]),
                sw_cover=a[:, 4].mean(), r_true=r_star(true_c, COSTS), r_est=float(np.nanmedian(rstars)),
                optimum=f"{best.pools}×{best.runs_per_pool}", optimum_hw=best.expected.rel_halfwidth,
                recommended=f"{mp}×{mr} ({k / args.studies:.0%})", same=designs[(best.pools, best.runs_per_pool)]
                / args.studies, efficiency=float(np.mean(eff)), efficiency_min=float(np.min(eff)))


def realised(rng, sb: float, sw: float, pools: int, runs: int, n: int = 4000) -> tuple[float, float]:
    """Coverage and RMS relative half-width of the pool-level t interval (stats.summary's) over n cells."""
    logs = (rng.normal(0, math.sqrt(sb), (n, pools, 1)) + rng.normal(0, math.sqrt(sw), (n, pools, runs)))
    unit = np.exp(logs).mean(axis=2)                     # each pool replicate's mean of its runs
    m, s = unit.mean(axis=1), unit.std(axis=1, ddof=1)
    h = sps.t.ppf(0.975, pools - 1) * s / m / math.sqrt(pools)
    mu = math.exp((sb + sw) / 2)                         # the lognormal's mean
    cover = (m * np.exp(-h) <= mu) & (mu <= m * np.exp(h))
    return float(cover.mean()), float(np.sqrt(np.mean(np.sinh(h) ** 2)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=200, help="simulated studies per true ratio")
    ap.add_argument("--cells", type=int, default=4)
    ap.add_argument("--pools", type=int, default=6)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.process_time()
    print(f"{args.studies} studies per ratio: {args.cells} cells × {args.pools} pools × {args.runs} runs, "
          f"total CoV 5%; costs: a pool {COSTS.pool_s:.0f} s, a run {COSTS.run_s:.0f} s; budget "
          f"{WALL_S / 60:.0f} min per cell\n")
    res = pd.DataFrame([one_ratio(rng, r, args) for r in RATIOS])
    fmt = {c: "{:.2e}".format for c in ("sb", "sb_mean", "sb_median", "sw", "sw_mean", "sw_median")}
    fmt.update({c: "{:.2f}".format for c in ("sb_cover", "sb_zero", "sw_cover", "same", "efficiency",
                                             "efficiency_min", "r_true", "r_est")})
    fmt["optimum_hw"] = "{:.2%}".format
    with pd.option_context("display.width", 200, "display.max_columns", None):
        print("components: true vs estimated (log scale), coverage of the 95% intervals")
        print(res[["ratio", "sb", "sb_mean", "sb_median", "sb_cover", "sb_zero", "sw", "sw_mean", "sw_median",
                   "sw_cover"]].to_string(index=False, formatters=fmt))
        print("\nallocation: recommended vs the true optimum (r*: K&J's continuous optimum, true vs median est.)")
        print(res[["ratio", "r_true", "r_est", "optimum", "optimum_hw", "recommended", "same", "efficiency",
                   "efficiency_min"]].to_string(index=False, formatters=fmt))
    print("\nexpected vs realised half-width on the optimal designs (4000 cells each)")
    for _, row in res.iterrows():
        p, r = (int(v) for v in row["optimum"].split("×"))
        cover, rms = realised(rng, row["sb"], row["sw"], p, r)
        print(f"  ratio {row['ratio']:>5g}: {design_words(p, r):16s} expected ±{row['optimum_hw']:.2%}, realised RMS "
              f"±{rms:.2%}, coverage {cover:.3f}")
    print(f"\nCPU {time.process_time() - t0:.1f} s\n")
    print(render(plan_advice("data/examples/scaling")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
