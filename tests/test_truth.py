"""Truth checks: hand-built runs that raise each flag, a clean run that raises none, and
checks that could not be performed reading None (not judged), never False (passed)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from zbench_lib.measure import compressibility, truth
from zbench_lib.analysis import FLAG_MEANINGS
from zbench_lib.measure.counters import parse_sampler_dir, split_snapshots
from zbench_lib.measure.fio_parse import parse_fio_json
from zbench_lib.measure.run_summary import summarize_counters
from zbench_lib.measure.steady import steady_state
from zbench_lib.measure.truth import flag_columns, truth_checks
from zbench_lib.measure.run_context import RunFacts

MiB = 1024 * 1024
FIX = Path(__file__).parent / "fixtures"
STEADY = [1000, 1010, 990, 1005, 995, 1000, 1002, 998] * 4  # 32 s, no trend: long enough for writes too


def rows(read=0, write=0, ss=None, rw="randread", bs=4096):
    out = []
    for d, b in (("read", read), ("write", write)):
        if b:
            out.append(dict(direction=d, io_bytes=b, iops=b / bs / 60, total_ios=b // bs, ss_attained=ss,
                            rw=rw, bs_bytes=bs))
    return out


def counters(**over):
    """A cold 4k random read on a lab pool of 4 disks limited to 400 IOPS and 100 MiB/s each."""
    c = dict(dev_read_bytes=410 * MiB, dev_write_bytes=2 * MiB, pool_read_bytes=405 * MiB,
             pool_write_bytes=1 * MiB, arc_hit_ratio=0.05, arc_demand_data_hit_ratio=0.02,
             dev_iops_busiest=390.0, dev_bw_bytes_s_busiest=1.6 * MiB, cpu_usr_pct=12.0, cpu_sys_pct=18.0,
             cpu_iowait_pct=60.0, cpu_idle_pct=10.0, cpu_steal_pct=0.0, pool_scrub_io_samples=0,
             pool_trim_io_samples=0, pool_rebuild_io_samples=0, missing_layers="")
    return {**c, **over}


def context(**over):
    c = dict(cache="cold", iops_series=STEADY, scan_at_start="none", trim_active=False, compressratio=1.00,
             incompressible_intended=True, lab=True, disk_model_iops=400, disk_model_bw=100 * MiB,
             pool_capacity_pct=41, pool_fragmentation_pct=3, prefilled=True, block_bytes=4096,
             qemu_pid=4321, host_other_cores=0.1, host_qemu_cores=1.6, host_other_qemus=0,
             pool_health_after={"state": "ONLINE", "not_online": []},
             dev_service_each={f"vd{x}": (2.5, 1200.0) for x in "bcde"})
    return RunFacts.of(**{**c, **over})


def flags(checks):
    return {k for k in truth.CHECKS if checks[k]["flag"] is True}


def test_clean_cold_run_raises_nothing():
    checks = truth_checks(rows(read=400 * MiB), counters(), context())
    assert flags(checks) == set()
    cols = flag_columns(checks)
    assert set(FLAG_MEANINGS) <= set(cols)  # every flag the analysis explains is a column
    assert {c for c in cols if c.startswith("flag_")} == {f"flag_{k}" for k in truth.CHECKS}
    # every check but one judged and passed: a read-only run has no write amplification to judge
    assert [c for c in cols if c.startswith("flag_") and cols[c] is not False] == ["flag_write_amplification"]
    assert cols["flag_write_amplification"] is None and cols["flagged"] is False
    assert cols["not_judged"] == "write_amplification: no writes: does not apply"
    assert (cols["checks_judged"], cols["checks_not_judged"]) == (len(truth.CHECKS) - 1, 1)
    assert cols["dev_to_fio_read_ratio"] == pytest.approx(410 / 400)
    assert cols["arc_hit_ratio"] == 0.05 and cols["truth_flags"] == ""
    assert (cols["pool_capacity_pct"], cols["pool_fragmentation_pct"]) == (41, 3)
    assert checks["fill_level"]["info"] and checks["fill_level"]["prefilled"] is True


# --- cache_served ----------------------------------------------------------------------------

def test_warm_reread_declared_cold_is_cache_served():
    # Re-reading a 64 MiB file that fits in ARC: 1 GiB through fio, almost nothing from the disks.
    c = counters(dev_read_bytes=3 * MiB, pool_read_bytes=3 * MiB, arc_demand_data_hit_ratio=0.99)
    checks = truth_checks(rows(read=1024 * MiB), c, context())
    cs = checks["cache_served"]
    assert cs["flag"] is True and cs["ratio"] == pytest.approx(3 / 1024) and cs["threshold"] == 0.5
    assert "ARC" in cs["reason"] and "devices read" in cs["reason"]
    assert checks["no_device_io"]["quiet"] == ["disk:read", "zpool:read"]  # both layers quiet too
    assert flag_columns(checks)["truth_flags"] == "cache_served,no_device_io"


def test_cache_served_by_arc_ratio_alone_when_devices_unmeasured():
    c = counters(dev_read_bytes=math.nan, arc_demand_data_hit_ratio=0.8)
    assert truth_checks(rows(read=400 * MiB), c, context())["cache_served"]["flag"] is True


def test_cold_sequential_read_with_prefetch_hits_is_not_cache_served():
    # The prefetcher made 95% of demand reads ARC hits, but the disks read every byte.
    c = counters(dev_read_bytes=1000 * MiB, pool_read_bytes=1000 * MiB, arc_demand_data_hit_ratio=0.95)
    assert truth_checks(rows(read=1000 * MiB), c, context())["cache_served"]["flag"] is False


def test_cache_served_is_only_judged_on_cold_runs():
    c = counters(dev_read_bytes=0, pool_read_bytes=0, arc_demand_data_hit_ratio=1.0)
    checks = truth_checks(rows(read=400 * MiB), c, context(cache="warm"))
    assert checks["cache_served"]["flag"] is None
    assert checks["cache_served"]["reason"] == "cache declared warm; a cold-read check does not apply"
    assert checks["no_device_io"]["flag"] is None  # reads are expected from ARC when warm: nothing to compare
    assert "does not apply" in checks["no_device_io"]["reason"]
    # a warm mixed run: the writes are still compared, and judged
    mixed = truth_checks(rows(read=400 * MiB, write=100 * MiB), counters(dev_write_bytes=120 * MiB,
                         pool_write_bytes=110 * MiB, dev_read_bytes=0), context(cache="warm"))["no_device_io"]
    assert mixed["flag"] is False and mixed["comparisons"] == {"disk:write": False, "zpool:write": False}
    undeclared = truth_checks(rows(read=400 * MiB), counters(), context(cache=None))["cache_served"]
    assert undeclared["flag"] is None and undeclared["reason"] == "cache state not declared"
    cols = flag_columns(checks)
    assert "cache_served: cache declared warm; a cold-read check does not apply" in cols["not_judged"]
    assert cols["flagged"] is False


def test_cache_served_small_reads_without_arc_counters_are_not_judged():
    # 4 MiB read: too little for the devices to vouch, and no ARC counters: it used to read "passed"
    c = counters(dev_read_bytes=4 * MiB, arc_demand_data_hit_ratio=math.nan)
    cs = truth_checks(rows(read=4 * MiB), c, context())["cache_served"]
    assert cs["flag"] is None and "too few reads" in cs["reason"]
    assert truth_checks(rows(write=100 * MiB), counters(), context())["cache_served"]["flag"] is None


# --- no_device_io ----------------------------------------------------------------------------

def test_quiet_pool_layer_is_named():
    c = counters(dev_write_bytes=200 * MiB, pool_write_bytes=2 * MiB)
    nd = truth_checks(rows(write=100 * MiB), c, context(iops_series=STEADY))["no_device_io"]
    assert nd["flag"] is True and nd["quiet"] == ["zpool:write"]
    assert nd["pool_write_ratio"] == pytest.approx(0.02) and nd["dev_write_ratio"] == pytest.approx(2.0)
    assert flag_columns({"no_device_io": nd})["quiet_layers"] == "zpool:write"


def test_no_device_io_small_runs_unmeasured_layers_and_idle_fio():
    c = counters(dev_read_bytes=0, pool_read_bytes=math.nan)
    small = truth_checks(rows(read=4 * MiB), c, context())["no_device_io"]  # < MIN_FIO_BYTES
    assert small["flag"] is None and small["comparisons"] == {"disk:read": None, "zpool:read": None}
    nd = truth_checks(rows(read=400 * MiB), c, context())["no_device_io"]
    assert nd["flag"] is True and nd["quiet"] == ["disk:read"] and nd["unmeasured"] == ["zpool:read"]
    assert nd["comparisons"] == {"disk:read": True, "zpool:read": None}
    assert truth_checks([], counters(), context())["no_device_io"]["quiet"] == ["fio"]


def test_no_device_io_with_a_missing_layer_is_not_judged():
    # the disks moved, the pool layer was not measured: that comparison was not made
    nd = truth_checks(rows(read=400 * MiB), counters(pool_read_bytes=math.nan), context())["no_device_io"]
    assert nd["flag"] is None and nd["reason"] == "zpool:read unmeasured"
    assert nd["comparisons"] == {"disk:read": False, "zpool:read": None}
    cols = flag_columns({"no_device_io": nd})
    assert cols["flag_no_device_io"] is None and cols["flagged"] is False
    assert cols["not_judged"] == "no_device_io: zpool:read unmeasured" and cols["checks_not_judged"] == 1


# --- write_amplification -----------------------------------------------------------------------

def test_write_amplification_reported_and_flagged_only_when_writes_missed_the_disks():
    wa = truth_checks(rows(write=100 * MiB), counters(dev_write_bytes=150 * MiB, pool_write_bytes=120 * MiB),
                      context())["write_amplification"]
    assert wa["value"] == pytest.approx(1.5) and wa["pool_value"] == pytest.approx(1.2) and wa["flag"] is False
    low = truth_checks(rows(write=100 * MiB), counters(dev_write_bytes=30 * MiB, pool_write_bytes=30 * MiB),
                       context())["write_amplification"]
    assert low["flag"] is True and low["value"] == pytest.approx(0.3)
    # 4k writes into 128k records: 15x is a finding, reported as high but not a flag.
    checks = truth_checks(rows(write=100 * MiB), counters(dev_write_bytes=1500 * MiB, pool_write_bytes=1400 * MiB),
                          context())
    cols = flag_columns(checks)
    assert cols["write_amplification"] == pytest.approx(15) and cols["write_amplification_high"] is True
    assert cols["flag_write_amplification"] is False and cols["flagged"] is False
    no_writes = truth_checks(rows(read=400 * MiB), counters(), context())["write_amplification"]
    assert no_writes["flag"] is None and no_writes["reason"] == "no writes: does not apply"
    unmeasured = truth_checks(rows(write=100 * MiB), counters(dev_write_bytes=math.nan), context())
    assert unmeasured["write_amplification"]["flag"] is None
    assert unmeasured["write_amplification"]["reason"] == "no device counters"


# --- not_steady ----------------------------------------------------------------------------------

def test_steady_state_hand_computed_series():
    flat = steady_state([10000] * 5)
    assert flat["flag"] is False and flat["range_pct"] == 0 and flat["slope_pct"] == pytest.approx(0, abs=1e-9)
    # ramp 9000..11000 (reads: five rounds of 1 s): the line rises 500 a second, 2500 across the
    # 5 s window: 25% of the mean 10000, with no scatter around it: certain, beyond 5%: not steady.
    # The range of the round means (20%) is reported, no longer judged.
    ramp = steady_state([9000, 9500, 10000, 10500, 11000])
    assert ramp["range_pct"] == pytest.approx(20) and ramp["slope_pct"] == pytest.approx(25)
    assert ramp["noise_pct"] == pytest.approx(0, abs=1e-9) and ramp["slope_limit_pct"] == 5
    assert ramp["flag"] is True and ramp["reason"].startswith("drift +25.0% across 5 s")
    # the same ramp going down: the drift is reported signed, judged by its size
    down = steady_state([11000, 10500, 10000, 9500, 9000])
    assert down["slope_pct"] == pytest.approx(-25) and down["flag"] is True
    # 10 samples alternating 9500/10500: ten rounds of 1 s at x = 0.05 .. 0.95. Least squares:
    # sum (x - 0.5)(y - 10000) = 500 x (0.45 - 0.35 + 0.25 - 0.15 + 0.05) x 2 = 250 and
    # sum (x - 0.5)^2 = 0.825: slope 303 across the window, +3.03% of 10000, within the noise.
    wobble = steady_state([9500, 10500] * 5)
    assert wobble["slope_pct"] == pytest.approx(100 * 250 / 0.825 / 10000) and wobble["flag"] is False
    # 5000 .. 10000 in 6 s: rises 1000 a second, 6000 across the window over the mean 7500: 80%;
    # range (10000 - 5000) / 7500 = 66.7%.
    rising = steady_state([5000, 6000, 7000, 8000, 9000, 10000])
    assert rising["range_pct"] == pytest.approx(500 / 7.5) and rising["slope_pct"] == pytest.approx(80)
    assert rising["round_s"] == 1 and rising["rounds"] == 6 and rising["flag"] is True


def test_write_rounds_are_whole_txg_periods():
    twelve = [1000] * 12                         # five rounds of one 5 s TXG period need 25 s
    checks = truth_checks(rows(write=400 * MiB), counters(dev_write_bytes=800 * MiB), context(iops_series=twelve))
    assert checks["not_steady"]["flag"] is None
    assert checks["not_steady"]["reason"] == \
        "too short to judge: 12 s hold 2 whole TXG periods of 5 s, 5 needed (25 s)"
    thirty = [1000] * 30                         # six rounds of one TXG period each
    ns = truth_checks(rows(write=400 * MiB), counters(dev_write_bytes=800 * MiB), context(iops_series=thirty))
    assert ns["not_steady"]["flag"] is False
    assert (ns["not_steady"]["round_s"], ns["not_steady"]["samples_used"]) == (5, 30)
    ninety = steady_state([1000] * 92, txg_period_s=5)       # 18 periods, at most 15 rounds: 9 of two
    assert (ninety["round_s"], ninety["samples_used"], ninety["flag"]) == (10, 90, False)
    # the period comes from the context when the host reported zfs_txg_timeout
    short_txg = context(iops_series=twelve, txg_timeout_s=2)
    ns = truth_checks(rows(write=400 * MiB), counters(dev_write_bytes=800 * MiB), short_txg)["not_steady"]
    assert ns["flag"] is False and ns["round_s"] == 2 and ns["txg_period_s"] == 2
    # reads have no TXG pulse: twelve seconds are judged, as twelve rounds of 1 s
    reads = truth_checks(rows(read=400 * MiB), counters(), context(iops_series=twelve))["not_steady"]
    assert reads["flag"] is False and reads["round_s"] == 1 and reads["rounds"] == 12


def test_txg_pulse_aliases_into_rounds_that_are_not_whole_periods():
    # writes land in four busy seconds and a quiet one every 5 s TXG; the level never changes
    pulse = [1500, 1500, 1500, 1500, 0] * 6              # 30 s, mean 1200
    aliased = steady_state(pulse)                       # 15 rounds of 2 s: 1500, 1500, 750, 1500, 1500, 750 ...
    assert aliased["range_pct"] == pytest.approx(750 / 1200 * 100) and aliased["noise_pct"] > 30
    whole = steady_state(pulse, txg_period_s=5)         # 5 s rounds: each holds one pulse
    assert whole["range_pct"] == pytest.approx(0) and whole["noise_pct"] == pytest.approx(0, abs=1e-9)
    assert whole["flag"] is False


def test_steady_state_too_short_or_idle():
    short = steady_state([100, 100, 100, 100])
    assert short["flag"] is None and short["reason"].startswith("too short to judge")
    idle = steady_state([0] * 10)
    assert idle["flag"] is None and idle["reason"] == "no I/O in the window"


def test_not_steady_through_truth_checks():
    series = [5000, 6000, 7000, 8000, 9000, 10000]
    checks = truth_checks(rows(read=400 * MiB), counters(), context(iops_series=series))
    cols = flag_columns(checks)
    # as `rising` above: drift 80% across the window, range 66.7%
    assert cols["flag_not_steady"] is True
    assert cols["steady_range_pct"] == pytest.approx(500 / 7.5)
    assert cols["steady_slope_pct"] == pytest.approx(80) and cols["steady_samples"] == 6
    assert cols["steady_slope_limit_pct"] == 5 and cols["steady_round_s"] == 1
    # 15 IOPS, perfectly even: judged (the data show no noise), steady; no longer "not judged"
    slow = flag_columns(truth_checks(rows(read=400 * MiB), counters(), context(iops_series=[15] * 12)))
    assert slow["flag_not_steady"] is False and "not_steady" not in slow["not_judged"]
    # without a per-second series, fio's own steady-state verdict is used, else not judged
    no_series = context(iops_series=None)
    assert truth_checks(rows(read=400 * MiB, ss=False), counters(), no_series)["not_steady"]["flag"] is True
    assert truth_checks(rows(read=400 * MiB), counters(), no_series)["not_steady"]["flag"] is None


# --- background work, compressible data ------------------------------------------------------------

@pytest.mark.parametrize("ctx, cnt, reason", [
    (dict(scan_at_start="scrub:scanning"), {}, "scrub:scanning at start"),
    (dict(scan_at_start="resilver:scanning"), {}, "resilver:scanning at start"),
    (dict(trim_active=True), {}, "trim active"),
    ({}, dict(pool_trim_io_samples=3), "trim I/O in 3 samples"),  # autotrim during the run
])
def test_background_work(ctx, cnt, reason):
    bw = truth_checks(rows(read=400 * MiB), counters(**cnt), context(**ctx))["background_work"]
    assert bw["flag"] is True and reason in bw["reason"]


def test_background_work_unknown():
    c = counters(pool_scrub_io_samples=math.nan, pool_trim_io_samples=math.nan, pool_rebuild_io_samples=math.nan)
    bw = truth_checks(rows(read=400 * MiB), c, context(scan_at_start=None, trim_active=None))["background_work"]
    assert bw["flag"] is None
    assert bw["reason"] == "scan state at start not recorded; no zpool iostat samples in the window"
    # the scan state alone does not judge it: a scrub starting mid-run shows only in zpool iostat
    half = truth_checks(rows(read=400 * MiB), c, context())["background_work"]
    assert half["flag"] is None and half["reason"] == "no zpool iostat samples in the window"
    assert truth_checks(rows(read=400 * MiB), counters(), context())["background_work"]["flag"] is False


def test_compressible_data():
    # compressible buffers on compression=lz4, declared by nothing (runs recorded before declarations)
    cd = truth_checks(rows(write=100 * MiB), counters(), context(compressratio=1.80))["compressible_data"]
    assert cd["flag"] is True and cd["threshold"] == 1.05
    assert truth_checks(rows(write=100 * MiB), counters(), context(compressratio=1.04))["compressible_data"]["flag"] \
        is False
    about = context(compressratio=1.80, incompressible_intended=False)        # intended, no percentage
    cd = truth_checks(rows(write=100 * MiB), counters(), about)["compressible_data"]
    assert cd["flag"] is None and cd["reason"] == "compressible data intended, but its percentage was not declared"
    unknown = context(compressratio=None)
    assert truth_checks(rows(write=100 * MiB), counters(), unknown)["compressible_data"]["flag"] is None


# --- compressible_data against the declared data (issue 27, item 6) --------------------------------

def declared(pct, compression="lz4", ratio=1.9, block=131072, **over):
    """A 1M sequential write's context on a dataset of 128K records, ashift 12, as a sweep records it."""
    return context(compressible_percent_declared=pct, incompressible_intended=pct == 0, compression=compression,
                   compressratio=ratio, block_bytes=block, ashift=12, **over)


