"""Variance components of a sweep and how many pools, how many runs (Kalibera & Jones 2013; methods §22).

A cell (a configuration × workload × direction) is measured on P pool replicates with r runs on
each. On the log of the metric, a run of cell c on pool p is

    y_cpk = mu_c + b_cp + e_cpk,   b_cp ~ N(0, sigma2_b) (pool to pool),  e_cpk ~ N(0, sigma2_w) (run to run)

The log scale is deliberate: the half-width of a cell's CI over its mean (the relative half-width
every table and the repetition rule read, `stats.summary`'s `rel_ci_halfwidth`) is set by the
*relative* variance, and sigma2 on the log scale is the squared CoV (to first order) whatever the
cell's level. So one sigma2_b and one sigma2_w can hold for the cells of a family (a workload and a
direction) whose IOPS differ tenfold, and they are estimated pooled over those cells, the cell a
fixed effect (its mean never inflates sigma2_b).

- `estimate_components` / `fit_components`: sigma2_b, sigma2_w and their sum by REML (statsmodels
  `MixedLM`, a random intercept per pool replicate of a cell, a fixed mean per cell; an estimate
  statsmodels leaves just short of sigma2_b = 0 whose REML likelihood is no higher than at 0 is put
  at 0). Intervals (95% by default): sigma2_b's is the profile-likelihood interval of the REML
  likelihood (sigma2_w maximised out; lower limit 0 when 0 is inside), which keeps its coverage near
  the boundary where a Wald or Satterthwaite interval does not (benchmarks/variance_components.py);
  sigma2_w's and the total's are Satterthwaite chi-square intervals, df = 2·est²/Var(est) with Var
  from the inverse REML expected information (SAS PROC MIXED's `CL`; in a balanced design
  sigma2_w's df is exactly N − pools, so its interval is the exact one). One run per pool: only the
  total is identifiable (exact chi-square interval on the residual variance around the cell means);
  one pool per cell: only sigma2_w (the same, around the pool means). Each case says so
  (`within_estimable`, `between_estimable`, `reason`).
- `costs_from_events`: the wall cost of a pool (create + prefill + teardown) and of a run, from the
  sweep's own events.jsonl.
- `expected_rel_halfwidth`: t_{P-1}·sqrt(sigma2_b/P + sigma2_w/(P·r)) on the log scale, as the
  relative half-width sinh(h) (mean·exp(±h) is the interval); a bound where only the total is known.
- `allocate`: the (P, r) with the narrowest expected interval within a wall-time budget per cell,
  around Kalibera & Jones' r* = sqrt((c_pool/c_run)·(sigma2_w/sigma2_b)), with alternatives.
- `expected_for_design`: the planner's dry run, from the components the shipped examples measured
  (data/examples/components.json, written by scripts/example_components.py).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as sps

from zbench_lib.analysis.data.flags import select_admissible
from zbench_lib.analysis.data.replication import pool_frame
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.core.paths import REPO_ROOT

FAMILY = ("workload", "direction")
COMPONENTS_FILE = REPO_ROOT / "data" / "examples" / "components.json"
ONE_RUN = ("one run per pool: run-to-run and pool-to-pool variance are confounded, only their sum is "
           "known")
ONE_POOL = "one pool per cell: the pool-to-pool variance is not identifiable, only the run-to-run one"
NO_REPLICATION = "one run on one pool per cell: no variance is identifiable"
SPLIT_HINT = "2 or more runs on each of 2 or more pools per cell (e.g. 3 pools × 2 runs) would split them"
NO_MATCH = "unknown: no shipped example measured this kind"


# -- records ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """A variance (log scale) with its interval at the components' `conf`; df nan where exact df do not apply."""
    estimate: float
    low: float
    high: float
    df: float            # sigma2_b's: the Satterthwaite df its profile interval is not built on (shown only)
    method: str          # "Satterthwaite", "chi-square (exact)", "profile likelihood"

    @property
    def cov(self) -> float:
        """The CoV it stands for: sqrt(variance) (to first order; exp-1 corrections are below 0.1% at 5%)."""
        return math.sqrt(max(self.estimate, 0.0))


