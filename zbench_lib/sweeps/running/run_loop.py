"""A target's runs, one by one, whatever its surface (the executor's loop).

``measured_run`` begins an attempt, runs fio with its counters (``measure.runner.measure``),
completes the attempt with its meta.json, derives the run's rows from raw exactly as a
resume would, and records the verdict (a workload declared ``until_steady`` measures windows
until one is steady, ``measure.until_steady``, each extension an event); ``run_target`` runs a
target's queue to its end, the repetition rule queueing more runs as it decides.
"""

from __future__ import annotations

import threading

from tqdm.auto import tqdm

from zbench_lib.core.crash import crash_point
from zbench_lib.core.events import Event
from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.measure import workloads
from zbench_lib.measure.rows import parse_results
from zbench_lib.measure.runner import measure, measure_clients
from zbench_lib.measure.until_steady import UntilSteady, measure_windows
from zbench_lib.sweeps.planning.blocks import attempt_seed
from zbench_lib.sweeps.planning.plan import run_seconds
from zbench_lib.sweeps.planning.records import Cell
from zbench_lib.sweeps.running.open_loop import OpenLoop, offered_load
from zbench_lib.sweeps.running.surface import FioTarget, Site


def model_context(model: str | None) -> dict:
    """The data disks' model as the truth checks read it (per-disk limits, None = unthrottled)."""
    if model is None:
        return {}
    m = parse_model(model)
    return dict(disk_model_iops=m.read_iops_limit(), disk_model_bw=m.bw or m.bw_read, disk_model=m.name)


class RunBar:
    """A per-run bar that advances with the clock while fio runs."""

    def __init__(self, seconds: float, desc: str, enabled: bool):
        self.bar = tqdm(total=round(seconds), desc=desc, unit="s", leave=False, disable=not enabled,
                        position=1)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._tick, daemon=True)
        self._t.start()

    def _tick(self):
        while not self._stop.wait(1):
            if self.bar.n < self.bar.total:
                self.bar.update(1)

    def close(self):
        self._stop.set()
        self._t.join(2)
        self.bar.close()


def flush(store, sched) -> None:
    """Record what the schedule decided (Stein's numbers, runs added, cells done or given up)."""
    while sched.events:
        name, fields = sched.events.pop(0)
        store.record(name, **fields)


def run_target(store, sched, target_id: str, run_one, bar=None) -> float:
    """Run a target's queue to its end: each run, then the rule on its cell (which may queue more).

    ``run_one(run) -> (rows, seconds measured)`` does the run and completes its attempt.
    """
    measure_s = 0.0
    while (run := sched.next_run(target_id)) is not None:
        rows, secs = run_one(run)
        measure_s += secs
        sched.complete(run, rows)
        flush(store, sched)
        if bar is not None:
            bar.total = sched.done_count + sched.remaining()
            bar.update(1)
    return measure_s


def measured_run(site: Site, fio_target: FioTarget, plan, run) -> tuple[list, float]:
    """One attempt of `run` on what a surface prepared (``surface.FioTarget``) on `site`: (rows, seconds measured).

    With no pool (raw disks) there is no zpool iostat or pool health, and with no target name no
    ZFS property to read back; `fio_target.meta` adds what meta.json says of the pool and target.
    A workload declared ``until_steady`` measures further windows while the steady-state test says
    not steady (``measure.until_steady``): the attempt's result is its last window."""
    cell = plan.cell(run.cell_id)
    store = site.store
    attempt = store.begin_attempt(run.run_id)
    fio = _job_params(cell, fio_target, _randseed(plan.spec, cell, run.run_id, _number(attempt)))
    # a load: open loop at its rate (a fraction's probe measured first, once per cell); None: saturation
    loaded = offered_load(site, cell, run, attempt, {**fio, "filename": _filename(fio_target)})
    window = _window_measurer(site, fio_target, cell, run, attempt, fio, loaded)
    until = UntilSteady.from_record(cell.until_steady)
    windows = None if until is None else measure_windows(window, attempt, until, _extension_recorder(
        store, run.run_id, attempt, until))
    res = window(1) if windows is None else windows.result
    crash_point("run")
    full = plan.run_meta(run)
    full.update(fio_target.meta, window=list(res.window))
    if windows is not None:
        full["until_steady"] = windows.to_record()      # every window's verdict: why the run went on
    if loaded is not None:
        full["open_loop"] = loaded.to_record()          # what was offered: the rows' offered_iops
    store.complete_attempt(run.run_id, attempt, full)
    # The rule sees the run as the raw record gives it, exactly as a resume would.
    rows = parse_results(attempt, {**full, "run_id": run.run_id})
    # The event names each flag raised by its kind: an invalidating one excludes the run, a describing one does not.
    store.record(Event.RUN_JUDGED, run_id=run.run_id, attempt=_number(attempt),
                 invalidating_flags=_names(rows, "truth_flags"), described_flags=_names(rows, "described_flags"))
    return rows, (res.window[1] - res.window[0]) if windows is None else windows.seconds


