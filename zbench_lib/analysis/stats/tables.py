"""The tables of the analysis notebooks: comparisons along a factor, scaling, space.

Each workload is judged in its own metric (docs/methods.md §9): bandwidth for sequential
workloads, IOPS (and p99 latency beside) for random ones; `metric="auto"` picks it per
row. A comparison along one factor holds every other factor equal, disk count included;
along `layout` (whose levels differ in width, vdevs and data disks) it is one of two named
comparisons: at equal total disks (`disks="total"`, the default: the same hardware) or at
equal data disks (`disks="data"`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from zbench_lib.analysis.stats.compare import COLUMNS, adjust, compare
from zbench_lib.analysis.data.coverage import planned_comparisons
from zbench_lib.analysis.data.metrics import metric_parts, workload_metric
from zbench_lib.analysis.data.flags import sensitivity_alternatives
from zbench_lib.analysis.stats.linearity import ALTERNATIVE
from zbench_lib.analysis.stats.p_values import p_text
from zbench_lib.analysis.stats.stats import scaling
from zbench_lib.analysis.data.columns import CONFIG_COLUMNS, LAYOUT_COLUMNS, config_columns
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.models import has_model, predicted_random_read_iops, space_efficiency, zfs_charged_bytes

METRIC_UNITS = {"iops": "IOPS", "bw_bytes_s": "MiB/s", "lat_p99_ns": "ms p99", "lat_p99_9_ns": "ms p99.9"}
DISKS_HELD = {"data": ("data_disks", "equal data disks"), "total": ("total_disks", "equal total disks")}
# The disk counts a pool's shape gives: along its width or vdev count they follow the level, never held
# (holding them left one level per group: 2-way and 3-way mirrors of two vdevs have 4 and 6 drives).
SHAPE_DISKS = ("data_disks", "total_disks")


def comparison_by(df: pd.DataFrame, factor: str, disks: str = "total") -> tuple[list[str], str]:
    """Columns held equal in a comparison along `factor`, and the comparison's name.

    A column that copies the factor (volblocksize_bytes set from recordsize_bytes) is not held; along the width
    or the vdev count the layout and the other are, the disk counts they give are not (`SHAPE_DISKS`).
    """
    same = tuple(c for c in config_columns(df) if c in df and c != factor and df[c].equals(df[factor]))
    if factor in ("width", "vdevs"):
        return varying_columns(df, exclude=(factor, *SHAPE_DISKS) + same), f"the disk counts each {factor} gives"
    if factor not in LAYOUT_COLUMNS:
        return varying_columns(df, exclude=(factor,) + same), "all other factors equal"
    if disks not in DISKS_HELD:
        raise ConfigError(f"disks must be one of {sorted(DISKS_HELD)}, got {disks!r}")
    held, name = DISKS_HELD[disks]
    by = varying_columns(df, exclude=tuple(c for c in LAYOUT_COLUMNS if c != held) + same)
    if held in df and df[held].nunique() > 1 and held not in by:
        by.append(held)
    return by, name


def _at_each_load(df: pd.DataFrame, factor: str, by: list) -> list:
    """`by` with the stated load where it varies: a latency or a throughput at one offered load says nothing of
    another's, so a level meets the baseline at the same load only, whatever else a caller holds (methods §21)."""
    if factor != "load" and "load" in df and df["load"].nunique() > 1 and "load" not in by:
        return [*by, "load"]
    return by


def _mixed(df: pd.DataFrame, by: list, factor: str) -> dict:
    """(by values..., level) -> configuration columns that vary inside that side of a comparison."""
    cols = [c for c in config_columns(df) if c in df and c not in by and c != factor]
    if not cols or df.empty:
        return {}
    n = df.groupby(by + [factor], dropna=False)[cols].nunique()
    return {k if isinstance(k, tuple) else (k,): [c for c in cols if r[c] > 1]
            for k, r in n.iterrows() if (r > 1).any()}


