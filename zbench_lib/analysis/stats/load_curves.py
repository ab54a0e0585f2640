"""Latency against offered load, per cell, and its knee (the load factor; docs/methods.md §21).

A curve is one configuration (its workload and every other configuration column but `load`) in one
direction: a point per load level, its offered and achieved IOPS (the medians of its runs') and its p50 / p99 / p99.9
latency. A point's percentile is a typical unit's, the one estimand of its value and its interval: each
replication unit's own read from its runs' summed fio histogram bins, their geometric mean with its t
interval (`tails.cell_tails`, grouped by the configuration and the load; methods §18), and where cell_tails
abstains (too few I/Os for the percentile) or has only the runs' own fio percentiles (no histogram) the
point says why and has no number (NaN). The saturation level (closed loop) is the curve's last point, offered
nothing: its achieved IOPS is the most the configuration gave.

The knee is the lowest load whose p99 exceeds KNEE_FACTOR times the p99 at the lowest load
measured, judged on the intervals (`knee_verdicts`): a point is past the bound when its p99
interval's low end exceeds KNEE_FACTOR x the lowest load's interval's high end, under it when its
high end is at most KNEE_FACTOR x that low end, and otherwise "not judged". The knee is the first
point past the bound with every point before it under; a point not judged before it leaves the knee
not judged.

The knee's load between the measured loads, with a bootstrap interval over the units, is
`knee_location.knee_load`'s (`LoadCurve.knee_load`): the load where the p99 first reaches KNEE_FACTOR x the
lowest load's, the units resampled together at every load where the same pools ran them all.

A curve with its saturation level also states each open-loop offer as a share of what that level sustained
(`LoadCurve.sustained_share`), and marks an offer more than PROBE_TOLERANCE away from its stated fraction
of it (`LoadCurve.probe_off`): the short probe misread the cell's saturation (methods §21).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.columns import config_columns
from zbench_lib.analysis.data.replication import resolve_unit
from zbench_lib.analysis.stats.knee_location import KneeLoad, knee_load
from zbench_lib.analysis.stats.tails import SOURCE_BINS, cell_tails, unit_histograms
from zbench_lib.measure.fio_hist import NO_HISTOGRAM

KNEE_FACTOR = 2.0           # the p99 that marks the knee, as a multiple of the lowest load's
# A probe more than this far from the saturation runs' IOPS is said beside the loads it set: a write probe's
# short window is partly absorbed by ZFS's dirty-data buffer and reads high (methods §21).
PROBE_TOLERANCE = 0.10
SATURATION = "saturation"
QUANTILES = {"p50": 0.5, "p99": 0.99, "p99.9": 0.999}
# A point's verdict against the knee's bound (`knee_verdicts`); anything else starts "not judged: ".
LOWEST, UNDER, PAST = "lowest load", "under", "past"


@dataclass(frozen=True)
class Tail:
    """One percentile of a point: the cell's merged-histogram value and its 95% interval (ns), or why not.

    `value_ns` is NaN where `status` is 'not judged: ...'; `lo_ns`/`hi_ns` are NaN where `interval`
    says there is none (one unit, a unit with too few I/Os)."""
    value_ns: float
    lo_ns: float
    hi_ns: float
    status: str
    interval: str

    judged = property(lambda self: self.status == "judged")
    has_interval = property(lambda self: self.judged and math.isfinite(self.lo_ns) and not math.isnan(self.hi_ns))

    @classmethod
    def missing(cls, why: str) -> Tail:
        return cls(math.nan, math.nan, math.nan, f"not judged: {why}", "")


@dataclass(frozen=True)
class LoadPoint:
    """One load level of a curve (latencies in ns; offered None at saturation)."""
    load: str
    offered_iops: float | None
    achieved_iops: float
    p50: Tail
    p99: Tail
    p99_9: Tail
    load_fraction: float | None     # the offer over the cell's saturation probe, where it had one
    load_achieved: float | None     # achieved over offered (None at saturation)
    runs: int
    probe_iops: float | None = None     # the cell's saturation probe (the median of its runs'), where it had one

    saturation = property(lambda self: self.load == SATURATION)
    p50_ns = property(lambda self: self.p50.value_ns)
    p99_ns = property(lambda self: self.p99.value_ns)
    p99_9_ns = property(lambda self: self.p99_9.value_ns)

    def tail(self, percentile: str) -> Tail:
        """The Tail of 'p50', 'p99' or 'p99.9'."""
        return getattr(self, percentile.replace(".", "_"))


@dataclass(frozen=True)
class LoadCurve:
    """A configuration's points in load order (saturation last), each point's verdict against the
    knee's bound (`knee_verdicts`, aligned with `points`) and the knee (None: none, or not judged)."""
    config: tuple                   # (column, value) pairs: what the curve is of
    direction: str
    points: tuple[LoadPoint, ...]
    verdicts: tuple[str, ...]
    knee: LoadPoint | None
    knee_load: KneeLoad | None = None   # where between the loads the p99 reaches the bound, and its interval

    @property
    def sustained_iops(self) -> float | None:
        """What the curve's closed-loop saturation runs sustained (the saturation point's IOPS, the median of
        its runs', as its sentence states it), or None without a saturation level."""
        sat = next((p for p in self.points if p.saturation), None)
        return sat.achieved_iops if sat is not None and math.isfinite(sat.achieved_iops) else None

    def sustained_share(self, p: LoadPoint) -> float | None:
        """An open-loop point's offer over what the saturation runs sustained (None where either is missing)."""
        s = self.sustained_iops
        return None if s is None or not s or p.offered_iops is None else p.offered_iops / s

    def probe_off(self, p: LoadPoint) -> bool:
        """Whether a fractional load's offer is more than PROBE_TOLERANCE away from its stated fraction of what
        the saturation runs sustained: the short probe misread the cell's saturation (methods §21)."""
        share = self.sustained_share(p)
        if share is None or not p.load_fraction:
            return False
        return abs(share / p.load_fraction - 1) > PROBE_TOLERANCE

    @property
    def knee_not_judged(self) -> LoadPoint | None:
        """The first point whose verdict is 'not judged' with every point before it under the bound."""
        for p, v in zip(self.points[1:], self.verdicts[1:]):
            if v != UNDER:
                return p if v.startswith("not judged") else None
        return None


