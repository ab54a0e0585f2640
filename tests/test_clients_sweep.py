"""Several clients on one NFS datastore as a sweep feature (issue 30): what can be checked without a lab.

The spec and the plan (`clients` as a factor and as a target key), the clock-offset arithmetic, the
rows of a clients run derived from raw files (the stored two-client reports with hand-made clock readings:
tests/fixtures/fio_clients for the window, starts and rates, recorded before lat bins, and
tests/fixtures/fio_clients_lat, the same job with lat_percentiles=1, for the histograms; every expected
number below is worked out by hand in the comments or read from the fixture as the comment says),
and a clients run measured end to end on this machine: the storage node is the local host (its
sampler), the clients two `fio --server` daemons on 127.0.0.1 (a tiny rate-limited psync job on a file
in the test's directory), then its rows and per-client table derived from what it left in raw.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from zbench_lib.hosts.base import LocalHost
from zbench_lib.measure.client_clock import ClientClock, ClockReading, clocks_from_record, to_storage_ms
from zbench_lib.measure.client_rows import client_fio_rows, client_table, storage_window
from zbench_lib.measure.fio_clients import ClientLoad, FioServers, ServerSpec
from zbench_lib.measure.rows import derive_rows
from zbench_lib.measure.run_context import RunContext
from zbench_lib.measure.runner import measure_clients
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

FIX = Path(__file__).parent / "fixtures" / "fio_clients"            # before lat bins: starts, window, rates
FIX_LAT = Path(__file__).parent / "fixtures" / "fio_clients_lat"    # with lat bins: histograms, percentiles
needs_fio = pytest.mark.skipif(shutil.which("fio") is None or shutil.which("ss") is None,
                               reason="fio or ss not installed")
SPEC = """\
name: clients
question: How do several clients share one NFS datastore?
surface: dataset
host: lab
lab: {disks: 2, disk_size: 1G, model: hdd, extra_disks: 0}
factors:
  layout: [mirror]
  disks: [2]
  sync: [standard, always]
  clients: [1, 2, 4]
target: {size: 64M, access: nfs, recordsize: 16k}
workloads:
  - {name: randwrite, overrides: {runtime_s: 10, ramp_time_s: 2, bs: 16k}}
