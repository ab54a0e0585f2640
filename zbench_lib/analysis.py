"""Helpers that keep the analysis notebooks thin: load a sweep, check it, tabulate, conclude.

`conclusions_*` turn tables into sentences whose every number comes from the table, as
docs/statistics.md asks: ratio and 95% CI first, then Holm p; "no meaningful difference"
only when the equivalence test (TOST) says so.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import yaml

from .errors import ConfigError
from .models import predicted_random_read_iops, space_efficiency, zfs_charged_bytes
from .sizes import format_size, parse_size
from .stats import compare, scaling, tost

FLAG_MEANINGS = {
    "flag_cache_served": "a disk-read test was served from ARC",
    "flag_no_device_io": "fio, pool and device byte counts disagree (a layer was suspiciously quiet)",
    "flag_not_steady": "never reached steady state",
    "flag_background_work": "scrub, resilver or trim running at start",
    "flag_compressible_data": "data was compressible although the question is not about compression",
    "flag_emulation_bound": "the lab's emulation, not the disk model, was the bottleneck",
}
# Columns that define a configuration; the ones that vary in a sweep are its factors.
CONFIG_COLUMNS = ("workload", "direction", "layout", "width", "vdevs", "data_disks", "total_disks",
                  "ashift", "volblocksize_bytes", "recordsize_bytes", "compression", "sync", "logbias",
                  "primarycache", "iodepth", "numjobs", "bs_bytes", "sweep_id")
LAYOUT_COLUMNS = ("layout", "width", "vdevs", "data_disks", "total_disks")
REPO_ROOT = Path(__file__).resolve().parents[1]


class Sweep(NamedTuple):
    path: Path
    spec: dict
    provenance: dict
    results: pd.DataFrame


def resolve_sweep_dir(path) -> Path:
    """`path` as given, or relative to the repository root (notebooks run from notebooks/)."""
    p = Path(path).expanduser()
    if not p.is_absolute() and not p.exists() and (REPO_ROOT / p).exists():
        p = REPO_ROOT / p
    return p.resolve()


def load_sweep(path) -> Sweep:
    """Read a sweep directory: spec.yaml, provenance.json and results.parquet (or .csv)."""
    p = resolve_sweep_dir(path)
    if not p.is_dir():
        raise ConfigError(f"sweep directory {path!r} does not exist (looked at {p})")
    spec = yaml.safe_load((p / "spec.yaml").read_text()) if (p / "spec.yaml").exists() else {}
    prov = json.loads((p / "provenance.json").read_text()) if (p / "provenance.json").exists() else {}
    # The executor records the host under test once per session (a resume may boot a new lab).
    for extra in sorted(p.glob("host-provenance-*.json")):
        prov.update({k: v for k, v in json.loads(extra.read_text()).items()
                     if not k.startswith("zfs_param.")})
    if (p / "results.parquet").exists():
        df = pd.read_parquet(p / "results.parquet")
    elif (p / "results.csv").exists():
        df = pd.read_csv(p / "results.csv")
    else:
        raise ConfigError(f"{p} has no results.parquet or results.csv: has the sweep run?")
    flags = df.filter(like="flag_").fillna(False).astype(bool)
    df["flagged"] = df["flagged"].fillna(False).astype(bool) if "flagged" in df else flags.any(axis=1)
    if "sweep_id" not in df:                  # two sweeps must stay apart when compared
        df["sweep_id"] = df["sweep"] if "sweep" in df else spec.get("name", p.name) if spec else p.name
    return Sweep(p, spec or {}, prov or {}, df)


def truth_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Rows and runs raising each truth-check flag, plus any flag at all."""
    key = "run_id" if "run_id" in df.columns else None
    total = df[key].nunique() if key else len(df)
    rows = []
    for col in [c for c in df.columns if c.startswith("flag_")] + ["flagged"]:
        hit = df[col].fillna(False).astype(bool)
        runs = df.loc[hit, key].nunique() if key else int(hit.sum())
        rows.append(dict(flag=col, meaning=FLAG_MEANINGS.get(col, "any flag" if col == "flagged" else ""),
                         rows=int(hit.sum()), runs=runs, share_of_runs=runs / total if total else math.nan))
    return pd.DataFrame(rows)


