"""emulation_bound: in the lab, the emulation (or fio itself), not the disk model, set the pace."""

from __future__ import annotations

import math

import numpy as np

from zbench_lib.measure.judging import INVALIDATES, TruthCheck, div, not_judged, num

# The busiest device below half of both modelled limits while the guest CPU is saturated
# means the emulation (or fio itself), not the disk model, set the pace.
EMU_LIMIT_SHARE = 0.5
CPU_BUSY_PCT = 85.0          # usr + sys + steal (steal: the hypervisor took the CPU)
CPU_IDLE_PCT = 10.0          # idle + iowait: iowait is idle time waiting for a disk, not CPU work


def emulation_bound(fio_rows, c, ctx) -> dict:
    iops_lim, bw_lim = ctx.disk_model_iops, ctx.disk_model_bw
    cpu = {k: num(c.get(f"cpu_{k}_pct")) for k in ("usr", "sys", "steal", "idle", "iowait")}
    busy = float(cpu["usr"] + cpu["sys"] + np.nan_to_num(cpu["steal"]))
    idle = float(cpu["idle"] + np.nan_to_num(cpu["iowait"]))
    iops_share, bw_share = div(c.get("dev_iops_busiest"), iops_lim), div(c.get("dev_bw_bytes_s_busiest"), bw_lim)
    out = dict(lab=bool(ctx.lab), disk_model_iops=iops_lim, disk_model_bw=bw_lim,
               dev_iops_busiest=num(c.get("dev_iops_busiest")),
               dev_bw_bytes_s_busiest=num(c.get("dev_bw_bytes_s_busiest")),
               iops_share=iops_share, bw_share=bw_share, cpu_busy_pct=busy, cpu_idle_pct=idle,
               limit_share=EMU_LIMIT_SHARE, cpu_busy_threshold=CPU_BUSY_PCT, cpu_idle_threshold=CPU_IDLE_PCT)
    if not ctx.lab:
        return not_judged("not a lab run: no emulation to be bound by", **out)
    if math.isnan(busy) or math.isnan(idle):
        return not_judged("no CPU counters", **out)
    saturated = busy >= CPU_BUSY_PCT or idle < CPU_IDLE_PCT
    if iops_lim is None and bw_lim is None:
        return {**out, "flag": bool(saturated),
                "reason": "unthrottled model, CPU " + ("saturated" if saturated else "not saturated")}
    if math.isnan(out["dev_iops_busiest"]):
        return not_judged("no device counters", **out)
    # A limit the model does not set can never be approached: it counts as "well below".
    below = all(s < EMU_LIMIT_SHARE or lim is None for s, lim in ((iops_share, iops_lim), (bw_share, bw_lim)))
    return {**out, "flag": bool(below and saturated),
            "reason": f"busiest disk at {iops_share:.0%} of IOPS and {bw_share:.0%} of bandwidth limits, "
                      f"CPU busy {busy:.0f}%, idle {idle:.0f}%"}


CHECK = TruthCheck("emulation_bound", emulation_bound, INVALIDATES,
                   "the lab's emulation, not the disk model, was the bottleneck", rank=70)
