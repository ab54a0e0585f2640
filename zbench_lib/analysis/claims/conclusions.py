"""Conclusions in words, each number taken from a table.

As docs/methods.md asks: ratio and 95% CI first, then p and the Holm-adjusted p with the
matching adjusted CI; "higher", "lower", "better" only when the Holm-adjusted test says
so (§3); "no meaningful difference" only when TOST says so (§4); a scaling verdict from the
same rule, Holm-adjusted within the page's scaling verdicts (§10). Every planned comparison
gets a sentence, judged or "not judged" with its reasons (§8); the describing flags its runs
keep are named beside it, and a sensitivity clause says whether the verdict changes with the
flagged runs included, with the replacement runs included, or without the runs that carry
describing flags (§7, §8).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from zbench_lib.analysis.data.flags import SENSITIVITY_KEYS
from zbench_lib.analysis.data.replication import ONE_POOL_NOTE, POOL_LEVEL_NOTE
from zbench_lib.analysis.claims.wording import ci_text, effect_size_ok, p_text, say_once
from zbench_lib.analysis.data.columns import CONFIG_COLUMNS, LAYOUT_COLUMNS
from zbench_lib.analysis.stats.decision import (EQUIVALENT, HIGHER, HIGHER_UNCLEAR, INCONCLUSIVE, LOWER, LOWER_UNCLEAR,
                                                NOT_JUDGED, WITHIN, level_text)
from zbench_lib.analysis.stats.linearity import ALPHA, LINEAR_BAND, judge_linearity
from zbench_lib.analysis.stats.ratio import equivalence_bounds
from zbench_lib.analysis.stats.tables import block_column
from zbench_lib.core.sizes import format_size

METRIC_LABELS = {"iops": "IOPS", "bw_bytes_s": "bandwidth", "lat_p99_ns": "p99 latency"}
# A comparison of p99 compares a typical unit's: say so, and what a unit short of I/Os does to it.
TAIL_NOTE = ("p99 latency is compared as a typical pool's p99 (methods §18): each pool's own p99 from its runs' "
             "merged fio bins (runs recorded before json+: its runs' own fio p99), the ratio of their geometric "
             "means with Welch's t on the logs, decided by the one rule (methods §3.1); a comparison with a pool "
             "whose I/Os cannot support a p99 is not judged and names it. All I/Os pooled, the other estimand, "
             "is in the tails table (`cell_tails(..., estimand=\"pooled\")`).")


def _ci(lo, hi, digits=2, level="95%") -> str:
    """The interval with enough decimals that its ends differ (`wording.ci_text`)."""
    return ci_text(lo, hi, digits, level)


def _adj_ci(r) -> str:
    """The Holm-adjusted CI of a comparison row, with its confidence level."""
    return "Holm-adjusted " + _ci(r["adj_ci_low"], r["adj_ci_high"], level=f"{1 - r['holm_alpha']:.1%}")


def _p(p, r=None) -> str:
    """A p-value printed to what the design supports (`wording.p_text`): `r` gives the units a side."""
    n = (int(r["n_level"]), int(r["n_baseline"])) if r is not None and "n_level" in r else (None, None)
    return p_text(p, *n)


def _hedges(r) -> str:
    """Hedges' g, only where the spread is large enough for a standardised effect to mean anything."""
    g = r.get("hedges_g", np.nan)
    if effect_size_ok(g, r.get("mean_level", np.nan), r.get("mean_baseline", np.nan)):
        return f", Hedges g {g:.2f}"
    return ", Hedges g not reported (spread below 1% of the mean)" if np.isfinite(g) else ""


def _value(v, metric) -> str:
    """A mean in the metric's unit: IOPS, MiB/s for bandwidth, ms for latencies."""
    if not np.isfinite(v):
        return "n/a"
    if metric.startswith("bw"):
        return f"{v / 2 ** 20:.1f} MiB/s"
    if metric.endswith("_ns"):
        return f"{v / 1e6:.2f} ms"
    return f"{v:.0f} {METRIC_LABELS.get(metric, metric)}"


def _metric(r, default: str) -> str:
    m = r.get("metric", default) if hasattr(r, "get") else default
    return m if isinstance(m, str) and m else default


def _group_label(r, cols) -> str:
    return " ".join(f"{c[:-6]} {format_size(int(r[c]))}" if c.endswith("_bytes") and pd.notna(r[c])
                    else str(r[c]) if c in ("workload", "direction", "layout", "sweep_id")
                    else f"{c} {r[c]}" for c in cols)


