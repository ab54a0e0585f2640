"""Is the disk model honoured? fio random reads on a raw lab disk (no ZFS).

Boots one lab, then for each model sets the disk's throttle live through QMP
and runs 4k random reads at iodepth 16 on the raw block device. Prints measured
IOPS next to the model's limit. The unthrottled run measures the emulation's
own ceiling: a limit above it cannot be honoured and is marked as such.

    python benchmarks/disk_models.py [--runtime 10]
"""

from __future__ import annotations

import argparse
import json
import sys

from zbench_lib.hosts.lab import Lab, LabConfig

MODELS = ["unthrottled", "hdd-slow", "hdd", "custom:iops=500", "custom:iops=1000",
          "custom:iops=2000", "custom:iops=4000", "sata-ssd"]


def fio_randread(host, device: str, runtime: int, bs: str = "4k") -> dict:
    argv = ["fio", "--name=model", f"--filename={device}", "--rw=randread", f"--bs={bs}",
            "--iodepth=16", "--ioengine=libaio", "--direct=1", "--time_based",
            f"--runtime={runtime}", "--ramp_time=2", "--size=512M", "--output-format=json"]
    job = json.loads(host.run(argv, timeout=runtime + 120).stdout)["jobs"][0]
    return {"iops": job["read"]["iops"], "bw": job["read"]["bw_bytes"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runtime", type=int, default=10)
    args = ap.parse_args()
    cfg = LabConfig(disks=1, disk_bytes=1024 ** 3, model="unthrottled", name="bench-models")
    with Lab(cfg) as lab:
        dev = lab.data_disks[0]
        serial = cfg.data_serials[0]
        # Write the disk once so reads hit allocated blocks of the sparse file.
        lab.host.run(["fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M",
                      "--iodepth=8", "--ioengine=libaio", "--direct=1", "--size=512M"], timeout=600)
        print(f"lab accel: {lab.accel}; fio 4k randread, iodepth 16, {args.runtime} s per model")
        print(f"{'model':22} {'limit IOPS':>11} {'measured':>10} {'ratio':>7}  verdict")
        ceiling = None
        for name in MODELS:
            model = lab.set_model(serial, name)
            r = fio_randread(lab.host, dev, args.runtime)
            limit = model.read_iops_limit()
            if name == "unthrottled":
                ceiling = r["iops"]
                print(f"{name:22} {'-':>11} {r['iops']:10.0f} {'-':>7}  emulation ceiling")
                continue
            ratio = r["iops"] / limit
            share = f"limit = {100 * limit / ceiling:.0f}% of ceiling"
            if limit > 0.8 * ceiling:
                verdict = f"not testable here ({share})"
            else:
                verdict = ("within 10%" if abs(ratio - 1) <= 0.10 else "OUTSIDE 10%") + f" ({share})"
            print(f"{name:22} {limit:11d} {r['iops']:10.0f} {ratio:7.3f}  {verdict}")
        # Bandwidth: 1M sequential reads against a bandwidth-capped model.
        model = lab.set_model(serial, "custom:bw=50M")
        argv = ["fio", "--name=bw", f"--filename={dev}", "--rw=read", "--bs=1M", "--iodepth=8",
                "--ioengine=libaio", "--direct=1", "--time_based", f"--runtime={args.runtime}",
                "--ramp_time=2", "--size=512M", "--output-format=json"]
        bw = json.loads(lab.host.run(argv, timeout=args.runtime + 120).stdout)["jobs"][0]["read"]["bw_bytes"]
        print(f"{'custom:bw=50M (seq 1M)':22} {model.bw / 2**20:9.0f}Mi {bw / 2**20:8.1f}Mi "
              f"{bw / model.bw:7.3f}  {'within 10%' if abs(bw / model.bw - 1) <= 0.1 else 'OUTSIDE 10%'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
