"""Latency against offered load, per cell, and its knee (the load factor; docs/methods.md §21).

A curve is one configuration (every configuration column but `load`) in one direction: a point per
load level, its offered and achieved IOPS and its p50 / p99 / p99.9 completion latency, each the
median over the level's runs of the runs' own percentiles (a curve's shape, not the tails table's
merged-bin estimate). The saturation level (closed loop) is the curve's last point, offered nothing:
its achieved IOPS is the most the configuration gave. The knee is the lowest load whose p99 exceeds
KNEE_FACTOR times the p99 at the lowest load measured (`knee`); none when no point does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from zbench_lib.analysis.data.sweep_data import CONFIG_COLUMNS

KNEE_FACTOR = 2.0           # the p99 that marks the knee, as a multiple of the lowest load's
SATURATION = "saturation"
PERCENTILES = {"p50": "clat_p50_ns", "p99": "clat_p99_ns", "p99.9": "clat_p99_9_ns"}


@dataclass(frozen=True)
class LoadPoint:
    """One load level of a curve (latencies in ns; offered None at saturation)."""
    load: str
    offered_iops: float | None
    achieved_iops: float
    p50_ns: float
    p99_ns: float
    p99_9_ns: float
    load_fraction: float | None     # the offer over the cell's saturation probe, where it had one
    load_achieved: float | None     # achieved over offered (None at saturation)
    runs: int

    saturation = property(lambda self: self.load == SATURATION)


@dataclass(frozen=True)
class LoadCurve:
    """A configuration's points in load order (saturation last) and its knee (None: none measured)."""
    config: tuple                   # (column, value) pairs: what the curve is of
    direction: str
    points: tuple[LoadPoint, ...]
    knee: LoadPoint | None


def knee(points: list[LoadPoint] | tuple[LoadPoint, ...], factor: float = KNEE_FACTOR) -> LoadPoint | None:
    """The first point (in load order) whose p99 exceeds `factor` x the first point's p99; None if none
    does or the first has no p99."""
    base = points[0].p99_ns if points else math.nan
    if not base > 0:
        return None
    return next((p for p in points[1:] if p.p99_ns > factor * base), None)


def _point(load: str, g: pd.DataFrame) -> LoadPoint:
    med = lambda c: float(g[c].median()) if c in g and g[c].notna().any() else math.nan  # noqa: E731
    opt = lambda c: None if math.isnan(med(c)) else med(c)  # noqa: E731
    return LoadPoint(str(load), None if load == SATURATION else opt("offered_iops"), med("iops"),
                     med(PERCENTILES["p50"]), med(PERCENTILES["p99"]), med(PERCENTILES["p99.9"]),
                     opt("load_fraction"), opt("load_achieved"), len(g))


def _order(p: LoadPoint) -> tuple:
    """Load order: by offered IOPS, saturation last."""
    return (p.saturation, p.offered_iops if p.offered_iops is not None else p.achieved_iops)


def load_curves(df: pd.DataFrame) -> list[LoadCurve]:
    """A curve per configuration and direction of a sweep with the load factor ([] without one).
    Pass the rows to estimate from (the admissible runs: analysis.data.flags)."""
    if "load" not in df.columns or df.empty:
        return []
    keys = [c for c in CONFIG_COLUMNS if c in df.columns and c not in ("load", "direction", "sweep_id")
            and df[c].nunique(dropna=False) > 1]
    out = []
    for (direction, *vals), g in df.groupby(["direction", *keys], dropna=False, sort=True):
        points = sorted((_point(lv, r) for lv, r in g.groupby("load", sort=False)), key=_order)
        out.append(LoadCurve(tuple(zip(keys, vals)), str(direction), tuple(points), knee(points)))
    return out


def curves_table(curves: list[LoadCurve]) -> pd.DataFrame:
    """The curves as one tidy table: a row per point, its configuration's columns, `knee` True on the knee."""
    rows = [{**dict(c.config), "direction": c.direction, **vars(p), "knee": p is c.knee}
            for c in curves for p in c.points]
    return pd.DataFrame(rows)
