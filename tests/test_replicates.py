"""Pool replicates in the plan: ids, randomised blocks, counts, estimates and run meta."""

from __future__ import annotations

import json

import pytest
import yaml

from zbench_lib.sweeps.planning.estimate import BOOT_S, POOL_CREATE_S, TARGET_CREATE_S
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import parse_spec


def spec(replicates=2, seed=5, rep=None):
    d = {"question": "Do pool replicates of small layouts differ?", "surface": "zvol", "host": "lab",
         "lab": {"disks": 4, "disk_size": "1G", "model": "custom:iops=100,bw=100M", "extra_disks": 0},
         "factors": {"layout": ["stripe", "mirror", "raidz1"], "disks": [4], "volblocksize": ["8k", "64k"]},
         "target": {"volsize": "64M"},
         "workloads": [{"name": "randread", "overrides": {"runtime_s": 10, "ramp_time_s": 2}},
                       {"name": "randwrite", "overrides": {"runtime_s": 10, "ramp_time_s": 2}}],
         "repetitions": {**(rep or {"pilot": 2, "max": 4}), "pool_replicates": replicates}, "seed": seed}
    return parse_spec(yaml.safe_dump(d), name="rep")


def test_one_replicate_keeps_the_ids_it_always_had():
    p = expand(spec(1))
    assert [pl.pool_id for pl in p.pools] == ["p01", "p02", "p03"]
    assert all(pl.pool_replicate == 1 and pl.base_pool_id == pl.pool_id for pl in p.pools)
    assert all("-pr" not in c.cell_id and c.base_cell_id == c.cell_id for c in p.cells)
    assert all(r.run_id == f"{r.cell_id}-r{r.rep:02d}" for r in p.runs) and len(p.blocks) == 1


def test_each_replicate_is_its_own_pool_target_and_cell():
    one, two = expand(spec(1)), expand(spec(2))
    assert (len(two.pools), len(two.targets), len(two.cells), len(two.runs)) == (6, 12, 24, 48)
    assert [pl.pool_id for pl in two.pools] == ["p01-pr1", "p02-pr1", "p03-pr1", "p01-pr2", "p02-pr2", "p03-pr2"]
    assert {pl.label for pl in two.pools if pl.base_pool_id == "p02"} == {one.pools[1].label}
    for c in two.cells:
        k = c.pool_replicate
        assert c.cell_id == f"{c.base_cell_id}-pr{k}" and c.pool_id.endswith(f"-pr{k}")
        assert c.target_id.startswith(c.pool_id + "-t")
        assert c.factors == one.cell(c.base_cell_id).factors      # same configuration, other pool
    for t in two.targets:
        assert t.pool_id in {pl.pool_id for pl in two.pools} and t.target_id.startswith(t.pool_id + "-t")
    assert len({r.run_id for r in two.runs}) == 48
    assert {c.base_cell_id for c in two.cells} == {c.cell_id for c in one.cells}


def test_replicates_run_in_randomised_blocks():
    p = expand(spec(3, seed=2))
    assert len(p.blocks) == 3
    for k, block in enumerate(p.blocks, 1):
        assert sorted(block) == [f"p0{i}-pr{k}" for i in (1, 2, 3)]
    assert len({tuple(b[:-4] for b in block) for block in p.blocks}) > 1   # the pool order is shuffled per block
    # runs follow the blocks: block by block, pool by pool, each pool contiguous
    pools = list(dict.fromkeys(r.pool_id for r in p.runs))
    assert pools == [pid for block in p.blocks for pid in block] == [pl.pool_id for pl in p.pool_order()]
    assert [r.order for r in p.runs] == list(range(len(p.runs)))
    assert expand(spec(3, seed=2)).blocks == p.blocks                       # seeded
    assert json.loads(p.to_json())["blocks"] == p.blocks                    # recorded in plan.json


def test_as_written_blocks_keep_the_pool_order():
    s = parse_spec(yaml.safe_dump({**yaml.safe_load(spec(2).text), "order": "as-written"}), name="rep")
    assert expand(s).blocks == [["p01-pr1", "p02-pr1", "p03-pr1"], ["p01-pr2", "p02-pr2", "p03-pr2"]]


def test_run_meta_records_the_replicate():
    p = expand(spec(2))
    for run in (p.runs[0], p.runs[-1]):
        meta = p.run_meta(run)
        c = p.cell(run.cell_id)
        assert meta["pool_id"] == c.pool_id == run.pool_id and meta["pool_replicate"] == c.pool_replicate
        assert meta["base_cell_id"] == c.base_cell_id
    assert {p.run_meta(r)["pool_replicate"] for r in p.runs} == {1, 2}


def test_estimate_counts_every_replicate():
    one, two = expand(spec(1)), expand(spec(2))
    e1, e2 = one.estimates, two.estimates
    assert (e2["pools_created"], e2["pool_replicates"], e2["runs"], e2["runs_max"]) == (6, 2, 48, 96)
    assert e2["prefill_bytes"] == 2 * e1["prefill_bytes"] and e2["bytes_written"] == 2 * e1["bytes_written"]
    assert e2["wall_s"] - BOOT_S == pytest.approx(2 * (e1["wall_s"] - BOOT_S), abs=0.2)
    per_pool = POOL_CREATE_S + 2 * TARGET_CREATE_S            # every replicate: create, 2 targets, prefill each
    assert e2["wall_s"] - e1["wall_s"] >= 3 * per_pool
    text = two.describe()
    assert "pools: 6 (3 x 2 pool replicates in randomised blocks), targets: 12" in text
    assert "runs: 48 planned (2 per cell), up to 96" in text


def test_replicates_with_a_fixed_design():
    p = expand(spec(2, rep={"fixed": 3}))
    assert p.spec.repetitions["design"] == "fixed" and len(p.runs) == 24 * 3
    assert p.estimates["runs_max"] == p.estimates["runs"] == 72 and p.estimates["attempts_max"] == 24 * 6
    assert "runs: 72 planned (3 per cell), a fixed design on iops" in p.describe()
