"""The answer to a sweep's question in a few plain sentences, for the first screen of the report.

One sentence per workload (and per group the comparison holds equal), each clause with its
number, the interval that decided its verdict (`decision.decide`, methods §3.1: Holm-adjusted within
the family, its one level stated once per answer) and its verdict, or "not judged" with the reason said once
(issue 31). The numbers come from the same tables as the conclusions (`tables.scaling_table`,
`tables.compare_table`, `tails.cell_tails`); only the wording is shorter.

    answer_scaling(scal)                      efficiency of each family at its largest pool
    answer_compare(cmp, tails=None)           each level against the baseline, per workload;
                                              with `tails`, the p99 and p99.9 of each level
    latency_tails(df, hist, by)               p99 and p99.9 per cell, a typical unit's with its interval
                                              (methods §18): each unit's own from its merged bins, or
                                              (runs before json+) from its runs' own fio percentile
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from zbench_lib.analysis.claims.conclusions import efficiency_verdict
from zbench_lib.analysis.claims.wording import ci_text, num, say_once
from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.columns import CONFIG_COLUMNS, LAYOUT_COLUMNS
from zbench_lib.analysis.data.sweep_data import setting_text
from zbench_lib.analysis.stats.decision import VERDICTS, level_text
from zbench_lib.analysis.stats.linearity import LINEAR_BAND, judge_linearity
from zbench_lib.analysis.stats.ratio import equivalence_bounds
from zbench_lib.analysis.stats.tails import SOURCE_BINS, cell_tails
from zbench_lib.core.sizes import format_size
from zbench_lib.measure.load import Load

UNITS = {"iops": "IOPS", "bw_bytes_s": "MiB/s", "lat_p99_ns": "p99 latency"}
ALL_RUNS = "all runs"       # the subject of a sweep whose workloads vary (each group then names its own)


def _level(factor: str, v) -> str:
    """'4K' for a size, 'iodepth 2' for another number (a bare 2 beside a ratio reads as one), else the level."""
    if str(factor).endswith("_bytes") and pd.notna(v):
        return format_size(int(v))
    return f"{factor} {v}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def _group(r, cols) -> str:
    """'randwrite raidz2', 'no SLOG logbias latency': a held-equal group as a reader names it (a bare
    '0' for no log device read as nothing)."""
    return " ".join(setting_text(c, r[c]) for c in cols)


def _who(key: dict, by: list, subject: str) -> str:
    """The answer's subject: its group, else the sweep's `subject` (its one workload). A group of a load sweep
    names the workload even when the sweep has one (then not in `by`): 'at 25% of saturation (open loop)'
    alone says at what load, not what was measured; it reads as a sweep of two workloads does."""
    who = _group(pd.Series(key), by)
    if "load" in key and "workload" not in key and subject != ALL_RUNS:
        return f"{subject} {who}"
    return who or subject


def _family_rank(name: str) -> tuple:
    """stripe, mirror, raidz1, 2x raidz1, raidz2 ...: a family after its layout's single-vdev one."""
    # The figures' order (plot_base.LAYOUT_ORDER) without importing the figures room: stripe and mirror,
    # then the parity layouts by name (raidz1 < raidz2 < raidz3).
    vdevs, _, layout = name.partition("x ") if "x " in name else ("", "", name)
    first = ("stripe", "mirror")
    rank = first.index(layout) if layout in first else len(first)
    return (rank, layout, int(vdevs) if vdevs.isdigit() else 1)


def _linear(r, band: float) -> tuple[str, str]:
    """A stated scaling verdict (`linearity.judge_linearity`) as (holds | does not hold | not judged, why)."""
    v = efficiency_verdict(r["verdict"], r["decided_high"], band)
    if v.startswith("close to linear"):
        return "holds", ""
    if v.startswith(("below", "far below", "above")):
        return "does not hold", v.split(":")[0]
    if v.startswith("too uncertain"):
        lo_b, hi_b = equivalence_bounds(band)
        return "not judged", f"interval reaches outside {lo_b:.2f}–{hi_b:.2f}"
    return "not judged", bare_reason(v)