def compressible(ctx):
    return truth_checks(rows(write=400 * MiB, rw="write", bs=MiB), counters(dev_write_bytes=400 * MiB), ctx)[
        "compressible_data"]


def test_declared_incompressible_data_that_compressed_is_flagged():
    cd = compressible(declared(0, ratio=1.6))
    assert cd["flag"] is True and cd["reason"] == "compressratio 1.60x; the spec declared incompressible data"


def test_declared_compressible_data_that_compressed_passes():
    cd = compressible(declared(50, "lz4", ratio=1.9))
    assert cd["flag"] is False and cd["reason"] == "compressratio 1.90x on lz4, possible for 50% compressible"
    assert cd["ceiling"] == 2.5                         # 1.25 x 100 / (100 - 50)
    for ratio in (1.06, 1.30, 2.45):                    # low or high, a compressor's result is a finding
        assert compressible(declared(50, "zstd", ratio=ratio))["flag"] is False


def test_declared_compressible_data_with_compression_off_stays_at_one():
    cd = compressible(declared(50, "off", ratio=1.0))
    assert cd["flag"] is False and cd["reason"] == "compressratio 1.00x; compression is off"


def test_declared_compressible_data_that_did_not_compress_is_flagged():
    # 128K records of 50% data: at worst 128K x 0.5 x 1.1 = 70.4K, 72K in 4K sectors <= 112K (7/8):
    # ZFS keeps every record compressed, so 1.00x means the buffers were not what was declared
    cd = compressible(declared(50, "lz4", ratio=1.0))
    assert cd["flag"] is True
    assert cd["reason"] == ("compressratio 1.00x on lz4: 50% compressible data should have compressed; "
                            "fio's buffers were not what was declared")