def _randseed(spec, cell: Cell, run_id: str, attempt: int) -> dict:
    """The attempt's own randseed (`blocks.attempt_seed`), or nothing: the job keeps the workload's seed."""
    seed = attempt_seed(spec, cell, run_id, attempt)
    return {} if seed is None else {"randseed": seed}


def _job_params(cell: Cell, fio_target: FioTarget, seed: dict) -> dict:
    """A run's fio parameters: the cell's, its seed, its depth and jobs, and the size of what it runs on."""
    fio = {**cell.fio, **seed}
    for k in ("iodepth", "numjobs"):
        if k in cell.factors:
            fio.setdefault(k, cell.factors[k])
    if fio_target.size_bytes:
        fio.setdefault("size", fio_target.size_bytes)     # a file, or the raw disks' regions: the size prefilled
    return fio


def _filename(fio_target: FioTarget):
    return list(fio_target.path) if isinstance(fio_target.path, tuple) else fio_target.path


def _window_measurer(site: Site, fio_target: FioTarget, cell: Cell, run, attempt, fio: dict,
                     loaded: OpenLoop | None):
    """`measure_window(k)`: fio and its counters once, into the attempt's top level (window k of a run),
    open loop at `loaded`'s rate if it has one."""
    if loaded is not None:
        fio = {**fio, "rate_iops": loaded.offered_iops}   # build_job's open loop (measure/fio.py)
    context = fio_target.context.with_recorded(**declared_data(cell.template, fio))

    def measure_window(k: int):
        # each window its own host directory: fio's outputs of one window are never fetched with another's
        remote = f"{site.work_dir}/{run.run_id}-{attempt.name}" + (f"-w{k}" if k > 1 else "")
        bar = RunBar(run_seconds(fio) + 5, f"{run.run_id} {cell.workload}" + (f" w{k}" if k > 1 else ""),
                     site.progress)
        try:
            if fio_target.clients is not None:      # the load from the cell's client VMs (client_surface)
                return measure_clients(site.host, fio_target.clients, cell.factors["clients"], pool=site.pool_name,
                                       devices=list(site.devices), workload=cell.template,
                                       overrides=fio,
                                       remote_dir=remote, raw_dir=attempt, context=context,
                                       target_name=fio_target.target_name)
            return measure(site.host, pool=site.pool_name, target_path=_filename(fio_target),
                           devices=list(site.devices), workload=cell.template, overrides=fio, remote_dir=remote,
                           raw_dir=attempt, context=context, target_name=fio_target.target_name)
        finally:
            bar.close()
    return measure_window


def _extension_recorder(store, run_id: str, attempt, until: UntilSteady):
    """`on_extend` for `measure_windows`: each window followed by another is an event, so the record
    says why the run went on, window by window."""
    def record(verdict) -> None:
        store.record(Event.RUN_EXTENDED, run_id=run_id, attempt=_number(attempt), max_windows=until.max_windows,
                     **verdict.to_record())
    return record


def _number(attempt) -> int:
    """An attempt directory's number: attempt-3 -> 3."""
    return int(attempt.name.rsplit("-", 1)[-1])


def declared_data(template: str, fio: dict) -> dict:
    """The data the run's job writes, as the spec declared it: what the compressible_data check
    judges the target's compressratio against (measure/compressibility.py). The old key
    `incompressible_intended` stays beside it for readers of runs recorded before (always True)."""
    pct = fio.get("compressible_percent", workloads.get(template).compressible_percent)
    return {"compressible_percent_declared": pct, "incompressible_intended": pct == 0}


def _names(rows, column: str) -> list[str]:
    """The flag names a comma-separated column holds in any of a run's rows."""
    return sorted({f for r in rows for f in str(r.get(column) or "").split(",") if f})
