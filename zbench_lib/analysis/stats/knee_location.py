"""Where a latency curve reaches its knee, with a bootstrap interval over the units (docs/methods.md §21).

The knee rule (`load_curves.knee_verdicts`) says at which measured load the p99 is past twice the lowest
load's, on the intervals; its resolution is the load grid. This module places the knee between the loads
and says how well the units place it:

- **The knee's load**: the offered load at which the p99 first reaches `factor` x the lowest load's p99,
  each load's p99 a typical unit's, the geometric mean of its units' own p99s from their bins (as the
  curve's points, `tails.cell_tails`, methods §18: one estimand for the value and its interval), read between the two
  neighbouring open-loop loads on a line in log p99 against load (a p99 that grows by a constant factor
  per step of load; between two loads the place is that model's, not a measurement). The saturation
  level is closed loop, not a load on the axis: a p99 that reaches the bound only there, or nowhere,
  puts the knee beyond the highest open-loop load (`math.inf`).
- **Its interval**: a percentile bootstrap over the experimental units. Each replicate draws units with
  replacement and recomputes every load's p99 from the drawn units' own (the geometric mean over the draw),
  then the knee's load; every unit must support a p99 on its own (as the typical interval needs). Where the
  same units ran every load (the pools of a configuration: a pool runs all its loads) they are drawn
  together, one draw for every load, so a slow pool stays slow at every load as it was; where each load
  has units of its own (runs, as units on one pool) each load's are drawn on their own. The interval is
  the 2.5% and 97.5% points of the replicates' loads; an upper end beyond the highest open-loop load is
  `math.inf` (said "beyond"). With 3 units a load has 10 distinct resamples: the interval cannot be wider
  than the units' own spread allows, and undercovers (`benchmarks/knee_power.py` measures by how much).

Pure: arrays in, a record out; seeded, so a page is the same each time it is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from zbench_lib.measure.fio_hist import min_ios

RESAMPLES = 2000
SEED = 20_461           # fixed: the interval is part of a page, rebuilt the same from the same store
P99 = Fraction(99, 100)


@dataclass(frozen=True)
class KneeLoad:
    """The load where a curve's p99 first reaches `factor` x its lowest load's, and its bootstrap interval.

    Loads are on `scale`: 'fraction' (of the cell's saturation probe) or 'IOPS' (offered). `load` and `high`
    are math.inf beyond the highest open-loop load (`beyond` is the share of replicates there); every number
    is NaN where `status` is 'not judged: why'."""
    load: float
    low: float
    high: float
    scale: str
    highest: float              # the highest open-loop load measured (what "beyond" is beyond)
    resamples: int
    units: str                  # '3 pools', '5 runs' (per load)
    together: bool              # the same units drawn together at every load
    beyond: float
    status: str

    @property
    def judged(self) -> bool:
        return self.status == "judged"

    @classmethod
    def not_judged(cls, why: str, scale: str = "fraction") -> KneeLoad:
        return cls(math.nan, math.nan, math.nan, scale, math.nan, 0, "", False, math.nan, f"not judged: {why}")


def crossing(x: np.ndarray, p99: np.ndarray, factor: float) -> np.ndarray:
    """The load at which each row of `p99` (rows x loads, in load order) first exceeds `factor` x its first
    value, read on the line in log p99 between the loads `x` around it; math.inf where no load does.

    >>> float(crossing(np.array([0.25, 0.5]), np.array([[1.0, 4.0]]), 2.0)[0])
    0.375
    """
    p = np.asarray(p99, dtype=float)
    bound = factor * p[:, :1]
    over = p[:, 1:] > bound
    hit = np.where(over.any(axis=1), over.argmax(axis=1) + 1, 0)
    out = np.full(len(p), math.inf)
    rows = np.flatnonzero(hit)
    i = hit[rows]
    lo, hi = np.log(p[rows, i - 1]), np.log(p[rows, i])
    share = (np.log(bound[rows, 0]) - lo) / (hi - lo)
    out[rows] = x[i - 1] + share * (x[i] - x[i - 1])
    return out


def _grid(units: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(unit ids, bin keys, counts as units x bins) of one load's {unit: (bins, counts)} on one bin grid."""
    ids = sorted(units)
    keys = np.unique(np.concatenate([np.asarray(units[u][0]) for u in ids]))
    m = np.zeros((len(ids), len(keys)), dtype=np.int64)
    for r, u in enumerate(ids):
        m[r, np.searchsorted(keys, units[u][0])] = units[u][1]
    return ids, keys, m


def _draws(rng: np.random.Generator, n_units: int, resamples: int) -> np.ndarray:
    """How often each unit is drawn in each replicate (resamples x units)."""
    idx = rng.integers(0, n_units, size=(resamples, n_units))
    return (idx[:, :, None] == np.arange(n_units)).sum(axis=1)


def _unit_p99s(keys: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Each unit's own p99 (a row of `m`), read as fio reads it (the first bin reaching 0.99 x N)."""
    cum = np.cumsum(m, axis=1)
    reach = cum * P99.denominator >= P99.numerator * cum[:, -1:]
    return keys[reach.argmax(axis=1)].astype(float)


def _p99s(keys: np.ndarray, m: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each replicate's typical unit's p99: the geometric mean of the drawn units' own p99s (`weights`: how
    often each was drawn), as `tails.geomean` (exactly the value where the draw holds one unit's)."""
    own = _unit_p99s(keys, m)
    mean = np.exp((weights @ np.log(own)) / weights.sum(axis=1))
    drawn = np.where(weights > 0, own, np.nan)
    low, high = np.nanmin(drawn, axis=1), np.nanmax(drawn, axis=1)
    return np.where(low == high, low, mean)


def _replicates(loads: list[dict], resamples: int, seed: int) -> tuple[np.ndarray, bool]:
    """(replicates x loads p99s, whether the units were drawn together at every load)."""
    rng = np.random.default_rng(seed)
    grids = [_grid(units) for units in loads]
    together = all(g[0] == grids[0][0] for g in grids)
    shared = _draws(rng, len(grids[0][0]), resamples) if together else None
    cols = [_p99s(keys, m, shared if together else _draws(rng, len(ids), resamples)) for ids, keys, m in grids]
    return np.column_stack(cols), together


def _why_not(loads: list[dict], p99: list[float]) -> str:
    if len(loads) < 2:
        return "fewer than two open-loop loads"
    if not all(math.isfinite(v) for v in p99):
        return "a load's p99 is not judged"
    if min(len(u) for u in loads) < 2:
        return "a load has fewer than 2 units to resample"
    if any(int(np.sum(c)) < min_ios(P99) for u in loads for _, c in u.values()):
        return "a unit of a load has too few I/Os for a p99 of its own (the interval needs every unit's)"
    return ""


def knee_load(x: list[float], loads: list[dict], p99: list[float], factor: float, *, scale: str, unit: str,
              resamples: int = RESAMPLES, seed: int = SEED) -> KneeLoad:
    """The knee's load of one curve and its bootstrap interval (see the module's text).

    `x`: the open-loop loads in order, on `scale`; `loads`: each one's units' bins ({unit: (bins, counts)},
    `tails.unit_histograms`); `p99`: each one's typical unit's p99 (the curve's points, NaN where not judged);
    `unit`: 'pool' or 'run'."""
    why = _why_not(loads, p99)
    if why:
        return KneeLoad.not_judged(why, scale)
    xs = np.asarray(x, dtype=float)
    point = float(crossing(xs, np.asarray([p99]), factor)[0])
    reps, together = _replicates(loads, resamples, seed)
    found = np.sort(crossing(xs, reps, factor))
    low, high = found[int(math.floor(0.025 * resamples))], found[int(math.ceil(0.975 * resamples)) - 1]
    n = min(len(u) for u in loads)
    return KneeLoad(point, float(low), float(high), scale, float(xs[-1]), resamples,
                    f"{n} {unit}{'s' if n != 1 else ''}", together, float(np.isinf(found).mean()), "judged")