def _pooled_notes(df, out, by, factor) -> list[str]:
    """Per comparison, "not judged: a side pools several configurations (...)" or ""."""
    mixed = _mixed(df, by, factor)
    notes = []
    for _, r in out.iterrows():
        k = tuple(r[c] for c in by)
        cols = sorted(set(mixed.get(k + (r["level"],), []) + mixed.get(k + (r["baseline"],), [])))
        notes.append(f"not judged: a side pools several configurations ({', '.join(cols)} differ)"
                     if cols else "")
    return notes


def _compare_all(df, metric, factor, baseline, by, alpha, family, margin, unit, hist=None) -> pd.DataFrame:  # noqa: PLR0913 (compare_table's options passed on; debt, issue 28)
    """Every metric's comparisons, Holm-adjusted per family over the valid comparisons only.

    A side that pools several configurations is no comparison of one factor, and a side with a unit
    that cannot support the percentile compared has no estimate: either is "not judged" (`note`) and
    kept out of its Holm family, where it would raise the others' adjusted p.
    """
    parts = []
    for m, d in metric_parts(df, metric):
        if d.empty or baseline not in set(d[factor]):
            continue
        out = compare(d, m, factor, baseline, by=by, alpha=alpha, family=family, margin=margin, unit=unit, hist=hist)
        if not out.empty:
            parts.append(out.assign(metric=m))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    out["note"] = ["; ".join(t for t in (pooled, own) if t)
                   for pooled, own in zip(_pooled_notes(df, out, by, factor), out["note"].fillna(""))]
    return adjust(out, family, alpha, valid=out["note"] == "")


def _sensitivity(out, df, all_runs, metric, factor, baseline, by, alpha, family, margin, unit, hist=None):  # noqa: PLR0913 (compare_table's options passed on; debt, issue 28)
    """Verdicts recomputed with each other selection of runs (`flags.sensitivity_alternatives`).

    Per alternative `<key>` (flagged, replacements, described): `sensitivity_<key>_verdict` and
    `sensitivity_<key>_ratio`, the main ones where the alternative changes no run of the
    comparison's two sides, and `sensitivity_<key>_label`, the alternative's name where it does
    ("" elsewhere). `sensitivity` is the clause, naming only the alternatives that change runs:
    "unchanged with replacement runs included; with runs with describing flags left out:
    inconclusive (ratio 1.10, Holm p 0.2)".
    """
    clauses = [[] for _ in range(len(out))]
    keys = by + ["level", "metric"]
    for alt in sensitivity_alternatives(df, all_runs):
        alt_cmp = _compare_all(alt.runs, metric, factor, baseline, by, alpha, family, margin, unit, hist)
        shown = ["verdict", "ratio", "holm_p", "n_level", "n_baseline"]
        alt_cmp = alt_cmp[keys + shown] if not alt_cmp.empty else pd.DataFrame(columns=keys + shown)
        m = out[keys].merge(alt_cmp.rename(columns={"verdict": "_v", "ratio": "_r", "holm_p": "_p", "n_level": "_na",
                                                    "n_baseline": "_nb"}), on=keys, how="left")
        touched = _touched(out, alt.changed, by, factor)
        verdict = np.where(touched, m["_v"].fillna("not judged"), out["verdict"])
        ratio = np.where(touched, m["_r"].astype(float), out["ratio"].astype(float))
        out[f"sensitivity_{alt.key}_verdict"], out[f"sensitivity_{alt.key}_ratio"] = verdict, ratio
        out[f"sensitivity_{alt.key}_label"] = np.where(touched, alt.label, "")
        holm_p = [p_text(p, a, b) for p, a, b in zip(m["_p"].astype(float), m["_na"], m["_nb"])]
        for i, (hit, v, sv, r, p) in enumerate(zip(touched, out["verdict"], verdict, ratio, holm_p)):
            if hit:
                clauses[i].append(f"unchanged with {alt.label}" if v == sv else f"with {alt.label}: {sv}"
                                  + (f" (ratio {r:.2f}, Holm p {p})" if np.isfinite(r) and p != "n/a" else ""))
    out["sensitivity"] = ["; ".join(c) for c in clauses]
    return out


