"""A run's tidy rows and truth checks, derived from its raw files only.

Pure: reads an attempt directory, never a host. The executor calls it right after
a run, and the store calls it again to rebuild results.parquet from raw/ (resume,
`zbench verify`), so both paths give the same rows by construction.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from zbench_lib.measure.client_rows import client_fio_rows, is_clients_run, storage_window
from zbench_lib.measure.counters import parse_sampler_dir
from zbench_lib.measure.device_health import per_device_service
from zbench_lib.measure.fio_hist import judge_run_tails
from zbench_lib.measure.fio_parse import load_fio_json, parse_fio_json, parse_fio_logs_dir
from zbench_lib.measure.host_load import summarize as summarize_host_load
from zbench_lib.measure.imported_rows import imported_rows, is_imported_run
from zbench_lib.measure.run_context import RunContext, RunFacts
from zbench_lib.measure.run_summary import fio_timeseries, iops_series, summarize_counters
from zbench_lib.measure.truth import flag_columns, truth_checks
from zbench_lib.measure import workloads
from zbench_lib.measure.until_steady import window_columns
from zbench_lib.measure.window import exit_lag, run_window
from zbench_lib.zfs.l2arc_warmup import result_columns as l2arc_warmup_columns


def derive_rows(raw_dir: Path) -> tuple[list, dict]:
    """Tidy rows and truth checks of one run, rebuilt from its raw files only."""
    raw_dir = Path(raw_dir)
    rec, rows = run_record(raw_dir)
    sampler = parse_sampler_dir(raw_dir / "counters")
    counters = summarize_counters(sampler, rec["t_start"], rec["t_end"], rec["kernel_devices"],
                                  rec["pool"])
    series = None          # no per-second logs: the steady-state check falls back to fio's own
    logs = parse_fio_logs_dir(raw_dir / "fio")
    if logs is not None and len(logs):
        fts = fio_timeseries(logs, rec["t_start"])
        series = iops_series(fts, rec["t_start"], rec["t_end"])
    ctx = RunContext.from_record(rec["context"])
    data_devs = rec["kernel_devices"][:ctx.data_device_count or len(rec["kernel_devices"])]
    controller = raw_dir / "controller.json"   # the controller's load around a lab run
    facts = RunFacts.judging(
        ctx, iops_series=series, window_s=rec["t_end"] - rec["t_start"],
        # runs recorded before the context carried the block have it in meta.json
        block_bytes=_block_bytes(raw_dir) if ctx.block_bytes is None else ctx.block_bytes,
        dev_service_each=per_device_service(sampler.get("disk"), data_devs, rec["t_start"], rec["t_end"]),
        **_layout_facts(raw_dir),
        **summarize_host_load(json.loads(controller.read_text()) if controller.exists() else None))
    checks = truth_checks(rows, counters, facts)
    flags = flag_columns(checks, fault_study=bool(facts.fault_study))
    scalars = {k: v for k, v in counters.items() if not isinstance(v, (list, dict))}
    scalars["fio_exit_lag_s"] = rec["fio_exit_lag_s"]
    scalars["compressratio_after_run"] = facts.compressratio     # what compressible_data judged
    return [{**r, **scalars, **flags, "physical_bw_bytes_s": physical_bw(r, counters)} for r in rows], checks


def physical_bw(row: dict, counters: dict) -> float:
    """Bytes per second the pool's disks moved in the row's direction over the run's window: the
    physical side of fio's `bw_bytes_s` (logical: what the application saw). Compression, parity
    and copies set the difference; NaN without device counters."""
    moved = counters.get(f"dev_{row.get('direction')}_bytes")
    window = counters.get("window_s")
    try:
        return float(moved) / float(window) if window else math.nan
    except (TypeError, ValueError):
        return math.nan


def run_record(raw_dir: Path) -> tuple[dict, list]:
    """run.json with its measurement window by the rule of measure/window.py, and fio's rows.
    Recomputed from the raw files, so write runs recorded with the window counted back from
    fio's exit stamp (before 2026-11-24 evening) rebuild right too. A percentile the run's
    I/O count cannot support is blanked, with the reason in `tail_not_judged` (fio_hist)."""
    raw_dir = Path(raw_dir)
    rec = json.loads((raw_dir / "run.json").read_text())
    if is_clients_run(raw_dir):
        return _clients_record(raw_dir, rec)
    fio_data = load_fio_json((raw_dir / "fio" / "fio.json").read_text())
    rows = parse_fio_json(fio_data)
    t_start, t_end = run_window(rec.get("t0"), fio_data, rows, rec.get("ramp_s") or 0,
                                fallback=(rec["t_start"], rec["t_end"]))
    rows = judge_run_tails(rows, fio_data)
    return {**rec, "t_start": t_start, "t_end": t_end, "fio_exit_lag_s": exit_lag(fio_data, t_end)}, rows


def _clients_record(raw_dir: Path, rec: dict) -> tuple[dict, list]:
    """`run_record` of a run whose load came from client VMs: the aggregate rows, and the clients' shared
    window on the storage node's clock (measure/client_rows.py); fio ran on no host whose exit lags."""
    t_start, t_end = storage_window(raw_dir, fallback=(rec["t_start"], rec["t_end"]))
    rows = judge_run_tails(client_fio_rows(raw_dir))
    return {**rec, "t_start": t_start, "t_end": t_end, "fio_exit_lag_s": None}, rows


