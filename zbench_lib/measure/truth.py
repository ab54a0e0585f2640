"""Truth checks: is a run's headline number about what it claims to measure?

`truth_checks(fio_rows, counters, context)` compares the layers of one run: fio's rows
(`fio_parse.parse_fio_json`), the counter summary over the same window
(`run_summary.summarize_counters`) and facts recorded around the run (`context`: declared
cache state, pool status at start, compressratio, lab disk model, per-second IOPS). Each
check is a dict with `flag` (True, False, or None when there was nothing to judge on), a
`reason` and the numbers behind it. `flag_columns()` flattens them for the results table.

Context keys: cache ('cold'|'warm'), iops_series (total IOPS per second over the
measurement window, e.g. `run_summary.iops_series`), scan_at_start ('none'|'scrub:scanning'
...), trim_active, compressratio, incompressible_intended (default True: benchmark data is
incompressible unless compression is the question), lab, disk_model_iops, disk_model_bw
(per-device limits, None = unthrottled), pool_capacity_pct, pool_fragmentation_pct, prefilled.
"""

from __future__ import annotations

import math

import numpy as np

MiB = 1024 * 1024
# Below this much fio I/O in a direction, layer comparisons are noise: one idle TXG's
# metadata, a label update or a few readahead blocks are worth a few MiB.
MIN_FIO_BYTES = 8 * MiB
# cache_served: a cold read that reached the devices for less than half its bytes was
# mostly answered from memory; random reads smaller than the block read *more* (ratio > 1).
CACHE_DEV_RATIO = 0.5
# ... or more than half the demand reads were true ARC hits. The prefetcher turns a cold
# sequential read into demand hits although every byte came from disk, so this criterion
# only counts when the devices do not vouch for the bytes (unmeasured, or < 0.9 x fio).
CACHE_ARC_HIT_RATIO = 0.5
DEVICES_VOUCH_RATIO = 0.9
# no_device_io: a layer that moved less than 10% of fio's bytes was "suspiciously quiet"
# (seed rule 7). Generous on purpose: dirty data still in RAM at the window's end, and
# compression, legitimately shrink a layer's bytes, but not tenfold.
QUIET_RATIO = 0.10
# write_amplification: below 0.5 the writes did not reach the disks within the window (the
# run measured RAM); above 10 is reported but not flagged: 4k writes into 128k records, or
# sync writes through the ZIL on a mirror, really cost that much, and that is a finding.
WA_LOW, WA_HIGH = 0.5, 10.0
# not_steady: SNIA SSS PTS steady state over the window (docs/statistics.md).
STEADY_RANGE_PCT = 20.0      # max - min <= 20% of the mean
STEADY_SLOPE_PCT = 10.0      # least-squares rise across the window <= 10% of the mean
STEADY_MIN_SAMPLES = 5       # fewer one-second samples than a TXG period: too short to judge
STEADY_ROUNDS = 5            # the window is judged as five rounds, as SNIA's measurement window
STEADY_NOISE_RANGE_Q = 4.60  # 99% quantile of the range of 5 normal samples, in SDs
STEADY_NOISE_Z = 2.576       # two-sided 99% normal quantile, for the rise across the rounds
TXG_PERIOD_S = 5.0           # zfs_txg_timeout default: writes pulse with it
# compressible_data: incompressible buffers give compressratio 1.00x; 1.05 leaves room for
# metadata and the rounding of the displayed ratio.
COMPRESS_RATIO_MAX = 1.05
# emulation_bound: the busiest device below half of both modelled limits while the guest
# CPU is saturated means the emulation (or fio itself), not the disk model, set the pace.
EMU_LIMIT_SHARE = 0.5
CPU_BUSY_PCT = 85.0          # usr + sys + steal (steal: the hypervisor took the CPU)
CPU_IDLE_PCT = 10.0          # idle + iowait: iowait is idle time waiting for a disk, not CPU work

def _num(v) -> float:
    try:
        return math.nan if v is None else float(v)
    except (TypeError, ValueError):
        return math.nan


def _div(a, b) -> float:
    a, b = _num(a), _num(b)
    return a / b if b and not math.isnan(b) and not math.isnan(a) else math.nan


def fio_bytes(fio_rows: list[dict], direction: str) -> int:
    """Bytes fio moved in one direction (summed over job groups)."""
    return int(sum(r.get("io_bytes") or 0 for r in fio_rows if r.get("direction") == direction))


