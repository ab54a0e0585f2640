"""Packed sweeps: the committed example datasets are rebuilt from their raw files."""

import json
import shutil
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.errors import ZbenchError
from zbench_lib.sweeps.publish import RAW_ARCHIVE, pack, unpack_raw, verify
from zbench_lib.sweeps.store import Store
from zbench_lib.measure.rows import parse_results

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"
PACKED = sorted(p for p in EXAMPLES.iterdir() if (p / RAW_ARCHIVE).is_file()) if EXAMPLES.is_dir() else []


def test_the_two_example_datasets_are_there():
    assert {p.name for p in PACKED} >= {"scaling", "volblocksize"}


@pytest.mark.parametrize("packed", PACKED, ids=lambda p: p.name)
def test_example_results_are_what_their_raw_files_give(packed):
    rebuilt = verify(packed)
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
