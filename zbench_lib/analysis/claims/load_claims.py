"""What a latency-vs-load curve says in words: every percentile with the load it was measured at.

A closed-loop percentile is a percentile at saturation, and says so ("closed loop, at saturation");
an open-loop one names its offered IOPS and, where the load was a fraction of the cell's saturation,
that fraction; a run that did not sustain its offer says how much of it was achieved. A percentile
is the cell's, from its runs' merged histograms, with its 95% interval, or "not judged" and why
(methods §18, §21); the knee is stated only where the intervals place it.
"""

from __future__ import annotations

import math

from zbench_lib.analysis.claims.wording import ci_text, num
from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.sweep_data import setting_text
from zbench_lib.analysis.stats.load_curves import KNEE_FACTOR, PAST, UNDER, LoadCurve, LoadPoint, Tail

ACHIEVED_BELOW = 0.95       # under this share of the offer achieved, a sentence says so


def at_load(p: LoadPoint) -> str:
    """'at 2,000 IOPS offered (50% of saturation)', or 'closed loop, at saturation (3,950 IOPS)'."""
    if p.saturation:
        return f"closed loop, at saturation ({_iops(p.achieved_iops)} IOPS)"
    frac = f" ({_pct(p.load_fraction)} of saturation)" if p.load_fraction is not None else ""
    short = "" if p.load_achieved is None or p.load_achieved >= ACHIEVED_BELOW else \
        f"; only {_pct(p.load_achieved)} of it achieved, so this is the latency of a lower load"
    return f"at {_iops(p.offered_iops)} IOPS offered{frac}{short}"


def load_name(p: LoadPoint) -> str:
    """A load in a few words: '50% of saturation', '2,000 IOPS offered', 'saturation (closed loop)'."""
    if p.saturation:
        return "saturation (closed loop)"
    return f"{_pct(p.load_fraction)} of saturation" if p.load_fraction is not None else \
        f"{_iops(p.offered_iops)} IOPS offered"


def _iops(v: float) -> str:
    """IOPS in whole numbers: '2,000', '50' (fio's rate is whole I/Os per second)."""
    return num(v) if v is None or v != v else f"{v:,.0f}"


def _pct(share: float) -> str:
    """A share as a whole percentage: '50%' (a load is stated, not estimated, to the percent)."""
    return f"{share * 100:.0f}%"


def tail_text(t: Tail, percentile: str) -> str:
    """'p99 4.10 ms (95% CI 3.90–4.31 ms)', 'p99 4.10 ms (no interval: 1 run with a histogram)' or
    'p99.9 not judged (3000 I/Os, a p99.9 needs 10000)'."""
    if not t.judged:
        return f"{percentile} not judged ({bare_reason(t.status)})"
    if t.has_interval and math.isinf(t.hi_ns):
        ci = f"95% CI from {num(t.lo_ns / 1e6)} ms, beyond fio's range"
    elif t.has_interval:
        ci = ci_text(t.lo_ns / 1e6, t.hi_ns / 1e6) + " ms"
    else:
        ci = t.interval or "no interval"
    return f"{percentile} {num(t.value_ns / 1e6)} ms ({ci})"


def point_sentence(p: LoadPoint, percentile: str = "p99") -> str:
    """'p99 4.10 ms (95% CI 3.90–4.31 ms) at 2,000 IOPS offered (50% of saturation)'."""
    return tail_text(p.tail(percentile), percentile) + (", " if p.saturation else " ") + at_load(p)


def knee_text(c: LoadCurve) -> str:
    """The knee in words: where it is, 'no knee up to X', or where it could not be judged and why."""
    rule = f"the first load whose p99 interval lies above {KNEE_FACTOR:g}x the lowest load's"
    pts, verdicts = c.points, c.verdicts
    if len(pts) < 2:
        return "one load only: no knee to judge"
    if c.knee is not None:
        return f"its knee ({rule}) is at {load_name(c.knee)}"
    under = [p for p, v in zip(pts[1:], verdicts[1:]) if v == UNDER]
    stop = c.knee_not_judged
    if stop is None:        # every point under the bound
        return f"no knee up to {load_name(pts[-1])} ({rule})"
    why = bare_reason(verdicts[pts.index(stop)])
    if why.startswith("the lowest load's"):
        return f"knee not judged: {why}"
    before = [p for p in under if pts.index(p) < pts.index(stop)]
    head = f"no knee up to {load_name(before[-1])}; " if before else ""
    past = next((p for p, v in zip(pts, verdicts) if v == PAST and pts.index(p) > pts.index(stop)), None)
    tail = f"; past the bound by {load_name(past)}" if past is not None else ""
    return f"{head}knee not judged at {load_name(stop)}: {why}{tail}"


def curve_sentence(c: LoadCurve) -> str:
    """A curve's p99 at each load with its interval and load, then its knee, in one sentence."""
    what = ", ".join(setting_text(k, v) for k, v in c.config) or "this configuration"
    pts = "; ".join(point_sentence(p) for p in c.points)
    return f"{what}, {c.direction}s: {pts}; {knee_text(c)}."