def steady_state(values, min_round_s: float = 0.0) -> dict:
    """SNIA-style steady-state test of a per-second IOPS series, judged as 5 rounds.

    The window is cut into STEADY_ROUNDS consecutive rounds (SNIA's measurement window is
    five rounds) and the round means m_k are judged: range_pct = 100 (max - min) / mean,
    slope_pct = 100 x least-squares rise across the rounds / mean (signed). A round of a
    slow device holds few I/Os, so its mean carries counting noise of about
    1/sqrt(I/Os per round) even when nothing changes; each limit is widened to what that
    noise alone reaches 99% of the time (noise_pct x 4.60 for the range of 5 rounds, the
    studentized range q(0.99; 5, inf); noise_pct x 2.576 x 4/sqrt(10) for the rise). Throttled
    completions are more regular than Poisson, so the allowance errs towards "steady" only
    at rates where the window could not tell anyway. `min_round_s`: rounds shorter than this
    cannot be judged (writes pulse with the TXG commit, so their rounds must span one).

    >>> steady_state([100, 102, 98, 101, 99])["flag"]
    False
    """
    y = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    out = dict(samples=len(y), mean=math.nan, range_pct=math.nan, slope_pct=math.nan,
               range_limit_pct=STEADY_RANGE_PCT, slope_limit_pct=STEADY_SLOPE_PCT, noise_pct=math.nan)
    if len(y) < STEADY_MIN_SAMPLES:
        return {**out, "flag": True, "reason": f"too short to judge ({len(y)} < {STEADY_MIN_SAMPLES} samples)"}
    mean = float(y.mean())
    if mean <= 0:
        return {**out, "mean": mean, "flag": True, "reason": "no I/O in the window"}
    round_s = len(y) / STEADY_ROUNDS
    if round_s < min_round_s:
        return {**out, "mean": mean, "flag": True,
                "reason": f"too short to judge: rounds of {round_s:.1f} s < {min_round_s:g} s (one TXG period)"}
    rounds = np.array([r.mean() for r in np.array_split(y, STEADY_ROUNDS)])
    x = np.arange(STEADY_ROUNDS)
    slope = float(np.polyfit(x, rounds, 1)[0])
    rng, rise = 100 * float(rounds.max() - rounds.min()) / mean, 100 * slope * (STEADY_ROUNDS - 1) / mean
    noise = 100 / math.sqrt(mean * round_s)
    rise_sd = (STEADY_ROUNDS - 1) / math.sqrt(float(((x - x.mean()) ** 2).sum()))
    range_limit = max(STEADY_RANGE_PCT, STEADY_NOISE_RANGE_Q * noise)
    slope_limit = max(STEADY_SLOPE_PCT, STEADY_NOISE_Z * rise_sd * noise)
    fails = [f"range {rng:.1f}% > {range_limit:.3g}%"] * (rng > range_limit) + \
            [f"slope {rise:+.1f}% > {slope_limit:.3g}%"] * (abs(rise) > slope_limit)
    return {**out, "mean": mean, "range_pct": rng, "slope_pct": rise, "range_limit_pct": range_limit,
            "slope_limit_pct": slope_limit, "noise_pct": noise, "flag": bool(fails),
            "reason": "; ".join(fails) or "steady"}


def _cache_served(fio_rows, c, ctx) -> dict:
    fio_r, dev_r = fio_bytes(fio_rows, "read"), _num(c.get("dev_read_bytes"))
    ratio, arc = _div(dev_r, fio_r), _num(c.get("arc_demand_data_hit_ratio"))
    out = dict(cache=ctx.get("cache"), fio_read_bytes=fio_r, dev_read_bytes=dev_r, ratio=ratio,
               arc_hit_ratio=_num(c.get("arc_hit_ratio")), arc_demand_data_hit_ratio=arc,
               threshold=CACHE_DEV_RATIO, arc_threshold=CACHE_ARC_HIT_RATIO)
    if ctx.get("cache") != "cold":
        return {**out, "flag": False, "reason": f"cache declared {ctx.get('cache')!r}: not checked"}
    if fio_r == 0:
        return {**out, "flag": False, "reason": "no reads"}
    reasons = []
    if fio_r >= MIN_FIO_BYTES and ratio < CACHE_DEV_RATIO:
        reasons.append(f"devices read {ratio:.2f} x fio's bytes")
    if arc > CACHE_ARC_HIT_RATIO and not ratio >= DEVICES_VOUCH_RATIO:  # NaN ratio: no vouching
        reasons.append(f"ARC demand hit ratio {arc:.2f}")
    unjudged = math.isnan(ratio) and math.isnan(arc)
    return {**out, "flag": None if unjudged else bool(reasons),
            "reason": "; ".join(reasons) or ("no device or ARC counters" if unjudged else "reads reached the disks")}


