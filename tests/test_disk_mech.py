"""The disk mechanism models (issue 33) in virtual time: no nbdkit, no lab.

Expected values come from the sources, never from the code under test: Ruemmler & Wilkes
(1994) for the seek law's published coefficients, the Hitachi data sheets for seek times and
rotation, the Samsung data sheets for the SSDs (docs/methods.md §19).
"""

import dataclasses
import random
import shutil
import subprocess

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.disk_mech import (FLUSH, READ, WRITE, HddDrive, Request, SeekCurve, closed_loop,
                                        fit_seek_curve, weighted_average_ms)
from zbench_lib.hosts.disk_models import PRESETS, parse_model
from zbench_lib.hosts.mech_models import parse_mech
from zbench_lib.hosts.nbd_disk import build_nbdkit_argv

GiB = 1024 ** 3
HP97560 = SeekCurve(a=3.24, b=0.400, c=8.00, e=0.008, d0=383)   # Ruemmler & Wilkes 1994, Table 1


def _iops(latencies, depth):
    return len(latencies) / (sum(latencies) / depth)          # Little's law in a closed loop


def _random_reads(size, seed=1, span=1.0):
    rng = random.Random(seed)
    blocks = int(size * span) // 4096
    return lambda i: Request(READ, rng.randrange(blocks) * 4096, 4096)


def test_the_seek_law_gives_ruemmler_and_wilkes_published_points():
    # HP 97560: 3.24 + 0.400*sqrt(d) ms below 383 cylinders, 8.00 + 0.008*d ms above.
    assert HP97560.ms(100) == pytest.approx(7.24)
    assert HP97560.ms(1000) == pytest.approx(16.0)
    assert HP97560.ms(383) == pytest.approx(11.07, abs=0.01)   # the two laws meet at the knee
    assert HP97560.ms(0) == 0


def test_a_fitted_curve_hits_the_data_sheet_and_rises():
    # Travelstar 5K320: single track 1.0 ms, weighted average 12 ms, full stroke 20 ms.
    c = fit_seek_curve(1.0, 12.0, 20.0, 100_000)
    assert c.ms(1) == pytest.approx(1.0)
    assert c.ms(100_000) == pytest.approx(20.0)
    assert weighted_average_ms(c, 100_000) == pytest.approx(12.0, rel=1e-3)
    grid = [c.ms(d) for d in range(1, 100_001, 97)]
    assert all(b > a for a, b in zip(grid, grid[1:]))


def test_no_curve_fits_an_average_above_the_full_stroke():
    with pytest.raises(ValueError, match="no increasing seek curve"):
        fit_seek_curve(1.0, 21.0, 20.0, 100_000)
    with pytest.raises(ConfigError, match="no increasing seek curve"):
        parse_mech("mech:hdd-5400,avg_seek_ms=25")


