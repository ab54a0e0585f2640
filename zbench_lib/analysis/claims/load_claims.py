"""What a latency-vs-load curve says in words: every percentile with the load it was measured at.

A closed-loop percentile is a percentile at saturation, and says so; an open-loop one names its
offered IOPS and, where the load was a fraction of the cell's saturation, that fraction; a run
that did not sustain its offer says how much of it was achieved (methods §21).
"""

from __future__ import annotations

from zbench_lib.analysis.claims.wording import num
from zbench_lib.analysis.stats.load_curves import KNEE_FACTOR, LoadCurve, LoadPoint

ACHIEVED_BELOW = 0.95       # under this share of the offer achieved, a sentence says so


def at_load(p: LoadPoint) -> str:
    """'at 2,000 IOPS offered (50% of saturation)', or 'at saturation (closed loop, 3,950 IOPS)'."""
    if p.saturation:
        return f"at saturation (closed loop, {num(p.achieved_iops)} IOPS)"
    frac = f" ({_pct(p.load_fraction)} of saturation)" if p.load_fraction is not None else ""
    short = "" if p.load_achieved is None or p.load_achieved >= ACHIEVED_BELOW else \
        f"; only {_pct(p.load_achieved)} of it achieved, so this is the latency of a lower load"
    return f"at {num(p.offered_iops)} IOPS offered{frac}{short}"


def _pct(share: float) -> str:
    """A share as a whole percentage: '50%' (a load is stated, not estimated, to the percent)."""
    return f"{share * 100:.0f}%"


def point_sentence(p: LoadPoint, percentile: str = "p99") -> str:
    """'p99 4.1 ms at 2,000 IOPS offered (50% of saturation)'."""
    ns = {"p50": p.p50_ns, "p99": p.p99_ns, "p99.9": p.p99_9_ns}[percentile]
    return f"{percentile} {num(ns / 1e6)} ms {at_load(p)}"


def curve_sentence(c: LoadCurve) -> str:
    """A curve's p99 at its lowest load, at saturation and its knee, in one sentence."""
    what = ", ".join(f"{k} {v}" for k, v in c.config) or "this configuration"
    first, last = c.points[0], c.points[-1]
    rule = f"p99 over {num(KNEE_FACTOR)}x the lowest load's"
    knee = f"its knee ({rule}) is {point_sentence(c.knee)}" if c.knee is not None \
        else f"no load measured took {rule} (no knee)"
    return f"{what}, {c.direction}s: {point_sentence(first)}; {point_sentence(last)}; {knee}."