def test_declared_compressible_data_zfs_cannot_store_smaller_is_not_flagged():
    # 4K blocks on 4K sectors: 2.2K at worst rounds up to 4K, no saving: ZFS stores them as they are
    cd = compressible(declared(50, "lz4", ratio=1.0, block=4096))
    assert cd["flag"] is False and "stored uncompressed" in cd["reason"]
    # 20%: 128K x 0.8 x 1.1 = 112.6K rounds to 116K > 112K: not surely kept compressed either
    assert compressible(declared(20, "lz4", ratio=1.0))["flag"] is False


@pytest.mark.parametrize("pct, block, ashift, must", [
    (50, 131072, 12, True),      # 70.4K at worst -> 72K <= 128K - 16K
    (50, 16384, 12, True),       # 8.8K -> 12K <= 16K - 4K (a sector saved)
    (50, 8192, 12, False),       # 4.4K -> 8K: nothing saved
    (50, 8192, 9, True),         # 4.4K -> 4.5K <= 8K - 1K on 512-byte sectors
    (50, 4096, 12, False),       # 2.2K -> 4K
    (20, 131072, 12, False),     # 112.6K -> 116K > 112K: under an eighth saved
    (90, 131072, 12, True),      # 14.1K -> 16K
])
def test_which_blocks_zfs_must_keep_compressed(pct, block, ashift, must):
    assert compressibility.stored_compressed(pct, block, ashift) is must


