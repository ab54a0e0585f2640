"""The report of a sweep with the load factor (methods §21): a "Latency at a stated load" section with the
latency-vs-load figure and a sentence per curve, and first-screen answers that state the load each
percentile was measured at. A SYNTHETIC store (the synthetic scaling table's rows, one configuration, given
load levels and hand-made fio histograms) renders the index page alone: no notebook applies, none runs.
A sweep without the factor has no section (tests/test_report.py renders those)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from zbench_lib.analysis.data.flags import select_admissible
from zbench_lib.analysis.data.synthetic import synthetic_results, write_synthetic_sweep
from zbench_lib.analysis.data.sweep_data import Sweep
from zbench_lib.analysis.report.headline import study_headline
from zbench_lib.analysis.report.load_section import load_section
from zbench_lib.analysis.report.report import render_report

MS = 2 ** 20                # a fio bin's lower edge: the p99 bin [2^20, 2^20 + 2^14) ns
P99 = {"0.25": MS, "0.5": MS, "0.9": 8 * MS, "saturation": 16 * MS}
OFFERED = {"0.25": 50.0, "0.5": 100.0, "0.9": 180.0, "saturation": None}


def _load_rows(df: pd.DataFrame, vbs=(None,)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One configuration of the synthetic table at each load (3 runs a level, volblocksizes `vbs`), and
    each run's histogram: 600 I/Os at 2^19 ns, 390 at the level's p99 key, 10 at 2^25 ns."""
    base = df[(df["layout"] == df["layout"].iloc[0]) & (df["total_disks"] == df["total_disks"].iloc[0])
              & (df["workload"] == df["workload"].iloc[0])].iloc[0]
    rows, hist = [], []
    for v in vbs:
        for load, key in P99.items():
            for rep in range(3):
                run_id = f"load-{v}-{load}-r{rep}"
                offered = OFFERED[load]
                r = {**base.to_dict(), "run_id": run_id, "rep": rep + 1, "load": load, "iops": offered or 200.0,
                     "total_ios": 1000, "config_id": f"c-{v}-{load}", "offered_iops": offered,
                     "load_achieved": None if offered is None else 1.0,
                     "load_fraction": None if offered is None else offered / 200.0}
                if v is not None:
                    r["volblocksize_bytes"] = v
                rows.append(r)
                hist += [{"run_id": run_id, "attempt": 1, "direction": base["direction"], "bin_ns": b, "count": n}
                         for b, n in ((2 ** 19, 600), (key, 390), (2 ** 25, 10))]
    out = pd.DataFrame(rows).reset_index(drop=True)
    out["attempt"] = 1
    return out, pd.DataFrame(hist)


def rows_workload(path) -> str:
    return str(pd.read_parquet(path / "results.parquet")["workload"].iloc[0])


@pytest.fixture(scope="module")
def load_store(tmp_path_factory):
    path = write_synthetic_sweep(tmp_path_factory.mktemp("l") / "synthetic-load", n_rows=200, seed=3)
    rows, hist = _load_rows(pd.read_parquet(path / "results.parquet"))
    rows.to_parquet(path / "results.parquet", index=False)
    hist.to_parquet(path / "latency_hist.parquet", index=False)
    return path


def test_a_load_sweep_report_has_the_section_and_answers_at_a_stated_load(load_store):
    index = render_report(load_store)
    page = index.read_text()
    assert not list(index.parent.glob("analysis-*.html"))            # the index page alone
    section = page[page.index('<section id="load">'):]
    section = section[:section.index("</section>")]
    assert "<h2>Latency at a stated load</h2>" in section and 'id="zbench-load"' in section
    assert page.count('<script src="plotly.min.js">') == 1
    sentence = re.search(r'<ul class="conclusions"><li>(.*?)</li>', section).group(1)
    # 50 IOPS is 25% of the 200 the probe read and of the 200 the saturation runs sustained
    assert "p99 1.05 ms (95% CI 1.05–1.06 ms) at 50 IOPS offered (25% of saturation by the probe, 25% by the " \
           "closed-loop runs)" in sentence
    assert "closed loop, at saturation (200 IOPS)" in sentence
    assert sentence.startswith(f"{rows_workload(load_store)}, reads: ")
    # the knee's load between the loads: 1.05 ms at 50%, 8.39 at 90%: ln 2 / ln 8 = 1/3 of the way, 63%
    assert sentence.endswith("lowest load&#x27;s) is at 90% of saturation; the p99 reaches 2x the lowest load&#x27;s "
                             "at 63% of saturation (the same in every one of 2,000 resamples of the 3 runs; read "
                             "between the loads on a log-linear line).")
    answer = page[page.index('<section id="answer">'):page.index('<section id="load">')]
    # the first screen: one line per curve, each p99 in load order (2^20, 2^20, 8 x 2^20 ns; 16 x 2^20 at
    # saturation), then the knee; the sentences with every interval folded beneath
    first, folded = answer.split('<details id="answer-detail">')
    assert re.search(r'<ul class="answer"><li><strong>[^<]+</strong>: p99 1.05 → 1.05 → 8.39 ms at 25/50/90% of '
                     r'saturation \(16.8 ms closed loop, 200 IOPS\); knee at 90%.</li></ul>', first), first
    assert "at 50 IOPS offered (25% of saturation by the probe" in folded and "closed loop, at saturation" in folded


