"""plan.json byte for byte as before: a resume compares the stored plan.json with a new expansion.

``data/plan_golden/sha256.json`` holds the sha256 of ``expand(spec).to_json()`` for every spec in
the repository (templates/sweeps, tests/specs, data/examples), computed by the code at 2e03b89,
before the plan's cells, pools and targets became typed records (issue 28). Every spec there
plans offline (a lab spec names its disks; a host spec is not read before the sweep), so none
is skipped. Regenerate a row only when that spec, or what a plan holds, is changed on purpose, and
with the untyped code: tests/specs/fault-slow.yaml's row is that of a2aa5a1 (its dirty cap became 4M).
templates/sweeps/latency-vs-load.yaml's row changed on purpose when a write probe came to measure its
cell's own window (methods §21: a 10 s write probe overestimated what the pool sustains): its randwrite
cells' probe_s 16 -> 46 s and the estimate's probes_s and wall times with them, and its bytes written
by what those probes write (as much as a saturation run each; no probe's writes were counted before),
nothing else. That row was computed by the code of that change (the typed planner), not by an
independent one: it pins the plan against later drift, it does not check the change itself
(tests/test_load.py does, by hand).
Issue 44 changed eight template rows on purpose, each checked field by field against the plan the
current code makes of the template as it was at 39032e7: iodepth-curve, iodepth-hdd and
latency-vs-load only in `repetitions.metric` (clat_p99_ns -> lat_p99_ns); iscsi-clients and
nfs-clients only in their cells' `fio.ioengine` and `fio.direct` (the I/O path declared); nfs-datastore,
slog-l2arc-special and sync-slog in both, nothing else. The two io-path test specs are new, their rows
computed by the planner of that change.
Issue 45 changed every row on purpose: plan.json gained `randseed` ("per-run") and each run its first
attempt's `randseed`, and the templates without pool replicates now state 3 (iodepth-curve and resilver
with 2 runs on each, the others 1). Checked spec by spec: with those keys removed, the new plan of every
spec equals the plan the code at c138938 makes of the same spec text, except data/examples/iodepth-curve,
whose spec states no pool_replicates and so plans the new default of three pools.
Issue 46 changed latency-vs-load's row on purpose: 5 pool replicates instead of 3 (the knee rule's power,
benchmarks/knee_power.py). Checked: its text with 3 put back plans the earlier row's sha256 exactly, and
the 60 cells of that plan are among the 100 of the new one, each the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.planning.records import Cell, PlanPool, Target
from zbench_lib.sweeps.spec.sweep_spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests" / "data" / "plan_golden" / "sha256.json").read_text())
SPECS = sorted((ROOT / "templates" / "sweeps").glob("*.yaml")) + sorted((ROOT / "tests" / "specs").glob("*.yaml")) \
    + sorted((ROOT / "data" / "examples").glob("*/spec.yaml"))


def test_every_spec_has_a_golden_plan():
    assert sorted(str(p.relative_to(ROOT)) for p in SPECS) == sorted(GOLDEN)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_plan_json_is_byte_identical_to_the_golden(path):
    text = expand(load_spec(path)).to_json()
    assert hashlib.sha256(text.encode()).hexdigest() == GOLDEN[str(path.relative_to(ROOT))]


# --- the records plan.json holds ---------------------------------------------------------------------

@pytest.mark.parametrize("cls, attr", [(Cell, "cells"), (PlanPool, "pools"), (Target, "targets")])
def test_every_record_reads_back_from_its_dict_and_refuses_a_key_it_does_not_know(cls, attr):
    for path in SPECS:
        for record in getattr(expand(load_spec(path)), attr):
            d = record.to_dict()
            assert isinstance(record, cls) and cls.from_dict(d) == record and cls.from_dict(d).to_dict() == d
    with pytest.raises(TypeError, match="unexpected keyword argument 'newkey'"):
        cls.from_dict({**d, "newkey": 1})


def test_a_cells_dicts_are_copied_in_and_out():
    d = expand(load_spec(SPECS[0])).cells[0].to_dict()
    cell = Cell.from_dict(d)
    d["factors"]["layout"], cell.to_dict()["fio"]["bs"] = "changed", "changed"
    assert cell.factors["layout"] != "changed" and cell.fio.get("bs") != "changed"