def _no_device_io(fio_rows, c, ctx) -> dict:
    out = dict(threshold=QUIET_RATIO, min_fio_bytes=MIN_FIO_BYTES)
    quiet, unmeasured = [], []
    for d in ("read", "write"):
        f = out[f"fio_{d}_bytes"] = fio_bytes(fio_rows, d)
        for layer, key in (("disk", f"dev_{d}_bytes"), ("zpool", f"pool_{d}_bytes")):
            v = out[key] = _num(c.get(key))
            out[f"{key.split('_')[0]}_{d}_ratio"] = _div(v, f)
            if f < MIN_FIO_BYTES or (d == "read" and ctx.get("cache") == "warm"):
                continue  # too little to compare, or reads expected from ARC
            if math.isnan(v):
                unmeasured.append(f"{layer}:{d}")
            elif v < QUIET_RATIO * f:
                quiet.append(f"{layer}:{d}")
    if not fio_rows or not any(r.get("io_bytes") for r in fio_rows):
        quiet.insert(0, "fio")
    return {**out, "quiet": quiet, "unmeasured": unmeasured, "flag": bool(quiet),
            "reason": ("suspiciously quiet: " + ", ".join(quiet)) if quiet else "every measured layer moved"}


def _write_amplification(fio_rows, c, ctx) -> dict:
    f = fio_bytes(fio_rows, "write")
    dev, pool = _num(c.get("dev_write_bytes")), _num(c.get("pool_write_bytes"))
    wa = _div(dev, f) if f >= MIN_FIO_BYTES else math.nan
    out = dict(value=wa, pool_value=_div(pool, f) if f >= MIN_FIO_BYTES else math.nan, fio_write_bytes=f,
               dev_write_bytes=dev, pool_write_bytes=pool, low=WA_LOW, high_threshold=WA_HIGH,
               high=bool(wa > WA_HIGH))
    if math.isnan(wa):
        return {**out, "flag": None if f >= MIN_FIO_BYTES else False,
                "reason": "no device counters" if f >= MIN_FIO_BYTES else "too few writes to judge"}
    if wa < WA_LOW:
        return {**out, "flag": True, "reason": f"{wa:.2f}: writes did not reach the disks in the window"}
    return {**out, "flag": False, "reason": f"{wa:.2f}" + (" (high, reported)" if wa > WA_HIGH else "")}


def _not_steady(fio_rows, c, ctx) -> dict:
    series = ctx.get("iops_series")
    if series is not None:
        writes = fio_bytes(fio_rows, "write") >= MIN_FIO_BYTES
        return steady_state(series, min_round_s=TXG_PERIOD_S if writes else 0.0)
    attained = [r.get("ss_attained") for r in fio_rows if r.get("ss_attained") is not None]
    if attained:
        return dict(samples=0, range_pct=math.nan, slope_pct=math.nan, flag=not all(attained),
                    reason="no per-second series; fio's steadystate attained=" + str(all(attained)))
    return dict(samples=0, range_pct=math.nan, slope_pct=math.nan, flag=None, reason="no per-second series")


def _background_work(fio_rows, c, ctx) -> dict:
    scan, trim = ctx.get("scan_at_start"), ctx.get("trim_active")
    seen = {k: _num(c.get(f"pool_{k}_io_samples")) for k in ("scrub", "trim", "rebuild")}
    reasons = [f"{scan} at start"] * (scan not in (None, "", "none")) + ["trim active"] * bool(trim) + \
              [f"{k} I/O in {int(v)} samples" for k, v in seen.items() if v > 0]
    known = scan is not None or trim is not None or not all(math.isnan(v) for v in seen.values())
    return dict(scan_at_start=scan, trim_active=trim, **{f"{k}_io_samples": v for k, v in seen.items()},
                flag=bool(reasons) if known or reasons else None,
                reason="; ".join(reasons) or ("none seen" if known else "scan state not recorded"))


def _compressible_data(fio_rows, c, ctx) -> dict:
    cr, intended = _num(ctx.get("compressratio")), ctx.get("incompressible_intended", True)
    out = dict(compressratio=cr, incompressible_intended=intended, threshold=COMPRESS_RATIO_MAX)
    if not intended:
        return {**out, "flag": False, "reason": "compression is the question"}
    if math.isnan(cr):
        return {**out, "flag": None, "reason": "compressratio not recorded"}
    return {**out, "flag": bool(cr > COMPRESS_RATIO_MAX), "reason": f"compressratio {cr:.2f}x"}


