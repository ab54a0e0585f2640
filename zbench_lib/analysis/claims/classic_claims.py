"""The seeds' classic findings stated as claims and judged on one sweep (docs/methods.md §17).

Users cite three findings of the classic ZFS layout studies: raidz random reads give about
one disk per vdev while stripes and mirrors scale; a small volblocksize wins small random
writes; small blocks on raidz pay parity and padding. `classic_claims(df)` states each as a
claim and gives "holds", "does not hold", "partly holds" or "not judged" (with its reason)
from the sweep's admissible runs, with the evidence: the numbers and their intervals. A
verdict needs the interval on one side of a stated threshold: scaling efficiency (§10) for
the reads (`classic_reads`), the Holm-adjusted ratio tests of §1–§3 for the writes; the space
claim reads ZFS's accounting (one value per zvol) beside the raidz allocation model. A claim
the sweep holds no data for is left out.
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.analysis.claims.classic_base import (HOLDS, NJ, NOT, PARTLY, SMALL_WRITES, UNDECIDED, claim, excluded,
                                                     lab_caveat, label, matching, overall, pool_note,
                                                     random_rows)
from zbench_lib.analysis.claims.classic_reads import raidz_reads_claim
from zbench_lib.analysis.claims.wording import ci_text
from zbench_lib.analysis.data.flags import admissible_mask, select_admissible
from zbench_lib.analysis.stats.tables import block_column, compare_table, comparison_by, space_check
from zbench_lib.core.sizes import format_size
from zbench_lib.zfs import families
from zbench_lib.zfs.families.raidz import raidz_asize
from zbench_lib.zfs.models import zfs_charged_bytes

SMALL_BLOCK = 8192       # the space claim's small blocks: 4K and 8K
FAR_MORE = 1.25          # "far more raw space": a small block takes at least this much more per byte of data
MODEL_TOLERANCE = 0.02   # measured charge within this of the allocation model: "as the model predicts"
__all__ = ["classic_claims", "raidz_reads_claim", "raidz_space_claim", "small_volblocksize_claim"]


def classic_claims(df: pd.DataFrame, include_flagged: bool = False, hist: pd.DataFrame | None = None) -> list[dict]:
    """The classic claims this sweep can speak to, each with its verdict and evidence.

    Each dict: `id`, `claim` (the claim as the seeds state it), `verdict` ("holds", "does not
    hold", "partly holds" or "not judged"), `evidence` (the numbers with their intervals),
    `reason` (why not judged; empty otherwise) and `caveat` (what the lab or the design cannot
    say). Runs flagged by a truth check are left out unless `include_flagged`. `hist`, the
    store's latency_hist.parquet (`Sweep.histograms`), gives each pool's p99 from its bins
    (claim 2; without it, its runs' own fio p99). A claim the sweep has no rows for is left
    out; an empty list means none applies.
    """
    if df is None or df.empty or "layout" not in df:
        return []
    df = df.reset_index(drop=True)          # rows are matched to the admissible ones by index
    use = select_admissible(df, include_flagged)
    found = [c for c in (raidz_reads_claim(df, use), small_volblocksize_claim(df, use, hist),
                         raidz_space_claim(df, use)) if c is not None]
    if include_flagged and not admissible_mask(df).all():
        for c in found:
            c["caveat"] = (c["caveat"] + " Runs flagged by a truth check are included here: a verdict that rests "
                           "on them is not a finding (docs/methods.md §8).").strip()
    return found


# -- claim 2: small volblocksize wins small random writes --------------------------------------

def _side(cmp: pd.DataFrame, key: dict) -> pd.Series | None:
    if cmp is None or cmp.empty:
        return None
    m = cmp[matching(cmp, key)]
    return m.iloc[0] if len(m) else None


def _ratio(r, what) -> str:
    lvl = f"{1 - r['holm_alpha']:.1%}".replace(".0%", "%")
    return f"{what} {r['ratio']:.2f}x (Holm-adjusted {ci_text(r['adj_ci_low'], r['adj_ci_high'], 2, lvl)})"


def _write_state(iops, p99) -> str:
    """holds: more IOPS and lower p99, both significant after Holm; partly: one of the two."""
    good = [iops["verdict"] == "higher", p99["verdict"] == "lower"]
    bad = [iops["verdict"] in ("lower", "equivalent"), p99["verdict"] in ("higher", "equivalent")]
    if all(good):
        return HOLDS
    if any(good):
        return PARTLY
    return NOT if any(bad) else UNDECIDED


def _no_interval(iops, p99) -> str:
    """Why a group with two admissible units a side has no verdict: the comparison's own note (a pool that
    cannot support a p99, named), else a side pooling several configurations."""
    notes = [str(r["note"]).removeprefix("not judged: ") for r in (iops, p99)
             if r is not None and isinstance(r.get("note"), str) and r["note"]]
    return "; ".join(notes) if notes else "no interval (a side pools several configurations)"


def small_volblocksize_claim(df: pd.DataFrame, use: pd.DataFrame, hist: pd.DataFrame | None = None) -> dict | None:
    """Claim 2: the smallest against the largest block size, per layout (and other factors).

    IOPS and p99 latency ratios (smallest / largest) from `compare_table`, Holm-adjusted per
    workload × direction; the p99 a typical pool's (each pool's own from its bins in `hist`, or its
    runs' own fio p99; methods §18). "holds" only where the IOPS are significantly higher and the
    p99 significantly lower.
    """
    bcol = block_column(df)
    if bcol not in df or df[bcol].nunique() < 2:
        return None
    writes = random_rows(df, "randwrite")
    if "bs_bytes" in writes:
        writes = writes[writes["bs_bytes"].isin(SMALL_WRITES)]
    caveat = lab_caveat(writes)
    name = bcol[:-6]
    if writes.empty or writes[bcol].isna().all():
        return claim("small_volblocksize", NJ, reason="no 4K/8K random write rows", caveat=caveat)
    small, large = int(writes[bcol].min()), int(writes[bcol].max())
    if small == large:
        return claim("small_volblocksize", NJ, reason=f"the 4K/8K random writes ran at one {name} "
                     f"({format_size(small)})", caveat=caveat)
    two = writes[writes[bcol].isin([small, large])]
    by = [c for c in comparison_by(two, bcol)[0] if c in two]
    adm = two[two.index.isin(use.index)]
    cmp_iops = compare_table(adm, "iops", bcol, large, by=by) if len(adm) else None
    cmp_p99 = compare_table(adm, "lat_p99_ns", bcol, large, by=by, hist=hist) if len(adm) else None
    states, parts, why, units = [], [], [], []
    for key, g in (two.groupby(by, dropna=False) if by else [((), two)]):
        key = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        head = f"{label(key, by)}: " if by else ""
        i, p = _side(cmp_iops, key), _side(cmp_p99, key)
        if i is None or p is None or "not judged" in (i["verdict"], p["verdict"]):
            sides = [f"{format_size(b)}: {excluded(g[g[bcol] == b])}" for b in (small, large)
                     if g[g[bcol] == b].index.isin(use.index).sum() < 2]
            why.append(head + ("; ".join(sides) if sides else _no_interval(i, p)))
            states.append(NJ)
            continue
        state = _write_state(i, p)
        states.append(state)
        units.append(i.get("unit", "run"))
        parts.append(f"{head}{format_size(small)} against {format_size(large)} {name}: " + _ratio(i, "IOPS") + ", "
                     + _ratio(p, "p99 latency") + {HOLDS: "", PARTLY: " (one of the two)", NOT: " (contradicts the "
                                                   "claim)", UNDECIDED: " (inconclusive)"}[state])
    verdict = overall(states)
    evidence = ("; ".join(parts) + ". Holds only where the IOPS are higher and the p99 lower, both significant "
                f"after Holm correction per workload. The p99 compared is {cmp_p99['estimand'].iloc[0]}, the ratio "
                "of their geometric means (methods §18).") if parts else ""
    if why and parts:
        evidence += " Not judged: " + "; ".join(why) + "."
    reason = ""
    if verdict == NJ:
        reason = ("; ".join(why) if not parts else
                  "too uncertain: neither the IOPS nor the p99 ratio is significant after Holm correction")
        if not parts and why:
            reason = f"the {format_size(small)} or {format_size(large)} random writes lack 2 admissible runs: " + reason
    return claim("small_volblocksize", verdict, evidence, reason,
                 " ".join(x for x in (caveat, pool_note(units)) if x))


# -- claim 3: small blocks on raidz pay parity and padding ---------------------------------------

def _raw_per_byte(measured: float, block: int, layout: str, width: int, ashift: int) -> float:
    """ZFS's charge per logical byte turned into raw bytes: the vdev's deflate ratio undone."""
    return measured * raidz_asize(block, ashift, width, families.get(layout).parity) / zfs_charged_bytes(block, layout,
                                                                                                  width, ashift)


def raidz_space_claim(df: pd.DataFrame, use: pd.DataFrame) -> dict | None:
    """Claim 3: raw space per logical byte at the smallest block (8K or less) against the largest.

    From `space_check` (referenced / logicalused, per layout × width × block size); holds on a
    raidz vdev where the small block takes at least FAR_MORE times the raw space per byte of
    data that the large one takes. The allocation model's prediction is given beside it.
    """
    bcol = block_column(df)
    need = {"width", bcol, "referenced_bytes", "logicalused_bytes"}
    rz = df[df["layout"].astype(str).str.startswith("raidz")] if need <= set(df) else pd.DataFrame()
    rz = rz.dropna(subset=["referenced_bytes", "logicalused_bytes"]) if len(rz) else rz
    if rz.empty:
        return None
    ok = rz[rz.index.isin(use.index) & (rz["logicalused_bytes"] > 0)]
    if ok.empty:
        return claim("raidz_space", NJ, reason="the raidz rows with space accounting were all flagged: "
                     + excluded(rz))
    sp = space_check(ok.assign(ashift=ok["ashift"].fillna(12)) if "ashift" in ok else ok)
    keys = ["layout", "width"] + (["ashift"] if "ashift" in sp else [])
    states, parts, why = [], [], []
    for key, g in sp.groupby(keys):
        layout, width = str(key[0]), int(key[1])
        ashift = int(key[2]) if len(key) > 2 else 12
        small, large = g[g[bcol] <= SMALL_BLOCK], g[g[bcol] > SMALL_BLOCK]
        where = f"{layout} of {width}"
        if small.empty or large.empty:
            why.append((", ".join(format_size(int(b)) for b in sorted(g[bcol])), where))
            states.append(NJ)
            continue
        s, lg = small.sort_values(bcol).iloc[0], large.sort_values(bcol).iloc[-1]
        bs, bl = int(s[bcol]), int(lg[bcol])
        raw_s = _raw_per_byte(s["measured_used_ratio"], bs, layout, width, ashift)
        raw_l = _raw_per_byte(lg["measured_used_ratio"], bl, layout, width, ashift)
        extra = raw_s / raw_l
        state = HOLDS if extra >= FAR_MORE else NOT
        states.append(state)
        err = max(abs(s["rel_error"]), abs(lg["rel_error"]))
        model = (f"as the raidz allocation model predicts (within {err:.1%})" if err <= MODEL_TOLERANCE else
                 f"the allocation model predicts {s['predicted_used_ratio']:.2f}x and {lg['predicted_used_ratio']:.2f}x"
                 f" (measured off by up to {err:.1%})")
        parts.append(f"{where}: a {format_size(bs)} block takes {raw_s:.2f}x its size in raw space, a "
                     f"{format_size(bl)} block {raw_l:.2f}x, so {extra:.2f}x as much per byte of data (ZFS "
                     f"charges {s['measured_used_ratio']:.2f}x and {lg['measured_used_ratio']:.2f}x, "
                     f"referenced/logicalused), {model}" + ("" if state == HOLDS else " (below the threshold)"))
    verdict = overall(states)
    why = [f"{', '.join(w for h, w in why if h == have)} measured at {have} only"
           for have in dict.fromkeys(h for h, _ in why)]
    if why:
        why[-1] += " (the claim needs a block of 8K or less and a larger one)"
    evidence = ("; ".join(parts) + f". Holds where the small block takes at least {FAR_MORE:.2f}x the raw space "
                "per byte of data of the large one.") if parts else ""
    if why and parts:
        evidence += " Not judged: " + "; ".join(why) + "."
    return claim("raidz_space", verdict, evidence, "; ".join(why) if verdict == NJ else "",
                 "ZFS's accounting is one value per zvol or dataset, set by an allocation rule, not a sample: "
                 "there is no interval, and none is needed." if parts else "")
