"""The first screen answers the question the spec asks (issue 52 item 1): the study along the factor the question
names first, and a baseline that has admissible units to be compared with.

The runs are SYNTHETIC (`synthetic.write_synthetic_sweep`, the demo's design: stripe, mirror and raidz1 of four
disks at 8K and 64K volblocksize); the question is the demo template's own."""

import pytest
import yaml

from zbench_lib import analysis as A
from zbench_lib.analysis.data.synthetic import FLAGS, write_synthetic_sweep
from zbench_lib.analysis.report.headline import study_headline
from zbench_lib.core.paths import REPO_ROOT

DEMO_QUESTION = " ".join(yaml.safe_load((REPO_ROOT / "templates/sweeps/demo.yaml").read_text())["question"].split())


@pytest.fixture
def demo(tmp_path):
    """A sweep of the demo's design, 5 runs a cell, no run flagged, asking the demo's question."""
    sweep = A.load_sweep(write_synthetic_sweep(tmp_path / "demo", n_rows=60, seed=1, shape="demo"))
    sweep.results[list(FLAGS)] = False
    return sweep._replace(spec={**sweep.spec, "question": DEMO_QUESTION})


def _asking(sweep, question):
    return sweep._replace(spec={**sweep.spec, "question": question})


def test_the_demo_question_is_answered_along_layouts(demo):
    # before, block size came before layout in STUDY_TYPES: the demo's first screen answered 8K against 64K
    # inside each layout, although its question asks how stripe, mirror and raidz1 compare
    assert "stripe, mirror and raidz1 compare" in DEMO_QUESTION and "volblocksize" in DEMO_QUESTION
    h = study_headline(demo, A.select_admissible(demo.results))
    assert h["kind"] == "factor"
    assert [a["subject"] for a in h["answers"]] == [f"{w} {b} (IOPS)" for w in ("randread", "randwrite")
                                                    for b in ("8K", "64K")]      # block size held equal
    for a in h["answers"]:
        assert a["text"].startswith("against layout stripe: mirror ") and "; raidz1 " in a["text"], a["text"]


def test_a_question_naming_the_block_size_first_or_no_factor_keeps_the_block_study(demo):
    adm = A.select_admissible(demo.results)
    for question in ("For VM disks, how do 8k and 64k volblocksize compare on stripe, mirror and raidz1?",
                     "What do these runs show?"):          # names no factor: STUDY_TYPES' order, as before
        h = study_headline(_asking(demo, question), adm)
        assert h["kind"] == "block", question
        assert h["answers"][0]["text"].startswith("against volblocksize 64K: 8K ")


@pytest.mark.parametrize("question, factor", [
    (DEMO_QUESTION, "layout"),
    ("how do 8K and 64K blocks compare on mirrors and raidz1?", "volblocksize_bytes"),   # a level, not the name
    ("which volblocksize suits a mirror?", "volblocksize_bytes"),                        # the name
    ("how do mirrors compare with raidz1 at each volblocksize?", "layout"),              # a plural level
    ("on four disks, with 4k reads, at depth 16?", None),      # bare numbers, and factors that do not vary
    ("a stripey sync-free raidz10?", None),                    # whole words only
])
def test_the_factor_a_question_names_first(demo, question, factor):
    from zbench_lib.analysis.report.compare_factor import question_factor
    assert question_factor(question, A.select_admissible(demo.results)) == factor


def _excluded(sweep, mask):
    """`sweep` with the runs of `mask` excluded, as the truth checks exclude them (cache_served invalidates)."""
    sweep.results.loc[mask, "flag_cache_served"] = True
    return sweep


@pytest.mark.parametrize("left, reason", [
    # the demo's own case: host contention left stripe one run a cell, no interval (4 of 12 cells)
    (1, "stripe had fewer than 2 admissible runs in each cell (an interval needs 2): mirror is the baseline"),
    (0, "stripe had no admissible run: mirror is the baseline"),
])
def test_a_baseline_without_admissible_units_gives_way_to_the_measured_levels(demo, left, reason):
    # before, stripe stayed the baseline: every layout comparison read "not judged" and mirror against raidz1,
    # both measured, was never compared (or, with no stripe run left, mirror was taken without a word)
    r = demo.results
    sweep = _excluded(demo, (r["layout"] == "stripe") & (r["rep"] > left))
    adm = A.select_admissible(sweep.results)
    h = study_headline(sweep, adm)
    assert h["answers"][0] == {"subject": "Baseline", "text": f"{reason} (methods §9)."}
    for a in h["answers"][1:]:
        assert a["text"].startswith("against layout mirror: raidz1 "), a["text"]
        verdict = a["text"].split("; stripe")[0].removeprefix("against layout mirror: raidz1 ")
        assert verdict.endswith(("higher", "lower")) and "not judged" not in verdict, a["text"]
    # the compare notebook takes the same baseline, and its table judges raidz1 against mirror
    assert A.comparison_choice(adm) == ("layout", "mirror")
    cmp = A.compare_table(adm, "auto", "layout", "mirror", cells=A.cell_status(sweep.results))
    raidz1 = cmp[cmp["level"] == "raidz1"]
    assert len(raidz1) == 4 and raidz1["ratio_ci_low"].notna().all()
    assert raidz1["verdict"].isin(["higher", "lower"]).all()


def test_a_usual_baseline_judged_in_some_cells_stays_the_baseline(demo):
    # stripe lost its runs at 64K only: it is still judged at 8K, so it stays the baseline (no word about it)
    r = demo.results
    sweep = _excluded(demo, (r["layout"] == "stripe") & (r["volblocksize_bytes"] == 65536))
    h = study_headline(sweep, A.select_admissible(sweep.results))
    assert all(a["subject"] != "Baseline" for a in h["answers"])
    assert all(a["text"].startswith("against layout stripe: ") for a in h["answers"])