def _who(r, cols) -> str:
    """'label: ' for a sentence about one group, '' when there is no group."""
    label = _group_label(r, cols)
    return f"{label}: " if label else ""


def _unit_note(df: pd.DataFrame) -> list[str]:
    units = set(df["unit"].dropna()) if "unit" in df else set()
    out = []
    if "run" in units or not units:
        out.append(ONE_POOL_NOTE[0].upper() + ONE_POOL_NOTE[1:] + ".")
    if "pool" in units:
        out.append(POOL_LEVEL_NOTE[0].upper() + POOL_LEVEL_NOTE[1:] + ".")
    return out


def _sensitivity(r) -> str:
    s = r.get("sensitivity", "")
    return f" Sensitivity: {s}." if isinstance(s, str) and s else ""


def _described(r) -> str:
    """The describing flags the estimate's runs carry: they are kept, and said beside the estimate."""
    d = r.get("described", "")
    return f" Runs kept with describing flags: {d}." if isinstance(d, str) and d else ""


def _alternatives(r) -> list[str]:
    """The sensitivity alternatives that change a run of this row: their keys, in order."""
    return [k for k in SENSITIVITY_KEYS if isinstance(r.get(f"sensitivity_{k}_label"), str)
            and r.get(f"sensitivity_{k}_label")]


def efficiency_verdict(verdict: str, high: float = math.nan, band: float = LINEAR_BAND) -> str:
    """The scaling verdict in words, from the one decision rule's verdict on ln E with margin `band`
    (`linearity.judge_linearity`, methods §10) and the top of the interval that decided it (`high`:
    "far below" when even that is below half of linear).

    Examples
    --------
    >>> efficiency_verdict("inconclusive")
    'too uncertain to call: the interval includes linear but reaches outside 0.91–1.10'
    >>> efficiency_verdict("different, within margin"), efficiency_verdict("lower", 0.31)
    ('close to linear (the whole interval lies within 0.91–1.10)', 'far below linear')
    """
    lo_b, hi_b = equivalence_bounds(band)
    band_text = f"{lo_b:.2f}–{hi_b:.2f}"
    close = f"close to linear (the whole interval lies within {band_text})"
    words = {HIGHER: "above linear: check for cache effects",
             HIGHER_UNCLEAR: "above linear, margin unclear: check for cache effects",
             LOWER: "far below linear" if high < 0.5 else "below linear",
             LOWER_UNCLEAR: "below linear, margin unclear", WITHIN: close, EQUIVALENT: close,
             INCONCLUSIVE: f"too uncertain to call: the interval includes linear but reaches outside {band_text}"}
    return words.get(verdict, "not judged: no CI (a single admissible run at one end)")


def _at(r, column: str, key: str = ""):
    """A scaling row's `column`, or the one its sensitivity alternative `key` recomputed."""
    return r.get(f"sensitivity_{key}_{column}" if key else column, np.nan)


def _judged(r, key: str = "") -> bool:
    """Whether the row (or its alternative `key`) states a verdict (`linearity.judge_linearity`)."""
    v = _at(r, "verdict", key)
    return isinstance(v, str) and v != NOT_JUDGED


def _efficiency_words(r, band, key: str = "") -> str:
    """The verdict of a judged scaling row (or of its sensitivity alternative `key`) in words."""
    return efficiency_verdict(_at(r, "verdict", key), _at(r, "decided_high", key), band)


def _decided_efficiency(r, key: str = "") -> str:
    """'Holm-adjusted 99.8% CI 0.90–0.96': the interval that decided a scaling verdict, with its level; the
    page's own verdicts without it ('0.90–0.96'), their one level said once (`_family_note`)."""
    lo, hi = _at(r, "decided_low", key), _at(r, "decided_high", key)
    if not key:
        return ci_text(lo, hi, 2, level="")
    return _ci(lo, hi, level=level_text(_at(r, "decided_level", key), int(r.get("family_size", 1) or 1)))


def _scaling_sensitivity(r, band) -> str:
    """Does the verdict at this configuration change with another selection of runs?"""
    parts = [_scaling_alternative(r, k, band) for k in _alternatives(r)]
    return f" Sensitivity: {'; '.join(parts)}." if parts else ""