def _ms(ns: float) -> str:
    """Milliseconds as the sentences write them: '2.13', '151', '1,730' (3 significant digits, a thousands
    separator, never '1.73e+03'; the stats room may not import claims.wording's `num`)."""
    ms = ns / 1e6
    return f"{ms:,.0f}" if abs(ms) >= 100 else f"{ms:.3g}"


def knee_verdicts(points, factor: float = KNEE_FACTOR) -> list[str]:
    """Each point's verdict against `factor` x the lowest load's p99, on their intervals (methods §21):
    LOWEST for the first, PAST when its p99 interval's low end exceeds factor x the first's high end,
    UNDER when its high end is at most factor x the first's low end, else 'not judged: why'."""
    if not points:
        return []
    base = points[0].p99
    if not base.has_interval:
        why = bare_reason(base.status) if not base.judged else base.interval.removeprefix("no interval: ")
        return [LOWEST] + [f"not judged: the lowest load's p99 has no interval ({why})"] * (len(points) - 1)
    out = [LOWEST]
    for p in points[1:]:
        t = p.p99
        if not t.has_interval:
            why = bare_reason(t.status) if not t.judged else t.interval.removeprefix("no interval: ")
            out.append(f"not judged: its p99 has no interval ({why})")
        elif t.lo_ns > factor * base.hi_ns:
            out.append(PAST)
        elif t.hi_ns <= factor * base.lo_ns:
            out.append(UNDER)
        else:
            out.append(f"not judged: its p99 interval ({_ms(t.lo_ns)}–{_ms(t.hi_ns)} ms) overlaps {factor:g}x "
                       f"the lowest load's ({_ms(factor * base.lo_ns)}–{_ms(factor * base.hi_ns)} ms)")
    return out


def knee(points, factor: float = KNEE_FACTOR) -> LoadPoint | None:
    """The first point (in load order) past `factor` x the first point's p99 on their intervals, with
    every point before it under; None if none is, or one before it is not judged (`knee_verdicts`)."""
    for p, v in zip(points[1:], knee_verdicts(points, factor)[1:]):
        if v != UNDER:
            return p if v == PAST else None
    return None


def _tail(rows: pd.DataFrame) -> Tail:
    r = rows.iloc[0]
    if r["source"] != SOURCE_BINS:      # a load point's latency is read from its bins, or not at all (§21)
        return Tail.missing(NO_HISTOGRAM)
    return Tail(float(r["value_ns"]), float(r["ci_low_ns"]), float(r["ci_high_ns"]), str(r["status"]),
                str(r["interval"]))


def _point(load: str, g: pd.DataFrame, tails: pd.DataFrame | None) -> LoadPoint:
    def med(c: str) -> float:
        return float(pd.to_numeric(g[c], errors="coerce").median()) if c in g and g[c].notna().any() else math.nan

    def opt(c: str) -> float | None:
        return None if math.isnan(med(c)) else med(c)

    if tails is None:
        p = {name: Tail.missing(NO_HISTOGRAM) for name in QUANTILES}
    else:
        p = {name: _tail(tails[tails["percentile"] == name]) for name in QUANTILES}
    return LoadPoint(str(load), None if load == SATURATION else opt("offered_iops"), med("iops"),
                     p["p50"], p["p99"], p["p99.9"], opt("load_fraction"), opt("load_achieved"), len(g),
                     None if load == SATURATION else opt("probe_iops"))


