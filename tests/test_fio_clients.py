"""Several fio clients on one datastore (issue 30): the servers' lifecycle, the controller's call
and zbench's aggregate, checked against fio itself.

The real tests start 2 and 4 `fio --server` daemons on 127.0.0.1 and drive a rate-limited
ioengine=null job through one `fio --client` call (tiny: 1000 IOPS, 3 s, no disk). What they
compare the aggregate with is computed here, independently, from fio's raw JSON: the sums of
the per-client entries, and percentiles read from the raw lat_ns bins (issue to completion) with
numpy. The parsing tests use stored reports of such a run: tests/fixtures/fio_clients/ (recorded
without lat_percentiles=1: its lat_ns has no bins, kept for its clients' starts and window) and
tests/fixtures/fio_clients_lat/ (the same job with lat_percentiles=1: lat_ns bins and percentiles);
their README.md say how.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.base import LocalHost
from zbench_lib.measure import fio_clients
from zbench_lib.measure.client_aggregate import aggregate, shared_window
from zbench_lib.measure.fio_client_json import log_intervals, log_start_ms, parse_client_json, stamped_logs
from zbench_lib.measure.fio_clients import (FioServers, ServerSpec, check_versions, client_argv, client_job,
                                            parse_version, run_clients)
from zbench_lib.measure.fio_hist import percentile_of

FIX = Path(__file__).parent / "fixtures" / "fio_clients"            # before lat bins: starts, window, totals
FIX_LAT = Path(__file__).parent / "fixtures" / "fio_clients_lat"    # with lat bins: histograms, percentiles
FIX_JOBS = Path(__file__).parent / "fixtures" / "fio_clients_two_jobs"  # 2 jobs a client, a log a sample short
FIX_LABELS = {"127.0.0.1,57747": "c0", "127.0.0.1,52907": "c1"}     # both fixtures' ports
needs_fio = pytest.mark.skipif(shutil.which("fio") is None or shutil.which("ss") is None,
                               reason="fio or ss not installed")
JOB = """[global]
ioengine=null
size=1g
bs=4k
rw=randread
time_based=1
runtime={runtime}
rate_iops=1000
clat_percentiles=1
lat_percentiles=1
percentile_list=50:90:95:99:99.9:99.99
[load]
"""


# --- independent readers of fio's raw output and of the machine's state -----------------------

def raw_json(path) -> dict:
    text = Path(path).read_text()
    return json.loads(text[text.find("{"):])     # the servers' text lines precede the JSON


def raw_entries(data: dict) -> list[dict]:
    return [e for e in data["client_stats"] if e["jobname"] != "All clients"]


def numpy_percentile(entries: list[dict], q_num: int, q_den: int) -> float:
    """fio's rule, written again: the first bin (by value) of the clients' summed lat_ns bins whose
    cumulative count reaches q x N."""
    keys = np.concatenate([np.array(list(e["read"]["lat_ns"]["bins"]), dtype=np.int64) for e in entries])
    counts = np.concatenate([np.array(list(e["read"]["lat_ns"]["bins"].values()), dtype=np.int64)
                             for e in entries])
    values, where = np.unique(keys, return_inverse=True)
    summed = np.bincount(where, weights=counts).astype(np.int64)
    cum = np.cumsum(summed)
    threshold = -(-q_num * int(cum[-1]) // q_den)          # ceil(q x N) in integers
    return float(values[np.searchsorted(cum, threshold, side="left")])


def numpy_window_iops(raw_dir, labels: dict[int, str], offsets_ms: dict[str, float] | None = None,
                      interval_ms: int = 500) -> float:
    """The clients' reads inside their shared window over its length, from the raw report and logs alone.

    `labels` names each client's logs by its port ({port: label}); `offsets_ms` ({label: ms}) is how far
    each client's clock runs ahead of the common one. Each of a client's iops logs (one per job) is a
    cumulative read count: 0 at its start (the least delayed stamp - k x interval), value x (stamp -
    previous) / 1000 more at each stamp, linear in between (np.interp). What fio counted beyond the logged
    reads is spread over the jobs' unlogged tails, job j's from its last stamp to its own end (its start +
    the client's longest runtime), in proportion to their lengths, each rising linearly. The client's
    window bounds are its earliest start and its earliest start + its longest runtime. The window runs
    from the latest start to the earliest end; the reads in it are each client's rise across it. Within
    0.2% of zbench's (which spreads a log that counts a read or two more than fio over its intervals
    rather than cutting it at the end)."""
    clients = []
    for port, label in labels.items():
        entries = [e for e in raw_entries(raw_json(Path(raw_dir) / "fio.json")) if e["port"] == port]
        runtime, total = max(e["read"]["runtime"] for e in entries), sum(e["read"]["total_ios"] for e in entries)
        curves = []
        for path in Path(raw_dir).glob(f"{label}_iops.*.log.{entries[0]['hostname']}"):
            log = np.loadtxt(path, delimiter=",", ndmin=2)
            t = log[:, 0] - (offsets_ms or {}).get(label, 0.0)
            start = float(np.min(t - (np.round((t - t[0]) / interval_ms) + 1) * interval_ms))
            cum = np.cumsum(log[:, 1] * np.diff(np.concatenate([[start], t])) / 1000)
            curves.append((np.concatenate([[start], t]), np.concatenate([[0.0], cum]), start + runtime))
        tails = np.array([(c[0][-1], max(c[2], c[0][-1])) for c in curves])
        lengths = tails[:, 1] - tails[:, 0]
        shares = lengths / lengths.sum() if lengths.sum() > 0 else np.full(len(curves), 1 / len(curves))
        rest = total - min(total, sum(c[1][-1] for c in curves))

        def reads(x, curves=curves, tails=tails, shares=shares, rest=rest, total=total):
            logged = min(total, sum(float(np.interp(x, c[0], c[1])) for c in curves))
            rise = [1.0 if x >= b else 0.0 if b == a else float(np.clip((x - a) / (b - a), 0, 1)) for a, b in tails]
            return logged + rest * float(np.dot(shares, rise))
        start = min(c[0][0] for c in curves)
        clients.append((start, start + runtime, reads))
    w0, w1 = max(c[0] for c in clients), min(c[1] for c in clients)
    return sum(reads(w1) - reads(w0) for _, _, reads in clients) * 1000 / (w1 - w0)


def pid_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def listening(port: int) -> bool:
    """Is anything listening on TCP `port` (from /proc/net/tcp, not from the code under test)?"""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                return True
    return False


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def specs_for(tmp_path, n: int) -> list[ServerSpec]:
    host = LocalHost()
    return [ServerSpec(host, "127.0.0.1", port, str(tmp_path / f"srv{i}"), f"c{i}")
            for i, port in enumerate(free_ports(n))]


def assert_all_stopped(specs, pids):
    deadline = time.monotonic() + 5         # the daemons' parent (init) reaps them
    while time.monotonic() < deadline and not all(pid_gone(p) for p in pids):
        time.sleep(0.1)
    assert all(pid_gone(p) for p in pids), pids
    assert not any(listening(s.port) for s in specs)
    assert not any(Path(s.pidfile).exists() for s in specs)


# --- versions, job files, the controller's command ---------------------------------------------

def test_version_mismatch_is_refused_in_one_line():
    assert check_versions({"controller": "fio-3.33", "c0": "fio-3.33"}) == "fio-3.33"
    with pytest.raises(ConfigError) as exc:
        check_versions({"the controller (local)": "fio-3.33", "c0 (vm1)": "fio-3.33", "c1 (vm2)": "fio-3.36"})
    text = str(exc.value)
    assert "\n" not in text
    assert "fio-3.33 on the controller (local), c0 (vm1)" in text and "fio-3.36 on c1 (vm2)" in text
    assert parse_version("fio-3.33\n") == "fio-3.33"
    with pytest.raises(ConfigError, match="not a fio release"):
        parse_version("bash: fio: command not found")


def test_client_job_stamps_the_iops_log_and_labels_every_log():
    job = ("[global]\nbs=4k\nwrite_iops_log=randread\nwrite_bw_log=randread\nlog_avg_msec=1000\n"
           "[randread]\nrw=randread\n")
    out = client_job(job, "c3", interval_ms=250)
    lines = out.splitlines()
    assert lines[:4] == ["[global]", "write_iops_log=c3", "log_avg_msec=250", "log_unix_epoch=1"]
    assert "write_bw_log=c3" in lines and "write_iops_log=randread" not in lines and "log_avg_msec=1000" not in lines
    assert client_job("[load]\nrw=read\n", "c0").splitlines()[:2] == ["[global]", "write_iops_log=c0"]
    with pytest.raises(ConfigError):
        client_job(job, "../c0")


def test_controller_argv_puts_the_output_options_before_the_clients():
    # After a --client=, fio passes an option on to that server, which then writes its own output.
    argv = client_argv([("10.0.0.2,8765", "job-c0.fio"), ("10.0.0.3,8765", "job-c1.fio")])
    assert argv == ["fio", "--output-format=json+", "--output=fio.json",
                    "--client=10.0.0.2,8765", "job-c0.fio", "--client=10.0.0.3,8765", "job-c1.fio"]


def test_servers_need_distinct_labels_and_endpoints(tmp_path):
    a, b = specs_for(tmp_path, 2)
    with pytest.raises(ConfigError, match="distinct"):
        FioServers([a, dataclasses.replace(b, label=a.label)], LocalHost())
    with pytest.raises(ConfigError, match="distinct"):
        FioServers([a, dataclasses.replace(b, port=a.port)], LocalHost())


# --- parsing the stored report ------------------------------------------------------------------

def test_stored_report_parses_into_client_records():
    stats = parse_client_json((FIX_LAT / "fio.json").read_text())
    raw = raw_json(FIX_LAT / "fio.json")
    assert stats.fio_version == "fio-3.33"
    assert stats.endpoints() == tuple(f"{e['hostname']},{e['port']}" for e in raw_entries(raw))
    assert set(stats.endpoints()) == set(FIX_LABELS)
    assert stats.all_clients is not None and stats.all_clients.direction("read").fio_percentiles == ()
    assert stats.all_clients.direction("read").bins == ()          # fio's "All clients" entry has neither
    for job, entry in zip(stats.jobs, raw_entries(raw), strict=True):
        d, r = job.direction("read"), entry["read"]
        assert (d.total_ios, d.io_bytes, d.runtime_ms) == (r["total_ios"], r["io_bytes"], r["runtime"])
        assert job.direction("write") is None and job.job_start_ms is None    # 3.33 has no job_start
        # the latency is fio's lat_ns (issue to completion), its bins and its moments, never clat_ns's
        lat = r["lat_ns"]
        assert dict(d.bins) == {int(k): v for k, v in lat["bins"].items()}
        assert dict(d.bins) != {int(k): v for k, v in r["clat_ns"]["bins"].items()}
        assert (d.lat_n, d.lat_mean_ns, d.lat_min_ns, d.lat_max_ns) == (lat["N"], lat["mean"], lat["min"], lat["max"])
        assert dict(d.fio_percentiles) == {k: float(v) for k, v in lat["percentile"].items()}
        # one client's bins read fio's way give back fio's own list for that client
        keys, counts = zip(*d.bins)
        for key in ("50.000000", "99.000000", "99.900000"):
            assert percentile_of(keys, counts, Fraction(key) / 100) == lat["percentile"][key]


def test_a_report_recorded_before_lat_bins_has_no_bins_and_no_percentiles():
    # tests/fixtures/fio_clients: its job had no lat_percentiles=1, so each client's lat_ns holds only fio's
    # moments (its clat_ns has bins, which are not the latency zbench reports)
    stats = parse_client_json((FIX / "fio.json").read_text())
    raw = raw_json(FIX / "fio.json")
    assert stats.endpoints() == ("127.0.0.1,57747", "127.0.0.1,52907")
    for job, entry in zip(stats.jobs, raw_entries(raw), strict=True):
        d, lat = job.direction("read"), entry["read"]["lat_ns"]
        assert "bins" not in lat and "percentile" not in lat and entry["read"]["clat_ns"]["bins"]
        assert d.bins == () and d.fio_percentiles == ()
        assert (d.lat_n, d.lat_mean_ns, d.lat_min_ns, d.lat_max_ns) == (lat["N"], lat["mean"], lat["min"], lat["max"])
    agg = aggregate(stats, "read", stamped_logs(FIX, FIX_LABELS, 500), tuple(FIX_LABELS))
    assert agg.bins == () and all(p.note == "no histogram (json+ bins)" for p in agg.percentiles)


def test_stored_logs_give_each_clients_start():
    starts = {ep: log.start_ms for ep, log in stamped_logs(FIX, FIX_LABELS, 500).items()}
    assert starts == {"127.0.0.1,57747": 1795672438772.0, "127.0.0.1,52907": 1795672438893.0}


def test_a_stamped_log_says_how_many_ios_each_interval_held():
    # start 10_000 (the least delayed sample, 11000 - 2 x 500); samples late by 3, 0, 2 ms; the interval
    # 11500..12000 held no read, so fio wrote no sample for it, and the sample at 12500 covers 12000..12500
    # only. fio's value is the interval's reads x 1000 / its ms: 7 IOPS over 503 ms is 3.521 reads, over
    # 497 ms 3.479, over 502 ms 3.514, over the last 500 ms 3.5.
    log = log_intervals("10503, 7, 0, 0, 0\n11000, 7, 0, 0, 0\n11502, 7, 0, 0, 0\n12500, 7, 0, 0, 0\n", 500)
    assert log.start_ms == 10_000
    assert [(iv.begin_ms, iv.end_ms) for iv in log.intervals] == [(10000, 10503), (10503, 11000), (11000, 11502),
                                                                    (12000, 12500)]
    assert [iv.ios for iv in log.intervals] == pytest.approx([3.521, 3.479, 3.514, 3.5])
    assert {iv.direction for iv in log.intervals} == {"read"}
    assert log.shifted(-550).start_ms == 9450 and log.shifted(-550).intervals[0].end_ms == 9953
    assert log_intervals("", 500) is None


def test_log_start_takes_the_least_delayed_sample_and_survives_a_skipped_interval():
    # start 10_000; samples every 500 ms, late by 3, 0, 2 ms, and the 4th interval missing
    text = "10503, 7, 0, 0, 0\n11000, 7, 0, 0, 0\n11502, 7, 0, 0, 0\n12500, 7, 0, 0, 0\n"
    assert log_start_ms(text, 500) == 10_000
    assert log_start_ms("", 500) is None


def test_aggregate_of_the_stored_report():
    stats = parse_client_json((FIX / "fio.json").read_text())
    agg = aggregate(stats, "read", stamped_logs(FIX, FIX_LABELS, 500), tuple(FIX_LABELS))
    assert agg.total_ios == 6002 and agg.total_io_bytes == 6002 * 4096
    assert agg.window.source == "iops log stamps" and agg.window.start_skew_ms == 121.0
    # the window runs from c1's start to c0's end (c0 started 121 ms earlier, both ran ~3 s)
    assert agg.window.length_ms == pytest.approx(1795672438772.0 + 3001 - 1795672438893.0)
    # recorded before lat bins: fio's totals are checked, its latency cannot be (no bins to sum)
    assert agg.check.agree is True
    assert {i.name for i in agg.check.items} == {"total_ios", "io_bytes", "iops"}
    assert agg.check.not_judged == ("latency: the clients' output has no json+ bins",)


def test_aggregate_of_the_stored_report_with_lat_bins_against_fios_all_clients_entry():
    stats = parse_client_json((FIX_LAT / "fio.json").read_text())
    entries = raw_entries(raw_json(FIX_LAT / "fio.json"))
    fio_all = next(e for e in raw_json(FIX_LAT / "fio.json")["client_stats"] if e["jobname"] == "All clients")
    agg = aggregate(stats, "read", stamped_logs(FIX_LAT, FIX_LABELS, 500), tuple(FIX_LABELS))
    assert agg.total_ios == sum(e["read"]["total_ios"] for e in entries) == 6002
    assert sum(c for _, c in agg.bins) == 6002                  # every read in one lat bin
    for name, num, den in (("p50", 1, 2), ("p99", 99, 100), ("p99.9", 999, 1000)):
        assert agg.percentile(name).value_ns == numpy_percentile(entries, num, den)
    # the latency count, mean, min and max of the summed lat bins against fio's own lat_ns of "All clients"
    assert agg.check.agree is True, agg.check
    items = {i.name: i for i in agg.check.items}
    assert set(items) == {"total_ios", "io_bytes", "iops", "lat_n", "lat_mean_ns", "lat_min_ns", "lat_max_ns"}
    lat = fio_all["read"]["lat_ns"]
    assert (items["lat_n"].fio, items["lat_mean_ns"].fio, items["lat_min_ns"].fio, items["lat_max_ns"].fio) == \
        (lat["N"], lat["mean"], lat["min"], lat["max"])
    assert agg.check.not_judged == ("percentiles: fio-3.33's 'All clients' entry has no percentiles or bins",)


def test_a_jobs_unlogged_last_interval_is_placed_in_that_jobs_own_tail():
    # FIX_JOBS: c0 (port 36681) ran 2 jobs; job 1's log starts at 556971 (stamps ...7471, ...7972, ...8472,
    # mod 1796589000000), job 2's at 556972 (...7473, ...7973, ...8472, ...8972); fio counted 430 reads
    # in 2001 ms. Logged: job 1 124 x .500 + 109 x .501 + 102 x .500 = 167.609, job 2 116 x .501 + 78 x .500
    # + 102 x .499 + 114 x .500 = 205.014; 57.377 more in no sample. Job 1's tail runs from its last stamp
    # to its end, 558472..558972 (500 ms), job 2's 558972..558973 (1 ms): 57.377 x 500 / 501 = 57.262 in
    # job 1's. The window (c0's start 556971 to c1's end 556968 + 2003 = 558971) holds job 1's tail but its
    # last ms (57.148) and job 2's last interval but its last ms (57 - 0.114): 372.623 - 0.114 + 57.148.
    labels = {"127.0.0.1,36681": "c0", "127.0.0.1,59923": "c1"}
    agg = aggregate(parse_client_json((FIX_JOBS / "fio.json").read_text()), "read",
                    stamped_logs(FIX_JOBS, labels, 500), tuple(labels))
    assert (agg.window.start_ms, agg.window.end_ms) == (1796589556971.0, 1796589558971.0)
    c0 = next(c for c in agg.clients if c.endpoint == "127.0.0.1,36681")
    assert c0.total_ios == 430 and c0.window_ios == pytest.approx(372.623 - 0.114 + 57.148, abs=2e-3)
    assert agg.outside_share < 0.002      # a client's unlogged reads are its last job's, not past its end
    assert agg.iops == pytest.approx(numpy_window_iops(FIX_JOBS, {36681: "c0", 59923: "c1"}), rel=2e-3)


def test_without_starts_the_window_is_the_shortest_runtime_and_skew_is_not_measured():
    stats = parse_client_json((FIX / "fio.json").read_text())
    agg = aggregate(stats, "read")
    assert agg.window.source == "runtime only" and agg.window.start_skew_ms is None
    assert agg.window.length_ms == 3000 and "assumed" in agg.window.skew_note


def test_clients_that_never_ran_together_have_no_aggregate_rate():
    window = shared_window({"a": 1000, "b": 1000}, {"a": 0.0, "b": 1500.0}, "iops log stamps")
    assert window.length_ms == 0 and window.start_skew_ms == 1500
    stats = parse_client_json((FIX / "fio.json").read_text())
    logs = stamped_logs(FIX, FIX_LABELS, 500)
    apart = {"127.0.0.1,57747": logs["127.0.0.1,57747"].shifted(-1795672438772),
             "127.0.0.1,52907": logs["127.0.0.1,52907"].shifted(5000 - 1795672438893)}
    agg = aggregate(stats, "read", apart)
    assert agg.iops is None and agg.window_ios is None and agg.total_ios == 6002


def test_a_missing_client_is_an_error_not_a_smaller_aggregate():
    stats = parse_client_json((FIX / "fio.json").read_text())
    with pytest.raises(ZbenchError, match="127.0.0.1,9999"):
        aggregate(stats, "read", expected=("127.0.0.1,57747", "127.0.0.1,9999"))


def test_cross_check_is_not_judged_without_fios_entry_and_fails_on_a_wrong_one():
    stats = parse_client_json((FIX / "fio.json").read_text())
    alone = dataclasses.replace(stats, all_clients=None)
    check = aggregate(alone, "read").check
    assert check.agree is None and check.items == () and "no 'All clients' entry" in check.reason
    fio_sum = stats.all_clients
    read = dataclasses.replace(fio_sum.direction("read"), total_ios=6003)
    wrong = dataclasses.replace(stats, all_clients=dataclasses.replace(fio_sum, directions=(("read", read),)))
    check = aggregate(wrong, "read").check
    assert check.agree is False and "total_ios" in check.reason


# --- against fio itself: 2 and 4 servers on localhost --------------------------------------------

@needs_fio
@pytest.mark.parametrize("n", [2, 4])
def test_aggregate_against_fio_itself(tmp_path, n):
    specs = specs_for(tmp_path, n)
    with FioServers(specs, LocalHost()) as servers:
        pids = list(servers.pids.values())
        assert servers.version == subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
        run = run_clients(LocalHost(), servers, {s.label: JOB.format(runtime=3) for s in specs},
                          str(tmp_path / "ctl"), tmp_path / "raw")
    assert_all_stopped(specs, pids)
    agg = run.aggregate("read")
    entries = raw_entries(raw_json(tmp_path / "raw" / "fio.json"))
    assert len(entries) == n == len(agg.clients)
    # totals: the sum of the per-client data
    assert agg.total_ios == sum(e["read"]["total_ios"] for e in entries)
    assert agg.total_io_bytes == sum(e["read"]["io_bytes"] for e in entries)
    # the rate over the shared window, from the clients' stamped logs read again with numpy
    assert agg.iops == pytest.approx(numpy_window_iops(tmp_path / "raw", {s.port: s.label for s in specs}), rel=2e-3)
    rows = {r.endpoint: r for r in agg.clients}
    for e in entries:
        assert rows[f"{e['hostname']},{e['port']}"].total_ios == e["read"]["total_ios"]
    # percentiles: from the summed lat bins, as numpy reads the raw lat_ns bins
    for name, num, den in (("p50", 1, 2), ("p99", 99, 100), ("p99.9", 999, 1000)):
        assert agg.percentile(name).value_ns == numpy_percentile(entries, num, den)
    assert agg.percentile("p99").supported and agg.percentile("p99.9").supported == (agg.total_ios >= 10_000)
    # fio's own "All clients" entry: 3.33 prints one with totals and latency moments, no percentiles
    assert agg.check.agree is True, agg.check
    assert {"total_ios", "io_bytes", "iops", "lat_n", "lat_mean_ns", "lat_min_ns", "lat_max_ns"} <= \
        {i.name for i in agg.check.items}
    # every client's start, from its own stamped log; they ran together
    assert agg.window.source == "iops log stamps" and set(run.logs) == set(rows)
    # one machine, no clock readings: the window is as the stamps place it, the clocks' check not judged
    assert agg.window.clock.ok is None and "not judged" in agg.window.clock.reason
    assert 0 <= agg.window.start_skew_ms < 3000    # they ran together (a busy machine starts them slowly)
    assert 0 < agg.window.length_ms <= min(r.runtime_ms for r in agg.clients)
    print(f"\n{n} clients: " + ", ".join(f"{r.endpoint} {r.iops:.1f} IOPS p99 {r.p99_ns:.0f} ns" for r in agg.clients)
          + f"; aggregate {agg.iops:.1f} IOPS p50 {agg.percentile('p50').value_ns:.0f} "
          f"p99 {agg.percentile('p99').value_ns:.0f} p99.9 {agg.percentile('p99.9').value_ns:.0f} ns; "
          f"window {agg.window.length_ms:.0f} ms, skew {agg.window.start_skew_ms:.0f} ms; {agg.check.reason}")


@needs_fio
def test_a_refused_job_file_fails_the_run_and_every_server_is_stopped(tmp_path):
    specs = specs_for(tmp_path, 2)
    jobs = {"c0": JOB.format(runtime=2), "c1": JOB.format(runtime=2).replace("[load]", "not_an_option=1\n[load]")}
    with pytest.raises(ZbenchError, match=r"no report from c1.*Bad option") as exc:
        with FioServers(specs, LocalHost()) as servers:
            pids = list(servers.pids.values())
            run_clients(LocalHost(), servers, jobs, str(tmp_path / "ctl"), tmp_path / "raw")
    assert "\n" not in str(exc.value)
    assert_all_stopped(specs, pids)


@needs_fio
def test_a_killed_server_fails_the_run_and_the_others_are_stopped(tmp_path):
    specs = specs_for(tmp_path, 2)
    with pytest.raises(ZbenchError, match=r"no report from c1"):
        with FioServers(specs, LocalHost()) as servers:
            pids = list(servers.pids.values())
            os.kill(servers.pids["c1"], signal.SIGKILL)
            run_clients(LocalHost(), servers, {s.label: JOB.format(runtime=2) for s in specs},
                        str(tmp_path / "ctl"), tmp_path / "raw")
    assert servers.stopped[0].startswith("c0: pid(s) ") and servers.stopped[1].startswith("c1: ")
    assert_all_stopped(specs, pids)


@needs_fio
def test_an_interrupt_inside_the_block_stops_every_server(tmp_path):
    specs = specs_for(tmp_path, 2)
    with pytest.raises(KeyboardInterrupt):
        with FioServers(specs, LocalHost()) as servers:
            pids = list(servers.pids.values())
            raise KeyboardInterrupt
    assert_all_stopped(specs, pids)


@needs_fio
def test_a_leftover_server_on_the_port_is_reported_not_reused(tmp_path):
    spec = specs_for(tmp_path, 1)[0]
    pidfile = tmp_path / "leftover.pid"
    subprocess.run(["fio", f"--server={spec.endpoint}", f"--daemonize={pidfile}"], check=True, timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (pidfile.exists() and listening(spec.port)):
        time.sleep(0.1)
    leftover = int(pidfile.read_text())
    try:
        with pytest.raises(ConfigError, match=rf"port {spec.port} .* already served \(fio pid {leftover}\)"):
            with FioServers([spec], LocalHost()):
                pass
        assert not pid_gone(leftover) and not Path(spec.pidfile).exists()   # not ours: left alone
    finally:
        os.kill(leftover, signal.SIGTERM)
    assert_all_stopped([spec], [leftover])


def test_a_version_mismatch_stops_before_any_server_starts(tmp_path, monkeypatch):
    specs = specs_for(tmp_path, 2)
    seen = iter(["fio-3.33", "fio-3.33", "fio-3.36"])
    monkeypatch.setattr(fio_clients, "host_version", lambda host: next(seen))
    monkeypatch.setattr(fio_clients, "start_server", lambda spec: pytest.fail("a server was started"))
    with pytest.raises(ConfigError, match=r"fio releases differ \(fio-3.33 on .*; fio-3.36 on c1"):
        with FioServers(specs, LocalHost()):
            pass


@needs_fio
def test_ctrl_c_during_the_run_stops_the_controller_and_every_server(tmp_path):
    specs = specs_for(tmp_path, 2)
    ctl = tmp_path / "ctl"
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        with FioServers(specs, LocalHost()) as servers:
            pids = list(servers.pids.values())
            timer.start()
            run_clients(LocalHost(), servers, {s.label: JOB.format(runtime=20) for s in specs}, str(ctl),
                        tmp_path / "raw")
    timer.join()
    assert_all_stopped(specs, pids)
    assert fio_in(ctl) == []


def fio_in(directory: Path) -> list[int]:
    """Live fio processes whose working directory is `directory` (the controller runs there)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip() == "fio" \
                    and os.readlink(proc / "cwd") == str(directory) and not pid_gone(int(proc.name)):
                found.append(int(proc.name))
        except OSError:
            pass
    return found


def test_a_server_behind_a_forward_listens_on_its_address_and_is_reached_at_the_forward():
    spec = ServerSpec(LocalHost(), "0.0.0.0", 8765, "/tmp/srv", "c0", reach=("127.0.0.1", 40123))
    assert "--server=0.0.0.0,8765" in spec.argv()
    assert spec.endpoint == "127.0.0.1,40123"                        # what --client= and fio's report say
    assert client_argv([(spec.endpoint, "job-c0.fio")])[-2:] == ["--client=127.0.0.1,40123", "job-c0.fio"]
    plain = ServerSpec(LocalHost(), "127.0.0.1", 8765, "/tmp/srv", "c1")
    assert plain.endpoint == "127.0.0.1,8765" and "--server=127.0.0.1,8765" in plain.argv()