def _scaling_alternative(r, key: str, band) -> str:
    """One alternative selection of runs: its baseline, or its efficiency and the verdict its family gives it."""
    what, col = r[f"sensitivity_{key}_label"], lambda c: r.get(f"sensitivity_{key}_{c}", np.nan)  # noqa: E731
    if col("baseline_disks") != r.get("baseline_disks"):
        d0 = col("baseline_disks")
        return f"with {what}, the baseline would be {int(d0)} data disks" if np.isfinite(d0) \
            else f"with {what}, no baseline"
    if _judged(r, key) and _efficiency_words(r, band, key) == _efficiency_words(r, band) and r["n"] >= 2:
        return f"unchanged with {what}"
    lo, hi = col("efficiency_ci_low"), col("efficiency_ci_high")
    if _judged(r, key):
        return f"with {what}, efficiency {col('efficiency'):.2f} ({_decided_efficiency(r, key)}): " \
               + _efficiency_words(r, band, key)
    ci = f" ({_ci(lo, hi)})" if np.isfinite(lo) and np.isfinite(hi) else ""
    return f"with {what}, efficiency {col('efficiency'):.2f}{ci}" + ("" if ci else ": not judged: no CI")


def _few_sentence(r, fam, by, band) -> str:
    """A configuration with fewer than 2 admissible units: its status, and what other runs would give."""
    status = r.get("status") if isinstance(r.get("status"), str) else \
        f"not judged: {int(r['n'])} admissible {r.get('unit', 'run')} (a CI needs 2)"
    return (f"{r[fam]} {_group_label(r, by)} at {int(r['data_disks'])} data disks: {status}." + _described(r)
            + (_scaling_sensitivity(r, band) if r["data_disks"] != r.get("baseline_disks") else ""))


def _stated_sentence(r, who, metric, band) -> str:
    """A family's verdict at its largest judged pool: the scaling, the efficiency with its 95% CI and the
    interval that decided the verdict (its Holm level), the verdict, or no verdict across two regimes."""
    m = _metric(r, metric)
    e, lo, hi = r["efficiency"], r["efficiency_ci_low"], r["efficiency_ci_high"]
    deciding = f"; deciding: {_decided_efficiency(r)}" if _judged(r) else ""
    interval = f" ({_ci(lo, hi)}{deciding})" if np.isfinite(lo) and np.isfinite(hi) else ""
    verdict = f"across two regimes, no verdict ({r['regime']})" if r["regime"] else \
        _efficiency_words(r, band)
    text = (f"{who}: {METRIC_LABELS.get(m, m)} grows {r['scaling']:.2f}x from {int(r['baseline_disks'])} to "
            f"{int(r['data_disks'])} data disks (ideal {r['ideal_scaling']:.2f}x), efficiency {e:.2f}{interval}"
            f": {verdict}." + _described(r) + _scaling_sensitivity(r, band))
    if np.isfinite(r.get("disk_equivalents_per_vdev", np.nan)):
        per = " per vdev" if r.get("vdevs", 1) > 1 or r["layout"].startswith("raidz") else ""
        text += (f" At {int(r['data_disks'])} data disks it delivers the {METRIC_LABELS.get(m, m)} of "
                 f"{r['disk_equivalents_per_vdev']:.1f} single disks (of the disk model){per}.")
    return text


def _family_note(s: pd.DataFrame) -> list[str]:
    """The sentence that states the scaling verdicts' family and their one level, once per page (methods §10)."""
    n = int(s["family_size"].max()) if "family_size" in s and len(s) else 0
    levels = s["decided_level"].dropna().unique() if "decided_level" in s else []
    if not len(levels):
        return []
    if n < 2:
        return [f"Each scaling verdict is decided by its efficiency's {level_text(levels[0], 1)} interval, the one "
                "printed after \"deciding\" (methods §10, §3.1)."]
    return [f"The {n} scaling verdicts are one Holm family (family-wise {1 - ALPHA:.0%}): each is decided by its "
            f"efficiency's interval at the family's one level, {level_text(levels[0], n)}, the one printed after "
            "\"deciding\" (methods §10, §3.1)."]


