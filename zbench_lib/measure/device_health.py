"""Was every disk of the pool there, and at its pace, for the whole run?

Two truth checks (see truth.py for the three-valued verdict):
- `device_lost`: the pool's health read right after fio (`zpool status -P`, recorded as
  context["pool_health_after"]) is not ONLINE, or a device is REMOVED / FAULTED /
  UNAVAIL / OFFLINE. The run measured a degraded pool, not the layout it claims. On raw
  disks (no pool): a disk that was no longer a block device right after fio
  (context["raw_devices_after"]).
- `slow_device`: one data disk's service time (its busy time per request over the fio
  window: util / IOPS, from diskstats) is more than SLOW_RATIO times the median of the
  pool's data disks, and above a floor: SLOW_MIN_MS, or in the lab SLOW_RATIO times the
  disk model's own time per request (1 / its IOPS limit), whichever is higher. A failing drive that still answers slowly
  drags a whole raidz or stripe down; its peers are the yardstick. Not await: await
  includes queueing, and small random reads on raidz queue unevenly across healthy
  disks (on the example sweeps await flagged 32 healthy runs, service time none).
"""

from __future__ import annotations

import math

from zbench_lib.measure.judging import not_judged

SLOW_RATIO = 4.0
# A healthy disk's busy time per request varies several-fold with how its requests bunch
# (the lab's throttle serves bursts; on the example sweeps healthy raidz members ranged
# 1-43 ms beside peers at 1-10 ms). A failing drive takes 100 ms and more per request.
SLOW_MIN_MS = 50.0
MIN_REQUESTS = 20           # a disk that served fewer requests in the window is not compared


def per_device_service(disk, devices: list[str], t_start: float, t_end: float) -> dict:
    """device -> (busy ms per request, requests) over [t_start, t_end]; from diskstats rates."""
    if disk is None or disk.empty or not devices:
        return {}
    w = disk[disk["device"].isin(devices) & (disk["t_s"] > t_start) & (disk["t_s"] <= t_end + 1)]
    if w.empty:
        return {}
    x = w.pivot_table(index=["t_s", "device"], columns="metric", values="value").reset_index()
    out = {}
    for dev, g in x.groupby("device"):
        ios = (g.get("r_s", 0) + g.get("w_s", 0))
        n = float(ios.sum())
        busy_ms = float((g["util_pct"] * 10.0).sum()) if "util_pct" in g else math.nan   # % of 1 s -> ms
        out[dev] = (busy_ms / n if n else math.nan, n)
    return out


def _raw_device_lost(ctx) -> dict:
    """The raw surface has no pool health: whether every disk was still a block device after fio."""
    after = ctx.get("raw_devices_after")
    if not after:
        return not_judged("raw disks: their presence after the run not recorded")
    missing = list(after.get("missing") or [])
    return {"flag": bool(missing), "pool_state": None, "devices_not_online": ",".join(missing),
            "reason": f"raw disk(s) gone after the run: {', '.join(missing)}" if missing
            else f"all {len(after.get('devices') or [])} raw disks present after the run"}


def device_lost(fio_rows, c, ctx) -> dict:
    if ctx.get("surface") == "raw":
        return _raw_device_lost(ctx)
    health = ctx.get("pool_health_after")
    if not health:
        return not_judged("pool health after the run not recorded (a run from before zbench read it)")
    bad = [f"{path} {state}" for path, state in health.get("not_online", [])]
    lost = health.get("state") != "ONLINE" or bool(bad)
    return {"flag": lost, "pool_state": health.get("state"), "devices_not_online": ",".join(bad),
            "reason": (f"pool {health.get('state')} after the run" + (f": {', '.join(bad)}" if bad else ""))
            if lost else "pool ONLINE after the run, every device ONLINE"}


def slow_device(fio_rows, c, ctx) -> dict:
    each = {d: v for d, v in (ctx.get("dev_service_each") or {}).items() if v[1] >= MIN_REQUESTS}
    if len(each) < 2:
        return not_judged(f"{len(each)} data disk(s) with at least {MIN_REQUESTS} requests: no peer to compare")
    awaits = sorted(v[0] for v in each.values() if not math.isnan(v[0]))
    if len(awaits) < 2:
        return not_judged("per-disk service times not measured")
    median = awaits[len(awaits) // 2] if len(awaits) % 2 else (awaits[len(awaits) // 2 - 1] + awaits[len(awaits) // 2]) / 2
    slowest, (ms, _) = max(each.items(), key=lambda kv: -1 if math.isnan(kv[1][0]) else kv[1][0])
    ratio = ms / median if median > 0 else math.inf
    model_iops = ctx.get("disk_model_iops")
    floor = max(SLOW_MIN_MS, SLOW_RATIO * 1000.0 / model_iops) if model_iops else SLOW_MIN_MS
    slow = ratio > SLOW_RATIO and ms > floor
    out = {"slowest_device": slowest, "slowest_service_ms": ms, "median_service_ms": median, "ratio": ratio,
           "floor_ms": floor}
    return {**out, "flag": slow,
            "reason": f"{slowest}: busy {ms:.1f} ms per request, {ratio:.1f}x the data disks' median {median:.1f} ms"
                      + (f" (> {SLOW_RATIO:g}x and > {floor:.0f} ms)" if slow
                         else f" (flagged only above {SLOW_RATIO:g}x and {floor:.0f} ms)")}
