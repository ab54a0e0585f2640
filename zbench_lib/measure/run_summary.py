"""Per-run summaries of the layered counters, and fio's per-second logs on the same clock.

`summarize_counters()` reduces the tidy series of `counters.parse_sampler_dir()` to one
flat dict over fio's measurement window (ramp excluded). Each counter sample is a rate
over the interval that *ends* at its t_s; totals are rate x the part of that interval
inside the window, so a window that starts or ends mid-interval is neither over- nor
under-counted. Means are weighted the same way. A layer with no sample in the window
yields NaN figures and is named in `missing_layers` (a comma-separated string, so the
summary fits a column of the tidy results table).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from zbench_lib.measure.counters import TIDY

LAYERS = ("disk", "cpu", "arc", "zpool", "txg")
KiB = 1024
# Not physical disks: partitions (their bytes are already in the disk), zvols (zd*: the
# layer above the pool), device-mapper, md, loop, ram and zram devices.
_NOT_A_DISK = re.compile(r"^(loop|ram|zram|zd|dm-|md)\d|^(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+)\d+$|"
                         r"^nvme\d+n\d+p\d+$|^(mmcblk\d+)p\d+$")


def _weights(ts: pd.Series, t_start: float, t_end: float) -> pd.Series:
    """Seconds of each sample's interval (ending at t_s) that fall inside [t_start, t_end]."""
    times = np.sort(ts.unique())
    gaps = np.diff(times)
    first = float(np.median(gaps)) if len(gaps) else 1.0  # the first interval's start is unknown
    dt = np.concatenate([[first], gaps])
    overlap = np.minimum(times, t_end) - np.maximum(times - dt, t_start)
    return ts.map(dict(zip(times, np.clip(overlap, 0, None))))


def _window(df: pd.DataFrame, t_start: float, t_end: float) -> pd.DataFrame:
    """The rows of a tidy series whose interval overlaps the window, with weight w (seconds)."""
    if df is None or df.empty:
        return pd.DataFrame(columns=[*TIDY, "w"])
    out = df.assign(w=_weights(df["t_s"], t_start, t_end))
    return out[out["w"] > 0]


def _wide(df: pd.DataFrame, index=("t_s", "device", "w")) -> pd.DataFrame:
    return df.pivot_table(index=list(index), columns="metric", values="value", aggfunc="first").reset_index()


def _wmean(values: pd.Series, weights: pd.Series) -> float:
    ok = values.notna() & weights.notna() & (weights > 0)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else math.nan


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(math.nan, index=df.index)


def whole_disks(names) -> list[str]:
    """Device names that are whole disks (no partitions, zvols, loop or dm devices)."""
    return sorted(n for n in set(names) if not _NOT_A_DISK.search(n))


def _disk(disk, devices, t_start, t_end) -> dict:
    present = set(disk["device"]) if not disk.empty else set()
    chosen = whole_disks(present) if devices is None else [d for d in devices if d in present]
    out = {"devices": ",".join(chosen),
           "missing_devices": ",".join(d for d in (devices or []) if d not in present)}
    w = _window(disk[disk["device"].isin(chosen)], t_start, t_end) if chosen else _window(None, 0, 0)
    out["samples_disk"] = int(w["t_s"].nunique())
    if w.empty:
        return out
    x = _wide(w)
    r_s, w_s = _col(x, "r_s"), _col(x, "w_s")
    reads, writes = (r_s * x["w"]).sum(), (w_s * x["w"]).sum()
    out["dev_read_bytes"] = float((_col(x, "read_bytes_s") * x["w"]).sum())
    out["dev_write_bytes"] = float((_col(x, "write_bytes_s") * x["w"]).sum())
    seconds = x.groupby("t_s")["w"].first().sum()
    out["dev_r_s"], out["dev_w_s"] = float(reads / seconds), float(writes / seconds)  # summed over devices
    out["dev_util_pct_mean"] = _wmean(_col(x, "util_pct"), x["w"])
    out["dev_util_pct_max"] = float(_col(x, "util_pct").max())
    out["dev_await_ms_mean"] = _wmean(_col(x, "await_ms"), (r_s + w_s) * x["w"])  # per request
    ios = reads + writes
    out["dev_avg_req_bytes"] = float((out["dev_read_bytes"] + out["dev_write_bytes"]) / ios) if ios else math.nan
    # The busiest device, for comparison with a per-device limit (lab disk models).
    per_dev = x.assign(ios=(r_s + w_s) * x["w"],
                       by=(_col(x, "read_bytes_s") + _col(x, "write_bytes_s")) * x["w"]).groupby("device")
    out["dev_iops_busiest"] = float(per_dev["ios"].sum().max() / seconds)
    out["dev_bw_bytes_s_busiest"] = float(per_dev["by"].sum().max() / seconds)
    return out