def conclusions_scaling(scaling_df: pd.DataFrame, metric: str = "iops", band: float = LINEAR_BAND) -> list[str]:
    """One sentence per layout × group at its largest judged configuration, plus the not judged ones; the
    verdicts one Holm family (`linearity.judge_linearity`)."""
    s = judge_linearity(scaling_df, band) if len(scaling_df) else scaling_df
    by = [c for c in s.columns if c in CONFIG_COLUMNS and c not in LAYOUT_COLUMNS]
    out = []
    fam = "family" if "family" in s.columns else "layout"      # tables.scaling_family
    for _, g in s.groupby(by + [fam], sort=False, dropna=False):
        g = g.sort_values("data_disks")
        out += [_few_sentence(r, fam, by, band) for _, r in g[g["n"].fillna(0) < 2].iterrows()]
        stated = g[g["stated"]]
        if len(stated):
            r = stated.iloc[0]
            out.append(_stated_sentence(r, f"{r[fam]} {_group_label(r, by)}".strip(), metric, band))
        elif len(g) == 1:
            r = g.iloc[0]
            out.append(f"{r[fam]} {_group_label(r, by)}".strip()
                       + f": a single configuration ({int(r['data_disks'])} data disks), no scaling to report.")
    return out + (_family_note(s) + _unit_note(s) if len(s) else [])


def _verdict_text(r, base, alpha) -> str:
    """The verdict of the one decision rule (methods §3.1) in words."""
    m = r.get("margin", math.nan)
    within = f"±{m:.0%}" if np.isfinite(m) else "the margin"
    v = r["verdict"]
    if v in ("higher", "lower"):
        return (f"{v} than {base}, significant after Holm correction, the Holm-adjusted interval clearing the "
                f"{within} margin.")
    if v == "different, within margin":
        return (f"different from {base} after Holm correction, but by less than the {within} margin: the "
                f"Holm-adjusted interval excludes 1 and lies inside it.")
    if v.endswith("margin unclear"):
        return (f"{v.split(',')[0]} than {base} after Holm correction, but the Holm-adjusted interval reaches "
                f"across the {within} margin: a difference that matters is not shown.")
    if v == "equivalent":
        return (f"no meaningful difference (equivalent within {within}: the Holm-adjusted interval includes 1 "
                f"and lies inside the margin).")
    return (f"inconclusive: not significant after Holm correction, and equivalence within {within} at the same "
            f"Holm level is not shown.")


def _decided_ci(r, level: bool = True) -> str:
    """The interval that decided the row's verdict (`decision.decide`) with its level, or without it where the
    level is said once for the table (`_one_level`); else the adjusted CI."""
    if "decided_low" not in r or not np.isfinite(r.get("decided_low", np.nan)):
        return _adj_ci(r)
    if not level:
        return "deciding: " + ci_text(r["decided_low"], r["decided_high"], 2, level="")
    return "deciding: " + _ci(r["decided_low"], r["decided_high"], level=level_text(r["decided_level"], _n_family(r)))


def _n_family(r) -> int:
    return int(r["family_size"]) if np.isfinite(r.get("family_size", np.nan)) else 1


def _one_level(cmp: pd.DataFrame) -> str:
    """The sentence that says the deciding intervals' level once, where every judged row shares one (a table of
    one Holm family, `ratio.holm`); '' where the table holds several families' levels."""
    if "decided_level" not in cmp:
        return ""
    judged = cmp[cmp["decided_level"].notna()]
    pairs = {(round(float(r["decided_level"]), 6), _n_family(r)) for _, r in judged.iterrows()}
    if len(pairs) != 1:
        return ""
    (lvl, n), = pairs
    family = f", one level for the family of {n} (methods §3)" if n > 1 else " (methods §3.1)"
    return f"Every deciding interval above is at {level_text(lvl, n)}{family}."


def _not_judged(r, unit) -> str:
    note = r.get("note", "")
    if isinstance(note, str) and note:
        return say_once(note)
    return (f"not judged (n {int(r['n_level'])} vs {int(r['n_baseline'])} admissible {unit}s; "
            f"a CI needs at least 2 {unit}s a side)")


def _held_sentence(cmp: pd.DataFrame) -> str:
    """What every comparison holds equal; the stated load said apart, as the blocking factor it is (methods §21)."""
    comp = [c for c in (cmp["comparison"].dropna().unique() if "comparison" in cmp else [])
            if c != "all other factors equal"]
    text = "Each comparison holds every other varying factor equal" + (f", at {', '.join(comp)}." if comp else ".")
    if "load" in cmp and (cmp["factor"] != "load").all():
        text += (" The stated load is one of them: a level meets the baseline at the same load only (each row "
                 "names it), never in runs pooled across loads, whose latency and throughput differ by design.")
    return text


