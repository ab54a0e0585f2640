"""Truth checks: is a run's headline number about what it claims to measure?

`truth_checks(fio_rows, counters, context)` compares the layers of one run: fio's rows
(`fio_parse.parse_fio_json`), the counter summary over the same window
(`run_summary.summarize_counters`) and facts recorded around the run (`context`: declared
cache state, pool status at start, compressratio, lab disk model, per-second IOPS, the
controller's load). Each check is a dict with `flag` and a `reason` beside the numbers
behind it. A flag is three-valued: True (raised), False (judged, passed) or None (not
judged: the check does not apply, or what it needs was not measured; the reason says
which). A check that was not performed never reads as passed. `flag_columns()`
flattens them for the results table.

Each check declares once, in `TRUTH_CHECKS`, what its raised flag means for the run
(docs/methods.md §7): it *invalidates* the run (the measurement did not measure the
system under test: the run is excluded and may be replaced) or *describes* it (the system
behaved this way: the run is kept, counted and shown beside the estimate). The sweep's
repetition rule and the analysis both read the kinds from here.

Context keys: cache ('cold'|'warm'), iops_series (total IOPS per second over the
measurement window, e.g. `run_summary.iops_series`), txg_timeout_s (zfs_txg_timeout,
default 5), scan_at_start ('none'|'scrub:scanning' ...), trim_active, compressratio (read
right after the run), compression (the target's property), compressible_percent_declared (the
data the spec declared, 0 = incompressible; runs recorded before it carry only
incompressible_intended, True), lab, disk_model_iops, disk_model_bw (per-device limits, None =
unthrottled), block_bytes (volblocksize / recordsize), qemu_pid and host_* (the
controller's load, `host_load.summarize`), pool_capacity_pct, pool_fragmentation_pct,
prefilled, surface ('raw': fio on the bare disks, no pool; the checks of a pool's layer, its
background work, its compression and its TXGs do not apply, see `_raw`), fault_study (the
spec injects faults on purpose: a lost device then describes the run, see `TRUTH_CHECKS`).
"""

from __future__ import annotations

import math

import numpy as np

from zbench_lib.measure.compressibility import compressible_data, logical_per_physical
from zbench_lib.measure.device_health import device_lost, slow_device
from zbench_lib.measure.host_load import host_contention
from zbench_lib.measure.judging import DESCRIBES, INVALIDATES, Kind, TruthCheck
from zbench_lib.measure.judging import MIN_FIO_BYTES, fio_bytes, not_judged
from zbench_lib.measure.judging import div as _div, num as _num
from zbench_lib.measure.read_amp import read_amplification
from zbench_lib.measure.steady import TXG_PERIOD_S, steady_state

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
# compressible_data and its thresholds: measure/compressibility.py. Declared compressible data
# on a compressing target moves fewer bytes on the disks than fio reports, by design: the checks
# comparing the disks' bytes with fio's expect fio's bytes / its compressratio (`logical_per_physical`).
# emulation_bound: the busiest device below half of both modelled limits while the guest
# CPU is saturated means the emulation (or fio itself), not the disk model, set the pace.
EMU_LIMIT_SHARE = 0.5
CPU_BUSY_PCT = 85.0          # usr + sys + steal (steal: the hypervisor took the CPU)
CPU_IDLE_PCT = 10.0          # idle + iowait: iowait is idle time waiting for a disk, not CPU work


def _raw(ctx) -> bool:
    """fio ran on bare disks (the raw surface): there is no pool, zpool iostat or TXG to judge."""
    return ctx.get("surface") == "raw"