def test_answers_of_a_comparison_name_the_load_they_were_measured_at():
    rows, hist = _load_rows(synthetic_results(200, 3, "scaling"), vbs=(8192, 131072))
    s = Sweep(path=None, spec={}, provenance={}, results=rows, plan=None, histograms=hist)
    study = study_headline(s, select_admissible(rows))
    assert study["kind"] == "block"
    subjects = [a["subject"] for a in study["answers"]]
    assert any("closed loop, at saturation" in t for t in subjects), subjects
    assert any("at 50% of saturation (open loop)" in t for t in subjects), subjects
    # one level only: every answer still says it
    one = rows[rows["load"] == "0.5"]
    study = study_headline(Sweep(None, {}, {}, one, None, hist), select_admissible(one))
    assert study["answers"] and all(a["subject"].endswith(", at 50% of saturation (open loop)")
                                    for a in study["answers"])


def test_no_section_without_the_load_factor():
    df = synthetic_results(200, 3, "scaling")
    assert load_section(df, None) == ("", None)


def test_a_percentile_too_few_ios_support_says_not_judged_once():
    # Found here: 3 runs of 1,000 I/Os a cell support a p99 but not a p99.9, and the block-size answer read
    # "p99.9: 128K, 8K not judged (not judged: 3000 I/Os, a p99.9 needs 10000)".
    rows, hist = _load_rows(synthetic_results(200, 3, "scaling"), vbs=(8192, 131072))
    s = Sweep(path=None, spec={}, provenance={}, results=rows, plan=None, histograms=hist)
    texts = [a["text"] for a in study_headline(s, select_admissible(rows))["answers"]]
    assert texts and all("p99.9: 128K, 8K not judged (3000 I/Os, a p99.9 needs 10000)" in t for t in texts)
    assert not [t for t in texts if re.search(r"not judged[^;.]{0,40}?[(:] ?not judged", t)]


def test_at_an_open_loop_load_throughput_is_said_as_set_by_the_load_never_compared():
    # Found on a real latency-vs-load sweep: "at 50% of saturation (open loop) (IOPS): against volblocksize
    # 128K: 8K 1.018x (1.017-1.019) higher": each level was offered half of its own saturation, so the ratio
    # was the probes', called significant.
    rows, hist = _load_rows(synthetic_results(200, 3, "scaling"), vbs=(8192, 131072))
    s = Sweep(path=None, spec={}, provenance={}, results=rows, plan=None, histograms=hist)
    answers = {a["subject"]: a["text"] for a in study_headline(s, select_admissible(rows))["answers"]}
    open_loop = {k: t for k, t in answers.items() if "open loop" in k}
    closed = {k: t for k, t in answers.items() if "closed loop" in k}
    assert len(open_loop) == 3 and len(closed) == 1, answers
    for subject, text in open_loop.items():
        assert not re.search(r"\d\.\d+x|higher|lower|equivalent|inconclusive", text), (subject, text)
        assert text.startswith("Latency p99: ") and "IOPS were set by the offered load, not compared" in text
    assert "8K 50, 128K 50 IOPS" in open_loop[next(k for k in open_loop if "25%" in k)].replace(
        "128K 50, 8K 50", "8K 50, 128K 50")
    (text,) = closed.values()
    assert text.startswith("against volblocksize")             # saturation: the levels are compared


def test_each_answer_of_a_one_workload_load_sweep_names_its_workload_and_its_load():
    # A sweep of one workload holds it equal, so it is not among a group's columns: the open-loop answers read
    # "at 25% of saturation (open loop)", naming no workload, where a sweep of two workloads named each.
    rows, hist = _load_rows(synthetic_results(200, 3, "scaling"), vbs=(8192, 131072))
    (workload,) = rows["workload"].unique()
    s = Sweep(path=None, spec={}, provenance={}, results=rows, plan=None, histograms=hist)
    subjects = sorted(a["subject"] for a in study_headline(s, select_admissible(rows))["answers"])
    assert subjects == [f"{workload} at 25% of saturation (open loop)", f"{workload} at 50% of saturation (open loop)",
                        f"{workload} at 90% of saturation (open loop)", f"{workload} closed loop, at saturation (IOPS)"]


def test_a_sweep_at_one_open_loop_load_compares_no_throughput_either():
    # With one level the load is no group's column: the answer compared 8K's IOPS with 128K's ("8K 1x (every
    # unit alike) inconclusive") though each was offered half of its own saturation.
    rows, hist = _load_rows(synthetic_results(200, 3, "scaling"), vbs=(8192, 131072))
    one = rows[rows["load"] == "0.5"]
    (workload,) = one["workload"].unique()
    answers = study_headline(Sweep(None, {}, {}, one, None, hist), select_admissible(one))["answers"]
    assert [a["subject"] for a in answers] == [f"{workload}, at 50% of saturation (open loop)"]
    text = answers[0]["text"]
    assert not re.search(r"\dx|higher|lower|equivalent|inconclusive", text), text
    assert text.startswith("Latency p99: ") and "IOPS were set by the offered load, not compared" in text
