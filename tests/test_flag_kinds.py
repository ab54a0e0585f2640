"""Two kinds of flags (issue 27, item 1; docs/methods.md §7, §8): a flag that says the measurement
did not measure the system under test *invalidates* the run (excluded, replaced at run time); a flag
that says what the system did *describes* it (kept, counted, shown beside the estimate). First
attempts are the primary estimate; replacements and describing flags get a sensitivity line.

Every test here fails on the code before flag kinds: there every raised flag excluded and replaced
its run, replacements entered the estimate, and no check declared a kind. Expected values are
worked out by hand in the comments.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as sps

from zbench_lib import analysis as A
from zbench_lib.measure import truth
from zbench_lib.measure.judging import DESCRIBES, INVALIDATES
from zbench_lib.sweeps.running.executor import _schedule, run_target
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.planning.repetitions import RepetitionRule
from zbench_lib.sweeps.planning.schedule import outcome
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store
from zbench_lib.measure.run_context import RunFacts

ROOT = Path(__file__).resolve().parents[1]
K = 1024
# The kinds as docs/methods.md §7 gives them, written out here by hand (device_lost: outside a
# fault study / inside one).
EXPECTED = {"cache_served": "invalidates", "no_device_io": "invalidates", "write_amplification": "invalidates",
            "not_steady": "describes", "background_work": "invalidates", "compressible_data": "invalidates",
            "emulation_bound": "invalidates", "read_amplification": "describes", "host_contention": "invalidates",
            "device_lost": "invalidates", "slow_device": "describes"}


def _checks(**raised) -> dict:
    """Every check judged and passed, but those named True (raised)."""
    return {name: {"flag": bool(raised.get(name, False)), "reason": "by hand"} for name in truth.CHECKS}


def _row(fault_study=False, **raised) -> dict:
    """A run's write row as the results table has it: the columns come from truth.flag_columns."""
    return {"direction": "write", "iops": 100.0, **truth.flag_columns(_checks(**raised), fault_study=fault_study)}


# -- one registry: every check declares its kind ---------------------------------------------------

def test_every_flag_column_the_checks_produce_has_a_declared_kind():
    cols = truth.flag_columns(truth.truth_checks([], {}, RunFacts()))
    flags = [c.removeprefix("flag_") for c in cols if c.startswith("flag_")]
    assert flags == list(truth.CHECKS) and len(flags) == len(EXPECTED)
    for name in flags:                            # a check added without a kind fails here
        assert truth.kind_of(name) in (INVALIDATES, DESCRIBES), name
    assert {c.name: c.kind for c in truth.TRUTH_CHECKS} == EXPECTED
    assert [c.name for c in truth.TRUTH_CHECKS if c.in_fault_study] == ["device_lost"]
    assert set(A.FLAG_MEANINGS) == {f"flag_{n}" for n in EXPECTED}      # the analysis reads the same list


