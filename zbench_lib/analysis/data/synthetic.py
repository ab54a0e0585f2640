"""SYNTHETIC results tables: made-up numbers for tests and the speed benchmark ONLY.

Nothing here was measured. The values follow first-order models (disk IOPS times
data disks, raidz reads at about one disk per vdev, Little's law for latency) with
random noise, so the analysis notebooks have something of the right *shape* to chew
on. Every row carries `synthetic=True`, the sweep id starts with `SYNTHETIC-`, and
the spec's question says so: a synthetic table must never be presented as a result.
The real example datasets live under `data/examples/` and come from the lab.
"""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from zbench_lib.analysis.data.flags import admissible_mask
from zbench_lib.zfs.models import predicted_random_read_iops, zfs_charged_bytes
from zbench_lib.zfs import families

KiB = 1024
DISK_IOPS = 150.0                 # the lab's `hdd` model
DISK_BW = 180.0 * KiB * KiB
FLAGS = ("flag_cache_served", "flag_no_device_io", "flag_not_steady", "flag_background_work",
         "flag_compressible_data", "flag_emulation_bound")
FLAG_RATE = 0.02                  # each flag fires on ~2% of runs
PERCENTILES = (("lat_p50_ns", 0.9), ("lat_p90_ns", 1.6), ("lat_p95_ns", 2.0),
               ("lat_p99_ns", 3.2), ("lat_p99_9_ns", 5.0), ("lat_p99_99_ns", 8.0))
# workload name -> (template, bs, directions with their share of the IOs)
WORKLOADS = {"randread-4k": ("randread", 4 * KiB, (("read", 1.0),)),
             "seqread": ("seqread", 1024 * KiB, (("read", 1.0),)),
             "randread": ("randread", 4 * KiB, (("read", 1.0),)),
             "randwrite": ("randwrite", 4 * KiB, (("write", 1.0),)),
             "mixed": ("mixed", 16 * KiB, (("read", 0.7), ("write", 0.3)))}
COLUMNS = ("sweep_id run_id config_id rep workload direction layout width vdevs data_disks total_disks "
           "ashift volblocksize_bytes compression sync logbias primarycache iodepth numjobs bs_bytes iops "
           "bw_bytes_s io_bytes runtime_ms lat_mean_ns lat_stddev_ns lat_p50_ns lat_p90_ns lat_p95_ns "
           "lat_p99_ns lat_p99_9_ns lat_p99_99_ns clat_p99_ns slat_mean_ns usr_cpu_pct sys_cpu_pct dev_read_bytes "
           "dev_write_bytes pool_read_bytes pool_write_bytes arc_hit_ratio cpu_usr_pct cpu_sys_pct "
           "cpu_iowait_pct write_amplification used_bytes logicalused_bytes referenced_bytes compressratio "
           "pool_capacity_pct pool_fragmentation_pct flag_cache_served flag_no_device_io flag_not_steady "
           "flag_background_work flag_compressible_data flag_emulation_bound flagged disk_model_iops "
           "disk_model_bw synthetic").split()
SHAPES = {
    "scaling": dict(layouts=("stripe", "mirror", "raidz1", "raidz2"), disks=range(2, 9),
                    volblocksizes=(16 * KiB,), workloads=("randread-4k", "seqread")),
    "volblocksize": dict(layouts=("raidz1", "raidz2", "mirror"), disks=(6,),
                         volblocksizes=tuple(k * KiB for k in (4, 8, 16, 32, 64, 128)),
                         workloads=("randread", "randwrite", "mixed")),
    # the demo's design (templates/sweeps/demo.yaml): three layouts of four disks, each at two block sizes
    "demo": dict(layouts=("stripe", "mirror", "raidz1"), disks=(4,), volblocksizes=(8 * KiB, 64 * KiB),
                 workloads=("randread", "randwrite")),
    # sync=always without a log device writes each block twice to the data disks (ZIL, then the txg);
    # a separate log device (SLOG) takes the ZIL's share back
    "sync-log": dict(layouts=("mirror",), disks=(4,), volblocksizes=(16 * KiB,), workloads=("randwrite",),
                     sync=("standard", "always"), log=(0, 1)),
}
# (sync, log devices) -> share of the sync=standard IOPS (the sync-log shape's first-order model)
SYNC_COST = {("standard", 0): 1.0, ("standard", 1): 1.0, ("always", 0): 0.3, ("always", 1): 0.8}


