"""no_device_io: a layer (the disks, the pool) that moved far fewer bytes than fio reported.

Each layer x direction fio used is a comparison of its own: quiet (True), moved (False), not
judged (None: unmeasured, or too few bytes), or does not apply (warm reads)."""

from __future__ import annotations

import math

from zbench_lib.measure.compressibility import logical_per_physical
from zbench_lib.measure.judging import INVALIDATES, MIN_FIO_BYTES, Column, TruthCheck, div, fio_bytes, not_judged, num

# A layer that moved less than 10% of fio's bytes was "suspiciously quiet" (seed rule 7).
# Generous on purpose: dirty data still in RAM at the window's end, and compression,
# legitimately shrink a layer's bytes, but not tenfold.
QUIET_RATIO = 0.10


def no_device_io(fio_rows, c, ctx) -> dict:
    k = logical_per_physical(ctx)          # declared compressible data: fio's bytes / k below the compressor
    out = dict(threshold=QUIET_RATIO, min_fio_bytes=MIN_FIO_BYTES, logical_per_physical=k)
    verdicts, why = {}, {}
    for d in ("read", "write"):
        f = out[f"fio_{d}_bytes"] = fio_bytes(fio_rows, d)
        for layer, key in (("disk", f"dev_{d}_bytes"),) + ((("zpool", f"pool_{d}_bytes"),) if not ctx.no_pool else ()):
            v = out[key] = num(c.get(key))
            out[f"{key.split('_')[0]}_{d}_ratio"] = div(v, f)
            name = f"{layer}:{d}"
            if f == 0 or (d == "read" and ctx.cache == "warm"):
                continue        # fio did not go that way, or its reads are expected from ARC
            verdicts[name] = None if f < MIN_FIO_BYTES or math.isnan(v) else bool(v * k < QUIET_RATIO * f)
            why[name] = "too few bytes to compare" if f < MIN_FIO_BYTES else "unmeasured" if math.isnan(v) else ""
    quiet = [k for k, v in verdicts.items() if v]
    if not fio_rows or not any(r.get("io_bytes") for r in fio_rows):
        quiet.insert(0, "fio")
    out.update(quiet=quiet, unmeasured=[k for k, w in why.items() if w == "unmeasured"], comparisons=verdicts)
    if quiet:
        return {**out, "flag": True, "reason": "suspiciously quiet: " + ", ".join(quiet)}
    if not verdicts:
        return not_judged("reads expected from ARC (cache declared warm): does not apply", **out)
    unjudged = [f"{k} {why[k]}" for k, v in verdicts.items() if v is None]
    if unjudged:
        return not_judged(", ".join(unjudged), **out)
    return {**out, "flag": False, "reason": "every layer moved"}


CHECK = TruthCheck("no_device_io", no_device_io, INVALIDATES,
                   "fio, pool and device byte counts disagree (a layer was suspiciously quiet)", rank=20,
                   columns=(Column("quiet_layers", "quiet", default=[], joined=True),), columns_rank=60)