def _touched(out: pd.DataFrame, changed: pd.DataFrame, by: list, factor: str) -> np.ndarray:
    """Which comparisons have a run in `changed` on either side (level or baseline)."""
    if changed.empty:
        return np.zeros(len(out), bool)
    hit = changed[by + [factor]].drop_duplicates().assign(_hit=True)
    sides = [out[by + [side]].rename(columns={side: factor}).merge(hit, on=by + [factor], how="left")["_hit"]
             for side in ("level", "baseline")]
    return (sides[0].eq(True) | sides[1].eq(True)).to_numpy()


def compare_table(df, metric: str, factor: str, baseline, by=None, margin: float = 0.05,  # noqa: PLR0913 (the notebooks' API: keyword options)
                  alpha: float = 0.05, family=None, disks: str = "total", unit: str = "auto",
                  all_runs: pd.DataFrame | None = None, cells: pd.DataFrame | None = None,
                  hist: pd.DataFrame | None = None) -> pd.DataFrame:
    """`compare.compare` along `factor`, holding every other varying factor equal.

    `metric` may be "auto" (each workload's own metric, in a `metric` column). Along a layout
    column the disk count is held equal too: `disks` "total" (default) or "data"; the
    `comparison` column names which. Holm families are workload × direction by default. `df`
    holds the estimate's runs (`select_admissible`: admissible first attempts). With
    `all_runs` (every run) a `sensitivity` column says whether each verdict changes with the
    flagged runs included, with the replacement runs included, or without the runs that carry
    describing flags (only where that changes a run of the comparison); with `cells`
    (`coverage.cell_status`) every planned comparison appears, a side without enough
    admissible runs as "not judged" with its reasons in `note`, and `described` names the
    describing flags each side keeps. A side that pools several configurations is not judged
    either, and stays out of its Holm family. A latency percentile (`lat_p99_ns`) compares a typical
    pool's, each pool's own from its merged bins in `hist` (the store's latency_hist.parquet; without
    it, each pool's runs' own fio percentile), as `compare.compare` says.
    """
    held_by, name = comparison_by(df, factor, disks)
    by = held_by if by is None else _at_each_load(df, factor, list(by))
    if family is None:
        family = [c for c in ("workload", "direction") if c in by] or None
    out = _compare_all(df, metric, factor, baseline, by, alpha, family, margin, unit, hist)
    if not out.empty:
        out["comparison"] = name
    if cells is not None and not cells.empty:
        out = planned_comparisons(out, cells, factor, baseline, by, name,
                                  lambda w, t: metric if metric != "auto" else workload_metric(w, t))
    if out.empty:
        return pd.DataFrame()
    # Every planned comparison not judged (e.g. a busy host excluded the runs): the statistics'
    # columns are there, empty, so the figures and sentences say "not judged" instead of failing.
    out = out.reindex(columns=list(dict.fromkeys([*out.columns, *COLUMNS])))
    if all_runs is not None:
        out = _sensitivity(out, df, all_runs, metric, factor, baseline, by, alpha, family, margin, unit, hist)
    return out.reset_index(drop=True)


def block_column(df):
    return "volblocksize_bytes" if "volblocksize_bytes" in df.columns else "recordsize_bytes"