def _layout(layout: str, disks: int):
    if layout == "mirror":
        return (2, disks // 2) if disks % 2 == 0 else None
    if layout.startswith("raidz") and disks <= int(layout[-1]) + 1:
        return None                                  # raidz-p needs at least p+2 disks here
    return disks, 1


def _configs(shape: str) -> pd.DataFrame:
    s = SHAPES[shape]
    rows = []
    for layout in s["layouts"]:
        for disks in s["disks"]:
            wv = _layout(layout, disks)
            if wv is None:
                continue
            for vbs, wl, sync, log in product(s["volblocksizes"], s["workloads"], s.get("sync", ("standard",)),
                                              s.get("log", (None,))):
                _, bs, dirs = WORKLOADS[wl]
                for direction, share in dirs:
                    rows.append(dict(layout=layout, width=wv[0], vdevs=wv[1], total_disks=disks,
                                     volblocksize_bytes=vbs, workload=wl, direction=direction,
                                     share=share, bs_bytes=bs, sync=sync, log=log))
    cfg = pd.DataFrame(rows)
    cfg["data_disks"] = [families.get(r.layout).data_disks_of(r.width, r.vdevs) for r in cfg.itertuples()]
    cfg["config_id"] = (cfg["layout"] + "-" + cfg["width"].astype(str) + "x" + cfg["vdevs"].astype(str)
                        + "-vbs" + (cfg["volblocksize_bytes"] // KiB).astype(str) + "k-" + cfg["workload"])
    if "sync" in s:                              # the other shapes keep their ids (and so their noise)
        cfg["config_id"] += "-sync-" + cfg["sync"] + "-log" + cfg["log"].astype(str)
    cfg["expected_iops"] = [_expected_iops(r) for r in cfg.itertuples()]
    return cfg


def _expected_iops(r) -> float:
    """First-order pool IOPS for one configuration and direction (no noise)."""
    template = WORKLOADS[r.workload][0]
    if template == "seqread":
        return 0.85 * DISK_BW * r.data_disks / r.bs_bytes
    reads = predicted_random_read_iops(r.layout, r.width, r.vdevs, DISK_IOPS, r.volblocksize_bytes)
    # writes: copies (mirror) or read-modify-write of blocks larger than the IO (raidz)
    copies = r.width if r.layout == "mirror" else 1
    rmw = max(1.0, r.volblocksize_bytes / r.bs_bytes) ** 0.5
    writes = DISK_IOPS * r.width * r.vdevs / copies / rmw * (1.5 if r.layout.startswith("raidz") else 1)
    if template == "randread":
        return reads
    if template == "randwrite":
        return writes * SYNC_COST.get((r.sync, r.log), 1.0)
    both = 1 / (0.7 / reads + 0.3 / writes)         # 70/30 mix shares the disks
    return both * r.share


def synthetic_results(n_rows: int = 1000, seed: int = 0, shape: str = "scaling") -> pd.DataFrame:  # noqa: PLR0915 (one statement per column of the table)
    """A SYNTHETIC tidy results table of exactly `n_rows` rows (see the module docstring).

    `shape` is 'scaling' (layouts × 2–8 disks, random and sequential reads),
    'volblocksize' (raidz1/raidz2/mirror of 6 × 4K–128K, read/write/mixed), 'demo' (stripe/mirror/raidz1
    of 4 × 8K/64K, random reads and writes) or 'sync-log' (a mirror of 4, 16K random writes, sync
    standard/always × no log device/one).
    Repetitions are added until `n_rows` is reached; the last one may be partial.
    """
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {sorted(SHAPES)}, got {shape!r}")
    if n_rows < 1:
        raise ValueError(f"n_rows must be >= 1, got {n_rows}")
    rng = np.random.default_rng(seed)
    cfg = _configs(shape)
    reps = -(-n_rows // len(cfg))
    df = cfg.loc[np.tile(cfg.index.to_numpy(), reps)].reset_index(drop=True)
    df["rep"] = np.repeat(np.arange(1, reps + 1), len(cfg))
    df = df.iloc[:n_rows].copy()
    n = len(df)
    sweep_id = f"SYNTHETIC-{shape}"
    df.insert(0, "sweep_id", sweep_id)
    df.insert(1, "run_id", df["config_id"] + "-r" + df["rep"].astype(str))
    iops = df["expected_iops"].to_numpy() * rng.lognormal(0.0, 0.05, n)
    df["ashift"] = 12
    df["compression"] = "off"
    df["logbias"] = "latency"
    df["primarycache"] = "metadata"
    df["iodepth"] = 16
    df["numjobs"] = np.where(df["workload"] == "seqread", 1, 4)
    df["iops"] = iops
    df["bw_bytes_s"] = iops * df["bs_bytes"]
    df["runtime_ms"] = 60_000
    df["io_bytes"] = (df["bw_bytes_s"] * 60).round()
    mean_ns = df["iodepth"] * df["numjobs"] / (iops / df["share"]) * 1e9   # Little's law
    df["lat_mean_ns"] = mean_ns
    df["lat_stddev_ns"] = mean_ns * rng.uniform(0.4, 0.8, n)
    tail = rng.lognormal(0.0, 0.1, n)
    for col, mult in PERCENTILES:
        df[col] = mean_ns * mult * (tail if mult > 2 else 1.0)
    df["clat_p99_ns"] = df["lat_p99_ns"] * 0.99     # fio's completion half, kept beside lat
    df["slat_mean_ns"] = mean_ns * 0.01
    df["usr_cpu_pct"] = rng.uniform(1, 5, n)
    df["sys_cpu_pct"] = rng.uniform(5, 20, n)
    parity = df["layout"].map({"stripe": 0, "mirror": 0, "raidz1": 1, "raidz2": 2}).fillna(3)
    overhead = np.where(df["layout"] == "mirror", df["width"], df["width"] / (df["width"] - parity))
    is_read = (df["direction"] == "read").to_numpy()
    df["dev_read_bytes"] = np.where(is_read, df["io_bytes"] * 1.05, df["io_bytes"] * 0.1)
    df["dev_write_bytes"] = np.where(is_read, 0.0, df["io_bytes"] * overhead)
    df["pool_read_bytes"] = np.where(is_read, df["io_bytes"] * 1.02, 0.0)
    df["pool_write_bytes"] = np.where(is_read, 0.0, df["io_bytes"] * 1.02)
    df["arc_hit_ratio"] = rng.uniform(0.0, 0.03, n)
    df["cpu_usr_pct"] = df["usr_cpu_pct"] * 1.1
    df["cpu_sys_pct"] = df["sys_cpu_pct"] * 1.1
    df["cpu_iowait_pct"] = rng.uniform(20, 60, n)
    df["write_amplification"] = np.where(is_read, np.nan, overhead)
    logical = float(1024 ** 3)
    charged = {(lay, w, v): zfs_charged_bytes(v, lay, w) / v
               for lay, w, v in df[["layout", "width", "volblocksize_bytes"]].drop_duplicates().itertuples(index=False)}
    ratio = np.array([charged[k] for k in zip(df["layout"], df["width"], df["volblocksize_bytes"])])
    df["logicalused_bytes"] = logical
    df["used_bytes"] = logical * ratio * rng.uniform(1.002, 1.01, n)     # + metadata
    df["referenced_bytes"] = df["used_bytes"]
    df["compressratio"] = 1.0
    df["pool_capacity_pct"] = rng.uniform(20, 40, n)
    df["pool_fragmentation_pct"] = rng.uniform(0, 10, n)
    for f in FLAGS:
        df[f] = rng.random(n) < FLAG_RATE
    df["flagged"] = ~admissible_mask(df[list(FLAGS)])        # not_steady describes a run: kept
    df["disk_model_iops"] = DISK_IOPS
    df["disk_model_bw"] = DISK_BW
    df["synthetic"] = True
    extra = ["log"] if "log" in SHAPES[shape] else []       # a column only where the shape varies it
    return df[COLUMNS + extra].reset_index(drop=True)


def write_synthetic_sweep(path, n_rows: int = 1000, seed: int = 0, shape: str = "scaling") -> Path:
    """Write a store-shaped SYNTHETIC sweep directory (spec.yaml, provenance.json, results)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    df = synthetic_results(n_rows, seed, shape)
    spec = {"name": f"SYNTHETIC-{shape}",
            "question": f"SYNTHETIC DATA (made up, not measured): does the {shape} analysis work "
                        f"mechanically?",
            "surface": "zvol", "synthetic": True,
            "factors": {"layout": sorted(df["layout"].unique().tolist()),
                        "disks": sorted(int(d) for d in df["total_disks"].unique())}}
    (path / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    provenance = {"synthetic": True, "kernel": "synthetic", "zfs_version": "synthetic",
                  "zfs_kmod_version": "synthetic", "cpu": "synthetic", "ram_bytes": 0,
                  "lab_disk_model": f"synthetic hdd ({DISK_IOPS:.0f} IOPS, 180 MiB/s)",
                  "hostname": "synthetic"}
    (path / "provenance.json").write_text(json.dumps(provenance, indent=2))
    (path / "plan.json").write_text(json.dumps({"synthetic": True, "runs": int(df["run_id"].nunique())}))
    df.to_parquet(path / "results.parquet", index=False)
    return path
