"""Pack a finished sweep for publication, and check a packed sweep against its raw files.

A packed sweep is the store's top-level files as they are (spec, plan, provenance, events,
results, the executed sweep notebook) plus ``raw.tar.xz``: the whole raw tree in one
compressed archive. Nothing is trimmed away except each run's ``counters.tar.gz``, which is
the same counters as its ``counters/`` directory in transfer form. Sweep text compresses
about 35x, so a few hundred runs fit in a couple of MB and the analysis notebooks still
run on the real results while `verify` can rebuild those results from the raw files.

``SHA256SUMS`` (the format of ``sha256sum``; ``sha256sum -c SHA256SUMS`` checks it too)
holds the sha256 of every other file of the packed sweep: an edited spec.yaml,
results.csv or events.jsonl, which rebuilding results.parquet cannot notice, is caught by
name. A pack made before manifests has none: its check is *not judged*, never passed.
Not covered: names starting with "." (editor and notebook droppings) and the report/
and figures/ that `zbench report` writes into the sweep's directory.

    pack(sweep_dir, dest)      -> dest (refuses to overwrite anything), with SHA256SUMS
    check_manifest(packed_dir) -> "checked: ..." or "not judged: ..."; raises naming edited files
    write_manifest(packed_dir) -> SHA256SUMS over the files as they are now
    verify(packed_dir)         -> the rebuilt table; raises if a file differs from SHA256SUMS or
                                  the rebuilt results from results.parquet (or the rebuilt
                                  histograms from latency_hist.parquet); .attrs["manifest"]

A store whose raw files are a ``raw/`` tree rather than an archive (an import writes one so, with its
SHA256SUMS: sweeps/importing/import_store.py) is verified the same way, its results rebuilt from a copy
of that tree.

latency_hist.parquet (each run's completion-latency histogram, derived with the results) is
packed and checked like results.parquet. A pack made before it existed has none: it passes
only when its raw files hold no histogram either (runs recorded with plain json). A sweep with
clients has clients.parquet and client_hist.parquet (each client's own bins) beside it, checked
alike; a sweep without clients has neither.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tarfile
import tempfile
import warnings
from pathlib import Path

import pandas as pd

from zbench_lib.core.errors import ZbenchError
from zbench_lib.sweeps.store.raw_check import CLIENT_HISTOGRAMS, CLIENTS, HISTOGRAMS

RAW_ARCHIVE = "raw.tar.xz"
MANIFEST = "SHA256SUMS"
_DUPLICATE_NAMES = {"counters.tar.gz"}          # same content as counters/, kept once
_REGENERATED = {"report", "figures"}          # `zbench report` writes them beside the results
_SKIP_TOP = {"raw", ".lock", MANIFEST} | _REGENERATED  # rebuilt or regenerated, not published


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
            if (src / "resilver").is_dir():       # the loads fio ran during timed resilvers
                tf.add(src / "resilver", arcname="resilver", filter=_tar_filter)
        write_manifest(tmp)
        os.rename(tmp, dest)              # the packed sweep appears whole or not at all
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _covered(packed: Path) -> list[str]:
    """Every file of a packed sweep the manifest covers (relative, sorted)."""
    rel = [p.relative_to(packed) for p in packed.rglob("*") if p.is_file() and p.name != MANIFEST]
    return sorted(str(r) for r in rel if r.parts[0] not in _REGENERATED
                  and not any(part.startswith(".") for part in r.parts))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(packed_dir) -> Path:
    """Write SHA256SUMS: the sha256 of every file of the packed sweep as it is now."""
    from zbench_lib.sweeps.store.store import atomic_write
    packed = Path(packed_dir)
    lines = "".join(f"{_sha256(packed / name)}  {name}\n" for name in _covered(packed))
    atomic_write(packed / MANIFEST, lines)
    return packed / MANIFEST


def check_manifest(packed_dir, ignore=()) -> str:
    """'checked: ...' if every file matches SHA256SUMS, 'not judged: ...' without one.

    Raises naming each file edited, missing or not in the manifest (``ignore``: names to
    leave out, e.g. the results a rebuild is about to replace).
    """
    packed = Path(packed_dir)
    if not (packed / MANIFEST).is_file():
        return (f"not judged: no {MANIFEST} (packed before manifests existed); "
                "edits to spec.yaml, results.csv, events.jsonl... cannot be detected")
    listed = {}
    for n, line in enumerate((packed / MANIFEST).read_text(errors="replace").splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise ZbenchError(f"{packed / MANIFEST}: line {n} is not '<sha256>  <file>'")
        listed[name] = digest
    names = sorted((set(listed) | set(_covered(packed))) - set(ignore))
    bad = []
    for name in names:
        if name not in listed:
            bad.append(f"{name}: not in the manifest")
        elif not (packed / name).is_file():
            bad.append(f"{name}: missing")
        elif _sha256(packed / name) != listed[name]:
            bad.append(f"{name}: edited (sha256 differs from the manifest)")
    if bad:
        raise ZbenchError(f"{packed}: files differ from {MANIFEST}:\n  " + "\n  ".join(bad))
    return f"checked: {len(names)} files match {MANIFEST}"


def unpack_raw(packed_dir, into) -> Path:
    """Extract the packed raw tree into `into`/raw (a fresh directory) and return it; a store with a raw/
    tree and no archive has the tree copied."""
    archive = Path(packed_dir) / RAW_ARCHIVE
    tree = Path(packed_dir) / "raw"
    if not archive.is_file() and not tree.is_dir():
        raise ZbenchError(f"{packed_dir} has no {RAW_ARCHIVE}")
    into = Path(into)
    if (into / "raw").exists():
        raise ZbenchError(f"{into / 'raw'} exists; unpack into a fresh directory")
    if not archive.is_file():
        shutil.copytree(tree, into / "raw", symlinks=True)
        return into / "raw"
    with tarfile.open(archive) as tf:
        tf.extractall(into, filter="data")   # refuses absolute paths, links out, devices
    return into / "raw"


@contextlib.contextmanager
def rebuilt_copy(packed_dir):
    """(copy, results): a temporary copy of a packed sweep, its results rebuilt from raw.tar.xz.

    The packed sweep itself is never written to; the copy disappears with the block.
    """
    from zbench_lib.sweeps.store.store import Store
    from zbench_lib.measure.rows import parse_results

    packed = Path(packed_dir)
    with tempfile.TemporaryDirectory(prefix="zbench-rebuild-") as tmp:
        copy = Path(tmp) / packed.name
        copy.mkdir()
        for name in ("spec.yaml", "plan.json", "provenance.json", "events.jsonl"):
            if (packed / name).exists():
                shutil.copy2(packed / name, copy / name)
        unpack_raw(packed, copy)
        yield copy, Store.open(copy).rebuild_results(parse_results, set_aside=False)


def verify(packed_dir) -> pd.DataFrame:
    """Check SHA256SUMS, rebuild the results of a packed sweep from its raw files; raise if either differs.

    The returned table's ``attrs["manifest"]`` says whether the manifest was checked or,
    for a pack made before manifests, not judged (also warned).
    """
    packed = Path(packed_dir)
    manifest = check_manifest(packed)
    if manifest.startswith("not judged"):
        warnings.warn(f"{packed}: manifest {manifest}", UserWarning, stacklevel=2)
    committed = pd.read_parquet(packed / "results.parquet")
    with rebuilt_copy(packed) as (copy, rebuilt):
        hist = pd.read_parquet(copy / HISTOGRAMS)
        per_client = {name: pd.read_parquet(copy / name) if (copy / name).is_file() else None
                      for name in (CLIENTS, CLIENT_HISTOGRAMS)}
    try:
        pd.testing.assert_frame_equal(rebuilt, committed, check_dtype=False)
    except AssertionError as exc:
        raise ZbenchError(f"{packed}: results.parquet does not match what its raw files give:\n{exc}") from None
    _check_histograms(packed, hist)
    for name, table in per_client.items():
        _check_clients(packed, name, table)
    rebuilt.attrs["manifest"] = manifest
    return rebuilt


def _check_clients(packed: Path, name: str, rebuilt: pd.DataFrame | None) -> None:
    """`name`, clients.parquet or client_hist.parquet (a sweep with clients, issue 30), is what the raw
    files give, and there only."""
    if rebuilt is None or not (packed / name).is_file():
        if rebuilt is not None or (packed / name).is_file():
            raise ZbenchError(f"{packed}: {name} is {'missing' if rebuilt is not None else 'present'}, but "
                              f"its raw files hold {'' if rebuilt is not None else 'no '}clients runs")
        return
    _same_as_raw(packed, name, rebuilt)


def _check_histograms(packed: Path, rebuilt: pd.DataFrame) -> None:
    """latency_hist.parquet is what the raw files give; absent (a pack made before it) only when they give none."""
    if not (packed / HISTOGRAMS).is_file():
        if len(rebuilt):
            raise ZbenchError(f"{packed}: {HISTOGRAMS} is missing, but its raw files hold the latency "
                              f"histograms of {rebuilt['run_id'].nunique()} run(s)")
        return
    _same_as_raw(packed, HISTOGRAMS, rebuilt)


def _same_as_raw(packed: Path, name: str, rebuilt: pd.DataFrame) -> None:
    """The derived table `name` of the pack equals the one its raw files give, or a one-line error."""
    try:
        pd.testing.assert_frame_equal(rebuilt, pd.read_parquet(packed / name), check_dtype=False)
    except AssertionError as exc:
        raise ZbenchError(f"{packed}: {name} does not match what its raw files give:\n{exc}") from None