repetitions: {fixed: 3, pool_replicates: 1}
"""
MiB = 1024 ** 2
NO_JAIN = "Jain's index not judged (the results hold no client's IOPS over a shared window), "


# --- spec and plan -------------------------------------------------------------------------------

def test_a_clients_factor_plans_one_target_per_setting_mounted_by_the_largest_count():
    spec = parse_spec(SPEC)
    assert spec.clients == 4
    plan = expand(spec)
    # 2 sync levels x 3 client counts; the client count is a cell's, not a target's: 2 targets
    assert len(plan.cells) == 6 and len(plan.targets) == 2
    assert sorted(c.factors["clients"] for c in plan.cells) == [1, 1, 2, 2, 4, 4]
    for t in plan.targets:
        assert t.clients == 4 and t.surface == "nfs-clients"
        assert t.prefill_bytes == 4 * 64 * MiB          # one client's file of 64M each, four clients
        assert t.to_dict()["clients"] == 4
    assert "clients: 4 client lab(s)" in plan.describe()


def test_a_clients_target_key_is_every_cells_count():
    spec = parse_spec(SPEC.replace("  clients: [1, 2, 4]\n", "").replace("access: nfs,", "access: nfs, clients: 2,"))
    plan = expand(spec)
    assert spec.clients == 2 and {c.factors["clients"] for c in plan.cells} == {2}
    assert {t.clients for t in plan.targets} == {2}


def test_without_clients_nothing_changes():
    spec = parse_spec(SPEC.replace("  clients: [1, 2, 4]\n", ""))
    plan = expand(spec)
    assert spec.clients == 0
    assert all("clients" not in c.factors for c in plan.cells)
    assert all("clients" not in t.to_dict() and t.surface == "nfs" for t in plan.targets)
    assert "client lab" not in plan.describe()


# --- the clock offsets ---------------------------------------------------------------------------

def test_a_clients_offset_is_its_reading_against_the_midpoint_of_the_storage_readings():
    # storage read 100.0 then 100.4; the client, in between, read 103.5: offset 103.5 - 100.2 = 3.3 s,
    # exact within half the round trip, 0.2 s
    r = ClockReading("c0", 100.0, 103.5, 100.4)
    assert r.offset_s == pytest.approx(3.3) and r.uncertainty_s == pytest.approx(0.2)
    # at the end: 200.0 / 203.7 / 200.2 -> offset 3.6, uncertainty 0.1; the run uses the mean, 3.45
    clock = ClientClock("c0", r, ClockReading("c0", 200.0, 203.7, 200.2))
    assert clock.offset_s == pytest.approx(3.45) and clock.drift_s == pytest.approx(0.3)
    assert clock.uncertainty_s == pytest.approx(0.2)
    # a client time of 5000 ms on its clock is 5000 - 3450 = 1550 ms on the storage node's
    assert to_storage_ms(5000.0, clock.offset_s) == pytest.approx(1550.0)
    assert ClientClock("c0", r, None).offset_s == pytest.approx(3.3)


def test_clock_records_round_trip():
    rec = {"start": [ClockReading("c0", 1.0, 2.0, 1.5).to_record()],
           "end": [ClockReading("c0", 3.0, 4.0, 3.5).to_record()]}
    clocks = clocks_from_record(json.loads(json.dumps(rec)))
    assert clocks["c0"].start == ClockReading("c0", 1.0, 2.0, 1.5) and clocks["c0"].end.client == 4.0


# --- rows from a recorded raw run ------------------------------------------------------------------

def _recorded_attempt(tmp_path: Path, fix: Path = FIX) -> Path:
    """An attempt directory holding the stored two-client report of `fix`, hand-made clock readings and
    run.json (its run from fio's own timestamp in the report, 6 s long)."""
    attempt = tmp_path / "attempt-1"
    shutil.copytree(fix, attempt / "clients", ignore=shutil.ignore_patterns("README.md"))
    text = (fix / "fio.json").read_text()
    t0 = float(json.loads(text[text.find("{"):])["timestamp"])      # FIX: 1795672437
    # c0's clock runs 0.5 s ahead at the start (1000.6 against the midpoint 1000.1) and 0.6 s at the end:
    # mean 0.55 s; c1's 0.2 s behind at both (1000.2 against 1000.4; 2000.2 against 2000.4)
    clocks = {"start": [{"label": "c0", "storage_before": 1000.0, "client": 1000.6, "storage_after": 1000.2},
                        {"label": "c1", "storage_before": 1000.3, "client": 1000.2, "storage_after": 1000.5}],
              "end": [{"label": "c0", "storage_before": 2000.0, "client": 2000.7, "storage_after": 2000.2},
                      {"label": "c1", "storage_before": 2000.3, "client": 2000.2, "storage_after": 2000.5}]}
    (attempt / "clients" / "clocks.json").write_text(json.dumps(clocks))
    run = {"t0": t0, "t1": t0 + 6, "t_start": t0, "t_end": t0 + 6, "ramp_s": 0,
           "pool": "", "devices": [], "kernel_devices": [], "workload": "randread", "context": {},
           "clients": {"endpoints": {"c0": "127.0.0.1,57747", "c1": "127.0.0.1,52907"}, "interval_ms": 500}}
    (attempt / "run.json").write_text(json.dumps(run))
    (attempt / "counters").mkdir()
    return attempt


def test_the_window_is_placed_on_the_storage_clock(tmp_path):
    attempt = _recorded_attempt(tmp_path)
    # starts from the logs (stamp - k x 500 ms, the least delayed): c0 1795672438772, c1 1795672438893 ms
    # on their own clocks; on the storage clock c0 438772 - 550 = 438222, c1 438893 + 200 = 439093.
    # Ends: c0 438222 + 3001 = 441223, c1 439093 + 3000 = 442093. Shared: 439093 .. 441223.
    t_start, t_end = storage_window(attempt, fallback=(0.0, 0.0))
    assert t_start == pytest.approx(1795672439.093, abs=1e-6) and t_end == pytest.approx(1795672441.223, abs=1e-6)


# The reads of each client inside the shared window 439093 .. 441223 (storage clock, ms), from its stamped log
# (FIX, value x ms since the previous sample / 1000 per interval) moved by its offset:
# c0 (-550): start 438222, samples at 438722 (1002 IOPS: 501 reads), 439222 (1000: 500), 439723 (1000 over 501 ms:
# 501), 440222 (1002 over 499: 499.998), 440723 (1002 over 501: 502.002), then its last 500 ms, which fio does not
# log: 3001 - 2504 = 497 reads up to its end 441223. In the window: 129/500 of 500, then the rest: 2129.
# c1 (+200): start 439093, samples at 439594 (1001 over 501: 501.501), 440093 (1000 over 499: 499), 440593 (500),
# 441094 (996 over 501: 498.996), 441593 (1004 over 499: 500.996), then 3001 - 2500.493 = 500.507 up to 442093.
# In the window: the first four, 1999.497, and 129/499 of 500.996.
C0_IN_WINDOW = 129 + 501 + 499.998 + 502.002 + 497
C1_IN_WINDOW = 501.501 + 499 + 500 + 498.996 + 500.996 * 129 / 499


def test_the_aggregate_row_of_a_recorded_run(tmp_path):
    [row] = client_fio_rows(_recorded_attempt(tmp_path))
    # each client did 3001 reads of 4 KiB (12292096 bytes), c0 in 3001 ms, c1 in 3000 ms; the row counts those
    # inside the shared window (before issue 46 each client's mean rate over its run: 3001/3.001 + 3001/3.000)
    assert row["direction"] == "read" and row["total_ios"] == 6002 and row["clients"] == 2
    assert row["runtime_ms"] == 2130                                              # 441223 - 439093
    assert row["iops"] == pytest.approx((C0_IN_WINDOW + C1_IN_WINDOW) / 2.130, rel=1e-9)     # 1999.07
    assert row["io_bytes"] == round((C0_IN_WINDOW + C1_IN_WINDOW) * 4096)       # 17440822.5 -> 17440822
    assert row["client_skew_ms"] == pytest.approx(871.0)                          # 439093 - 438222
    total = C0_IN_WINDOW + C1_IN_WINDOW
    assert row["client_iops_min_share"] == pytest.approx(C0_IN_WINDOW / total, rel=1e-9)
    assert row["client_iops_max_share"] == pytest.approx(C1_IN_WINDOW / total, rel=1e-9)
    assert row["client_jain"] == pytest.approx(total ** 2 / (2 * (C0_IN_WINDOW ** 2 + C1_IN_WINDOW ** 2)), rel=1e-9)
    assert row["client_window_overlap"] == pytest.approx(2130 / 3001)
    assert row["client_outside_share"] == pytest.approx(1 - total / 6002, rel=1e-9)
    assert row["client_clock_uncertainty_ms"] == pytest.approx(100.0)   # every round trip took 0.2 s: half
    # c0's offset drifted 100 ms over the run: its starts are placed within 100 + 50 ms; window and skew beyond 300
    assert row["client_clock_check"] is True and "±150 ms" in row["client_clock_note"]
    assert row["bs_bytes"] == 4096 and row["rw"] == "randread"
    assert row["client_fio_sum_agrees"] is True


def test_the_per_client_table_of_a_recorded_run(tmp_path):
    table = {r["client"]: r for r in client_table(_recorded_attempt(tmp_path))}
    assert set(table) == {"c0", "c1"}
    assert table["c0"]["endpoint"] == "127.0.0.1,57747" and table["c0"]["total_ios"] == 3001
    assert table["c0"]["iops"] == pytest.approx(1000.0) and table["c1"]["iops"] == pytest.approx(1000.333333)
    assert table["c0"]["window_ios"] == pytest.approx(C0_IN_WINDOW) and table["c1"]["window_ios"] == \
        pytest.approx(C1_IN_WINDOW)
    assert table["c0"]["window_iops"] == pytest.approx(C0_IN_WINDOW / 2.130)
    assert table["c0"]["start_after_first_ms"] == 0 and table["c1"]["start_after_first_ms"] == pytest.approx(871.0)
    assert table["c0"]["clock_offset_ms"] == pytest.approx(550.0)
    assert table["c1"]["clock_offset_ms"] == pytest.approx(-200.0)
    assert table["c0"]["clock_drift_ms"] == pytest.approx(100.0)
    assert table["c1"]["clock_drift_ms"] == pytest.approx(0.0, abs=1e-6)
    assert table["c0"]["iops_share"] + table["c1"]["iops_share"] == pytest.approx(1.0)


def test_derive_rows_reads_a_clients_run(tmp_path):
    rows, checks = derive_rows(_recorded_attempt(tmp_path))
    assert len(rows) == 1 and rows[0]["iops"] == pytest.approx((C0_IN_WINDOW + C1_IN_WINDOW) / 2.130, rel=1e-9)
    assert rows[0]["fio_exit_lag_s"] is None and "host_contention" in checks


# --- measured end to end on this machine ------------------------------------------------------------

@needs_fio
def test_a_clients_run_measured_on_localhost(tmp_path):
    from tests.test_fio_clients import free_ports, numpy_window_iops

    host = LocalHost()
    specs = [ServerSpec(host, "127.0.0.1", port, str(tmp_path / f"srv{i}"), f"c{i}")
             for i, port in enumerate(free_ports(2))]
    files = {s.label: str(tmp_path / f"{s.label}.data") for s in specs}
    overrides = dict(ioengine="psync", direct=0, size=4 * MiB, runtime_s=2, ramp_time_s=1, rate_iops=200)
    with FioServers(specs, host) as servers:
        load = ClientLoad(servers, files, host, str(tmp_path / "controller"))
        res = measure_clients(host, load, 2, pool=None, devices=[], workload="randread", overrides=overrides,
                              remote_dir=str(tmp_path / "storage" / "r1"), raw_dir=tmp_path / "attempt-1",
                              context=RunContext())
    raw = tmp_path / "attempt-1"
    rec = json.loads((raw / "run.json").read_text())
    clocks = json.loads((raw / "clients" / "clocks.json").read_text())
    fio = json.loads((t := (raw / "clients" / "fio.json").read_text())[t.find("{"):])
    entries = [e for e in fio["client_stats"] if e["jobname"] != "All clients"]
    # the clocks read at the start and the end, for both clients, one machine: offsets within the round trip
    assert [r["label"] for r in clocks["start"]] == ["c0", "c1"] == [r["label"] for r in clocks["end"]]
    for r in clocks["start"] + clocks["end"]:
        assert r["storage_before"] <= r["client"] <= r["storage_after"]
    # the window inside the run, on the storage (here: the same) clock
    assert rec["t0"] <= res.window[0] < res.window[1] <= rec["t1"] + 1
    rows, _ = derive_rows(raw)
    [row] = rows
    assert row["total_ios"] == sum(e["read"]["total_ios"] for e in entries)
    # the reads inside the shared window over its length, read again from the raw logs with each client's
    # offset the mean of its two readings (client - the storage readings' midpoint)
    offsets = {r["label"]: 0.0 for r in clocks["start"]}
    for r in clocks["start"] + clocks["end"]:
        offsets[r["label"]] += (r["client"] - (r["storage_before"] + r["storage_after"]) / 2) * 500
    assert row["iops"] == pytest.approx(numpy_window_iops(raw / "clients", {s.port: s.label for s in specs}, offsets),
                                        rel=2e-3)
    assert row["clients"] == 2 and 0 <= row["client_skew_ms"] < 3000
    assert row["client_clock_check"] is True      # one machine: the readings take milliseconds
    assert len(client_table(raw)) == 2
    assert (raw / "counters").is_dir() and math.isfinite(row["lat_p50_ns"])   # the storage node sampled, bins summed


# --- the store: clients.parquet and the summed histogram ---------------------------------------------

def test_the_store_derives_clients_parquet_and_the_summed_histogram(tmp_path):
    from zbench_lib.measure.fio_hist import attempt_histograms
    from zbench_lib.sweeps.store.raw_check import client_frame

    raw = tmp_path / "raw"
    attempt = _recorded_attempt(raw / "c1-r01", FIX_LAT)
    (attempt / "COMPLETE").write_text("")
    frame = client_frame([("c1-r01", {"cell_id": "c1"}, [])], raw)
    assert sorted(frame["client"]) == ["c0", "c1"] and set(frame["run_id"]) == {"c1-r01"}   # fio's report order
    assert list(frame["attempt"]) == [1, 1] and list(frame["total_ios"]) == [3001, 3001]
    # each client's own p99, from its lat bins, is fio's own lat p99 for that client (the raw report)
    text = (FIX_LAT / "fio.json").read_text()
    fio_p99 = {{"57747": "c0", "52907": "c1"}[str(e["port"])]: float(e["read"]["lat_ns"]["percentile"]["99.000000"])
               for e in json.loads(text[text.find("{"):])["client_stats"] if e["jobname"] != "All clients"}
    assert dict(zip(frame["client"], frame["p99_ns"])) == fio_p99
    hist = attempt_histograms(attempt)
    # the two clients' lat bins summed: 6002 reads in all, none from fio's "All clients" entry (it has none)
    assert {h["direction"] for h in hist} == {"read"} and sum(h["count"] for h in hist) == 6002
    assert client_frame([("c1-r01", {"cell_id": "c1"}, [])], tmp_path / "none").empty
    # a clients run recorded before lat bins (FIX: no lat_percentiles=1, its clat bins are not the latency
    # reported) has no histogram rows, and still its clients' rows
    old = _recorded_attempt(raw / "c2-r01", FIX)
    (old / "COMPLETE").write_text("")
    assert attempt_histograms(old) == []
    assert list(client_frame([("c2-r01", {"cell_id": "c2"}, [])], raw)["total_ios"]) == [3001, 3001]


def test_the_store_keeps_each_clients_own_bins_beside_their_sum(tmp_path):
    from zbench_lib.measure.fio_hist import attempt_histograms
    from zbench_lib.sweeps.store.raw_check import client_histogram_frame

    raw = tmp_path / "raw"
    attempt = _recorded_attempt(raw / "c1-r01", FIX_LAT)
    (attempt / "COMPLETE").write_text("")
    frame = client_histogram_frame([("c1-r01", {"cell_id": "c1"}, [])], raw)
    assert list(frame.columns) == ["run_id", "attempt", "direction", "client", "bin_ns", "count"]
    assert set(frame["run_id"]) == {"c1-r01"} and set(frame["attempt"]) == {1} and set(frame["direction"]) == {"read"}
    # fio_clients_lat/fio.json, each client's read.lat_ns.bins read with plain json: c0 (port 57747) and c1
    # (52907) each did 3001 reads in 146 and 153 non-empty bins; the fullest are c0's 708 ns (96; c1 79
    # there) and c1's 740 ns (101; c0 72); the lowest c0's 70 ns and c1's 101 ns, one read each, their lat
    # min (fio's "All clients" entry has no bins)
    per = frame.groupby("client")["count"].agg(["sum", "size"])
    assert per.to_dict("index") == {"c0": {"sum": 3001, "size": 146}, "c1": {"sum": 3001, "size": 153}}
    at = frame.set_index(["client", "bin_ns"])["count"]
    assert (at["c0", 708], at["c1", 708], at["c0", 740], at["c1", 740]) == (96, 79, 72, 101)
    assert frame.groupby("client")["bin_ns"].min().to_dict() == {"c0": 70, "c1": 101}
    assert (at["c0", 70], at["c1", 101]) == (1, 1)
    # summed over the clients they are the run's latency_hist rows, read by another path (fio_hist)
    summed = frame.groupby("bin_ns")["count"].sum().to_dict()
    assert summed == {h["bin_ns"]: h["count"] for h in attempt_histograms(attempt)}
    assert client_histogram_frame([("c1-r01", {"cell_id": "c1"}, [])], tmp_path / "none").empty


def _clients_store(root: Path) -> Path:
    """A sweep store of one clients run (the recorded two-client report with lat bins), its results rebuilt."""
    from zbench_lib.measure.rows import parse_results
    from zbench_lib.sweeps.store.store import Store

    store = root / "sweep"
    attempt = _recorded_attempt(store / "raw" / "c1-r01", FIX_LAT)
    (attempt / "meta.json").write_text(json.dumps({"sweep": "s", "cell_id": "c1", "rep": 1, "attempt": 1,
                                                   "order_index": 0, "factors": {"clients": 2}}))
    (attempt / "COMPLETE").write_text("")
    (store / "spec.yaml").write_text("name: s\n")
    (store / "plan.json").write_text(json.dumps({"runs": [{"run_id": "c1-r01"}], "cells": [{"cell_id": "c1"}]}))
    (store / "events.jsonl").write_text(json.dumps({"event": "run started", "run_id": "c1-r01"}) + "\n" +
                                        json.dumps({"event": "run completed", "run_id": "c1-r01", "attempt": 1}) + "\n")
    Store.open(store).rebuild_results(parse_results)
    return store


def test_a_packed_clients_sweep_verifies_its_client_histograms(tmp_path):
    import pandas as pd

    from zbench_lib.core.errors import ZbenchError
    from zbench_lib.sweeps.store.publish import pack, verify, write_manifest

    store = _clients_store(tmp_path)
    assert {"clients.parquet", "client_hist.parquet", "latency_hist.parquet"} <= {p.name for p in store.iterdir()}
    dest = pack(store, tmp_path / "packed")
    assert len(verify(dest)) == 1
    hist = pd.read_parquet(dest / "client_hist.parquet")
    hist.loc[0, "count"] += 1                      # one I/O more for a client than its raw bins hold
    hist.to_parquet(dest / "client_hist.parquet", index=False)
    write_manifest(dest)                           # a forged manifest too: the raw files still say otherwise
    with pytest.raises(ZbenchError, match="client_hist.parquet does not match what its raw files give"):
        verify(dest)
    (dest / "client_hist.parquet").unlink()
    write_manifest(dest)
    with pytest.raises(ZbenchError, match="client_hist.parquet is missing, but its raw files hold clients runs"):
        verify(dest)


# --- the executor's pieces -------------------------------------------------------------------------

def test_a_clients_target_is_on_the_nfs_clients_surface():
    from zbench_lib.sweeps.running.surfaces import surface_of

    target = expand(parse_spec(SPEC)).targets[0]
    assert surface_of(target).name == "nfs-clients"


def test_client_labs_the_controller_cannot_hold_are_refused_in_one_line():
    from zbench_lib.core.errors import ConfigError
    from zbench_lib.sweeps.running.sweep_host import check_client_memory

    # each client lab: 1024 MiB guest + 512 MiB QEMU = 1536; the controller keeps 2048.
    check_client_memory(4, 4 * 1536 + 2048)                          # exactly fits
    with pytest.raises(ConfigError, match=r"^clients: 4 client labs need 8192 MiB .* has 8191 MiB available "
                                          r"beside its labs: at most 3 fit$"):
        check_client_memory(4, 8191)


def test_a_spec_without_clients_keeps_the_node_as_it_is():
    from zbench_lib.sweeps.running.sweep_host import with_clients

    node = object()
    with with_clients(parse_spec(SPEC.replace("  clients: [1, 2, 4]\n", "")), node) as got:
        assert got is node


# --- the report: fairness per cell, the caveat ---------------------------------------------------------

def _fairness_rows():
    import pandas as pd

    # one cell (2 clients) of two runs: aggregate 100 and 120 IOPS; shares (0.40, 0.60) and (0.45, 0.55)
    rows = pd.DataFrame({"workload": "randwrite", "direction": "write", "clients": 2, "run_id": ["a", "b"],
                         "attempt": 1, "pool_replicate": 1, "iops": [100.0, 120.0], "total_ios": 3000,
                         "client_iops_min_share": [0.40, 0.45], "client_iops_max_share": [0.60, 0.55]})
    clients = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "attempt": 1, "direction": "write",
                            "client": ["c1", "c2", "c1", "c2"], "p99_ns": [1e6, 2e6, 3e6, 4e6]})
    # each run: 2970 I/Os in the 1000 ns bin, 30 in the 5000 ns one; merged 6000, p99 needs 5940: 1000 ns
    hist = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "attempt": 1, "direction": "write",
                         "bin_ns": [1000, 5000, 1000, 5000], "count": [2970, 30, 2970, 30]})
    return rows, clients, hist


