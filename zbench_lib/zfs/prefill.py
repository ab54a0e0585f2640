"""Prefill: write a target with incompressible data before reads are measured.

Random reads on a never-written zvol are served as holes without touching the
disks; the seeds' studies "write the pool almost entirely first". Prefill writes
sequentially at 1 MiB and queue depth 16 so it runs near the pool's bandwidth,
then flushes the TXG (`zpool sync`) so the time and space are honest.
"""

from __future__ import annotations

import re
import time

from tqdm.auto import tqdm

from zbench_lib.core.crash import crash_point
from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.zfs.pools import Pool, TargetInfo
from zbench_lib.zfs.targets import Zvol

_PCT = re.compile(r"\[(\d+(?:\.\d+)?)%\]")


def prefill_bytes(pool: Pool, tinfo: TargetInfo, fill) -> int:
    """Bytes to write: 'whole' (a zvol's volsize) or a percentage of the pool, e.g. '60%'."""
    if fill in ("whole", "all", 100, "100%") and isinstance(tinfo.target, Zvol):
        return tinfo.target.volsize_bytes
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
    avail = int(pool.host.run(["zfs", "get", "-Hp", "-o", "value", "available", pool.name]).stdout)
    used = int(pool.host.run(["zfs", "get", "-Hp", "-o", "value", "used", pool.name]).stdout)
    want = int((avail + used) * pct / 100) - used
    if isinstance(tinfo.target, Zvol):
        want = min(want, tinfo.target.volsize_bytes)
    want -= want % (1024 * 1024)
    if want <= 0:
        raise ConfigError(f"prefill: pool {pool.name} is already past {pct}% full")
    return want


def prefill_argv(tinfo: TargetInfo, nbytes: int, work_dir: str) -> list[str]:
    is_zvol = isinstance(tinfo.target, Zvol)
    return ["fio", "--name=prefill", f"--filename={tinfo.path}", "--rw=write", "--bs=1M",
            "--iodepth=16", "--ioengine=libaio", f"--direct={1 if is_zvol else 0}",
            f"--size={nbytes}", "--refill_buffers", "--randrepeat=0", "--end_fsync=1",
            "--eta=always", "--eta-newline=1", "--output-format=json",
            f"--output={work_dir}/prefill.json"]


def prefill(pool: Pool, tinfo: TargetInfo, fill="whole", progress: bool = True) -> dict:
    """Write the target; return what was written, how fast, and the space it took."""
    nbytes = prefill_bytes(pool, tinfo, fill)
    argv = prefill_argv(tinfo, nbytes, pool.work_dir())
    t0 = time.monotonic()
    proc = pool.host.popen(argv)
    crash_point("prefill", after_s=2)   # let the write get going, then die mid-way
    bar = tqdm(total=100, desc=f"prefill {tinfo.full_name}", unit="%", disable=not progress,
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
        proc.kill()
        raise
    finally:
        bar.n = 100 if proc.poll() == 0 else bar.n
        bar.close()
    if rc != 0:
        raise CommandError(pool.host.name, argv, rc, proc.stderr.read())
    pool.host.run(["zpool", "sync", pool.name], timeout=600)
    seconds = time.monotonic() - t0
    space = pool.host.run(["zfs", "get", "-Hp", "-o", "property,value",
                           "used,logicalused,referenced,compressratio", tinfo.full_name]).stdout
    props = dict(line.split("\t") for line in space.strip().splitlines())
    status = pool.status()
    return {"prefill_bytes": nbytes, "prefill_s": round(seconds, 2),
            "prefill_bw_bytes_s": nbytes / seconds,
            "used_bytes": int(props["used"]), "logicalused_bytes": int(props["logicalused"]),
            "referenced_bytes": int(props["referenced"]),
            "compressratio": float(props["compressratio"].rstrip("x")),
            "pool_capacity_pct": status["capacity_pct"],
            "pool_fragmentation_pct": status["fragmentation_pct"]}
