"""A clients run's aggregate restricted to the window every client shared (issue 46, item 5; methods §20).

A hand-made two-client run whose clients did not start together: c0 ran 4 s, at 2,000 IOPS for its first
2 s (alone: nothing else was running) and 1,000 IOPS for the next 2; c1 started 2 s after c0, on the
storage clock, and ran 4 s at 1,500 IOPS. The shared window is c1's start to c0's end, 2 s, in which c0
did 2,000 I/Os and c1 3,000. Each client's stamped iops log is written as fio 3.33 writes it with
``log_avg_msec=500`` and ``log_unix_epoch=1`` (stat.c ``__add_samples``: a sample every 500 ms, the rate
over the time since the previous one, none for the last part-interval), on the client's own clock; c1's
clock runs 300 ms ahead of the storage node's. Every expected number is worked out in the comments.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from zbench_lib.measure.client_rows import client_fio_rows, client_table

S0 = 1_800_000_000_000          # c0's start, ms, on the storage clock (and on c0's own: offset 0)
C1_AHEAD_MS = 300               # c1's clock minus the storage node's
BS = 4096


def _entry(port: int, ios: int, runtime_ms: int, bins: dict[int, int]) -> dict:
    lat = {"N": ios, "min": float(min(bins)), "max": float(max(bins)),
           "mean": sum(k * n for k, n in bins.items()) / ios, "bins": {str(k): n for k, n in bins.items()}}
    return {"jobname": "load", "groupid": 0, "error": 0, "job_runtime": runtime_ms, "hostname": "127.0.0.1",
            "port": port, "read": {"io_bytes": ios * BS, "total_ios": ios, "runtime": runtime_ms,
                                   "iops": ios * 1000 / runtime_ms, "bw_bytes": ios * BS * 1000 / runtime_ms,
                                   "lat_ns": lat}}


def _log(start_ms: int, rates: list[int]) -> str:
    """An iops log as fio writes it: sample k (k = 1, 2, ...) at start + 500 k, its rate over those 500 ms."""
    return "".join(f"{start_ms + 500 * (k + 1)}, {r}, 0, 0, 0\n" for k, r in enumerate(rates))


def skewed_attempt(tmp_path: Path, round_trip_s: float = 0.010) -> Path:
    """The run of the module's text as an attempt directory; each clock reading took `round_trip_s`."""
    attempt = tmp_path / "attempt-1"
    clients = attempt / "clients"
    clients.mkdir(parents=True)
    # c0: 1000 reads per 500 ms for 2 s, then 500; 7 samples logged (the last 500 ms is not): 4 x 1000 +
    # 3 x 500 = 5500 of its 6000. c1: 750 per 500 ms for 4 s, 6000 reads, 7 samples, 5250 logged.
    # Bins: c0's 4000 uncontended reads at 1000 ns, its 2000 contended at 3000; c1's 5900 at 3000, 100 at 9000.
    stats = [_entry(57747, 6000, 4000, {1000: 4000, 3000: 2000}), _entry(52907, 6000, 4000, {3000: 5900, 9000: 100})]
    (clients / "fio.json").write_text(json.dumps({"fio version": "fio-3.33", "timestamp": S0 // 1000,
                                                  "client_stats": stats}))
    (clients / "c0_iops.1.log.127.0.0.1").write_text(_log(S0, [2000] * 4 + [1000] * 3))
    (clients / "c1_iops.1.log.127.0.0.1").write_text(_log(S0 + 2000 + C1_AHEAD_MS, [1500] * 7))
    for label in ("c0", "c1"):
        (clients / f"job-{label}.fio").write_text("[global]\nrw=randread\nbs=4k\niodepth=1\n[load]\n")
    half = round_trip_s / 2
    at = S0 / 1000

    def reading(label, ahead_s, t):
        return {"label": label, "storage_before": t - half, "client": t + ahead_s, "storage_after": t + half}

    clocks = {"start": [reading("c0", 0.0, at - 1), reading("c1", C1_AHEAD_MS / 1000, at - 1)],
              "end": [reading("c0", 0.0, at + 7), reading("c1", C1_AHEAD_MS / 1000, at + 7)]}
    (clients / "clocks.json").write_text(json.dumps(clocks))
    run = {"t0": at - 1, "t1": at + 7, "t_start": at, "t_end": at + 6, "ramp_s": 0, "pool": "", "devices": [],
           "kernel_devices": [], "workload": "randread", "context": {},
           "clients": {"endpoints": {"c0": "127.0.0.1,57747", "c1": "127.0.0.1,52907"}, "interval_ms": 500}}
    (attempt / "run.json").write_text(json.dumps(run))
    (attempt / "counters").mkdir()
    return attempt


