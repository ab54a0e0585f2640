"""Replication at the level that varies: two pool replicates of each layout, analysed per pool."""

import json
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.hosts.lab_config import serial_of
from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "replicates.yaml"


def test_two_pool_replicates_are_created_anew_and_analysed_at_pool_level(lab, lab_host, sweep_on_lab, tmp_path):
    res = sweep_on_lab(SPEC, tmp_path, "replicates")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "replicates"
    df = pd.read_parquet(sweep_dir / "results.parquet")
    assert len(df) == 2 * 2 * 2                      # layouts x pool replicates x runs
    # each replicate is its own pool: created, measured and destroyed in its block
    events = [json.loads(l) for l in (sweep_dir / "events.jsonl").read_text().splitlines()]
    created = [e for e in events if e["event"] == "pool created"]
    assert len(created) == 4 and len({e["pool"] for e in created}) == 4
    assert sorted(e["pool_replicate"] for e in created) == [1, 1, 2, 2]
    blocks = [e["block"] for e in created]
    assert blocks == sorted(blocks)                  # every replicate 1 before any replicate 2
    assert set(df["pool_replicate"]) == {1, 2}
    assert df.groupby("layout")["pool_id"].nunique().eq(2).all()
    # the analysis works at the pool level: n counts pools, not reruns on one pool
    s = summary(df, "iops", ["layout"])
    assert (s["unit"] == "pool").all() and s["n"].eq(2).all() and s["n_runs"].eq(4).all()
    assert not s["conditional_on_pool"].any()
    cmp = A.compare_table(df, "iops", "layout", "stripe")
    assert (cmp["unit"] == "pool").all()
    # the environment record names each of the lab's disks by its own serial (one readlink for all)
    (prov,) = [json.loads(p.read_text()) for p in sweep_dir.glob("host-provenance-*.json")]
    assert "devices_error" not in prov, prov["devices_error"]
    assert all(serial_of(d) in prov[f"device[{d}]"].split() for d in lab.data_disks + lab.extra_disks), \
        {k: v for k, v in prov.items() if k.startswith("device[")}
    assert find_leftovers(lab_host) == []