def test_rotational_latency_averages_half_a_revolution():
    # 7200 rpm: one turn 8.33 ms, the data sheet's average latency 4.17 ms.
    d = parse_mech("mech:hdd-7200").drive(GiB)
    rng, waits = random.Random(7), []
    for _ in range(20_000):
        off = rng.randrange(GiB // 4096) * 4096
        d.head_cyl = d.cylinder(off)                       # no seek: rotation only
        waits.append(d.positioning(off, rng.uniform(0, 10)) - d.p.overhead_ms / 1000)
    assert sum(waits) / len(waits) * 1000 == pytest.approx(4.17, rel=0.02)
    assert 0 <= min(waits) and max(waits) * 1000 < 8.34


def test_sptf_serves_the_nearest_request_first():
    d = parse_mech("mech:hdd-7200").drive(GiB)
    far, near = Request(READ, GiB - 4096, 4096), Request(READ, 64 * 4096, 4096)
    assert d.submit(far, 0.0) is None and d.submit(near, 0.0) is None
    assert d.dispatch(0.0).done == [near]                 # FIFO would have taken the far one


def test_depth1_iops_is_the_data_sheets_and_ncq_raises_it_with_depth():
    # 1 / (8.5 ms average seek + 4.17 ms average latency) = 78.9 IOPS (+0.2 ms overhead)
    qd1 = _iops(closed_loop(parse_mech("mech:hdd-7200").drive(GiB), _random_reads(GiB), 1, 2000), 1)
    qd32 = _iops(closed_loop(parse_mech("mech:hdd-7200").drive(GiB), _random_reads(GiB), 32, 3000), 32)
    assert qd1 == pytest.approx(78.9, rel=0.05)
    assert qd32 > 1.8 * qd1


def test_without_a_command_queue_depth_buys_nothing():
    m = parse_mech("mech:hdd-7200,queue_depth=1")
    qd1 = _iops(closed_loop(m.drive(GiB), _random_reads(GiB), 1, 2000), 1)
    qd32 = _iops(closed_loop(m.drive(GiB), _random_reads(GiB), 32, 2000), 32)
    assert qd32 == pytest.approx(qd1, rel=0.1)


def test_short_stroke_reads_are_faster_than_full_span():
    m = parse_mech("mech:hdd-7200")
    full = _iops(closed_loop(m.drive(GiB), _random_reads(GiB), 1, 2000), 1)
    short = _iops(closed_loop(m.drive(GiB), _random_reads(GiB, span=0.05), 1, 2000), 1)
    assert short > 1.3 * full


def test_outer_zones_stream_faster_than_inner_ones():
    d = parse_mech("mech:hdd-7200").drive(GiB)                # 150 MB/s outer, 75 MB/s inner
    assert d.media_rate(0) / 1e6 == pytest.approx(150, rel=0.05)
    assert d.media_rate(GiB - 1) / 1e6 == pytest.approx(75, rel=0.05)


def test_a_flush_destages_the_cache_and_ends_with_it():
    d = parse_mech("mech:hdd-7200").drive(GiB)
    for i in range(4):
        assert d.submit(Request(WRITE, i * 50 * 2**20, 4096), 0.0) is not None   # cached: done at once
    flush = Request(FLUSH)
    assert d.submit(flush, 0.0) is None and d.dirty_bytes == 4 * 4096
    now, jobs = 0.0, []
    while d.has_work():
        jobs.append(d.dispatch(now))
        now = jobs[-1].finish
    assert d.dirty == [] and d.dirty_bytes == 0
    assert jobs[-1].done == [flush] and flush.finish == now
    assert d.submit(Request(FLUSH), now) == pytest.approx(now + 0.0002)   # an empty cache: overhead only


def test_a_sync_write_costs_about_a_rotation():
    # A log written 4k at a time with a flush after each: the sector has just passed the head
    # when the next write comes, so each flush waits nearly a turn (8.33 ms at 7200 rpm).
    def log(i):
        return Request(WRITE, (i // 2) * 4096, 4096) if i % 2 == 0 else Request(FLUSH)
    lat = closed_loop(parse_mech("mech:hdd-7200").drive(GiB), log, 1, 400)
    flushes = lat[1::2]
    assert sum(flushes) / len(flushes) * 1000 == pytest.approx(8.33, rel=0.1)


def test_ssd_write_cliff_after_the_spare_area():
    # 850 EVO: 520 MB/s sequential writes in the buffer, 300 MB/s (assumed) past it;
    # the buffer is 1.2% of capacity (12 GB of 1 TB): 12.9 MB of a 1 GiB disk.
    d = parse_mech("mech:sata-ssd").drive(GiB)
    rates = [d.write_rate(0.0, 2**20) / 1e6 for _ in range(16)]
    assert rates[0] == pytest.approx(520) and rates[11] == pytest.approx(520)
    assert rates[13] == pytest.approx(300) and rates[-1] == pytest.approx(300)
    assert d.write_rate(1.0, 2**20) / 1e6 == pytest.approx(520)   # a second idle reclaims 50 MB


def test_ssd_depth1_reads_match_the_data_sheet_and_scale_with_channels():
    # 850 EVO: 10,000 IOPS at QD1, 98,000 at QD32 (Samsung); within 20%.
    m = parse_mech("mech:sata-ssd")
    assert _iops(closed_loop(m.drive(GiB), _random_reads(GiB), 1, 3000), 1) == pytest.approx(10_000, rel=0.2)
    assert _iops(closed_loop(m.drive(GiB), _random_reads(GiB), 32, 6000), 32) == pytest.approx(98_000, rel=0.2)


def test_ssd_reads_have_a_tail():
    lat = sorted(closed_loop(parse_mech("mech:nvme").drive(GiB), _random_reads(GiB), 1, 20_000))
    p50, p999 = lat[len(lat) // 2], lat[int(len(lat) * 0.999)]
    assert 2 < p999 / p50 < 10


@pytest.mark.parametrize("spec, message", [
    ("mech:hdd-9000", "unknown disk model 'mech:hdd-9000'"),
    ("mech:hdd-7200,rpm", "'rpm' is not key=value"),
    ("mech:hdd-7200,speed=3", "'speed=3' is not key=value"),
    ("mech:hdd-7200,rpm=fast", "rpm='fast' is not a float"),
    ("mech:hdd-7200,rpm=-7200", "rpm must be positive"),
    ("mech:hdd-7200,write_cache=maybe", "write_cache='maybe' is not a bool"),
    ("mech:hdd-7200,inner_mb_s=200", "inner_mb_s must be below outer_mb_s"),
    ("mech:sata-ssd,spare_fraction=2", "spare_fraction must be below 1"),
    ("mech:null,rpm=1", "the null model takes no parameters"),
])
def test_bad_mechanism_models_fail_at_load_in_one_line(spec, message):
    with pytest.raises(ConfigError) as exc:
        parse_model(spec)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_both_kinds_parse_as_a_model_and_throttle_presets_are_unchanged():
    m = parse_model("mech:hdd-7200,write_cache=off")
    assert m.mech == "mech:hdd-7200,write_cache=off" and m.qemu_throttle_options() == []
    assert parse_mech(m.mech).params.write_cache is False
    assert m.to_dict()["mech_model"]["params"]["rpm"] == 7200
    assert "mech" not in PRESETS["hdd"].to_dict() and parse_model("hdd").mech is None


def test_nbdkit_command_is_an_argument_list(tmp_path):
    argv = build_nbdkit_argv(tmp_path / "d.sock", tmp_path / "d.raw", "mech:hdd-5400")
    assert argv[:2] == ["nbdkit", "--foreground"] and "--exit-with-parent" in argv
    assert argv[-2:] == [f"file={tmp_path / 'd.raw'}", "model=mech:hdd-5400"]
    assert "--exit-with-parent" not in build_nbdkit_argv(tmp_path / "s", tmp_path / "r", "mech:null",
                                                         exit_with_parent=False)


@pytest.mark.skipif(not shutil.which("nbdkit"), reason="nbdkit not installed")
def test_nbdkit_refuses_a_bad_model_before_listening(tmp_path):
    (tmp_path / "d.raw").write_bytes(b"")
    argv = build_nbdkit_argv(tmp_path / "d.sock", tmp_path / "d.raw", "mech:null")
    argv[-1] = "model=mech:floppy"
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert res.returncode != 0 and "unknown disk model 'mech:floppy'" in res.stderr


def test_hdd_drive_is_deterministic_in_virtual_time():
    runs = [closed_loop(HddDrive(dataclasses.replace(parse_mech("mech:hdd-5400").params), GiB),
                        _random_reads(GiB, seed=3), 4, 500) for _ in range(2)]
    assert runs[0] == runs[1]


def test_sequential_reads_stream_at_the_outer_zone_rate_at_any_depth():
    # Read-ahead: a read that continues the last one pays no positioning, even among others queued.
    for depth in (1, 4):
        lat = closed_loop(parse_mech("mech:hdd-7200").drive(2 * GiB),
                          lambda i: Request(READ, i * 2**20, 2**20), depth, 300)
        assert 2**20 * len(lat) / (sum(lat) / depth) / 1e6 == pytest.approx(150, rel=0.1)