def _block_bytes(raw_dir: Path):
    """The target's volblocksize / recordsize from meta.json, for runs recorded before the
    context carried it (meta.json is raw too: the store writes it when the run completes)."""
    meta = raw_dir / "meta.json"
    props = (json.loads(meta.read_text()).get("target_properties") or {}) if meta.exists() else {}
    key = "volblocksize" if props.get("type") == "volume" else "recordsize"
    try:
        return int(props[key])
    except (KeyError, TypeError, ValueError):
        return None


def _layout_facts(raw_dir: Path) -> dict:
    """Layout family, vdev width and ashift of the run's pool, from meta.json's factors."""
    meta = raw_dir / "meta.json"
    f = (json.loads(meta.read_text()).get("factors") or {}) if meta.exists() else {}
    return {k: f[src] for k, src in (("layout", "layout"), ("layout_width", "width"), ("ashift", "ashift"))
            if f.get(src) is not None}


def parse_results(attempt_dir: Path, meta: dict) -> list[dict]:
    """Rows of one run, derived from its raw files (used by Store.rebuild_results); an imported run's
    from its copy of the fio file (`imported_rows`: no counters, no run.json)."""
    if is_imported_run(attempt_dir):
        return imported_rows(attempt_dir, meta)
    rows, _ = derive_rows(attempt_dir)
    ctx = RunContext.from_record(json.loads((Path(attempt_dir) / "run.json").read_text()).get("context", {}))
    extra = {"sweep_id": meta.get("sweep"), "config_id": meta.get("cell_id"),
             "disk_model": ctx.disk_model, "disk_model_iops": ctx.disk_model_iops,
             "disk_model_bw": ctx.disk_model_bw, "cache_declared": ctx.cache,
             "pool_id": meta.get("pool_id"), "pool_replicate": meta.get("pool_replicate", 1),
             **(ctx.settings_readback or {}),     # module parameters and disk models as read back
             **l2arc_warmup_columns(ctx.l2arc_warmup),   # only after a warm-up (a cache device)
             **({"host": meta["host"]} if meta.get("host") else {})}   # a fleet's: the host that ran it
    for k in ("used_bytes", "logicalused_bytes", "referenced_bytes", "compressratio",
              "pool_capacity_pct", "pool_fragmentation_pct"):
        extra[k] = ctx.space.get(k)
    # A run measured until steady: how many windows, which one the figures come from, the first's
    # figures (only where its workload declared until_steady, so other sweeps' rows are as they were).
    return window_columns(attempt_dir, meta, [{**r, **extra, **load_columns(r, meta)} for r in rows])


def load_columns(row: dict, meta: dict) -> dict:
    """An open-loop run's offer beside what it achieved (only for runs with a load, so every other
    sweep's rows are as they were; a saturation row of a load sweep has its `load` column only).

    `offered_iops` is the row's direction's share of the offered rate (a mixed job's by its read
    share), `load_achieved` the row's IOPS over it: a run that could not sustain its rate is kept and
    described by it (below about 0.95 its latencies are at a lower load than offered: methods §21),
    `load_fraction` the whole offer over the cell's saturation probe (None without one)."""
    ol = meta.get("open_loop")
    if not ol:
        return {}
    offered = ol["offered_iops"] * _direction_share(row.get("direction"), meta)
    probe = ol.get("probe_iops")
    return {"offered_iops": offered, "load_achieved": row["iops"] / offered if offered else None,
            "probe_iops": probe, "load_fraction": ol["offered_iops"] / probe if probe else None,
            "open_loop_iodepth": ol.get("iodepth")}


def _direction_share(direction, meta: dict) -> float:
    """The share of a run's I/O in `direction`: a mixed job's read share (its rwmixread), else all of it."""
    w = workloads.find((meta.get("factors") or {}).get("template"))
    if w is None or not w.rwmix:
        return 1.0
    mix = (meta.get("fio") or {}).get("rwmixread", w.defaults["rwmixread"]) / 100
    return mix if direction == "read" else 1 - mix