def test_the_fairness_table_of_hand_made_rows():
    from zbench_lib.analysis.stats.fairness import NO_CLIENT_HIST, fairness_table

    rows, clients, hist = _fairness_rows()
    [r] = fairness_table(rows, clients, hist, ["workload", "direction", "clients"]).to_dict("records")
    assert r["n"] == 2 and r["iops_mean"] == pytest.approx(110.0)
    # sd 14.1421, t(0.975, 1) = 12.7062: half-width 12.7062 x 14.1421 / sqrt 2 = 127.062 -> on the log scale
    # 110 x exp(-/+ 127.062 / 110) = 110 x exp(-/+ 1.15511) = 34.65 .. 349.21
    assert r["iops_ci_low"] == pytest.approx(34.65, rel=1e-3) and r["iops_ci_high"] == pytest.approx(349.21, rel=1e-3)
    assert r["p99_ns"] == 1000.0
    assert r["share_min"] == 0.40 and r["share_max"] == 0.60
    assert r["share_min_mean"] == pytest.approx(0.425) and r["share_max_mean"] == pytest.approx(0.575)
    # Changed with client_hist.parquet: a client's p99 was the median of its per-run p99s (2 and 3 ms here);
    # it is now read from its own bins merged over the cell's runs (the tests below), and without them it is
    # not judged rather than a statistic of percentiles
    assert math.isnan(r["p99_c1_ns"]) and math.isnan(r["p99_c2_ns"])
    assert r["p99_c1_status"] == r["p99_c2_status"] == NO_CLIENT_HIST


