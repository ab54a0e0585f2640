"""One measured run: fio plus layered counters on one clock, and truth checks.

The sampler runs on the host under test (so one clock serves fio, the pool,
the devices and the CPU), is shipped as a file and stopped by the end of its input,
a pipe from this process (so it stops by itself if this process dies mid-run; pkill on
its unique path if it does not); fio runs through
a shipped wrapper that has it snapshot as fio exits (docs/methods.md §7.1).
Everything fetched is kept as it came (raw), then summarised.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from zbench_lib.measure.client_clock import DATE, ClockReading
from zbench_lib.measure.client_rows import CLIENTS_DIR, storage_window
from zbench_lib.measure.counters import (MARK, sampler_argv, sampler_script, snap_after_argv, snap_after_script,
                                         snap_after_t1)
from zbench_lib.measure.fio import build_job, collect, execute_fio, fetch_tree
from zbench_lib.measure.fio_clients import STAMP_INTERVAL_MS, ClientLoad, run_clients
from zbench_lib.measure.fio_parse import parse_fio_json
from zbench_lib.measure import workloads
from zbench_lib.hosts.base import Host
from zbench_lib.measure.host_load import Sampler as HostLoadSampler
from zbench_lib.measure.rows import derive_rows
from zbench_lib.measure.run_context import RunContext
from zbench_lib.measure.window import run_window
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.zfs import readback


@dataclass
class RunResult:
    raw_dir: Path
    window: tuple              # (t_start, t_end) epoch seconds on the host's clock
    context: RunContext = field(default_factory=RunContext)
    _derived: tuple | None = field(default=None, repr=False)

    # Derived on first use: a sweep derives its rows from the raw record once the run is
    # complete (rows.parse_results), and parsing twice cost each run about 0.4 s.
    @property
    def rows(self) -> list:
        """Tidy rows (one per direction) with counters and flags."""
        return self._derive()[0]

    @property
    def checks(self) -> dict:
        """Truth checks with the numbers behind them."""
        return self._derive()[1]

    def _derive(self) -> tuple:
        if self._derived is None:
            self._derived = derive_rows(self.raw_dir)
        return self._derived


def kernel_names(host: Host, devices: list[str]) -> list[str]:
    """/dev/disk/by-id/... -> vdb etc. (files have no kernel name and are skipped)."""
    if not devices:
        return []
    return _kernel_names(host.run(["readlink", "-f", *devices]).stdout)   # one call for all of them


def _kernel_names(readlink_stdout: str) -> list[str]:
    return [r.rsplit("/", 1)[1] for r in readlink_stdout.split("\n") if r.startswith("/dev/")]


def _host_time(host: Host) -> float:
    return float(host.run(["date", "+%s.%N"]).stdout)


def measure(host: Host, *, pool: str | None, target_path: str | list[str], devices: list[str], workload: str,  # noqa: PLR0913 (keyword-only: a run's description)
            overrides: dict, remote_dir: str, raw_dir: Path, context: RunContext,
            target_name: str | None = None, sample_interval_s: float = 1.0) -> RunResult:
    """Run `workload` on `target_path` with counters; keep raw files in `raw_dir`.

    `target_path` may list several block devices (raw disks, fio's I/O spread over them);
    with `pool` None (raw disks) there is no zpool layer and their presence after fio is read
    instead of a pool's health; without `target_name` no ZFS property is read back.

    With `context.qemu_pid` (a lab's QEMU on this machine) the controller's own load is
    sampled around fio too, into raw_dir/controller.json (the host_contention check).
    """
    raw_dir = Path(raw_dir)
    if (raw_dir / "fio" / "fio.json").exists():
        raise ConfigError(f"{raw_dir} already holds a run; raw results are never overwritten")
    params = dict(overrides)
    params.setdefault("filename", target_path)
    job = build_job(workload, **params)
    ramp = float(params.get("ramp_time_s", build_defaults(workload).get("ramp_time_s", 0)) or 0)
    counters = f"{remote_dir}/counters"
    # The run's directories, scripts and job file in one command (each of a mkdir and three copies
    # was a round trip, 0.3-0.6 s to a lab). The wrapper lies beside the sampler, not in fio's
    # directory (whose files are fetched as the raw record).
    host.write_files(remote_dir, {"sampler.sh": sampler_script(), "snap_after.sh": snap_after_script(),
                                  "fio/job.fio": job}, dirs=("counters",))
    # Tied to this process by its input: if this process is killed mid-run, the sampler stops by itself.
    sampler = host.popen(sampler_argv(f"{remote_dir}/sampler.sh", counters, sample_interval_s, pool or "", tied=True),
                         stdin=subprocess.PIPE)
    load = HostLoadSampler(context.qemu_pid, sample_interval_s) if context.qemu_pid else None
    try:
        # Every layer needs a sample before the window opens. A ramp of three intervals gives
        # the sampler that time while fio starts; without one, wait for the first samples.
        if ramp < 3 * sample_interval_s:
            _wait_for_samples_past(host, counters, 0, pool, sample_interval_s)
        t0 = _host_time(host)
        if load:
            load.start()
        try:
            # fio's exit triggers a snapshot on the host: the sample interval straddling the
            # window's end is then milliseconds long, not up to a stretched sampler loop's
            # seconds, over which its bytes would be spread as if read after the end (issue 34).
            proc = execute_fio(host, job, f"{remote_dir}/fio",
                               wrapper=snap_after_argv(f"{remote_dir}/snap_after.sh", counters), shipped=True)
        finally:
            if load:
                raw_dir.mkdir(parents=True, exist_ok=True)
                load.write(raw_dir / "controller.json")
        # the host's clock after fio exited, as the wrapper read it (no round trip of its own);
        # a separate read only if its line is missing
        t1, fio_stdout = snap_after_t1(proc.result.stdout)
        proc.result = replace(proc.result, stdout=fio_stdout)
        if t1 is None:
            t1 = _host_time(host)
        # a disk lost mid-run shows here (device_lost): in the pool's health, or (raw disks, no pool) in theirs
        health = _pool_health(host, pool) if pool else _devices_present(host, devices)
        # and one after it ends: a window whose last second no layer sampled would be under-counted
        # (t1, taken after fio exited, is past fio's own end stamp: no need to read it first)
        _wait_for_samples_past(host, counters, t1, pool, sample_interval_s)
    finally:
        _stop_sampler(host, remote_dir, sampler)
    # fio's outputs and the counters in one archive and one copy, after the sampler stopped
    fetch_tree(host, remote_dir, ["fio", "counters"], raw_dir, exclude=("fio/job.fio",))
    fio_run = collect(proc, raw_dir / "fio", fetched=True)
    rows = parse_fio_json(fio_run.data)
    # A job that writes is counted from fio's start, not back from its exit stamp: closing a
    # written zvol can keep fio alive long after its last I/O (measure/window.py).
    t_start, t_end = run_window(t0, fio_run.data, rows, ramp, fallback=(t0, t1))
    context = context.with_recorded(**health)
    kernel_devices = None
    if target_name:
        # What the data just written compresses to is what the check must judge.
        ratio, block, kernel_devices = _readback_after(host, target_name, devices)
        context = context.with_recorded(compressratio=ratio)
        if context.block_bytes is None:
            context = context.with_recorded(block_bytes=block)
    if kernel_devices is None:
        kernel_devices = kernel_names(host, devices)
    # run.json's spelling of no pool is "" (the shipped raw records and the sampler's argument)
    record = {"t0": t0, "t1": t1, "t_start": t_start, "t_end": t_end, "ramp_s": ramp,
              "pool": pool or "", "devices": devices, "kernel_devices": kernel_devices,
              "workload": workload, "context": context.to_record()}
    (raw_dir / "run.json").write_text(json.dumps(record, indent=1, default=str))
    return RunResult(raw_dir, (t_start, t_end), context)


def measure_clients(host: Host, load: ClientLoad, count: int, *, pool: str | None, devices: list[str],  # noqa: PLR0913 (keyword-only: a run's description, as measure's)
                    workload: str, overrides: dict, remote_dir: str, raw_dir: Path, context: RunContext,
                    target_name: str | None = None, sample_interval_s: float = 1.0) -> RunResult:
    """`workload` run by the first `count` clients of `load` (fio's client/server mode, one job and file
    per client), with the counters sampled on `host`, the storage node, on its clock; raw files in `raw_dir`.

    The controller's record goes to raw_dir/clients/ (`fio_clients.run_clients`), the clients' clocks
    read against `host`'s at the start and the end (`client_clock`) beside it, and the window is the
    clients' shared one placed on `host`'s clock (`client_rows.storage_window`).
    """
    raw_dir = Path(raw_dir)
    if (raw_dir / CLIENTS_DIR / "fio.json").exists():
        raise ConfigError(f"{raw_dir} already holds a run; raw results are never overwritten")
    labels = load.labels(count)
    jobs = {label: build_job(workload, **{**overrides, "filename": load.files[label], **load.regions.get(label, {})})
            for label in labels}
    ramp = float(overrides.get("ramp_time_s", build_defaults(workload).get("ramp_time_s", 0)) or 0)
    counters = f"{remote_dir}/counters"
    host.write_files(remote_dir, {"sampler.sh": sampler_script()}, dirs=("counters",))
    sampler = host.popen(sampler_argv(f"{remote_dir}/sampler.sh", counters, sample_interval_s, pool or "", tied=True),
                         stdin=subprocess.PIPE)
    clocks: dict[str, list] = {}
    try:
        _wait_for_samples_past(host, counters, 0, pool, sample_interval_s)
        t0, t1 = _clients_load(host, load, jobs, f"{load.controller_dir}/{Path(remote_dir).name}", raw_dir, clocks)
        health = _pool_health(host, pool) if pool else _devices_present(host, devices)
        _wait_for_samples_past(host, counters, t1, pool, sample_interval_s)
    finally:
        _stop_sampler(host, remote_dir, sampler)
        _write_clocks(raw_dir, clocks)
    fetch_tree(host, remote_dir, ["counters"], raw_dir, exclude=())
    record = {"t0": t0, "t1": t1, "t_start": t0 + ramp, "t_end": t1, "ramp_s": ramp, "pool": pool or "",
              "devices": devices, "workload": workload,
              "clients": {"endpoints": load.endpoints(labels), "interval_ms": STAMP_INTERVAL_MS}}
    (raw_dir / "run.json").write_text(json.dumps(record, indent=1, default=str))     # the window reads it
    t_start, t_end = storage_window(raw_dir, fallback=(t0 + ramp, t1))
    context = context.with_recorded(**health)
    if target_name:
        ratio, block, _ = _readback_after(host, target_name, [])
        context = context.with_recorded(compressratio=ratio, **({} if context.block_bytes else {"block_bytes": block}))
    record.update(t_start=t_start, t_end=t_end, kernel_devices=kernel_names(host, devices),
                  context=context.to_record())
    (raw_dir / "run.json").write_text(json.dumps(record, indent=1, default=str))
    return RunResult(raw_dir, (t_start, t_end), context)


def _clients_load(host: Host, load: ClientLoad, jobs: dict[str, str], controller_dir: str,
                  raw_dir: Path, clocks: dict) -> tuple[float, float]:
    """The clients' clocks, the load (`run_clients`) and the clocks again: (t0, t1) on `host`'s clock.

    The controller's own load is not sampled (no controller.json: host_contention not judged): the
    client labs' QEMUs are busy by design beside the storage lab's, and the check would count them
    as contention."""
    clients = load.hosts(list(jobs))
    clocks["start"] = read_clocks(host, clients)
    t0 = _host_time(host)
    run_clients(load.controller, load.servers, jobs, controller_dir, raw_dir / CLIENTS_DIR)
    t1 = _host_time(host)
    clocks["end"] = read_clocks(host, clients)
    return t0, t1


def read_clocks(storage: Host, clients: dict[str, Host]) -> list[ClockReading]:
    """Each client's clock between two readings of the storage node's, one client after another
    (measure/client_clock.py says why the midpoint)."""
    out = []
    for label, host in clients.items():
        before = float(storage.run(DATE, timeout=60).stdout)
        mid = float(host.run(DATE, timeout=60).stdout)
        out.append(ClockReading(label, before, mid, float(storage.run(DATE, timeout=60).stdout)))
    return out


def _write_clocks(raw_dir: Path, clocks: dict) -> None:
    """The clock readings as read (raw): what places the clients' window on the storage node's clock."""
    if clocks:
        (raw_dir / CLIENTS_DIR).mkdir(parents=True, exist_ok=True)
        (raw_dir / CLIENTS_DIR / "clocks.json").write_text(json.dumps(
            {k: [r.to_record() for r in v] for k, v in clocks.items()}, indent=1))


# How long a tied sampler has to end once its input has (it stops as on TERM, within a second).
INPUT_STOP_S = 5.0
# Hosts where one outlived that: there, every later sampler is TERMed by pkill first, as before.
_PKILL_FIRST: set[str] = set()


def _stop_sampler(host: Host, remote_dir: str, sampler) -> None:
    """End the sampler's input and see it end: tied, it stops as on TERM, and the pkill on its unique
    path that did this before cost every run a round trip. The pkill is still sent if the sampler has
    not ended within INPUT_STOP_S (and from then on first, on that host), if it had no piped input, or
    if its local end was gone already (its host side may not know yet). Then wait, or kill."""
    pkill = ["pkill", "-TERM", "-f", f"{remote_dir}/sampler.sh"]
    first = host.name in _PKILL_FIRST or sampler.stdin is None or sampler.poll() is not None
    if first:
        host.run(pkill, check=False)
    if sampler.stdin:
        sampler.stdin.close()
    if not first:
        try:
            sampler.wait(INPUT_STOP_S)
            return
        except subprocess.TimeoutExpired:
            _PKILL_FIRST.add(host.name)
            host.run(pkill, check=False)
    try:
        sampler.wait(30)
    except Exception:
        sampler.kill()


_SNAPSHOT_STAMP = re.compile(rf"^{re.escape(MARK)} (\S+)", re.M)          # the sampler's snapshot blocks
_ZPOOL_STAMP = re.compile(r"^(\d+(?:\.\d+)?)$", re.M)                 # -T u, re-stamped by the sampler


def last_stamps(tail_output: str) -> dict[str, float]:
    """The last sample time of each file in the output of `tail -c N f1 f2 ...` (headers '==> f <==')."""
    out = {}
    chunks = re.split(r"^==> (.+) <==$", tail_output, flags=re.M)
    for name, body in zip(chunks[1::2], chunks[2::2]):
        base = name.rsplit("/", 1)[-1]
        stamps = (_ZPOOL_STAMP if base == "zpool_iostat.txt" else _SNAPSHOT_STAMP).findall(body)
        if stamps:
            out[base] = float(stamps[-1])
    return out


def _wait_for_samples_past(host: Host, counters_dir: str, t: float, pool: str | None, interval_s: float) -> None:
    """Wait until every layer the sampler writes has a sample stamped after `t` (host clock).

    A fixed sleep was not enough on a busy machine: the lab's zpool iostat printed late, the
    sampler was stopped first and the window's last second of pool I/O was never counted.
    Gives up after 10 intervals (+10 s); the summary then shows what is missing.
    """
    files = ["diskstats.txt", "stat.txt", "arcstats.txt"] + (["zpool_iostat.txt"] if pool else [])
    deadline = time.monotonic() + 10 * interval_s + 10
    while time.monotonic() < deadline:
        res = host.run(["tail", "-c", "32768", *[f"{counters_dir}/{f}" for f in files]], check=False)
        stamps = last_stamps(res.stdout)
        # arcstats is written only where the host has it (the sampler skips what it cannot read).
        needed = [f for f in files if f != "arcstats.txt" or f"{counters_dir}/{f}" not in res.stderr]
        if all(stamps.get(f, -1) > t for f in needed):
            return
        time.sleep(interval_s / 4)


def _pool_health(host: Host, pool: str) -> dict:
    try:
        return {"pool_health_after": readback.pool_health(host, pool)}
    except ZbenchError as exc:                   # e.g. a pool suspended past answering
        return {"pool_health_error": " ".join(str(exc).split())[:300]}


def _devices_present(host: Host, devices: list[str]) -> dict:
    """Which of the devices are still block devices (stat follows the by-id links; a gone
    disk's link is gone or dangling, and stat says nothing of it on stdout). The raw mode in
    hex, not %F's words, which the host's locale translates."""
    res = host.run(["stat", "-L", "-c", "%f %n", *devices], check=False, timeout=60)
    modes = [line.split(" ", 1) for line in res.stdout.splitlines() if " " in line]
    present = {name for mode, name in modes
               if re.fullmatch(r"[0-9a-f]+", mode) and int(mode, 16) & 0o170000 == 0o060000}
    return {"raw_devices_after": {"devices": list(devices), "missing": [d for d in devices if d not in present]}}


_RATIO_BLOCK = ["zfs", "get", "-Hp", "-o", "property,value", "compressratio,volblocksize,recordsize"]
_READLINK_MARK = "zbench-readlink"
# Both read-backs at the end of a run in one command, each with the arguments it has alone.
_READBACK_AFTER = (f'{" ".join(_RATIO_BLOCK)} "$1" || exit; shift; echo {_READLINK_MARK}; '
                   'exec readlink -f "$@"')


def _readback_after(host: Host, target_name: str, devices: list[str]) -> tuple[float, int | None, list[str] | None]:
    """`_ratio_and_block` and, with `devices`, their `kernel_names` (None without), in one command
    (a round trip less per run). If that command fails, each is read alone, as they were, to fail
    (or not) as it did."""
    if devices:
        res = host.run(["sh", "-c", _READBACK_AFTER, "zbench-readback", target_name, *devices], check=False)
        props_text, mark, reals = res.stdout.partition(f"{_READLINK_MARK}\n")
        if res.ok and mark:
            return (*_parse_ratio_and_block(props_text), _kernel_names(reals))
    return (*_ratio_and_block(host, target_name), kernel_names(host, devices) if devices else None)


def _ratio_and_block(host: Host, target_name: str) -> tuple[float, int | None]:
    """compressratio, and volblocksize of a zvol or recordsize of a dataset (read_amplification's block)."""
    return _parse_ratio_and_block(host.run([*_RATIO_BLOCK, target_name]).stdout)


def _parse_ratio_and_block(text: str) -> tuple[float, int | None]:
    props = dict(line.split("\t", 1) for line in text.strip().splitlines())
    block = next((int(props[k]) for k in ("volblocksize", "recordsize") if props.get(k, "").isdigit()), None)
    return float(props["compressratio"].rstrip("x")), block


def build_defaults(workload: str) -> dict:
    w = workloads.find(workload)
    return dict(w.defaults) if w else {}