@dataclass(frozen=True)
class Components:
    """A family's variance components on the log scale (so: relative variances, squared CoVs)."""
    family: tuple            # ((column, value), ...): the `by` columns' values
    metric: str
    n_cells: int
    n_pools: int             # pool replicates of cells (groups of the model)
    n_runs: int
    pools_per_cell: float
    runs_per_pool: float
    between: Interval | None
    within: Interval | None
    total: Interval | None
    between_estimable: bool
    within_estimable: bool
    reason: str              # "" when both are split, else why not
    method: str              # "REML", "residual variance"
    conf: float = 0.95
    dropped: int = 0         # rows without a positive value of the metric (no log)
    distinct_pools: int = 0  # pools created (one pool may hold several cells of the family)

    @property
    def label(self) -> str:
        return " ".join(str(v) for _, v in self.family) or "all"

    @property
    def split(self) -> bool:
        return self.between_estimable and self.within_estimable

    @property
    def ratio(self) -> float | None:
        """sigma2_w / sigma2_b (inf where sigma2_b is estimated at 0); None unless split."""
        if not self.split:
            return None
        return math.inf if self.between.estimate <= 0 else self.within.estimate / self.between.estimate

    def to_record(self) -> dict:
        """A flat row (the DataFrame form, and components.json's entries)."""
        row = {c: v for c, v in self.family}
        row.update(family=self.label, family_columns=[c for c, _ in self.family], metric=self.metric,
                   n_cells=self.n_cells, n_pools=self.n_pools, n_runs=self.n_runs,
                   pools_per_cell=self.pools_per_cell, runs_per_pool=self.runs_per_pool,
                   between_estimable=self.between_estimable, within_estimable=self.within_estimable,
                   reason=self.reason, method=self.method, conf=self.conf, dropped=self.dropped,
                   distinct_pools=self.distinct_pools)
        for name in ("between", "within", "total"):
            iv = getattr(self, name)
            row.update({f"{name}{k}": (getattr(iv, a) if iv else (None if a == "method" else math.nan))
                        for k, a in (("", "estimate"), ("_low", "low"), ("_high", "high"), ("_df", "df"),
                                     ("_method", "method"))})
        return row

    @classmethod
    def from_record(cls, row: dict) -> Components:
        def iv(name):
            est = row.get(name)
            if est is None or (isinstance(est, float) and math.isnan(est)):
                return None
            return Interval(float(est), _num(row.get(f"{name}_low")), _num(row.get(f"{name}_high")),
                            _num(row.get(f"{name}_df")), str(row.get(f"{name}_method") or ""))
        cols = list(row.get("family_columns") or [])
        return cls(tuple((c, row.get(c)) for c in cols), row["metric"], int(row["n_cells"]), int(row["n_pools"]),
                   int(row["n_runs"]), float(row["pools_per_cell"]), float(row["runs_per_pool"]),
                   iv("between"), iv("within"), iv("total"), bool(row["between_estimable"]),
                   bool(row["within_estimable"]), str(row.get("reason") or ""), str(row.get("method") or ""),
                   float(row.get("conf", 0.95)), int(row.get("dropped", 0)), int(row.get("distinct_pools", 0)))


def _num(v) -> float:
    """A stored number; None (JSON has no NaN) is nan."""
    return math.nan if v is None else float(v)


@dataclass(frozen=True)
class Costs:
    """Mean wall seconds from a sweep's events: a pool's create, its targets' prefill and its teardown; a run."""
    create_s: float
    prefill_s: float         # per pool: the sum over its targets
    teardown_s: float
    run_s: float             # an attempt, run started -> run judged (or completed)
    cells_per_pool: float    # cells measured on one pool: they share its cost
    n_pools: int
    n_runs: int
    attempts_per_admissible: float = math.nan   # from repetitions done / gave up: replacements cost too

    @property
    def pool_s(self) -> float:
        return sum(0.0 if math.isnan(v) else v for v in (self.create_s, self.prefill_s, self.teardown_s))

    @property
    def pool_per_cell_s(self) -> float:
        """What one more pool replicate costs one cell: the pool's cost shared by the cells it holds."""
        share = self.cells_per_pool if np.isfinite(self.cells_per_pool) else 1.0
        return self.pool_s / max(share, 1.0)

    @property
    def known(self) -> bool:
        return self.n_pools > 0 and self.n_runs > 0 and self.run_s > 0


@dataclass(frozen=True)
class Expected:
    """An expected relative CI half-width of a cell's mean (0.05 = ±5%) and what kind of figure it is."""
    rel_halfwidth: float | None
    kind: str                # "estimate", "upper bound", "lower bound", "unknown"
    note: str
    rel_halfwidth_high: float | None = None   # the same with the components' upper limits

    def text(self) -> str:
        if self.rel_halfwidth is None:
            return "no interval over pools" if self.note.startswith("one pool") else "n/a"
        sign = {"upper bound": "≤ ", "lower bound": "≥ "}.get(self.kind, "")
        return f"{sign}±{percent(self.rel_halfwidth)}"


def percent(x: float) -> str:
    """A share as a percentage with sensible digits: '3.1%', '0.012%'.

    >>> percent(0.031), percent(0.00012), percent(0.0)
    ('3.1%', '0.012%', '0%')
    """
    v = 100 * float(x)
    if v == 0 or not math.isfinite(v):
        return f"{v:g}%"
    return f"{v:.1f}%" if abs(v) >= 0.1 else f"{v:.2g}%"


@dataclass(frozen=True)
class Design:
    pools: int
    runs_per_pool: int
    cost_s: float            # per cell: pools · (pool share + runs · run)
    expected: Expected
    fits: bool
    why: str = ""            # why it is listed ("recommended", "this sweep's design", ...)

    @property
    def label(self) -> str:
        return design_words(self.pools, self.runs_per_pool)


