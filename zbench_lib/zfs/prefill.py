"""Prefill: write a target with the data the spec declares before reads are measured.

Incompressible unless the spec declares compressible data (`compressible_percent`): then
the target is written with fio buffers of that compressibility, so reads of a compressed
target read data that compressed as declared (docs/methods.md §7).

Random reads on a never-written zvol are served as holes without touching the
disks; the seeds' studies "write the pool almost entirely first". Prefill writes
sequentially at 1 MiB and queue depth 16 so it runs near the pool's bandwidth,
then flushes the TXG (`zpool sync`) so the time and space are honest.
"""

from __future__ import annotations

import re
import time

from tqdm.auto import tqdm

from zbench_lib.core.stopping import stop_by_args
from zbench_lib.core.crash import crash_point
from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.zfs.pools import Pool, TargetInfo
from zbench_lib.zfs.targets import Dataset, Zvol

_PCT = re.compile(r"\[(\d+(?:\.\d+)?)%\]")
MiB = 1024 * 1024
FILLER = "zbench_filler"       # the dataset that holds a pool fill beyond the target
# fio's buffer_compress_chunk for a declared compressible share (the workloads' jobs and the
# prefill): random bytes then zeros in every 512 bytes, finer than any ZFS block, so each
# block compresses as declared. fio 3.33's default, written out: older fios took one region
# per buffer, and a 1M buffer 50% compressible became 128K records half random, half zero
# (stored uncompressed and as holes: the pool saw none of the declared compressibility).
COMPRESS_CHUNK = 512


def prefill_bytes(pool: Pool, tinfo: TargetInfo, fill, size_bytes: int | None = None) -> int:
    """Bytes written into the target for `fill` ('whole' or a pool percentage like '60%').

    The target is written whole: a zvol's volsize, a dataset's file of `size_bytes` (the
    size fio measures), so no cell reads holes. A percentage is then the pool's fill
    (`zpool list` CAP), reached with a filler dataset (`top_up`); it used to be capped at
    the target silently. Only a dataset of unknown size takes the percentage itself.
    """
    cap = _capacity(tinfo, size_bytes)
    pct = fill_percent(fill)
    if cap is not None:
        return cap
    if pct is None:
        raise ConfigError(f"prefill: 'whole' needs the size of {tinfo.full_name}'s file (target.size)")
    want = int(_pool_fill_gap(pool.status(), pct) / _alloc_per_byte(pool))
    if want < MiB:
        raise ConfigError(f"prefill: pool {pool.name} is already past {pct}% full")
    return want - want % MiB


def fill_percent(fill) -> float | None:
    """None for 'whole', else the percentage; ConfigError for anything else."""
    if fill in ("whole", "all"):
        return None
    if isinstance(fill, str) and fill.endswith("%"):
        try:
            pct = float(fill[:-1])
        except ValueError:
            raise ConfigError(f"prefill: cannot read percentage {fill!r}") from None
    elif isinstance(fill, (int, float)) and not isinstance(fill, bool):
        pct = float(fill)
    else:
        raise ConfigError(f"prefill: fill must be 'whole' or a percentage like '60%', got {fill!r}")
    if not 0 < pct <= 100:
        raise ConfigError(f"prefill: percentage must be in (0, 100], got {pct}")
    return pct


def _capacity(tinfo: TargetInfo, size_bytes: int | None) -> int | None:
    """What writing the target whole means: a zvol's volsize, a dataset's declared file size."""
    # (a zvol's filesystem holds a file of the declared size, not the whole volume)
    return tinfo.target.volsize_bytes if isinstance(tinfo.target, Zvol) and tinfo.path.startswith("/dev/") \
        else size_bytes


def _pool_fill_gap(status: dict, pct: float) -> int:
    """Raw bytes still to allocate for the pool's CAP (from `Pool.status()`) to reach `pct`."""
    return int(status["size_bytes"] * pct / 100) - int(status["allocated_bytes"])


def _alloc_per_byte(pool: Pool) -> float:
    """Raw bytes a written byte allocates, before measuring: copies on mirrors, parity on raidz."""
    return pool.layout.total_disks / max(1, pool.layout.data_disks)


def prefill_argv(tinfo: TargetInfo, nbytes: int, work_dir: str, compressible_percent: int = 0) -> list[str]:
    """fio writing the target once; `compressible_percent` > 0 lays its buffers out as the
    workloads' jobs do (measure/fio.py: COMPRESS_CHUNK)."""
    block_device = tinfo.path.startswith("/dev/")
    compressible = [f"--buffer_compress_percentage={compressible_percent}",
                    f"--buffer_compress_chunk={COMPRESS_CHUNK}"] if compressible_percent else []
    return ["fio", "--name=prefill", f"--filename={tinfo.path}", "--rw=write", "--bs=1M",
            "--iodepth=16", "--ioengine=libaio", f"--direct={1 if block_device else 0}",
            f"--size={nbytes}", "--refill_buffers", *compressible, "--randrepeat=0", "--end_fsync=1",
            "--eta=always", "--eta-newline=1", "--output-format=json",
            f"--output={work_dir}/prefill.json"]


