"""The resilver study's analysis (analysis/report/resilver.py) and its section of the report index.

The sweep directories are hand-written: events.jsonl as the executor writes it (a torn
last line included), plan.json only as far as its pools. Every expected number is worked
out by hand in the comments.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.report.report import ReportOptions, _index_extras, render_report
from zbench_lib.analysis.report.resilver import (CONDITION_COLORS, COLUMNS, TITLE, load_slowdown, resilver_figure,
                                                 resilver_section, resilver_table, slowdown_lines, zpool_bytes)
from zbench_lib.analysis.data.sweep_data import load_sweep, read_events
from zbench_lib.analysis.data.synthetic import synthetic_results, write_synthetic_sweep
from zbench_lib.core.errors import ConfigError, ZbenchError

MiB = 2 ** 20
RAIDZ, MIRROR, RAIDZ2 = "1x raidz1(4)", "1x mirror(2)", "1x raidz2(6)"
LOAD = "randread 16k qd4"
ERROR = "zpool replace: cannot open '/dev/sdx' <busy>"


def _resilver(pool_id, layout, seconds, order, under_load, **extra):
    e = {"ts": "2026-01-01T00:00:00Z", "event": "resilver", "pool_id": pool_id, "pool": f"zb-{pool_id}",
         "layout": layout, "fill": "whole", "device": "/dev/disk/by-id/virtio-zbdata01",
         "replacement": "/dev/disk/by-id/virtio-zbdata07", "seconds": seconds, "allocated_bytes": 3 * 2 ** 30,
         "capacity_pct": 71, "state_before": "DEGRADED", "health_after": "ONLINE", "under_load": under_load,
         "load": LOAD if under_load else None, "load_read_iops": 250.0 if under_load else None,
         "load_write_iops": None, "order": order, "pool_replicate": 1}
    e.update(extra)
    return {k: v for k, v in e.items() if v is not ...}      # `...`: the key is absent (an older store)


EVENTS = [
    {"event": "started", "runs_planned": 8},
    {"event": "pool created", "pool_id": "p04", "pool": "zb-p04", "layout": RAIDZ2, "pool_replicate": 1},
    # p01: idle 10 s for 100 MiB (10 MiB/s), under load 18 s: ratio 1.8
    _resilver("p01", RAIDZ, 10.0, 1, False, resilvered="100M"),
    _resilver("p01", RAIDZ, 18.0, 2, True, resilvered="100M", resilvered_bytes=100 * MiB),
    # p02: idle 12 s for 1.5 GiB (128 MiB/s), under load 24 s: ratio 2.0
    _resilver("p02", RAIDZ, 12.0, 1, False, resilvered="1.5G", pool_replicate=2),
    _resilver("p02", RAIDZ, 24.0, 2, True, resilvered="1.5G", pool_replicate=2),
    # p03: an older event (no fill, no order, no resilvered_bytes): idle only, 512 KiB in 5 s
    _resilver("p03", MIRROR, 5.0, ..., False, resilvered="512K", fill=..., load_read_iops=...),
    {"event": "resilver failed", "pool_id": "p04", "pool": "zb-p04", "device": "/dev/x", "error": ERROR},
]
PLAN = {"pools": [{"pool_id": "p03", "label": MIRROR, "fill": "60%"}, {"pool_id": "p04", "label": RAIDZ2}]}


def _write_events(path, events, torn='{"event": "resilver", "pool_id": "p05", "seco'):
    path.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(e) for e in events]
    (path / "events.jsonl").write_text("\n".join(lines) + ("\n" + torn if torn else "\n"))
    return path


@pytest.fixture
def sweep_dir(tmp_path):
    d = _write_events(tmp_path / "resilver-study", EVENTS)
    (d / "plan.json").write_text(json.dumps(PLAN))
    return d


@pytest.fixture
def table(sweep_dir):
    return resilver_table(sweep_dir)


def test_zpool_sizes_are_binary():
    assert zpool_bytes("98.9M") == round(98.9 * 2 ** 20)
    assert zpool_bytes("512K") == 512 * 1024 and zpool_bytes("1.5G") == 3 * 2 ** 29 and zpool_bytes("0B") == 0
    assert zpool_bytes("2T") == 2 * 2 ** 40 and zpool_bytes(None) is None and zpool_bytes("lots") is None


def test_events_skip_a_torn_line_and_never_raise(tmp_path):
    d = _write_events(tmp_path / "s", [{"event": "a"}, {"event": "b"}], torn='{"event": "c", "x": 1')
    assert [e["event"] for e in read_events(d)] == ["a", "b"]
    (d / "events.jsonl").write_bytes(b'{"event": "a"}\n[1, 2]\n\xff\xfe{"ev\n')
    assert read_events(d) == [{"event": "a"}]
    assert read_events(tmp_path / "nowhere") == []


def test_the_table_has_a_row_per_event_with_rates_by_hand(table):
    assert list(table.columns) == COLUMNS
    assert table["pool_id"].tolist() == ["p01", "p01", "p02", "p02", "p03", "p04"]      # the torn p05 is gone
    p01 = table[table["pool_id"] == "p01"].set_index("order")
    assert p01.loc[1, "resilvered_bytes"] == 100 * MiB and p01.loc[1, "rate_mib_s"] == pytest.approx(10.0)
    assert p01.loc[2, "rate_mib_s"] == pytest.approx(100 / 18)
    assert p01.loc[2, "load_read_iops"] == 250.0 and pd.isna(p01.loc[2, "load_write_iops"])
    p02 = table[(table["pool_id"] == "p02") & (table["order"] == 1)].iloc[0]
    assert p02["resilvered_bytes"] == 1536 * MiB and p02["rate_mib_s"] == pytest.approx(128.0)
    p03 = table[table["pool_id"] == "p03"].iloc[0]
    assert p03["fill"] == "60%" and pd.isna(p03["order"])          # fill from the plan, order stays missing
    assert p03["rate_mib_s"] == pytest.approx(0.1) and pd.isna(p03["load_read_iops"])
    assert bool(p03["under_load"]) is False and pd.isna(p03["not_judged"])


def test_a_failed_resilver_is_a_not_judged_row(table):
    failed = table[table["pool_id"] == "p04"]
    assert len(failed) == 1
    row = failed.iloc[0]
    assert pd.isna(row["seconds"]) and pd.isna(row["rate_mib_s"]) and pd.isna(row["under_load"])
    assert row["not_judged"] == f"resilver failed: {ERROR}"
    assert row["layout"] == RAIDZ2                              # from the `pool created` event
    assert table["not_judged"].notna().sum() == 1


def test_an_unhealthy_or_untimed_resilver_is_not_judged(tmp_path):
    d = _write_events(tmp_path / "s", [_resilver("p01", RAIDZ, 9.0, 1, False, health_after="DEGRADED"),
                                       _resilver("p02", RAIDZ, ..., 1, False, resilvered=None)], torn="")
    t = resilver_table(d)
    assert t["not_judged"].tolist() == ["pool DEGRADED after the resilver, not ONLINE",
                                        "wall time of the resilver not recorded"]
    assert t["fill"].tolist() == ["whole", "whole"] and t["rate_mib_s"].isna().all()


def test_no_resilver_events_give_an_empty_table_with_the_columns(tmp_path):
    d = _write_events(tmp_path / "s", [{"event": "started"}], torn="")
    for t in (resilver_table(d), resilver_table(tmp_path / "no-events-at-all")):
        assert t.empty and list(t.columns) == COLUMNS
    assert resilver_section(resilver_table(d)) == ("", None)
    assert load_slowdown(resilver_table(d)).empty and slowdown_lines(load_slowdown(resilver_table(d))) == []


def test_load_slowdown_pairs_within_a_pool(table):
    s = load_slowdown(table).set_index("pool_id")
    assert s.loc["p01", "ratio"] == pytest.approx(1.8) and s.loc["p02", "ratio"] == pytest.approx(2.0)
    assert s.loc["p01", "idle_seconds"] == 10.0 and s.loc["p01", "loaded_seconds"] == 18.0
    assert s.loc["p01", "load"] == LOAD and s.loc["p01", "layout"] == RAIDZ and s.loc["p01", "fill"] == "whole"
    assert pd.isna(s.loc["p03", "ratio"]) and s.loc["p03", "reason"] == "no resilver under load"
    assert s.loc["p03", "fill"] == "60%" and s.loc["p03", "idle_seconds"] == 5.0
    assert pd.isna(s.loc["p04", "ratio"]) and s.loc["p04", "reason"] == f"resilver failed: {ERROR}"
    assert s["reason"].isna().tolist() == [True, True, False, False]


def test_one_sentence_per_layout_with_its_numbers(table):
    lines = slowdown_lines(load_slowdown(table))
    # geometric mean of 1.8 and 2.0: sqrt(3.6) = 1.897 -> 1.9x
    assert math.isclose(math.sqrt(1.8 * 2.0), 1.897, abs_tol=1e-3)
    assert lines == [
        f"{MIRROR} at fill 60%: slowdown under load not judged for 1 pool (p03: no resilver under load)",
        f"{RAIDZ} at fill whole: under {LOAD} load the resilver took 1.9x as long as idle "
        "(2 pools; geometric mean, per pool 1.8x–2x)",
        f"{RAIDZ2}: slowdown under load not judged for 1 pool (p04: resilver failed: {ERROR})"]


def test_the_figure_has_a_marker_per_timed_resilver_coloured_by_load(table):
    fig = resilver_figure(table)
    assert fig.layout.title.text == TITLE
    assert "(s)" in fig.layout.yaxis.title.text and fig.layout.xaxis.title.text
    timed = table[table["seconds"].notna()]
    assert sum(len(t.y) for t in fig.data) == len(timed) == 5                 # p04 failed: no marker
    under = dict(zip(zip(timed["pool_id"], timed["seconds"]), timed["under_load"]))
    for t in fig.data:
        expected = CONDITION_COLORS["under load" if t.legendgroup == "under load" else "idle"]
        assert t.marker.color == expected
        assert {bool(under[(p, y)]) for p, y in zip(t.customdata, t.y)} == {t.legendgroup == "under load"}
    assert {t.marker.symbol for t in fig.data if "60%" in t.name} != {t.marker.symbol for t in fig.data
                                                                      if "whole" in t.name}
    assert list(fig.layout.xaxis.categoryarray) == [MIRROR, RAIDZ]              # mirror before raidz1
    with pytest.raises(ConfigError, match="no timed resilver"):
        resilver_figure(table[table["seconds"].isna()])


def test_the_report_section_states_the_slowdown_and_what_was_not_judged(table):
    fragment, fig = resilver_section(table, "Sweep resilver-study.")
    assert fig is not None and 'id="zbench-resilver"' in fragment
    assert "plotly.js v" not in fragment                                        # the page's one plotly.js
    for text in (MIRROR, RAIDZ, RAIDZ2, "took 1.9x as long as idle", "not judged", "no resilver under load"):
        assert text in fragment, text
    assert "resilver failed: zpool replace: cannot open &#x27;/dev/sdx&#x27; &lt;busy&gt;" in fragment
    assert "<busy>" not in fragment
    assert ">100M<" in fragment and ">1.5G<" in fragment and ">512K<" in fragment and ">failed<" in fragment
    assert ">5.56<" in fragment and ">128<" in fragment                      # rates: 100 MiB / 18 s, 1.5 GiB / 12 s
    assert "Sweep resilver-study." in fragment


def test_only_failed_resilvers_still_give_a_section_without_a_figure(tmp_path):
    d = _write_events(tmp_path / "s", [EVENTS[-1]], torn="")
    fragment, fig = resilver_section(resilver_table(d))
    assert fig is None and "zbench-resilver" not in fragment and "not judged" in fragment


def test_notebooks_see_the_resilver_api():
    assert {"resilver_table", "load_slowdown", "resilver_figure", "slowdown_lines"} <= set(A.__all__)


def _one_layout_sweep(path):
    """A sweep no analysis notebook applies to: one layout, one disk count, one block size."""
    write_synthetic_sweep(path, n_rows=60, seed=3)
    df = synthetic_results(300, seed=3)
    df[(df["layout"] == "raidz1") & (df["total_disks"] == 4)].to_parquet(path / "results.parquet", index=False)
    return path


def test_a_sweep_without_resilver_events_has_no_section(tmp_path):
    sweep = load_sweep(write_synthetic_sweep(tmp_path / "s", n_rows=120, seed=4))
    extras = _index_extras(sweep, tmp_path / "out", ReportOptions(), "s")
    assert extras["resilver_html"] == "" and [stem for stem, _ in extras["static"]] == ["index-01-scaling-headline"]


def test_a_resilver_study_without_notebooks_gets_its_index_page(tmp_path):
    sweep = _one_layout_sweep(tmp_path / "study")
    with pytest.raises(ZbenchError, match="no analysis applies"):
        render_report(sweep)                     # nothing to show: refused as before
    _write_events(sweep, EVENTS)
    index = render_report(sweep)
    page = index.read_text()
    assert "<h2>Resilver</h2>" in page and "took 1.9x as long as idle" in page and "zbench-resilver" in page
    assert "plotly.min.js" in page and "this page is the report" in page
    assert not list(index.parent.glob("analysis-*.html"))


def test_a_fault_study_whose_runs_are_all_flagged_gets_its_index_page_and_says_why(tmp_path):
    """Runs measured on a pool that lost a disk on purpose are all flagged: no notebook has
    admissible runs to analyse, and the page says so instead of failing in a notebook."""
    sweep = write_synthetic_sweep(tmp_path / "faulted", n_rows=120, seed=5)
    df = pd.read_parquet(sweep / "results.parquet")
    df["flag_device_lost"], df["flagged"] = True, True
    df.to_parquet(sweep / "results.parquet", index=False)
    with pytest.raises(ZbenchError, match="every run that would be analysed was flagged .*--include-flagged"):
        render_report(sweep)
    spec = (sweep / "spec.yaml").read_text()
    (sweep / "spec.yaml").write_text(spec + "faults: {kind: remove, disk: 1, after_s: 3, resilver: true}\n")
    _write_events(sweep, EVENTS)
    index = render_report(sweep)
    page = index.read_text()
    assert "every measured run was flagged by a truth check (the sweep pulled a disk on purpose" in page
    assert "<h2>Resilver</h2>" in page and not list(index.parent.glob("analysis-*.html"))