def design_words(pools: float, runs_per_pool: float) -> str:
    """'3 pools × 1 run', '2.96 pools × 1.5 runs'."""
    return (f"{pools:.3g} pool{'s' if pools != 1 else ''} × {runs_per_pool:.3g} "
            f"run{'s' if runs_per_pool != 1 else ''}")


@dataclass(frozen=True)
class Allocation:
    best: Design
    r_star: float | None     # Kalibera & Jones' continuous optimum (None: not defined here)
    wall_s: float
    basis: str               # what the recommendation rests on
    alternatives: tuple = field(default_factory=tuple)   # Design records


# -- the estimator --------------------------------------------------------------------------------------------

def _as_list(by) -> list:
    return [by] if isinstance(by, str) else list(by or [])


def _chi2(est: float, df: float, conf: float, method: str) -> Interval:
    a = 1 - conf
    if not (df > 0) or not np.isfinite(est):
        return Interval(est, math.nan, math.nan, df, method)
    return Interval(float(est), float(df * est / sps.chi2.ppf(1 - a / 2, df)),
                    float(df * est / sps.chi2.ppf(a / 2, df)), float(df), method)


@lru_cache(maxsize=4096)
def _cell_information(sizes: tuple, sb: float, sw: float) -> np.ndarray:
    """½·tr(P V_i P V_j) for one cell (a mean of its own, groups of `sizes`), V_b = ZZ', V_w = I."""
    z = np.repeat(np.eye(len(sizes)), sizes, axis=0)
    zz = z @ z.T
    vi = np.linalg.inv(sb * zz + sw * np.eye(len(zz)))
    v1 = vi.sum(axis=1)
    p = vi - np.outer(v1, v1) / v1.sum()
    a = (p @ zz, p)
    return np.array([[0.5 * np.sum(a[i] * a[j].T) for j in range(2)] for i in range(2)])


def reml_covariance(sizes_by_cell, sb: float, sw: float) -> np.ndarray:
    """Asymptotic covariance of (sigma2_b, sigma2_w) under REML: the inverse expected information of the
    one-way model with a fixed mean per cell and groups (pools) nested in cells, at (sb, sw).

    `sizes_by_cell` holds, per cell, the run counts of its pools. With groups nested in cells the
    fixed-effect projection is block diagonal by cell, so the information is a sum over cells.
    """
    info = np.zeros((2, 2))
    sb = max(float(sb), 0.0)
    for sizes, k in pd.Series([tuple(int(n) for n in s) for s in sizes_by_cell]).value_counts().items():
        info += k * _cell_information(sizes, sb, float(sw))
    det = info[0, 0] * info[1, 1] - info[0, 1] ** 2       # 2 × 2 by hand: pinv would cut the small entry
    return np.array([[info[1, 1], -info[0, 1]], [-info[0, 1], info[0, 0]]]) / det


class _Groups(NamedTuple):
    """A family's sufficient statistics for the REML likelihood: per group its size, mean and cell;
    the pooled within-group sum of squares."""
    n: np.ndarray
    mean: np.ndarray
    cell: np.ndarray
    ssw: float
    cells: int

    @classmethod
    def of(cls, y: pd.Series, cells: pd.Series, groups: pd.Series) -> _Groups:
        g = y.groupby(groups)
        ssw = float(((y - g.transform("mean")) ** 2).sum())
        cell = pd.factorize(cells.groupby(groups).first())[0]
        return cls(g.size().to_numpy(float), g.mean().to_numpy(), cell, ssw, int(cell.max() + 1))


def reml_loglik(sb: float, sw: float, s: _Groups) -> float:
    """The REML log-likelihood (up to a constant) of the one-way model with a mean per cell, groups nested in
    cells: −½ [log|V| + log|X'V⁻¹X| + r'V⁻¹r], in closed form per group (V_g = sw·I + sb·J)."""
    den = sw + s.n * sb
    w = s.n / den
    a = np.bincount(s.cell, w, s.cells)
    beta = np.bincount(s.cell, w * s.mean, s.cells) / a
    quad = s.ssw / sw + float((w * (s.mean - beta[s.cell]) ** 2).sum())
    logdet = float(((s.n - 1) * math.log(sw)).sum() + np.log(den).sum())
    return -0.5 * (logdet + float(np.log(a).sum()) + quad)


def _profile(sb: float, s: _Groups, sw0: float) -> float:
    """max over sigma2_w of the REML log-likelihood at sigma2_b = sb."""
    res = optimize.minimize_scalar(lambda t: -reml_loglik(sb, math.exp(t), s), method="bounded",
                                   bounds=(math.log(sw0) - 4, math.log(sw0) + 4), options={"xatol": 1e-5})
    return -float(res.fun)