def flagged_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The flagged rows with their identifying columns and the names of the flags raised."""
    flags = [c for c in df.columns if c.startswith("flag_")]
    f = df[df["flagged"]]
    ids = [c for c in ("run_id", "config_id", "rep", "workload", "direction") if c in f.columns]
    names = pd.Series("", index=f.index)
    for c in flags:                                   # vectorised: 100k-row tables stay quick
        hit = f[c].fillna(False).astype(bool)
        names = names.where(~hit, names + np.where(names == "", "", ", ") + c[5:])
    return f[ids].assign(flags=names).reset_index(drop=True)


def select_admissible(df: pd.DataFrame, include_flagged: bool = False) -> pd.DataFrame:
    """Rows that passed every truth check (all rows when `include_flagged`)."""
    return df.copy() if include_flagged else df[~df["flagged"]].copy()


def environment_table(provenance: dict) -> pd.DataFrame:
    """Provenance as a two-column table; nested keys are joined with dots."""
    flat = pd.json_normalize(provenance, sep=".").iloc[0] if provenance else pd.Series(dtype=object)
    return pd.DataFrame({"item": list(flat.index), "value": [
        ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v) for v in flat]})


def varying_columns(df: pd.DataFrame, exclude=()) -> list[str]:
    """Configuration columns that vary in `df`, minus those the earlier ones determine.

    bs_bytes and numjobs usually follow the workload: grouping by them too would split
    nothing, and labels stay short.
    """
    out = []
    for c in (c for c in CONFIG_COLUMNS if c in df.columns and c not in exclude):
        if df[c].nunique() > 1 and (not out or (df.groupby(out, dropna=False)[c].nunique() > 1).any()):
            out.append(c)
    return out


def parse_level(df: pd.DataFrame, factor: str, text):
    """The level of `factor` that `text` names ('16k' for a *_bytes column, '4', 'raidz2')."""
    if factor not in df.columns:
        raise ConfigError(f"no column {factor!r} in the results")
    levels = list(pd.unique(df[factor].dropna()))
    for lv in levels:
        if str(lv) == str(text):
            return lv
    if factor.endswith("_bytes") and re.fullmatch(r"\s*\d+\s*[kKmM]?\s*", str(text)):
        if parse_size(str(text)) in levels:
            return parse_size(str(text))
    shown = [format_size(int(v)) if factor.endswith("_bytes") else str(v) for v in sorted(levels, key=str)]
    raise ConfigError(f"{factor}={text!r} is not in the results; levels are {shown}")


def compare_table(df, metric: str, factor: str, baseline, by=None, margin: float = 0.05,
                  alpha: float = 0.05, family=None) -> pd.DataFrame:
    """`stats.compare` plus a TOST column set (equivalence within ±margin) per comparison."""
    by = varying_columns(df, exclude=(factor,) + (LAYOUT_COLUMNS[1:] if factor == "layout" else ())) \
        if by is None else list(by)
    if family is None:
        family = [c for c in ("workload", "direction") if c in by]
    out = compare(df, metric, factor, baseline, by=by, alpha=alpha, family=family or None)
    if out.empty:
        return out
    groups = df.groupby(by + [factor], dropna=False)[metric]
    res = []
    for _, r in out.iterrows():
        a, b = (groups.get_group(tuple(r[c] for c in by) + (r[k],)) for k in ("level", "baseline"))
        ok = a.count() > 1 and b.count() > 1               # TOST needs 2 runs a side
        t = tost(a, b, margin, alpha) if ok else None
        res.append((t.low, t.high, t.p, t.equivalent) if t else (math.nan, math.nan, math.nan, False))
    out[["tost_ci90_low", "tost_ci90_high", "tost_p", "equivalent"]] = pd.DataFrame(res, index=out.index)
    out["margin"] = margin
    return out


def _block_col(df):
    return "volblocksize_bytes" if "volblocksize_bytes" in df.columns else "recordsize_bytes"


def scaling_table(df: pd.DataFrame, metric: str = "iops") -> pd.DataFrame:
    """`stats.scaling` per workload × direction (× other varying factors), with models.

    Adds `disk_equivalents` (mean over one modelled disk, per vdev in
    `disk_equivalents_per_vdev`) and, for random reads, `model_per_disk`: the
    first-order `predicted_random_read_iops` per data disk.
    """
    by = varying_columns(df, exclude=LAYOUT_COLUMNS + ("sweep_id",))
    by = by or [c for c in ("workload", "direction") if c in df.columns]
    s = scaling(df, metric, by=by)
    single, kind = {"iops": ("disk_model_iops", "rand"), "bw_bytes_s": ("disk_model_bw", "seq")}.get(
        metric, (None, None))
    if single in df.columns and df[single].notna().any() and "workload" in s.columns:
        fits = s["workload"].astype(str).str.contains(kind)     # random IOPS, sequential bandwidth
        s["disk_equivalents"] = (s["mean"] / float(df[single].median())).where(fits)
        s["disk_equivalents_per_vdev"] = s["disk_equivalents"] / s.get("vdevs", 1)
    bcol = _block_col(df)
    if metric == "iops" and "disk_model_iops" in df.columns and {"width", "vdevs"} <= set(s.columns):
        blocks = s[bcol] if bcol in s.columns else np.full(len(s), df[bcol].median() if bcol in df else 131072)
        rand = s["workload"].astype(str).str.contains("randread") if "workload" in s else np.ones(len(s), bool)
        disk = float(df["disk_model_iops"].median())
        s["model_per_disk"] = [predicted_random_read_iops(r.layout, int(r.width), int(r.vdevs), disk, int(b))
                               / r.data_disks if ok else math.nan
                               for r, b, ok in zip(s.itertuples(), blocks, rand)]
    return s


def space_check(df: pd.DataFrame, used_col: str = "referenced_bytes", ashift: int | None = None) -> pd.DataFrame:
    """Measured charge per logical byte, per layout × block size, against the raidz allocation model.

    The charge is `referenced` (the blocks the target holds), not `used`: a zvol created
    without -s also counts the unwritten part of its refreservation in `used`, which is a
    promise, not an allocation. `predicted_used_ratio` is what ZFS should charge per
    logical byte (`zfs_charged_bytes`); `space_efficiency` is logical over raw bytes allocated.
    """
    bcol = _block_col(df)
    need = {"layout", "width", bcol, used_col, "logicalused_bytes"}
    if not need <= set(df.columns):
        raise ConfigError(f"space check needs columns {sorted(need - set(df.columns))}")
    d = df.assign(_ratio=df[used_col] / df["logicalused_bytes"])
    keys = ["layout", "width", bcol] + (["ashift"] if "ashift" in d.columns else [])
    out = d.groupby(keys)["_ratio"].agg(measured_used_ratio="mean", n="count").reset_index()
    rows = list(zip(out["layout"], out["width"].astype(int), out[bcol].astype(int),
                    out["ashift"].astype(int) if "ashift" in out else [ashift or 12] * len(out)))
    out["predicted_used_ratio"] = [zfs_charged_bytes(b, lay, w, a) / b for lay, w, b, a in rows]
    out["space_efficiency"] = [space_efficiency(lay, w, b, a) for lay, w, b, a in rows]
    out["rel_error"] = out["measured_used_ratio"] / out["predicted_used_ratio"] - 1
    return out


# -- plain-language conclusions -------------------------------------------------------------------

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
        bcol = _block_col(space)
        out.append(f"{r['layout']} of {int(r['width'])} at {format_size(int(r[bcol]))}: the allocation "
                   f"model predicts {r['space_efficiency']:.0%} space efficiency and a charge of "
                   f"{r['predicted_used_ratio']:.2f}x the logical size; measured referenced/logicalused "
                   f"is {r['measured_used_ratio']:.2f}x ({r['rel_error']:+.1%}).")
    return out or ["Nothing to conclude: no comparison or space data."]