def _zpool(zpool, pool, t_start, t_end) -> dict:
    rows = zpool[(zpool["device"] == pool) & (zpool["kind"] == "pool")] if not zpool.empty else zpool
    w = _window(rows, t_start, t_end)
    out = {"samples_zpool": int(w["t_s"].nunique()) if not w.empty else 0}
    if w.empty:
        return out
    x = _wide(w)
    for d in ("read", "write"):
        ops = _col(x, f"{d}_ops_s") * x["w"]
        out[f"pool_{d}_bytes"] = float((_col(x, f"{d}_bytes_s") * x["w"]).sum())
        out[f"pool_{d}_ops"] = float(ops.sum())
        out[f"pool_total_wait_{d}_ns_mean"] = _wmean(_col(x, f"total_wait_{d}_ns"), ops)
    # zpool iostat -l prints '-' (NaN) in these columns unless that kind of I/O happened.
    for kind in ("scrub", "trim", "rebuild"):
        out[f"pool_{kind}_io_samples"] = int(_col(x, f"{kind}_wait_ns").notna().sum())
    return out


def _arc(arc, t_start, t_end) -> dict:
    w = _window(arc, t_start, t_end)
    out = {"samples_arc": int(w["t_s"].nunique()) if not w.empty else 0}
    if w.empty:
        return out
    x = _wide(w)
    total = {k: float((_col(x, f"{k}_s") * x["w"]).sum())
             for k in ("hits", "iohits", "misses", "demand_data_hits", "demand_data_iohits", "demand_data_misses")}
    out.update({f"arc_{k}": v for k, v in total.items()})

    # Only true hits count as served from memory: an iohit waited for a disk read in flight.
    def ratio(prefix):
        acc = total[f"{prefix}hits"] + total[f"{prefix}iohits"] + total[f"{prefix}misses"]
        return total[f"{prefix}hits"] / acc if acc else math.nan
    out["arc_hit_ratio"], out["arc_demand_data_hit_ratio"] = ratio(""), ratio("demand_data_")
    out["arc_size_bytes_mean"] = _wmean(_col(x, "size_bytes"), x["w"])
    # L2ARC: how warm the cache device was (its size) and how much of what the ARC missed it
    # served. Only where a cache device was in use: without one the counters stay at zero,
    # and the columns would only widen every other table (and change its derived rows).
    l2 = {k: float((_col(x, f"{k}_s") * x["w"]).sum()) for k in ("l2_hits", "l2_misses")}
    size = _wmean(_col(x, "l2_size_bytes"), x["w"])
    if l2["l2_hits"] + l2["l2_misses"] > 0 or (size == size and size > 0):
        out.update({f"arc_{k}": v for k, v in l2.items()}, l2_size_bytes_mean=size)
        looked = l2["l2_hits"] + l2["l2_misses"]
        out["l2_hit_ratio"] = l2["l2_hits"] / looked if looked else math.nan
    return out


def _cpu(cpu, t_start, t_end) -> dict:
    w = _window(cpu, t_start, t_end)
    out = {"samples_cpu": int(w["t_s"].nunique()) if not w.empty else 0}
    if not w.empty:
        x = _wide(w)
        for k in ("usr", "sys", "iowait", "idle", "steal"):
            out[f"cpu_{k}_pct"] = _wmean(_col(x, f"{k}_pct"), x["w"])
    return out


def _txg(txg, t_start, t_end) -> dict:
    """TXGs born inside the window (committed ones only: parse_sampler_dir keeps state C)."""
    if txg is None or txg.empty:
        return {"samples_txg": 0}
    x = txg[(txg["t_s"] >= t_start) & (txg["t_s"] <= t_end)]
    x = x.pivot_table(index="txg", columns="metric", values="value", aggfunc="first")
    if x.empty:
        return {"samples_txg": 0}
    return {"samples_txg": len(x), "txg_count": len(x), "txg_sync_ms_mean": float(_col(x, "stime_ns").mean() / 1e6),
            "txg_written_bytes": float(_col(x, "nwritten").sum())}


_KEYS = ("dev_read_bytes dev_write_bytes dev_r_s dev_w_s dev_util_pct_mean dev_util_pct_max dev_await_ms_mean "
         "dev_avg_req_bytes dev_iops_busiest dev_bw_bytes_s_busiest pool_read_bytes pool_write_bytes "
         "pool_read_ops pool_write_ops pool_total_wait_read_ns_mean pool_total_wait_write_ns_mean "
         "pool_scrub_io_samples pool_trim_io_samples pool_rebuild_io_samples arc_hits arc_iohits arc_misses "
         "arc_hit_ratio arc_demand_data_hits arc_demand_data_iohits arc_demand_data_misses "
         "arc_demand_data_hit_ratio arc_size_bytes_mean cpu_usr_pct cpu_sys_pct cpu_iowait_pct cpu_idle_pct "
         "cpu_steal_pct txg_count txg_sync_ms_mean txg_written_bytes").split()