def profile_between(sb: float, sw: float, s: _Groups, conf: float = 0.95) -> tuple[float, float]:
    """The profile-likelihood interval of sigma2_b: where 2·(l_max − l_p(sigma2_b)) <= chi2_1(conf), l_p
    maximised over sigma2_w. The lower limit is 0 where sigma2_b = 0 is inside (it is at the boundary)."""
    crit = sps.chi2.ppf(conf, 1) / 2
    top = max(_profile(sb, s, sw), _profile(0.0, s, sw))

    def gap(x):
        return top - _profile(x, s, sw) - crit
    low = 0.0 if sb <= 0 or gap(0.0) <= 0 else optimize.brentq(gap, 0.0, sb, rtol=1e-6)
    high = max(2 * sb, 0.02 * sw)
    for _ in range(60):
        if gap(high) > 0:
            return low, optimize.brentq(gap, max(sb, high / 2), high, rtol=1e-6)
        high *= 2
    return low, math.inf                 # a likelihood this flat bounds nothing


def _reml(y: np.ndarray, cells: pd.Series, groups: pd.Series) -> tuple[float, float, bool]:
    """(sigma2_b, sigma2_w, converged) by REML: statsmodels MixedLM, a fixed mean per cell, a random
    intercept per group."""
    from statsmodels.regression.mixed_linear_model import MixedLM
    x = pd.get_dummies(cells.astype(str), dtype=float).to_numpy()
    model = MixedLM(y, x, groups=groups.to_numpy(), exog_re=np.ones((len(y), 1)))
    with warnings.catch_warnings():      # the boundary (sigma2_b = 0) warns; it is handled below
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True)
    return max(float(np.asarray(fit.cov_re)[0, 0]), 0.0), float(fit.scale), bool(fit.converged)


def _residual_variance(y: pd.Series, by: pd.Series, conf: float) -> Interval:
    """The variance around each `by` level's mean with its exact chi-square interval (df = N − levels)."""
    dev = y - y.groupby(by).transform("mean")
    df = len(y) - by.nunique()
    return _chi2(float((dev ** 2).sum() / df) if df > 0 else math.nan, df, conf, "chi-square (exact)")


def _split(y, cells, groups, conf) -> tuple:
    """(between, within, total, method, reason) when both are identifiable; the total alone, with the
    reason, where REML fails (runs identical to the last digit on every pool, a singular fit)."""
    try:
        return _split_fit(y, cells, groups, conf)
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError) as exc:
        return None, None, _residual_variance(y, cells, conf), "residual variance", f"REML failed ({exc})"


def _split_fit(y, cells, groups, conf) -> tuple:
    sb, sw, converged = _reml(y.to_numpy(float), cells, groups)
    if not (sw > 0 and math.isfinite(sb)):
        raise ValueError(f"no run-to-run variance (sigma2_w = {sw:g})")
    stats = _Groups.of(y, cells, groups)
    sb, sw, refined = _refine(sb, sw, stats, _residual_variance(y, cells, conf).estimate)
    sizes = groups.groupby(cells).apply(lambda g: tuple(g.value_counts(sort=False).to_numpy()))
    cov = reml_covariance(list(sizes), sb, sw)
    within = _chi2(sw, 2 * sw ** 2 / cov[1, 1], conf, "Satterthwaite")
    tot, var_tot = sb + sw, cov[0, 0] + cov[1, 1] + 2 * cov[0, 1]
    total = _chi2(tot, 2 * tot ** 2 / var_tot, conf, "Satterthwaite")
    low, high = profile_between(sb, sw, stats, conf)
    between = Interval(float(sb), float(low), float(high), float(2 * sb ** 2 / cov[0, 0]) if cov[0, 0] > 0 else 0.0,
                       "profile likelihood")
    return between, within, total, "REML" + (" (refined)" if refined else "") + ("" if converged else
                                                                                 " (not converged)"), ""


def _refine(sb: float, sw: float, s: _Groups, resid: float) -> tuple[float, float, bool]:
    """statsmodels' REML estimate checked on the closed-form likelihood: put at sigma2_b = 0 where that is
    no worse (statsmodels stops short of the boundary; there REML's sigma2_w is `resid`, the residual
    variance around the cell means), else moved to the profile's maximum near it where that is higher
    (a fit with sigma2_w many orders below sigma2_b is off). (sb, sw, moved)."""
    here = reml_loglik(sb, sw, s) if sb > 0 else -math.inf
    if _profile(0.0, s, sw if sb > 0 else resid) >= here:
        return 0.0, resid, sb > 0
    res = optimize.minimize_scalar(lambda t: -_profile(math.exp(t), s, sw), method="bounded",
                                   bounds=(math.log(sb) - 3, math.log(sb) + 3), options={"xatol": 1e-6})
    if -res.fun <= here + 1e-6:
        return sb, sw, False
    best = math.exp(res.x)
    inner = optimize.minimize_scalar(lambda t: -reml_loglik(best, math.exp(t), s), method="bounded",
                                     bounds=(math.log(sw) - 4, math.log(sw) + 4), options={"xatol": 1e-6})
    return best, math.exp(inner.x), True


