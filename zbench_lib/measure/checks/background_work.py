"""background_work: a scrub, resilver or trim of the pool's ran at the start or during the window."""

from __future__ import annotations

import math

from zbench_lib.measure.judging import INVALIDATES, TruthCheck, not_judged, num


def background_work(fio_rows, c, ctx) -> dict:
    scan, trim = ctx.scan_at_start, ctx.trim_active
    seen = {k: num(c.get(f"pool_{k}_io_samples")) for k in ("scrub", "trim", "rebuild")}
    reasons = [f"{scan} at start"] * (scan not in (None, "", "none")) + ["trim active"] * bool(trim) + \
              [f"{k} I/O in {int(v)} samples" for k, v in seen.items() if v > 0]
    out = dict(scan_at_start=scan, trim_active=trim, **{f"{k}_io_samples": v for k, v in seen.items()})
    if ctx.no_pool:
        return not_judged("raw disks: no pool, so no scrub, resilver or trim of ZFS's: does not apply", **out)
    if reasons:
        return {**out, "flag": True, "reason": "; ".join(reasons)}
    # Judged when the scan state at start is known and the pool layer watched the window
    # (a scrub or trim starting mid-run shows in zpool iostat's latency columns).
    missing = ["scan state at start not recorded"] * (scan is None) + \
              ["no zpool iostat samples in the window"] * all(math.isnan(v) for v in seen.values())
    if missing:
        return not_judged("; ".join(missing), **out)
    return {**out, "flag": False, "reason": "none seen"}


CHECK = TruthCheck("background_work", background_work, INVALIDATES, "scrub, resilver or trim running at start",
                   rank=50)
