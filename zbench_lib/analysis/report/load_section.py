"""The report's "Latency at a stated load" section: a sweep with the `load` factor (methods §21).

The latency-vs-load figure (`plots.plot_latency_vs_load`: each curve's p50 / p99 / p99.9 from the
merged histograms, the p99's interval, the knee ringed) and a sentence per curve
(`load_claims.curve_sentence`: the p99 at each load with its interval, offered IOPS and fraction,
saturation as "closed loop, at saturation", then the knee or why it is not judged, and the knee's load
between the loads with its bootstrap interval). A sweep without
the factor has no section: `load_section` gives ('', None) and the page is as it was.

    load_section(adm, hist, caption)    (HTML, figure) of the section; ('', None) without the factor
    load_answers(adm, hist)             the first screen's answer: a short line per curve (`curve_line`)
    load_details(adm, hist)             a sentence per curve, the details behind those lines
"""

from __future__ import annotations

import html

import pandas as pd

from zbench_lib.analysis.claims.load_claims import curve_line, curve_sentence
from zbench_lib.analysis.data.sweep_data import setting_text
from zbench_lib.analysis.figures.plot_base import add_caption
from zbench_lib.analysis.figures.plots import plot_latency_vs_load
from zbench_lib.analysis.stats.load_curves import KNEE_FACTOR, LoadCurve, load_curves

METHOD = (f"Open loop: fio offers each load at a stated rate (Poisson arrivals), a fraction of the cell's saturation "
          f"IOPS from a closed-loop probe of its job; saturation is the closed-loop run. Each percentile is read from "
          f"the level's runs' merged fio histograms, with its 95% interval across the runs or pools (methods §18); "
          f"the knee is the first load whose p99 interval lies above {KNEE_FACTOR:g}x the lowest load's, not judged "
          f"where the intervals overlap that bound; the knee's load is where the p99 reaches that bound, read between "
          f"the loads on a log-linear line, with a 95% bootstrap interval over the units (methods §21).")


def has_load(df: pd.DataFrame) -> bool:
    """Whether the rows come from a sweep with the load factor."""
    return "load" in df.columns and bool(df["load"].notna().any())


def load_section(adm: pd.DataFrame, hist: pd.DataFrame | None, caption: str = "") -> tuple[str, object]:
    """(HTML, plotly figure) of the section over the admissible runs `adm` and the store's histograms
    `hist`; ('', None) where the sweep has no load factor."""
    if adm.empty or not has_load(adm):
        return "", None
    curves = load_curves(adm, hist)
    if not curves:
        return "", None
    fig = add_caption(plot_latency_vs_load(adm, hist), " ".join(t for t in (caption, METHOD) if t))
    lines = [curve_sentence(c) for c in curves]
    parts = [fig.to_html(full_html=False, include_plotlyjs=False, div_id="zbench-load",
                         config={"displaylogo": False, "responsive": True}),
             f'<p class="note">{html.escape(METHOD)}</p>',
             '<ul class="conclusions">' + "".join(f"<li>{html.escape(s)}</li>" for s in lines) + "</ul>"]
    return "\n".join(parts), fig


LINE_NOTE = (f"Each line: a curve's p99 at each offered load and at saturation (closed loop), from the runs' merged "
             f"fio histograms, then its knee, the first load whose p99 interval lies above {KNEE_FACTOR:g}x the "
             f"lowest load's (methods §21). Intervals and reasons: folded below, and in \"Latency at a stated "
             f"load\".")


def _subject(c: LoadCurve, curves: list[LoadCurve]) -> str:
    """'randwrite, 8K': a curve's configuration, with its direction only where the configuration has two
    (a mixed workload's reads and writes), as the line reads from its workload otherwise."""
    what = ", ".join(setting_text(k, v) for k, v in c.config) or "this configuration"
    both = sum(o.config == c.config for o in curves) > 1
    return f"{what}, {c.direction}s" if both else what


def load_answers(adm: pd.DataFrame, hist: pd.DataFrame | None) -> list[dict]:
    """A short line per curve as the first screen's answer (`claims.answer` records: subject, text):
    `load_claims.curve_line`, its p99 at each load in order and its knee."""
    if adm.empty or not has_load(adm):
        return []
    curves = load_curves(adm, hist)
    return [dict(subject=_subject(c, curves), text=curve_line(c)) for c in curves]


def load_details(adm: pd.DataFrame, hist: pd.DataFrame | None) -> list[dict]:
    """A sentence per curve (`curve_sentence`: each p99 with its interval and load, the knee and why), as
    answer records: the details behind the first screen's lines where the sweep's only study is the load."""
    if adm.empty or not has_load(adm):
        return []
    out = []
    for c in load_curves(adm, hist):
        subject, _, text = curve_sentence(c).partition(": ")
        out.append(dict(subject=f"{subject} (p99 latency)", text=text))
    return out
