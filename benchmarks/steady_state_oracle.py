"""Is the steady-state test's low power on the lab's writes the test's fault or the data's?
(issue 27; docs/methods.md §12, "Is the gap the test's or the data's?")

The calibration's `lab:` models (benchmarks/steady_state_calibration.py: a run's series resampled in
5 s blocks, steady by construction, then drifted 10%) go through ``steady_state`` and through tests
that *know the noise*: for each parent run, the null distribution of a statistic is taken from
`--per-run` steady resamples of that run, not from the window itself. Known SD (the statistic less
its null mean, over its null SD, against the pooled 95% point of |z|): the OLS drift of per-second
counts, of log 5 s sums, of log active seconds, the level drift, the round-mean drift. Known
quantile (beyond the run's own 95% point): this test's |t|, its smallest p, |level drift|, |OLS
drift|. Printed per model and window: this test's false alarms and power, each oracle's power (and,
for the quantile ones, their false alarms on fresh null series). `--detrend` divides each parent by
its own least-squares line first (is the lab's noise its runs' own drift?).

    python benchmarks/steady_state_oracle.py [--sims 800] [--per-run 200] [--only write] [--windows 150,300]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import steady_state_calibration as cal  # noqa: E402

from zbench_lib.core.paths import REPO_ROOT  # noqa: E402
from zbench_lib.measure.steady import TXG_PERIOD_S, steady_state  # noqa: E402

BLOCK = 5
DRIFT = 0.10
SD_STATS = ("ols_rate", "block_log", "log_active", "level", "round_rate")
Q_STATS = ("t_main", "minp", "abs_level", "abs_ols")


def parents(df, detrend: bool) -> list:
    """(name, blocks of each parent run, txg, window, rate) per lab model, as the calibration's."""
    out = []
    for (study, wl), g in df.groupby(["study", "workload"], sort=False):
        ys = [s for s in g.series if len(s) >= 10 and s.mean() > 0]
        if len(ys) < 5:
            continue
        blocks = []
        for y in ys:
            if detrend:
                t = np.arange(len(y))
                y = y / np.maximum(np.polyval(np.polyfit(t, y, 1), t) / y.mean(), 0.2)
            nb = len(y) // BLOCK
            blocks.append(y[len(y) - nb * BLOCK:].reshape(nb, BLOCK))
        out.append((f"{study} {wl}", blocks, TXG_PERIOD_S if bool(g.writes.iloc[0]) else None,
                    int(np.median([len(s) for s in ys])), int(np.median([s.mean() for s in ys]))))
    return out


