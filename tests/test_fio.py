"""fio: job files, a real local run, and parsers against real fio 3.33 output."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
import zlib
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.measure.workloads import names as workload_names
from zbench_lib.measure.counters import (sampler_argv, sampler_script, snap_after_argv, snap_after_script,
                                         split_snapshots)
from zbench_lib.measure.fio import (build_job, collect, estimate_timeout, execute_fio, job_sections, load_fio_json,
                                    run_fio)
from zbench_lib.measure.fio_parse import parse_fio_json, parse_fio_log, parse_fio_logs_dir
from zbench_lib.measure.fio_hist import run_histograms
from zbench_lib.measure.fio_parse import COLUMNS
from zbench_lib.hosts.base import LocalHost
from zbench_lib.zfs.pools import TargetInfo
from zbench_lib.zfs.prefill import prefill_argv
from zbench_lib.zfs.targets import Zvol

MiB = 1024 * 1024
FIX = Path(__file__).parent / "fixtures" / "fio"
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


# fio's keys of zbench's percentile_list (50:90:95:99:99.9:99.99), as fio prints them
FIO_KEYS = ("50.000000", "90.000000", "95.000000", "99.000000", "99.900000", "99.990000")


def raw_json(path) -> dict:
    """fio's JSON read with plain json, not the parser under test: the text before the first "{" (fio's
    notes) left out and fio's bare -nan (a steady-state slope) read as NaN."""
    text = Path(path).read_text()
    return json.loads(re.sub(r'(?<![\w"])-nan\b', "NaN", text[text.find("{"):]))


def options(text: str) -> dict:
    """key=value lines of a job file (later sections win)."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


# --- build_job -------------------------------------------------------------

@pytest.mark.parametrize("workload", workload_names())
def test_every_workload_renders(workload):
    text = build_job(workload, filename="/dev/zvol/tank/v", size="1G")
    o = options(text)
    assert job_sections(text) == [workload]
    assert o["percentile_list"] == "50:90:95:99:99.9:99.99"
    assert o["refill_buffers"] == "1" and o["buffer_compress_percentage"] == "0"
    assert "buffer_compress_chunk" not in o        # incompressible jobs as they always were
    assert o["log_avg_msec"] == "1000" and o["write_iops_log"] == workload
    assert o["group_reporting"] == "1" and o["time_based"] == "1"
    assert o["runtime"] == "60" and o["ramp_time"] == "10"


def test_workload_semantics():
    o = lambda w, **kw: options(build_job(w, filename="/dev/sdb", size="1G", **kw))  # noqa: E731
    assert o("seqwrite")["rw"] == "write" and o("seqwrite")["bs"] == str(1 << 20)
    assert o("randread")["rw"] == "randread" and o("randread")["bs"] == "4096"
    assert "sync" not in o("randwrite") and o("randwrite-sync")["sync"] == "1"
    assert o("randwrite-sync", sync="dsync")["sync"] == "dsync"
    mixed = o("mixed", bs="16k")
    assert (mixed["rw"], mixed["rwmixread"], mixed["bs"]) == ("randrw", "70", "16384")
    wal = o("fsync-heavy")
    assert (wal["fsync"], wal["bs"], wal["iodepth"], wal["direct"]) == ("1", "8192", "1", "0")


def test_sequential_jobs_get_their_own_regions():
    o = options(build_job("seqwrite", filename="/dev/sdb", size="1G", numjobs=4))
    assert o["size"] == o["offset_increment"] == str(256 << 20)
    assert "offset_increment" not in options(build_job("randwrite", filename="/dev/sdb", size="1G"))


def test_compressible_steadystate_and_escaping():
    o = options(build_job("seqwrite", filename="/dev/disk/by-path/pci-0000:00:1f.2", compressible_percent=50,
                          steadystate="iops_slope:0.17%", ss_dur_s=60, ss_ramp_s=10, runtime_s=120))
    assert o["filename"] == r"/dev/disk/by-path/pci-0000\:00\:1f.2"
    assert "size" not in o  # whole block device
    assert o["buffer_compress_percentage"] == "50" and o["buffer_compress_chunk"] == "512"
    assert o["refill_buffers"] == "1"
    assert (o["steadystate"], o["ss_dur"], o["ss_ramp"]) == ("iops_slope:0.17%", "60", "10")


def test_several_devices_share_one_job_each_from_offset_zero():
    """The raw surface: fio splits on bare colons, a colon inside a name is escaped, and a
    sequential job's region is per device (fio offsets every device alike)."""
    disks = ["/dev/disk/by-id/virtio-zbdata00", "/dev/disk/by-path/pci-0000:00:1f.2", "/dev/vdd"]
    o = options(build_job("randread", filename=disks, size=3 * (64 << 20)))
    assert o["filename"] == r"/dev/disk/by-id/virtio-zbdata00:/dev/disk/by-path/pci-0000\:00\:1f.2:/dev/vdd"
    assert o["size"] == str(3 * (64 << 20)) and "offset_increment" not in o
    seq = options(build_job("seqwrite", filename=disks[:2], size=2 * (64 << 20), numjobs=4))
    # each of 4 jobs: 16M of each of the 2 devices, job k from k x 16M
    assert seq["offset_increment"] == str(16 << 20) and seq["size"] == str(2 * (16 << 20))
    assert options(build_job("seqwrite", filename=["/dev/vdb"], size="1G"))["filename"] == "/dev/vdb"


