"""fio runs with layered counters and truth checks, on real OpenZFS in the lab."""

import itertools

import pytest

from zbench_lib.measure.workloads import names as workload_names
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool
from zbench_lib.zfs.prefill import prefill
from zbench_lib.measure.runner import measure
from zbench_lib.zfs.targets import Dataset, Zvol
from zbench_lib.measure.run_context import RunContext

pytestmark = pytest.mark.lab
MiB = 1024 ** 2
_counter = itertools.count()


@pytest.fixture(scope="module")
def bench_pool(lab):
    """A 2-disk stripe with a prefilled cold zvol and a dataset, shared by this module."""
    disks = lab.data_disks[:2]
    with Pool(lab.host, Layout("stripe", 2), disks, owned_devices=True) as pool:
        z = pool.create_target(Zvol("vol", 128 * MiB, 16384, compression="off",
                                    primarycache="metadata"))
        prefill(pool, z, "whole", progress=False)
        d = pool.create_target(Dataset("fs", 16384, atime="off", compression="off",
                                       primarycache="metadata"))
        yield pool, z, d, disks


def _measure(lab, bench_pool, tmp_path, target, workload, context=None, **overrides):
    pool, z, d, disks = bench_pool
    params = {"runtime_s": 4, "ramp_time_s": 1, **overrides}
    if target is d:
        params.setdefault("size", "64M")
    # qemu_pid, as a sweep gives it: the controller's load is sampled and host_contention judged,
    # so a timing flag on a busy machine is allowed exactly when its cause was measured.
    ctx = {"cache": "cold", "lab": True, "disk_model_iops": 400, "disk_model_bw": 100 * MiB,
           "scan_at_start": "none", "incompressible_intended": True, "qemu_pid": lab.proc.pid,
           **(context or {})}
    n = next(_counter)
    return measure(lab.host, pool=pool.name, target_path=target.path, devices=disks,
                   workload=workload, overrides=params, remote_dir=f"{pool.work_dir()}/t{n}",
                   raw_dir=tmp_path / f"run{n}", context=RunContext.recording(**ctx), target_name=target.full_name)


# Every template on a zvol; on a dataset the templates whose file semantics differ (fsync calls,
# O_SYNC writes, reads through the file's readahead). The dataset path itself is run by every
# dataset sweep of the lab tests; the rest of the pairs cost make test's budget, not coverage.
DATASET_TEMPLATES = ("fsync-heavy", "randwrite-sync", "seqread")


@pytest.mark.parametrize("workload, surface", [(w, "zvol") for w in workload_names()]
                         + [(w, "dataset") for w in DATASET_TEMPLATES])
def test_every_template_yields_tidy_rows_with_percentiles_and_counters(
        lab, bench_pool, tmp_path, workload, surface):
    pool, z, d, disks = bench_pool
    res = _measure(lab, bench_pool, tmp_path, z if surface == "zvol" else d, workload,
                   numjobs=1, iodepth=4)
    directions = {r["direction"] for r in res.rows}
    want = {"mixed": {"read", "write"}}.get(workload, {"read"} if "read" in workload else {"write"})
    assert directions == want
    for r in res.rows:
        assert r["iops"] > 0 and r["io_bytes"] > 0
        # A percentile is judged only on the I/Os that support it (methods §18): blank, with its
        # reason, below 10 / (1 - q) I/Os; the judged ones are positive and in order.
        judged = [r[c] for c in ("lat_p50_ns", "lat_p99_ns", "lat_p99_99_ns") if r[c] == r[c]]
        assert judged and judged[0] > 0 and judged == sorted(judged), r
        assert (r["lat_p99_99_ns"] != r["lat_p99_99_ns"]) == (r["total_ios"] < 100_000), r
        assert (r["total_ios"] >= 100_000) or "p99.99 needs 100000" in r["tail_not_judged"], r
        assert r["samples_disk"] >= 2 and r["samples_cpu"] >= 2
        assert r["cpu_usr_pct"] + r["cpu_sys_pct"] > 0
    assert (res.raw_dir / "fio" / "job.fio").exists() and (res.raw_dir / "counters" / "diskstats.txt").exists()
    assert not list(res.raw_dir.rglob("*.tar*"))       # the transfer archive is not kept beside its content


def test_cold_random_reads_agree_across_layers_and_raise_no_flag(lab, bench_pool, tmp_path):
    pool, z, d, disks = bench_pool
    serials = [s for s in lab.cfg.data_serials[:2]]
    for s in serials:                      # throttle-bound, so steady
        lab.set_model(s, "custom:iops=150")
    try:
        res = _measure(lab, bench_pool, tmp_path, z, "randread", bs="16k", numjobs=1, iodepth=8,
                       runtime_s=10, ramp_time_s=2,
                       context={"disk_model_iops": 150, "qemu_pid": lab.proc.pid, "block_bytes": 16384})
    finally:
        for s in serials:
            lab.set_model(s, lab.cfg.model)
    r = res.rows[0]
    # Block size matches volblocksize: every fio read is one disk read.
    assert 0.8 <= r["dev_read_bytes"] / r["io_bytes"] <= 1.3, r
    assert 0.8 <= r["pool_read_bytes"] / r["io_bytes"] <= 1.3, r
    raised = {k for k, v in res.checks.items() if v.get("flag")}
    # On a busy machine the emulation may really stall: timing flags are then true, and
    # allowed only when the host-contention check measured the cause. Nothing else, ever.
    timing = {"not_steady", "emulation_bound", "host_contention"}
    allowed = timing if res.checks["host_contention"]["flag"] else set()
    # The drift test judges 10 s of reads (ten 1 s rounds) and, by its design, calls 5% of steady
    # runs not steady (methods §12); it describes the run, so it is judged here, not forbidden.
    assert res.checks["not_steady"]["flag"] is not None, res.checks["not_steady"]
    assert raised - {"not_steady"} <= allowed, {k: res.checks[k] for k in raised}
    assert res.checks["read_amplification"]["flag"] is False, res.checks["read_amplification"]


