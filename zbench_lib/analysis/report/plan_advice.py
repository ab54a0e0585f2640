"""`zbench plan-advice`: a sweep's variance components, its costs, and how many pools × runs to plan (§22).

`plan_advice` reads a sweep directory (its admissible runs and its events.jsonl) and returns typed
records; `render` says them in a few lines per family (a workload and a direction): the between-pool
and within-pool CoV with their intervals (or the one line saying why they cannot be split and what
design would split them), the costs of a pool and of a run, and the recommended design within the
budget with a few alternatives. The statistics are `stats/variance_components.py`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from zbench_lib.analysis.data.sweep_data import load_sweep, read_events
from zbench_lib.analysis.stats.variance_components import (FAMILY, SPLIT_HINT, Allocation, Components, Costs,
                                                           Expected, Interval, allocate, costs_from_events,
                                                           design_cost, design_words, expected_for_design,
                                                           expected_rel_halfwidth,
                                                           fit_components, percent)
from zbench_lib.core.errors import ConfigError


@dataclass(frozen=True)
class FamilyAdvice:
    components: Components
    current: tuple[int, int]             # this sweep's design: pools per cell, runs per pool (rounded)
    current_expected: Expected
    allocation: Allocation | None        # None: no costs in the events


@dataclass(frozen=True)
class PlanAdvice:
    sweep: str
    metric: str
    costs: Costs
    wall_s: float | None
    wall_source: str                     # "--wall" or "this sweep's own time per cell"
    families: tuple                      # FamilyAdvice records


def _current(c: Components) -> tuple[int, int]:
    return (max(int(round(c.pools_per_cell)), 1) if math.isfinite(c.pools_per_cell) else 1,
            max(int(round(c.runs_per_pool)), 1) if math.isfinite(c.runs_per_pool) else 1)


def plan_advice(sweep_dir, wall_min: float | None = None, metric: str = "iops", by=FAMILY,
                conf: float = 0.95) -> PlanAdvice:
    """The advice for a sweep directory: per family its components and an allocation within `wall_min`
    minutes per cell (default: what the sweep's own design cost a cell, at its measured costs)."""
    sweep = load_sweep(sweep_dir)
    if metric not in sweep.results.columns:
        raise ConfigError(f"plan-advice: no metric {metric!r} in {sweep.path}/results (try iops, bw_bytes_s)")
    if wall_min is not None and not wall_min > 0:
        raise ConfigError(f"plan-advice: --wall must be a positive number of minutes, not {wall_min}")
    comps = fit_components(sweep.results, metric, [c for c in by if c in sweep.results.columns], conf=conf)
    costs = costs_from_events(read_events(sweep.path))
    families, walls = [], []
    for c in comps:
        cur = _current(c)
        if costs.known:
            walls.append(design_cost(costs, *cur))
        families.append((c, cur))
    wall_s = wall_min * 60 if wall_min is not None else (max(walls) if walls else None)
    out = tuple(FamilyAdvice(c, cur, expected_rel_halfwidth(c, *cur, conf=conf),
                             allocate(c, costs, wall_s, conf, current=cur) if costs.known else None)
                for c, cur in families)
    return PlanAdvice(str(sweep.path), metric, costs, wall_s,
                      "--wall" if wall_min is not None else "this sweep's own time per cell", out)


# -- words --------------------------------------------------------------------------------------------------

def _n(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _minutes(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"


def _cov(iv: Interval) -> str:
    """'2.1% (95% CI 1.5-3.4%)' : the CoV a log-scale variance stands for, its limits as CoVs."""
    hi = "∞" if not math.isfinite(iv.high) else percent(math.sqrt(max(iv.high, 0.0)))
    lo = percent(math.sqrt(max(iv.low, 0.0))) if math.isfinite(iv.low) else "?"
    return f"{percent(iv.cov)} ({lo}–{hi})"


def _components_line(c: Components) -> str:
    if c.split:
        ratio = c.ratio
        r = "∞" if ratio is None or math.isinf(ratio) else f"{ratio:.2g}"
        return (f"  between pools CoV {_cov(c.between)}, within a pool (run to run) {_cov(c.within)}; "
                f"σ²w/σ²b {r}  [{c.method}]")
    if c.total is not None:
        return f"  total CoV {_cov(c.total)}  [{c.method}, df {c.total.df:g}]"
    if c.within is not None:
        return f"  within a pool (run to run) CoV {_cov(c.within)}  [{c.method}, df {c.within.df:g}]"
    return "  no variance is identifiable"


def _cannot_split(c: Components) -> str | None:
    if c.split:
        return None
    return f"  cannot split the variance ({_per_cell(c)}): {c.reason}; {SPLIT_HINT}"


def _per_cell(c: Components) -> str:
    """'3 pools × 1 run a cell' (means: '2.96 pools × 1.5 runs a cell')."""
    return f"{design_words(c.pools_per_cell, c.runs_per_pool)} a cell"


def _design_text(d, wall_s: float) -> str:
    over = "" if d.fits else ", over budget"
    why = f", {d.why}" if d.why and d.why != "recommended" else ""
    return f"{d.label} {d.expected.text()} ({_minutes(d.cost_s)}{over}{why})"


def _costs_line(k: Costs) -> str:
    if not k.known:
        return "costs: unknown (events.jsonl has no pool and run timings): no allocation"
    share = f" shared by {k.cells_per_pool:.2g} cells = {k.pool_per_cell_s:.1f} s a cell" \
        if math.isfinite(k.cells_per_pool) and k.cells_per_pool > 1 else ""
    att = f"; {k.attempts_per_admissible:.2f} attempts per admissible run here (replacements cost too)" \
        if math.isfinite(k.attempts_per_admissible) else ""
    return (f"costs (means of {_n(k.n_pools, 'pool')}, {_n(k.n_runs, 'run')}): a pool {k.pool_s:.1f} s (create "
            f"{k.create_s:.1f} + prefill {k.prefill_s:.1f} + teardown {k.teardown_s:.1f}){share}; a run "
            f"{k.run_s:.1f} s{att}")


def render(advice: PlanAdvice) -> str:
    """The advice as a few readable lines per family."""
    a = advice
    lines = [f"plan advice for {a.sweep} ({a.metric}; variance components of log {a.metric}, i.e. squared CoVs, "
             f"pooled over each family's cells; 95% intervals)", _costs_line(a.costs)]
    if a.wall_s is not None:
        lines.append(f"budget: {_minutes(a.wall_s)} per cell ({a.wall_source})")
    for f in a.families:
        c = f.components
        lines.append("")
        lines.append(f"{c.label}: {c.n_cells} cells, {c.n_runs} runs on {c.n_pools} pool replicates of cells "
                     f"({_n(c.distinct_pools, 'pool')} created), {_per_cell(c)}"
                     + (f"; {c.dropped} rows without a positive {c.metric} left out" if c.dropped else ""))
        line = _cannot_split(c)
        if line:
            lines.append(line)
        lines.append(_components_line(c))
        cur = f.current
        lines.append(f"  this sweep's design {cur[0]} × {cur[1]}: expected half-width {f.current_expected.text()}")
        if f.allocation is not None:
            al = f.allocation
            high = al.best.expected.rel_halfwidth_high
            worst = f", ±{percent(high)} at the components' upper limits" \
                if high is not None and al.best.expected.kind == "estimate" else ""
            lines.append(f"  recommended within {_minutes(al.wall_s)}: {_design_text(al.best, al.wall_s)}{worst}; "
                         f"basis: {al.basis}")
            lines.append("  alternatives: " + "; ".join(_design_text(d, al.wall_s) for d in al.alternatives))
    return "\n".join(lines)


def design_lines(plan) -> list[str]:
    """The dry run's expected interval (issue 45): per workload, the relative 95% CI half-width a cell of
    this design should get, from the shipped examples' variance components (the sentence names the one
    used), or "unknown" without one."""
    spec, r = plan.spec, plan.spec.repetitions
    model = (spec.lab or {}).get("model")
    model = model.get("name") if isinstance(model, dict) else model
    return [f"expected 95% CI of a cell, {w.name}: "
            + expected_for_design(w.template, model, r["pool_replicates"], r["pilot"], metric=w.kind.metric)[1]
            for w in spec.workloads]