def summarize_counters(sampler: dict, t_start: float, t_end: float, devices: list[str] | None,
                       pool: str) -> dict:
    """One flat dict of counter figures over [t_start, t_end] (epoch seconds).

    `devices` are kernel names (vdb, nvme0n1); None takes every whole disk present.
    Device figures are summed over the devices (dev_r_s is the total IOPS they did),
    pool figures come from the pool's row of `zpool iostat`. Every key of the full
    summary is present; what could not be measured is NaN and its layer is listed in
    `missing_layers`.
    """
    if t_end <= t_start:
        raise ValueError(f"empty measurement window: t_start={t_start}, t_end={t_end}")
    s = {k: (sampler or {}).get(k) for k in LAYERS}
    s = {k: (v if v is not None else pd.DataFrame(columns=TIDY)) for k, v in s.items()}
    out = {k: math.nan for k in _KEYS}
    out.update(window_s=t_end - t_start, pool=pool)
    out.update(_disk(s["disk"], devices, t_start, t_end))
    out.update(_zpool(s["zpool"], pool, t_start, t_end))
    out.update(_arc(s["arc"], t_start, t_end))
    out.update(_cpu(s["cpu"], t_start, t_end))
    out.update(_txg(s["txg"], t_start, t_end))
    out["missing_layers"] = ",".join(k for k in LAYERS if out[f"samples_{k}"] == 0)
    return out


def fio_timeseries(fio_logs_df: pd.DataFrame, t0_epoch: float) -> pd.DataFrame:
    """fio's per-second iops and bw logs as a tidy series on the counters' epoch clock.

    `t0_epoch` is the epoch second fio's log clock starts from (its t_ms = 0). Jobs are
    summed per direction and per second (their timestamps differ by a few ms, so they
    are grouped on the rounded second); bw is converted from KiB/s to bytes/s. Rows
    have layer 'fio', device = direction, metric iops or bw_bytes_s.
    """
    cols = [*TIDY]
    if fio_logs_df is None or fio_logs_df.empty:
        return pd.DataFrame(columns=cols)
    df = fio_logs_df[fio_logs_df["metric"].isin(["iops", "bw"])].copy()
    df["sec"] = (df["t_ms"] / 1000).round()
    df["value"] = np.where(df["metric"] == "bw", df["value"] * KiB, df["value"]).astype(float)
    df["metric"] = df["metric"].replace({"bw": "bw_bytes_s"})
    g = df.groupby(["sec", "direction", "metric"], as_index=False)["value"].sum()
    g["t_s"] = t0_epoch + g["sec"]
    g = g.rename(columns={"direction": "device"}).assign(layer="fio")
    return g[cols].sort_values(["t_s", "device", "metric"]).reset_index(drop=True)


def iops_series(fio_ts: pd.DataFrame, t_start: float, t_end: float) -> list[float]:
    """Total IOPS (all directions) per second inside the window: the input of the steady-state check.

    fio logs a second only when an I/O completed in it, and the entry after a silence counts
    the I/Os since the last one, so a second missing between two entries had no completion:
    it is 0 here (a write stalled by ZFS's throttle for 20 s is 20 zeros, not a gap)."""
    x = fio_ts[(fio_ts["metric"] == "iops") & (fio_ts["t_s"] > t_start) & (fio_ts["t_s"] <= t_end + 0.5)]
    per_sec = x.groupby("t_s")["value"].sum().sort_index()
    if per_sec.empty:
        return []
    offsets = np.round(per_sec.index.to_numpy(dtype=float) - per_sec.index[0]).astype(int)
    filled = pd.Series(per_sec.to_numpy(), index=offsets).groupby(level=0).sum()
    return filled.reindex(range(offsets[-1] + 1), fill_value=0.0).tolist()


def timeline(sampler: dict, fio_ts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every layer on one tidy table (t_s, layer, device, metric, value) for plots, sorted by time."""
    frames = [df[TIDY] for k in LAYERS if (df := (sampler or {}).get(k)) is not None and not df.empty]
    if fio_ts is not None and not fio_ts.empty:
        frames.append(fio_ts[TIDY])
    if not frames:
        return pd.DataFrame(columns=TIDY)
    out = pd.concat(frames, ignore_index=True)
    out["value"] = out["value"].astype(float)
    return out.sort_values(["t_s", "layer", "device", "metric"], kind="stable").reset_index(drop=True)