def _client_bins():
    """Two cells. A (2 clients): runs a and b, where each client's median of its per-run p99s differs from
    the p99 of its bins merged over both runs. B (1 client): runs c and d, too few I/Os for a p99."""
    import pandas as pd

    rows = pd.DataFrame({"workload": "randwrite", "direction": "write", "clients": [2, 2, 1, 1],
                         "run_id": ["a", "b", "c", "d"], "attempt": 1, "pool_replicate": 1,
                         "iops": [100.0, 120.0, 30.0, 30.0], "total_ios": [10000, 2000, 300, 300],
                         "lat_p99_ns": [7000.0, 7000.0, math.nan, math.nan], "tail_not_judged": "",
                         "client_iops_min_share": [0.1, 0.5, 1.0, 1.0], "client_iops_max_share": [0.9, 0.5, 1.0, 1.0]})
    # each client's own bins per run: (run, client) -> {bin_ns: count}
    bins = {("a", "c1"): {1000: 990, 2000: 10},    # 1000 I/Os; 99% is 990: p99 1000
            ("b", "c1"): {1000: 980, 2000: 20},    # 1000 I/Os; 980 < 990: p99 2000
            ("a", "c2"): {1000: 9000},             # 9000 I/Os: p99 1000
            ("b", "c2"): {1000: 900, 4000: 100},   # 1000 I/Os; 900 < 990: p99 4000
            ("c", "c1"): {1000: 297, 2000: 3},     # 300 I/Os each: no p99 of their own
            ("d", "c1"): {1000: 297, 2000: 3}}
    client_hist = pd.DataFrame([{"run_id": r, "attempt": 1, "direction": "write", "client": c, "bin_ns": k,
                                 "count": n} for (r, c), b in bins.items() for k, n in b.items()])
    own_p99 = {("a", "c1"): 1000.0, ("b", "c1"): 2000.0, ("a", "c2"): 1000.0, ("b", "c2"): 4000.0,
               ("c", "c1"): math.nan, ("d", "c1"): math.nan}
    clients = pd.DataFrame([{"run_id": r, "attempt": 1, "direction": "write", "client": c, "p99_ns": p,
                             "total_ios": sum(bins[(r, c)].values())} for (r, c), p in own_p99.items()])
    # the aggregate's bins: the clients' summed per run, as latency_hist.parquet holds them
    hist = client_hist.groupby(["run_id", "attempt", "direction", "bin_ns"], as_index=False)["count"].sum()
    return rows, clients, hist, client_hist