def _cache_served(fio_rows, c, ctx) -> dict:
    fio_r, dev_r = fio_bytes(fio_rows, "read"), _num(c.get("dev_read_bytes"))
    ratio, arc, k = _div(dev_r, fio_r), _num(c.get("arc_demand_data_hit_ratio")), logical_per_physical(ctx)
    out = dict(cache=ctx.get("cache"), fio_read_bytes=fio_r, dev_read_bytes=dev_r, ratio=ratio,
               arc_hit_ratio=_num(c.get("arc_hit_ratio")), arc_demand_data_hit_ratio=arc,
               threshold=CACHE_DEV_RATIO, arc_threshold=CACHE_ARC_HIT_RATIO, logical_per_physical=k)
    if ctx.get("cache") != "cold":
        return not_judged(f"cache declared {ctx['cache']}; a cold-read check does not apply" if ctx.get("cache")
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


def _no_device_io(fio_rows, c, ctx) -> dict:
    """Each layer x direction fio used is a comparison of its own: quiet (True), moved (False),
    not judged (None: unmeasured, or too few bytes), or does not apply (warm reads)."""
    k = logical_per_physical(ctx)          # declared compressible data: fio's bytes / k below the compressor
    out = dict(threshold=QUIET_RATIO, min_fio_bytes=MIN_FIO_BYTES, logical_per_physical=k)
    verdicts, why = {}, {}
    for d in ("read", "write"):
        f = out[f"fio_{d}_bytes"] = fio_bytes(fio_rows, d)
        for layer, key in (("disk", f"dev_{d}_bytes"),) + ((("zpool", f"pool_{d}_bytes"),) if not _raw(ctx) else ()):
            v = out[key] = _num(c.get(key))
            out[f"{key.split('_')[0]}_{d}_ratio"] = _div(v, f)
            name = f"{layer}:{d}"
            if f == 0 or (d == "read" and ctx.get("cache") == "warm"):
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


def _write_amplification(fio_rows, c, ctx) -> dict:
    f = fio_bytes(fio_rows, "write")
    dev, pool = _num(c.get("dev_write_bytes")), _num(c.get("pool_write_bytes"))
    wa, k = (_div(dev, f) if f >= MIN_FIO_BYTES else math.nan), logical_per_physical(ctx)
    out = dict(value=wa, pool_value=_div(pool, f) if f >= MIN_FIO_BYTES else math.nan, fio_write_bytes=f,
               dev_write_bytes=dev, pool_write_bytes=pool, low=WA_LOW, high_threshold=WA_HIGH,
               high=bool(wa > WA_HIGH), logical_per_physical=k)
    if math.isnan(wa):
        return not_judged("no device counters" if f >= MIN_FIO_BYTES else
                          "no writes: does not apply" if f == 0 else "too few writes to judge", **out)
    at = f" ({wa * k:.2f} of the data at {k:.2f}x)" if k > 1 else ""
    if wa * k < WA_LOW:            # declared compressible data reaches the disks as fio's bytes / k
        return {**out, "flag": True, "reason": f"{wa:.2f}{at}: writes did not reach the disks in the window"}
    return {**out, "flag": False, "reason": f"{wa:.2f}{at}" + (" (high, reported)" if wa > WA_HIGH else "")}


def _not_steady(fio_rows, c, ctx) -> dict:
    series = ctx.get("iops_series")
    if series is not None:
        writes = fio_bytes(fio_rows, "write") >= MIN_FIO_BYTES
        txg = _num(ctx.get("txg_timeout_s"))
        return steady_state(series, txg_period_s=(TXG_PERIOD_S if math.isnan(txg) or txg <= 0 else txg)
                            if writes and not _raw(ctx) else None)       # raw disks: no TXG to pulse with
    attained = [r.get("ss_attained") for r in fio_rows if r.get("ss_attained") is not None]
    if attained:
        return dict(samples=0, range_pct=math.nan, slope_pct=math.nan, flag=not all(attained),
                    reason="no per-second series; fio's steadystate attained=" + str(all(attained)))
    return not_judged("no per-second series", samples=0, range_pct=math.nan, slope_pct=math.nan)


def _background_work(fio_rows, c, ctx) -> dict:
    scan, trim = ctx.get("scan_at_start"), ctx.get("trim_active")
    seen = {k: _num(c.get(f"pool_{k}_io_samples")) for k in ("scrub", "trim", "rebuild")}
    reasons = [f"{scan} at start"] * (scan not in (None, "", "none")) + ["trim active"] * bool(trim) + \
              [f"{k} I/O in {int(v)} samples" for k, v in seen.items() if v > 0]
    out = dict(scan_at_start=scan, trim_active=trim, **{f"{k}_io_samples": v for k, v in seen.items()})
    if _raw(ctx):
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


# The checks in report order. Adding a check means adding it here, kind included
# (tests/test_flag_kinds.py fails on a flag column without a declared kind).
TRUTH_CHECKS = (
    TruthCheck("cache_served", _cache_served, INVALIDATES, "a disk-read test was served from ARC"),
    TruthCheck("no_device_io", _no_device_io, INVALIDATES,
               "fio, pool and device byte counts disagree (a layer was suspiciously quiet)"),
    # Only the low side is a flag (writes held in RAM: the run measured memory, not the disks,
    # like cache_served for reads); real amplification above 10 is reported, never flagged.
    TruthCheck("write_amplification", _write_amplification, INVALIDATES,
               "the disks wrote far fewer bytes than fio reported: writes were absorbed by memory within the window"),
    TruthCheck("not_steady", _not_steady, DESCRIBES, "never reached steady state"),
    TruthCheck("background_work", _background_work, INVALIDATES, "scrub, resilver or trim running at start"),
    # Judged against the data the spec declared (compressibility.py); the meaning's words are
    # those of before declarations, kept as the example notebooks' stored outputs show them.
    TruthCheck("compressible_data", compressible_data, INVALIDATES,
               "data was compressible although the question is not about compression"),
    TruthCheck("emulation_bound", _emulation_bound, INVALIDATES,
               "the lab's emulation, not the disk model, was the bottleneck"),
    TruthCheck("read_amplification", read_amplification, DESCRIBES,
               "the disks read far more bytes than fio asked for, beyond what block size and parity explain"),
    TruthCheck("host_contention", host_contention, INVALIDATES,
               "other processes on the lab's host took CPU from the emulation during the run"),
    # Outside a fault study a lost disk is an accident of the bench; inside one it is the question.
    TruthCheck("device_lost", device_lost, INVALIDATES,
               "a disk of the pool was missing or faulted after the run: a degraded pool was measured",
               in_fault_study=DESCRIBES),
    TruthCheck("slow_device", slow_device, DESCRIBES,
               "one data disk served requests far slower than its peers (a failing or throttled drive)"),
)
CHECKS = tuple(c.name for c in TRUTH_CHECKS)  # the flags, in report order; fill_level is informational
_BY_NAME = {c.name: c for c in TRUTH_CHECKS}


def kind_of(name: str, fault_study: bool = False) -> Kind:
    """What check `name`'s raised flag means for a run (KeyError for a name no check declares)."""
    return _BY_NAME[name].kind_for(fault_study)


def split_by_kind(raised, fault_study: bool = False) -> tuple[list[str], list[str]]:
    """The raised checks' names as (invalidating, describing), each in report order."""
    raised = set(raised)
    names = [n for n in CHECKS if n in raised]
    return ([n for n in names if kind_of(n, fault_study) == INVALIDATES],
            [n for n in names if kind_of(n, fault_study) == DESCRIBES])


def truth_checks(fio_rows: list[dict], counters: dict, context: dict) -> dict:
    """Every check (see CHECKS) plus the informational `fill_level`, keyed by name."""
    c, ctx = counters or {}, context or {}
    out = {check.name: check.judge(fio_rows or [], c, ctx) for check in TRUTH_CHECKS}
    out["fill_level"] = dict(flag=None, info=True, pool_capacity_pct=_num(ctx.get("pool_capacity_pct")),
                             pool_fragmentation_pct=_num(ctx.get("pool_fragmentation_pct")),
                             prefilled=ctx.get("prefilled"), missing_layers=c.get("missing_layers"),
                             reason="recorded at start")
    return out


def flag_columns(checks: dict, fault_study: bool = False) -> dict:
    """Flat columns for the tidy results table: `flag_<check>` (True, False or None) and key numbers.

    `flagged` is True when an invalidating flag is (the run is excluded, and may be replaced);
    `truth_flags` names those flags and `described_flags` the describing flags raised (the run
    is kept). `fault_study` (the spec injects faults) is recorded, since it sets device_lost's
    kind. `not_judged` lists the checks that were not judged with their reasons ("check:
    reason; check: reason"), and `checks_judged` / `checks_not_judged` count them.
    """
    names = [name for name in CHECKS if name in checks]
    cols = {f"flag_{name}": checks[name]["flag"] for name in names}
    get = lambda name, key, default=math.nan: checks.get(name, {}).get(key, default)  # noqa: E731
    cols.update(write_amplification=get("write_amplification", "value"),
                pool_write_amplification=get("write_amplification", "pool_value"),
                write_amplification_high=get("write_amplification", "high", False),
                read_amplification=get("read_amplification", "value"),
                read_amplification_expected=get("read_amplification", "expected"),
                dev_to_fio_read_ratio=get("cache_served", "ratio"), arc_hit_ratio=get("cache_served", "arc_hit_ratio"),
                arc_demand_data_hit_ratio=get("cache_served", "arc_demand_data_hit_ratio"),
                steady_range_pct=get("not_steady", "range_pct"), steady_slope_pct=get("not_steady", "slope_pct"),
                steady_samples=get("not_steady", "samples", 0), steady_noise_pct=get("not_steady", "noise_pct"),
                steady_range_limit_pct=get("not_steady", "range_limit_pct"),
                steady_slope_limit_pct=get("not_steady", "slope_limit_pct"),
                steady_round_s=get("not_steady", "round_s"), steady_pulse_s=get("not_steady", "pulse_period_s"),
                host_other_cores=get("host_contention", "other_cores"),
                host_qemu_cores=get("host_contention", "qemu_cores"),
                host_other_qemus=get("host_contention", "other_qemus"),
                quiet_layers=",".join(get("no_device_io", "quiet", [])),
                pool_capacity_pct=get("fill_level", "pool_capacity_pct"),
                pool_fragmentation_pct=get("fill_level", "pool_fragmentation_pct"))
    invalidating, describing = split_by_kind([name for name in names if checks[name]["flag"] is True], fault_study)
    unjudged = [name for name in names if checks[name]["flag"] is None]
    cols.update(flagged=bool(invalidating), truth_flags=",".join(invalidating), described_flags=",".join(describing),
                fault_study=bool(fault_study),
                not_judged="; ".join(f"{name}: {checks[name].get('reason', '')}" for name in unjudged),
                checks_judged=len(names) - len(unjudged), checks_not_judged=len(unjudged))
    return cols