def test_the_aggregate_counts_only_the_io_inside_the_shared_window(tmp_path):
    [row] = client_fio_rows(skewed_attempt(tmp_path))
    # The window on the storage clock: c1's start S0 + 2000 (its log says S0 + 2300 on its clock, 300 ahead)
    # to c0's end S0 + 4000: 2000 ms. In it c0 did 2 s x 1000 = 2000 reads, c1 2 s x 1500 = 3000: 5000 reads
    # in 2 s, 2500 IOPS. Each client's mean rate over its own run, what the aggregate was before, gives
    # 6000 / 4 + 6000 / 4 = 3000 IOPS: c0's uncontended first 2 s counted as if they were shared.
    assert row["runtime_ms"] == 2000
    assert row["client_skew_ms"] == pytest.approx(2000.0)
    assert row["iops"] == pytest.approx(2500.0)
    assert row["bw_bytes_s"] == pytest.approx(2500.0 * BS, abs=1)
    assert row["io_bytes"] == 5000 * BS
    # every I/O is still counted in the totals: 12000 reads, what supports a percentile
    assert row["total_ios"] == 12000
    # shares of the window's IOPS: c0 1000 / 2500 = 0.4, c1 1500 / 2500 = 0.6 (over whole runs: 0.5 each)
    assert row["client_iops_min_share"] == pytest.approx(0.4)
    assert row["client_iops_max_share"] == pytest.approx(0.6)
    # 7000 of the 12000 reads fell outside the window (c0's first 2 s: 4000; c1's last 2 s: 3000)
    assert row["client_outside_share"] == pytest.approx(7000 / 12000)


def test_jains_index_of_a_run_is_read_from_the_window_iops(tmp_path):
    [row] = client_fio_rows(skewed_attempt(tmp_path))
    # J = (sum x)^2 / (n sum x^2) with x = 1000, 1500 IOPS: 2500^2 / (2 x (1000^2 + 1500^2)) = 6.25 / 6.5
    assert row["client_jain"] == pytest.approx(6.25 / 6.5)
    table = {r["client"]: r for r in client_table(skewed_attempt(tmp_path / "again"))}
    assert table["c0"]["window_iops"] == pytest.approx(1000.0) and table["c1"]["window_iops"] == pytest.approx(1500.0)
    assert table["c0"]["iops_share"] == pytest.approx(0.4)
    # a client's own IOPS over its own run stays beside it
    assert table["c0"]["iops"] == pytest.approx(1500.0)


def test_the_windows_p99_is_bounded_by_the_share_of_io_outside_it(tmp_path):
    [row] = client_fio_rows(skewed_attempt(tmp_path))
    # The summed bins (whole runs): 4000 at 1000 ns, 7900 at 3000, 100 at 9000; N 12000. fio's p99: the first bin
    # reaching 0.99 x 12000 = 11880: 3000 ns. The window's own p99 is not in the bins (fio keeps one histogram per
    # run), but with a share f = 7/12 of the I/Os outside it, it lies between the whole-run quantiles at
    # (1 - f) 0.99 = 0.4125 and 0.4125 + f = 0.995833: 0.4125 x 12000 = 4950 is first reached at 3000 ns,
    # 0.995833 x 12000 = 11950 at 9000 ns.
    assert row["lat_p99_ns"] == 3000.0
    assert (row["client_p99_window_low_ns"], row["client_p99_window_high_ns"]) == (3000.0, 9000.0)


def test_the_clocks_uncertainty_is_compared_with_the_skew_and_the_window(tmp_path):
    [row] = client_fio_rows(skewed_attempt(tmp_path))
    # each reading took 10 ms: every start is placed within +-5 ms (no drift: both readings agree), so the
    # 2000 ms window and the 2000 ms skew are both far beyond it
    assert row["client_clock_check"] is True
    assert "±5 ms" in row["client_clock_note"]


def test_a_window_narrower_than_the_clocks_uncertainty_is_not_judged(tmp_path):
    # readings that took 2.5 s: each start within +-1.25 s, so the window's length (2000 ms) is known only to
    # +-2.5 s: it could be empty. Its IOPS is not judged (no number), never the whole runs' 3000.
    [row] = client_fio_rows(skewed_attempt(tmp_path, round_trip_s=2.5))
    assert row["client_clock_check"] is False
    assert math.isnan(row["iops"])
    assert "not judged" in row["client_clock_note"] and "±1250 ms" in row["client_clock_note"]
    assert math.isnan(row["client_iops_min_share"]) and math.isnan(row["client_jain"])
    assert row["total_ios"] == 12000