def conclusions_compare(cmp: pd.DataFrame, metric: str = "iops", alpha: float = 0.05) -> list[str]:
    """One sentence per comparison: ratio with its CI and adjusted CI, p and Holm p, a verdict."""
    if cmp is None or cmp.empty:
        return ["No comparison could be made: no group holds both the baseline and another level."]
    fixed = {"factor", "level", "baseline", "n_level", "n_baseline", "mean_level", "mean_baseline"}
    by = [c for c in cmp.columns if c in CONFIG_COLUMNS and c not in fixed]
    out, too_small, no_effect = [], 0, 0
    once = _one_level(cmp)
    for _, r in cmp.iterrows():
        lv, base = (format_size(int(r[k])) if str(r["factor"]).endswith("_bytes") else r[k]
                    for k in ("level", "baseline"))
        m, unit = _metric(r, metric), r.get("unit", "run") if isinstance(r.get("unit"), str) else "run"
        where = f" ({_group_label(r, by)})" if by else ""
        head = f"{r['factor']}={lv} vs {base}{where}: {METRIC_LABELS.get(m, m)}"
        if r["verdict"] == "not judged":
            ratio = f" ratio {r['ratio']:.2f} from n {int(r['n_level'])} vs {int(r['n_baseline'])}" \
                if np.isfinite(r.get("ratio", np.nan)) else ""
            out.append(f"{head}{ratio}: {_not_judged(r, unit)}.{_described(r)}{_sensitivity(r)}")
            continue
        text = (f"{head} ratio {r['ratio']:.2f} ({_ci(r['ratio_ci_low'], r['ratio_ci_high'])}; "
                f"{_decided_ci(r, not once)}), "
                f"p {_p(r['p'], r)}, Holm p {_p(r['holm_p'], r)}{_hedges(r)}, "
                f"means {_value(r['mean_level'], m)} vs {_value(r['mean_baseline'], m)}, "
                f"n {int(r['n_level'])} vs {int(r['n_baseline'])} {unit}s: ")
        too_small += bool(r.get("mannwhitney_note")) and str(r.get("mannwhitney_note")).startswith("too small")
        no_effect += bool(r.get("effect_size_note"))
        out.append(text + _verdict_text(r, base, alpha) + _described(r) + _sensitivity(r))
    if too_small:
        out.append(f"Mann–Whitney U is not reported for {too_small} comparison(s): at these run counts "
                   f"its smallest achievable p is not below {alpha}.")
    if no_effect:
        out.append(f"Hedges' g is not reported for {no_effect} comparison(s): a side has 3 units or fewer, too few "
                   "for the SD a standardised effect divides by (methods §5).")
    out += [once] if once else []
    out.append(_held_sentence(cmp))
    metrics = set(cmp["metric"].dropna()) if "metric" in cmp else {metric}
    return out + _unit_note(cmp) + ([TAIL_NOTE] if any(str(m).startswith(("clat_p", "lat_p")) for m in metrics)
                                    else [])


def _winner(g, col_verdict, col_ratio, better):
    w = g[g[col_verdict] == better]
    return None if w.empty else w.loc[w[col_ratio].idxmax() if better == "higher" else w[col_ratio].idxmin()]


def _block_sensitivity(g, better, metric) -> str:
    """Does the best block size change with another selection of runs (§8)?"""
    main, parts = _winner(g, "verdict", "ratio", better), []
    for key in SENSITIVITY_KEYS:
        labels = [v for v in g.get(f"sensitivity_{key}_label", pd.Series(dtype=str)) if isinstance(v, str) and v]
        if not labels:
            continue
        alt = _winner(g, f"sensitivity_{key}_verdict", f"sensitivity_{key}_ratio", better)
        if (main is None and alt is None) or (main is not None and alt is not None and main["level"] == alt["level"]):
            parts.append(f"unchanged with {labels[0]}")
        elif alt is None:
            parts.append(f"with {labels[0]}, no block size would be significantly better")
        else:
            parts.append(f"with {labels[0]}, the best would be {format_size(int(alt['level']))} at "
                         f"{alt[f'sensitivity_{key}_ratio']:.2f}x the {METRIC_LABELS.get(metric, metric)}")
    return f" Sensitivity: {'; '.join(parts)}." if parts else ""