def test_a_ratio_beyond_what_the_declaration_allows_is_flagged():
    cd = compressible(declared(50, "zstd", ratio=2.6))   # 50% random bytes cannot shrink below half
    assert cd["flag"] is True and "beyond the 2.50x 50% compressible data allows" in cd["reason"]


def test_declared_compressible_data_not_judged_without_what_it_needs():
    assert compressible(declared(50, ratio=None))["reason"] == "compressratio not recorded"
    assert compressible(declared(50, ratio=None))["flag"] is None
    assert compressible(declared(50, compression=None, ratio=1.0))["flag"] is None       # property not read back
    assert compressible(declared(100, ratio=1.0))["flag"] is None                        # all zeros: holes
    assert compressible(declared(50, ratio=1.0, block=None))["flag"] is None
    assert compressible(declared(50, ratio=None, surface="raw"))["flag"] is None


def test_declared_compressible_data_moves_fewer_bytes_on_the_disks_and_that_is_no_fault():
    """fio's bytes / compressratio reach the disks: a cold read of data at 2.2x reads 0.45 x fio's
    bytes (under cache_served's 0.5, yet 0.45 x 2.2 = 0.99 of the data), a write lands 0.40 x on a
    stripe (under write_amplification's 0.5; 0.40 x 2.2 = 0.88). Compression nobody declared
    excuses nothing: the same numbers with incompressible data declared are flagged."""
    read = [r for r in rows(read=400 * MiB, rw="read", bs=MiB)]
    c = counters(dev_read_bytes=180 * MiB, pool_read_bytes=180 * MiB, arc_demand_data_hit_ratio=0.6)
    ok = truth_checks(read, c, declared(50, "zstd", ratio=2.2))
    assert ok["cache_served"]["flag"] is False and ok["cache_served"]["logical_per_physical"] == 2.2
    assert ok["no_device_io"]["flag"] is False and ok["compressible_data"]["flag"] is False
    bad = truth_checks(read, c, declared(0, "zstd", ratio=2.2))
    assert bad["cache_served"]["flag"] is True and bad["compressible_data"]["flag"] is True
    write = rows(write=400 * MiB, rw="write", bs=MiB)
    w = counters(dev_write_bytes=160 * MiB, pool_write_bytes=160 * MiB, dev_read_bytes=0, pool_read_bytes=0)
    wa = truth_checks(write, w, declared(50, "zstd", ratio=2.2))["write_amplification"]
    assert wa["flag"] is False and wa["value"] == pytest.approx(0.40)
    assert wa["reason"] == "0.40 (0.88 of the data at 2.20x)"
    wa0 = truth_checks(write, w, declared(0, "zstd", ratio=2.2))["write_amplification"]
    assert wa0["flag"] is True and wa0["reason"] == "0.40: writes did not reach the disks in the window"


