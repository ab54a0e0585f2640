"""Prefill throughput and the observer effect of counter capture, in one lab boot.

1. Prefill throughput as a fraction of the aggregate disk-model write bandwidth,
   for a stripe and a raidz1 of 4 disks (goal: at least 0.8; for raidz the data
   disks' share is printed too, since parity takes the rest).
2. IOPS with and without counter capture on the same configuration, alternating
   runs, with the ratio of means and its 95% CI (goal: indistinguishable).

    python benchmarks/prefill_and_observer.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from zbench_lib.analysis.stats.ratio import ratio_ci
from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.measure.fio import build_job
from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool
from zbench_lib.zfs.prefill import prefill
from zbench_lib.measure.runner import measure
from zbench_lib.zfs.targets import Zvol
from zbench_lib.measure.run_context import RunContext

MiB = 1024 ** 2
MODEL = "custom:iops=400,bw=30M"


def plain_fio(host, path: str, job: str) -> float:
    host.write_text("/var/tmp/observer.fio", job)
    out = host.run(["fio", "--output-format=json", "/var/tmp/observer.fio"], timeout=600).stdout
    return sum(j["read"]["iops"] for j in json.loads(out)["jobs"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    model = parse_model(MODEL)
    with Lab(LabConfig(disks=4, disk_bytes=1024 ** 3, model=model, name="bench-prefill")) as lab:
        print(f"disk model {MODEL} on 4 disks; lab accel {lab.accel}")
        print(f"{'layout':10} {'written':>8} {'MiB/s':>7} {'aggregate':>10} {'fraction':>9} {'data-disk share':>16}")
        for layout in (Layout("stripe", 4), Layout("raidz1", 4)):
            with Pool(lab.host, layout, lab.data_disks, owned_devices=True) as pool:
                t = pool.create_target(Zvol("fill", 1536 * MiB, 131072, compression="off"))
                s = prefill(pool, t, "whole", progress=False)
                agg = 4 * model.bw
                data = layout.data_disks * model.bw
                bw = s["prefill_bw_bytes_s"]
                print(f"{layout.describe():10} {s['prefill_bytes'] // MiB:6d}Mi {bw / MiB:7.1f} "
                      f"{agg / MiB:8.0f}Mi {bw / agg:9.2f} {bw / data:16.2f}")
        with Pool(lab.host, Layout("stripe", 4), lab.data_disks, owned_devices=True) as pool:
            t = pool.create_target(Zvol("obs", 512 * MiB, 16384, compression="off", primarycache="metadata"))
            prefill(pool, t, "whole", progress=False)
            params = dict(filename=t.path, bs="16k", iodepth=8, numjobs=1, runtime_s=10, ramp_time_s=2)
            plain, observed = [], []
            with tempfile.TemporaryDirectory() as tmp:
                for i in range(args.reps):
                    plain.append(plain_fio(lab.host, t.path, build_job("randread", **params)))
                    res = measure(lab.host, pool=pool.name, target_path=t.path, devices=lab.data_disks,
                                  workload="randread", overrides=params,
                                  remote_dir=f"{pool.work_dir()}/obs{i}", raw_dir=Path(tmp) / f"r{i}",
                                  context=RunContext.recording(cache="cold", lab=True))
                    observed.append(res.rows[0]["iops"])
            r = ratio_ci(observed, plain)
            def mean(v):
                return sum(v) / len(v)
            print(f"\nrandread 16k qd8, {args.reps} alternating runs each (limit 4 x 400 IOPS)")
            print(f"  without counters: {mean(plain):7.1f} IOPS  {[round(v) for v in plain]}")
            print(f"  with counters:    {mean(observed):7.1f} IOPS  {[round(v) for v in observed]}")
            print(f"  ratio with/without {r.ratio:.3f} (95% CI {r.low:.3f}-{r.high:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