def _best_block(g, everything, cmp_p99, by, metric, unjudged=()) -> str:
    """The best judged block size; with `unjudged` levels, "no block size is better" is said only of
    the judged ones (a level without a verdict may be better: nobody knows)."""
    better = "higher" if not metric.startswith(("clat", "lat")) else "lower"
    r = _winner(g, "verdict", "ratio", better)
    sens = _block_sensitivity(everything, better, metric)
    if r is None:
        r = g.loc[g["ratio"].idxmax() if better == "higher" else g["ratio"].idxmin()]
        which = "block size" if not unjudged else \
            f"judged block size ({', '.join(format_size(int(v)) for v in unjudged)} not judged)"
        return (f"{_who(r, by)}no {which} is significantly better than "
                f"{format_size(int(r['baseline']))} for {METRIC_LABELS.get(metric, metric)} after Holm "
                f"correction by more than the margin (closest: {format_size(int(r['level']))} at {r['ratio']:.2f}x, "
                f"{_decided_ci(r)}, {r['verdict']}, Holm p {_p(r['holm_p'], r)}).{_described(r)}{sens}")
    text = (f"{_who(r, by)}{format_size(int(r['level']))} gives {r['ratio']:.2f}x the "
            f"{METRIC_LABELS.get(metric, metric)} of {format_size(int(r['baseline']))} "
            f"({_decided_ci(r)}, Holm p {_p(r['holm_p'], r)})")
    if cmp_p99 is not None and not cmp_p99.empty:
        q = cmp_p99[(cmp_p99["level"] == r["level"])
                    & np.logical_and.reduce([cmp_p99[c] == r[c] for c in by] or [True])]
        if len(q) and np.isfinite(q.iloc[0]["ratio_ci_low"]):
            q = q.iloc[0]
            text += f", at {q['ratio']:.2f}x the p99 latency ({_ci(q['ratio_ci_low'], q['ratio_ci_high'])})"
        elif len(q) and isinstance(q.iloc[0].get("note"), str) and q.iloc[0]["note"]:   # a pool short of I/Os
            text += f", its p99 latency {q.iloc[0]['note']}"
    return text + "." + _described(r) + sens


def conclusions_volblocksize(cmp: pd.DataFrame, cmp_p99: pd.DataFrame | None = None,
                             space: pd.DataFrame | None = None, metric: str = "iops",
                             alpha: float = 0.05) -> list[str]:
    """Best block size per group against the baseline (with the p99 cost), then the space model.

    "Gives ...x" is said only of a block size whose Holm-adjusted test is significant; the
    block sizes that could not be judged are listed with their reasons.
    """
    out = []
    if cmp is not None and not cmp.empty:
        by = [c for c in cmp.columns if c in CONFIG_COLUMNS and c != cmp["factor"].iloc[0]]
        for _, g in cmp.groupby(by, sort=False, dropna=False) if by else [((), cmp)]:
            everything, thin = g, g[g["verdict"] == "not judged"]
            g = g.drop(thin.index)
            for _, t in thin.iterrows():
                unit = t.get("unit") if isinstance(t.get("unit"), str) else "run"
                why = say_once(t.get("note")) if isinstance(t.get("note"), str) and t.get("note") else \
                    (f"n {int(t['n_level'])} vs {int(t['n_baseline'])} admissible {unit}s "
                     f"(a CI needs at least 2 a side)")
                out.append(f"{_who(t, by)}{format_size(int(t['level']))} not judged against "
                           f"{format_size(int(t['baseline']))}: {why}.{_described(t)}{_sensitivity(t)}")
            if not g.empty:
                out.append(_best_block(g, everything, cmp_p99, by, _metric(g.iloc[0], metric), list(thin["level"])))
        out += _unit_note(cmp) + ([TAIL_NOTE] if cmp_p99 is not None and not cmp_p99.empty else [])
    for _, r in (space[space["layout"].str.startswith("raidz")] if space is not None else pd.DataFrame()).iterrows():
        bcol = block_column(space)
        out.append(f"{r['layout']} of {int(r['width'])} at {format_size(int(r[bcol]))}: the allocation "
                   f"model predicts {r['space_efficiency']:.0%} space efficiency and a charge of "
                   f"{r['predicted_used_ratio']:.2f}x the logical size; measured referenced/logicalused "
                   f"is {r['measured_used_ratio']:.2f}x ({r['rel_error']:+.1%}).")
    return out or ["Nothing to conclude: no comparison or space data."]
