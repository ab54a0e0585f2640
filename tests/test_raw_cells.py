"""Raw cells (the bare disks beside the zvols, and surface: raw): specs and plans, nothing runs.

The refusals themselves are cases of test_malformed_inputs.py; here what a valid raw spec
becomes: one raw cell whatever ZFS-only factor varies beside it, a pool of kind raw whose
target is a region per disk, the estimate's prefill over every disk, and the dry run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from zbench_lib.core.errors import ConfigError
from zbench_lib.sweeps.running.executor import run_sweep
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

MiB, GiB = 1024 ** 2, 1024 ** 3
ROOT = Path(__file__).resolve().parent.parent


def spec(changes: dict | None = None, **top):
    d = {"question": "How does ZFS compare with the bare disks here?", "surface": "zvol", "host": "lab",
         "lab": {"disks": 4, "disk_size": "1G", "model": "custom:iops=200,bw=100M", "extra_disks": 0},
         "factors": {"layout": ["raw", "stripe", "mirror"], "disks": [4]},
         "target": {"volsize": "128M", "volblocksize": "16k", "compression": "off"},
         "workloads": [{"name": "randread", "overrides": {"runtime_s": 10, "ramp_time_s": 2}},
                       {"name": "seqwrite", "overrides": {"runtime_s": 10, "ramp_time_s": 2}}],
         "repetitions": {"fixed": 2, "pool_replicates": 1}, "seed": 3, **top}
    d = {k: v for k, v in d.items() if v is not None}          # lab=None: a real host's spec
    for k, v in (changes or {}).items():
        node, *rest = k.split(".")
        if rest:
            d[node][rest[0]] = v
        else:
            d[k] = v
    return parse_spec(yaml.safe_dump(d), name="raw-t")


def raw_cells(plan) -> list:
    return [c for c in plan.cells if c.factors["layout"] == "raw"]


def test_a_raw_level_beside_zvols_is_one_pool_of_kind_raw_with_a_region_per_disk():
    p = expand(spec())
    assert [pl.label for pl in p.pools] == ["raw(4)", "stripe(4)", "2x mirror(2)"]
    raw_pool = p.pools[0]
    assert raw_pool.kind == "raw" and raw_pool.layout == {"family": "raw", "disks": 4}
    assert raw_pool.data_disks == 4 and "settings" not in raw_pool.to_dict()
    assert all("kind" not in pl.to_dict() for pl in p.pools[1:])            # ZFS pools are recorded as before
    (raw_target,) = [t for t in p.targets if t.pool_id == raw_pool.pool_id]
    assert raw_target.kind == "raw" and raw_target.size_bytes == 128 * MiB
    assert raw_target.prefill_bytes == 4 * 128 * MiB            # each disk's region, written once
    assert raw_target.volblocksize_bytes is None and raw_target.compression is None
    f = raw_cells(p)[0].factors
    assert {k: f[k] for k in ("layout", "width", "vdevs", "data_disks", "total_disks", "layout_label", "surface",
                              "region_bytes")} == {"layout": "raw", "width": 4, "vdevs": 1, "data_disks": 4,
                                                   "total_disks": 4, "layout_label": "raw(4)", "surface": "raw",
                                                   "region_bytes": 128 * MiB}
    assert not {"volblocksize_bytes", "compression", "ashift", "log", "volsize_bytes"} & set(f)
    zfs = next(c for c in p.cells if c.factors["layout"] == "stripe").factors
    assert zfs["volsize_bytes"] == 128 * MiB and zfs["volblocksize_bytes"] == 16384 and "surface" not in zfs


def test_zfs_only_factors_beside_raw_leave_one_raw_cell_per_workload():
    p = expand(spec({"factors": {"layout": ["raw", "raidz1"], "disks": [4], "volblocksize": ["8k", "16k", "64k"],
                                 "compression": ["off", "lz4"], "ashift": [12, 13], "zfs_txg_timeout": [5, 10]},
                     "target": {"volsize": "64M"}}))
    assert len(raw_cells(p)) == 2                                   # randread, seqwrite: not 2 x 3 x 2 x 2 x 2
    raw_pools = [pl for pl in p.pools if pl.kind == "raw"]
    assert len(raw_pools) == 1 and raw_pools[0].settings is None  # no module parameter set around raw disks
    assert len([c for c in p.cells if c.factors["layout"] == "raidz1"]) == 2 * 3 * 2 * 2 * 2
    assert not p.skipped


def test_fs_ext4_and_fill_percentages_skip_the_raw_cell_with_the_reason():
    p = expand(spec({"factors": {"layout": ["raw", "mirror"], "disks": [4], "fs": ["none", "ext4"],
                                 "fill": ["none", "whole", "50%"]}}))
    reasons = {(s["factors"]["fs"], s["factors"]["fill"]) for s in p.skipped
               if s["factors"]["layout"]["family"] == "raw"}
    assert reasons == {("ext4", "none"), ("ext4", "whole"), ("ext4", "50%"), ("none", "50%")}
    assert all("raw disks" in s["reason"] for s in p.skipped)
    kept = raw_cells(p)
    assert {(c.factors["fs"], c.factors["fill"]) for c in kept} == {("none", "none"), ("none", "whole")}
    by_fill = {pl.fill: pl for pl in p.pools if pl.kind == "raw"}
    targets = {t.pool_id: t for t in p.targets}
    assert targets[by_fill["none"].pool_id].prefill_bytes == 0
    assert targets[by_fill["whole"].pool_id].prefill_bytes == 4 * 128 * MiB
    assert "'fs': 'ext4', 'layout': 'raw'}: fs ext4 is made on a zvol; raw disks are measured bare" in p.describe()


def test_raw_disks_follow_disks_or_width_and_are_skipped_beyond_the_host():
    p = expand(spec({"factors": {"layout": ["raw", "stripe"], "disks": [1, 2, 8]}}))
    assert sorted(pl.label for pl in p.pools if pl.kind == "raw") == ["raw(1)", "raw(2)"]
    (too_many,) = {s["reason"] for s in p.skipped if s["factors"]["layout"]["family"] == "raw"}
    assert too_many == "raw(8) needs 8 data disks but the host has 4"
    w = expand(spec({"factors": {"layout": ["raw", "raidz1"], "width": [2], "vdevs": [2]}}))
    assert [pl.label for pl in w.pools if pl.kind == "raw"] == ["raw(4)"]
    every = expand(spec({"factors": {"layout": ["raw", "stripe"]}}))
    assert [pl.label for pl in every.pools if pl.kind == "raw"] == ["raw(4)"]   # the host's data disks


def test_a_raw_sweep_has_every_cell_raw_and_a_model_factor_around_its_disks():
    s = spec({"factors": {"disks": [2, 4], "model": ["hdd", "custom:iops=500,bw=50M"], "iodepth": [1, 8]},
              "target": {"size": "256M"}}, surface="raw")
    assert s.factors["layout"] == [{"family": "raw"}] and s.target == {"kind": "raw", "size_bytes": 256 * MiB}
    p = expand(s)
    assert len(p.cells) == len(raw_cells(p)) == 2 * 2 * 2 * 2 and not p.skipped
    assert len(p.pools) == 4 and {pl.settings["model"] for pl in p.pools} == {"hdd", "custom:iops=500,bw=50M"}
    assert all(c.factors["model"] in ("hdd", "custom:iops=500,bw=50M") for c in p.cells)
    assert {t.prefill_bytes for t in p.targets} == {2 * 256 * MiB, 4 * 256 * MiB}


def test_raw_pools_are_replicated_into_blocks_like_pools():
    p = expand(spec(repetitions={"fixed": 1, "pool_replicates": 2}))
    raw = [pl for pl in p.pools if pl.kind == "raw"]
    assert [pl.pool_id for pl in raw] == ["p01-pr1", "p01-pr2"] and [pl.pool_replicate for pl in raw] == [1, 2]
    assert all(sum(pid.startswith("p01-") for pid in block) == 1 for block in p.blocks)
    assert {c.base_cell_id for c in raw_cells(p)} == {c.cell_id.rsplit("-pr", 1)[0] for c in raw_cells(p)}


def test_the_raw_plan_is_deterministic_and_its_estimate_counts_every_disk():
    a, b = expand(spec()), expand(spec())
    assert a.to_json() == b.to_json()
    zfs_only = expand(spec({"factors": {"layout": ["stripe", "mirror"], "disks": [4]}}))
    assert a.estimates["prefill_bytes"] - zfs_only.estimates["prefill_bytes"] == 4 * 128 * MiB
    assert a.estimates["pools_created"] == zfs_only.estimates["pools_created"] + 1


def test_a_real_host_plans_raw_cells_on_its_listed_disks():
    p = expand(spec({"factors": {"layout": ["raw", "mirror"], "disks": [2]}}, host="ssh://root@bench1",
                    devices=["/dev/sdb", "/dev/sdc"], lab=None))
    assert [pl.label for pl in p.pools] == ["raw(2)", "1x mirror(2)"]


def test_dry_run_describes_the_raw_disks_and_creates_nothing(tmp_path):
    path = tmp_path / "raw.yaml"
    path.write_text((ROOT / "tests" / "specs" / "raw.yaml").read_text())
    lines = []
    assert run_sweep(path, out_root=tmp_path / "out", dry_run=True, log=lines.append) is None
    text = "\n".join(lines)
    assert "cells: 2 (0 skipped), pools: 2" in text and "prefill" in text
    assert not (tmp_path / "out").exists()
    plan = json.loads(expand(parse_spec(path.read_text(), name="raw")).to_json())
    assert [pl["label"] for pl in plan["pools"]] == ["raw(2)", "stripe(2)"]


@pytest.mark.parametrize("layouts, surface, message", [
    (["raw", "stripe"], "raw", r"factors\.layout\[1\]: a raw sweep measures the bare disks"),
    (["raw"], "zvol", r"factors\.layout: every level is raw: that is a surface: raw sweep"),
    (["stripe", "raw"], "dataset", r"factors\.layout\[1\]: raw \(the bare disks\) is a layout of zvol sweeps"),
])
def test_raw_is_where_it_can_mean_something(layouts, surface, message):
    target = {"size": "64M"} if surface != "zvol" else {"volsize": "64M"}
    with pytest.raises(ConfigError, match=message):
        spec({"factors": {"layout": layouts, "disks": [2]}, "target": target}, surface=surface)
