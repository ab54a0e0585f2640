"""Was every disk of the pool there, and at its pace, for the whole run?

Two truth checks (see truth.py for the three-valued verdict; their records are in checks/):
- `device_lost`: the pool's health read right after fio (`zpool status -P`, recorded as the
  run context's `pool_health_after`) is not ONLINE, or a device is REMOVED / FAULTED /
  UNAVAIL / OFFLINE. The run measured a degraded pool, not the layout it claims. On raw
  disks (no pool): a disk that was no longer a block device right after fio
  (the run context's `raw_devices_after`).
- `slow_device`: one data disk's service time (its busy time per request, util / IOPS from
  diskstats, in the middle of its active time: the median of the samples, each weighted by the
  time it covers, so a disk slow for most of the window is slow whatever it did before) is more
  than SLOW_RATIO times the median of the other data disks, and above a floor: SLOW_MIN_MS, or
  in the lab SLOW_RATIO times the disk model's own time for the disk's mean request (1 / its
  IOPS limit, or the request's bytes at the model's bandwidth), whichever is higher. A failing
  drive that still answers slowly drags a whole raidz or stripe down; its peers are the yardstick. Not await: await
  includes queueing, and small random reads on raidz queue unevenly across healthy
  disks (on the example sweeps await flagged 32 healthy runs, service time none).
  A disk is compared when it served MIN_REQUESTS in the window or was busy MIN_BUSY_MS:
  a slow disk serves few requests because it is slow, and leaving it out (as until issue
  34) compared only its healthy peers and missed it.
"""

from __future__ import annotations

import math

import numpy as np

from zbench_lib.measure.judging import not_judged

SLOW_RATIO = 4.0
# A healthy disk's busy time per request varies several-fold with how its requests bunch
# (the lab's throttle serves bursts; on the example sweeps healthy raidz members ranged
# 1-43 ms beside peers at 1-10 ms). A failing drive takes 100 ms and more per request.
SLOW_MIN_MS = 50.0
MIN_REQUESTS = 20           # a disk that served fewer requests in the window is not compared...
# ...unless it was busy this long: a slow disk serves few requests *because* it is slow (a disk
# slowed to 5 IOPS served 9-10 requests of a 6 s window, busy all of it: issue 34). Busy 1 s over
# fewer than MIN_REQUESTS is already above SLOW_MIN_MS per request, so no healthy idle disk enters.
MIN_BUSY_MS = 1000.0


def _held_seconds(stamps, t_start: float, t_end: float) -> dict:
    """stamp -> seconds of [t_start, t_end] that its sample's rates held.

    A sample's rates hold over the interval since the stamp before it. The sampler is not
    always on time (a TXG stalled behind a slow disk delayed its reads by 3 s): rates are
    weighted by the time they held, never counted as one second each.
    """
    stamps = np.sort(np.unique(stamps))
    held = np.clip(np.minimum(stamps[1:], t_end) - np.maximum(stamps[:-1], t_start), 0.0, None)
    return dict(zip(stamps[1:], held))


def per_device_service(disk, devices: list[str], t_start: float, t_end: float) -> dict:
    """device -> (busy ms per request, requests, busy ms, bytes) over [t_start, t_end]; from diskstats.

    Busy ms per request is the median over the disk's active time (`_median_service`), inf for a
    disk busy without completing anything (hung).
    """
    if disk is None or disk.empty or not devices:
        return {}
    held = _held_seconds(disk["t_s"].to_numpy(), t_start, t_end)
    w = disk[disk["device"].isin(devices) & (disk["t_s"].map(held).fillna(0.0) > 0)]
    if w.empty:
        return {}
    x = w.pivot_table(index=["t_s", "device"], columns="metric", values="value").reset_index()
    x["held_s"] = x["t_s"].map(held)
    out = {}
    for dev, g in x.groupby("device"):
        ios = (g.get("r_s", 0) + g.get("w_s", 0)) * g["held_s"]
        busy = g["util_pct"] * 10.0 * g["held_s"] if "util_pct" in g else ios * math.nan
        n, busy_ms = float(ios.sum()), float(busy.sum())
        nbytes = float(((g.get("read_bytes_s", 0) + g.get("write_bytes_s", 0)) * g["held_s"]).sum())
        out[dev] = (_median_service(ios.to_numpy(), busy.to_numpy(), g["held_s"].to_numpy()), n, busy_ms, nbytes)
    return out


