"""`zbench import` on a tree of fio results: make the tree, time the import (issue 49).

    python benchmarks/import_fio.py generate DEST [--kernels 2 --reps 5]
        real fio, one tiny job per file, one after another under nice -n 19 (a 4 MiB file in /dev/shm,
        1 s, 2000 IOPS offered, json+ with lat percentiles): DEST/kernel-K/LAYOUT/D-disks/vbs-V/run-R/W.json
        for 2 kernels x (mirror, raidz1, raidz2) x (4, 6 disks) x (4k, 16k) x R reps x (randread,
        randwrite). The path's factors are the demonstration's labels: every file ran the same job on the
        same tmpfs file, so the numbers say nothing about the layouts.
    python benchmarks/import_fio.py replicate SRC DEST --files 2000
        copies of SRC's real outputs under more kernels and repetitions, each copy's rates scaled by a
        seeded factor within 5% (iops, bw, bw_bytes; its bins and percentiles as fio wrote them): a tree
        of that many files for timing, not results.
    python benchmarks/import_fio.py time SRC OUT [--pattern P]
        the import's wall time (plan: every file read and checked; write: the store, its rebuild from
        raw, SHA256SUMS and fsync), the dry summary and the store's size.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zbench_lib.sweeps.importing.import_store import ImportOptions, import_fio  # noqa: E402

PATTERN = "kernel-{kernel}/{layout}/{disks}-disks/vbs-{volblocksize}/run-{rep}/*.json"
LAYOUTS, DISKS, VBS = ("mirror", "raidz1", "raidz2"), (4, 6), ("4k", "16k")
WORKLOADS = {"randread": "randread", "randwrite": "randwrite"}
KERNELS = ("6.1", "6.6", "6.8", "6.10", "6.12")


def _fio(dest: Path, rw: str, scratch: Path, seed: int) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["nice", "-n", "19", "fio", f"--name={rw}", f"--filename={scratch / 'data.bin'}", "--size=4M",
                    "--runtime=1", "--time_based", f"--rw={rw}", "--bs=4k", "--ioengine=psync", "--rate_iops=2000",
                    "--lat_percentiles=1", f"--randseed={seed}", "--output-format=json+", f"--output={dest}"],
                   check=True, timeout=60, capture_output=True)


def generate(dest: Path, kernels: int, reps: int) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="zb-import-bench-", dir="/dev/shm"))
    n = 0
    try:
        for kernel, layout, disks, vbs, rep, rw in product(KERNELS[:kernels], LAYOUTS, DISKS, VBS,
                                                           range(1, reps + 1), WORKLOADS):
            path = dest / f"kernel-{kernel}" / layout / f"{disks}-disks" / f"vbs-{vbs}" / f"run-{rep}" / f"{rw}.json"
            _fio(path, rw, scratch, seed=1000 + n)
            n += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return n


def _perturbed(text: str, factor: float) -> str:
    data = json.loads(text[text.index("{"):])
    for job in data["jobs"]:
        for d in ("read", "write", "trim"):
            sec = job.get(d) or {}
            for k in ("iops", "bw", "bw_bytes"):
                if sec.get(k):
                    sec[k] = round(sec[k] * factor, 6) if k == "iops" else int(sec[k] * factor)
    return json.dumps(data, indent=2) + "\n"


def replicate(src: Path, dest: Path, files: int, seed: int = 49) -> int:
    real = sorted(src.rglob("*.json"))
    rng, n = random.Random(seed), 0
    per_rep = len(LAYOUTS) * len(DISKS) * len(VBS) * len(WORKLOADS)
    reps = -(-files // (per_rep * len(KERNELS)))
    for kernel, layout, disks, vbs, rep, rw in product(KERNELS, LAYOUTS, DISKS, VBS, range(1, reps + 1), WORKLOADS):
        if n == files:
            break
        origin = next(p for p in real if p.name == f"{rw}.json" and f"/{layout}/{disks}-disks/vbs-{vbs}/" in str(p))
        path = dest / f"kernel-{kernel}" / layout / f"{disks}-disks" / f"vbs-{vbs}" / f"run-{rep}" / f"{rw}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_perturbed(origin.read_text(), rng.uniform(0.95, 1.05)))
        n += 1
    return n


def time_import(src: Path, out: Path, pattern: str) -> None:
    t0 = time.monotonic()
    dry = import_fio(src, out, ImportOptions(path_pattern=pattern), dry_run=True)
    t1 = time.monotonic()
    result = import_fio(src, out, ImportOptions(path_pattern=pattern, environment={"host": "this machine (tmpfs)"}))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(dry.summary)
    files = len({r.unit.source.rel for r in result.plan.runs})
    print(f"plan only (--dry-run): {t1 - t0:.1f} s; import: {result.seconds:.1f} s for {len(result.plan.runs)} runs "
          f"of {files} files, {result.rows} rows; store {size / 2 ** 20:.1f} MiB")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("dest", type=Path)
    g.add_argument("--kernels", type=int, default=2)
    g.add_argument("--reps", type=int, default=5)
    r = sub.add_parser("replicate")
    r.add_argument("src", type=Path)
    r.add_argument("dest", type=Path)
    r.add_argument("--files", type=int, default=2000)
    t = sub.add_parser("time")
    t.add_argument("src", type=Path)
    t.add_argument("out", type=Path)
    t.add_argument("--pattern", default=PATTERN)
    args = ap.parse_args(argv)
    if args.cmd == "generate":
        start = time.monotonic()
        print(f"{generate(args.dest, args.kernels, args.reps)} files in {time.monotonic() - start:.0f} s")
    elif args.cmd == "replicate":
        print(f"{replicate(args.src, args.dest, args.files)} files")
    else:
        time_import(args.src, args.out, args.pattern)
    return 0


if __name__ == "__main__":
    sys.exit(main())
