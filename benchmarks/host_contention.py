"""Calibrate host_contention against the measurement itself (issue 47): which runs did other load move?

One small spec (the demo's kind of cells: a zvol on `hdd-slow` disks, 4k random reads and writes, short
windows, no run replaced) is run under each condition, one after another on this machine:

    quiet            nothing else
    niced            a nice-19 CPU burner per CPU (a browser, an IDE's indexer: what a desktop runs)
    burner-1         one un-niced CPU burner
    burner-2         two un-niced CPU burners
    busy-lab         a second lab beside it, its guest running fio flat out on an unthrottled disk

and prints, per condition: the runs, the share each rule flags (the earlier rule: more than 0.5 cores
or more than one other lab beside the QEMU; the starvation rule: the lab's threads waited on a run
queue more than WAIT_SHARE_MAX of the window), the IOPS and p99 against the quiet runs' median of the
same workload, and the run-queue wait. A run *moved* when its IOPS is more than MOVED off the quiet
median of its workload or its p99 more than 1 + 2 MOVED above it; then, for each rule, its false
alarms (flagged, did not move) and misses (moved, not flagged). Last, every run's wait share beside
whether it moved, sorted, which is what the threshold is read from.

    python benchmarks/host_contention.py [--out /tmp/zb-contention] [--conditions quiet,niced,...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.store.store import Store
from zbench_lib.measure.host_load import OTHER_CORES_MAX, OTHER_QEMUS_MAX, WAIT_SHARE_MAX

MiB = 1024 ** 2
MOVED = 0.10
SPEC = {"name": "contention", "question": "Which runs did other load on the controller move?",
        "surface": "zvol", "host": "lab", "lab": {"disks": 2, "disk_size": "1G", "model": "hdd-slow"},
        "factors": {"layout": ["stripe"], "disks": [2], "volblocksize": ["8k"]},
        "target": {"volsize": "128M", "compression": "off", "primarycache": "metadata"},
        "workloads": [{"name": "randread", "overrides": {"runtime_s": 6, "ramp_time_s": 2}},
                      {"name": "randwrite", "overrides": {"runtime_s": 6, "ramp_time_s": 2}}],
        "repetitions": {"fixed": 4, "max_attempts": 4, "metric": "iops"},
        "prefill": {"fill": "whole", "policy": "once-per-target"}, "order": "randomised", "seed": 47}
BURN = [sys.executable, "-c", "while True: pass"]
CONDITIONS = ("quiet", "niced", "burner-1", "burner-2", "busy-lab")


@contextlib.contextmanager
def beside(condition: str):
    """The load of `condition`, running until the block ends."""
    procs: list[subprocess.Popen] = []
    ncpu = os.cpu_count() or 1
    if condition == "niced":
        procs = [subprocess.Popen(["nice", "-n", "19", *BURN]) for _ in range(ncpu)]
    elif condition.startswith("burner-"):
        procs = [subprocess.Popen(BURN) for _ in range(int(condition.split("-")[1]))]
    try:
        if condition == "busy-lab":
            with busy_lab():
                yield
        else:
            yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@contextlib.contextmanager
def busy_lab():
    """A second lab whose guest runs fio on an unthrottled disk for as long as the block lasts."""
    cfg = LabConfig(disks=1, disk_bytes=512 * MiB, model="unthrottled", extra_disks=0, name="contention-busy")
    with Lab(cfg) as lab:
        disk = lab.data_disks[0]
        load = lab.host.popen(["fio", "--name=busy", f"--filename={disk}", "--rw=randrw", "--bs=4k",
                               "--iodepth=16", "--ioengine=libaio", "--direct=1", "--time_based",
                               "--runtime=3600"])
        try:
            time.sleep(5)               # fio started in the guest
            yield
        finally:
            lab.host.run(["pkill", "-TERM", "-x", "fio"], check=False)
            load.wait(timeout=60)


def _finished(out: Path, name: str) -> Path | None:
    """The newest finished sweep of `name` in `out` (zbench sweep names it <name>-<stamp>)."""
    done = sorted(d for d in out.glob(f"{name}-*") if (d / "results.parquet").is_file())
    return done[-1] if done else None


def run_condition(condition: str, out: Path, model: str) -> pd.DataFrame:
    """The sweep of `condition` (one finished earlier in `out` is read again, not rerun: --out resumes)."""
    spec = {**SPEC, "name": f"contention-{condition}", "lab": {**SPEC["lab"], "model": model}}
    sweep = _finished(out, spec["name"])
    if sweep is None:
        path = out / f"{spec['name']}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        with beside(condition):
            res = subprocess.run([sys.executable, "-m", "zbench_lib.cli", "sweep", str(path), "--out", str(out),
                                  "--no-progress"], capture_output=True, text=True)
        if res.returncode:
            raise SystemExit(f"{condition}: the sweep failed:\n{res.stderr[-3000:]}")
        sweep = _finished(out, spec["name"])
    # rows derived again from the raw files with this code (the rule's figures as it reads them now)
    return Store.open(sweep).rebuild_results(parse_results, set_aside=False).assign(condition=condition)


def judged(df: pd.DataFrame) -> pd.DataFrame:
    """Each run with both rules' flags and whether other load moved it (against the quiet runs)."""
    quiet = df[df["condition"] == "quiet"].groupby("workload")[["iops", "lat_p99_ns"]].median()
    df = df.merge(quiet, left_on="workload", right_index=True, suffixes=("", "_quiet"))
    df["iops_ratio"] = df["iops"] / df["iops_quiet"]
    df["p99_ratio"] = df["lat_p99_ns"] / df["lat_p99_ns_quiet"]
    df["moved"] = ((df["iops_ratio"] - 1).abs() > MOVED) | (df["p99_ratio"] > 1 + 2 * MOVED)
    df["old_flag"] = (df["host_other_cores"] > OTHER_CORES_MAX) | (df["host_other_qemus"] > OTHER_QEMUS_MAX)
    df["new_flag"] = df["flag_host_contention"].astype(bool)
    df["wait_ratio"] = df["host_lab_wait_share"] / (df["host_lab_wait_share"] + df["host_lab_run_cores"])
    return df