def test_a_clients_p99_is_read_from_its_bins_merged_over_the_cells_runs():
    from zbench_lib.analysis.stats.fairness import client_tails

    rows, clients, _, client_hist = _client_bins()
    t = client_tails(rows, clients, client_hist, ["workload", "direction", "clients"])
    got = {(r["clients"], r["client"]): r for r in t.to_dict("records")}
    assert set(got) == {(2, "c1"), (2, "c2"), (1, "c1")}          # c2 never ran in cell B: no row, no verdict
    c1, c2 = got[(2, "c1")], got[(2, "c2")]
    # A typical run's p99 of the client (one pool: the runs are the units), the centre of its interval: each
    # run's own p99 from the client's bins in it, then their geometric mean. c1: runs' own 1000 and 2000 ns,
    # sqrt(1000 x 2000) = 1414.2 ns, in fio's bin [1408, 1424) (2^10 + 24 x 16). c2: 1000 and 4000, 2000 ns,
    # in [2000, 2016). (All I/Os pooled, the other estimand, would give c1 2000 ns, c2 1000 ns: c2's run a
    # holds 9000 of its 10000 I/Os.)
    assert (c1["status"], c1["ios"], c1["n"]) == ("judged", 2000, 2) and "typical run" in c1["estimand"]
    assert c1["value_ns"] == pytest.approx(math.sqrt(1000 * 2000))
    assert (c1["bin_lo_ns"], c1["bin_hi_ns"]) == (1408.0, 1424.0)
    assert (c2["status"], c2["ios"]) == ("judged", 10000) and c2["value_ns"] == pytest.approx(2000.0)
    assert (c2["bin_lo_ns"], c2["bin_hi_ns"]) == (2000.0, 2016.0)
    # The interval: Student's t on the logs of the runs' own p99s (each run has >= 1000 I/Os), t(0.975, 1) =
    # tan(0.475 pi) = 12.7062; two values x < y: geometric mean sqrt(xy) times exp(-/+ t ln(y / x) / 2).
    # c1 (1000, 2000): 1414.21 x exp(-/+ 4.40363) = 17.30 .. 115608 ns, rounded out to fio's bins: 17 (1 ns
    # wide below 128) and 115712 (2^16 + 49 x 1024). c2 (1000, 4000): 2000 x exp(-/+ 8.80727) = 0.30 ..
    # 13365301 ns: 0 and 13369344 (2^23 + 38 x 2^17). One pool: conditional on it.
    assert (c1["ci_low_ns"], c1["ci_high_ns"]) == (17.0, 115712.0)
    assert (c2["ci_low_ns"], c2["ci_high_ns"]) == (0.0, 13369344.0)
    assert c1["interval"] == "t across 2 runs, log scale, conditional on one pool"
    # cell B: 300 + 300 I/Os of c1 merged, fewer than the 10 / (1 - 0.99) = 1000 a p99 needs
    nj = got[(1, "c1")]
    assert nj["status"] == "not judged: 600 I/Os, a p99 needs 1000" and math.isnan(nj["value_ns"])


def test_the_fairness_table_and_the_report_say_each_clients_merged_p99_or_why_not():
    from zbench_lib.analysis.report.client_section import client_section
    from zbench_lib.analysis.stats.fairness import fairness_table

    rows, clients, hist, client_hist = _client_bins()
    table = fairness_table(rows, clients, hist, ["workload", "direction", "clients"], client_hist)
    a, b = (table[table["clients"] == n].iloc[0] for n in (2, 1))
    # the aggregate of cell A, a typical run's: run a's bins (both clients') 9990 at 1000 ns, 10 at 2000, its
    # p99 the 9,900th: 1000 ns; run b's 1880 at 1000, 20 at 2000, 100 at 4000, the 1,980th: 4000 ns; their
    # geometric mean 2000 ns
    assert a["p99_ns"] == pytest.approx(2000.0) and a["p99_status"] == "judged"
    assert a["p99_c1_ns"] == pytest.approx(math.sqrt(2e6))
    assert (a["p99_c1_ci_low_ns"], a["p99_c1_ci_high_ns"]) == (17.0, 115712.0)
    assert a["p99_c2_ns"] == pytest.approx(2000.0) and a["p99_c2_status"] == "judged"
    assert b["p99_c1_status"] == "not judged: 600 I/Os, a p99 needs 1000" and math.isnan(b["p99_c1_ns"])
    assert math.isnan(b["p99_c2_ns"]) and not isinstance(b["p99_c2_status"], str)    # c2 was not in cell B
    page = client_section(rows, clients, hist, "Sweep s.", client_hist)
    # one column per client, in ms: 1414 ns with 17 .. 115712 ns is "0.00141 (0.0000170–0.116)"; 2000 ns with
    # 0 .. 13369344 ns is "0.00200 (0–13.4)"; cell B's c1 says why it has none, the reason under the table
    assert "c1 p99 ms (95%\u00a0CI)" in page and "c2 p99 ms (95%\u00a0CI)" in page
    assert "0.00141 (0.0000170–0.116)" in page and "0.00200 (0–13.4)" in page
    assert "not judged <sup>1</sup>" in page and "<li>600 I/Os, a p99 needs 1000</li>" in page
    assert "the p99 of a typical unit" in page and "the same estimand read from that client" in page


