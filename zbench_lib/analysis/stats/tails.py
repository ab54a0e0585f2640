"""Latency tails of a cell from the merged histograms of its runs (docs/methods.md §18).

A percentile is never averaged across runs. Each run's latencies (issue to completion) are fio's
log-linear histogram (json+ bins, kept in the store's latency_hist.parquet); the cell's
histogram is the sum of its admissible runs' bins, and p50, p99, p99.9 and p99.99 are read
from it the way fio reads its own (`fio_hist.percentile_of`). A percentile the cell's I/O count
cannot support (fewer than 10 / (1 - q) I/Os: p99.99 needs 100,000) is "not judged".

The interval: each experimental unit (a pool where pools are replicated, else a run: then
the interval is conditional on the one pool, §6) gets its own merged percentile, and the 95%
interval is Student's t on their logarithms (scipy.stats.t), exp(mean ± t·sd/sqrt(n)). It
needs every unit to support the percentile on its own (else a unit would be left out for
having few I/Os, and slow units have few) and at least two units. Its ends are rounded out to
the edges of fio's bins: the units' values are only known to a bin, so an interval is never
narrower than the bin it lies in (three pools in one bin give that bin, not zero width).

Runs recorded with plain json have no bins: their cells are "not judged: no histogram in raw
(run before json+)". As a labelled fallback, `runs_median_ns` gives the median of the runs'
own fio percentiles (those their I/O counts support): a typical run's percentile, not the cell's.

    cell_tails(df, hist, by=None, unit="auto")   one row per cell × percentile
    unit_histograms(rows, hist, unit)            each experimental unit's merged bins
    tail_lines(tails)                             sentences for the conclusions
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.replication import ONE_POOL_NOTE, pool_frame, resolve_unit
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.measure.fio_hist import (HIST_COLUMNS, MAX_REL_WIDTH, NO_HISTOGRAM, bin_edges, bin_index,
                                         judge_tail_frame, min_ios, percentile_name, percentile_of)

QUANTILES = (0.5, 0.99, 0.999, 0.9999)
COLUMNS = ["percentile", "q", "status", "judged", "value_ns", "bin_lo_ns", "bin_hi_ns", "ci_low_ns",
           "ci_high_ns", "interval", "unit", "n_units", "n_runs", "n_runs_hist", "ios", "min_ios",
           "units_geomean_ns", "runs_median_ns", "runs_median_n", "note"]
_RUN_KEYS = ["run_id", "attempt", "direction"]


def _column_of(q) -> str:
    """The fio row column of quantile q: lat_p99_9_ns for 0.999."""
    return "lat_" + percentile_name(q).replace(".", "_") + "_ns"


def _default_by(df: pd.DataFrame) -> list[str]:
    first = [c for c in ("workload", "direction") if c in df]
    return first + [c for c in varying_columns(df) if c not in first]


def _units(rows: pd.DataFrame, unit: str) -> pd.Series:
    """The experimental unit of each row: its pool replicate, or the run itself."""
    if unit == "pool":
        pools = pool_frame(rows)
        return pools["pool_id"] + "#" + pools["pool_replicate"].astype(str)
    return rows["run_id"].astype(str) + "#" + rows["attempt"].astype(str)


def _merged(h: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    s = h.groupby("bin_ns")["count"].sum()
    return s.index.to_numpy(dtype=np.int64), s.to_numpy(dtype=np.int64)


def unit_histograms(rows: pd.DataFrame, h: pd.DataFrame, unit: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{unit id: (bin_ns, count)}: each experimental unit's bins, its runs' (`rows`) histogram rows `h` summed.

    A unit is a pool replicate ('pool#2') where `unit` is 'pool', else a run ('run#attempt')."""
    unit_of = dict(zip(rows[_RUN_KEYS].itertuples(index=False, name=None), _units(rows, unit)))
    hu = h.assign(_unit=[unit_of.get(k) for k in h[_RUN_KEYS].itertuples(index=False, name=None)])
    return {u: _merged(g) for u, g in hu.dropna(subset=["_unit"]).groupby("_unit")}


def _interval(values: list[float], conf: float) -> tuple[float, float, float]:
    """(low, high, geometric mean) of Student's t on the logs of the units' percentiles."""
    logs = np.log(np.asarray(values, dtype=float))
    n, m = len(logs), float(np.mean(logs))
    half = float(sps.t.ppf((1 + conf) / 2, n - 1) * np.std(logs, ddof=1) / math.sqrt(n))
    return math.exp(m - half), math.exp(m + half), math.exp(m)


