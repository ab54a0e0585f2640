"""Packed sweeps: the committed example datasets are rebuilt from their raw files; SHA256SUMS covers the rest."""

import json
import re
import shutil
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.errors import ZbenchError
from zbench_lib.sweeps.store.publish import (MANIFEST, RAW_ARCHIVE, check_manifest, pack, rebuilt_copy, unpack_raw,
                                             verify, write_manifest)
from zbench_lib.sweeps.store.raw_check import StoreWarning
from zbench_lib.sweeps.store.store import Store
from zbench_lib.measure.rows import parse_results

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"
PACKED = sorted(p for p in EXAMPLES.iterdir() if (p / RAW_ARCHIVE).is_file()) if EXAMPLES.is_dir() else []


def test_the_two_example_datasets_are_there():
    assert {p.name for p in PACKED} >= {"scaling", "volblocksize"}


@pytest.mark.parametrize("packed", PACKED, ids=lambda p: p.name)
def test_example_results_are_what_their_raw_files_give(packed):
    rebuilt = verify(packed)
    assert rebuilt.attrs["manifest"].startswith("checked: ")     # SHA256SUMS added 2026-11-22
    plan = json.loads((packed / "plan.json").read_text())
    # every planned run (the minimum repetitions) is there; adaptive extra runs come on top
    assert {r["run_id"] for r in plan["runs"]} <= set(rebuilt["run_id"])
    assert rebuilt["sweep"].nunique() == 1


def _small_store(tmp_path, runs=3):
    """A sweep store made of the first `runs` runs of the volblocksize example, results rebuilt."""
    src = EXAMPLES / "volblocksize"
    store = tmp_path / "sweep"
    store.mkdir()
    for name in ("spec.yaml", "plan.json", "provenance.json", "events.jsonl"):
        shutil.copy2(src / name, store / name)
    unpack_raw(src, store)
    with pytest.raises(ZbenchError, match="unpack into a fresh directory"):
        unpack_raw(src, store)
    for run in sorted((store / "raw").iterdir())[runs:]:
        shutil.rmtree(run)
    return store, Store.open(store).rebuild_results(parse_results)


def test_verify_catches_an_edited_result(tmp_path):
    store, _ = _small_store(tmp_path)
    dest = pack(store, tmp_path / "packed")
    df = pd.read_parquet(dest / "results.parquet")
    df.loc[0, "iops"] *= 1.10                      # a "better" number, not from the raw files
    df.to_parquet(dest / "results.parquet", index=False)
    with pytest.raises(ZbenchError, match="results.parquet: edited"):
        verify(dest)                               # the manifest catches it first
    write_manifest(dest)                           # and if the manifest was forged too: the raw files do
    with pytest.raises(ZbenchError, match="does not match what its raw files give"):
        verify(dest)


def test_pack_round_trip_refuses_overwrite_and_drops_duplicate_tarballs(tmp_path):
    store, small = _small_store(tmp_path)
    assert small["run_id"].nunique() == 3
    attempt = next(next((store / "raw").iterdir()).iterdir())
    (attempt / "counters.tar.gz").write_bytes(b"transfer copy of counters/")

    dest = pack(store, tmp_path / "packed")
    with tarfile.open(dest / RAW_ARCHIVE) as tf:
        names = tf.getnames()
        assert not any(n.endswith("counters.tar.gz") for n in names)
        assert sum(n.endswith("fio/fio.json") for n in names) == 3
        assert {m.uname for m in tf.getmembers()} == {""}
    assert not (dest / "raw").exists() and (dest / "results.csv").is_file()
    pd.testing.assert_frame_equal(verify(dest), small, check_dtype=False)
    with pytest.raises(ZbenchError, match="never overwrites"):
        pack(store, dest)
    (store / "results.parquet").unlink()
    with pytest.raises(ZbenchError, match="results.parquet is missing"):
        pack(store, tmp_path / "again")
    assert not (tmp_path / "again").exists()


def test_the_loads_of_timed_resilvers_are_packed_with_the_raw_tree(tmp_path):
    store, small = _small_store(tmp_path, runs=1)
    (store / "resilver" / "p01-2").mkdir(parents=True)
    (store / "resilver" / "p01-2" / "fio.json").write_text('{"jobs": []}')
    dest = pack(store, tmp_path / "packed")
    with tarfile.open(dest / RAW_ARCHIVE) as tf:
        assert tf.extractfile("resilver/p01-2/fio.json").read() == b'{"jobs": []}'
    assert not (dest / "resilver").exists()
    pd.testing.assert_frame_equal(verify(dest), small, check_dtype=False)


