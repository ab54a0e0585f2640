"""Calibration of the steady-state test (measure/steady.py, docs/methods.md §12), by simulation
and on the example sweeps' raw fio logs.

Simulated per-second IOPS series go through ``steady_state`` exactly as a run's series does
(writes with the 5 s TXG period, reads and raw disks without). Each model is a steady rate
with a linear drift of 0, 5, 10 or 20% across the window (the rate goes from 1 - d/2 to
1 + d/2 of its mean), at a random phase of its pulse:

  reads       Poisson counts around the rate (no TXG; a throttled lab disk is more regular)
  TXG bursts  the lab's random writes: a base rate with bursts of 1.8x it lasting 1-3 s,
              the gaps between bursts drawn from those measured in the example sweeps
              (2-16 s, mostly 4-5 s); Poisson counts
  burst freq  TXG bursts whose base level stays put while the bursts grow more frequent: the
              whole rate drifts d, the base level does not (what the level test cannot see)
  stall C s   a write the throttle stalls: all of a cycle's I/O in a burst of a quarter of
              the cycle, then nothing; cycles of C +- 2 s (10, 17 and 28 s were seen)
  lab: ...    real series of the example sweeps, resampled in blocks of 5 s (steady by
              construction, the lab's own noise and pulses), then drifted

Printed per model, window and rate: the share of runs judged (not abstained), and among the
judged the share flagged at each drift (drift 0: the false-alarm rate), with the median
drift the window could detect (80% power). Then every run of the three example sweeps is
judged again: runs judged / flagged / not judged before (the committed results, the former
SNIA-rounds rule) and after, and whether the flag relates to a run's IOPS within its
configuration (a Mann-Whitney test of the run's log deviation from its configuration's
mean, flagged against passed runs: its sign, "mean", and its size, "spread").

    python benchmarks/steady_state_calibration.py [--sims 600] [--seed 1] [--no-examples]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.measure import truth
from zbench_lib.measure.fio_parse import parse_fio_logs_dir
from zbench_lib.measure.rows import run_record
from zbench_lib.measure.run_summary import fio_timeseries, iops_series
from zbench_lib.measure.steady import TXG_PERIOD_S, steady_state
from zbench_lib.sweeps.store.publish import unpack_raw
from zbench_lib.measure.run_context import RunContext, RunFacts

DRIFTS = (0.0, 0.05, 0.10, 0.20)
STUDIES = ("scaling", "volblocksize", "iodepth-curve")
# gaps between write bursts (s) and burst lengths (s) in the example sweeps' random writes:
# seconds above 1.4x the series' median, 30-1000 IOPS series (counts of occurrences)
GAPS = {2: 28, 3: 91, 4: 152, 5: 158, 6: 69, 7: 23, 8: 16, 9: 21, 10: 25, 11: 18, 12: 10,
        13: 5, 14: 5, 15: 2, 16: 5}
BURSTS = {1: 410, 2: 245, 3: 86, 4: 10}
BURST_GAIN = 1.8


def _drift(n: int, drift: float) -> np.ndarray:
    return 1 + drift * ((np.arange(n) + 0.5) / n - 0.5)


def _mark(sims: int, n: int, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(sims, n) mask of the seconds inside bursts starting at `starts` (sims, k)."""
    mask = np.zeros((sims, n), dtype=bool)
    rows = np.broadcast_to(np.arange(sims)[:, None], starts.shape)
    for j in range(int(lengths.max())):
        t = starts + j
        ok = (j < lengths) & (t >= 0) & (t < n)
        mask[rows[ok], t[ok]] = True
    return mask


def _renewal(rng, sims: int, n: int, gaps: np.ndarray) -> np.ndarray:
    """Burst start times (sims, k): cumulated gaps, shifted by a random phase."""
    t = np.cumsum(gaps, axis=1)
    return t - rng.integers(0, gaps[:, :1] + 1) - gaps[:, :1]


def reads(rng, sims, n, rate, drift):
    return rng.poisson(rate * np.ones((sims, n)) * _drift(n, drift))


