"""What the classic-claims checks share: the claims' wording, the verdicts and how parts combine.

docs/methods.md §17. `classic_claims.classic_claims` is the entry point; the random-read
claim lives in `classic_reads`, the write and space claims in `classic_claims`.
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.analysis.data.columns import MECH_PREFIX
from zbench_lib.analysis.data.flags import admissible_mask, raised_by_kind, replacement_mask
from zbench_lib.analysis.data.replication import ONE_POOL_NOTE
from zbench_lib.measure.judging import INVALIDATES
from zbench_lib.measure.workloads import is_random
from zbench_lib.core.sizes import format_size

ALPHA = 0.05
FLAT = 0.50        # raidz "about one disk per vdev, whatever the width": whole efficiency CI below this
SCALES = 0.75      # stripe/mirror "scale with the disks": whole efficiency CI at or above this
SMALL_WRITES = (4096, 8192)      # the claim's random-write sizes
HOLDS, NOT, PARTLY, NJ, UNDECIDED = "holds", "does not hold", "partly holds", "not judged", "undecided"
CLAIMS = {
    "raidz_reads": "raidz random reads deliver about one disk's IOPS per vdev, whatever the vdev's width, "
                   "while stripe and mirror random reads scale with the number of disks.",
    "small_volblocksize": "A small volblocksize wins 4k/8k random writes on zvols: more IOPS and a lower tail "
                          "latency (p99) than a large volblocksize.",
    "raidz_space": "Parity and padding cost space at small blocks on raidz: a 4K or 8K block takes far more "
                   "raw space than its data (three times its size on raidz2 of 6).",
}


def overall(states) -> str:
    """One verdict from the verdicts of a claim's parts (layouts, halves).

    All hold: holds. Some part holds (or partly holds): partly holds. Else any part that
    does not hold: does not hold. Else (undecided or not judged only): not judged.

    Examples
    --------
    >>> overall(["holds", "not judged"]), overall(["does not hold", "undecided"]), overall(["undecided"])
    ('partly holds', 'does not hold', 'not judged')
    """
    states = list(states)
    if states and all(s == HOLDS for s in states):
        return HOLDS
    if any(s in (HOLDS, PARTLY) for s in states):
        return PARTLY
    return NOT if NOT in states else NJ


def _names(df: pd.DataFrame) -> pd.Series:
    wl = df["workload"].astype(str) if "workload" in df else pd.Series("", index=df.index)
    return df["template"].astype(object).where(df["template"].notna(), wl).astype(str) if "template" in df else wl


def random_rows(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Rows of the random-read ("randread") or random-write ("randwrite", sync or not) workloads, as
    their templates' records say (measure/workloads/)."""
    direction = "read" if kind == "randread" else "write"
    mask = _names(df).map(lambda name: is_random(name, direction)).astype(bool)
    if "direction" in df:
        mask &= df["direction"].astype(str) == direction
    return df[mask]


def matching(df: pd.DataFrame, key: dict) -> pd.Series:
    """Rows of `df` whose columns equal `key`'s values, a missing value matching a missing value."""
    mask = pd.Series(True, index=df.index)
    for c, v in key.items():
        mask &= df[c].isna() if pd.isna(v) else df[c].eq(v).fillna(False).astype(bool)
    return mask


def excluded(rows: pd.DataFrame) -> str:
    """'k of n runs admissible (host_contention 3, ...)' for the first attempts of one configuration,
    with the invalidating flags that excluded the others."""
    if rows.empty:
        return "no run"
    rows = rows[~replacement_mask(rows)]
    ok = int(admissible_mask(rows).sum())
    hit = raised_by_kind(rows, INVALIDATES).sum()
    why = ", ".join(f"{c[5:]} {int(n)}" for c, n in hit.sort_values(ascending=False).items() if n)
    return f"{ok} of {len(rows)} runs admissible" + (f" ({why})" if why else "")


def label(r, cols) -> str:
    """'randwrite, 16K volblocksize, no log': a group's values, a missing one as 'no <column>'."""
    return ", ".join(f"no {c}" if pd.isna(r[c]) else f"{format_size(int(r[c]))} {c[:-6]}" if c.endswith("_bytes")
                     else str(r[c]) for c in cols if c != "direction")


THROTTLE = "QEMU throttles with a constant service time"
# What a mechanism model (hosts/mech_models.py, served by nbdkit) models, by its kind in the name: a hard
# disk's mechanics, an SSD's, or nothing (mech:null, the NBD path's own cost).
MECHANISMS = (("hdd", "seek, rotation, command queueing and a write cache"),
              ("null", "no delay (the NBD path's own cost)"),
              ("", "flash channels, a latency tail and a write cliff"))


def _mechanism(model: str) -> str:
    """'mech:hdd-7200' -> 'a mechanism model served by nbdkit, with seek, rotation, ...'."""
    what = next(w for kind, w in MECHANISMS if model.removeprefix(MECH_PREFIX).startswith(kind))
    return f"a mechanism model served by nbdkit, with {what}"


def lab_caveat(df: pd.DataFrame) -> str:
    """How the lab's disks were modelled, and so what a claim on them speaks for. A throttle has a constant
    service time (the layout's arithmetic, no seeks); a mechanism model has seeks and a cache of its own,
    but is still a model of a drive, not one."""
    models = sorted(set(df["disk_model"].dropna().astype(str))) if "disk_model" in df else []
    if not models:
        return ""
    mech = [m for m in models if m.startswith(MECH_PREFIX)]
    throttles = [m for m in models if m not in mech]
    parts = [f"{', '.join(throttles)}: {THROTTLE}"] if throttles else []
    parts += [f"{m}: {_mechanism(m)}" for m in mech]
    speaks = "the layout on the modelled drive, not for a particular real drive" if mech else \
        "the layout's arithmetic, not for a real drive's seeks"
    return f"The lab's disks are modelled ({'; '.join(parts)}), so this speaks for {speaks}."


def pool_note(units) -> str:
    return ONE_POOL_NOTE[0].upper() + ONE_POOL_NOTE[1:] + "." if "run" in set(units) else ""


def claim(key, verdict, evidence="", reason="", caveat="") -> dict:
    return dict(id=key, claim=CLAIMS[key], verdict=verdict, evidence=evidence.strip(),
                reason=reason.strip() if verdict == NJ else "", caveat=caveat.strip())