def prefill(pool: Pool, tinfo: TargetInfo, fill="whole", progress: bool = True,
            size_bytes: int | None = None, compressible_percent: int = 0) -> dict:
    """Write the target (and top the pool up); return what was written, how fast, and the space it took.

    `compressible_percent` is the data the spec declares for the target (0: incompressible);
    the pool's filler stays incompressible (it only takes space)."""
    nbytes = prefill_bytes(pool, tinfo, fill, size_bytes)
    t0 = time.monotonic()
    _write(pool.host, tinfo.full_name, prefill_argv(tinfo, nbytes, pool.work_dir(), compressible_percent), progress)
    pool.host.run(["zpool", "sync", pool.name], timeout=600)
    pct = fill_percent(fill)
    # A dataset of unknown size took the percentage itself: nothing to top up.
    filler = top_up(pool, tinfo, pct, progress) if pct is not None and _capacity(tinfo, size_bytes) else 0
    seconds = time.monotonic() - t0
    space = pool.host.run(["zfs", "get", "-Hp", "-o", "property,value",
                           "used,logicalused,referenced,compressratio", tinfo.full_name]).stdout
    props = dict(line.split("\t") for line in space.strip().splitlines())
    status = pool.status()
    return {"prefill_bytes": nbytes, "prefill_filler_bytes": filler, "prefill_s": round(seconds, 2),
            "prefill_bw_bytes_s": (nbytes + filler) / seconds, "prefill_compressible_percent": compressible_percent,
            "used_bytes": int(props["used"]), "logicalused_bytes": int(props["logicalused"]),
            "referenced_bytes": int(props["referenced"]),
            "compressratio": float(props["compressratio"].rstrip("x")),
            "pool_capacity_pct": status["capacity_pct"],
            "pool_fragmentation_pct": status["fragmentation_pct"]}


def top_up(pool: Pool, tinfo: TargetInfo, pct: float, progress: bool) -> int:
    """Write incompressible filler until the pool's CAP is about `pct`; the bytes written.

    Two steps: half the gap at the layout's nominal cost per byte, then the rest at the
    cost just measured (raidz padding and metadata make the nominal one approximate).
    Never more than 95% of what ZFS says is available; a pool already there gets nothing.
    """
    written, per_byte = 0, _alloc_per_byte(pool)
    for step, share in enumerate((0.5, 1.0), 1):
        status = pool.status()
        avail = int(pool.host.run(["zfs", "get", "-Hp", "-o", "value", "available", pool.name]).stdout)
        n = min(int(_pool_fill_gap(status, pct) * share / per_byte), int(avail * 0.95))
        n -= n % MiB
        if n < MiB:
            break
        before = status["allocated_bytes"]
        _write_filler(pool, f"{tinfo.target.name}-{step}", n, progress)
        pool.host.run(["zpool", "sync", pool.name], timeout=600)
        written += n
        per_byte = max(0.5, (pool.status()["allocated_bytes"] - before) / n)
    return written


def _write_filler(pool: Pool, file_name: str, nbytes: int, progress: bool) -> None:
    """Incompressible bytes in a dataset of their own, so the pool is as full as declared."""
    name = f"{pool.name}/{FILLER}"
    if pool.host.run(["zfs", "list", "-H", "-o", "name", name], check=False).returncode != 0:
        pool.host.run(["zfs", "create", "-o", "compression=off", "-o", "primarycache=metadata", name])
    filler = TargetInfo(Dataset(FILLER), name, f"/{name}/{file_name}.data", {}, {})
    _write(pool.host, name, prefill_argv(filler, nbytes, pool.work_dir()), progress)


def prefill_raw(host, devices: list[str], region_bytes: int, work_dir: str, progress: bool = True) -> dict:
    """Write each raw disk's region (from offset 0) once, as a target is written: incompressible,
    sequential 1 MiB writes at queue depth 16, in one fio job whose filename lists the disks
    (fio splits the size evenly between them and serves them round-robin, so all are busy).
    The caller has checked the disks (zfs.raw_device.RawDevice): this only writes."""
    nbytes = region_bytes * len(devices)
    names = ":".join(d.replace(":", "\\:") for d in devices)       # fio splits filename on ':'
    argv = ["fio", "--name=prefill", f"--filename={names}", "--rw=write", "--bs=1M", "--iodepth=16",
            "--ioengine=libaio", "--direct=1", f"--size={nbytes}", "--refill_buffers", "--randrepeat=0",
            "--end_fsync=1", "--eta=always", "--eta-newline=1", "--output-format=json",
            f"--output={work_dir}/prefill.json"]
    t0 = time.monotonic()
    _write(host, f"{len(devices)} raw disk(s)", argv, progress)
    seconds = max(time.monotonic() - t0, 1e-6)
    return {"prefill_bytes": nbytes, "prefill_region_bytes": region_bytes, "prefill_s": round(seconds, 2),
            "prefill_bw_bytes_s": nbytes / seconds}


def _write(host, label: str, argv: list[str], progress: bool) -> None:
    proc = host.popen(argv)
    crash_point("prefill", after_s=2)   # let the write get going, then die mid-way
    bar = tqdm(total=100, desc=f"prefill {label}", unit="%", disable=not progress,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")
    buf = ""
    try:
        while True:
            ch = proc.stdout.read(1)
            if not ch:
                break
            if ch in "\r\n":
                m = _PCT.search(buf)
                if m:
                    bar.n = min(100.0, float(m.group(1)))
                    bar.refresh()
                buf = ""
            else:
                buf += ch
        rc = proc.wait()
    except BaseException:
        # Stopped on the host and seen gone: an abandoned prefill started late held the zvol
        # open under the teardown's `zpool destroy` (issue 34).
        output = next(a for a in argv if a.startswith("--output="))
        host.stop_on_host(proc, stop_by_args(output), argv)
        raise
    finally:
        bar.n = 100 if proc.poll() == 0 else bar.n
        bar.close()
    if rc != 0:
        raise CommandError(host.name, argv, rc, proc.stderr.read())
