#!/usr/bin/env python3
"""Capture the real fio output `zbench import` is tested on, into tests/fixtures/fio_import/.

Each fixture is one tiny fio 3.x job (a 4 MiB file in a scratch directory, 1 s, time based), run under
``nice -n 19`` one after another, its output kept as fio wrote it: several rw modes, json and json+,
one job, several jobs (numjobs without group_reporting), group_reporting, two groups (stonewall), a
trim, an fsync section, and a text report (the malformed case: not JSON). tests/fixtures/fio_import/
README.md lists what each is; the fio 2.x fixtures beside them are written by hand (see there).

    python3 scripts/capture_import_fixtures.py [--scratch /dev/shm/zb-import] [--out tests/fixtures/fio_import]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

COMMON = ["--size=4M", "--runtime=1", "--time_based", "--randseed=1234"]
# name -> (output format, fio options): every job's file is the scratch file, added below
FIXTURES = {
    "randread-psync.json": ("json+", ["--name=rr", "--rw=randread", "--bs=4k", "--ioengine=psync",
                                      "--rate_iops=3000"]),
    "randread-libaio-lat.json": ("json+", ["--name=rr", "--rw=randread", "--bs=4k", "--ioengine=libaio",
                                           "--iodepth=4", "--lat_percentiles=1", "--rate_iops=3000"]),
    "randwrite-libaio.json": ("json", ["--name=rw", "--rw=randwrite", "--bs=4k", "--ioengine=libaio",
                                       "--iodepth=8"]),
    "seqwrite-numjobs2.json": ("json+", ["--name=sw", "--rw=write", "--bs=64k", "--ioengine=psync", "--numjobs=2",
                                         "--rate_iops=500"]),
    "randrw-group.json": ("json+", ["--name=mix", "--rw=randrw", "--rwmixread=70", "--bs=8k", "--ioengine=psync",
                                    "--numjobs=2", "--group_reporting", "--lat_percentiles=1", "--rate_iops=1500"]),
    "fsync-write.json": ("json+", ["--name=wal", "--rw=write", "--bs=8k", "--ioengine=psync", "--fsync=1",
                                   "--rate_iops=1500"]),
    "randtrim-falloc.json": ("json", ["--name=trim", "--rw=randtrim", "--bs=64k", "--ioengine=falloc"]),
    # the job file below: a random read, then (stonewall) a random write: two groups in one report
    "two-groups.json": ("json", ["two-groups.fio"]),
    "text-report.json": ("normal", ["--name=rr", "--rw=randread", "--bs=4k", "--ioengine=psync"]),
}
TWO_GROUPS = """[global]
size=4M
runtime=1
time_based
ioengine=psync
bs=4k
randseed=1234
[rr]
rw=randread
[rw]
stonewall
rw=randwrite
"""


def capture(name: str, scratch: Path, out: Path) -> Path:
    fmt, opts = FIXTURES[name]
    if opts == ["two-groups.fio"]:
        job = scratch / "two-groups.fio"
        job.write_text(TWO_GROUPS.replace("[global]", f"[global]\nfilename={scratch / 'data.bin'}"))
        cmd = [str(job)]
    else:
        cmd = [*opts, *COMMON, f"--filename={scratch / 'data.bin'}"]
    dest = out / name
    subprocess.run(["nice", "-n", "19", "fio", f"--output-format={fmt}", f"--output={dest}", *cmd],
                   check=True, timeout=60)
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scratch", default=None, help="scratch directory (default: a new one under /dev/shm)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/fixtures/fio_import"))
    args = ap.parse_args(argv)
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="zb-import-", dir="/dev/shm"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        for name in FIXTURES:
            print(capture(name, scratch, out))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