# --- emulation_bound ----------------------------------------------------------------------------------

def test_emulation_bound_throttled_model_with_saturated_cpu():
    # busiest disk at 100 of 400 IOPS (25%) and 0.4 of 100 MiB/s; usr + sys = 92%
    c = counters(dev_iops_busiest=100.0, dev_bw_bytes_s_busiest=0.4 * MiB, cpu_usr_pct=40.0, cpu_sys_pct=52.0,
                 cpu_iowait_pct=3.0, cpu_idle_pct=5.0)
    eb = truth_checks(rows(read=400 * MiB), c, context())["emulation_bound"]
    assert eb["flag"] is True and eb["iops_share"] == pytest.approx(0.25) and eb["cpu_busy_pct"] == 92
    # same disks, CPU mostly waiting for I/O: disk-bound, not emulation-bound
    waiting = counters(dev_iops_busiest=100.0, dev_bw_bytes_s_busiest=0.4 * MiB, cpu_usr_pct=5.0, cpu_sys_pct=10.0,
                       cpu_iowait_pct=85.0, cpu_idle_pct=0.0)
    assert truth_checks(rows(read=400 * MiB), waiting, context())["emulation_bound"]["flag"] is False
    # a disk at its IOPS limit is disk-bound even with a busy CPU
    at_limit = counters(dev_iops_busiest=395.0, cpu_usr_pct=40.0, cpu_sys_pct=52.0, cpu_idle_pct=5.0)
    assert truth_checks(rows(read=400 * MiB), at_limit, context())["emulation_bound"]["flag"] is False