def _components_of(rows: pd.DataFrame, metric: str, family: tuple, cell_cols: list, conf: float) -> Components:
    """One family's components: rows carry the metric, the cell columns and `_group`."""
    pos = rows[metric] > 0
    d, dropped = rows[pos], int((~pos).sum())
    y = np.log(d[metric].astype(float))
    cells = d[cell_cols].astype(str).agg("|".join, axis=1) if cell_cols else pd.Series("all", index=d.index)
    groups = cells + "#" + d["_group"]
    n_cells, n_groups, n = cells.nunique(), groups.nunique(), len(d)
    shape = dict(family=family, metric=metric, n_cells=n_cells, n_pools=n_groups, n_runs=n,
                 pools_per_cell=n_groups / n_cells if n_cells else math.nan,
                 runs_per_pool=n / n_groups if n_groups else math.nan, conf=conf, dropped=dropped,
                 distinct_pools=d["_group"].nunique())
    within_ok, between_ok = n > n_groups, n_groups > n_cells
    if within_ok and between_ok:
        b, w, t, method, reason = _split(y, cells, groups, conf)
        return Components(**shape, between=b, within=w, total=t, between_estimable=b is not None,
                          within_estimable=w is not None, reason=reason, method=method)
    if between_ok:            # one run per pool: each observation carries both
        return Components(**shape, between=None, within=None, total=_residual_variance(y, cells, conf),
                          between_estimable=False, within_estimable=False, reason=ONE_RUN,
                          method="residual variance")
    if within_ok:             # one pool per cell: runs differ by the run-to-run noise only
        return Components(**shape, between=None, within=_residual_variance(y, groups, conf), total=None,
                          between_estimable=False, within_estimable=True, reason=ONE_POOL,
                          method="residual variance")
    return Components(**shape, between=None, within=None, total=None, between_estimable=False,
                      within_estimable=False, reason=NO_REPLICATION, method="none")


def fit_components(df: pd.DataFrame, metric: str = "iops", by=FAMILY, cells=None, conf: float = 0.95,
                   admissible: bool = True) -> list[Components]:
    """Per family (`by`), the variance components of log(`metric`) (see the module's docstring).

    The cells of a family are told apart by `cells` (default: the configuration columns that vary,
    `sweep_data.varying_columns`, minus `by`); a pool replicate of a cell is a group (`pool_id`, else
    `pool_replicate`). With `admissible` (the default) the rows are those a primary estimate uses
    (`flags.select_admissible`: no invalidating flag raised, no replacement run). Rows with no
    positive value of the metric are left out (no log; counted in `dropped`).
    """
    by = _as_list(by)
    missing = [c for c in by + [metric] if c not in df.columns]
    if missing:
        raise ConfigError(f"variance components: no column {missing} in the results")
    d = select_admissible(df) if admissible else df.copy()
    d = d.dropna(subset=[metric])
    cell_cols = _as_list(cells) if cells is not None else varying_columns(d, exclude=by)
    cell_cols = [c for c in cell_cols if c not in by and c != "sweep_id" and c in d.columns]
    pools = pool_frame(d)
    d = d.assign(_group=pools["pool_id"] + "/" + pools["pool_replicate"].astype(str))
    out = []
    for key, rows in (d.groupby(by, sort=True, dropna=False) if by else [((), d)]):
        key = key if isinstance(key, tuple) else (key,)
        out.append(_components_of(rows, metric, tuple(zip(by, key)), cell_cols, conf))
    return out


def components_frame(components: list[Components]) -> pd.DataFrame:
    """The DataFrame form: a row per family (`Components.to_record`)."""
    return pd.DataFrame([c.to_record() for c in components])


def estimate_components(df: pd.DataFrame, metric: str = "iops", by=FAMILY, cells=None,
                        conf: float = 0.95) -> pd.DataFrame:
    """`fit_components` as a DataFrame: per family, `between`, `within`, `total` (log-scale variances,
    i.e. squared CoVs) with `_low`, `_high`, `_df`, `_method`; `between_estimable`, `within_estimable`
    and `reason`; n_cells, n_pools, n_runs, pools_per_cell, runs_per_pool."""
    return components_frame(fit_components(df, metric, by, cells, conf))


# -- costs ---------------------------------------------------------------------------------------------------

_POOL_OPEN = {Event.POOL_CREATING, Event.RAW_DEVICES_CHECKING}
_POOL_MADE = {Event.POOL_CREATED, Event.RAW_DEVICES_CHECKED}
_POOL_DONE = {Event.POOL_TEARDOWN, Event.RAW_DEVICES_WIPED}


def _ts(e: dict) -> float | None:
    try:
        return pd.Timestamp(e["ts"]).timestamp()
    except (KeyError, ValueError, TypeError):
        return None


def _mean(values) -> float:
    values = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(values)) if values else math.nan