def _order(p: LoadPoint) -> tuple:
    """Load order: by offered IOPS, saturation last."""
    return (p.saturation, p.offered_iops if p.offered_iops is not None else p.achieved_iops)


def _knee_load(points: list[LoadPoint], g: pd.DataFrame, h: pd.DataFrame | None, unit: str) -> KneeLoad:
    """`knee_location.knee_load` of a curve's open-loop points: its runs `g`, its histogram rows `h`."""
    open_loop = [p for p in points if not p.saturation]
    fraction = all(p.load_fraction is not None for p in open_loop)
    scale = "fraction" if fraction else "IOPS"
    if h is None or not len(h):
        return KneeLoad.not_judged(NO_HISTOGRAM, scale)
    x = [p.load_fraction if fraction else p.offered_iops for p in open_loop]
    loads = [unit_histograms(g[g["load"].astype(str) == p.load], h, unit) for p in open_loop]
    return knee_load(x, loads, [p.p99_ns for p in open_loop], KNEE_FACTOR, scale=scale, unit=unit)


def _runs_frame(df: pd.DataFrame, hist: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The rows and histogram rows with whole-number attempts, as cell_tails reads them."""
    d = df if "attempt" in df else df.assign(attempt=1)
    d = d.assign(attempt=pd.to_numeric(d["attempt"], errors="coerce").fillna(1).astype(int))
    return d, (hist.astype({"attempt": int}) if hist is not None and len(hist) else None)


def load_curves(df: pd.DataFrame, hist: pd.DataFrame | None, unit: str = "auto") -> list[LoadCurve]:
    """A curve per configuration and direction of a sweep with the load factor ([] without one).

    `df`: the rows to estimate from (the admissible runs: analysis.data.flags); `hist`: the store's
    latency_hist.parquet (`Sweep.histograms`; None: every percentile not judged, no histogram, and
    never a median of the runs' own percentiles in its place). `unit` as in `tails.cell_tails`."""
    if "load" not in df.columns or df.empty:
        return []
    keys = ["workload"] if "workload" in df.columns else []       # a curve names its workload, varying or not
    keys += [c for c in config_columns(df) if c in df.columns and c not in ("workload", "load", "direction", "sweep_id")
             and df[c].nunique(dropna=False) > 1]
    by = ["direction", *keys, "load"]
    tails = cell_tails(df, hist, by=by, unit=unit, quantiles=tuple(QUANTILES.values()))
    runs, h = _runs_frame(df, hist)
    unit = resolve_unit(runs, by, unit)
    out = []
    for (direction, *vals), g in runs.groupby(["direction", *keys], dropna=False, sort=True):
        t = tails
        for c, v in zip(["direction", *keys], [direction, *vals]):
            t = t[t[c].isna()] if pd.isna(v) else t[t[c] == v]
        points = sorted((_point(lv, r, t[t["load"] == lv]) for lv, r in g.groupby("load", sort=False)), key=_order)
        out.append(LoadCurve(tuple(zip(keys, vals)), str(direction), tuple(points), tuple(knee_verdicts(points)),
                             knee(points), _knee_load(points, g, h, unit)))
    return out


def curves_table(curves: list[LoadCurve]) -> pd.DataFrame:
    """The curves as one tidy table: a row per point, its configuration's columns, each percentile's
    value, interval and status, the point's verdict against the knee's bound, `knee` True on the knee, and the
    curve's knee load with its bootstrap interval (`knee_load`, `_low`, `_high`: inf beyond the highest
    open-loop load; on `knee_load_scale`)."""
    rows = []
    for c in curves:
        for p, verdict in zip(c.points, c.verdicts):
            row = {**dict(c.config), "direction": c.direction, "load": p.load, "offered_iops": p.offered_iops,
                   "achieved_iops": p.achieved_iops, "load_fraction": p.load_fraction,
                   "load_achieved": p.load_achieved, "runs": p.runs, "probe_iops": p.probe_iops,
                   "sustained_share": c.sustained_share(p), "probe_off": c.probe_off(p)}
            for name in QUANTILES:
                t, col = p.tail(name), name.replace(".", "_")
                row |= {f"{col}_ns": t.value_ns, f"{col}_ci_low_ns": t.lo_ns,
                        f"{col}_ci_high_ns": t.hi_ns, f"{col}_status": t.status}
            k = c.knee_load or KneeLoad.not_judged("not computed")
            rows.append(row | {"knee_verdict": verdict, "knee": p is c.knee, "knee_load": k.load,
                               "knee_load_low": k.low, "knee_load_high": k.high, "knee_load_scale": k.scale,
                               "knee_load_status": k.status})
    return pd.DataFrame(rows)