def test_emulation_bound_unthrottled_and_not_lab():
    hot = counters(dev_iops_busiest=30000.0, cpu_usr_pct=30.0, cpu_sys_pct=45.0, cpu_steal_pct=15.0,
                   cpu_iowait_pct=2.0, cpu_idle_pct=8.0)
    unthrottled = context(disk_model_iops=None, disk_model_bw=None)
    eb = truth_checks(rows(read=400 * MiB), hot, unthrottled)["emulation_bound"]
    assert eb["flag"] is True and eb["cpu_busy_pct"] == 90 and "unthrottled" in eb["reason"]
    assert truth_checks(rows(read=400 * MiB), counters(), unthrottled)["emulation_bound"]["flag"] is False
    not_lab = truth_checks(rows(read=400 * MiB), hot, context(lab=False))["emulation_bound"]
    assert not_lab["flag"] is None and not_lab["reason"].startswith("not a lab run")
    no_cpu = counters(cpu_usr_pct=math.nan, cpu_sys_pct=math.nan, cpu_idle_pct=math.nan, cpu_iowait_pct=math.nan)
    assert truth_checks(rows(read=400 * MiB), no_cpu, context())["emulation_bound"]["flag"] is None
    # only an IOPS limit: the missing bandwidth limit counts as never reached
    only_iops = context(disk_model_bw=None)
    hot_low = {**hot, "dev_iops_busiest": 100.0}
    assert truth_checks(rows(read=400 * MiB), hot_low, only_iops)["emulation_bound"]["flag"] is True


