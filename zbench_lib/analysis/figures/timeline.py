"""One run, layer by layer: what fio asked for, what the pool did, what the disks saw.

    has_run(sweep_dir, run_id)       whether its raw files are there with layers to draw (synthetic sweeps
                                     and imported runs, fio's JSON alone: no)
    run_files(sweep_dir, run_id)     context manager: the run's COMPLETE attempt directory,
                                     from raw/ or, for a packed sweep, from raw.tar.xz
    layer_series(attempt_dir)        tidy (t_s, layer, metric, value): operations and bytes
                                     per second for fio, the pool and its disks, t_s from
                                     the start of the measurement window
    typical_run(df, metric)          the run closest to the median of the largest configuration ("" when no
                                     run has layers: an imported sweep)

A gap between the layers is the story of a run: devices busier than fio means read-modify-
write or parity; a pool quieter than fio means the ARC answered.
"""

from __future__ import annotations

import contextlib
import tarfile
import tempfile
from pathlib import Path

import pandas as pd

from zbench_lib.analysis.data.metrics import metric_of
from zbench_lib.measure.counters import parse_sampler_dir
from zbench_lib.core.errors import ConfigError
from zbench_lib.measure.fio_parse import parse_fio_logs_dir
from zbench_lib.measure.imported_rows import IMPORT_DIR, is_imported_run
from zbench_lib.measure.rows import run_record
from zbench_lib.sweeps.store.publish import RAW_ARCHIVE
from zbench_lib.measure.run_summary import fio_timeseries, whole_disks


def _complete_attempt(run_dir: Path) -> Path:
    done = sorted(a for a in run_dir.glob("attempt-*") if (a / "COMPLETE").exists())
    if not done:
        raise ConfigError(f"run {run_dir.name} has no COMPLETE attempt")
    return done[-1]


def has_run(sweep_dir, run_id: str) -> bool:
    """Whether the raw files of `run_id` are here (raw/ or raw.tar.xz) with layers to draw; synthetic sweeps
    have none, and an imported run's are fio's JSON alone (no counters, no per-second logs)."""
    sweep_dir = Path(sweep_dir)
    if (sweep_dir / "raw" / run_id).is_dir():
        return not any(is_imported_run(a) for a in (sweep_dir / "raw" / run_id).glob("attempt-*"))
    if not (sweep_dir / RAW_ARCHIVE).is_file():
        return False
    with tarfile.open(sweep_dir / RAW_ARCHIVE) as tf:
        names = [n for n in tf.getnames() if n.startswith(f"raw/{run_id}/")]
    return bool(names) and not any(f"/{IMPORT_DIR}/" in n for n in names)


@contextlib.contextmanager
def run_files(sweep_dir, run_id: str):
    sweep_dir = Path(sweep_dir)
    if (sweep_dir / "raw" / run_id).is_dir():
        yield _complete_attempt(sweep_dir / "raw" / run_id)
        return
    archive = sweep_dir / RAW_ARCHIVE
    if not archive.is_file():
        raise ConfigError(f"{sweep_dir} has neither raw/{run_id} nor {RAW_ARCHIVE}")
    with tempfile.TemporaryDirectory(prefix="zbench-run-") as tmp, tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.name.startswith(f"raw/{run_id}/")]
        if not members:
            raise ConfigError(f"run {run_id!r} is not in {archive}")
        tf.extractall(tmp, members=members, filter="data")
        yield _complete_attempt(Path(tmp) / "raw" / run_id)


def layer_series(attempt_dir) -> pd.DataFrame:
    """Operations and bytes per second at the fio, pool and device layers of one run."""
    attempt_dir = Path(attempt_dir)
    rec, _ = run_record(attempt_dir)       # the window as the results count it
    sampler = parse_sampler_dir(attempt_dir / "counters")
    parts = []
    fio = fio_timeseries(parse_fio_logs_dir(attempt_dir / "fio"), rec["t_start"])
    if not fio.empty:     # fio's rows are per direction: sum them
        f = fio.groupby(["t_s", "metric"], as_index=False)["value"].sum()
        parts.append(f.assign(layer="fio", metric=f["metric"].map({"iops": "ops_s", "bw_bytes_s": "bytes_s"})))
    z = sampler.get("zpool")
    if z is not None and not z.empty:
        z = z[z["device"] == rec["pool"]]
        for metric, cols in (("ops_s", ("read_ops_s", "write_ops_s")), ("bytes_s", ("read_bytes_s", "write_bytes_s"))):
            s = z[z["metric"].isin(cols)].groupby("t_s", as_index=False)["value"].sum()
            parts.append(s.assign(layer="pool", metric=metric))
    d = sampler.get("disk")
    if d is not None and not d.empty:
        d = d[d["device"].isin(whole_disks(rec.get("kernel_devices") or []))]
        for metric, cols in (("ops_s", ("r_s", "w_s")), ("bytes_s", ("read_bytes_s", "write_bytes_s"))):
            s = d[d["metric"].isin(cols)].groupby("t_s", as_index=False)["value"].sum()
            parts.append(s.assign(layer="device", metric=metric))
    if not parts:
        return pd.DataFrame(columns=["t_s", "layer", "metric", "value"])
    out = pd.concat(parts, ignore_index=True)
    out["t_s"] = out["t_s"] - rec["t_start"]
    lo, hi = -rec.get("ramp_s", 0) - 1, rec["t_end"] - rec["t_start"] + 1
    out = out[(out["t_s"] >= lo) & (out["t_s"] <= hi)]
    return out[["t_s", "layer", "metric", "value"]].sort_values(["metric", "layer", "t_s"]).reset_index(drop=True)


def typical_run(df: pd.DataFrame, metric: str = "auto") -> str:
    """The run_id closest to its configuration's median, in the configuration with most data disks (and
    most runs); the median of `metric`, with "auto" the configuration's workload's (`metrics.metric_of`)."""
    if df.empty or "run_id" not in df:
        raise ConfigError("no runs to choose from")
    if "imported" in df:
        df = df[~df["imported"].astype("boolean").fillna(False).to_numpy(bool)]
        if df.empty:
            return ""
    key = "config_id" if "config_id" in df else "cell_id"
    top = df[df["data_disks"] == df["data_disks"].max()] if "data_disks" in df else df
    cfg = top.groupby(key)[metric if metric != "auto" else "run_id"].count().idxmax()
    g = top[top[key] == cfg]
    m = metric_of(g, metric)
    return str(g.loc[(g[m] - g[m].median()).abs().idxmin(), "run_id"])
