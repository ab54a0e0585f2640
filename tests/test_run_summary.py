"""Counter summaries over a measurement window, fio logs on the epoch clock, the timeline table."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.measure.counters import TIDY, parse_sampler_dir, split_snapshots
from zbench_lib.measure.fio_parse import parse_fio_logs_dir
from zbench_lib.measure.run_summary import fio_timeseries, iops_series, summarize_counters, timeline, whole_disks

FIX = Path(__file__).parent / "fixtures"
LOCAL = FIX / "counters" / "sampler-local"


@pytest.fixture(scope="module")
def local():
    return parse_sampler_dir(LOCAL)


def snapshot_times():
    return [b[0] for b in split_snapshots((LOCAL / "diskstats.txt").read_text())]


# --- the real capture: dd wrote 96 MiB, then read it back, on vda -----------------------

def test_summary_of_real_capture_whole_intervals(local):
    t0, t1, t2, t3 = snapshot_times()
    s = summarize_counters(local, t1, t3, ["vda"], "tank")  # exactly the intervals t1->t2 and t2->t3
    dt2, dt3 = t2 - t1, t3 - t2
    # vda counters t1 -> t2: writes 2779529-2779336 = 193, sectors 79019216-78820624 = 198592,
    # write_ms 354831-354714 = 117, io_ms 60164-60084 = 80.
    # t2 -> t3: reads 1812739-1811203 = 1536, sectors 66614714-66418106 = 196608, read_ms 52, io_ms 60.
    assert s["dev_write_bytes"] == pytest.approx(198592 * 512)
    assert s["dev_read_bytes"] == pytest.approx(196608 * 512)  # = 96 MiB, what dd read back
    assert s["dev_read_bytes"] == pytest.approx(96 * 2 ** 20)
    assert s["dev_r_s"] == pytest.approx(1536 / (t3 - t1)) and s["dev_w_s"] == pytest.approx(193 / (t3 - t1))
    assert s["dev_avg_req_bytes"] == pytest.approx((198592 + 196608) * 512 / (1536 + 193))
    # util_pct_i = io_ms_i / (dt_i * 1000) * 100, weighted by dt_i: (8 + 6) / (dt2 + dt3)
    assert s["dev_util_pct_mean"] == pytest.approx(14 / (t3 - t1))
    assert s["dev_util_pct_max"] == pytest.approx(8 / dt2)
    # await per request over the window: (write_ms + read_ms) / requests
    assert s["dev_await_ms_mean"] == pytest.approx((117 + 52) / (193 + 1536))
    # /proc/stat t1 -> t2: user 131, system 32, idle 30, iowait 5, softirq 3 (total 201);
    # t2 -> t3: user 113, system 3, idle 69, iowait 3, softirq 3 (total 191).
    assert s["cpu_usr_pct"] == pytest.approx(100 * (131 / 201 * dt2 + 113 / 191 * dt3) / (dt2 + dt3))
    assert s["cpu_sys_pct"] == pytest.approx(100 * (35 / 201 * dt2 + 6 / 191 * dt3) / (dt2 + dt3))
    assert s["cpu_idle_pct"] == pytest.approx(100 * (30 / 201 * dt2 + 69 / 191 * dt3) / (dt2 + dt3))
    assert s["cpu_iowait_pct"] == pytest.approx(100 * (5 / 201 * dt2 + 3 / 191 * dt3) / (dt2 + dt3))
    assert s["samples_disk"] == 2 and s["samples_cpu"] == 2
    assert s["missing_layers"] == "arc,zpool,txg"  # no ZFS on the development VM
    assert math.isnan(s["pool_read_bytes"]) and math.isnan(s["arc_hit_ratio"]) and math.isnan(s["txg_count"])
    assert s["devices"] == "vda" and s["missing_devices"] == "" and s["window_s"] == pytest.approx(t3 - t1)


def test_summary_counts_only_the_part_of_an_interval_inside_the_window(local):
    t0, t1, t2, t3 = snapshot_times()
    s = summarize_counters(local, t3 - (t3 - t2) / 2, t3, ["vda"], "tank")  # second half of the read
    assert s["dev_read_bytes"] == pytest.approx(96 * 2 ** 20 / 2)
    assert s["dev_write_bytes"] == 0 and s["samples_disk"] == 1
    # ramp excluded: a window ending before the read saw no reads
    assert summarize_counters(local, t1, t2, ["vda"], "tank")["dev_read_bytes"] == 0


def test_summary_device_selection(local):
    t0, t1, t2, t3 = snapshot_times()
    assert summarize_counters(local, t0, t3, None, "tank")["devices"] == "vda"  # zram0 is not a disk
    s = summarize_counters(local, t1, t3, ["vda", "vdb"], "tank")
    assert s["missing_devices"] == "vdb" and s["dev_read_bytes"] == pytest.approx(96 * 2 ** 20)
    s = summarize_counters(local, t1, t3, ["vdz"], "tank")
    assert math.isnan(s["dev_read_bytes"]) and s["missing_layers"].startswith("disk")
    assert whole_disks(["sda", "sda1", "nvme0n1", "nvme0n1p2", "zd0", "zd16", "loop3", "dm-0", "vdb"]) == \
        ["nvme0n1", "sda", "vdb"]


def test_summary_without_any_counters():
    s = summarize_counters({}, 0, 10, ["vdb"], "tank")
    assert s["missing_layers"] == "disk,cpu,arc,zpool,txg"
    assert all(math.isnan(s[k]) for k in ("dev_read_bytes", "pool_write_bytes", "arc_hits", "cpu_usr_pct"))
    with pytest.raises(ValueError, match="empty measurement window"):
        summarize_counters({}, 10, 10, None, "tank")


# --- the interval that straddles the window's end (issue 34: fio's exit triggers a snapshot) ---

# A 16k randread at 1000 IOPS on vdb from T_IO, stopping at the window's end (fio's exit): a
# 3 s window after a 1 s ramp, samples 1 s apart in the sampler's rhythm, as the lab's test has.
T_IO, RAMP_S, WINDOW_S, IOPS, BS = 1000.0, 1.0, 3.0, 1000, 16384
T_START, T_END = T_IO + RAMP_S, T_IO + RAMP_S + WINDOW_S
RATE = IOPS * BS                                             # bytes/s while fio runs
TRUTH = RATE * WINDOW_S                                      # what the disk read inside the window


def diskstats_dir(tmp_path: Path, times: list[float]) -> Path:
    """A sampler directory whose /proc/diskstats snapshots, taken at `times`, hold vdb's
    cumulative counters of that I/O: reads and sectors grow at the constant rate between
    T_IO and T_END and not at all outside it."""
    blocks = []
    for t in times:
        busy = min(max(t, T_IO), T_END) - T_IO                 # seconds of I/O done by t
        reads, sectors = round(IOPS * busy), round(RATE * busy / 512)
        fields = [reads, 0, sectors, reads // 2, 0, 0, 0, 0, 0, round(1000 * busy), reads // 2] + [0] * 6
        blocks.append(f"@@ {t:.3f} {t - 900:.2f}\n 252 16 vdb {' '.join(map(str, fields))}\n")
    tmp_path.mkdir()
    (tmp_path / "diskstats.txt").write_text("".join(blocks))
    return tmp_path


def test_the_interval_straddling_the_windows_end_under_counts_it_unless_it_is_short(tmp_path):
    """All of the straddling interval's bytes were read before T_END, but the summary spreads
    them uniformly over the interval (a rate over it): the window loses RATE*u*(1 - u/L), u the
    interval's part inside the window, L its length. The sampler's loop, stretched to 3 s on a
    loaded machine, lost a quarter of a 3 s window; a snapshot 20 ms after fio's exit, sent by
    the wrapper fio runs in (counters.snap_after_script), loses well under 2%."""
    rhythm = [T_IO - 0.5, T_IO + 0.5, T_IO + 1.5, T_IO + 2.5]   # the sampler's 1 s rhythm before the end

    # before: the loop stretched to 3 s across the end (as on the CI machine at load 9-10)
    old_L, old_u = 3.0, T_END - rhythm[-1]                       # 3 s straddling, 1.5 s of it inside
    old = diskstats_dir(tmp_path / "old", [*rhythm, rhythm[-1] + old_L, rhythm[-1] + old_L + 1])
    old_loss = RATE * old_u * (1 - old_u / old_L)                # 0.75 s of I/O, 12.3 MB
    got = summarize_counters(parse_sampler_dir(old), T_START, T_END, ["vdb"], "")["dev_read_bytes"]
    assert got == pytest.approx(TRUTH - old_loss)
    assert got / TRUTH == pytest.approx(0.75)                    # the CI run saw 0.72

    # after: fio's exit triggers a snapshot 20 ms later; the loop's rhythm goes on from it
    snap = T_END + 0.02
    new_L, new_u = snap - (T_END - 0.5), 0.5                     # the 1 s rhythm had a sample 0.5 s before the end
    new = diskstats_dir(tmp_path / "new", [*rhythm, T_END - 0.5, snap, snap + 1.0])
    new_loss = RATE * new_u * (1 - new_u / new_L)                # 0.019 s of I/O
    got = summarize_counters(parse_sampler_dir(new), T_START, T_END, ["vdb"], "")["dev_read_bytes"]
    assert got == pytest.approx(TRUTH - new_loss)
    assert abs(got / TRUTH - 1) < 0.02                           # 0.9936


# --- ZFS layers from the lab captures, assembled into a sampler directory ----------------

@pytest.fixture()
def zfs_dir(tmp_path):
    c = FIX / "counters"
    shutil.copy(c / "zpool-iostat-Hpvyl.txt", tmp_path / "zpool_iostat.txt")
    (tmp_path / "arcstats.txt").write_text("@@ 1795282571.0 421.0\n" + (c / "arcstats-a.txt").read_text()
                                          + "@@ 1795282572.0 422.0\n" + (c / "arcstats-b.txt").read_text())
    # uptime 422 s at epoch ...573: a TXG born at hrtime b ns sits at ...573 - 422 + b/1e9
    (tmp_path / "txgs.txt").write_text("@@ 1795282573.0 422.0\n" + (c / "txgs.txt").read_text())
    (tmp_path / "sampler.info").write_text("start 1795282560 interval 1 pool tank\n")
    return tmp_path


def test_summary_of_zfs_layers(zfs_dir):
    s = summarize_counters(parse_sampler_dir(zfs_dir), 1795282571, 1795282573, None, "tank")
    # zpool iostat samples stamped ...570, ...572, ...573: the window holds 571-572 (of the
    # interval 570-572 ending at 572) and 572-573, one second each. Pool row rates:
    # 572: read 2 ops 19747 B, write 6 ops 44739 B, total_wait r 379846656 w 675882130 ns
    # 573: read 0, write 38 ops 86024 B, total_wait w 277337652 ns
    assert s["pool_read_bytes"] == pytest.approx(19747) and s["pool_read_ops"] == pytest.approx(2)
    assert s["pool_write_bytes"] == pytest.approx(44739 + 86024) and s["pool_write_ops"] == pytest.approx(44)
    assert s["pool_total_wait_read_ns_mean"] == pytest.approx(379846656)
    assert s["pool_total_wait_write_ns_mean"] == pytest.approx((675882130 * 6 + 277337652 * 38) / 44)
    assert s["pool_scrub_io_samples"] == 0 and s["pool_trim_io_samples"] == 0 and s["samples_zpool"] == 2
    # arcstats a -> b (one second): hits 31369-29815, iohits 0, misses 404; demand data hits 3927-3465
    assert (s["arc_hits"], s["arc_iohits"], s["arc_misses"]) == (1554, 0, 404)
    assert s["arc_hit_ratio"] == pytest.approx(1554 / 1958)
    assert (s["arc_demand_data_hits"], s["arc_demand_data_misses"]) == (462, 404)
    assert s["arc_demand_data_hit_ratio"] == pytest.approx(462 / 866)
    assert s["arc_size_bytes_mean"] == 253146280
    # TXGs born 571.38 (76), 572.57 (77), 572.58 (78); 75 (567.3) is before, 79 still open.
    assert s["txg_count"] == 3
    assert s["txg_sync_ms_mean"] == pytest.approx((2034370 + 5313340 + 746580) / 3 / 1e6)
    assert s["missing_layers"] == "disk,cpu"


# --- fio on the epoch clock --------------------------------------------------------------

def fio_logs():
    return parse_fio_logs_dir(FIX / "fio")  # host-mixed: job 1, t_ms 1000 and 2000


def test_fio_timeseries_real_logs():
    ts = fio_timeseries(fio_logs(), 1000.0)
    assert list(ts.columns) == TIDY and set(ts["layer"]) == {"fio"}
    r = ts[(ts.device == "read") & (ts.metric == "iops")]
    assert list(r["t_s"]) == [1001.0, 1002.0] and list(r["value"]) == [71514, 66562]
    bw = ts[(ts.device == "write") & (ts.metric == "bw_bytes_s")]
    assert list(bw["value"]) == [244544 * 1024, 225848 * 1024]  # KiB/s -> bytes/s
    assert iops_series(ts, 1000.0, 1002.0) == [71514 + 30568, 66562 + 28231]
    assert iops_series(ts, 1001.0, 1002.0) == [66562 + 28231]  # the first second is ramp


def test_fio_timeseries_sums_jobs_on_the_rounded_second():
    logs = pd.DataFrame(dict(prefix="x", metric="iops", job=[1, 2, 1, 2], t_ms=[1000, 1003, 1999, 2001],
                             value=[10, 20, 30, 40], direction="read", bs=0))
    ts = fio_timeseries(logs, 50.0)
    assert list(ts["t_s"]) == [51.0, 52.0] and list(ts["value"]) == [30, 70]
    assert fio_timeseries(logs.iloc[0:0], 0).empty


def test_timeline_puts_every_layer_on_one_table(local):
    ts = fio_timeseries(fio_logs(), snapshot_times()[0])
    tl = timeline(local, ts)
    assert list(tl.columns) == TIDY
    assert set(tl["layer"]) == {"disk", "cpu", "fio"}
    assert len(tl) == len(local["disk"]) + len(local["cpu"]) + len(ts)
    assert tl["t_s"].is_monotonic_increasing
    assert timeline({}).empty and list(timeline({}).columns) == TIDY


def test_a_second_without_completions_is_zero_not_missing():
    # fio logs a second only when an I/O completed in it: a 3 s stall leaves no entries.
    ts = pd.DataFrame({"t_s": [1001.0, 1002.0, 1006.0, 1007.0], "metric": "iops", "value": [900.0, 800.0, 50.0, 700.0],
                       "layer": "fio", "device": "write"})
    assert iops_series(ts, 1000.0, 1007.0) == [900.0, 800.0, 0.0, 0.0, 0.0, 50.0, 700.0]