def thresholds(df: pd.DataFrame) -> pd.DataFrame:
    """For each candidate limit of the wait share (s per window s) and of the wait ratio (wait over
    wait + run): what a rule at that limit flags, its false alarms and misses, over every run."""
    rows = []
    for metric, limits in (("host_lab_wait_share", (0.2, 0.3, 0.4, 0.5, 0.75, 1.0)),
                           ("wait_ratio", (0.2, 0.25, 0.3, 0.4, 0.5))):
        for limit in limits:
            flag = df[metric] > limit
            rows.append({"metric": metric, "limit": limit, "flagged": int(flag.sum()),
                         "false_alarms": int((flag & ~df["moved"]).sum()), "misses": int((~flag & df["moved"]).sum())})
    return pd.DataFrame(rows)


def table(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for cond, g in df.groupby("condition", sort=False):
        rows.append({"condition": cond, "runs": len(g), "flagged_old": g["old_flag"].mean(),
                     "flagged_new": g["new_flag"].mean(), "iops_ratio": g["iops_ratio"].median(),
                     "p99_ratio": g["p99_ratio"].median(), "moved": int(g["moved"].sum()),
                     "wait_share": g["host_lab_wait_share"].median(),
                     "other_cores": g["host_other_cores"].median(),
                     "old_false_alarms": int((g["old_flag"] & ~g["moved"]).sum()),
                     "old_misses": int((~g["old_flag"] & g["moved"]).sum()),
                     "new_false_alarms": int((g["new_flag"] & ~g["moved"]).sum()),
                     "new_misses": int((~g["new_flag"] & g["moved"]).sum())})
    return pd.DataFrame(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/zb-contention"))
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--model", default=SPEC["lab"]["model"],
                    help="the lab's disk model: hdd-slow (disk-bound, the demo's), or a fast custom: model whose "
                         "emulation needs the CPU (custom:iops=1500,bw=100M)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    conditions = args.conditions.split(",")
    if conditions[0] != "quiet":
        raise SystemExit("the quiet condition comes first: the others are measured against it")
    frames = []
    for cond in conditions:
        t0 = time.monotonic()
        frames.append(run_condition(cond, args.out, args.model))
        print(f"{cond}: {len(frames[-1])} runs in {time.monotonic() - t0:.0f} s", flush=True)
    df = judged(pd.concat(frames, ignore_index=True))
    df.to_csv(args.out / "runs.csv", index=False)
    pd.set_option("display.width", 200)
    print(f"\nlab disks: {args.model}")
    print(f"rules: earlier > {OTHER_CORES_MAX} cores or > {OTHER_QEMUS_MAX} other labs; "
          f"starvation: wait share > {WAIT_SHARE_MAX}; moved: IOPS off by > {MOVED:.0%} or p99 up by > "
          f"{2 * MOVED:.0%} against quiet")
    print(table(df).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\neach threshold: runs flagged, false alarms (flagged, not moved), misses (moved, not flagged)")
    print(thresholds(df).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nevery run, by wait share:")
    cols = ["condition", "workload", "host_lab_wait_share", "wait_ratio", "host_other_cores", "iops_ratio",
            "p99_ratio", "moved", "old_flag", "new_flag"]
    print(df.sort_values("host_lab_wait_share")[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