def txg_bursts(rng, sims, n, rate, drift):
    g, gp = np.array(list(GAPS)), np.array(list(GAPS.values()), float) / sum(GAPS.values())
    b, bp = np.array(list(BURSTS)), np.array(list(BURSTS.values()), float) / sum(BURSTS.values())
    k = int(n / (g * gp).sum() * 3) + 4
    starts = _renewal(rng, sims, n, rng.choice(g, size=(sims, k), p=gp))
    profile = np.where(_mark(sims, n, starts, rng.choice(b, size=(sims, k), p=bp)), BURST_GAIN, 1.0)
    level = 1 + (BURST_GAIN - 1) * (b * bp).sum() / (g * gp).sum()
    return rng.poisson(rate * profile / level * _drift(n, drift))


def burst_freq(rng, sims, n, rate, drift):
    """TXG bursts on a flat base; the rate drifts by bursts growing more frequent: burst starts
    twice as dense as measured, each kept with a probability that rises across the window so
    the mean rate goes from about 1 - d/2 to 1 + d/2 of its mean."""
    g, gp = np.array(list(GAPS)), np.array(list(GAPS.values()), float) / sum(GAPS.values())
    b, bp = np.array(list(BURSTS)), np.array(list(BURSTS.values()), float) / sum(BURSTS.values())
    g = np.maximum(1, g // 2)
    k = int(n / (g * gp).sum() * 3) + 4
    starts = _renewal(rng, sims, n, rng.choice(g, size=(sims, k), p=gp))
    share = 0.5 * (b * bp).sum() / (g * gp).sum()           # burst seconds kept at half the starts
    level = 1 + (BURST_GAIN - 1) * share
    keep = 0.5 * (1 + drift * level / ((BURST_GAIN - 1) * share) * ((np.clip(starts, 0, n - 1) + 0.5) / n - 0.5))
    lengths = np.where(rng.random(starts.shape) < keep, rng.choice(b, size=(sims, k), p=bp), 0)
    profile = np.where(_mark(sims, n, starts, lengths), BURST_GAIN, 1.0)
    return rng.poisson(rate * profile / level)


def stalls(cycle):
    def gen(rng, sims, n, rate, drift):
        burst = max(2, round(cycle / 4))
        k = n // (cycle - 2) + 3
        starts = _renewal(rng, sims, n, cycle + rng.integers(-2, 3, size=(sims, k)))
        on = _mark(sims, n, starts, np.full(starts.shape, burst))
        return rng.poisson(rate * on * cycle / burst * _drift(n, drift))
    return gen


def resampled(series: list[np.ndarray], block: int = 5):
    """Steady series with the lab's own noise: 5 s blocks of real series, drawn with replacement
    from one series at a time (so a series' level is kept), to the window of the originals."""
    def gen(rng, sims, n, rate, drift):
        out = np.empty((sims, n))
        picks = rng.integers(0, len(series), size=sims)
        for i, p in enumerate(picks):
            y = series[p]
            nb = len(y) // block
            blocks = y[len(y) - nb * block:].reshape(nb, block)
            out[i] = blocks[rng.integers(0, nb, size=-(-n // block))].ravel()[:n]
        return out * _drift(n, drift)
    return gen


def judge(ys: np.ndarray, txg) -> tuple[np.ndarray, np.ndarray]:
    """(flags as 1 / 0 / nan for None, detectable drift %) of a batch of series."""
    got = [steady_state(y, txg_period_s=txg) for y in ys]
    flags = np.array([np.nan if g["flag"] is None else float(g["flag"]) for g in got])
    return flags, np.array([g["detectable_pct"] for g in got])


def _pct(x: float) -> str:
    return "-" if np.isnan(x) else f"{100 * x:4.1f}%"


def calibrate(rows, sims: int, seed: int):
    print(f"Simulated: {sims} series per drift ({2 * sims} steady ones for the false alarms); "
          f"flagged shares are among the judged series.")
    head = (f"| {'model':<30} | window s | IOPS | judged | false alarm | flagged at 5% | at 10% | at 20% "
            f"| detectable (median) |")
    print(head)
    print("|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|")
    for name, gen, txg, window, rate in rows:
        rng = np.random.default_rng([seed, window, int(rate), len(name)])
        res = []
        for d in DRIFTS:
            flags, detect = judge(gen(rng, 2 * sims if d == 0 else sims, window, rate, d), txg)
            res.append((flags, detect))
        judged = np.mean([np.mean(~np.isnan(f)) for f, _ in res])
        share = [np.nanmean(f) if np.any(~np.isnan(f)) else np.nan for f, _ in res]
        det = np.nanmedian(res[0][1]) if np.any(~np.isnan(res[0][1])) else np.nan
        print(f"| {name:<30} | {window:8d} | {rate:>4} | {_pct(judged):>6} | {_pct(share[0]):>11} "
              f"| {_pct(share[1]):>13} | {_pct(share[2]):>6} | {_pct(share[3]):>6} "
              f"| {'-' if np.isnan(det) else f'{det:.0f}%':>19} |", flush=True)


# --- the example sweeps -------------------------------------------------------------------------

def example_runs(examples: Path, tmp: Path) -> pd.DataFrame:
    """One row per attempt of the three examples: its series, the old verdict, the new one."""
    out = []
    for study in STUDIES:
        res = pd.read_parquet(examples / study / "results.parquet")
        old = res.groupby(["run_id", "attempt"]).agg(
            old=("flag_not_steady", "first"), iops=("iops", "sum"), workload=("workload", "first"))
        raw = unpack_raw(examples / study, tmp / study)
        for att in sorted(raw.glob("*/attempt-*")):
            if not (att / "COMPLETE").exists():
                continue
            rec, rows = run_record(att)
            logs = parse_fio_logs_dir(att / "fio")
            series = (iops_series(fio_timeseries(logs, rec["t_start"]), rec["t_start"], rec["t_end"])
                      if logs is not None and len(logs) else None)
            ctx = RunFacts.judging(RunContext.from_record(rec["context"]), iops_series=series)
            new = truth.truth_checks(rows, {}, ctx)["not_steady"]       # the check as a run gets it
            key = (att.parent.name, int(att.name.split("-")[1]))
            o = old.loc[key]
            out.append({"study": study, "run_id": key[0], "attempt": key[1], "config": key[0][:7],
                        "workload": o.workload, "iops": o.iops, "old": None if pd.isna(o.old) else bool(o.old),
                        "new": new["flag"], "writes": new.get("txg_period_s") is not None,
                        "series": np.asarray(series or [], float), "reason": new["reason"]})
    return pd.DataFrame(out)


def _counts(v: pd.Series) -> str:
    return f"{int(v.notna().sum()):3d} / {int(v.eq(True).sum()):3d} / {int(v.isna().sum()):3d}"


def before_after(df: pd.DataFrame):
    print("\nExample sweeps, every attempt: judged / flagged / not judged, before (committed results, "
          "SNIA rounds with Poisson abstention) and after")
    print(f"| {'study':<13} | {'workload':<12} | runs | before          | after           |")
    print("|---------------|--------------|------|-----------------|-----------------|")
    for (study, wl), g in df.groupby(["study", "workload"], sort=False):
        print(f"| {study:<13} | {wl:<12} | {len(g):4d} | {_counts(g.old)} | {_counts(g.new)} |")
    print(f"| {'all':<13} | {'':<12} | {len(df):4d} | {_counts(df.old)} | {_counts(df.new)} |")
    low = df[df.workload.str.startswith("randwrite") & (df.study == "scaling") & (df.iops < 200)]
    print(f"scaling random writes below 200 IOPS: {int(low.old.notna().sum())} of {len(low)} judged before, "
          f"{int(low.new.notna().sum())} after")
    moved = pd.crosstab(df.old.astype(str), df.new.astype(str), rownames=["before"], colnames=["after"])
    print(moved.to_string())


def relation(df: pd.DataFrame):
    """Is a flagged run slower/faster (mean), further from its configuration's mean (distance), or
    more variable second to second than its configuration's other runs (spread)?"""
    print("\nDoes the flag relate to a run's IOPS within its configuration? Mann-Whitney U, flagged vs passed "
          "runs: mean = log(run IOPS / configuration mean), distance = its absolute value, spread = "
          "log(the run's per-second CoV / its configuration's mean CoV)")
    print("| study         | rule   | flagged | passed | p (mean) | p (distance) | p (spread) |")
    print("|---------------|--------|---------|--------|----------|--------------|------------|")
    for study, g in df.groupby("study", sort=False):
        for rule in ("old", "new"):
            j = g[g[rule].notna()].copy()
            cell = j.groupby(["config", "workload"])
            j["dev"] = np.log(j.iops / cell.iops.transform("mean"))
            j["cov"] = [s.std() / s.mean() for s in j.series]
            j["spread"] = np.log(j["cov"] / j.groupby(["config", "workload"])["cov"].transform("mean"))
            f, p = j[j[rule].astype(bool)], j[~j[rule].astype(bool)]
            if len(f) and len(p):
                pm, pd_, ps = (stats.mannwhitneyu(a, b).pvalue for a, b in
                               ((f.dev, p.dev), (f.dev.abs(), p.dev.abs()), (f.spread, p.spread)))
                txt = f"{pm:8.2f} | {pd_:12.2f} | {ps:10.2f}"
            else:
                txt = f"{'-':>8} | {'-':>12} | {'-':>10}"
            print(f"| {study:<13} | {'before' if rule == 'old' else 'after':<6} | {len(f):7d} | {len(p):6d} | {txt} |")


def lab_models(df: pd.DataFrame) -> list:
    """Resampled real series, by study and workload, at their own window and typical rate."""
    rows = []
    for (study, wl), g in df.groupby(["study", "workload"], sort=False):
        ys = [s for s in g.series if len(s) >= 10 and s.mean() > 0]
        if len(ys) < 5:
            continue
        window = int(np.median([len(s) for s in ys]))
        rate = int(np.median([s.mean() for s in ys]))
        txg = TXG_PERIOD_S if bool(g.writes.iloc[0]) else None
        rows.append((f"lab: {study} {wl}", resampled(ys), txg, window, rate))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=600, help="series per drift (twice as many steady ones)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--examples", type=Path, default=REPO_ROOT / "data" / "examples")
    ap.add_argument("--no-examples", action="store_true", help="simulation only")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    rows = [("reads", reads, None, w, r) for w in (10, 15, 60) for r in (50, 100, 200, 1000)]
    rows += [("TXG bursts", txg_bursts, TXG_PERIOD_S, w, r) for w in (30, 60, 150) for r in (50, 100, 200, 1000)]
    rows += [("TXG bursts", txg_bursts, TXG_PERIOD_S, 600, 100)]     # how long a window 10% needs
    rows += [("burst freq", burst_freq, TXG_PERIOD_S, w, 100) for w in (30, 150)]
    rows += [(f"stall {c} s", stalls(c), TXG_PERIOD_S, w, 100) for c in (10, 17, 28) for w in (60, 150)]
    df = None
    if not args.no_examples and (args.examples / STUDIES[0] / "raw.tar.xz").exists():
        with tempfile.TemporaryDirectory(prefix="zbench-steady-") as tmp:
            df = example_runs(args.examples, Path(tmp))
        rows += lab_models(df)
    calibrate(rows, args.sims, args.seed)
    if df is not None:
        before_after(df)
        relation(df)
        flagged = df[df.new.eq(True)]
        print(f"\nflagged after ({len(flagged)}):")
        for r in flagged.itertuples():
            print(f"  {r.study} {r.run_id} a{r.attempt} {r.workload} {r.iops:.0f} IOPS: {r.reason}")
    print(f"\n{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