def test_the_clients_section_and_caveat_appear_only_with_clients():
    from zbench_lib.analysis.claims.caveats import caveats
    from zbench_lib.analysis.report.client_section import client_section

    rows, clients, hist = _fairness_rows()
    page = client_section(rows, clients, hist, "Sweep s.")
    assert "p99_c1_ns" in page or "c1" in page
    assert "a fair share is 1 / clients" in page
    assert client_section(rows.drop(columns="clients"), None, hist) == ""
    nfs = rows.assign(access="nfs")
    [said] = caveats(nfs)                               # one, and not the loopback datastore's
    assert "QEMU's user-mode networking" in said and "NFS stack" in said and "NFS 4.2" in said
    assert all("client VMs" not in c for c in caveats(nfs.drop(columns="clients")))
    [said] = caveats(rows.assign(access="iscsi"))       # a LUN's clients: their iSCSI path, not NFS's
    assert "iSCSI initiator" in said and "asynchronous write on the zvol" in said and "NFS" not in said


def test_a_clients_target_needs_room_for_every_clients_file_even_without_a_prefill():
    from zbench_lib.sweeps.planning.capacity import target_need
    from zbench_lib.zfs.layouts import Layout

    no_prefill = parse_spec(SPEC + "prefill: {fill: whole, policy: none}\n")
    [t, *_] = expand(no_prefill).targets
    alone = expand(parse_spec(SPEC.replace("  clients: [1, 2, 4]\n", "") + "prefill: {fill: whole, policy: none}\n"))
    layout = Layout("mirror", 2)
    assert t.prefill_bytes == 0 and target_need(t, layout) > 3.9 * target_need(alone.targets[0], layout)


# --- iSCSI: one shared LUN, each client in a region of its own ---------------------------------------

ISCSI_SPEC = """\
name: iscsi-clients
question: How do several clients share one zvol over iSCSI?
surface: zvol
host: lab
lab: {disks: 2, disk_size: 1G, model: hdd, extra_disks: 0}
factors:
  layout: [mirror]
  disks: [2]
  clients: [1, 2, 4]
target: {volsize: 256M, volblocksize: 16k, access: iscsi}
workloads:
  - {name: randwrite, overrides: {runtime_s: 10, ramp_time_s: 2, bs: 16k}}
repetitions: {fixed: 3, pool_replicates: 1}
"""


def test_an_iscsi_clients_spec_plans_one_shared_zvol_written_once():
    from zbench_lib.sweeps.running.surfaces import surface_of

    spec = parse_spec(ISCSI_SPEC)
    plan = expand(spec)
    assert spec.clients == 4 and len(plan.cells) == 3 and len(plan.targets) == 1
    [t] = plan.targets
    assert t.surface == "iscsi-clients" and surface_of(t).name == "iscsi-clients"
    assert t.files == 1 and t.prefill_bytes == 256 * MiB      # one LUN, written once by the storage node
    assert "clients: 4 client lab(s)" in plan.describe()


@needs_fio
def test_a_client_in_its_region_of_a_shared_device_writes_nowhere_else(tmp_path):
    """Two clients share one 8 MiB file as they share a LUN, each given a half (`ClientLoad.regions`; the
    first client the second half, so its job needs an offset); a run of the first alone writes its half
    and leaves the other as it was (zeros), and its job file names its region."""
    from tests.test_fio_clients import free_ports
    from zbench_lib.zfs.iscsi_share import region

    host = LocalHost()
    specs = [ServerSpec(host, "127.0.0.1", port, str(tmp_path / f"srv{i}"), f"c{i}")
             for i, port in enumerate(free_ports(2))]
    shared = tmp_path / "lun.data"
    shared.write_bytes(bytes(8 * MiB))
    halves = [dict(zip(("offset", "size"), region(i, 2, 8 * MiB))) for i in (0, 1)]
    assert halves == [{"offset": 0, "size": 4 * MiB}, {"offset": 4 * MiB, "size": 4 * MiB}]
    overrides = dict(ioengine="psync", direct=0, size=8 * MiB, runtime_s=2, ramp_time_s=1, rate_iops=300, bs="4k")
    with FioServers(specs, host) as servers:
        load = ClientLoad(servers, {s.label: str(shared) for s in specs}, host, str(tmp_path / "controller"),
                          regions={"c0": halves[1], "c1": halves[0]})
        measure_clients(host, load, 1, pool=None, devices=[], workload="randwrite", overrides=overrides,
                        remote_dir=str(tmp_path / "storage" / "r1"), raw_dir=tmp_path / "attempt-1",
                        context=RunContext())
    data = shared.read_bytes()
    assert data[:4 * MiB] == bytes(4 * MiB)                      # nothing in c1's half
    assert data[4 * MiB:].count(0) < 4 * MiB - 100 * 4096       # c0 wrote its own (hundreds of 4k blocks)
    [job] = [p.read_text() for p in (tmp_path / "attempt-1" / "clients").glob("*.fio")]
    assert "\nsize=4194304\n" in job and "\noffset=4194304\n" in job, job


def _client_sweep_rows():
    """Hand-made aggregate rows of a client sweep: sync standard and always at 1 and 2 clients, 3 runs each, every
    cell's IOPS its mean x (0.9, 1.0, 1.1): a coefficient of variation of 0.1 everywhere."""
    import pandas as pd

    means = {("standard", 1): 100.0, ("standard", 2): 150.0, ("always", 1): 50.0, ("always", 2): 100.0}
    return pd.DataFrame([{"workload": "randwrite", "direction": "write", "layout": "mirror", "sync": s, "clients": c,
                          "run_id": f"{s}-{c}-r{i}", "cell_id": f"{s}-{c}", "attempt": 1, "iops": m * f,
                          "flagged": False}
                         for (s, c), m in means.items() for i, f in enumerate((0.9, 1.0, 1.1))])


