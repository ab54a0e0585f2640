"""What a latency-vs-load curve says in words: every percentile with the load it was measured at.

A closed-loop percentile is a percentile at saturation, and says so ("closed loop, at saturation");
an open-loop one names its offered IOPS and, where the load was a fraction of the cell's saturation,
that fraction; a run that did not sustain its offer says how much of it was achieved. A percentile
is the cell's, from its runs' merged histograms, with its 95% interval, or "not judged" and why
(methods §18, §21); the knee is stated only where the intervals place it. Where the curve has its saturation
level, a load is also stated as a share of what those runs sustained, and a probe that misread it by more than
10% is said. `curve_line` is a curve on one line for the report's first screen: its p99 at each load in
order and its knee in a few words (`knee_short`), the intervals left to `curve_sentence`.
"""

from __future__ import annotations

import math

from zbench_lib.analysis.claims.wording import ci_text, num
from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.sweep_data import setting_text
from zbench_lib.analysis.stats.knee_location import KneeLoad
from zbench_lib.analysis.stats.load_curves import KNEE_FACTOR, PAST, UNDER, LoadCurve, LoadPoint, Tail

ACHIEVED_BELOW = 0.95       # under this share of the offer achieved, a sentence says so


def at_load(p: LoadPoint, curve: LoadCurve | None = None) -> str:
    """'at 2,000 IOPS offered (50% of saturation)', or 'closed loop, at saturation (3,950 IOPS)'; with its
    `curve`, the load also as a share of what the curve's saturation runs sustained (`sustained_text`)."""
    if p.saturation:
        return f"closed loop, at saturation ({_iops(p.achieved_iops)} IOPS)"
    frac = ""
    if p.load_fraction is not None:
        also = sustained_text(curve, p) if curve is not None else ""
        frac = f" ({_pct(p.load_fraction)} of saturation{' by the probe' if also else ''}{also})"
    short = "" if p.load_achieved is None or p.load_achieved >= ACHIEVED_BELOW else \
        f"; only {_pct(p.load_achieved)} of it achieved, so this is the latency of a lower load"
    return f"at {_iops(p.offered_iops)} IOPS offered{frac}{short}"


def probe_read(p: LoadPoint) -> float:
    """The probe's IOPS a fractional load was set from (its rows' probe_iops, else offer over fraction)."""
    return p.probe_iops if p.probe_iops is not None else p.offered_iops / p.load_fraction


def sustained_text(c: LoadCurve, p: LoadPoint) -> str:
    """', 26% by the closed-loop runs', or where the probe misread the saturation by more than
    PROBE_TOLERANCE: ', but 104% of the 952 IOPS the closed-loop runs sustained' (with '; the probe read 1,318'
    at the curve's first such load).
    Said, never used to drop a run: the load offered is what it was (methods §21)."""
    share = c.sustained_share(p)
    if share is None:
        return ""
    if not c.probe_off(p):
        return f", {_pct(share)} by the closed-loop runs"
    # a curve's fractional loads share its probe: its reading is said at the first load it misset, once
    first = next(q for q in c.points if c.probe_off(q)) is p
    return (f", but {_pct(share)} of the {_iops(c.sustained_iops)} IOPS the closed-loop runs sustained"
            + (f"; the probe read {_iops(probe_read(p))}" if first else ""))


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


def point_sentence(p: LoadPoint, percentile: str = "p99", curve: LoadCurve | None = None) -> str:
    """'p99 4.10 ms (95% CI 3.90–4.31 ms) at 2,000 IOPS offered (50% of saturation)' (`at_load` with `curve`)."""
    return tail_text(p.tail(percentile), percentile) + (", " if p.saturation else " ") + at_load(p, curve)


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


def _knee_at(k: KneeLoad, v: float) -> str:
    """A knee's load in words: '57% of saturation', '1,020 IOPS offered', 'beyond 90% of saturation'."""
    if math.isinf(v):
        return f"beyond {_knee_at(k, k.highest)}"
    return f"{_pct(v)} of saturation" if k.scale == "fraction" else f"{_iops(v)} IOPS offered"


def _knee_ends(k: KneeLoad) -> str:
    """'41–62%' (of saturation), '1,020–1,150 IOPS offered', or '41% of saturation to beyond 75% of saturation'."""
    if math.isinf(k.high):
        return f"{_knee_at(k, k.low)} to {_knee_at(k, k.high)}"
    if k.scale == "fraction":
        digits = 0 if f"{k.low:.2f}" != f"{k.high:.2f}" else 1     # ends that round alike get a decimal
        return f"{k.low * 100:.{digits}f}–{k.high * 100:.{digits}f}%"
    return f"{_iops(k.low)}–{_iops(k.high)} IOPS offered"


def knee_load_text(c: LoadCurve) -> str:
    """Where between the loads the p99 reaches KNEE_FACTOR x the lowest load's, with its bootstrap interval
    (`knee_location.knee_load`), or why that is not judged."""
    k = c.knee_load
    if k is None or not k.judged:
        return f"the knee's load not judged ({bare_reason(k.status) if k is not None else 'no curve data'})"
    bound = f"{KNEE_FACTOR:g}x the lowest load's"
    draws = f"{k.resamples:,} bootstrap resamples of the {k.units}"
    if math.isinf(k.load):
        if math.isinf(k.low):
            return f"the p99 does not reach {bound} by {_knee_at(k, k.highest)} (in every one of {draws})"
        return (f"the p99 does not reach {bound} by {_knee_at(k, k.highest)} (95% bootstrap interval from "
                f"{_knee_at(k, k.low)}; beyond it in {k.beyond:.0%} of {draws})")
    together = ", drawn together at every load" if k.together else ""
    ends = f"95% bootstrap interval {_knee_ends(k)}," if k.low != k.high else "the same in every one of"
    return (f"the p99 reaches {bound} at {_knee_at(k, k.load)} ({ends} {k.resamples:,} resamples of the "
            f"{k.units}{together}; read between the loads on a log-linear line)")