def scaling_table(df: pd.DataFrame, metric: str = "auto", unit: str = "auto",
                  cells: pd.DataFrame | None = None, all_runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """`stats.scaling` per workload × direction (× other varying factors), with models.

    `metric` "auto" scales each workload in its own metric (`metrics.judged_metrics`); the `metric`
    column names the one each row is in. Adds
    `disk_equivalents` (mean over one modelled disk, per vdev in `disk_equivalents_per_vdev`)
    and, for random reads, `model_per_disk`: the `predicted_random_read_iops` per data disk.
    With `cells` (`coverage.cell_status`) each row gets its `status`, and planned
    configurations without enough admissible runs are appended with n 0 and their status;
    `described` names the describing flags their runs keep. With `all_runs`,
    `sensitivity_<key>_*` columns give the efficiency and its CI recomputed with each
    alternative selection of runs (`flags.sensitivity_alternatives`) where it changes a run.
    """
    s = _scaling(df, metric, unit)
    if all_runs is not None and len(s):
        s = _scaling_sensitivity(s, df, all_runs, metric, unit)
    return _with_cells(s, cells) if cells is not None else s


def _scaling_sensitivity(s, df, all_runs, metric, unit):
    """Per alternative `<key>` (`flags.sensitivity_alternatives`), `sensitivity_<key>_efficiency`,
    its CI, SE, df, units and baseline (`linearity.ALTERNATIVE`, what its verdict is judged from):
    recomputed where the alternative changes a run of the configuration or of its family's
    baseline, the main values elsewhere."""
    cols = list(ALTERNATIVE)
    for alt in sensitivity_alternatives(df, all_runs):
        a = _scaling(alt.runs, metric, unit)
        keys = [c for c in s.columns if (c in CONFIG_COLUMNS or c == "metric") and c in a.columns]
        m = s[keys].merge(a[keys + cols], on=keys, how="left") if len(a) else \
            s[keys].assign(**{c: np.nan for c in cols})
        touched = _scaling_touched(s, alt.changed)
        for c in cols:
            s[f"sensitivity_{alt.key}_{c}"] = np.where(touched, m[c].to_numpy(float), s[c].to_numpy(float))
        s[f"sensitivity_{alt.key}_label"] = np.where(touched, alt.label, "")
    return s


def _scaling_touched(s: pd.DataFrame, changed: pd.DataFrame) -> np.ndarray:
    """Scaling rows whose configuration, or whose family's baseline, has a run in `changed`."""
    cfg = [c for c in s.columns if c in CONFIG_COLUMNS and c in changed.columns]
    if changed.empty or not cfg:
        return np.zeros(len(s), bool)
    hit = s[cfg].merge(changed[cfg].drop_duplicates().assign(_hit=True), on=cfg, how="left")["_hit"].eq(True)
    group = [c for c in s.columns if c in CONFIG_COLUMNS and c not in LAYOUT_COLUMNS] + ["family"]
    base = (hit & (s["data_disks"] == s["baseline_disks"]).to_numpy()).groupby(
        [s[c].to_numpy() for c in group if c in s], dropna=False).transform("any") if "family" in s else hit
    return (hit | base).to_numpy()


def _scaling(df: pd.DataFrame, metric: str, unit: str) -> pd.DataFrame:
    """The scaling of each workload in `metric` ("auto": its own, `metrics.metric_parts`), named in `metric`."""
    parts = [_scaling_in(d, m, unit).assign(metric=m) for m, d in metric_parts(df, metric) if len(d)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _scaling_in(df: pd.DataFrame, metric: str, unit: str) -> pd.DataFrame:
    by = varying_columns(df, exclude=LAYOUT_COLUMNS + ("sweep_id",))
    by = by or [c for c in ("workload", "direction") if c in df.columns]
    df = df.assign(family=scaling_family(df))
    s = scaling(df, metric, by_family="family", by=by, unit=unit, config_cols=("layout", "width", "vdevs"))
    single, kind = {"iops": ("disk_model_iops", "rand"), "bw_bytes_s": ("disk_model_bw", "seq")}.get(
        metric, (None, None))
    if single in df.columns and df[single].notna().any() and "workload" in s.columns:
        fits = s["workload"].astype(str).str.contains(kind)     # random IOPS, sequential bandwidth
        s["disk_equivalents"] = (s["mean"] / float(df[single].median())).where(fits)
        s["disk_equivalents_per_vdev"] = s["disk_equivalents"] / s.get("vdevs", 1)
    bcol = block_column(df)
    if metric == "iops" and "disk_model_iops" in df.columns and {"width", "vdevs"} <= set(s.columns):
        blocks = s[bcol] if bcol in s.columns else np.full(len(s), df[bcol].median() if bcol in df else 131072)
        rand = s["workload"].astype(str).str.contains("randread") if "workload" in s else np.ones(len(s), bool)
        disk = float(df["disk_model_iops"].median())
        s["model_per_disk"] = [predicted_random_read_iops(r.layout, int(r.width), int(r.vdevs), disk, int(b))
                               / r.data_disks if ok and has_model(r.layout) else math.nan
                               for r, b, ok in zip(s.itertuples(), blocks, rand)]
    return s


def scaling_family(df: pd.DataFrame) -> pd.Series:
    """The family a configuration scales in: its layout, or "2x raidz1" for a second vdev count.

    Mirrors scale by adding vdevs, raidz by widening one: a sweep with raidz1 of 2-8 disks
    and two raidz1 vdevs of 2-4 disks holds two raidz1 families, each against its own
    smallest configuration (docs/methods.md §10); the smallest vdev count is unmarked.

    Examples
    --------
    >>> list(scaling_family(pd.DataFrame({"layout": ["raidz1", "raidz1", "mirror", "mirror"], "vdevs": [1, 2, 1, 2]})))
    ['raidz1', '2x raidz1', 'mirror', 'mirror']
    """
    if "vdevs" not in df.columns:
        return df["layout"].astype(str)
    fam = df["layout"].astype(str)
    for lay, g in df.groupby("layout"):
        counts = sorted(g["vdevs"].dropna().unique())
        if len(counts) > 1 and lay not in ("mirror", "stripe"):
            extra = g["vdevs"] != counts[0]
            fam[extra.index[extra]] = [f"{int(v)}x {lay}" for v in g.loc[extra, "vdevs"]]
    return fam


def _with_cells(s: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Status and describing flags per scaling row, and the planned configurations the table lacks (n 0)."""
    if cells.empty:
        return s
    on = [c for c in ("workload", "direction", "layout", "width", "vdevs", "data_disks", "volblocksize_bytes",
                      "recordsize_bytes") if c in s and c in cells]
    cells = cells if "described" in cells else cells.assign(described="")
    st = cells.groupby(on, dropna=False).agg(
        status=("status", "; ".join), described=("described", lambda v: "; ".join(t for t in v if t))).reset_index()
    out = s.merge(st, on=on, how="outer", indicator=True)
    missing = out["_merge"] == "right_only"
    out.loc[missing, "n"] = 0
    if "family" in out and "layout" in out:
        out["family"] = out["family"].fillna(scaling_family(out))
    fam = [c for c in ("workload", "direction", "family") if c in out]
    for col in ("baseline_disks", "baseline_mean"):
        if col in out:
            out[col] = out.groupby(fam, dropna=False)[col].transform(lambda v: v.fillna(v.dropna().iloc[0])
                                                                     if v.notna().any() else v)
    out["ideal_scaling"] = out.get("data_disks") / out.get("baseline_disks") if "baseline_disks" in out else np.nan
    return out.drop(columns="_merge").sort_values(on).reset_index(drop=True)


def space_check(df: pd.DataFrame, used_col: str = "referenced_bytes", ashift: int | None = None) -> pd.DataFrame:
    """Measured charge per logical byte, per layout × block size, against the raidz allocation model.

    The charge is `referenced` (the blocks the target holds), not `used`: a zvol created
    without -s also counts the unwritten part of its refreservation in `used`, which is a
    promise, not an allocation. `predicted_used_ratio` is what ZFS should charge per
    logical byte (`zfs_charged_bytes`); `space_efficiency` is logical over raw bytes allocated.
    """
    bcol = block_column(df)
    need = {"layout", "width", bcol, used_col, "logicalused_bytes"}
    if not need <= set(df.columns):
        raise ConfigError(f"space check needs columns {sorted(need - set(df.columns))}")
    d = df.assign(_ratio=df[used_col] / df["logicalused_bytes"])
    keys = ["layout", "width", bcol] + (["ashift"] if "ashift" in d.columns else [])
    out = d.groupby(keys)["_ratio"].agg(measured_used_ratio="mean", n="count").reset_index()
    rows = list(zip(out["layout"], out["width"].astype(int), out[bcol].astype(int),
                    out["ashift"].astype(int) if "ashift" in out else [ashift or 12] * len(out)))
    out["predicted_used_ratio"] = [zfs_charged_bytes(b, lay, w, a) / b if has_model(lay, "space") else math.nan
                                   for lay, w, b, a in rows]
    out["space_efficiency"] = [space_efficiency(lay, w, b, a) if has_model(lay, "space") else math.nan
                               for lay, w, b, a in rows]
    out["rel_error"] = out["measured_used_ratio"] / out["predicted_used_ratio"] - 1
    return out