def test_methods_section_7_gives_every_check_its_kind():
    text = (ROOT / "docs" / "methods.md").read_text()
    section = text.split("## §7 ", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| \*\*(\w+)\*\*", section, re.M))
    assert rows == EXPECTED


def test_the_new_columns_are_documented():
    with open(ROOT / "docs" / "results-columns.csv", newline="") as fh:
        names = {r["name"] for r in csv.DictReader(fh)}
    assert set(truth.flag_columns(truth.truth_checks([], {}, RunFacts()))) <= names
    assert {"described_flags", "fault_study", "replacement"} <= names


# -- the row: flagged means an invalidating flag ----------------------------------------------------

def test_a_describing_flag_leaves_the_run_unflagged():
    row = _row(read_amplification=True, not_steady=True)
    assert row["flag_read_amplification"] is True and row["flagged"] is False
    assert (row["truth_flags"], row["described_flags"]) == ("", "not_steady,read_amplification")
    row = _row(host_contention=True, read_amplification=True)
    assert row["flagged"] is True and (row["truth_flags"], row["described_flags"]) == ("host_contention",
                                                                                      "read_amplification")


def test_device_lost_describes_inside_a_fault_study_and_invalidates_outside():
    assert truth.kind_of("device_lost") == INVALIDATES and truth.kind_of("device_lost", True) == DESCRIBES
    outside, inside = _row(device_lost=True), _row(fault_study=True, device_lost=True)
    assert (outside["flagged"], outside["truth_flags"], outside["fault_study"]) == (True, "device_lost", False)
    assert (inside["flagged"], inside["described_flags"], inside["fault_study"]) == (False, "device_lost", True)
    # the analysis reads the kind per row from fault_study
    df = pd.DataFrame([dict(run_id="a", flag_device_lost=True, fault_study=False),
                       dict(run_id="b", flag_device_lost=True, fault_study=True),
                       dict(run_id="c", flag_device_lost=True)])        # before fault_study: outside
    assert A.admissible_mask(df).tolist() == [False, True, False]


# -- run time: only invalidating flags replace a run ------------------------------------------------

def test_a_run_with_only_describing_flags_counts_toward_its_cell():
    o = outcome(1, [_row(read_amplification=True, slow_device=True)], "write", "iops")
    assert (o.admissible, o.value) == (True, 100.0)
    rule = RepetitionRule("fixed", 2, 2, None, 4)
    d = rule.decide([o, outcome(2, [_row(not_steady=True)], "write", "iops")])
    assert (d.add, d.stage, d.admissible, d.excluded) == (0, "done", 2, 0)        # nothing replaced


def test_an_invalidating_flag_still_excludes_and_is_replaced():
    o = outcome(1, [_row(host_contention=True, read_amplification=True)], "write", "iops")
    assert (o.admissible, o.why) == (False, "invalidated by host_contention")
    d = RepetitionRule("fixed", 2, 2, None, 4).decide([o, outcome(2, [_row()], "write", "iops")])
    assert (d.add, d.admissible, d.excluded) == (1, 1, 1)                          # one run queued in its place
    lost = outcome(1, [_row(device_lost=True)], "write", "iops")
    kept = outcome(1, [_row(fault_study=True, device_lost=True)], "write", "iops")
    assert (lost.admissible, kept.admissible) == (False, True)


def _plan(tmp_path):
    d = {"question": "Which runs does a sweep replace?", "surface": "zvol", "host": "lab",
         "lab": {"disks": 2, "disk_size": "1G", "model": "custom:iops=400,bw=100M", "extra_disks": 0},
         "factors": {"layout": ["stripe"], "disks": [2], "volblocksize": ["16k"]}, "target": {"volsize": "48M"},
         "workloads": [{"name": "randwrite", "overrides": {"runtime_s": 2, "ramp_time_s": 1}}],
         "repetitions": {"fixed": 3, "pool_replicates": 1, "max_attempts": 6, "metric": "iops"}, "seed": 5}
    text = yaml.safe_dump(d)
    plan = expand(parse_spec(text, name="kinds"))
    return plan, Store.create(tmp_path, text, plan, sweep_id="kinds")


def test_a_sweep_replaces_only_invalidated_runs_and_says_which_kind(tmp_path):
    plan, store = _plan(tmp_path)
    flags = {1: {"read_amplification": True}, 2: {"host_contention": True, "not_steady": True}}

    def parse_run(path, meta):
        return [_row(**json.loads((path / "flags.json").read_text()))]

    def run_one(run):                           # what measured_run does, with the rows of the flags above
        path = store.begin_attempt(run.run_id)
        (path / "flags.json").write_text(json.dumps(flags.get(run.rep, {})))
        store.complete_attempt(run.run_id, path, plan.run_meta(run))
        return parse_run(path, None), 1.0

    sched = _schedule(plan, store, parse_run)
    for t in plan.targets:
        run_target(store, sched, t.target_id, run_one)
    (cell,) = plan.cells
    reps = sorted(m["rep"] for _, _, m in store.completed_attempts())
    assert reps == [1, 2, 3, 4]                 # rep 2 invalidated, replaced once; rep 1 kept
    ev = [e for e in store.events() if e.get("cell_id") == cell.cell_id]
    (added,) = [e for e in ev if e["event"] == "runs added"]
    assert (added["why"], added["reps"]) == ("replace excluded runs", [4])
    (done,) = [e for e in ev if e["event"] == "repetitions done"]
    assert (done["admissible"], done["excluded"]) == (3, 1)
    assert done["excluded_runs"] == [{"rep": 2, "why": "invalidated by host_contention"}]
    store.close()


# -- analysis: describing flags stay in the estimate, first attempts are primary ---------------------

def _blocks(flagged_4k: dict) -> pd.DataFrame:
    """raidz1 randwrite at 4K (IOPS 100, 102, 98, 80, 82) and 16K (50, 51, 49, 50, 50); `flagged_4k`
    maps a 4K rep to the flag raised on it."""
    rows = []
    for vbs, iops in ((4 * K, [100, 102, 98, 80, 82]), (16 * K, [50, 51, 49, 50, 50])):
        for rep, x in enumerate(iops, 1):
            flag = flagged_4k.get(rep) if vbs == 4 * K else None
            rows.append(dict(layout="raidz1", width=6, vdevs=1, data_disks=5, total_disks=6, volblocksize_bytes=vbs,
                             workload="randwrite", template="randwrite", direction="write", cell_id=f"c{vbs}",
                             run_id=f"c{vbs}-r0{rep}", rep=rep, iops=float(x),
                             flag_read_amplification=flag == "read_amplification",
                             flag_host_contention=flag == "host_contention"))
    return pd.DataFrame(rows)


def test_a_describing_flag_does_not_exclude_a_run_in_the_analysis():
    df = _blocks({4: "read_amplification", 5: "read_amplification"})
    df["flagged"] = True                          # as a dataset written before flag kinds says: ignored
    ok = A.select_admissible(df)
    assert len(ok) == 10 and ok[ok["volblocksize_bytes"] == 4 * K]["iops"].mean() == pytest.approx(92.4)
    st = A.cell_status(df).set_index("volblocksize_bytes")
    assert st.loc[4 * K, "status"] == "judged: 5 of 5 runs admissible"
    assert st.loc[4 * K, "described"] == "read_amplification 2 of 5 runs" and st.loc[16 * K, "described"] == ""
    cmp = A.compare_table(ok, "iops", "volblocksize_bytes", 16 * K, all_runs=df, cells=st.reset_index())
    r = cmp.iloc[0]
    assert r["ratio"] == pytest.approx(92.4 / 50) and r["verdict"] == "higher"
    assert r["described"] == "4K: read_amplification 2 of 5 runs"
    # without the two slow runs the 4K mean is 100: ratio 2.00, the verdict unchanged
    assert r["sensitivity_described_ratio"] == pytest.approx(2.0)
    assert r["sensitivity"] == "unchanged with runs with describing flags left out"
    (line,) = [t for t in A.conclusions_compare(cmp) if t.startswith("volblocksize_bytes=4K")]
    assert "Runs kept with describing flags: 4K: read_amplification 2 of 5 runs." in line
    assert "Sensitivity: unchanged with runs with describing flags left out." in line
    t = A.truth_summary(df).set_index("flag")
    assert t.loc["flag_read_amplification", "kind"] == "describes"
    assert t.loc["flagged", "raised"] == 0 and t.loc["described", "raised"] == 2


def test_an_invalidating_flag_still_excludes_in_the_analysis():
    df = _blocks({4: "host_contention", 5: "host_contention"})
    ok = A.select_admissible(df)
    assert len(ok) == 8 and ok[ok["volblocksize_bytes"] == 4 * K]["iops"].mean() == pytest.approx(100.0)
    st = A.cell_status(df).set_index("volblocksize_bytes")
    assert st.loc[4 * K, "status"] == "judged: 3 of 5 runs admissible, 2 excluded (host_contention 2)"
    assert A.flagged_runs(df)["flags"].tolist() == ["host_contention"] * 2


def _sweep_with_a_replacement(tmp_path) -> Path:
    """Cell c4 (4K) planned reps 1-3: rep 1 invalidated (500 IOPS, host contention) and replaced by
    rep 4 (130); reps 2 and 3 give 100 and 110. Cell c16 (16K): 50, 52, 48."""
    p = tmp_path / "sweep"
    p.mkdir()
    cells, runs, rows = [], [], []
    for cid, vbs, iops in (("c4", 4 * K, [500, 100, 110, 130]), ("c16", 16 * K, [50, 52, 48])):
        factors = dict(layout="raidz1", width=6, vdevs=1, data_disks=5, total_disks=6, volblocksize_bytes=vbs,
                       workload="randwrite", template="randwrite")
        cells.append(dict(cell_id=cid, pool_id="p01", target_id=f"t{vbs}", workload="randwrite",
                          template="randwrite", factors=factors))
        for rep, x in enumerate(iops, 1):
            if rep <= 3:
                runs.append(dict(cell_id=cid, rep=rep, run_id=f"{cid}-r0{rep}"))
            rows.append(dict(factors, sweep="s", cell_id=cid, run_id=f"{cid}-r0{rep}", rep=rep, direction="write",
                             iops=float(x), flag_host_contention=cid == "c4" and rep == 1, flag_not_steady=False))
    (p / "plan.json").write_text(json.dumps(dict(sweep="s", cells=cells, runs=runs)))
    pd.DataFrame(rows).to_parquet(p / "results.parquet")
    (p / "events.jsonl").write_text(json.dumps({"event": "runs added", "cell_id": "c4", "why": "replace excluded runs",
                                                "reps": [4], "run_ids": ["c4-r04"]}) + "\n")
    return p


def test_first_attempts_are_the_estimate_and_replacements_a_sensitivity_line(tmp_path):
    sw = A.load_sweep(_sweep_with_a_replacement(tmp_path))
    assert sw.results.set_index("run_id")["replacement"].to_dict() == {
        "c4-r01": False, "c4-r02": False, "c4-r03": False, "c4-r04": True,
        "c16-r01": False, "c16-r02": False, "c16-r03": False}
    ok = A.select_admissible(sw.results)
    assert sorted(ok["run_id"]) == ["c16-r01", "c16-r02", "c16-r03", "c4-r02", "c4-r03"]
    st = A.cell_status(sw.results, sw.plan).set_index("cell_id")
    assert (st.loc["c4", "runs"], st.loc["c4", "replacements"]) == (3, 1)
    assert st.loc["c4", "status"] == ("judged: 2 of 3 runs admissible, 1 excluded (host_contention 1), "
                                      "1 replacement run left out of the estimate")
    cmp = A.compare_table(ok, "iops", "volblocksize_bytes", 16 * K, all_runs=sw.results, cells=st.reset_index())
    r = cmp.iloc[0]
    # first attempts: 4K mean (100 + 110) / 2 = 105 against 50: 2.10; with the replacement,
    # (100 + 110 + 130) / 3 = 113.33: 2.267; with the invalidated first attempt, (500 + 100 + 110) / 3
    # = 236.67: 4.733
    assert r["ratio"] == pytest.approx(2.1)
    assert r["sensitivity_replacements_ratio"] == pytest.approx(340 / 3 / 50)
    assert r["sensitivity_flagged_ratio"] == pytest.approx(710 / 3 / 50)
    assert r["sensitivity_replacements_label"] == "replacement runs included"
    # the flagged alternative's p: Welch on the log moments (methods §2), a family of one (Holm p = p)
    a, b = np.array([500.0, 100.0, 110.0]), np.array([50.0, 52.0, 48.0])
    p = sps.ttest_ind_from_stats(math.log(a.mean()), a.std(ddof=1) / a.mean(), 3,
                                 math.log(b.mean()), b.std(ddof=1) / b.mean(), 3, equal_var=False).pvalue
    assert 0.05 < p < 0.2 and (r["verdict"], r["sensitivity_replacements_verdict"]) == ("higher", "higher")
    assert r["sensitivity"] == (f"with flagged runs included: inconclusive (ratio 4.73, Holm p {p:.2f}); "
                                "unchanged with replacement runs included")
    with_repl = A.select_admissible(sw.results, replacements=True)
    assert sorted(with_repl["run_id"]) == sorted(list(ok["run_id"]) + ["c4-r04"])


# -- the registry: each check's module declares its columns; the table keeps its order ---------------

# results.parquet's truth columns as flag_columns wrote them before the registry (their order too).
COLUMNS = ["flag_cache_served", "flag_no_device_io", "flag_write_amplification", "flag_not_steady",
           "flag_background_work", "flag_compressible_data", "flag_emulation_bound", "flag_read_amplification",
           "flag_host_contention", "flag_device_lost", "flag_slow_device", "write_amplification",
           "pool_write_amplification", "write_amplification_high", "read_amplification", "read_amplification_expected",
           "dev_to_fio_read_ratio", "arc_hit_ratio", "arc_demand_data_hit_ratio", "steady_range_pct",
           "steady_slope_pct", "steady_samples", "steady_noise_pct", "steady_range_limit_pct",
           "steady_slope_limit_pct", "steady_round_s", "steady_pulse_s", "host_other_cores", "host_qemu_cores",
           "host_other_qemus", "host_lab_wait_share", "host_lab_run_cores",
           "host_steal_share",            "quiet_layers", "pool_capacity_pct", "pool_fragmentation_pct", "flagged",
           "truth_flags", "described_flags", "fault_study", "not_judged", "checks_judged", "checks_not_judged"]


def test_the_registry_gives_the_columns_in_their_order():
    cols = truth.flag_columns(truth.truth_checks([], {}, RunFacts()))
    assert list(cols) == COLUMNS
    assert (cols["steady_samples"], cols["write_amplification_high"], cols["quiet_layers"]) == (0, False, "fio")
    assert [c.rank for c in truth.TRUTH_CHECKS] == sorted(c.rank for c in truth.TRUTH_CHECKS)


def test_a_comparison_whose_every_run_was_excluded_is_not_judged_not_a_crash():
    # the demo beside a helper's unit tests: host contention excluded most runs, so no planned
    # comparison was judged; compare_table raised KeyError 'ratio' and the notebook failed
    df = _blocks({r: "host_contention" for r in range(1, 6)})
    ok = A.select_admissible(df)
    st = A.cell_status(df)
    cmp = A.compare_table(ok, "iops", "volblocksize_bytes", 16 * K, all_runs=df, cells=st)
    assert len(cmp) == 1 and cmp.iloc[0]["verdict"].startswith("not judged")
    assert cmp[["ratio", "ratio_ci_low", "ratio_ci_high", "holm_p"]].isna().all().all()