SCALING_NOTE = ("Efficiency: the scaling from a family's smallest pool to its largest over the ideal (1 = linear), "
                "across pools, beside the interval that decided its verdict: the page's scaling verdicts are one "
                "Holm family (family-wise 95%), every interval at the one level Holm gives it, as each answer "
                "states (methods §10, §3.1). Linear scaling holds where that interval lies within {lo:.2f}–{hi:.2f}, "
                "and does not hold where it lies below or above 1 (margin unclear: it reaches into that band).")


def _unjudged_family(f: pd.DataFrame) -> str:
    """Why a family states no verdict: its largest pool's status, or too few units."""
    last = f["status"].iloc[-1] if "status" in f else None
    return bare_reason(say_once(last)) if isinstance(last, str) else "fewer than 2 admissible units at its largest pool"


def _scaling_clause(name, r, band: float, at: bool) -> tuple[str, str, str]:
    """(state, the family as the lead names it, the clause) of a family's stated row; `at`: say the level."""
    span = f"{name} ({int(r['baseline_disks'])}→{int(r['data_disks'])} data disks) {r['efficiency']:.2f}"
    if r["regime"]:            # two regimes, not a scaling law: the figure at 95%, no verdict (issue 46 item 3)
        ci = ci_text(r["efficiency_ci_low"], r["efficiency_ci_high"], digits=2)
        return ("not judged", f"{name} (not interpretable: {r['regime']})",
                f"{span} ({ci}) across two regimes: no verdict")
    lo, hi = r["decided_low"], r["decided_high"]
    level = f", {level_text(r['decided_level'], int(r['family_size']))}" if at and np.isfinite(lo) else ""
    state, why = _linear(r, band)
    lead = f"{name} ({why})" if why and state == "not judged" else str(name)
    return state, lead, f"{span} ({ci_text(lo, hi, digits=2, level='')}{level})" + \
        (f" {why}" if why and state == "does not hold" else "")


def answer_scaling(scal: pd.DataFrame, band: float = LINEAR_BAND) -> list[dict]:
    """Per workload: which families scale linearly, then each one's efficiency at its largest judged pool, beside
    the interval that decided its verdict: the page's verdicts are one Holm family (`linearity.judge_linearity`)."""
    if scal is None or scal.empty:
        return []
    scal = judge_linearity(scal, band)
    by = [c for c in scal.columns if c in CONFIG_COLUMNS and c not in LAYOUT_COLUMNS]
    fam = "family" if "family" in scal else "layout"
    out = []
    for key, g in (scal.groupby(by, sort=True, dropna=False) if by else [((), scal)]):
        key = key if isinstance(key, tuple) else (key,)
        metric = g["metric"].dropna().iloc[0] if "metric" in g and g["metric"].notna().any() else "iops"
        verdicts: dict[str, list[str]] = {"holds": [], "does not hold": [], "not judged": []}
        clauses, levels = [], _levels(g)
        for name, f in sorted(g.groupby(fam, sort=False), key=lambda kv: _family_rank(str(kv[0]))):
            if not f["stated"].any():
                verdicts["not judged"].append(f"{name} ({_unjudged_family(f.sort_values('data_disks'))})")
                continue
            state, lead, clause = _scaling_clause(name, f[f["stated"]].iloc[0], band, len(levels) > 1)
            verdicts[state].append(lead)
            clauses.append(clause)
        head = "; ".join(f"{state} for {', '.join(names)}" for state, names in verdicts.items() if names)
        # each setting said as a reader says it ("16K", "kernel 6.1"); a workload's name stands alone
        subject = " ".join(setting_text(c, k) for c, k in zip(by, key) if pd.notna(k)) or ALL_RUNS
        out.append(dict(subject=f"{subject} ({UNITS.get(metric, metric)})",
                        text=f"linear scaling {head}. Efficiency at the largest pool: " + ", ".join(clauses) + "."
                        + _stated(levels)))
    return out


def _reason(note: str, levels) -> str:
    """A comparison's not-judged note with each fragment once, and without repeating the level's
    name or "not judged" (the clause already says both); `levels` are the level's spellings."""
    parts = []
    for p in say_once(note).split("; "):
        p = bare_reason(p)
        for lv in levels:
            p = p.removeprefix(f"level {lv}: ")
        p = bare_reason(p)
        if p and p not in parts:
            parts.append(p)
    return "; ".join(parts)