def _unit_word(unit: str, n: int) -> str:
    return f"{n} {'pool' if unit == 'pool' else 'run'}{'s' if n != 1 else ''}"


def _base(rows: pd.DataFrame, q, unit: str) -> dict:
    """A cell's row before its histogram is read: nothing judged, the runs' own percentiles' median."""
    col = _column_of(q)
    own = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows else pd.Series(dtype=float)
    return dict(percentile=percentile_name(q), q=float(q), status="", judged=False, value_ns=math.nan,
                bin_lo_ns=math.nan, bin_hi_ns=math.nan, ci_low_ns=math.nan, ci_high_ns=math.nan, interval="",
                unit=unit, n_units=0, n_runs=len(rows), n_runs_hist=0, ios=0, min_ios=min_ios(q),
                units_geomean_ns=math.nan, runs_median_ns=float(own.median()) if len(own) else math.nan,
                runs_median_n=len(own), note="")


def _unit_interval(out: dict, per_unit: dict, q, conf: float, notes: list) -> None:
    """The t interval across units into `out`, or why there is none."""
    need, unit, n = out["min_ios"], out["unit"], len(per_unit)
    short = [u for u, (_, c) in per_unit.items() if c.sum() < need]
    if n < 2:
        out["interval"] = f"no interval: {_unit_word(unit, n)} with a histogram"
        return
    if short:      # leaving them out would keep the units with more I/Os: the faster ones
        out["interval"] = (f"no interval: {len(short)} of {_unit_word(unit, n)} "
                           f"{'has' if len(short) == 1 else 'have'} fewer than {need} I/Os")
        return
    low, high, gm = _interval([percentile_of(b, c, q) for b, c in per_unit.values()], conf)
    # the bins the ends lie in (edges are whole ns; the nudge keeps a midpoint computed a hair low in its bin)
    lo_bin, hi_bin = (int(math.floor(x * (1 + 1e-12))) for x in (low, high))
    out.update(ci_low_ns=float(bin_edges([lo_bin])[0][0]), ci_high_ns=float(bin_edges([hi_bin])[1][0]),
               units_geomean_ns=gm, interval=f"t across {_unit_word(unit, n)}, log scale"
               + (", conditional on one pool" if unit == "run" else ""))
    if bin_index(lo_bin) == bin_index(hi_bin):
        notes.append("interval narrower than fio's bin: shown as the bin")


def _one(rows: pd.DataFrame, h: pd.DataFrame, q, unit: str, conf: float) -> dict:
    """The row of one cell and quantile: `rows` its runs, `h` their histogram rows."""
    out = _base(rows, q, unit)
    keys = set(h[_RUN_KEYS].itertuples(index=False, name=None)) if len(h) else set()
    has = rows[[k in keys for k in rows[_RUN_KEYS].itertuples(index=False, name=None)]]
    out["n_runs_hist"] = len(has)
    if not len(has):
        out["status"] = f"not judged: {NO_HISTOGRAM}"
        if out["runs_median_n"]:
            out["note"] = (f"runs_median_ns: median of {out['runs_median_n']} runs' own fio {out['percentile']} "
                           "(a typical run's, not the cell's)")
        return out
    notes = [f"{len(rows) - len(has)} of {len(rows)} runs without histogram left out"] if len(has) < len(rows) else []
    bins, counts = _merged(h)
    out["ios"] = int(counts.sum())
    if out["ios"] < out["min_ios"]:
        out.update(status=f"not judged: {out['ios']} I/Os, a {out['percentile']} needs {out['min_ios']}",
                   note="; ".join(notes))
        return out
    value = percentile_of(bins, counts, q)
    lo, hi = (float(x[0]) for x in bin_edges([int(value)]))
    out.update(status="judged", judged=True, value_ns=value, bin_lo_ns=lo, bin_hi_ns=hi)
    if math.isinf(hi):
        notes.append(f"beyond fio's range: at least {lo / 1e9:.2f} s")
    per_unit = unit_histograms(has, h, unit)
    out["n_units"] = len(per_unit)
    _unit_interval(out, per_unit, q, conf, notes)
    out["note"] = "; ".join(notes)
    return out