class _PoolTimes:
    """The pools of an events stream as they open and close, per host (a fleet interleaves hosts)."""

    def __init__(self):
        self.open: dict = {}          # host -> the open pool's record
        self.pools: list = []
        self.pending_teardown: dict = {}   # host -> (pool record, ts of its teardown event)

    def event(self, e: dict, name: str, ts: float) -> None:
        host = e.get("host")
        if host in self.pending_teardown:            # the destroy ends at the host's next event
            pool, t0 = self.pending_teardown.pop(host)
            if name != Event.RESUMED:                # (not at a resume: the session had stopped)
                pool["teardown"] = ts - t0
        if name in _POOL_OPEN:
            self.open[host] = {"id": e.get("pool_id"), "t0": ts, "create": None, "prefill": 0.0,
                               "teardown": None, "cells": set()}
        elif name in _POOL_MADE and host in self.open and self.open[host]["create"] is None:
            self.open[host]["create"] = ts - self.open[host]["t0"]
            self.pools.append(self.open[host])
        elif name == Event.PREFILLED and host in self.open:
            self.open[host]["prefill"] += float(e.get("prefill_s") or 0.0)
        elif name == Event.RUN_STARTED and host in self.open:
            self.open[host]["cells"].add(re.sub(r"-r\d+$", "", str(e.get("run_id", ""))))
        elif name in _POOL_DONE and host in self.open:
            self.pending_teardown[host] = (self.open.pop(host), ts)
        elif name == Event.RESUMED:                  # a crash: the open pools are gone without a teardown
            self.open.clear()


def costs_from_events(events) -> Costs:
    """Mean wall costs from a sweep's events (dicts as `sweep_data.read_events` gives them).

    A pool: `pool creating` → `pool created` (zpool create and its settings), plus the `prefill_s` of
    each `prefilled` target on it, plus `pool teardown` → the host's next event (the destroy). A run:
    `run started` → `run judged` of the same attempt (`run completed` where it was not judged).
    `cells_per_pool` counts the cells whose runs a pool held. Raw-disk sweeps count their devices'
    check and wipe as a pool's.
    """
    pools, starts, runs = _PoolTimes(), {}, {}
    adm = att = 0
    for e in events:
        name, ts = e.get("event"), _ts(e)
        if ts is None:
            continue
        pools.event(e, name, ts)
        key = (e.get("run_id"), e.get("attempt"))
        if name == Event.RUN_STARTED:
            starts[key] = ts
        elif name in (Event.RUN_COMPLETED, Event.RUN_JUDGED) and key in starts:
            runs[key] = ts - starts[key]          # judged, when there, comes after completed
        elif name in (Event.REPETITIONS_DONE, Event.REPETITIONS_GAVE_UP):
            adm, att = adm + int(e.get("admissible") or 0), att + int(e.get("attempts") or 0)
    made = pools.pools
    return Costs(create_s=_mean(p["create"] for p in made), prefill_s=_mean(p["prefill"] for p in made),
                 teardown_s=_mean(p["teardown"] for p in made), run_s=_mean(runs.values()),
                 cells_per_pool=_mean(len(p["cells"]) for p in made if p["cells"]) if made else math.nan,
                 n_pools=len(made), n_runs=len(runs), attempts_per_admissible=att / adm if adm else math.nan)


# -- the expected half-width and the allocation ------------------------------------------------------------

def _halfwidth(var: float, pools: int, conf: float) -> float:
    return math.sinh(sps.t.ppf((1 + conf) / 2, pools - 1) * math.sqrt(max(var, 0.0)))


def expected_rel_halfwidth(components: Components, pools: int, runs_per_pool: int, conf: float = 0.95) -> Expected:
    """The expected relative half-width of a cell's CI with `pools` pool replicates of `runs_per_pool` runs.

    On the log scale h = t_{P-1} · sqrt(sigma2_b/P + sigma2_w/(P·r)) (the pool means' variance over P,
    as `stats.summary` computes it at pool level); the relative half-width is sinh(h) (the interval
    is mean·exp(±h)). Only the total known: the bound t·sqrt(total/P), as if all of it were between
    pools (it holds for every r). Only sigma2_w known: a lower bound (sigma2_b taken as 0). One pool:
    no interval over pools exists ("unknown").
    """
    c, p, r = components, int(pools), max(int(runs_per_pool), 1)
    if p < 2:
        return Expected(None, "unknown", "one pool: no interval over pools (it is conditional on that pool)")
    if c.split:
        def var(b, w):
            return b / p + w / (p * r)
        return Expected(_halfwidth(var(c.between.estimate, c.within.estimate), p, conf), "estimate",
                        f"t({p - 1}) · sqrt(σ²b/{p} + σ²w/({p}·{r}))",
                        _halfwidth(var(c.between.high, c.within.high), p, conf))
    if c.total is not None:
        return Expected(_halfwidth(c.total.estimate / p, p, conf), "upper bound",
                        "a bound: the total variance read as all between pools (one run per pool measured)",
                        _halfwidth(c.total.high / p, p, conf))
    if c.within is not None:
        return Expected(_halfwidth(c.within.estimate / (p * r), p, conf), "lower bound",
                        "a lower bound: the pool-to-pool variance is unknown (one pool per cell measured)")
    return Expected(None, "unknown", c.reason)