def _verdict(r, level: str = "") -> str:
    """The verdict in a word or two; what each means is said once, in COMPARE_NOTE."""
    v = r["verdict"]
    if v in VERDICTS and v not in ("equivalent", "not judged"):
        return v
    if v == "equivalent":
        return "no meaningful difference"
    note = r.get("note", "")
    if isinstance(note, str) and note:
        return "not judged: " + _reason(note, (level, str(r["level"])))
    return f"not judged: {int(r['n_level'])} vs {int(r['n_baseline'])} admissible units (a CI needs 2 a side)"


COMPARE_NOTE = ("Each ratio is a level's mean over the baseline's, across pools (or runs, where one pool was "
                "measured), beside the interval that decided its verdict, Holm-adjusted within the workload's "
                "family at the one level each answer states (methods §3.1): higher or lower: the interval excludes "
                "1 and lies beyond ±{margin:.0%}; higher or lower, margin unclear: it excludes 1 but reaches "
                "across ±{margin:.0%}; different, within margin: it excludes 1 and lies inside ±{margin:.0%}; "
                "no meaningful difference: it includes 1 and lies inside ±{margin:.0%}; inconclusive: none of "
                "these (methods §1–§4). Latencies in ms with their 95% CI.")


def _digits(lo, hi) -> int:
    """Two decimals for ratios below 10, one up to 100, none beyond: 0.94–1.01, 10.5–13.4, 112–140."""
    top = max(abs(lo), abs(hi)) if np.isfinite(lo) and np.isfinite(hi) else 1.0
    return 2 if top < 10 else 1 if top < 100 else 0


LEAD_LEVELS = 4     # levels from which a sentence groups them by verdict before giving the numbers
PERCENTILES = {"p99": ("lat_p99_ns", 0.99), "p99.9": ("lat_p99_9_ns", 0.999)}


def _key(r, by: list) -> tuple:
    """A cell's key, NaN equal to NaN (a setting a layout does not have)."""
    return tuple("<nan>" if isinstance(r[c], float) and np.isnan(r[c]) else r[c] for c in by)


TAIL_COLUMNS = ["percentile", "value_ms", "ci_low_ms", "ci_high_ms", "interval", "n", "n_units", "unsupported",
                "status", "source", "estimand"]


def latency_tails(df: pd.DataFrame, hist: pd.DataFrame | None, by: list) -> pd.DataFrame:
    """p99 and p99.9 per cell of `by`, a typical unit's (`tails.cell_tails`, methods §18): by + TAIL_COLUMNS.

    `value_ms` and its interval `ci_low_ms`/`ci_high_ms` estimate one thing, named in `estimand`: the geometric
    mean of each unit's own percentile, with its t interval. `source` says where the units' values come from:
    their merged bins, or (runs recorded before json+) their runs' own fio percentile. `n` is the units the
    value rests on, of `n_units`; a unit whose I/Os cannot support the percentile is named in `unsupported`,
    and a cell none of whose units can is "not judged" with the reason (never a number made otherwise).
    """
    binned = hist is not None and len(hist) > 0
    # a percentile the rows never recorded (no bins, no column of fio's own) is no latency of theirs to report
    qs = tuple(q for col, q in PERCENTILES.values() if binned or (col in df and df[col].notna().any()))
    t = cell_tails(df, hist, by=by, quantiles=qs) if len(df) and qs else \
        pd.DataFrame(columns=by + ["value_ns", "ci_low_ns", "ci_high_ns"] + TAIL_COLUMNS)
    t = t.assign(value_ms=t["value_ns"] / 1e6, ci_low_ms=t["ci_low_ns"] / 1e6, ci_high_ms=t["ci_high_ns"] / 1e6)
    return t[by + TAIL_COLUMNS].reset_index(drop=True)


