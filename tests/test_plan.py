"""Plan expansion: counted on small specs, nothing runs (the repetition rule: test_repetitions.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from zbench_lib.core.errors import ZbenchError
from zbench_lib.sweeps.planning.estimate import (BOOT_S, LAB_WRITE_CEILING, POOL_CREATE_S, RUN_OVERHEAD_S,
                                                 TARGET_CREATE_S)
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import load_spec, parse_spec

SWEEPS = Path(__file__).resolve().parent.parent / "templates" / "sweeps"
MiB = 1024 ** 2


def spec(**changes):
    d = {"question": "How do small layouts compare here?", "surface": "zvol", "host": "lab",
         "lab": {"disks": 4, "disk_size": "1G", "model": "custom:iops=100,bw=100M", "extra_disks": 0},
         "factors": {"layout": ["stripe", "mirror", "raidz1"], "disks": [4], "volblocksize": ["8k", "64k"]},
         "target": {"volsize": "64M"},
         "workloads": [{"name": "randread", "overrides": {"runtime_s": 10, "ramp_time_s": 2}},
                       {"name": "randwrite", "overrides": {"runtime_s": 10, "ramp_time_s": 2}}],
         "repetitions": {"min": 2, "max": 4}, "seed": 5}
    for k, v in changes.items():
        node, *rest = k.split(".")
        if rest:
            d[node][rest[0]] = v
        else:
            d[k] = v
    return parse_spec(yaml.safe_dump(d), name="t")


def test_demo_counts():
    p = expand(load_spec(SWEEPS / "demo.yaml"))
    # issue 45: three pools per layout, one run on each (was 3 runs on one pool: the same 36 runs)
    assert (len(p.cells), len(p.skipped), len(p.pools), len(p.targets), len(p.runs)) == (36, 0, 9, 18, 36)
    assert [pl.label for pl in p.pools] == ["stripe(4)", "2x mirror(2)", "1x raidz1(4)"] * 3
    assert sorted(pl.pool_replicate for pl in p.pools) == [1] * 3 + [2] * 3 + [3] * 3
    # a fixed design of 1: no adaptive extras, an excluded run replaced up to 3 attempts a cell
    assert p.estimates["runs"] == 36 and p.estimates["runs_max"] == 36 and p.estimates["attempts_max"] == 108
    assert 8 * 60 < p.estimates["wall_s"] < 20 * 60        # `make demo` budget


def test_scaling_skips_impossible_combinations_with_reasons():
    p = expand(load_spec(SWEEPS / "scaling.yaml"))
    # stripe 2..8 (7), mirror 2,4,6,8 (4), raidz1 2..8 (7), raidz2 3..8 (6), x 2 workloads
    assert len(p.cells) == 3 * 2 * (7 + 4 + 7 + 6) and len(p.pools) == 3 * 24     # three pool replicates
    assert len(p.skipped) == 2 * 4 and len(p.runs) == len(p.cells)   # fixed: 1 on each pool
    reasons = {(s["factors"]["layout"]["family"], s["factors"]["disks"]): s["reason"] for s in p.skipped}
    assert "raidz2 needs width >= 3" in reasons[("raidz2", 2)]
    assert reasons[("mirror", 3)] == "mirror of 2-way vdevs cannot use 3 disks (3 is not a multiple of 2)"
    assert {c.factors["data_disks"] for c in p.cells if c.factors["layout"] == "raidz2"} == {1, 2, 3, 4, 5, 6}


@pytest.mark.parametrize("path", sorted(SWEEPS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_spec_expands(path):
    p = expand(load_spec(path))
    assert p.cells and p.runs and p.estimates["wall_s"] > 0
    assert len({r.run_id for r in p.runs}) == len(p.runs)
    json.loads(p.to_json())
    assert p.describe().startswith(f"sweep {p.spec.name!r}")


def test_sync_slog_uses_the_extra_disk_as_log():
    p = expand(load_spec(SWEEPS / "sync-slog.yaml"))
    assert sorted(pl.layout["log"] for pl in p.pools) == [0, 0, 0, 1, 1, 1]     # three pool replicates each
    assert len(p.cells) == 2 * 3 * 2 * 2 * 3 and len(p.targets) == 2 * 3 * 2 * 3


def test_layouts_beyond_the_lab_are_skipped():
    p = expand(spec(**{"factors": {"layout": ["stripe"], "disks": [2, 6], "log": [0, 1]}}))
    assert len(p.cells) == 2 and len(p.skipped) == 6
    assert {s["reason"] for s in p.skipped} == {
        "stripe(6) needs 6 data disks but the host has 4",
        "stripe(2) + log(1) needs 1 extra disk(s) for log/cache/special but the host has 0",
        "stripe(6) + log(1) needs 6 data disks but the host has 4"}


def test_target_that_does_not_fit_and_fio_refusals_are_skipped():
    p = expand(spec(**{"factors": {"layout": ["stripe"], "disks": [1, 4]}, "target.volsize": "2G"}))
    assert [s["reason"] for s in p.skipped][0] == "target of 2G does not fit in stripe(1) (about 1G usable)"
    p = expand(spec(**{"factors": {"layout": ["stripe"], "bs": ["4k", "16M"]}, "target.volsize": "8M"}))
    assert len(p.cells) == 2 and len(p.skipped) == 2
    assert "size (8388608 bytes) is smaller than bs" in p.skipped[0]["reason"]


def test_mirror_width_and_dedup_for_other_families():
    p = expand(spec(**{"lab.disks": 6, "factors": {"layout": ["mirror", "raidz1"], "disks": [6],
                                                   "mirror_width": [2, 3]}}))
    assert sorted(pl.label for pl in p.pools) == ["1x raidz1(6)", "2x mirror(3)", "3x mirror(2)"]
    assert len(p.cells) == 3 * 2


def test_pools_and_targets_are_shared():
    p = expand(spec())
    assert len(p.pools) == 3 and len(p.targets) == 6 and len(p.cells) == 12
    for t in p.targets:
        cells = [c for c in p.cells if c.target_id == t.target_id]
        assert {c.workload for c in cells} == {"randread", "randwrite"}
        assert t.target_id.startswith(t.pool_id + "-t")


def test_run_ids_are_stable_across_reexpansion_and_spec_growth():
    a, b = expand(spec()), expand(spec())
    assert [r.run_id for r in a.runs] == [r.run_id for r in b.runs] and a.to_json() == b.to_json()
    assert all(r.run_id.startswith(r.cell_id) and r.run_id[-4:] in ("-r01", "-r02") for r in a.runs)
    grown = expand(spec(**{"factors": {"layout": ["stripe", "mirror", "raidz1", "raidz2"], "disks": [4],
                                       "volblocksize": ["8k", "64k", "16k"]}}))
    assert {c.cell_id for c in a.cells} < {c.cell_id for c in grown.cells}


def test_order_pool_by_pool_reads_first_and_seeded():
    p = expand(spec())
    pools = [r.pool_id for r in p.runs]
    assert pools == sorted(pools, key=lambda x: pools.index(x))          # each pool contiguous
    assert list(dict.fromkeys(pools)) == p.blocks[0] and sorted(p.blocks[0]) == ["p01", "p02", "p03"]
    assert [r.order for r in p.runs] == list(range(len(p.runs)))
    for t in p.targets:
        kinds = [p.cell(r.cell_id).reads_only for r in p.runs if r.target_id == t.target_id]
        assert kinds == sorted(kinds, reverse=True)                         # reads, then writes
    other = expand(spec(seed=6))
    assert [r.run_id for r in other.runs] != [r.run_id for r in p.runs]
    assert sorted(r.run_id for r in other.runs) == sorted(r.run_id for r in p.runs)


def test_as_written_order_without_reads_first():
    s = spec(order="as-written", reads_first=False,
             workloads=[{"name": "randwrite", "overrides": {"runtime_s": 10, "ramp_time_s": 2}}, "randread"])
    p = expand(s)
    assert [p.cell(r.cell_id).workload for r in p.runs[:4]] == ["randwrite", "randwrite", "randread", "randread"]
    assert [r.rep for r in p.runs[:4]] == [1, 2, 1, 2]


def test_estimates_by_hand():
    s = spec(**{"lab.disks": 2, "factors": {"layout": ["stripe"], "disks": [2]}})
    p = expand(s)
    e = p.estimates
    prefill_s = round(64 * MiB / min(2 * 100 * MiB, LAB_WRITE_CEILING["no parity"]), 1)   # the lab's ceiling binds
    run_s = 2 + 10 + RUN_OVERHEAD_S
    assert e["prefill_bytes"] == 64 * MiB
    assert e["wall_s"] == pytest.approx(BOOT_S + POOL_CREATE_S + TARGET_CREATE_S + prefill_s + 2 * 2 * run_s)
    assert e["wall_max_s"] == pytest.approx(BOOT_S + POOL_CREATE_S + TARGET_CREATE_S + prefill_s + 4 * 2 * run_s)
    attempts = s.repetitions["max_attempts"]          # every run excluded and replaced
    assert attempts > 4 and e["wall_attempts_max_s"] == pytest.approx(
        BOOT_S + POOL_CREATE_S + TARGET_CREATE_S + prefill_s + attempts * 2 * run_s)
    # randwrite 4k: min(2 x 100 MiB/s, 2 x 100 IOPS x 4 KiB) x (ramp + runtime) per run; randread writes nothing
    per_run = 2 * 100 * 4096 * 12
    assert e["bytes_written"] == 64 * MiB + 2 * per_run and e["bytes_written_max"] == 64 * MiB + 4 * per_run
    assert e["measure_s"] == 2 * 2 * 10
    summary = p.summary()
    assert len(summary) == 2 and summary["est_bytes_written"].tolist() == [0, 2 * per_run]


def test_percentage_prefill_and_no_prefill():
    p = expand(spec(**{"factors": {"layout": ["stripe"], "disks": [1]}, "prefill": {"fill": "5%"}}))
    assert p.targets[0].prefill_bytes == 64 * MiB          # the target whole; the filler tops the pool up
    p = expand(spec(**{"factors": {"layout": ["stripe"], "disks": [1]}, "prefill": {"policy": "none"}}))
    assert p.estimates["prefill_bytes"] == 0


def test_mixed_workload_writes_its_write_share():
    p = expand(spec(**{"factors": {"layout": ["stripe"], "disks": [1]},
                       "workloads": [{"name": "mixed", "overrides": {"runtime_s": 10, "ramp_time_s": 2}}]}))
    assert p.cells[0].write_bytes_per_run == int(0.3 * 100 * 8192 * 12)


def test_extra_runs_and_run_meta():
    p = expand(spec())
    c = p.cells[0]
    extra = p.extra_run(c.cell_id, 3)
    assert extra.run_id == f"{c.cell_id}-r03" and extra.order is None
    assert p.extra_run(c.cell_id, 12).run_id == f"{c.cell_id}-r12"   # beyond max: replacements
    with pytest.raises(ZbenchError, match=r"rep 2 is not an added repetition \(planned reps are 1..2"):
        p.extra_run(c.cell_id, 2)
    meta = p.run_meta(p.runs[0])
    assert meta["order_index"] == 0 and meta["factors"]["volsize_bytes"] == 64 * MiB
    assert meta["pool_replicate"] == 1 and meta["pool_id"] == p.runs[0].pool_id \
        and meta["base_cell_id"] == p.runs[0].cell_id
    assert set(meta["factors"]) >= {"layout", "width", "vdevs", "data_disks", "ashift", "volblocksize_bytes",
                                    "workload", "iodepth", "numjobs", "bs_bytes"}


def test_describe_mentions_the_numbers():
    text = expand(spec(**{"factors": {"layout": ["raidz2", "stripe"], "disks": [2]}})).describe()
    assert "cells: 2 (2 skipped), pools: 1, targets: 1" in text
    assert "runs: 4 planned (2 per cell), up to 8 by Stein's two-stage rule (pilot 2, max 4" in text
    assert "excluded runs replaced up to 6 attempts per cell" in text and "skipped randread" in text


def test_fill_as_a_factor_gives_each_level_its_own_pools():
    p = expand(spec(**{"factors": {"layout": ["stripe", "mirror"], "disks": [2], "fill": ["none", "whole", "50%"]},
                       "prefill": {"fill": "whole"}}))
    assert len(p.pools) == 2 * 3 and sorted(x.fill for x in p.pools) == ["50%", "50%", "none", "none",
                                                                                   "whole", "whole"]
    assert {c.factors["fill"] for c in p.cells} == {"none", "whole", "50%"}
    fills = {x.pool_id: x.fill for x in p.pools}
    for t in p.targets:    # never-written targets cost no prefill; the others are written whole
        assert t.prefill_bytes == (0 if fills[t.pool_id] == "none" else 64 * MiB)
    # without the factor, nothing about the plan changes (no fill column, the same cell ids)
    plain = expand(spec(**{"factors": {"layout": ["stripe"], "disks": [2]}}))
    assert all("fill" not in c.factors for c in plain.cells) and all(x.fill is None for x in plain.pools)


def test_a_parity_layout_prefills_at_the_labs_parity_ceiling():
    # measured: a TCG lab writes a raidz2 at about 21 MiB/s, whatever its disks' models allow
    p = expand(spec(**{"lab.disks": 6, "factors": {"layout": ["raidz2"], "disks": [6]}}))
    (t,) = p.targets
    assert t.prefill_s == round(t.prefill_bytes / LAB_WRITE_CEILING["parity"], 1)


def test_describe_says_when_a_write_window_is_too_short_for_the_steady_check():
    text = expand(spec()).describe()         # 10 s windows
    assert "randwrite: its windows of 10 s are short for the steady-state check" in text
    assert "randread: its windows" not in text       # reads are judged per second, not on the lab's write noise
    long = {"name": "randwrite", "overrides": {"runtime_s": 300, "ramp_time_s": 2}}
    assert "steady-state check" not in expand(spec(workloads=[long])).describe()
