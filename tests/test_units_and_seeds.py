"""Issue 45: the unit an answer speaks for, and each run's own random sequence, without a lab.

What a lab run shows (every attempt's randseed in its job file and row, a resume drawing the same) is
tests/test_until_steady.py's killed sweep, with real fio; here the plan, the rule and the sentences."""

from __future__ import annotations

import hashlib

import pandas as pd
import yaml

from zbench.result import Comparison
from zbench_lib.analysis.claims.caveats import unit_line
from zbench_lib.analysis.report.stamp import caveat_line
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.running.run_loop import _randseed
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

SPEC = {"question": "Do reruns of a cell draw their own offsets?", "surface": "zvol", "host": "lab",
        "lab": {"disks": 2, "disk_size": "1G", "model": "hdd", "extra_disks": 0},
        "factors": {"layout": ["stripe", "mirror"], "disks": [2], "volblocksize": ["16k"]},
        "target": {"volsize": "64M"}, "workloads": [{"name": "randread"}], "seed": 11}


def _plan(**top):
    return expand(parse_spec(yaml.safe_dump({**SPEC, **top}), name="seeds"))


def _sha(seed, run_id, attempt):
    return int.from_bytes(hashlib.sha256(f"{seed}:{run_id}:{attempt}".encode()).digest()[:6], "big")


def test_a_spec_without_a_repetitions_block_plans_three_pools_of_two_runs_each():
    p = _plan()
    assert p.spec.repetitions["pool_replicates"] == 3 and p.spec.repetitions["pilot"] == 2
    assert len(p.pools) == 2 * 3 and len(p.runs) == 2 * 3 * 2
    assert "units: 3 pools per configuration" in p.describe()


def test_runs_of_one_cell_get_different_seeds_and_the_plan_lists_them():
    p = _plan()
    runs = [r for r in p.to_dict()["runs"] if r["cell_id"] == p.cells[0].cell_id]
    assert len(runs) == 2 and runs[0]["randseed"] != runs[1]["randseed"]
    assert all(r["randseed"] == _sha(11, r["run_id"], 1) for r in runs)
    assert p.to_dict()["randseed"] == "per-run"
    cell = p.cells[0]
    assert _randseed(p.spec, cell, runs[0]["run_id"], 2) == {"randseed": _sha(11, runs[0]["run_id"], 2)}
    assert "each run draws its own random offsets" in p.describe()


def test_randseed_fixed_replays_the_workloads_seed_and_a_pinned_override_is_kept():
    p = _plan(randseed="fixed")
    assert all("randseed" not in r for r in p.to_dict()["runs"]) and p.to_dict()["randseed"] == "fixed"
    assert _randseed(p.spec, p.cells[0], p.runs[0].run_id, 1) == {}      # the job keeps randseed=1234
    assert "every run replays one random sequence" in p.describe()
    pinned = _plan(workloads=[{"name": "randread", "overrides": {"randseed": 7}}])
    assert _randseed(pinned.spec, pinned.cells[0], pinned.runs[0].run_id, 1) == {}
    assert pinned.cells[0].fio["randseed"] == 7


def test_a_bad_randseed_mode_is_refused_in_one_line():
    import pytest
    from zbench_lib.core.errors import ConfigError
    with pytest.raises(ConfigError, match=r"^randseed: expected 'per-run' .* or 'fixed' .*got 'sometimes'$"):
        _plan(randseed="sometimes")


def _rows(pools: int, runs: int, seeds: str = "own") -> pd.DataFrame:
    rows = []
    for cfg in ("c1", "c2"):
        for k in range(1, pools + 1):
            for rep in range(1, runs + 1):
                cid = f"{cfg}-pr{k}" if pools > 1 else cfg
                rows.append({"config_id": cid, "pool_replicate": k, "run_id": f"{cid}-r{rep:02d}", "iops": 100.0,
                             "randseed": 1234 if seeds == "fixed" else hash((cid, rep)) % 10 ** 9})
    return pd.DataFrame(rows)


def test_every_page_says_when_a_configuration_had_one_pool_and_when_runs_replayed_one_sequence():
    one = unit_line(_rows(1, 3))
    assert one.startswith("Every configuration was measured on one pool") and "not for the configurations" in one
    assert "replay" not in one
    assert unit_line(_rows(3, 1)).startswith("Units: 3 independently created pools per configuration")
    assert "replay one random sequence" in unit_line(_rows(1, 3, seeds="fixed"))
    assert "measured on one pool" in caveat_line(_rows(1, 3).assign(disk_model="hdd"))
    assert unit_line(pd.DataFrame({"iops": [1.0]})) == ""            # rows without the columns: nothing claimed


def test_a_comparison_of_one_pool_a_side_says_it_speaks_for_those_pools():
    one = Comparison("mirror", "raidz1", "iops", 2.0, 1.5, 2.5, 0.001, pools=(1, 1)).sentence()
    assert "higher" in one and "speaks for these pools, not for the configurations" in one
    three = Comparison("mirror", "raidz1", "iops", 2.0, 1.5, 2.5, 0.001, pools=(3, 3)).sentence()
    assert "3 and 3 pools as units" in three and "not for the configurations" not in three