def _tails_sentence(tails, key: dict, factor: str, levels: list) -> str:
    """'p99: 16K 171 ms (162–180), 4K 11.1 ms (9.85–12.5); p99.9: ...' over the levels, where judged; a
    reason said once for the levels whose percentile is not judged."""
    if tails is None or tails.empty:
        return ""
    m = pd.Series(True, index=tails.index)
    for c, v in key.items():
        if c in tails:
            m &= tails[c] == v
    parts = []
    for pct in PERCENTILES:
        values, unjudged = [], {}
        for lv in levels:
            t = tails[m & (tails["percentile"] == pct) & (tails[factor] == lv)]
            if t.empty:
                continue
            t = t.iloc[0]
            if t["status"] == "judged" and isinstance(t.get("unsupported"), str) and t["unsupported"]:
                values.append(f"{_level(factor, lv)} {num(t['value_ms'])} ms ({_n(t)} of {int(t['n_units'])} "
                              f"{_units(t)} support a {pct}; {t['unsupported']})")
            elif t["status"] == "judged" and t["ci_low_ms"] == t["ci_high_ms"]:     # zero width: no interval
                n = _n(t)
                values.append(f"{_level(factor, lv)} {num(t['value_ms'])} ms (one value"
                              + (f", n = {n})" if n is not None else ")"))
            elif t["status"] == "judged":
                ci = ci_text(t["ci_low_ms"], t["ci_high_ms"], level="") if pd.notna(t["ci_low_ms"]) else \
                    str(t.get("interval") or "no interval").removeprefix("no interval: ") + ", no interval"
                values.append(f"{_level(factor, lv)} {num(t['value_ms'])} ms ({ci})")
            else:
                unjudged.setdefault(bare_reason(t["status"]), []).append(_level(factor, lv))
        values += [f"{', '.join(lvs)} not judged ({why})" for why, lvs in unjudged.items()]
        if values:
            parts.append(f"{pct}: " + ", ".join(values))
    return "; ".join(parts)


def _n(t):
    """The units behind a tail's interval, None where the table does not say."""
    n = t.get("n", np.nan)
    return int(n) if pd.notna(n) else None


def _units(t) -> str:
    return "pools" if t.get("estimand", "").startswith("a typical pool") else "runs"


def _tail_source(tails) -> str:
    """What the latencies estimate and where the units' values come from, said once (methods §18)."""
    if tails is None or tails.empty:
        return ""
    unit = "pool" if tails["estimand"].str.startswith("a typical pool").any() else "run"
    own = (tails["source"] != SOURCE_BINS).any()
    what = ("fio percentile (these runs kept no histogram to merge)" if own else
            "percentile from its runs' merged histogram bins")
    return (f" Latency percentiles: a typical {unit}'s, the geometric mean of each {unit}'s own {what}, with a 95% "
            f"t interval across {unit}s on the log scale (methods §18).")


def answer_compare(cmp: pd.DataFrame, tails: pd.DataFrame | None = None, subject: str = ALL_RUNS,
                   load=None) -> list[dict]:
    """Per workload (and held-equal group): each level against the baseline (ratio, the interval that decided
    its verdict with its level, verdict: `decision.decide`), then,
    with `tails` (`latency_tails` over the same cells), the p99 and p99.9 of every level. `load`: the one
    level of the load factor a sweep has (not among the groups' columns then), else None."""
    if cmp is None or cmp.empty:
        return []
    factor = str(cmp["factor"].iloc[0])
    fixed = {"factor", "level", "baseline", "n_level", "n_baseline", "mean_level", "mean_baseline"}
    by = [c for c in cmp.columns if c in CONFIG_COLUMNS and c not in fixed]
    out = []
    for key, g in (cmp.groupby(by, sort=False, dropna=False) if by else [((), cmp)]):
        key = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        metric = g["metric"].dropna().iloc[0] if "metric" in g and g["metric"].notna().any() else "iops"
        base = g["baseline"].iloc[0]
        if _set_by_load(key.get("load", load), metric):
            tail = _tails_sentence(tails, key, factor, [base] + list(g["level"]))
            out.append(_open_loop_answer(g, key, by, subject, factor, metric, tail))
            continue
        clauses, lead = [], {}
        levels = _levels(g)
        many = len(g) >= LEAD_LEVELS          # many levels: the verdicts first, grouped, then the numbers
        for _, r in g.iterrows():
            lv = _level(factor, r["level"])
            if r["verdict"] == "not judged" or not np.isfinite(r.get("ratio", np.nan)):
                if many:
                    lead.setdefault(_verdict(r, lv), []).append(lv)
                else:
                    clauses.append(f"{lv}: {_verdict(r, lv)}")
                continue
            lo, hi = _decided(r)
            lead.setdefault(_verdict(r, lv), []).append(lv)
            at = f", {level_text(r['decided_level'], _family(r))}" if len(levels) > 1 else ""
            clauses.append(f"{lv} {_ratio(r['ratio'], lo, hi)}x ({ci_text(lo, hi, _digits(lo, hi), level='')}{at})"
                           + ("" if many else f" {_verdict(r, lv)}"))
        if many:
            grouped = [f"{v.split(': ')[0]} at {', '.join(lvs)}" + (f" ({v.split(': ', 1)[1]})" if ": " in v else "")
                       for v, lvs in lead.items()]
            clauses = ["; ".join(grouped) + ". Ratios: " + ", ".join(clauses)]
        tail = _tails_sentence(tails, key, factor, [base] + list(g["level"]))
        who = _who(key, by, subject)
        stated = _stated(levels)
        out.append(dict(subject=f"{who} ({UNITS.get(metric, metric)})",
                        text=f"against {_against(factor, base)}: " + "; ".join(clauses)
                        + "." + stated + (f" Latency {tail}." if tail else "")))
    if out:
        out[-1]["text"] += _tail_source(tails)
    return out


