"""Axis ranges and ticks that carry the finding (issue 52, item 4), for every report figure and its static redraw.

    log_ticks(lo, hi, unit)     tick values and labels of a log axis: 1, 2, 5, 10 ms ... as full numbers
    fit_span(points, log)       the range an axis needs for its estimates, a wide interval clipped (`Span`)
    fit_axes(fig, letters)      each y (or log x) axis of a plotly figure fitted: range, ticks, clipped marks

Why ticks of our own: plotly labels a log axis's minor ticks with bare digits ("2, 1000, 5, 2, 100") and the
static redraw labelled only decades (one label on a latency panel spanning 80-280 ms). Both now draw the ticks
`log_ticks` computes from the range, at least three where the axis spans more than a factor 3.

Why clip: one interval resting on two units (t with one degree of freedom, 12.7 standard errors wide) set
the axis, squashing every estimate into a strip at the bottom. An axis spans its estimates; intervals stretch
it only so far (REACH on an axis from zero, LOG_REACH on a log axis); an interval past that is cut at the
axis edge and marked there with an arrow in its series' colour (its hover says where it ends), and the
legend says once what the arrow means. A log axis is kept where it is natural (latencies, depth); turning an
IOPS axis to log to fit one interval would hide the differences the figure is there to show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import plotly.graph_objects as go

# The subdivisions of a decade, coarsest first: the coarsest that gives three ticks in the range is drawn.
LADDERS = ((1.0,), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0), (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0,
                                                                      7.0, 8.0, 9.0))
MIN_TICKS, MOST_TICKS = 3, 8
REACH = 1.5          # an axis from zero stretches for intervals up to 1.5x its largest estimate
LOG_REACH = 2.0      # a log axis, for intervals up to 2x beyond its smallest and largest estimates
PAD = 0.05           # room past the last point on a log axis (a share of its log span)
TOP_PAD = 0.08       # and above the top of an axis from zero: an "n=1" over the tallest bar or point stays inside
CLIPPED = "clipped"  # the meta of the arrows that mark a clipped interval
CLIPPED_NAME = "▲▼ interval extends beyond the axis"
CLIP_COLOR = "#666666"


def number_text(v: float) -> str:
    """A tick value as people write it: 0.15, 2, 1,500, never 1.5e+03."""
    return format(Decimal(f"{float(v):.12g}").normalize(), ",f")      # 0.07 * 1000 is 70.00000000000001


def tick_text(v: float, unit: str = "") -> str:
    """'500 µs', '20 ms', '2 s' for unit 'ms' (a latency axis reads in its own unit at each tick); a plain
    number otherwise, the unit in the axis title."""
    if unit != "ms":
        return number_text(v) + (f" {unit}" if unit else "")
    if v >= 1000:
        return f"{number_text(v / 1000)} s"
    return f"{number_text(v * 1000)} µs" if v < 1 else f"{number_text(v)} ms"


def _ladder_ticks(lo: float, hi: float, ladder: tuple[float, ...]) -> list[float]:
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    vals = (float(f"{m}e{k}") for k in decades for m in ladder)       # 1.5e2, not 1.5 * 10 ** 2 = 150.00000000000003
    return [v for v in vals if lo <= v <= hi]


def log_ticks(lo: float, hi: float, unit: str = "") -> tuple[list[float], list[str]]:
    """Tick values in [lo, hi] (data units, lo > 0) and their labels: the coarsest of LADDERS that gives
    MIN_TICKS, thinned to at most MOST_TICKS; on a span too narrow for any, its ends and middle."""
    lo, hi = sorted((float(lo), float(hi)))
    vals: list[float] = []
    for ladder in LADDERS:
        vals = _ladder_ticks(lo, hi, ladder)
        if len(vals) >= MIN_TICKS:
            break
    while len(vals) > MOST_TICKS:
        vals = vals[::2]
    if len(vals) < 2:                       # within one step of the finest ladder: its ends and middle, rounded
        vals = sorted({float(f"{v:.3g}") for v in np.geomspace(lo, hi, 3)})
    return vals, [tick_text(v, unit) for v in vals]


@dataclass(frozen=True)
class Points:
    """What one axis draws: each point's value and, where it has one, its interval's ends (NaN: none)."""
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Span:
    """An axis range in data units; `log` says whether plotly wants it as powers of ten."""
    lo: float
    hi: float
    log: bool

    def plotly(self) -> list[float]:
        return [math.log10(self.lo), math.log10(self.hi)] if self.log else [self.lo, self.hi]

    def inside(self, top: bool) -> float:
        """Where an arrow at the top (or bottom) edge sits: just inside, so the static redraw shows it whole."""
        if self.log:
            lo, hi = math.log10(self.lo), math.log10(self.hi)
            return 10 ** (hi - 0.02 * (hi - lo) if top else lo + 0.02 * (hi - lo))
        return self.hi - 0.02 * (self.hi - self.lo) if top else self.lo + 0.02 * (self.hi - self.lo)


def _finite(a: np.ndarray, positive: bool = False) -> np.ndarray:
    a = a[np.isfinite(a)]
    return a[a > 0] if positive else a


def fit_span(p: Points, log: bool) -> Span | None:
    """The range for `p`: every estimate, each interval as far as the reach allows, with room to spare; from
    zero on a linear axis (a bar or an IOPS level reads against zero). None where nothing is drawn."""
    est = _finite(p.value, positive=log)
    if not len(est):
        return None
    ends = np.concatenate([est, _finite(p.low, positive=log), _finite(p.high, positive=log)])
    if not log:
        top = float(est.max())
        hi = max(top, min(float(ends.max()), REACH * top))
        return Span(0.0, hi * (1 + TOP_PAD) or 1.0, False)
    lo = min(float(est.min()), max(float(ends.min()), float(est.min()) / LOG_REACH))
    hi = max(float(est.max()), min(float(ends.max()), float(est.max()) * LOG_REACH))
    pad = max((hi / lo) ** PAD, 1.08)
    return Span(lo / pad, hi * pad, True)


def _ref(trace, letter: str) -> str:
    """'y2' for a trace on yaxis2 ('y' for the first axis)."""
    return getattr(trace, f"{letter}axis", None) or letter


def _layout_name(ref: str) -> str:
    return f"{ref[0]}axis{ref[1:]}"


def _drawn(trace) -> bool:
    return trace.type in ("scatter", "bar") and trace.meta != CLIPPED


def _points(traces, letter: str) -> Points:
    vals, lows, highs = [], [], []
    for t in traces:
        v = np.asarray(t[letter] if t[letter] is not None else [], dtype=float)
        err = t[f"error_{letter}"]
        up = np.asarray(err.array, float) if err is not None and err.array is not None else np.full(len(v), np.nan)
        down = np.asarray(err.arrayminus, float) if err is not None and err.arrayminus is not None else up
        vals.append(v)
        lows.append(v - down if len(down) == len(v) else np.full(len(v), np.nan))
        highs.append(v + up if len(up) == len(v) else np.full(len(v), np.nan))
    return Points(*(np.concatenate(parts) if parts else np.array([]) for parts in (vals, lows, highs)))


def _spec(fig: go.Figure, ref: str):
    """The layout's axis of `ref`, None where the layout has none (a trace on an axis never laid out)."""
    try:
        return fig.layout[_layout_name(ref)]
    except KeyError:
        return None


