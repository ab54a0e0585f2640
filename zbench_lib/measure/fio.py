"""fio in three layers: build_job renders a job file, run_fio runs it on a host,
parse_fio_json / parse_fio_log (in fio_parse, re-exported here) make tidy rows.

Job files come from the Jinja2 templates in templates/fio/ (one per workload of
the standard suite, all extending _base.fio.j2). Every parameter is validated
before rendering so that a bad sweep fails before anything touches a disk.
"""

from __future__ import annotations

import io
import os
import tarfile
import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.measure.fio_parse import load_fio_json
from zbench_lib.hosts.base import Host
from zbench_lib.core.stopping import stop_by_cwd
from zbench_lib.core.sizes import parse_size
from zbench_lib.zfs.prefill import COMPRESS_CHUNK
from zbench_lib.measure import workloads
from zbench_lib.measure.load import fio_rate, open_loop_iodepth
from zbench_lib.measure.workloads import Workload

TEMPLATE_DIR = REPO_ROOT / "templates" / "fio"

IOENGINES = frozenset({"libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "posixaio"})
_SYNC_VALUES = {0: 0, 1: 1, False: 0, True: 1, "0": 0, "1": 1, "none": 0, "sync": 1, "dsync": "dsync"}  # noqa: F601 (False, True are 0, 1: spelled for YAML)
_SS_RE = re.compile(r"^(iops|bw|iops_slope|bw_slope):\d+(\.\d+)?%?$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _int(params, key, minimum):
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{key} must be >= {minimum}, got {value}")
    return value


def _seconds(params, key, *, positive):
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key}: expected seconds as a number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{key} must be > 0, got {value}")
    if value < 0:
        raise ConfigError(f"{key} cannot be negative, got {value}")
    if value != int(value):
        raise ConfigError(f"{key}: fio takes whole seconds, got {value}")
    return int(value)


def fio_filename(paths) -> str:
    """fio's `filename=` value for one path or several (the raw surface's disks): fio splits
    the value on ':', so a colon inside a name (/dev/disk/by-path/pci-0000:00:1f.2) is
    escaped as '\\:' and the names are joined with bare colons."""
    return ":".join(p.replace(":", "\\:") for p in ([paths] if isinstance(paths, str) else paths))


def _offset(p: dict, size: int | None, bs: int, devices: int) -> int | None:
    """Where the job's region starts (a client's share of a shared LUN: zfs/iscsi_share.region): a
    whole number of blocks into one device, with the region's size given."""
    if p["offset"] is None:
        return None
    offset = parse_size(p["offset"], "offset")
    if offset % bs:
        raise ConfigError(f"offset ({offset} bytes) is not a whole number of blocks of {bs} bytes")
    if size is None or devices > 1:
        raise ConfigError("offset needs a size (the region it starts) and one device or file")
    return offset


def _validate(w: Workload, p: dict) -> dict:  # noqa: C901, PLR0912, PLR0915 (one check per job parameter; debt, issue 28)
    """Check and normalise the merged parameters; returns the template context."""
    workload = w.name
    given = p["filename"]
    names = [given] if isinstance(given, str) else list(given) if isinstance(given, (list, tuple)) else []
    if not names or not all(n and isinstance(n, str) for n in names):
        raise ConfigError(f"{workload}: filename is required (a block device or a file path, or a list of devices)")
    if any(c in n for n in names for c in "\n\r\0"):
        raise ConfigError(f"filename contains a control character: {p['filename']!r}")
    if len(names) > 1 and not all(n.startswith("/dev/") for n in names):
        raise ConfigError(f"several filenames are block devices only (the raw surface), got {names}")
    bs = parse_size(p["bs"], "bs")
    if bs < 512 or bs % 512 or bs & (bs - 1):
        raise ConfigError(f"bs must be a power-of-two multiple of 512 (512, 4k, 8k, ... 1M), got {p['bs']!r}")
    size = parse_size(p["size"], "size") if p["size"] is not None else None
    if size is None and not names[0].startswith("/dev/"):
        raise ConfigError(f"size is required when the target is a file ({p['filename']})")
    if size is None and len(names) > 1:
        raise ConfigError("size is required with several devices: it is split evenly between them, each from offset 0")
    if size is not None and size < bs:
        raise ConfigError(f"size ({size} bytes) is smaller than bs ({bs} bytes)")
    offset = _offset(p, size, bs, len(names))
    iodepth = _int(p, "iodepth", 1)
    numjobs = _int(p, "numjobs", 1)
    runtime = _seconds(p, "runtime_s", positive=True)
    ramp = _seconds(p, "ramp_time_s", positive=False)
    if ramp >= runtime:
        raise ConfigError(f"ramp_time_s ({ramp}) must be shorter than runtime_s ({runtime})")
    if p["ioengine"] not in IOENGINES:
        raise ConfigError(f"ioengine {p['ioengine']!r} not supported; choose one of {sorted(IOENGINES)}")
    if p["direct"] not in (0, 1):
        raise ConfigError(f"direct must be 0 or 1, got {p['direct']!r}")
    comp = _int(p, "compressible_percent", 0)
    if comp > 100:
        raise ConfigError(f"compressible_percent must be 0..100, got {comp}")
    if p["sync"] not in _SYNC_VALUES:
        raise ConfigError(f"sync must be 0, 1 or 'dsync', got {p['sync']!r}")
    fsync = _int(p, "fsync", 0)
    offset_increment = None
    if w.sequential and numjobs > 1:
        if size is None:
            raise ConfigError(f"{workload} with numjobs={numjobs} needs size to split the target into per-job regions")
        # Each job writes its own contiguous region, so the stream stays sequential. With several
        # devices fio splits a job's size evenly between them and offsets each device alike, so
        # the region is per device: job k covers [k, k+1) x region/numjobs of every device.
        region = (size // len(names) // numjobs) // bs * bs
        if region == 0:
            raise ConfigError(f"size is too small to give each of {numjobs} jobs one block")
        size, offset_increment = region * len(names), region
    mix = p["rwmixread"]
    if w.rwmix:
        if isinstance(mix, bool) or not isinstance(mix, int) or not 0 < mix < 100:
            raise ConfigError(f"rwmixread must be an integer 1..99, got {mix!r}")
    elif mix is not None:
        raise ConfigError(f"rwmixread only applies to the mixed workload, not {workload}")
    prefix = p["log_prefix"] or workload
    if not _NAME_RE.match(prefix):
        raise ConfigError(f"log_prefix must be a plain file name prefix, got {prefix!r}")
    ss = p["steadystate"]
    ss_dur = ss_ramp = None
    if ss is not None:
        if not isinstance(ss, str) or not _SS_RE.match(ss):
            raise ConfigError(f"steadystate must look like 'iops_slope:0.3%' or 'iops:10%', got {ss!r}")
        if p["ss_dur_s"] is None:
            raise ConfigError("steadystate needs ss_dur_s (the window, in seconds)")
        ss_dur = _seconds(p, "ss_dur_s", positive=True)
        ss_ramp = _seconds(p, "ss_ramp_s", positive=False) if p["ss_ramp_s"] is not None else 0
        if ss_dur + ss_ramp > runtime:
            raise ConfigError(f"ss_dur_s + ss_ramp_s ({ss_dur + ss_ramp}) exceed runtime_s ({runtime})")
    elif p["ss_dur_s"] is not None or p["ss_ramp_s"] is not None:
        raise ConfigError("ss_dur_s / ss_ramp_s given without steadystate")
    return dict(workload=workload, filename=fio_filename(names), size=size, bs=bs, iodepth=iodepth,
                numjobs=numjobs, runtime_s=runtime, ramp_time_s=ramp, time_based=bool(p["time_based"]),
                randseed=_int(p, "randseed", 0), ioengine=p["ioengine"], direct=int(p["direct"]),
                compressible_percent=comp, compress_chunk=COMPRESS_CHUNK, sync=_SYNC_VALUES[p["sync"]], fsync=fsync,
                offset=offset, offset_increment=offset_increment, rwmixread=mix, log_prefix=prefix,
                steadystate=ss, ss_dur_s=ss_dur, ss_ramp_s=ss_ramp)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env


def _open_loop(context: dict, rate_iops: float | None) -> dict:
    """The template's open-loop keys: none at saturation (closed loop, the job as it always was); with
    `rate_iops` (the IOPS offered, all jobs and directions) fio's per-job rate, Poisson arrivals and a
    queue deep enough not to cap the rate (measure/load.py: open_loop_iodepth)."""
    if rate_iops is None:
        return {**context, "rate_iops": None}
    if isinstance(rate_iops, bool) or not isinstance(rate_iops, (int, float)) or not 0 < rate_iops < float("inf"):
        raise ConfigError(f"rate_iops must be a positive number of IOPS, got {rate_iops!r}")
    share = None if context["rwmixread"] is None else context["rwmixread"] / 100
    return {**context, "rate_iops": fio_rate(rate_iops, context["numjobs"], share),
            "iodepth": open_loop_iodepth(context["iodepth"])}


def build_job(workload: str, rate_iops: float | None = None, **overrides) -> str:
    """Render the fio job file for `workload` with `overrides` on top of its registered defaults
    (measure/workloads/); with `rate_iops`, open loop at that many IOPS offered (the load factor).

    Raises ConfigError for an unknown workload or parameter and for invalid values.
    """
    w = workloads.get(workload)
    unknown = sorted(set(overrides) - set(w.defaults))
    if unknown:
        raise ConfigError(f"unknown fio parameter(s) {unknown} for {workload}; "
                          f"known: {sorted(w.defaults)}")
    context = _open_loop(_validate(w, {**w.defaults, **overrides}), rate_iops)
    text = _environment().get_template(w.template).render(**context)
    return text if text.endswith("\n") else text + "\n"


def job_sections(job_text: str) -> list[str]:
    """Job section names of a job file (everything but [global])."""
    names = re.findall(r"^\[([^\]]+)\]", job_text, flags=re.M)
    return [n for n in names if n != "global"]


def estimate_timeout(job_text: str, margin_s: float = 300) -> float:
    """A generous timeout for a time-based job: ramp + runtime + margin (1 h if unknown)."""
    get = lambda key: re.search(rf"^{key}=(\d+)\s*$", job_text, flags=re.M)  # noqa: E731
    runtime, ramp = get("runtime"), get("ramp_time")
    if not runtime or not re.search(r"^time_based=1", job_text, flags=re.M):
        return 3600.0
    return int(runtime.group(1)) + (int(ramp.group(1)) if ramp else 0) + margin_s


@dataclass
class FioRun:
    """What run_fio brought back: raw files in local_dir and the parsed JSON."""
    local_dir: Path
    json_path: Path
    log_paths: list[Path]
    data: dict
    duration_s: float
    host: str
    jobs: list[str] = field(default_factory=list)


def fetch_tree(host: Host, remote_dir: str, parts: list[str], local: Path, exclude=("job.fio",)) -> None:
    """`parts` of `remote_dir` (files or directories) as one archive, streamed back on the standard
    output of the one command that makes it.

    Not one copy per file: a run of two jobs writes ten logs, and each copy cost a lab run
    about half a second (so did the copy of an archive written on the host). Uncompressed: gzip
    on an emulated CPU cost more than the bytes it saved.
    """
    res = host.run(["tar", "-C", remote_dir, "-cf", "-", *[f"--exclude={x}" for x in exclude], *parts],
                   timeout=300, binary_stdout=True)
    local.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tf:
        tf.extractall(local, filter="data")


@dataclass
class FioProcess:
    """A finished fio on a host whose outputs are still there (see `collect`)."""
    host: Host
    job_text: str
    remote_dir: str
    argv: list
    result: object          # the host's CommandResult
    jobs: list


def execute_fio(host: Host, job_text: str, remote_dir: str, timeout: float | None = None,
                wrapper: tuple | list = (), shipped: bool = False) -> FioProcess:
    """Ship `job_text` to `remote_dir` on `host` and run fio there; nothing is fetched yet.

    `wrapper` is an argument-list prefix that runs fio's own on the host and exits with its
    status (measure.runner's counters.snap_after_argv: the sampler's snapshot at fio's exit).
    `shipped`: the caller already wrote `job_text` to `remote_dir`/job.fio (measure.runner
    ships it with the run's other files, in one command).
    """
    jobs = job_sections(job_text) or ["?"]
    timeout = estimate_timeout(job_text) if timeout is None else timeout
    remote_dir = remote_dir.rstrip("/") or "/"
    if not shipped:
        host.write_files(remote_dir, {"job.fio": job_text}, timeout=60)     # the directory too, in one command
    # Run inside remote_dir so the relative log prefix lands there; env -C avoids a shell.
    # json+ is json plus each latency histogram's bins: the cell's tails are read from the
    # merged bins of its runs (fio_hist, docs/methods.md §18), never from averaged percentiles.
    argv = ["env", "-C", remote_dir, *wrapper, "fio", "--output-format=json+", "--output=fio.json", "job.fio"]
    # On a signal fio is stopped on the host (and seen gone) rather than waited out.
    res = host.run(argv, timeout=timeout, check=False, stop_with=stop_by_cwd(remote_dir))
    return FioProcess(host, job_text, remote_dir, argv, res, jobs)


def collect(proc: FioProcess, local_dir, fetched: bool = False) -> FioRun:
    """fio's JSON and logs into `local_dir` (fetched here unless the caller already did), checked.

    Raises ZbenchError naming the job and host when a job reports a non-zero error,
    CommandError when fio fails without usable JSON.
    """
    local, res, host = Path(local_dir), proc.result, proc.host
    local.mkdir(parents=True, exist_ok=True)
    (local / "job.fio").write_text(proc.job_text)
    (local / "fio.stderr").write_text(res.stderr)
    json_path = local / "fio.json"
    try:
        if not fetched:
            fetch_tree(host, proc.remote_dir, ["."], local)
        data = load_fio_json(json_path.read_text())
    except (ZbenchError, OSError, ValueError, tarfile.TarError) as exc:
        if res.returncode != 0:
            raise CommandError(host.name, proc.argv, res.returncode, res.stderr, res.stdout) from None
        raise ZbenchError(f"fio job {', '.join(proc.jobs)} on {host.name}: no usable JSON output ({exc})") from None
    failed = [(j.get("jobname", "?"), j["error"]) for j in data.get("jobs", []) if j.get("error")]
    if failed:
        detail = "; ".join(f"job {name!r}: error {code} ({os.strerror(code)})" for name, code in failed)
        tail = "\n".join(res.stderr.strip().splitlines()[-5:])
        raise ZbenchError(f"fio failed on {host.name}: {detail}" + (f"\n{tail}" if tail else ""))
    if res.returncode != 0:
        raise CommandError(host.name, proc.argv, res.returncode, res.stderr, res.stdout)
    logs = sorted(p for p in local.glob("*.log"))
    return FioRun(local, json_path, logs, data, res.duration_s, host.name, proc.jobs)


def run_fio(host: Host, job_text: str, remote_dir: str, local_dir, timeout: float | None = None) -> FioRun:
    """Ship `job_text` to `remote_dir` on `host`, run fio, fetch JSON and logs into `local_dir`.

    Refuses to overwrite an earlier run in local_dir (raw results are never overwritten).
    """
    if (Path(local_dir) / "fio.json").exists():
        raise ConfigError(f"{local_dir} already holds a fio run; raw results are never overwritten")
    return collect(execute_fio(host, job_text, remote_dir, timeout), local_dir)