def _stated(levels: list[tuple[float, int]]) -> str:
    """The answer's one statement of its intervals' level: once where they share it (a Holm family has one,
    `ratio.holm`), else that each clause gives its own (an answer across families)."""
    if not levels:
        return ""
    family = _family_text(levels[0][1])
    if len(levels) == 1:
        return f" Intervals: {level_text(*levels[0])}{family}."
    return " Each interval at its own family's Holm level."


def _family(r) -> int:
    """The comparisons in the row's Holm family (1 where the table predates the column)."""
    n = r.get("family_size", 1)
    return int(n) if pd.notna(n) and n else 1


def _family_text(n: int) -> str:
    return f", family of {n}" if n > 1 else ""


def _decided(r) -> tuple[float, float]:
    """The interval that decided the row's verdict (`decision.decide`); a table without it, its 95% CI."""
    if "decided_low" in r and pd.notna(r["decided_low"]):
        return r["decided_low"], r["decided_high"]
    return r["ratio_ci_low"], r["ratio_ci_high"]


def _levels(g: pd.DataFrame) -> list[tuple[float, int]]:
    """The (level, family size) pairs of the group's judged rows' deciding intervals, each once."""
    if "decided_level" not in g:
        return [(0.95, 1)] if (g["verdict"] != "not judged").any() else []
    judged = g[g["decided_level"].notna()]
    return list(dict.fromkeys((round(float(r["decided_level"]), 6), _family(r)) for _, r in judged.iterrows()))


def _set_by_load(load, metric: str) -> bool:
    """An open-loop group's throughput: what the stated load offered, not a property of the levels (at a
    fraction of each cell's own saturation it follows their probes; at an absolute rate it is the rate)."""
    return metric in ("iops", "bw_bytes_s") and not Load.of(load).saturation


def _open_loop_answer(g: pd.DataFrame, key: dict, by: list, subject: str, factor: str, metric: str,
                      tail: str) -> dict:
    """The answer of an open-loop group: its latency, with the throughput the load set said, never compared."""
    unit = UNITS.get(metric, metric)
    scale = 1 / 2 ** 20 if metric == "bw_bytes_s" else 1
    means = [(g["baseline"].iloc[0], g["mean_baseline"].iloc[0])] + list(zip(g["level"], g["mean_level"]))
    met = ", ".join(f"{_level(factor, lv)} {m * scale:.0f}" for lv, m in means if pd.notna(m))
    who = _who(key, by, subject)
    text = (f"Latency {tail}." if tail else "Latency: no percentile was read.") + \
        f" {unit} were set by the offered load, not compared: {met} {unit} (methods §21)."
    return dict(subject=who, text=text)


def _against(factor: str, base) -> str:
    """'volblocksize 16K', 'iodepth 1', 'layout stripe': the baseline with its factor's name."""
    lv = _level(factor, base)
    return lv if lv.startswith(f"{factor} ") else f"{factor.removesuffix('_bytes')} {lv}"


def _ratio(v, lo, hi) -> str:
    """The ratio with as many decimals as its interval needs."""
    text = ci_text(lo, hi, _digits(lo, hi), level="")
    decimals = len(text.split("–")[0].partition(".")[2])
    return f"{v:.{decimals}f}"