# --- real inputs -----------------------------------------------------------------------------------------

def test_real_capture_end_to_end():
    """dd's 96 MiB read-back on vda, judged as if fio had read 96 MiB cold (no ZFS on that VM)."""
    local = FIX / "counters" / "sampler-local"
    t = [b[0] for b in split_snapshots((local / "diskstats.txt").read_text())]
    c = summarize_counters(parse_sampler_dir(local), t[2], t[3], ["vda"], "tank")
    fio_rows = [dict(direction="read", io_bytes=96 * MiB, rw="read", bs_bytes=MiB)]
    ctx = context(lab=False, iops_series=None, scan_at_start=None, trim_active=None, qemu_pid=None, block_bytes=None)
    checks = truth_checks(fio_rows, c, ctx)
    assert checks["cache_served"]["flag"] is False and checks["cache_served"]["ratio"] == pytest.approx(1.0)
    # no ZFS on that VM: the disk layer moved, the pool layer's comparison could not be made
    nd = checks["no_device_io"]
    assert nd["flag"] is None and nd["unmeasured"] == ["zpool:read"]
    assert nd["comparisons"] == {"disk:read": False, "zpool:read": None}
    assert checks["background_work"]["flag"] is None and checks["fill_level"]["missing_layers"] == "arc,zpool,txg"
    # not a lab, no block size: emulation, contention and read amplification are not judged
    assert {k for k in truth.CHECKS if checks[k]["flag"] is None} == {
        "no_device_io", "write_amplification", "not_steady", "background_work", "emulation_bound",
        "read_amplification", "host_contention"}
    with_block = truth_checks(fio_rows, c, dataclasses.replace(ctx, block_bytes=128 * 1024))["read_amplification"]
    assert with_block["flag"] is False and with_block["value"] == pytest.approx(1.0)


def test_real_fio_rows_feed_the_checks():
    fio_rows = parse_fio_json((FIX / "fio" / "host-seqwrite.json").read_text())
    f = fio_rows[0]["io_bytes"]
    checks = truth_checks(fio_rows, counters(dev_write_bytes=f * 1.5, pool_write_bytes=f * 1.5), context())
    assert checks["write_amplification"]["fio_write_bytes"] == f
    assert checks["write_amplification"]["value"] == pytest.approx(1.5)
