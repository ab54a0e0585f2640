"""cache_served: a cold read that the devices did not serve was answered from memory (ARC)."""

from __future__ import annotations

import math

from zbench_lib.measure.compressibility import logical_per_physical
from zbench_lib.measure.judging import INVALIDATES, MIN_FIO_BYTES, Column, TruthCheck, div, fio_bytes, not_judged, num

# A cold read that reached the devices for less than half its bytes was mostly answered
# from memory; random reads smaller than the block read *more* (ratio > 1).
CACHE_DEV_RATIO = 0.5
# ... or more than half the demand reads were true ARC hits. The prefetcher turns a cold
# sequential read into demand hits although every byte came from disk, so this criterion
# only counts when the devices do not vouch for the bytes (unmeasured, or < 0.9 x fio).
CACHE_ARC_HIT_RATIO = 0.5
DEVICES_VOUCH_RATIO = 0.9


def cache_served(fio_rows, c, ctx) -> dict:
    fio_r, dev_r = fio_bytes(fio_rows, "read"), num(c.get("dev_read_bytes"))
    ratio, arc, k = div(dev_r, fio_r), num(c.get("arc_demand_data_hit_ratio")), logical_per_physical(ctx)
    out = dict(cache=ctx.cache, fio_read_bytes=fio_r, dev_read_bytes=dev_r, ratio=ratio,
               arc_hit_ratio=num(c.get("arc_hit_ratio")), arc_demand_data_hit_ratio=arc,
               threshold=CACHE_DEV_RATIO, arc_threshold=CACHE_ARC_HIT_RATIO, logical_per_physical=k)
    if ctx.cache != "cold":
        return not_judged(f"cache declared {ctx.cache}; a cold-read check does not apply" if ctx.cache
                          else "cache state not declared", **out)
    if fio_r == 0:
        return not_judged("no reads: does not apply", **out)
    reasons = []
    by_devices = fio_r >= MIN_FIO_BYTES and not math.isnan(ratio)
    if by_devices and ratio * k < CACHE_DEV_RATIO:      # declared compressible data: fio's bytes / k on disk
        at = f" ({ratio * k:.2f} of the data at {k:.2f}x)" if k > 1 else ""
        reasons.append(f"devices read {ratio:.2f} x fio's bytes{at}")
    if arc > CACHE_ARC_HIT_RATIO and not ratio * k >= DEVICES_VOUCH_RATIO:  # NaN ratio: no vouching
        reasons.append(f"ARC demand hit ratio {arc:.2f}")
    if not reasons and not by_devices and math.isnan(arc):
        return not_judged("no device or ARC counters" if fio_r >= MIN_FIO_BYTES else
                          "too few reads for the devices to vouch, and no ARC counters", **out)
    return {**out, "flag": bool(reasons), "reason": "; ".join(reasons) or "reads reached the disks"}


CHECK = TruthCheck("cache_served", cache_served, INVALIDATES, "a disk-read test was served from ARC", rank=10,
                   columns=(Column("dev_to_fio_read_ratio", "ratio"), Column("arc_hit_ratio", "arc_hit_ratio"),
                            Column("arc_demand_data_hit_ratio", "arc_demand_data_hit_ratio")), columns_rank=30)
