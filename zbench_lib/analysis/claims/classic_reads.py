"""Claim 1: raidz random reads give about one disk per vdev, stripes and mirrors scale (methods §17).

Each layout family (a raidz layout at one vdev count, its width varying; an n-way mirror, its
vdev count varying; a stripe) is scaled against its smallest configuration (`stats.scaling`,
§10) and judged at its largest configuration with 2 admissible runs. The claim needs every
family's efficiency interval on its side of a threshold: raidz all of it below FLAT, stripe
and mirror all of it at or above SCALES; the intervals are Bonferroni-adjusted over the
families, so that a contradiction found in any one of them keeps a 5% error rate.
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.analysis.claims.wording import ci_text
from zbench_lib.analysis.claims.classic_base import (ALPHA, FLAT, HOLDS, NJ, NOT, SCALES, UNDECIDED, claim, excluded,
                                                     lab_caveat, label, matching, overall, pool_note,
                                                     random_rows)
from zbench_lib.analysis.stats.stats import ratio_ci_from_moments, scaling, summary
from zbench_lib.analysis.data.columns import LAYOUT_COLUMNS
from zbench_lib.analysis.data.sweep_data import varying_columns
from zbench_lib.analysis.stats.tables import block_column
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size
from zbench_lib.zfs import families


def _family_spec(layout: str):
    """(columns held within a family, columns telling its configurations apart)."""
    if layout.startswith("raidz"):
        return ["vdevs"], ("width",)         # one vdev count, the width varies
    if layout == "mirror":
        return ["width"], ("vdevs",)         # n-way mirrors, the vdev count varies
    return ([], ("width", "vdevs")) if layout == "stripe" else (None, None)


def _span(layout, r) -> str:
    """'raidz1 (1 vdev) from 2 to 6 disks wide', 'stripe from 1 to 6 disks', '2-way mirror from 1 to 3 vdevs'."""
    d0, d1 = int(r["baseline_disks"]), int(r["data_disks"])
    if layout.startswith("raidz"):
        v, p = int(r["vdevs"]), families.get(layout).parity
        return f"{layout} ({v} vdev{'s' if v > 1 else ''}) from {d0 // v + p} to {d1 // v + p} disks wide"
    if layout == "mirror":
        return f"{int(r['width'])}-way mirror from {d0} to {d1} vdevs"
    return f"{layout} from {d0} to {d1} disks"


def _read_families(reads: pd.DataFrame, adm: pd.DataFrame, groups: list):
    """Per layout family with two or more disk counts: its largest judged configuration, and what was not judged."""
    judged, why, seen = [], [], set()
    for layout in sorted(reads["layout"].dropna().astype(str).unique()):
        hold, cfg = _family_spec(layout)
        if hold is None:
            continue
        keys, rows = groups + hold, reads[reads["layout"] == layout]
        for key, fam in (rows.groupby(keys, dropna=False) if keys else [((), rows)]):
            if fam["data_disks"].nunique() < 2:
                continue
            seen.add(layout)
            key = key if isinstance(key, tuple) else (key,)
            a = adm[(adm["layout"] == layout) & matching(adm, dict(zip(keys, key)))]
            s = pd.DataFrame()
            if a["data_disks"].nunique() >= 2:
                try:
                    s = scaling(a, "iops", by=keys or None, config_cols=cfg)
                except ConfigError:      # two configurations share the smallest disk count
                    s = pd.DataFrame()
            ok = s[(s["n"] >= 2) & (s["baseline_n"] >= 2) & (s["data_disks"] > s["baseline_disks"])] if len(s) else s
            top = ok.sort_values("data_disks").iloc[-1] if len(ok) else None
            if top is not None:
                judged.append((layout, top))
            head = f"{label(fam.iloc[0], groups)}: " if groups else ""
            lost = [f"at {int(d)} data disks {excluded(g)}" for d, g in fam.groupby("data_disks")
                    if top is None or (d > top["data_disks"] and g.index.isin(a.index).sum() < 2)]
            if lost:
                why.append(f"{head}{layout} " + "; ".join(lost))
    return judged, why, seen


def _disk_equivalents(reads: pd.DataFrame, adm: pd.DataFrame) -> str:
    """Random-read IOPS per raidz vdev in single disks of the disk model, per width and block size."""
    if "disk_model_iops" not in adm or adm["disk_model_iops"].isna().all():
        return ""
    r = adm[adm["layout"].astype(str).str.startswith("raidz")]
    bcol = block_column(r)
    keys = ["layout", "width", "vdevs"] + ([bcol] if bcol in r else [])
    if r.empty:
        return ""
    s = summary(r, "iops", keys)
    disk = float(adm["disk_model_iops"].median())
    parts = [f"{x.layout} of {int(x.width)}" + (f" at {format_size(int(getattr(x, bcol)))}" if bcol in keys else "")
             + f": {x.mean / disk / x.vdevs:.1f}" for x in s.itertuples()]
    return (f"Random-read IOPS per raidz vdev in single disks of the disk model ({disk:.0f} IOPS), at one width "
            "each (how much a vdev reads, not how that changes with its width): " + "; ".join(parts) + ".")


def _judge(layout: str, r, conf: float):
    """(state, efficiency CI low, high) of one family at the Bonferroni level `conf`."""
    _, lo, hi, _ = ratio_ci_from_moments(r["mean"], r["std"], r["n"], r["baseline_mean"], r["baseline_std"],
                                         r["baseline_n"], conf)
    lo, hi = float(lo) / r["ideal_scaling"], float(hi) / r["ideal_scaling"]
    if layout.startswith("raidz"):
        return (HOLDS if hi < FLAT else NOT if lo >= SCALES else UNDECIDED), lo, hi
    return (HOLDS if lo >= SCALES else NOT if hi < FLAT else UNDECIDED), lo, hi


def _missing(reads: pd.DataFrame, raidz: bool, seen: set) -> str:
    """Why a half of the claim (raidz, or stripe and mirror) has no judged family."""
    what = "raidz" if raidz else "stripe or mirror"
    lays = {x for x in set(reads["layout"].astype(str)) if x.startswith("raidz") == raidz
            and (raidz or x in ("stripe", "mirror"))}
    if not lays:
        return f"this sweep has no {what} layout"
    if lays & seen:
        return f"no {what} disk count beyond the smallest has 2 admissible runs"
    if raidz and any(reads[reads["layout"] == x]["data_disks"].nunique() > 1 for x in lays):
        return "this sweep varies no raidz width at a fixed number of vdevs"
    return f"this sweep varies no disk count within {what}"


def raidz_reads_claim(df: pd.DataFrame, use: pd.DataFrame) -> dict | None:
    """Claim 1 from the scaling efficiency of each layout family (§10), Bonferroni over the families.

    `df` holds every row (for the reasons), `use` the rows analysed (admissible ones). None
    when the sweep has no random reads, or neither a raidz layout nor a disk count that varies.
    """
    reads = random_rows(df, "randread")
    if reads.empty or not {"layout", "data_disks", "iops"} <= set(reads):
        return None
    raidz = {x for x in set(reads["layout"].astype(str)) if x.startswith("raidz")}
    if not raidz and not (reads.groupby("layout")["data_disks"].nunique() > 1).any():
        return None
    adm = random_rows(use, "randread").dropna(subset=["iops"])
    groups = varying_columns(reads, exclude=LAYOUT_COLUMNS + ("sweep_id",))
    judged, why, seen = _read_families(reads, adm, groups)
    lab = lab_caveat(reads)
    details = " (" + "; ".join(why) + ")" if why else ""
    if not judged:
        both = [_missing(reads, h, seen) for h in (True, False)]
        flat = "this sweep varies no disk count within "
        reason = (flat + "raidz, stripe or mirror" if all(m.startswith(flat) for m in both)
                  else "; ".join(both)) + details
        return claim("raidz_reads", NJ, _disk_equivalents(reads, adm), reason, lab)
    k = len(judged)
    conf = 1 - ALPHA / k
    level = f"{conf:.1%}".replace(".0%", "%")
    disk = float(adm["disk_model_iops"].median()) if "disk_model_iops" in adm and adm["disk_model_iops"].notna().any() \
        else None
    parts, halves = [], {True: [], False: []}
    for layout, r in judged:
        state, lo, hi = _judge(layout, r, conf)
        is_raidz = layout.startswith("raidz")
        halves[is_raidz].append(state)
        head = f"{label(r, groups)}: " if groups else ""
        text = (f"{head}{_span(layout, r)}: IOPS {r['scaling']:.2f}x for {r['ideal_scaling']:.2f}x the data disks, "
                f"efficiency {r['efficiency']:.2f} (Bonferroni-adjusted {ci_text(lo, hi, 2, level)})")
        if is_raidz and disk:
            text += f", {r['mean'] / disk / r['vdevs']:.1f} disks' worth per vdev"
        parts.append(text + {HOLDS: "", NOT: " (contradicts the claim)", UNDECIDED: " (undecided)"}[state])
    verdict = overall([overall(halves[h]) if halves[h] else NJ for h in (True, False)])
    evidence = ("; ".join(parts) + f". Thresholds: raidz holds with its whole efficiency interval below {FLAT:.2f}, "
                f"stripe and mirror with all of it at or above {SCALES:.2f} ({level} intervals, Bonferroni over {k} "
                f"famil{'ies' if k > 1 else 'y'}).")
    missing = [_missing(reads, h, seen) for h in (True, False) if not halves[h]]
    evidence += "".join(f" Not judged: {m}." for m in missing) + (f" Not judged: {'; '.join(why)}." if why else "")
    unsure = ["too uncertain: an efficiency interval straddles its threshold"] \
        if UNDECIDED in halves[True] + halves[False] else []
    reason = "; ".join(unsure + missing) + details if verdict == NJ else ""
    blocks = sorted(set(adm.loc[adm["layout"].astype(str).str.startswith("raidz"), block_column(adm)].dropna())) \
        if block_column(adm) in adm and halves[True] else []
    caveat = (f"raidz was read at {', '.join(format_size(int(b)) for b in blocks)} blocks; a block of one sector "
              "lives on one disk, so small-block raidz reads scale with the width instead (docs/methods.md §11). "
              if blocks else "") + " ".join(x for x in (lab, pool_note(r["unit"] for _, r in judged)) if x)
    return claim("raidz_reads", verdict, evidence, reason, caveat)