def test_warm_rereads_of_a_small_file_raise_cache_served(lab, bench_pool, tmp_path):
    pool, z, d, disks = bench_pool
    lab.host.run(["zfs", "set", "primarycache=all", d.full_name])
    try:
        for _ in range(2):   # the first pass warms the ARC, the second is served from it
            res = _measure(lab, bench_pool, tmp_path, d, "randread", size="16M", bs="16k",
                           numjobs=1, iodepth=4, direct=0, runtime_s=4)
    finally:
        lab.host.run(["zfs", "set", "primarycache=metadata", d.full_name])
    assert res.checks["cache_served"]["flag"], res.checks["cache_served"]


def test_compressible_buffers_on_lz4_raise_compressible_data(lab, bench_pool, tmp_path):
    pool, z, d, disks = bench_pool
    z2 = pool.create_target(Zvol("lz4vol", 64 * MiB, 16384, compression="lz4"))
    res = _measure(lab, bench_pool, tmp_path, z2, "seqwrite", compressible_percent=90,
                   numjobs=1, iodepth=4, runtime_s=4)
    chk = res.checks["compressible_data"]
    assert chk["flag"] and chk["compressratio"] > 1.05, chk


def test_declared_compressible_data_is_judged_against_the_declaration(lab, bench_pool, tmp_path):
    """Issue 27 item 6, about 30 s of lab time: 50% compressible data declared on an lz4 dataset of
    128K records, prefilled with that data, then written and read back cold (1M, 4 s each): the
    ratio shows the compression (about 1.9x; never past the 2.5x ceiling), so compressible_data
    passes, and the disks move fewer bytes than fio without a quiet-disk or cache flag. Declared
    50% but written incompressible (prefill and job at 0%) on a second lz4 dataset: flagged."""
    pool, z, d, disks = bench_pool
    # No ashift: a run's context does not record it (a sweep's meta.json gives it to the checks), and
    # without it the check takes 12, this pool's.
    declared = {"compressible_percent_declared": 50, "incompressible_intended": False, "compression": "lz4",
                "block_bytes": 131072}
    fs = pool.create_target(Dataset("lz4fs", 131072, atime="off", compression="lz4", primarycache="metadata"))
    fill = prefill(pool, fs, "whole", progress=False, size_bytes=64 * MiB, compressible_percent=50)
    assert fill["prefill_compressible_percent"] == 50 and 1.5 < fill["compressratio"] <= 2.05, fill
    runs = {w: _measure(lab, bench_pool, tmp_path, fs, w, context=declared, size="64M", compressible_percent=50,
                        numjobs=1, iodepth=4, runtime_s=4) for w in ("seqwrite", "seqread")}
    timing = {"not_steady", "emulation_bound", "host_contention"}
    for w, res in runs.items():
        chk = res.checks["compressible_data"]
        assert chk["flag"] is False and 1.5 < chk["compressratio"] <= 2.05, (w, chk)
        raised = {k for k, v in res.checks.items() if v.get("flag")}
        assert raised <= (timing if res.checks["host_contention"]["flag"] else {"not_steady"}), \
            (w, {k: res.checks[k] for k in raised})
        (row,) = res.rows          # a stripe: no parity, so the disks move about fio's bytes / 1.9
        assert row["physical_bw_bytes_s"] < (0.8 if w == "seqread" else 1.0) * row["bw_bytes_s"], (w, row)
    assert runs["seqread"].checks["cache_served"]["flag"] is False
    plain = pool.create_target(Dataset("lz4plain", 131072, atime="off", compression="lz4", primarycache="metadata"))
    prefill(pool, plain, "whole", progress=False, size_bytes=64 * MiB)          # incompressible
    res = _measure(lab, bench_pool, tmp_path, plain, "seqwrite", context=declared, size="64M", numjobs=1,
                   iodepth=4, runtime_s=4)                                       # the job at 0% too
    chk = res.checks["compressible_data"]
    assert chk["flag"] is True and "not what was declared" in chk["reason"], chk


def test_unthrottled_lab_raises_emulation_bound(lab, bench_pool, tmp_path):
    pool, z, d, disks = bench_pool
    serials = lab.cfg.data_serials[:2]
    for s in serials:
        lab.set_model(s, "unthrottled")
    try:
        res = _measure(lab, bench_pool, tmp_path, z, "randread", bs="4k", numjobs=8, iodepth=64,
                       runtime_s=10, context={"disk_model_iops": None, "disk_model_bw": None})
    finally:
        for s in serials:
            lab.set_model(s, lab.cfg.model)
    assert res.checks["emulation_bound"]["flag"], str(res.checks["emulation_bound"])