# -- hash manifest (#15 item 3) ------------------------------------------------

@pytest.fixture(scope="module")
def packed_small(tmp_path_factory):
    """A 3-run pack of the volblocksize example, made by `pack` (so with SHA256SUMS)."""
    tmp = tmp_path_factory.mktemp("manifest")
    with pytest.warns(StoreWarning):                   # the cut-down store misses planned runs: named
        store, _ = _small_store(tmp)
        return pack(store, tmp / "packed")


@pytest.fixture
def packed_copy(packed_small, tmp_path):
    dest = tmp_path / "packed"
    shutil.copytree(packed_small, dest)
    return dest


def test_pack_writes_a_manifest_of_every_file(packed_copy):
    lines = (packed_copy / MANIFEST).read_text().splitlines()
    names = {line.split("  ", 1)[1] for line in lines}
    assert names == {p.name for p in packed_copy.iterdir()} - {MANIFEST}
    assert {"spec.yaml", "results.csv", "results.parquet", "events.jsonl", RAW_ARCHIVE} <= names
    with pytest.warns(StoreWarning):
        assert verify(packed_copy).attrs["manifest"] == f"checked: {len(names)} files match {MANIFEST}"


@pytest.mark.parametrize("name", ["spec.yaml", "results.csv", "events.jsonl", "plan.json", RAW_ARCHIVE])
def test_verify_names_an_edited_file(packed_copy, name):
    with open(packed_copy / name, "ab") as f:
        f.write(b"\n")                                 # one byte: nothing else would notice it
    with pytest.raises(ZbenchError, match=rf"files differ from SHA256SUMS:\n  {re.escape(name)}: edited"):
        verify(packed_copy)


def test_verify_names_a_removed_or_added_file(packed_copy):
    (packed_copy / "events.jsonl").unlink()
    (packed_copy / "host-provenance-20990101T000000Z.json").write_text("{}")   # load_sweep would read it
    (packed_copy / ".ipynb_checkpoints").mkdir()                               # hidden: not covered
    (packed_copy / ".ipynb_checkpoints" / "x.ipynb").write_text("{}")
    with pytest.raises(ZbenchError) as exc:
        verify(packed_copy)
    assert "events.jsonl: missing" in str(exc.value)
    assert "host-provenance-20990101T000000Z.json: not in the manifest" in str(exc.value)
    assert "ipynb_checkpoints" not in str(exc.value)


def test_a_pack_without_manifest_is_not_judged_never_passed(packed_copy, capsys):
    from zbench_lib.cli import main
    (packed_copy / MANIFEST).unlink()                    # as packed before manifests existed
    assert check_manifest(packed_copy).startswith("not judged: no SHA256SUMS")
    with pytest.warns(UserWarning, match="manifest not judged"):
        rows = verify(packed_copy)                      # the results are still checked against raw
    assert rows.attrs["manifest"].startswith("not judged") and "checked" not in rows.attrs["manifest"]
    with pytest.warns(UserWarning, match="manifest not judged"):
        assert main(["verify", str(packed_copy)]) == 0
    out = capsys.readouterr().out
    assert "manifest not judged: no SHA256SUMS" in out and "match SHA256SUMS" not in out


def test_a_torn_raw_file_in_a_pack_is_skipped_with_a_warning(tmp_path):
    with pytest.warns(StoreWarning):
        store, small = _small_store(tmp_path)
    torn_run = sorted((store / "raw").iterdir())[1].name
    (store / "raw" / torn_run / "attempt-1" / "fio" / "fio.json").write_text('{"fio version": "fio-3.33", "jo')
    dest = pack(store, tmp_path / "packed")
    before = {p.name: p.read_bytes() for p in dest.iterdir()}
    with pytest.warns(StoreWarning, match=rf"raw/{torn_run}/attempt-1: its files do not parse .*skipped"):
        with rebuilt_copy(dest) as (copy, df):
            assert (copy / "raw" / torn_run / "attempt-1" / "COMPLETE").exists()    # not set aside
            assert not [e for e in Store.open(copy).events() if e["event"] == "attempt invalid"]
    assert set(df["run_id"]) == set(small["run_id"]) - {torn_run}
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before
    with pytest.warns(StoreWarning), pytest.raises(ZbenchError, match="does not match what its raw files give"):
        verify(dest)
