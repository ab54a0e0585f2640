"""The spec's ``warmup`` key: an L2ARC warm-up declared, checked at load.

    warmup:
      l2arc: {until: 90%, max_s: 300}     # chunk_s: 10 (seconds of reading between arcstats reads)

Each target on a pool with cache devices is read, after its prefill and before its first
measured run, until the L2ARC holds ``until`` of min(target, cache devices) or stops growing or
``max_s`` passes (zfs/l2arc_warmup). Refused at load, one line each: bad values, and a sweep
where the warm-up could not fill the cache or the runs could not read what it filled:
- no cell has a cache device;
- primarycache metadata/none (the L2ARC is fed only from the ARC) or secondarycache
  metadata/none (data never goes to the L2ARC), as a target setting or a factor value;
- no prefill (a never-written zvol reads as holes, which the ARC does not cache);
- no workload reads;
- a read workload on a local dataset with O_DIRECT (fio's default here): from OpenZFS 2.3 such
  reads bypass the ARC, so they never look in the L2ARC the warm-up filled;
- writes measured before reads (reads_first false): a write run between the warm-up and a read
  run rewrites blocks the L2ARC held.
"""

from __future__ import annotations

import re

from zbench_lib.measure.workloads import by_name
from zbench_lib.sweeps.spec.values import fail, integer, mapping

MAX_WARMUP_S = 3600             # per target: an hour of reading is past any sane warm-up
MAX_CHUNK_S = 60
NO_FEED = {"primarycache": ("metadata", "none"), "secondarycache": ("metadata", "none")}
WHY = {"primarycache": "keeps data out of the ARC, and the L2ARC is fed only from the ARC",
       "secondarycache": "keeps data out of the L2ARC"}


def _until(v) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", v) if isinstance(v, str) else None
    if not m or not 0 < float(m.group(1)) <= 100:
        fail("warmup.l2arc.until", f"expected a percentage like '90%' in (0, 100], got {v!r}")
    return float(m.group(1)) / 100


def _check_feeds(target: dict, factors: dict) -> None:
    """Every cell crosses every cache value, so any value that starves the L2ARC meets a warmed pool."""
    for key, bad in NO_FEED.items():
        if target.get(key) in bad:
            fail(f"target.{key}", f"{target[key]!r} {WHY[key]}: the declared warmup.l2arc cannot warm it")
        for i, v in enumerate(factors.get(key, ())):
            if v in bad:
                fail(f"factors.{key}[{i}]", f"{v!r} {WHY[key]}: the declared warmup.l2arc cannot warm it")


def _check_reads(workloads, surface: str, target: dict, factors: dict, reads_first: bool) -> None:
    reads = [(i, w) for i, w in enumerate(workloads) if w.kind.reads]
    if not reads:
        readers = ", ".join(n for n, w in by_name().items() if w.reads)
        fail("warmup.l2arc", f"no workload reads ({readers}): nothing would read the warmed cache")
    local = surface == "dataset" and "local" in factors.get("access", [target.get("access", "local")])
    for i, w in reads:
        direct = w.overrides.get("direct", w.kind.defaults["direct"])
        if local and direct:
            fail(f"workloads[{i}].overrides.direct", f"{w.name} reads a dataset with O_DIRECT: from OpenZFS 2.3 "
                 "such reads bypass the ARC and never look in the L2ARC the warm-up fills; set direct: 0")
    if not reads_first and len(reads) < len(workloads):
        fail("reads_first", "a declared warmup.l2arc needs reads first: a write run between the warm-up and a "
                            "read run rewrites blocks the L2ARC held")


def parse_warmup(d, *, factors: dict, target: dict, surface: str, prefill: dict, workloads,
                 reads_first: bool) -> dict | None:
    """The ``warmup`` block, normalised ({'l2arc': {'until': 0.9, 'max_s': 300, 'chunk_s': 10}}), or None."""
    if d is None:
        return None
    mapping(d, "warmup", ("l2arc",), ("l2arc",))
    w = mapping(d["l2arc"], "warmup.l2arc", ("until", "max_s", "chunk_s"), ("until", "max_s"))
    until = _until(w["until"])
    max_s = integer(w["max_s"], "warmup.l2arc.max_s", 1, MAX_WARMUP_S)
    chunk_s = integer(w.get("chunk_s", 10), "warmup.l2arc.chunk_s", 1, MAX_CHUNK_S)
    if chunk_s > max_s:
        fail("warmup.l2arc.chunk_s", f"{chunk_s} s is longer than max_s ({max_s} s)")
    if not any(v > 0 for v in factors.get("cache", ())):
        fail("warmup.l2arc", "no cell has a cache device (factors.cache has no value above 0): nothing to warm")
    _check_feeds(target, factors)
    if prefill["policy"] == "none" or "none" in factors.get("fill", ()):
        fail("warmup.l2arc", "needs a prefill (prefill.policy once-per-target, no fill level 'none'): "
                             "a never-written target reads as holes, which the ARC does not cache")
    _check_reads(workloads, surface, target, factors, reads_first)
    return {"l2arc": {"until": until, "max_s": max_s, "chunk_s": chunk_s}}


def warmed_pool(pool) -> bool:
    """Whether a plan's pool (``planning.records.PlanPool``, a layer above: read by its fields' names)
    has cache devices, so its targets are warmed when a warm-up is declared."""
    return int((pool.layout or {}).get("cache", 0)) > 0


def warmup_estimate(spec, pools: list, targets: list) -> dict:
    """The warm-up's worst case for the plan's estimate: max_s for every target of a pool with
    cache devices (it stops earlier when reached or flat, but the estimate does not count on it).
    `pools`, `targets`: the plan's records (``planning.records``), read by their fields' names."""
    if not spec.warmup:
        return {}
    cached = {p.pool_id for p in pools if warmed_pool(p)}
    n = sum(t.pool_id in cached for t in targets)
    return {"l2arc_warmed_targets": n, "l2arc_warmup_max_s": float(n * spec.warmup["l2arc"]["max_s"])}


def describe_warmup(spec, estimates: dict) -> list[str]:
    """The dry run's line about the warm-up, when one is declared."""
    if not spec.warmup:
        return []
    w = spec.warmup["l2arc"]
    return [f"L2ARC warm-up: {estimates['l2arc_warmed_targets']} target(s) on pools with cache devices read "
            f"until the L2ARC holds {w['until'] * 100:g}% of min(target, cache), stops growing, or {w['max_s']} s "
            f"(chunks of {w['chunk_s']} s); the estimate counts {w['max_s']} s each, "
            f"{estimates['l2arc_warmup_max_s']:.0f} s in all"]