@pytest.mark.parametrize("kwargs, message", [
    (dict(filename=["/dev/vdb", "/tmp/f"]), "several filenames are block devices only"),
    (dict(filename=["/dev/vdb", "/dev/vdc"], size=None), "size is required with several devices"),
    (dict(filename=[]), "filename is required"),
    (dict(filename=["/dev/vdb", "/dev/vd\nc"]), "filename contains a control character"),
])
def test_several_devices_are_refused_when_they_cannot_mean_a_region(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        build_job("randread", **{"size": "1G", **kwargs})


@pytest.mark.parametrize("kwargs, message", [
    (dict(bs="3k"), "power-of-two multiple of 512"),
    (dict(bs="256"), "power-of-two multiple of 512"),
    (dict(bs="12k"), "power-of-two multiple of 512"),
    (dict(iodepth=0), "iodepth must be >= 1"),
    (dict(numjobs=0), "numjobs must be >= 1"),
    (dict(iodepth="8"), "iodepth: expected an integer"),
    (dict(runtime_s=0), "runtime_s must be > 0"),
    (dict(ramp_time_s=60), "ramp_time_s (60) must be shorter than runtime_s (60)"),
    (dict(ioengine="windowsaio"), "ioengine 'windowsaio' not supported"),
    (dict(compressible_percent=101), "compressible_percent must be 0..100"),
    (dict(sync="maybe"), "sync must be 0, 1 or 'dsync'"),
    (dict(rwmixread=70), "rwmixread only applies to the mixed workload"),
    (dict(steadystate="iops_slope:1%"), "steadystate needs ss_dur_s"),
    (dict(steadystate="slope"), "steadystate must look like"),
    (dict(ss_dur_s=10), "without steadystate"),
    (dict(log_prefix="../x"), "log_prefix must be a plain file name"),
    (dict(blocksize="4k"), "unknown fio parameter(s) ['blocksize']"),
    (dict(filename=None), "filename is required"),
    (dict(filename="/tmp/f", size=None), "size is required when the target is a file"),
    (dict(size="1k"), "smaller than bs"),
])
def test_build_job_rejects(kwargs, message):
    params = {"filename": "/dev/sdb", "size": "1G", **kwargs}
    with pytest.raises(ConfigError) as exc:
        build_job("randwrite", **params)
    assert message in str(exc.value)


def test_build_job_rejects_workload_specific():
    with pytest.raises(ConfigError, match="unknown workload 'randrw'"):
        build_job("randrw", filename="/dev/sdb")
    with pytest.raises(ConfigError, match="rwmixread must be an integer 1..99"):
        build_job("mixed", filename="/dev/sdb", rwmixread=100)
    with pytest.raises(ConfigError, match="needs size to split"):
        build_job("seqread", filename="/dev/sdb", numjobs=2)


def test_estimate_timeout():
    assert estimate_timeout(build_job("randread", filename="/dev/sdb", runtime_s=60, ramp_time_s=10)) == 370
    assert estimate_timeout("[x]\nrw=read\n") == 3600


# --- parse_fio_json against real captures ---------------------------------

@pytest.mark.parametrize("workload", workload_names())
def test_parse_real_json(workload):
    rows = parse_fio_json((FIX / f"host-{workload}.json").read_text())
    raw = raw_json(FIX / f"host-{workload}.json")
    (job,) = raw["jobs"]                     # group_reporting: one entry per job group
    assert rows and all(list(r) == COLUMNS for r in rows)
    expected = {"mixed": ["read", "write"], "randread": ["read"], "seqread": ["read"]}.get(workload, ["write"])
    assert [r["direction"] for r in rows] == expected
    for r in rows:
        assert r["workload"] == workload and r["fio_version"] == "fio-3.33"
        assert r["iops"] > 0 and r["io_bytes"] > 0 and r["runtime_ms"] > 0
        assert r["bw_bytes_s"] == pytest.approx(r["io_bytes"] / (r["runtime_ms"] / 1000), rel=0.01)
        # the reported latency is fio's lat_ns (issue to completion), read here from the raw JSON
        d = job[r["direction"]]
        ps = [r[f"lat_{p}_ns"] for p in ("p50", "p90", "p95", "p99", "p99_9", "p99_99")]
        assert ps == [d["lat_ns"]["percentile"][k] for k in FIO_KEYS]
        assert ps == sorted(ps) and ps[0] > 0
        assert [r[f"lat_{s}_ns"] for s in ("mean", "stddev", "min", "max")] == \
            [d["lat_ns"][s] for s in ("mean", "stddev", "min", "max")]
        # clat, the completion half, kept beside it to show the split; an I/O's lat is its slat + clat,
        # so lat's p99 is never below clat's (0.99: fio's N of the two may differ by a few I/Os)
        assert (r["clat_mean_ns"], r["clat_p99_ns"]) == (d["clat_ns"]["mean"], d["clat_ns"]["percentile"]["99.000000"])
        assert r["lat_p99_ns"] >= r["clat_p99_ns"] * 0.99 and r["lat_mean_ns"] >= r["clat_mean_ns"]
        # the I/O path, from the job's own options (the job's over the global ones)
        opts = {**raw.get("global options", {}), **job["job options"]}
        assert (r["ioengine"], r["direct"]) == (opts["ioengine"], int(opts["direct"]))
        assert r["o_sync"] == {"1": "sync", "dsync": "dsync"}.get(opts.get("sync", "0"), "none")
        assert r["usr_cpu_pct"] >= 0 and r["error"] == 0


def test_parse_details_from_real_json():
    (wal,) = parse_fio_json((FIX / "host-fsync-heavy.json").read_text())
    assert wal["sync_lat_mean_ns"] > 0 and wal["sync_lat_p99_ns"] > 0  # one fsync per write
    assert math.isnan(wal["slat_mean_ns"])  # psync has no submission phase
    read, write = parse_fio_json((FIX / "host-mixed.json").read_text())
    assert read["iops"] / (read["iops"] + write["iops"]) == pytest.approx(0.70, abs=0.02)
    assert (read["bs_bytes"], read["numjobs"], read["iodepth"]) == (8192, 2, 16)
    assert read["ss_attained"] is None
    # randread ran with a 1 s steady-state window: fio printed a bare -nan slope.
    assert "-nan" in (FIX / "host-randread.json").read_text()
    (rr,) = parse_fio_json(load_fio_json((FIX / "host-randread.json").read_text()))
    assert rr["ss_attained"] is True


def test_load_fio_json_errors_and_noise():
    assert load_fio_json('note: both iodepth >= 1 and synchronous I/O engine\n{"jobs": []}') == {"jobs": []}
    with pytest.raises(ZbenchError, match="no JSON"):
        load_fio_json("fio: unable to open 'job.fio' job file")
    with pytest.raises(ZbenchError, match="not valid JSON"):
        load_fio_json('{"jobs": [')


def test_parse_real_log():
    df = parse_fio_log((FIX / "host-mixed_iops.1.log").read_text())
    assert list(df.columns) == ["t_ms", "value", "direction", "bs"]
    assert set(df["direction"]) == {"read", "write"}
    assert (df["t_ms"] % 1000 == 0).all() and (df["value"] > 0).all()
    clat = parse_fio_log((FIX / "host-mixed_clat.1.log").read_text())
    assert clat["value"].between(1_000, 1e8).all()  # nanoseconds


# --- run_fio for real on this machine --------------------------------------

@needs_fio
def test_run_fio_locally(tmp_path):
    job = build_job("mixed", filename=str(tmp_path / "data"), size="16M", runtime_s=2, ramp_time_s=0,
                    numjobs=2, direct=0, ioengine="psync", iodepth=1)
    run = run_fio(LocalHost(), job, str(tmp_path / "remote"), tmp_path / "out")
    assert run.jobs == ["mixed"] and run.host == "local"
    assert (tmp_path / "out" / "job.fio").read_text() == job
    names = sorted(p.name for p in run.log_paths)
    assert "mixed_iops.1.log" in names and "mixed_clat.2.log" in names
    # fetched as one archive, unpacked and removed: only fio's own files are left beside job.fio
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(names + ["fio.json", "fio.stderr", "job.fio"])
    rows = parse_fio_json(run.data)
    assert [r["direction"] for r in rows] == ["read", "write"]
    # fio ran with json+ and lat_percentiles=1: each direction's latencies (issue to completion) come with
    # their histogram bins, one count per I/O
    bins = run_histograms(run.data)
    for r in rows:
        assert sum(b["count"] for b in bins if b["direction"] == r["direction"]) == r["total_ios"] > 0
    logs = parse_fio_logs_dir(tmp_path / "out")
    assert set(logs["metric"]) >= {"iops", "bw", "lat", "clat"} and set(logs["job"]) == {1, 2}
    with pytest.raises(ConfigError, match="never overwritten"):
        run_fio(LocalHost(), job, str(tmp_path / "remote"), tmp_path / "out")


@needs_fio
def test_execute_fio_through_the_wrapper_snapshots_the_counters_at_its_exit(tmp_path):
    """measure() runs fio through counters.snap_after_argv: fio's status and JSON are as
    before, and the sampler (its own rhythm 5 s here) takes a snapshot as fio exits, so the
    sample interval straddling the window's end is short (docs/methods.md 7.1)."""
    (tmp_path / "sampler.sh").write_text(sampler_script())
    (tmp_path / "snap_after.sh").write_text(snap_after_script())
    counters = tmp_path / "counters"
    sampler = subprocess.Popen(sampler_argv(str(tmp_path / "sampler.sh"), str(counters), 5, ""),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stamps():
        file = counters / "diskstats.txt"
        return [b[0] for b in split_snapshots(file.read_text())] if file.exists() else []
    try:
        deadline = time.monotonic() + 10
        while not stamps() and time.monotonic() < deadline:
            time.sleep(0.02)
        job = build_job("randread", filename=str(tmp_path / "data"), size="4M", runtime_s=1, ramp_time_s=0,
                        direct=0, ioengine="psync", iodepth=1)
        proc = execute_fio(LocalHost(), job, str(tmp_path / "remote"),
                           wrapper=snap_after_argv(str(tmp_path / "snap_after.sh"), str(counters)))
        assert proc.result.returncode == 0, proc.result.stderr
        run = collect(proc, tmp_path / "out")
        fio_end = run.data["timestamp_ms"] / 1000           # fio's exit stamp: a read window's end
        deadline = time.monotonic() + 3
        while not [t for t in stamps() if t >= fio_end] and time.monotonic() < deadline:
            time.sleep(0.02)
        after = [t for t in stamps() if t >= fio_end]
        assert after and after[0] - fio_end < 1.0, (stamps(), fio_end)   # not the sampler's 5 s
    finally:
        sampler.terminate()
        assert sampler.wait(timeout=10) == 0


def test_the_prefill_writes_the_declared_data_as_the_jobs_do():
    """Reads of a compressed target read what the prefill wrote: the declared share, in the
    jobs' 512-byte chunks; incompressible (no compress options) when nothing is declared."""
    t = TargetInfo(Zvol("v", 64 * MiB, 16384), "tank/v", "/dev/zvol/tank/v", {}, {})
    argv = prefill_argv(t, 64 * MiB, "/var/tmp/zbench/w", compressible_percent=50)
    assert {"--refill_buffers", "--buffer_compress_percentage=50", "--buffer_compress_chunk=512"} <= set(argv)
    plain = prefill_argv(t, 64 * MiB, "/var/tmp/zbench/w")
    assert "--refill_buffers" in plain and not [a for a in plain if a.startswith("--buffer_compress")]


@needs_fio
def test_fio_buffers_compress_as_declared_in_every_zfs_record(tmp_path):
    """fio's buffers with compressible_percent 50, cut into 128K records as a dataset stores
    them: every record is half random (incompressible) and half zeros, so each compresses to
    about half, never to more than 2x and none is all zeros (a hole). With one region per 1M
    buffer (chunk 0) half the records were all zeros and the rest incompressible."""
    job = build_job("seqwrite", filename=str(tmp_path / "data"), size="8M", runtime_s=1, ramp_time_s=0,
                    time_based=False, direct=0, ioengine="psync", iodepth=1, compressible_percent=50)
    run_fio(LocalHost(), job, str(tmp_path / "remote"), tmp_path / "out")
    data = (tmp_path / "data").read_bytes()
    records = [data[i:i + 128 * 1024] for i in range(0, len(data), 128 * 1024)]
    assert len(records) == 64 and not any(r.count(0) == len(r) for r in records)
    ratios = [len(r) / len(zlib.compress(r, 1)) for r in records]
    assert all(1.8 < x <= 2.0 for x in ratios), (min(ratios), max(ratios))


@needs_fio
def test_run_fio_job_error_names_job_and_host(tmp_path):
    job = "[fill-dev-full]\nfilename=/dev/full\nrw=write\nsize=1M\nbs=4k\nioengine=psync\n"
    with pytest.raises(ZbenchError) as exc:
        run_fio(LocalHost(), job, str(tmp_path / "remote"), tmp_path / "out")
    msg = str(exc.value)
    assert "fill-dev-full" in msg and "local" in msg and "error 28" in msg


@needs_fio
def test_run_fio_unusable_job(tmp_path):
    with pytest.raises(CommandError):
        run_fio(LocalHost(), "[bad]\nrw=nonsense\n", str(tmp_path / "remote"), tmp_path / "out")


def test_logs_dir_empty(tmp_path):
    assert parse_fio_logs_dir(tmp_path).empty
    assert isinstance(parse_fio_logs_dir(tmp_path), pd.DataFrame)


def test_the_workload_records_keep_what_names_used_to_say():
    """The registry replaced a tuple of read-only templates, a SEQUENTIAL set and the judged
    metric's `startswith("seq")`: each record says the same for the shipped workloads."""
    from zbench_lib.measure.workloads import by_name
    ws = by_name()
    assert {n for n, w in ws.items() if w.reads_only} == {"randread", "seqread"}
    assert {n for n, w in ws.items() if w.reads} == {"randread", "seqread", "mixed"}
    assert {n for n, w in ws.items() if w.sequential} == {"seqwrite", "seqread", "fsync-heavy"}
    assert all(w.metric == ("bw_bytes_s" if n.startswith("seq") else "iops") for n, w in ws.items())
    assert [n for n, w in ws.items() if w.rwmix] == ["mixed"]


def test_an_offset_starts_a_region_of_whole_blocks_of_one_target():
    job = build_job("randwrite", filename="/dev/sdb", size="32M", offset="64M", bs="16k")
    assert "\noffset=67108864\n" in job and "\nsize=33554432\n" in job
    assert "offset=" not in build_job("randwrite", filename="/dev/sdb", size="32M", offset=0)
    for kw, match in ((dict(offset="6k", size="32M", bs="4k"), r"offset \(6144 bytes\) is not a whole number"),
                      (dict(offset="64M"), "offset needs a size"),
                      (dict(offset="64M", size="32M", filename=["/dev/sdb", "/dev/sdc"]), "offset needs a size"),
                      (dict(offset="lots", size="32M"), "offset: cannot parse")):
        with pytest.raises(ConfigError, match=match):
            build_job("randwrite", **{"filename": "/dev/sdb", **kw})