def draw(rng, blocks, picks, n: int, drift: float) -> np.ndarray:
    """(len(picks), n) series: parent picks[i]'s 5 s blocks drawn with replacement, drifted."""
    out = np.empty((len(picks), n))
    for i, q in enumerate(picks):
        out[i] = blocks[q][rng.integers(0, len(blocks[q]), size=-(-n // BLOCK))].ravel()[:n]
    return out * cal._drift(n, drift)


def _x(n: int) -> np.ndarray:
    return (np.arange(n) + 0.5) / n - 0.5


def statistics(ys: np.ndarray, txg) -> tuple[np.ndarray, dict]:
    """(this test's flags, {statistic: values}) of a batch of series."""
    n = ys.shape[1]
    x = _x(n)
    got = [steady_state(y, txg_period_s=txg) for y in ys]
    field = lambda k: np.array([g[k] for g in got], float)  # noqa: E731
    flags = np.array([np.nan if g["flag"] is None else float(g["flag"]) for g in got])
    ols = 100 * (ys @ x) / (x @ x) / ys.mean(axis=1)
    nb = n // BLOCK
    logs = np.log(np.maximum(ys[:, n - nb * BLOCK:].reshape(len(ys), nb, BLOCK).sum(axis=2), 0.5))
    xb = _x(nb)
    active = np.full(len(ys), np.nan)
    for i, y in enumerate(ys):
        a = (y > 0) & (y >= 0.2 * np.quantile(y, 0.9))
        if a.sum() >= 5:
            active[i] = 200 * np.tanh(np.polyfit(x[a], np.log(y[a]), 1)[0] / 2)
    se = field("drift_se_pct")
    lp, mp = field("level_p_value"), field("mean_p_value")
    level = field("level_slope_pct")
    return flags, {"ols_rate": ols, "block_log": 100 * ((logs - logs.mean(axis=1, keepdims=True)) @ xb) / (xb @ xb),
                   "log_active": active, "level": level, "round_rate": field("mean_slope_pct"),
                   "t_main": np.where(se > 0, np.abs(field("slope_pct")) / np.where(se > 0, se, 1), np.nan),
                   "minp": -np.fmin(np.nan_to_num(lp, nan=1.0), np.nan_to_num(mp, nan=1.0)),
                   "abs_level": np.abs(level), "abs_ols": np.abs(ols)}


def compare(blocks, txg, n: int, rng, sims: int, per_run: int) -> dict:
    P = len(blocks)
    mu, sd, q95 = ({s: np.full(P, np.nan) for s in names} for names in (SD_STATS, SD_STATS, Q_STATS))
    for q in range(P):
        _, st = statistics(draw(rng, blocks, [q] * per_run, n, 0.0), txg)
        for s in SD_STATS:
            v = st[s][np.isfinite(st[s])]
            if len(v) > 10:
                mu[s][q], sd[s][q] = v.mean(), v.std(ddof=1)
        for s in Q_STATS:
            if np.isfinite(st[s]).mean() > 0.9:
                q95[s][q] = np.quantile(np.nan_to_num(st[s], nan=np.inf), 0.95)
    p0, p1 = rng.integers(0, P, sims), rng.integers(0, P, sims)
    f0, s0 = statistics(draw(rng, blocks, p0, n, 0.0), txg)
    f1, s1 = statistics(draw(rng, blocks, p1, n, DRIFT), txg)
    res = {"judged": np.mean(~np.isnan(np.r_[f0, f1])), "false alarm": np.nanmean(f0), "power": np.nanmean(f1)}
    for s in SD_STATS:
        z0, z1 = (s0[s] - mu[s][p0]) / sd[s][p0], (s1[s] - mu[s][p1]) / sd[s][p1]
        if np.isfinite(z0).sum() >= 100:
            res[f"sd:{s}"] = np.mean(np.abs(z1[np.isfinite(z1)]) > np.quantile(np.abs(z0[np.isfinite(z0)]), 0.95))
    for s in Q_STATS:
        ok0, ok1 = np.isfinite(q95[s][p0]), np.isfinite(q95[s][p1])
        if ok1.mean() >= 0.9:
            res[f"q:{s}"] = np.mean(s1[s][ok1] > q95[s][p1][ok1])
            res[f"q:{s} fa"] = np.mean(s0[s][ok0] > q95[s][p0][ok0])
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=800, help="series per drift")
    ap.add_argument("--per-run", type=int, default=200, help="steady resamples of each parent run")
    ap.add_argument("--only", default="", help="models whose name contains this")
    ap.add_argument("--windows", default="", help="windows (s) instead of each model's own, e.g. 150,300")
    ap.add_argument("--detrend", action="store_true", help="each parent divided by its own line first")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    with tempfile.TemporaryDirectory(prefix="zbench-steady-") as tmp:
        df = cal.example_runs(REPO_ROOT / "data" / "examples", Path(tmp))
    for name, blocks, txg, window, rate in parents(df, args.detrend):
        if args.only not in name:
            continue
        for n in [int(w) for w in args.windows.split(",") if w] or [window]:
            res = compare(blocks, txg, n, np.random.default_rng([args.seed, n, len(name)]), args.sims, args.per_run)
            print(f"{name} ({len(blocks)} runs, {rate} IOPS) {n} s: "
                  + ", ".join(f"{k} {100 * v:.1f}%" for k, v in res.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
