"""The report's "Latency at a stated load" section: a sweep with the `load` factor (methods §21).

The latency-vs-load figure (`plots.plot_latency_vs_load`: each curve's p50 / p99 / p99.9 from the
merged histograms, the p99's interval, the knee ringed) and a sentence per curve
(`load_claims.curve_sentence`: the p99 at each load with its interval, offered IOPS and fraction,
saturation as "closed loop, at saturation", then the knee or why it is not judged). A sweep without
the factor has no section: `load_section` gives ('', None) and the page is as it was.

    load_section(adm, hist, caption)    (HTML, figure) of the section; ('', None) without the factor
    load_answers(adm, hist)             the first screen's answer lines of a sweep whose only study is the load
"""

from __future__ import annotations

import html

import pandas as pd

from zbench_lib.analysis.claims.load_claims import curve_sentence
from zbench_lib.analysis.figures.plot_base import add_caption
from zbench_lib.analysis.figures.plots import plot_latency_vs_load
from zbench_lib.analysis.stats.load_curves import KNEE_FACTOR, load_curves

METHOD = (f"Open loop: fio offers each load at a stated rate (Poisson arrivals), a fraction of the cell's saturation "
          f"IOPS from a closed-loop probe of its job; saturation is the closed-loop run. Each percentile is read from "
          f"the level's runs' merged fio histograms, with its 95% interval across the runs or pools (methods §18); "
          f"the knee is the first load whose p99 interval lies above {KNEE_FACTOR:g}x the lowest load's, not judged "
          f"where the intervals overlap that bound (methods §21).")


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


def load_answers(adm: pd.DataFrame, hist: pd.DataFrame | None) -> list[dict]:
    """A sentence per curve as the first screen's answer lines (`claims.answer` records: subject, text)."""
    if adm.empty or not has_load(adm):
        return []
    out = []
    for c in load_curves(adm, hist):
        sentence = curve_sentence(c)
        subject, _, text = sentence.partition(": ")
        out.append(dict(subject=f"{subject} (p99 latency)", text=text))
    return out
