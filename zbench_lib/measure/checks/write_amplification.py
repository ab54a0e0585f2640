"""write_amplification: the disks wrote far fewer bytes than fio reported (writes held in RAM).

Only the low side is a flag (the run measured memory, not the disks, like cache_served for
reads); real amplification above WA_HIGH is reported, never flagged."""

from __future__ import annotations

import math

from zbench_lib.measure.compressibility import logical_per_physical
from zbench_lib.measure.judging import INVALIDATES, MIN_FIO_BYTES, Column, TruthCheck, div, fio_bytes, not_judged, num

# Below 0.5 the writes did not reach the disks within the window (the run measured RAM);
# above 10 is reported but not flagged: 4k writes into 128k records, or sync writes through
# the ZIL on a mirror, really cost that much, and that is a finding.
WA_LOW, WA_HIGH = 0.5, 10.0


def write_amplification(fio_rows, c, ctx) -> dict:
    f = fio_bytes(fio_rows, "write")
    dev, pool = num(c.get("dev_write_bytes")), num(c.get("pool_write_bytes"))
    wa, k = (div(dev, f) if f >= MIN_FIO_BYTES else math.nan), logical_per_physical(ctx)
    out = dict(value=wa, pool_value=div(pool, f) if f >= MIN_FIO_BYTES else math.nan, fio_write_bytes=f,
               dev_write_bytes=dev, pool_write_bytes=pool, low=WA_LOW, high_threshold=WA_HIGH,
               high=bool(wa > WA_HIGH), logical_per_physical=k)
    if math.isnan(wa):
        return not_judged("no device counters" if f >= MIN_FIO_BYTES else
                          "no writes: does not apply" if f == 0 else "too few writes to judge", **out)
    at = f" ({wa * k:.2f} of the data at {k:.2f}x)" if k > 1 else ""
    if wa * k < WA_LOW:            # declared compressible data reaches the disks as fio's bytes / k
        return {**out, "flag": True, "reason": f"{wa:.2f}{at}: writes did not reach the disks in the window"}
    return {**out, "flag": False, "reason": f"{wa:.2f}{at}" + (" (high, reported)" if wa > WA_HIGH else "")}


CHECK = TruthCheck("write_amplification", write_amplification, INVALIDATES,
                   "the disks wrote far fewer bytes than fio reported: "
                   "writes were absorbed by memory within the window",
                   rank=30, columns=(Column("write_amplification", "value"),
                                     Column("pool_write_amplification", "pool_value"),
                                     Column("write_amplification_high", "high", default=False)), columns_rank=10)