def curve_sentence(c: LoadCurve) -> str:
    """A curve's p99 at each load with its interval and load, then its knee and the knee's load, in one sentence."""
    what = ", ".join(setting_text(k, v) for k, v in c.config) or "this configuration"
    pts = "; ".join(point_sentence(p, curve=c) for p in c.points)
    return f"{what}, {c.direction}s: {pts}; {knee_text(c)}; {knee_load_text(c)}."


# -- the first screen: one short line per curve ------------------------------------------------------------------

def _short_load(p: LoadPoint) -> str:
    """'75%' (of saturation), '2,000 IOPS' (offered) or 'saturation': a load where the line already said which."""
    if p.saturation:
        return "saturation"
    return _pct(p.load_fraction) if p.load_fraction is not None else f"{_iops(p.offered_iops)} IOPS"


def _loads_text(open_loop: list[LoadPoint]) -> str:
    """'25/50/75/90% of saturation', '1,000/2,000 IOPS offered', or the loads' names one by one where mixed."""
    if all(p.load_fraction is not None for p in open_loop):
        return "/".join(f"{p.load_fraction * 100:.0f}" for p in open_loop) + "% of saturation"
    if all(p.load_fraction is None for p in open_loop):
        return "/".join(_iops(p.offered_iops) for p in open_loop) + " IOPS offered"
    return "/".join(load_name(p) for p in open_loop)


def _p99_ms(p: LoadPoint) -> str:
    return num(p.p99_ns / 1e6) if p.p99.judged else "not judged"


def _why_short(verdict: str) -> str:
    """A point's not-judged verdict in a few words; the numbers stay in the curve's sentence."""
    if "overlaps" in verdict:
        return f"its p99 interval straddles {KNEE_FACTOR:g}x the lowest load's"
    return bare_reason(verdict)


def knee_short(c: LoadCurve) -> str:
    """The knee in a few words: 'knee at 75%', 'no knee up to 90%', 'past the knee by 75% (50% not judged)',
    'knee not judged at 50%: why'. Never more than `knee_text` says: a knee is placed only where the
    intervals place it, and 'past the knee by X' bounds it (at X or below) where a load before X was not judged."""
    pts, verdicts = c.points, c.verdicts
    if len(pts) < 2:
        return "one load only: no knee to judge"
    if c.knee is not None:
        return f"knee at {_short_load(c.knee)}"
    stop = c.knee_not_judged
    if stop is None:
        return f"no knee up to {_short_load(pts[-1])}"
    why = bare_reason(verdicts[pts.index(stop)])
    if why.startswith("the lowest load's"):
        return f"knee not judged: {why}"
    before = pts[pts.index(stop) - 1]
    head = f"no knee up to {_short_load(before)}, " if pts.index(before) > 0 else ""
    past = next((p for p, v in zip(pts, verdicts) if v == PAST and pts.index(p) > pts.index(stop)), None)
    if past is not None:
        return f"{head}past the knee by {_short_load(past)} ({_short_load(stop)} not judged)"
    return f"{head}knee not judged at {_short_load(stop)}: {_why_short(verdicts[pts.index(stop)])}"


def _offer_notes(c: LoadCurve, open_loop: list[LoadPoint]) -> list[str]:
    """What the line's loads were not: offers the probe set too high or low (all of a curve's fractional loads
    share its probe, so said once, each load's share listed), and offers the runs did not sustain."""
    notes = []
    off = [p for p in open_loop if c.probe_off(p)]
    if off:
        shares = "/".join(f"{c.sustained_share(p) * 100:.0f}" for p in off)
        notes.append(f"offered {'/'.join(_iops(p.offered_iops) for p in off)} IOPS: {shares}% of what the "
                     f"closed-loop runs sustained ({_iops(c.sustained_iops)} IOPS); the probe read "
                     f"{_iops(probe_read(off[0]))}")
    short = [p for p in open_loop if p.load_achieved is not None and p.load_achieved < ACHIEVED_BELOW]
    notes += [f"at {_short_load(p)} only {_pct(p.load_achieved)} of the offer was achieved" for p in short]
    return notes


def curve_line(c: LoadCurve) -> str:
    """A curve on one line for the first screen: its p99 at each open-loop load in order, at saturation, and the
    knee; then what the loads were not (`_offer_notes`). 'p99 18.5 → 20.3 → 952 → 1,200 ms at 25/50/75/90% of
    saturation (8.09 ms closed loop, 952 IOPS); past the knee by 75% (50% not judged)'. The intervals and
    reasons are the curve's sentence's (`curve_sentence`)."""
    open_loop = [p for p in c.points if not p.saturation]
    sat = next((p for p in c.points if p.saturation), None)
    parts = []
    if open_loop:
        parts.append(f"p99 {' → '.join(_p99_ms(p) for p in open_loop)} ms at {_loads_text(open_loop)}")
    if sat is not None:
        closed = f"{_p99_ms(sat)} ms closed loop, {_iops(sat.achieved_iops)} IOPS"
        parts = [f"{parts[0]} ({closed})"] if parts else [f"p99 {closed}"]
    notes = _offer_notes(c, open_loop)
    return f"{parts[0]}; {knee_short(c)}." + "".join(f" {n[0].upper()}{n[1:]}." for n in notes)