def design_cost(costs: Costs, pools: int, runs_per_pool: int) -> float:
    """Wall seconds a cell's design costs: P · (the cell's share of a pool + r · a run)."""
    return pools * (costs.pool_per_cell_s + runs_per_pool * costs.run_s)


def _design(components, costs, p, r, wall_s, conf, why="") -> Design:
    cost = design_cost(costs, p, r)
    return Design(p, r, cost, expected_rel_halfwidth(components, p, r, conf), cost <= wall_s * (1 + 1e-9), why)


def _fitting(costs: Costs, wall_s: float, r: int) -> int:
    return int(wall_s // (costs.pool_per_cell_s + r * costs.run_s))


def best_design(components: Components, costs: Costs, wall_s: float, conf: float = 0.95,
                max_runs: int = 1000) -> Design | None:
    """The (P >= 2, r >= 1) within `wall_s` with the smallest expected half-width: for each r as many
    pools as fit (more pools never widen it), the best r kept. None when not even 2 pools × 1 run fit."""
    best = None
    for r in range(1, max_runs + 1):
        p = _fitting(costs, wall_s, r)
        if p < 2:
            break
        d = _design(components, costs, p, r, wall_s, conf)
        if d.expected.rel_halfwidth is None:
            return None
        if best is None or d.expected.rel_halfwidth < best.expected.rel_halfwidth - 1e-12:
            best = d
    return best


def r_star(components: Components, costs: Costs) -> float | None:
    """Kalibera & Jones' optimal runs per pool, sqrt((c_pool/c_run)·(sigma2_w/sigma2_b)), before rounding
    (inf where sigma2_b is 0; None unless both components are known)."""
    ratio = components.ratio
    if ratio is None or not costs.known:
        return None
    return math.inf if math.isinf(ratio) else math.sqrt(costs.pool_per_cell_s / costs.run_s * ratio)


def _basis(c: Components, rs: float | None) -> str:
    if c.split and rs is not None:
        zero = " (σ²b estimated at 0: runs are favoured; the between-pool upper limit is the safer guide)" \
            if c.between.estimate <= 0 else ""
        return f"Kalibera & Jones: r* = sqrt(c_pool/c_run · σ²w/σ²b) = {rs:.2f}{zero}"
    if c.total is not None:
        return ("the total variance read as all between pools: more runs on a pool cannot narrow that bound, "
                "so 1 run per pool and as many pools as fit")
    if c.within is not None:
        return ("the pool-to-pool variance is unknown: no design can be ranked; this design would estimate it "
                "(2 runs on each of as many pools as fit)")
    return c.reason


def allocate(components: Components, costs: Costs, wall_s: float, conf: float = 0.95,
             current: tuple[int, int] | None = None) -> Allocation:
    """The (P, r) that minimises the expected half-width within `wall_s` seconds per cell, and alternatives.

    r* = sqrt((c_pool/c_run)·(sigma2_w/sigma2_b)) (Kalibera & Jones 2013, c_pool a cell's share of a
    pool: `Costs.pool_per_cell_s`); the recommendation is the exact search over integer r >= 1 with as
    many pools as fit, P >= 2 (it contains r*'s rounding down and up, and takes t_{P-1} into account).
    Only the total known: one run per pool, as many pools as fit (the bound does not depend on r).
    Only sigma2_w known: 2 runs per pool (a design that would estimate sigma2_b). Alternatives: 3 × 1,
    1 × 5, 2 × 3, 3 × 2, 5 × 1, r* rounded, `current` (the sweep's own), and where sigma2_b has an
    upper limit the best design if it were that large.
    """
    if not costs.known:
        raise ConfigError("allocation: the sweep's events give no pool and run timings")
    rs = r_star(components, costs)
    if components.split or components.total is not None:
        best = best_design(components, costs, wall_s, conf)
    else:
        best = _design(components, costs, max(_fitting(costs, wall_s, 2), 2), 2, wall_s, conf)
    if best is None:
        best = _design(components, costs, 2, 1, wall_s, conf)
    alts = [(3, 1, ""), (1, 5, ""), (2, 3, ""), (3, 2, ""), (5, 1, "")]
    if current:
        alts.insert(0, (int(round(current[0])), max(int(round(current[1])), 1), "this sweep's design"))
    if rs is not None and math.isfinite(rs):
        for r in sorted({max(1, math.floor(rs)), max(1, math.ceil(rs))}):
            alts.append((max(_fitting(costs, wall_s, r), 2), r, "r* rounded"))
    designs = [_design(components, costs, p, r, wall_s, conf, why) for p, r, why in alts]
    if components.split and components.between.high > components.between.estimate:
        worst = _replace_between(components, components.between.high)
        alt = best_design(worst, costs, wall_s, conf)
        if alt is not None:
            designs.append(_design(components, costs, alt.pools, alt.runs_per_pool, wall_s, conf,
                                   "best if σ²b were at its upper limit"))
    seen, unique = {(best.pools, best.runs_per_pool)}, []
    for d in designs:
        if (d.pools, d.runs_per_pool) not in seen:
            seen.add((d.pools, d.runs_per_pool))
            unique.append(d)
    return Allocation(Design(best.pools, best.runs_per_pool, best.cost_s, best.expected, best.fits, "recommended"),
                      rs, float(wall_s), _basis(components, rs), tuple(unique))


def _replace_between(c: Components, value: float) -> Components:
    from dataclasses import replace
    return replace(c, between=Interval(value, c.between.low, c.between.high, c.between.df, c.between.method))


# -- the shipped table, for the planner's dry run ------------------------------------------------------------

_KINDS = {"randread": "randread", "randwrite": "randwrite", "seqread": "seqread", "seqwrite": "seqwrite",
          "read": "seqread", "write": "seqwrite", "random read": "randread", "random write": "randwrite",
          "sequential read": "seqread", "sequential write": "seqwrite"}


def kind_of(rw: str, direction: str) -> str:
    """'randread', 'randwrite', 'seqread' or 'seqwrite' from fio's rw and the row's direction.

    >>> kind_of("randrw", "write"), kind_of("read", "read")
    ('randwrite', 'seqread')
    """
    return ("rand" if str(rw).startswith("rand") else "seq") + str(direction)


def _kind_name(text: str) -> str:
    """A workload kind as the table names it: 'randread-4k' -> 'randread', 'write' -> 'seqwrite'.

    >>> [_kind_name(t) for t in ("randread-4k", "write", "Sequential Read", "randrw")]
    ['randread', 'seqwrite', 'seqread', 'randrw']
    """
    t = str(text).strip().lower()
    if t in _KINDS:
        return _KINDS[t]
    m = re.match(r"(rand|seq)?[-_ ]?(read|write)", t)
    return (m.group(1) or "seq") + m.group(2) if m else t


def _load_table(path: Path) -> list[dict]:
    try:
        return list(json.loads(Path(path).read_text(encoding="utf-8")).get("entries") or [])
    except (OSError, ValueError):
        return []


def _pick(entries: list[dict]) -> dict:
    """Split components first, then a total, then sigma2_w only; among equals the most runs."""
    def rank(e):
        return (bool(e["between_estimable"] and e["within_estimable"]), e.get("total") is not None, e["n_runs"])
    return max(entries, key=rank)


def expected_for_design(workload_kind: str, disk_model: str | None, pools: int, runs_per_pool: int,
                        metric: str = "iops", conf: float = 0.95, path=None) -> tuple[float | None, str]:
    """For the planner's dry run: the expected relative CI half-width (0.05 = ±5%) of a cell measured on
    `pools` pools × `runs_per_pool` runs, and a sentence saying where it comes from.

    `workload_kind` is 'randread', 'randwrite', 'seqread' or 'seqwrite' (fio's 'read'/'write' and
    'random read' are understood); `disk_model` the lab disk model's name as results carry it
    ('hdd', 'custom:iops=100,bw=12M'; None: any). The components come from data/examples/components.json
    (scripts/example_components.py). A value from a total-only example is an upper bound and the
    sentence says so; where only the run-to-run variance was measured, or nothing matches, the value is
    None and the sentence starts with "unknown:".

    >>> expected_for_design("randwrite", "no such model", 3, 2)
    (None, 'unknown: no shipped example measured this kind (randwrite on no such model)')
    """
    kind = _kind_name(workload_kind)
    entries = [e for e in _load_table(path or COMPONENTS_FILE) if e.get("workload_kind") == kind
               and e.get("metric") == metric
               and (disk_model is None or str(e.get("disk_model", "")).lower() == str(disk_model).lower())]
    if not entries:
        return None, f"{NO_MATCH} ({kind}{' on ' + disk_model if disk_model else ''})"
    e = _pick(entries)
    c = Components.from_record(e)
    x = expected_rel_halfwidth(c, pools, runs_per_pool, conf)
    what = f"{e.get('workload', kind)} {e.get('direction', '')}".strip()
    where = (f"data/examples/{e['example']} ({what} on {e['disk_model']}, "
             f"{design_words(c.pools_per_cell, c.runs_per_pool)} a cell)")
    design = design_words(pools, runs_per_pool)
    if x.kind == "estimate":
        return x.rel_halfwidth, (f"±{percent(x.rel_halfwidth)} expected for {design}, from the variance "
                                 f"components of {where}: between-pool CoV {percent(c.between.cov)}, "
                                 f"within-pool {percent(c.within.cov)}")
    if x.kind == "upper bound":
        return x.rel_halfwidth, (f"at most ±{percent(x.rel_halfwidth)} for {design} (an upper bound: {where} "
                                 f"measured one run per pool, so its total CoV {percent(c.total.cov)} is read "
                                 "as all between pools)")
    if x.kind == "lower bound":
        return None, (f"unknown: {where} measured one pool per cell, so only its run-to-run CoV "
                      f"{percent(c.within.cov)} is known; the half-width for {design} is at least "
                      f"±{percent(x.rel_halfwidth)}")
    return None, f"unknown: {where}: {x.note}"