def _median_service(ios: np.ndarray, busy_ms: np.ndarray, held_s: np.ndarray) -> float:
    """The disk's busy ms per request in the middle of its active time: the time-weighted median
    of each sample's busy time per request, over the samples in which it did anything.

    Not the window's total busy time over its total requests: a disk slowed 1 s into an 18 s
    window served hundreds of fast requests in that second, and they diluted 17 s at 200 ms per
    request to 42 ms, under the floor (issue 34's busy CI). The median says what the disk was for
    most of its active time; a disk slow for less than half of it is not called slow.
    """
    active = (ios > 0) | (busy_ms > 0)
    if not active.any() or np.isnan(busy_ms).all():
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(ios[active] > 0, busy_ms[active] / ios[active], math.inf)   # busy, nothing done: hung
    w = held_s[active]
    order = np.argsort(per, kind="stable")
    cum = np.cumsum(w[order])
    return float(per[order][np.searchsorted(cum, cum[-1] / 2.0)])


def _raw_device_lost(ctx) -> dict:
    """The raw surface has no pool health: whether every disk was still a block device after fio."""
    after = ctx.raw_devices_after
    if not after:
        return not_judged("raw disks: their presence after the run not recorded")
    missing = list(after.get("missing") or [])
    return {"flag": bool(missing), "pool_state": None, "devices_not_online": ",".join(missing),
            "reason": f"raw disk(s) gone after the run: {', '.join(missing)}" if missing
            else f"all {len(after.get('devices') or [])} raw disks present after the run"}


def device_lost(fio_rows, c, ctx) -> dict:
    if ctx.no_pool:
        return _raw_device_lost(ctx)
    health = ctx.pool_health_after
    if not health:
        return not_judged("pool health after the run not recorded (a run from before zbench read it)")
    bad = [f"{path} {state}" for path, state in health.get("not_online", [])]
    lost = health.get("state") != "ONLINE" or bool(bad)
    return {"flag": lost, "pool_state": health.get("state"), "devices_not_online": ",".join(bad),
            "reason": (f"pool {health.get('state')} after the run" + (f": {', '.join(bad)}" if bad else ""))
            if lost else "pool ONLINE after the run, every device ONLINE"}


def _compared(each: dict) -> dict:
    """The disks whose service time can be read: enough requests, or busy long enough."""
    return {d: v for d, v in each.items()
            if not math.isnan(v[0]) and (v[1] >= MIN_REQUESTS or (len(v) > 2 and v[2] >= MIN_BUSY_MS))}


def _floor_ms(ctx, served: tuple) -> float:
    """How slow a request must be to count: SLOW_MIN_MS, or in the lab SLOW_RATIO times what the
    disk model allows for the slowest disk's mean request (1 / IOPS, or its bytes at the model's
    bandwidth: a 1 MiB read of a 12 MiB/s disk takes 83 ms on a healthy disk)."""
    iops, bw = ctx.disk_model_iops, ctx.disk_model_bw
    model_ms = 1000.0 / iops if iops else 0.0
    if bw and len(served) > 3 and served[1] > 0:
        model_ms = max(model_ms, 1000.0 * served[3] / served[1] / bw)
    return max(SLOW_MIN_MS, SLOW_RATIO * model_ms)


def slow_device(fio_rows, c, ctx) -> dict:
    each = _compared(ctx.dev_service_each or {})
    if len(each) < 2:
        busy_door = any(v[1] < MIN_REQUESTS for v in each.values())
        return not_judged(f"{len(each)} data disk(s) with at least {MIN_REQUESTS} requests"
                          + (f" or {MIN_BUSY_MS / 1000:g} s busy" if busy_door else "") + ": no peer to compare")
    slowest, served = max(each.items(), key=lambda kv: kv[1][0])
    ms = served[0]
    # The yardstick is the slowest disk's peers: with the slow disk in it, the median of a
    # two-disk mirror would be half the slow disk's own time and never a quarter of it.
    peers = sorted(v[0] for d, v in each.items() if d != slowest)
    median = float(np.median(peers))
    ratio = ms / median if median > 0 else math.inf
    floor = _floor_ms(ctx, served)
    slow = ratio > SLOW_RATIO and ms > floor
    out = {"slowest_device": slowest, "slowest_service_ms": ms, "median_service_ms": median, "ratio": ratio,
           "floor_ms": floor}
    return {**out, "flag": slow,
            "reason": f"{slowest}: busy {ms:.1f} ms per request, {ratio:.1f}x its peers' median {median:.1f} ms"
                      + (f" (> {SLOW_RATIO:g}x and > {floor:.0f} ms)" if slow
                         else f" (flagged only above {SLOW_RATIO:g}x and {floor:.0f} ms)")}