def test_a_client_sweeps_answer_compares_the_client_counts_per_sync_level():
    import pandas as pd

    from zbench_lib.analysis.data.sweep_data import Sweep
    from zbench_lib.analysis.report.headline import Focus, study_headline

    rows = _client_sweep_rows()
    h = study_headline(Sweep(None, {}, {}, rows), rows)
    assert h["kind"] == "clients"
    # The ratio of means with the delta-method interval on the log scale (methods §1): standard 150 / 100 = 1.5,
    # se of ln = sqrt(0.1^2 / 3 + 0.1^2 / 3) = 0.081650 on Welch's df = 4, t(0.975, 4) = 2.776445: 1.5 x
    # exp(-/+ 0.226697) = 1.196 .. 1.882; always 100 / 50 = 2, the same se: 1.594 .. 2.509. Both higher: Welch
    # p = 0.0077 (t = ln 1.5 / 0.08165 = 4.97) and 0.0011 (t = 8.49) on 4 df, Holm x1 and x2 below 0.05.
    # The fairness line last: these rows hold neither the clients' shares nor a clients.parquet, so neither is
    # judged, each said once for both sync levels. The interval printed is the one that decided (methods §3.1), at
    # the family's one level: Holm rejects both, its last step is at 0.05, so both get their 95% interval. Both
    # clear +5%: higher
    assert [(a["subject"], a["text"]) for a in h["answers"]] == [
        ("sync always (IOPS)", "against clients 1: clients 2 2.00x (1.59–2.51) higher. Intervals: Holm-adjusted "
                               "95.0%, family of 2."),
        ("sync standard (IOPS)", "against clients 1: clients 2 1.50x (1.20–1.88) higher. Intervals: Holm-adjusted "
                                 "95.0%, family of 2."),
        ("Fairness", "at 2 clients (a fair share: 50%), each client's share of the IOPS in every run, Jain's index and "
                     "each client's own p99, lowest to highest: share not judged (the results hold no client's share "
                     "of the IOPS), Jain's index not judged (the results hold no client's IOPS over a shared window), "
                     "p99 not "
                     "judged (no client's own p99 in the results).")]
    # the figure: the client counts along x, named as a count, a line per sync level through each one's means
    fig = h["figure"]
    assert fig.layout.xaxis.title.text == "client count" and "per client count" in fig.layout.title.text
    assert {t.name: (list(t.x), list(t.y)) for t in fig.data} == {
        "sync always": (["1", "2"], [50.0, 100.0]), "sync standard": (["1", "2"], [100.0, 150.0])}
    # the client count wins over a block size the sweep also varies (that study came first before)
    both = pd.concat([rows.assign(volblocksize_bytes=16384),
                      rows.assign(volblocksize_bytes=65536, run_id=rows["run_id"] + "-64k")], ignore_index=True)
    assert study_headline(Sweep(None, {}, {}, both), both)["kind"] == "clients"
    # a notebook that names the factor gets the same study
    assert study_headline(Sweep(None, {}, {}, rows), rows, focus=Focus(factor="clients"))["kind"] == "clients"


def _p99_cells(**clients):
    """A fairness_table row's client columns: c1=(value_ns, ci_low_ns, ci_high_ns, status), None: did not run."""
    out = {}
    for label, got in clients.items():
        value, low, high, status = got if got is not None else (math.nan, math.nan, math.nan, math.nan)
        out.update({f"p99_{label}_ns": value, f"p99_{label}_ci_low_ns": low, f"p99_{label}_ci_high_ns": high,
                    f"p99_{label}_status": status})
    return out


def test_the_fairness_line_reads_each_workloads_largest_client_count():
    import pandas as pd

    from zbench_lib.analysis.claims.client_answer import answer_fairness

    ok, nj = "judged", "not judged: 600 I/Os, a p99 needs 1000"
    nan = math.nan
    one = _p99_cells(c1=(50e6, 40e6, 60e6, ok), c2=None, c3=None, c4=None)
    rows = [  # a hand-made fairness table: workload, direction, clients, sync, the shares and each client's p99
        ("randwrite", "write", 1, "standard", 1.0, 1.0, one),
        ("randwrite", "write", 4, "standard", 0.2371, 0.2612,
         _p99_cells(c1=(186e6, 65.5e6, 461e6, ok), c2=(181e6, 65e6, 478e6, ok), c3=(192e6, 40.4e6, 881e6, ok),
                    c4=(165e6, 75.4e6, 327e6, ok))),
        ("randwrite", "write", 4, "always", 0.2436, 0.2571,
         _p99_cells(c1=(659e6, 50e6, 3959e6, ok), c2=(658e6, 37e6, 4630e6, ok), c3=(709e6, 466e6, 1443e6, ok),
                    c4=(nan, nan, nan, nj))),
        ("randread", "read", 1, "standard", 1.0, 1.0, one),
        ("randread", "read", 2, "standard", 0.492, 0.508,
         _p99_cells(c1=(10e6, 8e6, 12.5e6, ok), c2=(12e6, nan, nan, ok), c3=None, c4=None)),
    ]
    table = pd.DataFrame([{"workload": w, "direction": d, "clients": n, "sync": s, "share_min": lo, "share_max": hi,
                           **p99} for w, d, n, s, lo, hi, p99 in rows])
    got = answer_fairness(table, ["workload", "direction", "clients", "sync"])
    assert [a["subject"] for a in got] == ["Fairness, randread read", "Fairness, randwrite write"]
    # randread: 2 clients its largest (the single client's row is not read), one sync level (not named); c1 and c2
    # from the lower p99 to the higher, c2's without an interval (n/a); c3 and c4 did not run: not named
    # (this hand-made table has no Jain's index: tests/test_client_fairness.py gives one)
    assert got[0]["text"] == ("at 2 clients (a fair share: 50%), each client's share of the IOPS in every run, Jain's "
                              "index and each client's own p99, lowest to highest: 49.2–50.8%, " + NO_JAIN +
                              "c1 10.0 ms (8.0–12.5) to c2 12.0 ms (n/a).")
    # randwrite at 4 clients, sync levels in order of name: always c2 658 < c1 659 < c3 709 ms, c4 not judged;
    # standard c4 165 < c2 181 < c1 186 < c3 192 ms; intervals to three figures on the larger end (75.4 -> 75)
    assert got[1]["text"] == (
        "at 4 clients (a fair share: 25%), each client's share of the IOPS in every run, Jain's index and each "
        "client's own p99, lowest to highest: sync always 24.4–25.7%, " + NO_JAIN + "c2 658 ms (37–4,630) to c3 709 ms "
        "(466–1,443) and p99 of c4 not judged (600 I/Os, a p99 needs 1000); sync standard 23.7–26.1%, " + NO_JAIN +
        "c4 165 ms (75–327) to c3 192 ms (40–881).")
    # a sweep of one client count of one client: nothing to share
    solo = table[table["clients"] == 1]
    assert [a["text"] for a in answer_fairness(solo, ["workload", "direction", "clients", "sync"])] == [
        "not judged: one client in every run, nothing shared."] * 2


