"""Pack a finished sweep for publication, and check a packed sweep against its raw files.

A packed sweep is the store's top-level files as they are (spec, plan, provenance, events,
results, the executed sweep notebook) plus ``raw.tar.xz``: the whole raw tree in one
compressed archive. Nothing is trimmed away except each run's ``counters.tar.gz``, which is
the same counters as its ``counters/`` directory in transfer form. Sweep text compresses
about 35x, so a few hundred runs fit in a couple of MB and the analysis notebooks still
run on the real results while `verify` can rebuild those results from the raw files.

    pack(sweep_dir, dest)      -> dest (refuses to overwrite anything)
    verify(packed_dir)         -> the rebuilt table; raises if it differs from results.parquet
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import pandas as pd

from zbench_lib.core.errors import ZbenchError

RAW_ARCHIVE = "raw.tar.xz"
_DUPLICATE_NAMES = {"counters.tar.gz"}          # same content as counters/, kept once
_SKIP_TOP = {"raw", ".lock", "report", "figures"}  # rebuilt or regenerated, not published


def _tar_filter(info: tarfile.TarInfo):
    if Path(info.name).name in _DUPLICATE_NAMES:
        return None
    # Reproducible archive: no owner names or ids from the machine that ran the sweep.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def pack(sweep_dir, dest) -> Path:
    """Copy the finished sweep at `sweep_dir` to `dest` with raw/ as one xz archive."""
    src, dest = Path(sweep_dir), Path(dest)
    for need in ("spec.yaml", "plan.json", "results.parquet", "raw"):
        if not (src / need).exists():
            raise ZbenchError(f"{src} is not a finished sweep: {need} is missing")
    if dest.exists():
        raise ZbenchError(f"{dest} exists; packing never overwrites (choose a new name)")
    tmp = dest.with_name(f".{dest.name}.packing-{os.getpid()}")
    tmp.mkdir(parents=True)
    try:
        for item in sorted(src.iterdir()):
            if item.name not in _SKIP_TOP and item.is_file():
                shutil.copy2(item, tmp / item.name)
        with tarfile.open(tmp / RAW_ARCHIVE, "w:xz", preset=9) as tf:
            for run in sorted((src / "raw").iterdir()):
                tf.add(run, arcname=f"raw/{run.name}", filter=_tar_filter)
        os.rename(tmp, dest)              # the packed sweep appears whole or not at all
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def unpack_raw(packed_dir, into) -> Path:
    """Extract the packed raw tree into `into`/raw (a fresh directory) and return it."""
    archive = Path(packed_dir) / RAW_ARCHIVE
    if not archive.is_file():
        raise ZbenchError(f"{packed_dir} has no {RAW_ARCHIVE}")
    into = Path(into)
    if (into / "raw").exists():
        raise ZbenchError(f"{into / 'raw'} exists; unpack into a fresh directory")
    with tarfile.open(archive) as tf:
        tf.extractall(into, filter="data")   # refuses absolute paths, links out, devices
    return into / "raw"


@contextlib.contextmanager
def rebuilt_copy(packed_dir):
    """(copy, results): a temporary copy of a packed sweep, its results rebuilt from raw.tar.xz.

    The packed sweep itself is never written to; the copy disappears with the block.
    """
    from zbench_lib.sweeps.store import Store
    from zbench_lib.measure.rows import parse_results

    packed = Path(packed_dir)
    with tempfile.TemporaryDirectory(prefix="zbench-rebuild-") as tmp:
        copy = Path(tmp) / packed.name
        copy.mkdir()
        for name in ("spec.yaml", "plan.json", "provenance.json", "events.jsonl"):
            if (packed / name).exists():
                shutil.copy2(packed / name, copy / name)
        unpack_raw(packed, copy)
        yield copy, Store.open(copy).rebuild_results(parse_results)


def verify(packed_dir) -> pd.DataFrame:
    """Rebuild the results of a packed sweep from its raw files; raise if they differ."""
    packed = Path(packed_dir)
    committed = pd.read_parquet(packed / "results.parquet")
    with rebuilt_copy(packed) as (_, rebuilt):
        pass
    try:
        pd.testing.assert_frame_equal(rebuilt, committed, check_dtype=False)
    except AssertionError as exc:
        raise ZbenchError(f"{packed}: results.parquet does not match what its raw files give:\n{exc}") from None
    return rebuilt
