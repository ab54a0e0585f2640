"""Latency tails of a cell, each unit's and the cell's, from merged histograms (docs/methods.md §18).

A percentile is never averaged across runs. Each run's latencies (issue to completion) are fio's
log-linear histogram (json+ bins, kept in the store's latency_hist.parquet). An experimental unit
(a pool where pools are replicated, else a run: then every interval is conditional on the one pool,
§6) sums its runs' bins and reads its own percentile from them the way fio reads its own
(`fio_hist.percentile_of`), with a distribution-free interval: the order statistics whose ranks
bracket the quantile with 95% binomial probability over its I/O count (`order_interval`,
scipy.stats.binom), their bins giving the ends. A unit whose I/O count cannot support the
percentile (fewer than 10 / (1 - q): p99.9 needs 10,000) has no value of it; it is kept, counted
and named, never dropped silently.

A cell's percentile states what it estimates, one estimand for its point and its interval:

    typical (the default)   a typical pool's percentile: the geometric mean of the units' own, with
                            Student's t on their logarithms (scipy.stats.t), exp(mean ± t·sd/sqrt(n)),
                            its ends rounded out to the edges of fio's bins (a unit's value is only
                            known to its bin). The value rests on the units that support the
                            percentile (`n` of `n_units`, the others named in `unsupported`); the
                            interval needs every unit to support it (leaving the short ones out would
                            leave out the slow pools, which complete fewer I/Os) and two units.
    pooled                  all I/Os pooled: the percentile of the cell's summed bins, every I/O of every
                            unit together (a long or slow pool weighs more), with the order-statistic
                            interval of all of them, as if the I/Os were independent: conditional on
                            these units, it says nothing of another pool.

Runs recorded with plain json have no bins. A typical unit's percentile then comes from its runs' own
fio percentile (the same number for a unit of one run: fio reads it from the same bins), labelled in
`source` (SOURCE_OWN, "no histogram in raw (run before json+)"); all I/Os cannot be pooled without bins,
so that estimand is "not judged" there.

    unit_tails(df, hist, by=None, unit="auto")   one row per cell × percentile × unit
    percentile_units(df, hist, metric, by)       a percentile's units, for a comparison (`compare.compare`)
    cell_tails(df, hist, by=None, unit="auto")   one row per cell × percentile (estimand="pooled": the other)
    unit_histograms(rows, hist, unit)            each experimental unit's merged bins (`knee_location`)
    tail_lines(tails)                            sentences for the conclusions
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.replication import ONE_POOL_NOTE, pool_frame, resolve_unit
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.measure.fio_hist import (HIST_COLUMNS, MAX_REL_WIDTH, NO_HISTOGRAM, PERCENTILE_COLUMNS, bin_edges,
                                         bin_index, judge_tail_frame, min_ios, percentile_name, percentile_of,
                                         rank_bins)

QUANTILES = (0.5, 0.99, 0.999, 0.9999)
TYPICAL, POOLED = "typical", "pooled"
ESTIMANDS = (TYPICAL, POOLED)
SOURCE_BINS = "each unit's merged fio histogram bins"
SOURCE_OWN = f"each run's own fio percentile ({NO_HISTOGRAM})"
COLUMNS = ["percentile", "q", "estimand", "source", "status", "judged", "value_ns", "bin_lo_ns", "bin_hi_ns",
           "ci_low_ns", "ci_high_ns", "interval", "unit", "n", "n_units", "unsupported", "n_runs", "n_runs_hist",
           "ios", "min_ios", "note"]
UNIT_COLUMNS = ["percentile", "q", "unit", "unit_name", "source", "n_runs", "ios", "min_ios", "supported", "short",
                "value_ns", "os_low_ns", "os_high_ns", "os_low_rank", "os_high_rank", "os_level"]
_RUN_KEYS = ["run_id", "attempt", "direction"]


def _column_of(q) -> str:
    """The fio row column of quantile q: lat_p99_9_ns for 0.999."""
    return "lat_" + percentile_name(q).replace(".", "_") + "_ns"


def quantile_of(metric: str):
    """The quantile a percentile column holds (lat_p99_ns 0.99, clat_p99_ns 0.99), None for any other metric."""
    return PERCENTILE_COLUMNS.get(metric)


def estimand_text(estimand: str, unit: str, percentile: str = "percentile") -> str:
    """What a cell's value and interval estimate, in words.

    >>> estimand_text("typical", "pool", "p99")
    "a typical pool's p99"
    >>> estimand_text("pooled", "run", "p99.9")
    'all I/Os pooled: the p99.9 of every I/O of the cell together'
    """
    if estimand == TYPICAL:
        return f"a typical {unit}'s {percentile}" + (" (one pool)" if unit == "run" else "")
    return f"all I/Os pooled: the {percentile} of every I/O of the cell together"


# -- one unit ------------------------------------------------------------------------------------

def geomean(values) -> float:
    """The geometric mean of positive values; exactly the value where they are all one (no rounding of logs)."""
    v = np.asarray(values, dtype=float)
    return float(v[0]) if len(v) and (v == v[0]).all() else float(np.exp(np.mean(np.log(v))))


@dataclass(frozen=True)
class OrderInterval:
    """A distribution-free interval of a quantile from N I/Os: the order statistics of ranks `low_rank` and
    `high_rank` (1 the fastest) bracket it with binomial probability `level`; the ends are the outer edges of
    their bins (0 below the fastest I/O, inf past the slowest)."""
    low_ns: float
    high_ns: float
    low_rank: int
    high_rank: int
    level: float


NO_ORDER_INTERVAL = OrderInterval(math.nan, math.nan, 0, 0, math.nan)


def order_interval(bin_ns, counts, q, conf: float = 0.95) -> OrderInterval:
    """The order-statistic interval of the q-quantile of a histogram's I/Os (Hoefler & Belli 2015).

    With B ~ Binomial(N, q) the I/Os at or below the quantile, P(X(l) <= x_q <= X(u)) = P(l <= B <= u - 1);
    l = binom.ppf(α/2, N, q) and u = binom.ppf(1 - α/2, N, q) + 1 make it at least 1 - α. A rank's latency
    is known to its bin, so the interval runs from the lower edge of X(l)'s bin to the upper edge of X(u)'s.

    >>> o = order_interval([1000, 2000], [990, 10], 0.5)
    >>> (o.low_ns, o.high_ns), (o.low_rank, o.high_rank), round(o.level, 3)
    ((1000.0, 1008.0), (469, 532), 0.954)
    """
    n = int(np.sum(counts))
    if n == 0:
        return NO_ORDER_INTERVAL
    q, alpha = float(q), 1 - conf
    low = int(sps.binom.ppf(alpha / 2, n, q))
    high = int(sps.binom.ppf(1 - alpha / 2, n, q)) + 1
    level = float(sps.binom.cdf(high - 1, n, q) - sps.binom.cdf(low - 1, n, q))
    lo_key, hi_key = rank_bins(bin_ns, counts, [low, high])
    lo_ns = float(bin_edges([int(lo_key)])[0][0]) if np.isfinite(lo_key) else 0.0
    hi_ns = float(bin_edges([int(hi_key)])[1][0]) if np.isfinite(hi_key) else math.inf
    return OrderInterval(lo_ns, hi_ns, low, high, level)


@dataclass(frozen=True)
class UnitTail:
    """One experimental unit's own percentile: read from its merged bins, or from its runs' own fio
    percentile (`source`). `value_ns` is NaN where the unit cannot support the percentile, and `short`
    says why ("p3 has 812 I/Os"; '' where it can); `ios` is the count it was read from (from the runs'
    own: the smallest run's); `interval` its order-statistic interval (from bins only)."""
    unit_name: str
    source: str
    n_runs: int
    ios: int
    value_ns: float
    short: str = ""
    interval: OrderInterval = NO_ORDER_INTERVAL

    @property
    def supported(self) -> bool:
        return not self.short


def _from_bins(name: str, h: pd.DataFrame, q, conf: float) -> UnitTail:
    b, c = _merged(h)
    ios = int(c.sum())
    short = f"{name} has {ios:,} I/Os" if ios < min_ios(q) else ""
    return UnitTail(name, SOURCE_BINS, int(h["run_id"].nunique()), ios,
                    math.nan if short else percentile_of(b, c, q), short, order_interval(b, c, q, conf))


def _from_runs(name: str, runs: pd.DataFrame, q, column: str, source: str) -> UnitTail:
    """A unit's percentile from its runs' own: one run's own, or the geometric mean of its runs' where it has
    several (the labelled fallback; no bins to merge). A run whose I/O count cannot support the percentile (its
    own blanked by the per-run rule, or a table that kept fio's number) gives the unit none."""
    own = pd.to_numeric(runs[column], errors="coerce") if column in runs else pd.Series(np.nan, index=runs.index)
    known = "total_ios" in runs           # hand-made tables may lack the count: fio's numbers as given
    ios = pd.to_numeric(runs["total_ios"], errors="coerce").fillna(0) if known else pd.Series(0, index=runs.index)
    fewest = int(ios.min()) if len(ios) else 0
    if known and fewest < min_ios(q):
        short = f"{name} has {'a run of ' if len(runs) > 1 else ''}{fewest:,} I/Os"
    elif not len(own) or own.isna().any() or (own <= 0).any():
        short = f"{name} has no fio {column} of its own"
    else:
        short = ""
    return UnitTail(name, source, len(runs), fewest, math.nan if short else geomean(own), short)


# -- a cell's units ------------------------------------------------------------------------------

@dataclass(frozen=True)
class CellUnits:
    """A cell's units for one quantile, where their values come from, the cell's summed bins (empty without
    bins), its I/Os (the bins', or without them its runs' own counts) and what was left out (`notes`)."""
    units: tuple[UnitTail, ...]
    unit: str
    source: str
    bins: np.ndarray
    counts: np.ndarray
    ios: int
    n_runs: int
    n_runs_hist: int
    notes: tuple[str, ...] = ()

    @property
    def supported(self) -> list[UnitTail]:
        return [u for u in self.units if u.supported]

    @property
    def short_units(self) -> list[UnitTail]:
        return [u for u in self.units if not u.supported]


def _unit_ids(rows: pd.DataFrame, unit: str) -> tuple[pd.Series, pd.Series]:
    """Each row's experimental unit (a key) and the unit's name as a reader finds it: the pool's id (with its
    replicate where one id has several), or the run's."""
    if unit == "pool":
        pools = pool_frame(rows)
        rep = pools["pool_replicate"].astype(str)
        key = pools["pool_id"] + "#" + rep
        if "pool_id" not in rows:
            return key, "pool " + rep
        shared = pools.groupby("pool_id")["pool_replicate"].transform("nunique") > 1
        return key, pools["pool_id"].where(~shared, key)
    key = rows["run_id"].astype(str) + "#" + rows["attempt"].astype(str)
    name = rows["run_id"].astype(str).where(rows["attempt"] == 1, key)
    return key, name


def _merged(h: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    s = h.groupby("bin_ns")["count"].sum()
    return s.index.to_numpy(dtype=np.int64), s.to_numpy(dtype=np.int64)


def unit_histograms(rows: pd.DataFrame, h: pd.DataFrame, unit: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{unit id: (bin_ns, count)}: each experimental unit's bins, its runs' (`rows`) histogram rows `h` summed.

    A unit is a pool replicate ('pool#2') where `unit` is 'pool', else a run ('run#attempt')."""
    return {u: _merged(g) for u, g in _unit_groups(rows, h, unit)}


def _unit_groups(rows: pd.DataFrame, h: pd.DataFrame, unit: str):
    """(unit id, its histogram rows) for each experimental unit of `rows` with bins in `h`."""
    ids, _ = _unit_ids(rows, unit)
    unit_of = dict(zip(rows[_RUN_KEYS].itertuples(index=False, name=None), ids))
    hu = h.assign(_unit=[unit_of.get(k) for k in h[_RUN_KEYS].itertuples(index=False, name=None)])
    return hu.dropna(subset=["_unit"]).groupby("_unit")


def _own_source(column: str) -> str:
    if column.startswith("lat_"):
        return SOURCE_OWN
    return f"each run's own fio {column} (only lat's bins are kept, methods §18.1)"


def cell_units(rows: pd.DataFrame, h: pd.DataFrame, q, unit: str, conf: float = 0.95,
               column: str | None = None) -> CellUnits:
    """The units of one cell (`rows` its runs, `h` their histogram rows) for quantile q: from the bins where any
    run has them (a run without is left out and said), else from the runs' own percentile `column`."""
    keys = set(h[_RUN_KEYS].itertuples(index=False, name=None)) if len(h) else set()
    has = rows[[k in keys for k in rows[_RUN_KEYS].itertuples(index=False, name=None)]]
    column = column or _column_of(q)
    if not len(has) or not column.startswith("lat_"):         # only lat's bins are kept (methods §18.1)
        ids, names = _unit_ids(rows, unit)
        units = tuple(_from_runs(names[g.index[0]], g, q, column, _own_source(column))
                      for _, g in rows.groupby(ids, sort=True))
        ios = pd.to_numeric(rows.get("total_ios", pd.Series(0, index=rows.index)), errors="coerce").fillna(0)
        none = np.array([], np.int64)
        return CellUnits(units, unit, _own_source(column), none, none, int(ios.sum()), len(rows), 0)
    ids, names = _unit_ids(has, unit)
    name_of = dict(zip(ids, names))
    units = tuple(_from_bins(name_of[u], g, q, conf) for u, g in _unit_groups(has, h, unit))
    bins, counts = _merged(h)
    left = [f"{len(rows) - len(has)} of {len(rows)} runs without histogram left out"] if len(has) < len(rows) else []
    return CellUnits(units, unit, SOURCE_BINS, bins, counts, int(counts.sum()), len(rows), len(has), tuple(left))


# -- a cell's estimate ---------------------------------------------------------------------------

def _unit_word(unit: str, n: int) -> str:
    return f"{n} {'pool' if unit == 'pool' else 'run'}{'s' if n != 1 else ''}"


def _t_interval(values: list[float], conf: float) -> tuple[float, float]:
    """(low, high) of Student's t on the logs of the units' percentiles, around their geometric mean."""
    logs = np.log(np.asarray(values, dtype=float))
    n, m = len(logs), float(np.mean(logs))
    half = float(sps.t.ppf((1 + conf) / 2, n - 1) * np.std(logs, ddof=1) / math.sqrt(n))
    return math.exp(m - half), math.exp(m + half)


def _bin_of(value: float) -> tuple[float, float]:
    """The bin a value lies in (edges are whole ns; the nudge keeps a midpoint computed a hair low in its bin)."""
    lo, hi = bin_edges([int(math.floor(value * (1 + 1e-12)))])
    return float(lo[0]), float(hi[0])


def _base(cu: CellUnits, q, estimand: str) -> dict:
    """A cell's row before it is judged."""
    pct = percentile_name(q)
    return dict(percentile=pct, q=float(q), estimand=estimand_text(estimand, cu.unit, pct), source=cu.source,
                status="", judged=False, value_ns=math.nan, bin_lo_ns=math.nan, bin_hi_ns=math.nan,
                ci_low_ns=math.nan, ci_high_ns=math.nan, interval="", unit=cu.unit, n=0, n_units=len(cu.units),
                unsupported="; ".join(u.short for u in cu.units if u.short), n_runs=cu.n_runs,
                n_runs_hist=cu.n_runs_hist, ios=cu.ios, min_ios=min_ios(q), note="")


def _short_of_ios(out: dict, cu: CellUnits) -> str:
    """Why no unit gives a value: the cell's own count, or, where the cell's would do, that every unit is short
    (the same words for every cell it holds for, so a sentence says it once; the units are in `unsupported`)."""
    need, pct = out["min_ios"], out["percentile"]
    if cu.ios < need or len(cu.units) < 2:
        return f"not judged: {cu.ios} I/Os, a {pct} needs {need}"
    return f"not judged: every {'pool' if cu.unit == 'pool' else 'run'} short of the {need} I/Os a {pct} needs"


def _typical_interval(out: dict, cu: CellUnits, conf: float, notes: list) -> None:
    """The t interval across the units into `out`, or why there is none."""
    need, n, short = out["min_ios"], len(cu.units), cu.short_units
    if short:
        out["interval"] = (f"no interval: {len(short)} of {_unit_word(cu.unit, n)} "
                           f"{'has' if len(short) == 1 else 'have'} fewer than {need} I/Os")
        return
    if n < 2:
        with_what = "with a histogram" if cu.source == SOURCE_BINS else "with the percentile"
        out["interval"] = f"no interval: {_unit_word(cu.unit, n)} {with_what}"
        return
    low, high = _t_interval([u.value_ns for u in cu.units], conf)
    out.update(ci_low_ns=_bin_of(low)[0], ci_high_ns=_bin_of(high)[1],
               interval=f"t across {_unit_word(cu.unit, n)}, log scale"
               + (", conditional on one pool" if cu.unit == "run" else ""))
    if bin_index(int(out["ci_low_ns"])) == bin_index(int(_bin_of(high)[0])):
        notes.append("interval narrower than fio's bin: shown as the bin")


def _typical(cu: CellUnits, q, conf: float) -> dict:
    out = _base(cu, q, TYPICAL)
    notes = list(cu.notes)
    ok = cu.supported
    if not ok:
        out.update(status=_short_of_ios(out, cu) if cu.units else "not judged: no run", note="; ".join(notes))
        return out
    value = geomean([u.value_ns for u in ok])
    lo, hi = _bin_of(value)
    out.update(status="judged", judged=True, value_ns=value, bin_lo_ns=lo, bin_hi_ns=hi, n=len(ok))
    if cu.short_units:
        notes.append(f"{len(ok)} of {_unit_word(cu.unit, len(cu.units))} support a {out['percentile']}; "
                     + out["unsupported"])
    _typical_interval(out, cu, conf, notes)
    out["note"] = "; ".join(notes)
    return out


def _pooled(cu: CellUnits, q, conf: float) -> dict:
    out = _base(cu, q, POOLED)
    notes = list(cu.notes)
    if cu.source != SOURCE_BINS:          # I/Os are pooled from bins only
        out["status"] = f"not judged: {NO_HISTOGRAM if cu.source == SOURCE_OWN else 'no bins of this latency kept'}"
        return out
    if cu.ios < out["min_ios"]:
        out.update(status=f"not judged: {cu.ios} I/Os, a {out['percentile']} needs {out['min_ios']}",
                   note="; ".join(notes))
        return out
    value = percentile_of(cu.bins, cu.counts, q)
    lo, hi = _bin_of(value)
    o = order_interval(cu.bins, cu.counts, q, conf)
    out.update(status="judged", judged=True, value_ns=value, bin_lo_ns=lo, bin_hi_ns=hi, ci_low_ns=o.low_ns,
               ci_high_ns=o.high_ns, n=len(cu.units),
               interval=f"order statistics of all {cu.ios:,} I/Os ({o.level:.1%}, binomial), as if independent: "
                        f"conditional on these {_unit_word(cu.unit, len(cu.units))}")
    if math.isinf(hi):
        notes.append(f"beyond fio's range: at least {lo / 1e9:.2f} s")
    out["note"] = "; ".join(notes)
    return out


# -- the tables ----------------------------------------------------------------------------------

def _default_by(df: pd.DataFrame) -> list[str]:
    first = [c for c in ("workload", "direction") if c in df]
    return first + [c for c in varying_columns(df) if c not in first]


def _cells(df: pd.DataFrame, hist: pd.DataFrame | None, by, unit: str):
    """(by, unit, [(key, rows, their histogram rows)]) of a results table: the shared preparation of both tables."""
    by = _default_by(df) if by is None else ([by] if isinstance(by, str) else list(by))
    hist = pd.DataFrame(columns=HIST_COLUMNS) if hist is None else hist
    d = df.copy()
    if "run_id" not in d:                 # a hand-made table: a row per run
        d["run_id"] = d.index.astype(str)
    if "direction" not in d:
        d["direction"] = ""
    if "attempt" not in d:
        d["attempt"] = 1
    d["attempt"] = pd.to_numeric(d["attempt"], errors="coerce").fillna(1).astype(int)
    if "tail_not_judged" not in d and "total_ios" in d:    # results rebuilt before the per-run rule: apply it
        d = judge_tail_frame(d)                                # (a table without I/O counts cannot be judged)
    h = hist.astype({"attempt": int}) if len(hist) else hist
    unit = resolve_unit(d, by, unit)
    cells = []
    for key, rows in (d.groupby(by, dropna=False, sort=True) if by else [((), d)]):
        key = key if isinstance(key, tuple) else (key,)
        cells.append((dict(zip(by, key)), rows, h.merge(rows[_RUN_KEYS].drop_duplicates(), on=_RUN_KEYS)
                      if len(h) else h))
    return by, unit, cells


def unit_tails(df: pd.DataFrame, hist: pd.DataFrame | None, by=None, unit: str = "auto",
               quantiles=QUANTILES, conf: float = 0.95, column: str | None = None) -> pd.DataFrame:
    """Each unit's own percentile in each cell, with its distribution-free interval (`order_interval`).

    Arguments as `cell_tails`'s; `column` the fio row column a unit without bins falls back on (default
    the lat percentile of each quantile). One row per cell × percentile × unit: `by` and UNIT_COLUMNS:
    `unit_name`, `ios`, `supported` (its I/Os support the percentile; `short` why not), `value_ns` (NaN where not),
    `os_low_ns`/`os_high_ns` (the order statistics' bins; 0 and inf where a rank falls outside the I/Os),
    their ranks and `os_level`, the interval's binomial coverage.
    """
    by, unit, cells = _cells(df, hist, by, unit)
    out = []
    for key, rows, h in cells:
        for q in quantiles:
            cu = cell_units(rows, h, q, unit, conf, column)
            for u in cu.units:
                own = {k: v for k, v in asdict(u).items() if k != "interval"}
                out.append({**key, "percentile": percentile_name(q), "q": float(q), "unit": unit, **own,
                            "supported": u.supported, "min_ios": min_ios(q),
                            **{f"os_{k}": v for k, v in asdict(u.interval).items()}})
    return pd.DataFrame(out, columns=by + UNIT_COLUMNS)


def percentile_units(df: pd.DataFrame, hist: pd.DataFrame | None, metric: str, by,
                     unit: str = "auto") -> tuple[pd.DataFrame, str, str]:
    """A percentile column's experimental units, as `replication.to_units` gives a mean's: one row per unit with
    `by`, `metric` (the unit's own percentile: from its merged bins, else its runs' own fio one; NaN where its
    I/Os cannot support it), `n_runs`, `unit_name`, `ios`, `supported` and `short` (why not); with the unit and
    the estimand the units' values make, in words ("a typical pool's p99, from each unit's merged fio histogram
    bins")."""
    q = quantile_of(metric)
    if q is None:
        raise ValueError(f"{metric} is not a percentile column")
    u = unit_tails(df, hist, by=by, unit=unit, quantiles=(q,), column=metric)
    by = [by] if isinstance(by, str) else list(by)
    kind = str(u["unit"].iloc[0]) if len(u) else resolve_unit(df, by, unit)
    sources = " / ".join(dict.fromkeys(u["source"])) if len(u) else SOURCE_BINS
    estimand = f"{estimand_text(TYPICAL, kind, percentile_name(q))}, from {sources}"
    cols = by + ["value_ns", "n_runs", "unit_name", "ios", "supported", "short"]
    return u[cols].rename(columns={"value_ns": metric}).reset_index(drop=True), kind, estimand


def cell_tails(df: pd.DataFrame, hist: pd.DataFrame | None, by=None, unit: str = "auto",
               quantiles=QUANTILES, conf: float = 0.95, estimand: str = TYPICAL) -> pd.DataFrame:
    """p50, p99, p99.9, p99.99 of each cell with their interval, of one estimand (module docstring).

    `df` holds the rows to use (admissible runs: `select_admissible`), `hist` the store's
    latency_hist.parquet (`Sweep.histograms`; None or empty: each unit's value from its runs' own fio
    percentile, labelled in `source`). `by`: the cell's columns (default: workload, direction and every
    varying configuration column). `unit` as in `stats.summary`: 'auto' is the pool where any
    configuration has two pool replicates. `estimand` 'typical' (a typical pool's percentile) or 'pooled'
    (all I/Os pooled), named in the `estimand` column. Returns one row per cell × percentile with `by` and
    COLUMNS: `value_ns` and its interval `ci_low_ns`/`ci_high_ns`, both of that estimand; `bin_lo_ns`/
    `bin_hi_ns` the bin of the value (its precision); `n` the units it rests on, of `n_units`, and the
    others in `unsupported`; `status` 'judged' or 'not judged: reason'. docs/methods.md §18.

    Examples
    --------
    >>> rows = pd.DataFrame({"workload": "w", "direction": "read", "run_id": ["a", "b"], "attempt": 1,
    ...                      "total_ios": 3000})
    >>> hist = pd.DataFrame({"run_id": ["a", "a", "b"], "attempt": 1, "direction": "read",
    ...                      "bin_ns": [1000, 2000, 1000], "count": [2990, 10, 3000]})
    >>> t = cell_tails(rows, hist, quantiles=(0.99, 0.9999))
    >>> t[["percentile", "value_ns", "n", "status"]].values.tolist()
    [['p99', 1000.0, 2, 'judged'], ['p99.99', nan, 0, 'not judged: 6000 I/Os, a p99.99 needs 100000']]
    """
    if estimand not in ESTIMANDS:
        raise ValueError(f"estimand must be one of {ESTIMANDS}, got {estimand!r}")
    by, unit, cells = _cells(df, hist, by, unit)
    read = _typical if estimand == TYPICAL else _pooled
    out = [{**key, **read(cell_units(rows, h, q, unit, conf), q, conf)} for key, rows, h in cells for q in quantiles]
    return pd.DataFrame(out, columns=by + COLUMNS)


def _ms(v) -> str:
    return f"{v / 1e6:.3g} ms"


def estimands_said(estimand: pd.Series) -> str:
    """A table's estimands said once, whatever percentile each row is of: "a typical pool's percentile"."""
    return " / ".join(dict.fromkeys(estimand.dropna().str.replace(r" p\d[\d.]*", " percentile", regex=True)))


def _estimand_line(tails: pd.DataFrame) -> str:
    """What the table's values are, said once: its estimand and where the units' values come from."""
    estimands = estimands_said(tails["estimand"])
    sources = " / ".join(dict.fromkeys(tails["source"]))
    return f"Latency tails: {estimands}, from {sources} (methods §18)."


def _cell_line(label: str, g: pd.DataFrame) -> str:
    parts = []
    for _, r in g[g["judged"]].iterrows():
        if r["unsupported"]:          # the value rests on fewer units than the cell has, and there is no interval
            ci = (f" ({int(r['n'])} of {_unit_word(r['unit'], int(r['n_units']))} support a {r['percentile']}; "
                  f"{r['unsupported']}; no interval)")
        elif np.isfinite(r["ci_low_ns"]):
            ci = f" (95% CI {_ms(r['ci_low_ns'])}–{_ms(r['ci_high_ns'])}, {r['interval']})"
        else:
            ci = f" ({r['interval']})"
        parts.append(f"{r['percentile']} {_ms(r['value_ns'])}{ci}")
    return f"{label}: " + "; ".join(parts) + "." if parts else ""


def tail_lines(tails: pd.DataFrame) -> list[str]:
    """Sentences on the tails table: what it estimates, each judged cell's percentiles with their intervals
    and the units that could not support them, then how many were not judged and why, the bin width that
    bounds them, and the unit's caveat."""
    if tails is None or tails.empty:
        return []
    by = [c for c in tails.columns if c not in COLUMNS]
    out = [_estimand_line(tails)]
    for key, g in tails.groupby(by, dropna=False, sort=False) if by else [((), tails)]:
        key = key if isinstance(key, tuple) else (key,)
        line = _cell_line(", ".join(f"{c}={v}" for c, v in zip(by, key)), g)
        out += [line] if line else []
    for name, g in tails.groupby("percentile", sort=False):
        nj = g[~g["judged"]]
        if len(nj):
            few = nj["status"].map(bare_reason).str.contains("I/Os").sum()
            out.append(f"{name} not judged in {len(nj)} of {len(g)} cells" +
                       (f" ({few} with fewer than {int(g['min_ios'].iloc[0])} I/Os)" if few else "") + ".")
    if (tails["source"] == SOURCE_BINS).any():
        out.append(f"Percentiles are read from fio's histogram bins, at most {MAX_REL_WIDTH:.1%} of their value "
                   "wide: an interval is given to the bin and never narrower than one (methods §18).")
    if (tails["unit"] == "run").any() and tails["interval"].str.startswith("t across").any():
        out.append(ONE_POOL_NOTE[0].upper() + ONE_POOL_NOTE[1:] + ".")
    return out