def test_a_client_sweeps_first_screen_says_how_fairly_the_clients_shared():
    from zbench_lib.analysis.claims.client_answer import FAIRNESS_NOTE
    from zbench_lib.analysis.data.sweep_data import Sweep
    from zbench_lib.analysis.report.headline import study_headline

    rows, clients, hist, client_hist = _client_bins()
    h = study_headline(Sweep(None, {}, {}, rows, None, hist, clients, client_hist), rows)
    # cell A (2 clients) is the largest count: shares 0.1 / 0.9 (run a) and 0.5 / 0.5 (run b): 10–90%. Each
    # client's p99, a typical run's from its bins, as worked out above: c1 1414 ns (17 .. 115712 ns), c2 2000 ns
    # (0 .. 13369344 ns), in ms with the answer's intervals: 0.00002–0.11571 and 0.0–13.4
    assert h["answers"][-1] == {"subject": "Fairness", "text": (
        "at 2 clients (a fair share: 50%), each client's share of the IOPS in every run, Jain's index and each "
        "client's own p99, lowest to highest: 10–90%, " + NO_JAIN + "c1 0.00141 ms (0.00002–0.11571) to c2 "
        "0.00200 ms (0.0–13.4).")}
    assert h["note"].endswith(FAIRNESS_NOTE)
    # without each client's bins (a store before client_hist.parquet): their p99s are not judged, said once
    old = study_headline(Sweep(None, {}, {}, rows, None, hist, clients, None), rows)
    assert old["answers"][-1]["text"].endswith(
        "lowest to highest: 10–90%, " + NO_JAIN + "p99 of c1, c2 not judged (no per-client histograms in the store "
        "(client_hist.parquet: rebuild the results)).")
    # a sweep without clients has no fairness line and its note is as it was
    plain = rows.drop(columns="clients").assign(sync=["standard", "always"] * 2)
    h = study_headline(Sweep(None, {}, {}, plain, None, hist), plain)
    assert not any(a["subject"] == "Fairness" for a in h["answers"]) and FAIRNESS_NOTE not in h["note"]


def _table_cells(page: str) -> list[list[str]]:
    """The text of each row of the first table in `page`, its heading row first."""
    from html.parser import HTMLParser

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows, self.cell = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append([])
            elif tag in ("th", "td"):
                self.cell = ""

        def handle_endtag(self, tag):
            if tag in ("th", "td"):
                self.rows[-1].append(self.cell)
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    cells = Cells()
    cells.feed(page[:page.index("</table>")])
    return cells.rows


def test_the_clients_table_reads_as_the_reports_other_tables():
    import pandas as pd

    from zbench_lib.analysis.report.client_section import client_section

    rows, clients, hist, client_hist = _client_bins()
    page = client_section(rows, clients, hist, "Sweep s.", client_hist)
    ci = "(95%\u00a0CI)"                       # the heading breaks before the interval, never inside it
    # Worked out by hand from _client_bins. Cell B (1 client): IOPS 30 and 30, no spread: "30.0 (one value (n =
    # 2))", never 30.0–30.0; 300 + 300 I/Os merged, no p99 for the aggregate or c1 (reason 1); c2 not among its
    # clients: —. Cell A (2 clients): IOPS 110 (110 x exp(-/+ 12.7062 x 14.1421 / sqrt 2 / 110) = 34.65 .. 349.2);
    # the aggregate's p99 a typical run's, the runs' own 1000 (run a: 9990 of 10000 at 1000 ns) and 4000 (run b:
    # 1900 of 2000 below 4000 ns), 2000 ns with its interval as c2's above: 0 .. 13.4 ms; c1 1414 ns; shares
    # 0.1 .. 0.9 over runs a and b
    # These rows hold no window columns (outside share, Jain's index): those cells are empty
    assert _table_cells(page) == [
        ["Clients", "Runs", f"IOPS {ci}", f"p99 ms {ci}", "I/O outside the window (most)",
         "Lowest / highest client share", f"Jain's index {ci}", f"c1 p99 ms {ci}", f"c2 p99 ms {ci}"],
        ["1", "2", "30.0 (one value (n = 2))", "not judged 1", "", "100% / 100%", "", "not judged 1", "—"],
        ["2", "2", "110 (34.7–349)", "0.00200 (0–13.4)", "", "10.0% / 90.0%", "", "0.00141 (0.0000170–0.116)",
         "0.00200 (0–13.4)"]]
    for raw in ("iops_mean", "iops_ci", "p99_ci", "p99_status", "share_min", "share_max", "_ns", "workload"):
        assert raw not in page
    # the workload every row shares is said once, in the caption, and the caption names the new columns
    assert "Sweep s. Every row: randwrite, write. Each row is one configuration" in page
    assert "The lowest and highest client share are the lowest and highest share" in page
    assert "each client&#x27;s column (c1, c2, ...) is the same estimand" in page
    # two workloads: a column each for the workload and direction, first, and no "Every row"
    read = rows.assign(workload="randread", direction="read")
    both = pd.concat([rows, read], ignore_index=True)
    page = client_section(both, None, None, "Sweep s.")
    heads = _table_cells(page)[0]
    assert heads[:3] == ["Workload", "Direction", "Clients"] and "Every row" not in page


def test_a_failure_beside_the_client_labs_says_their_last_console_lines_and_takes_them_down(monkeypatch, capsys):
    """Fake labs (no QEMU: this checks the context manager's error path, lab tests boot real ones): an error
    inside the block prints each client's console tail on stderr, then every lab goes; Ctrl-C says nothing."""
    from zbench_lib.hosts import lab_clients
    from zbench_lib.hosts.lab_config import LabConfig

    downs: list[str] = []

    class FakeLab:
        def __init__(self, cfg):
            self.cfg = cfg

        def up(self):
            pass

        def install_signal_handlers(self):
            pass

        def down(self):
            downs.append(self.cfg.name)

        def serial_tail(self, n):
            return f"[ 99.0] {self.cfg.name}: INFO: task fio blocked for more than 120 seconds."

    monkeypatch.setattr(lab_clients, "Lab", FakeLab)
    storage = LabConfig(name="st", disks=1)
    with pytest.raises(RuntimeError, match="teardown"):
        with lab_clients.client_labs(storage, 2):
            raise RuntimeError("iscsi teardown: c2 unreachable")
    err = capsys.readouterr().err
    assert "zbench: st-cl1's console, its last lines:\n[ 99.0] st-cl1: INFO: task fio blocked" in err
    assert "st-cl2's console" in err and downs == ["st-cl2", "st-cl1"]
    with pytest.raises(KeyboardInterrupt):
        with lab_clients.client_labs(storage, 1):
            raise KeyboardInterrupt
    assert capsys.readouterr().err == "" and downs[-1] == "st-cl1"