def _groups(fig: go.Figure, letter: str) -> dict[str, list[str]]:
    """Axis refs ('y', 'y2' ...) by the axis they match: matched axes share one range, fitted as one."""
    refs = list(dict.fromkeys(_ref(t, letter) for t in fig.data if _drawn(t)))
    groups: dict[str, list[str]] = {}
    for ref in refs:
        spec = _spec(fig, ref)
        if spec is not None:
            groups.setdefault(spec.matches or ref, []).append(ref)
    return groups


def _color(trace) -> str:
    for attr in ("line", "marker"):
        c = getattr(getattr(trace, attr, None), "color", None)
        if isinstance(c, str):
            return c
    return CLIP_COLOR


def _arrows(fig: go.Figure, trace, letter: str, span: Span) -> bool:
    """Arrows at the edge where the trace's intervals run past `span`; True if any."""
    p = _points([trace], letter)
    other = "x" if letter == "y" else "y"
    at = np.asarray(trace[other] if trace[other] is not None else [], dtype=object)
    added = False
    for top, beyond in ((True, p.high > span.hi), (False, (p.low < span.lo) & span.log)):
        if not beyond.any():
            continue
        ends = p.high[beyond] if top else p.low[beyond]
        edge = [span.inside(top)] * int(beyond.sum())
        xy = {letter: edge, other: list(at[beyond])}
        fig.add_trace(go.Scatter(**xy, mode="markers", meta=CLIPPED, name=f"{trace.name or ''}: interval beyond",
                                 legendgroup=CLIPPED, showlegend=False, cliponaxis=False,
                                 marker=dict(symbol="triangle-up" if top else "triangle-down", size=9,
                                             color=_color(trace)),
                                 hovertext=[f"interval extends beyond the axis, to {v:,.4g}" for v in ends],
                                 hoverinfo="text", **{f"{o}axis": _ref(trace, o) for o in ("x", "y")}))
        added = True
    return added


def fit_axes(fig: go.Figure, letters: str = "y", units: dict[str, str] | None = None) -> go.Figure:
    """Fit each axis of `letters` ('y', 'xy'): its range from `fit_span` (log axes and axes from zero; other
    linear axes keep plotly's autorange, and a log x axis with its own ticks keeps them), `log_ticks` on
    every log axis (labelled in `units[letter]` where given: {'y': 'ms'}), arrows where an interval is clipped."""
    units = units or {}
    clipped = False
    for letter in letters:
        for refs in _groups(fig, letter).values():
            specs = [_spec(fig, r) for r in refs]
            log = specs[0].type == "log"
            if not log and (letter == "x" or specs[0].rangemode != "tozero"):
                continue
            if letter == "x" and specs[0].tickvals is not None:
                continue                     # the builder's own ticks: the depths measured (1, 2, 4 ... 64)
            traces = [t for t in fig.data if _drawn(t) and _ref(t, letter) in refs]
            span = fit_span(_points(traces, letter), log)
            if span is None:
                continue
            ticks = {}
            if log:
                vals, texts = log_ticks(span.lo, span.hi, units.get(letter, ""))
                ticks = dict(tickmode="array", tickvals=vals, ticktext=texts)
            for spec in specs:
                spec.update(range=span.plotly(), autorange=False, **ticks)
            for t in traces:
                clipped |= _arrows(fig, t, letter, span)
    if clipped:                             # the legend says once what an arrow means
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=CLIPPED_NAME, legendgroup=CLIPPED,
                                 meta=CLIPPED, marker=dict(symbol="triangle-up", size=9, color=CLIP_COLOR),
                                 hoverinfo="skip"))
    return fig
