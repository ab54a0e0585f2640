"""Conclusions in words, each number taken from a table.

As docs/methods.md asks: ratio and 95% CI first, then Holm p; "no meaningful
difference" only when the equivalence test (TOST) says so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from zbench_lib.analysis.sweep_data import CONFIG_COLUMNS, LAYOUT_COLUMNS
from zbench_lib.analysis.tables import block_column
from zbench_lib.core.sizes import format_size


def _ci(lo, hi, digits=2) -> str:
    return f"95% CI {lo:.{digits}f}–{hi:.{digits}f}"


def _p(p) -> str:
    return "n/a" if p is None or not np.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def _group_label(r, cols) -> str:
    return " ".join(f"{c[:-6]} {format_size(int(r[c]))}" if c.endswith("_bytes") and pd.notna(r[c])
                    else str(r[c]) if c in ("workload", "direction", "layout", "sweep_id")
                    else f"{c} {r[c]}" for c in cols)


def conclusions_scaling(scaling_df: pd.DataFrame, metric: str = "iops") -> list[str]:
    """One sentence per layout × group: scaling at the largest configuration, with its CI."""
    s = scaling_df
    by = [c for c in s.columns if c in CONFIG_COLUMNS and c not in LAYOUT_COLUMNS]
    out = []
    for _, g in s.groupby(by + ["layout"], sort=False, dropna=False):
        r = g.sort_values("data_disks").iloc[-1]
        who = f"{r['layout']} {_group_label(r, by)}".strip()
        if r["data_disks"] == r["baseline_disks"]:
            out.append(f"{who}: a single configuration ({int(r['data_disks'])} data disks), no scaling to report.")
            continue
        e, lo, hi = r["efficiency"], r["efficiency_ci_low"], r["efficiency_ci_high"]
        verdict = ("not judged: no CI (a single admissible run at one end)" if not (np.isfinite(lo) and np.isfinite(hi)) else
                   "close to linear" if (lo <= 1 <= hi or lo >= 0.9) and hi <= 1.1 else
                   "above linear: check for cache effects" if lo > 1 else
                   "far below linear" if hi < 0.5 else "below linear" if hi < 1 else
                   "too uncertain to call: the CI includes linear but is wide")
        text = (f"{who}: {metric} grows {r['scaling']:.2f}x from {int(r['baseline_disks'])} to "
                f"{int(r['data_disks'])} data disks (ideal {r['ideal_scaling']:.2f}x), "
                f"efficiency {e:.2f}" + (f" ({_ci(lo, hi)})" if np.isfinite(lo) and np.isfinite(hi) else "")
                + f": {verdict}.")
        if np.isfinite(r.get("disk_equivalents_per_vdev", np.nan)):
            per = " per vdev" if r.get("vdevs", 1) > 1 or r["layout"].startswith("raidz") else ""
            text += (f" At {int(r['data_disks'])} data disks it delivers the {metric} of "
                     f"{r['disk_equivalents_per_vdev']:.1f} single disks (of the disk model){per}.")
        out.append(text)
    return out


def conclusions_compare(cmp: pd.DataFrame, metric: str = "iops", alpha: float = 0.05) -> list[str]:
    """One sentence per comparison: ratio and CI, Welch and Holm p, Hedges g, and a verdict."""
    if cmp is None or cmp.empty:
        return ["No comparison could be made: no group holds both the baseline and another level."]
    fixed = {"factor", "level", "baseline", "n_level", "n_baseline", "mean_level", "mean_baseline"}
    by = [c for c in cmp.columns if c in CONFIG_COLUMNS and c not in fixed]
    out, too_small = [], 0
    for _, r in cmp.iterrows():
        lv, base = (format_size(int(r[k])) if str(r["factor"]).endswith("_bytes") else r[k]
                    for k in ("level", "baseline"))
        where = f" ({_group_label(r, by)})" if by else ""
        m = r.get("margin", math.nan)
        if min(r["n_level"], r["n_baseline"]) < 2:
            out.append(f"{r['factor']}={lv} vs {base}{where}: {metric} ratio {r['ratio']:.2f} from "
                       f"n {r['n_level']} vs {r['n_baseline']} admissible runs: not judged "
                       f"(a CI needs at least 2 runs a side).")
            continue
        text = (f"{r['factor']}={lv} vs {base}{where}: {metric} ratio {r['ratio']:.2f} "
                f"({_ci(r['ratio_ci_low'], r['ratio_ci_high'])}), Welch p {_p(r['welch_p'])}, "
                f"Holm p {_p(r['holm_p'])}, Hedges g {r['hedges_g']:.2f}, n {r['n_level']} vs {r['n_baseline']}: ")
        if np.isfinite(r["holm_p"]) and r["holm_p"] < alpha:
            text += f"{'higher' if r['ratio'] > 1 else 'lower'} than {base}, a significant difference."
        elif bool(r.get("equivalent", False)):
            text += f"no meaningful difference (equivalent within ±{m:.0%}, TOST p {_p(r['tost_p'])})."
        else:
            text += ("inconclusive: not significant, and equivalence"
                     + (f" within ±{m:.0%} " if np.isfinite(m) else " ") + "is not shown.")
        too_small += bool(r.get("mannwhitney_note"))
        out.append(text)
    if too_small:
        out.append(f"Mann–Whitney U is not reported for {too_small} comparison(s): at these run counts "
                   f"its smallest achievable p is not below {alpha}.")
    return out


def conclusions_volblocksize(cmp: pd.DataFrame, cmp_p99: pd.DataFrame | None = None,
                             space: pd.DataFrame | None = None, metric: str = "iops") -> list[str]:
    """Best block size per group against the baseline (with the p99 cost), then the space model."""
    out = []
    if cmp is not None and not cmp.empty:
        by = [c for c in cmp.columns if c in CONFIG_COLUMNS and c != cmp["factor"].iloc[0]]
        higher_better = not metric.startswith(("clat", "lat"))
        for key, g in cmp.groupby(by, sort=False, dropna=False) if by else [((), cmp)]:
            thin = g[np.minimum(g["n_level"], g["n_baseline"]) < 2]
            g = g.drop(thin.index)
            who0 = _group_label(thin.iloc[0] if len(thin) else g.iloc[0], by)
            for _, t in thin.iterrows():
                out.append(f"{who0}: {format_size(int(t['level']))} not judged against "
                           f"{format_size(int(t['baseline']))}: n {t['n_level']} vs {t['n_baseline']} "
                           "admissible runs (a CI needs at least 2 a side).")
            if g.empty:
                continue
            r = g.loc[g["ratio"].idxmax() if higher_better else g["ratio"].idxmin()]
            who, lv, base = _group_label(r, by), format_size(int(r["level"])), format_size(int(r["baseline"]))
            clear = (r["ratio_ci_low"] > 1) if higher_better else (r["ratio_ci_high"] < 1)
            if not clear:
                out.append(f"{who}: no block size {'judged ' if len(thin) else ''}is clearly better "
                           f"than {base} for {metric}.")
                continue
            text = (f"{who}: {lv} gives {r['ratio']:.2f}x the {metric} of {base} "
                    f"({_ci(r['ratio_ci_low'], r['ratio_ci_high'])}, Holm p {_p(r['holm_p'])})")
            if cmp_p99 is not None and not cmp_p99.empty:
                q = cmp_p99[(cmp_p99["level"] == r["level"])
                            & np.logical_and.reduce([cmp_p99[c] == r[c] for c in by] or [True])]
                if len(q):
                    q = q.iloc[0]
                    text += (f", at {q['ratio']:.2f}x the p99 latency "
                             f"({_ci(q['ratio_ci_low'], q['ratio_ci_high'])})")
            out.append(text + ".")
    for _, r in (space[space["layout"].str.startswith("raidz")] if space is not None else pd.DataFrame()).iterrows():
        bcol = block_column(space)
        out.append(f"{r['layout']} of {int(r['width'])} at {format_size(int(r[bcol]))}: the allocation "
                   f"model predicts {r['space_efficiency']:.0%} space efficiency and a charge of "
                   f"{r['predicted_used_ratio']:.2f}x the logical size; measured referenced/logicalused "
                   f"is {r['measured_used_ratio']:.2f}x ({r['rel_error']:+.1%}).")
    return out or ["Nothing to conclude: no comparison or space data."]