def _emulation_bound(fio_rows, c, ctx) -> dict:
    iops_lim, bw_lim = ctx.get("disk_model_iops"), ctx.get("disk_model_bw")
    cpu = {k: _num(c.get(f"cpu_{k}_pct")) for k in ("usr", "sys", "steal", "idle", "iowait")}
    busy = float(cpu["usr"] + cpu["sys"] + np.nan_to_num(cpu["steal"]))
    idle = float(cpu["idle"] + np.nan_to_num(cpu["iowait"]))
    iops_share, bw_share = _div(c.get("dev_iops_busiest"), iops_lim), _div(c.get("dev_bw_bytes_s_busiest"), bw_lim)
    out = dict(lab=bool(ctx.get("lab")), disk_model_iops=iops_lim, disk_model_bw=bw_lim,
               dev_iops_busiest=_num(c.get("dev_iops_busiest")),
               dev_bw_bytes_s_busiest=_num(c.get("dev_bw_bytes_s_busiest")),
               iops_share=iops_share, bw_share=bw_share, cpu_busy_pct=busy, cpu_idle_pct=idle,
               limit_share=EMU_LIMIT_SHARE, cpu_busy_threshold=CPU_BUSY_PCT, cpu_idle_threshold=CPU_IDLE_PCT)
    if not ctx.get("lab"):
        return {**out, "flag": False, "reason": "not a lab run"}
    if math.isnan(busy) and math.isnan(idle):
        return {**out, "flag": None, "reason": "no CPU counters"}
    saturated = busy >= CPU_BUSY_PCT or idle < CPU_IDLE_PCT
    if iops_lim is None and bw_lim is None:
        return {**out, "flag": bool(saturated),
                "reason": "unthrottled model, CPU " + ("saturated" if saturated else "not saturated")}
    if math.isnan(out["dev_iops_busiest"]):
        return {**out, "flag": None, "reason": "no device counters"}
    # A limit the model does not set can never be approached: it counts as "well below".
    below = all(s < EMU_LIMIT_SHARE or lim is None for s, lim in ((iops_share, iops_lim), (bw_share, bw_lim)))
    return {**out, "flag": bool(below and saturated),
            "reason": f"busiest disk at {iops_share:.0%} of IOPS and {bw_share:.0%} of bandwidth limits, "
                      f"CPU busy {busy:.0f}%, idle {idle:.0f}%"}


_CHECKS = dict(cache_served=_cache_served, no_device_io=_no_device_io, write_amplification=_write_amplification,
               not_steady=_not_steady, background_work=_background_work, compressible_data=_compressible_data,
               emulation_bound=_emulation_bound)
CHECKS = tuple(_CHECKS)  # the flags, in report order; fill_level is informational


def truth_checks(fio_rows: list[dict], counters: dict, context: dict) -> dict:
    """Every check (see CHECKS) plus the informational `fill_level`, keyed by name."""
    c, ctx = counters or {}, context or {}
    out = {name: check(fio_rows or [], c, ctx) for name, check in _CHECKS.items()}
    out["fill_level"] = dict(flag=None, info=True, pool_capacity_pct=_num(ctx.get("pool_capacity_pct")),
                             pool_fragmentation_pct=_num(ctx.get("pool_fragmentation_pct")),
                             prefilled=ctx.get("prefilled"), missing_layers=c.get("missing_layers"),
                             reason="recorded at start")
    return out


def flag_columns(checks: dict) -> dict:
    """Flat columns for the tidy results table: `flag_<check>` plus the key numbers.

    `flagged` is True when any flag is; None (not judged) counts as not raised.
    """
    cols = {f"flag_{name}": checks[name]["flag"] for name in CHECKS if name in checks}
    wa, cache = checks.get("write_amplification", {}), checks.get("cache_served", {})
    steady, fill = checks.get("not_steady", {}), checks.get("fill_level", {})
    cols.update(write_amplification=wa.get("value", math.nan), pool_write_amplification=wa.get("pool_value", math.nan),
                write_amplification_high=wa.get("high", False),
                dev_to_fio_read_ratio=cache.get("ratio", math.nan), arc_hit_ratio=cache.get("arc_hit_ratio", math.nan),
                arc_demand_data_hit_ratio=cache.get("arc_demand_data_hit_ratio", math.nan),
                steady_range_pct=steady.get("range_pct", math.nan), steady_slope_pct=steady.get("slope_pct", math.nan),
                steady_samples=steady.get("samples", 0), steady_noise_pct=steady.get("noise_pct", math.nan),
                steady_range_limit_pct=steady.get("range_limit_pct", math.nan),
                steady_slope_limit_pct=steady.get("slope_limit_pct", math.nan),
                quiet_layers=",".join(checks.get("no_device_io", {}).get("quiet", [])),
                pool_capacity_pct=fill.get("pool_capacity_pct", math.nan),
                pool_fragmentation_pct=fill.get("pool_fragmentation_pct", math.nan))
    raised = [name for name in CHECKS if checks.get(name, {}).get("flag") is True]
    cols.update(flagged=bool(raised), truth_flags=",".join(raised))
    return cols