def cell_tails(df: pd.DataFrame, hist: pd.DataFrame | None, by=None, unit: str = "auto",
               quantiles=QUANTILES, conf: float = 0.95) -> pd.DataFrame:
    """p50, p99, p99.9, p99.99 of each cell from its runs' merged histograms, with an interval.

    `df` holds the rows to use (admissible runs: `select_admissible`), `hist` the store's
    latency_hist.parquet (`Sweep.histograms`; None or empty: every cell not judged, no
    histogram). `by`: the cell's columns (default: workload, direction and every varying
    configuration column). `unit` as in `stats.summary`: 'auto' is the pool where any
    configuration has two pool replicates. Returns one row per cell × percentile with `by`
    and COLUMNS: `value_ns` (the merged percentile, a bin's midpoint as fio gives it),
    `bin_lo_ns`/`bin_hi_ns` (its bin: the precision), `ci_low_ns`/`ci_high_ns` (t on the log
    of the units' percentiles, rounded out to bin edges) and `status` ('judged' or 'not
    judged: reason'). See the module docstring and docs/methods.md §18.

    Examples
    --------
    >>> rows = pd.DataFrame({"workload": "w", "direction": "read", "run_id": ["a", "b"], "attempt": 1,
    ...                      "total_ios": 3000})
    >>> hist = pd.DataFrame({"run_id": ["a", "a", "b"], "attempt": 1, "direction": "read",
    ...                      "bin_ns": [1000, 2000, 1000], "count": [1490, 10, 1500]})
    >>> t = cell_tails(rows, hist, quantiles=(0.99, 0.9999))
    >>> t[["percentile", "value_ns", "ios", "status"]].values.tolist()
    [['p99', 1000.0, 3000, 'judged'], ['p99.99', nan, 3000, 'not judged: 3000 I/Os, a p99.99 needs 100000']]
    """
    by = _default_by(df) if by is None else ([by] if isinstance(by, str) else list(by))
    hist = pd.DataFrame(columns=HIST_COLUMNS) if hist is None else hist
    d = df.copy()
    if "attempt" not in d:
        d["attempt"] = 1
    d["attempt"] = pd.to_numeric(d["attempt"], errors="coerce").fillna(1).astype(int)
    if "tail_not_judged" not in d:        # results rebuilt before the per-run rule: apply it here
        d = judge_tail_frame(d)
    h = hist.astype({"attempt": int}) if len(hist) else hist
    unit = resolve_unit(d, by, unit)
    out = []
    for key, rows in (d.groupby(by, dropna=False, sort=True) if by else [((), d)]):
        key = key if isinstance(key, tuple) else (key,)
        hh = h.merge(rows[_RUN_KEYS].drop_duplicates(), on=_RUN_KEYS) if len(h) else h
        for q in quantiles:
            out.append({**dict(zip(by, key)), **_one(rows, hh, q, unit, conf)})
    return pd.DataFrame(out, columns=by + COLUMNS)


def _ms(v) -> str:
    return f"{v / 1e6:.3g} ms"


def tail_lines(tails: pd.DataFrame) -> list[str]:
    """Sentences on the tails table: each judged cell's percentiles with their intervals, then
    how many were not judged and why, the bin width that bounds them, and the unit's caveat."""
    if tails is None or tails.empty:
        return []
    by = [c for c in tails.columns if c not in COLUMNS]
    if not tails["n_runs_hist"].any():
        return [f"Latency tails not judged: {NO_HISTOGRAM}. `runs_median_ns` gives the median of the runs' own "
                "fio percentiles as a labelled fallback (a typical run's percentile, not the cell's; methods §18)."]
    out = []
    for key, g in tails.groupby(by, dropna=False, sort=False) if by else [((), tails)]:
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{c}={v}" for c, v in zip(by, key))
        parts = []
        for _, r in g.iterrows():
            if not r["judged"]:
                continue
            ci = (f" (95% CI {_ms(r['ci_low_ns'])}–{_ms(r['ci_high_ns'])}, {r['interval']})"
                  if np.isfinite(r["ci_low_ns"]) else f" ({r['interval']})")
            parts.append(f"{r['percentile']} {_ms(r['value_ns'])}{ci}")
        if parts:
            out.append(f"{label}: " + "; ".join(parts) + ".")
    for name, g in tails.groupby("percentile", sort=False):
        nj = g[~g["judged"]]
        if len(nj):
            why = nj["status"].map(bare_reason)
            few = why.str.contains("I/Os, a ").sum()
            out.append(f"{name} not judged in {len(nj)} of {len(g)} cells" +
                       (f" ({few} with fewer than {int(g['min_ios'].iloc[0])} I/Os)" if few else "") + ".")
    out.append(f"Percentiles are read from fio's histogram bins, at most {MAX_REL_WIDTH:.1%} of their value "
               "wide: an interval is given to the bin and never narrower than one (methods §18).")
    if (tails["unit"] == "run").any() and tails["interval"].str.startswith("t across").any():
        out.append(ONE_POOL_NOTE[0].upper() + ONE_POOL_NOTE[1:] + ".")
    return out
