"""The load factor (issue 33 item 6): levels and refusals, the open-loop job file rendered through the
real templates, the rate from a probe (and a recorded probe reused), the rows' columns, the knee rule
on curves whose knee is known, the sentences, the figure and the shipped latency-vs-load spec's plan.
The lab half (a tiny sweep on the lab) is tests/test_load_lab.py."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from zbench_lib.analysis.claims.load_claims import curve_sentence, point_sentence
from zbench_lib.analysis.figures.plots import plot_latency_vs_load
from zbench_lib.analysis.stats.load_curves import KNEE_FACTOR, LoadPoint, knee, load_curves
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.measure.fio import build_job
from zbench_lib.measure.fio_parse import load_fio_json
from zbench_lib.measure.load import (OPEN_LOOP_DEPTH_FLOOR, Load, fio_rate, open_loop_iodepth, parse_level,
                                     probe_overrides)
from zbench_lib.measure.rows import load_columns
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.planning.probes import probe_id
from zbench_lib.sweeps.running import open_loop
from zbench_lib.sweeps.spec.sweep_spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "templates" / "sweeps" / "latency-vs-load.yaml"
FIO_JSON = ROOT / "tests" / "fixtures" / "fio" / "host-jsonplus-randread.json"


# -- levels ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("given, canonical", [("saturation", "saturation"), (0.25, "0.25"), (1, "1"), (1.0, "1"),
                                              ("50%", "0.5"), ("100%", "1"), ("2000iops", "2000iops"),
                                              ("2000 IOPS", "2000iops"), ("1500.5iops", "1500.5iops")])
def test_levels_are_canonical(given, canonical):
    assert parse_level(given, "factors.load[0]") == canonical


@pytest.mark.parametrize("bad", [0, -0.5, 1.01, "0%", "101%", float("nan"), float("inf"), "2000mbps", "0iops",
                                 "-5iops", True, None, "fast", "1e9iops" + "9", [0.5]])
def test_bad_levels_are_refused_in_one_line(bad):
    with pytest.raises(ConfigError, match=r"^factors\.load\[0\]: ") as e:
        parse_level(bad, "factors.load[0]")
    assert "\n" not in str(e.value)


def test_a_level_reads_back_as_its_load():
    assert Load.of("saturation").saturation and Load.of(None).saturation and Load.of(math.nan).saturation
    assert Load.of("0.5") == Load(fraction=0.5) and Load.of("0.5").needs_probe
    assert Load.of("2000iops") == Load(iops=2000.0) and not Load.of("2000iops").needs_probe
    assert Load.of("saturation").label() == "at saturation"
    assert Load.of("0.5").label() == "50% of saturation" and Load.of("2000iops").label() == "2,000 IOPS"


# -- the rate ----------------------------------------------------------------------------------------
def test_the_rate_is_a_fraction_of_the_probe_or_the_absolute_rate():
    assert Load.of("0.5").offered(1234.0) == pytest.approx(617.0)
    assert Load.of("0.25").offered(4000) == 1000
    assert Load.of("2000iops").offered(None) == 2000
    with pytest.raises(ConfigError, match="needs the cell's probe IOPS"):
        Load.of("0.5").offered(None)
    with pytest.raises(ConfigError, match="offers no rate"):
        Load.of("saturation").offered(1000)


def test_fio_rate_is_per_job_and_per_direction():
    assert fio_rate(2000, 1, None) == "2000"
    assert fio_rate(2000, 4, None) == "500"                 # fio's rate is per job
    assert fio_rate(1000, 4, 0.7) == "175,75"               # reads,writes by the read share
    assert fio_rate(0.2, 1, None) == "1"                    # at least 1: fio takes whole IOPS


def test_open_loop_depth_leaves_room_for_bursts():
    assert open_loop_iodepth(1) == OPEN_LOOP_DEPTH_FLOOR
    assert open_loop_iodepth(32) == 128
    assert open_loop_iodepth(10_000) == 1024


def test_the_probe_is_the_job_short_with_its_ramp():
    d = {"runtime_s": 60, "ramp_time_s": 10}
    assert probe_overrides({"bs": "8k"}, d) == {"bs": "8k", "runtime_s": 11}      # longer than its ramp
    assert probe_overrides({"runtime_s": 15, "ramp_time_s": 3}, d)["runtime_s"] == 10
    assert probe_overrides({"runtime_s": 4, "ramp_time_s": 1}, d)["runtime_s"] == 4


# -- the job file, rendered through the templates ----------------------------------------------------
def _lines(text: str) -> dict:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def test_a_loaded_job_is_open_loop_and_saturation_is_not():
    closed = build_job("randwrite", filename="/dev/zvol/p/t", iodepth=8)
    assert "rate_iops" not in closed and "rate_process" not in closed and _lines(closed)["iodepth"] == "8"
    loaded = _lines(build_job("randwrite", filename="/dev/zvol/p/t", iodepth=8, numjobs=1, rate_iops=1500.4))
    assert loaded["rate_iops"] == "1500" and loaded["rate_process"] == "poisson" and loaded["iodepth"] == "64"
    mixed = _lines(build_job("mixed", filename="/dev/zvol/p/t", rate_iops=1000))    # 4 jobs, 70% reads
    assert mixed["rate_iops"] == "175,75" and mixed["rate_process"] == "poisson"
    # the rate sits in [global]: every job of the section takes it
    text = build_job("randread", filename="/dev/zvol/p/t", numjobs=2, rate_iops=800)
    assert text.index("rate_iops=400") < text.index("[randread]")


@pytest.mark.parametrize("bad", [0, -5, float("nan"), float("inf"), True, "500"])
def test_a_bad_rate_is_refused(bad):
    with pytest.raises(ConfigError, match="rate_iops must be a positive number"):
        build_job("randwrite", filename="/dev/zvol/p/t", rate_iops=bad)


# -- the probe on a host, and its reuse ----------------------------------------------------------------
class _Store:
    def __init__(self, events=()):
        self._events = list(events)

    def events(self):
        return self._events

    def record(self, event, **fields):
        self._events.append({"event": Event(event).value, **fields})


def _cell(load="0.5", target="p01-t01"):
    return {"cell_id": "c1", "target_id": target, "template": "randwrite", "fio": {"bs": "8k"},
            "factors": {"layout": "mirror", "volblocksize_bytes": 8192, "workload": "randwrite", "load": load}}


def test_loads_of_one_cell_share_a_probe_and_replicates_do_not():
    assert probe_id(_cell("0.5")) == probe_id(_cell("0.9")) == probe_id(_cell("saturation"))
    assert probe_id(_cell("0.5")) != probe_id(_cell("0.5", target="p01-pr2-t01"))
    other = _cell("0.5")
    other["factors"]["volblocksize_bytes"] = 131072
    assert probe_id(other) != probe_id(_cell("0.5"))


def test_a_fraction_is_of_the_probe_measured_once_then_reused(monkeypatch, tmp_path):
    ran = []

    def fake_run_fio(host, job, remote, local):
        ran.append((job, local))
        return SimpleNamespace(data=load_fio_json(FIO_JSON.read_text()))
    monkeypatch.setattr(open_loop, "run_fio", fake_run_fio)
    store = _Store()
    site = SimpleNamespace(store=store, work_dir="/tmp/zb", host=None)
    attempt = tmp_path / "raw" / "c1-r01" / "attempt-1"
    run = SimpleNamespace(run_id="c1-r01")
    first = open_loop.offered_load(site, _cell("0.5"), run, attempt, {"filename": "/dev/x", "iodepth": 8})
    probes = [e for e in store.events() if e["event"] == Event.LOAD_PROBED]
    assert len(ran) == 1 and len(probes) == 1 and ran[0][1] == attempt / "probe"
    assert "rate_iops" not in ran[0][0] and re.search(r"^runtime=11$", ran[0][0], re.M)   # closed loop, short
    assert first.probe_iops == probes[0]["iops"] > 0 and probes[0]["path"] == "raw/c1-r01/attempt-1/probe"
    assert first.offered_iops == pytest.approx(0.5 * first.probe_iops) and first.iodepth == 64
    # a later load of the cell, or a resumed sweep (the event is in events.jsonl), reuses it
    later = SimpleNamespace(run_id="c2-r01")
    again = open_loop.offered_load(site, _cell("0.9"), later, attempt, {"filename": "/dev/x"})
    assert len(ran) == 1 and again.offered_iops == pytest.approx(0.9 * first.probe_iops)
    assert again.probe_id == first.probe_id


def test_saturation_and_absolute_rates_need_no_probe(monkeypatch, tmp_path):
    monkeypatch.setattr(open_loop, "run_fio", lambda *a: pytest.fail("no probe"))
    site = SimpleNamespace(store=_Store(), work_dir="/tmp/zb", host=None)
    run = SimpleNamespace(run_id="c1-r01")
    assert open_loop.offered_load(site, _cell("saturation"), run, tmp_path, {}) is None
    absolute = open_loop.offered_load(site, _cell("2000iops"), run, tmp_path, {"iodepth": 32})
    assert absolute.offered_iops == 2000 and absolute.probe_iops is None and absolute.iodepth == 128


# -- the rows' columns ---------------------------------------------------------------------------------
def test_rows_carry_the_offer_beside_what_was_achieved():
    ol = {"load": "0.5", "offered_iops": 1000.0, "iodepth": 64, "probe_iops": 2000.0, "probe_id": "probe-x"}
    meta = {"factors": {"template": "randwrite"}, "open_loop": ol}
    cols = load_columns({"direction": "write", "iops": 900.0}, meta)
    assert cols == {"offered_iops": 1000.0, "load_achieved": 0.9, "probe_iops": 2000.0, "load_fraction": 0.5,
                    "open_loop_iodepth": 64}
    mixed = {"factors": {"template": "mixed"}, "fio": {"rwmixread": 60}, "open_loop": ol}
    assert load_columns({"direction": "read", "iops": 600.0}, mixed)["offered_iops"] == pytest.approx(600)
    assert load_columns({"direction": "write", "iops": 200.0}, mixed)["load_achieved"] == pytest.approx(0.5)
    # closed loop (no load, or saturation): no column, so every other sweep's rows are as they were
    assert load_columns({"direction": "write", "iops": 900.0}, {"factors": {"template": "randwrite"}}) == {}


# -- the knee, the curves, the words, the figure -----------------------------------------------------
def _pt(load, offered, p99_ms, achieved=None):
    return LoadPoint(load, offered, achieved or offered or 5000.0, 1e5, p99_ms * 1e6, 3 * p99_ms * 1e6,
                     None if offered is None else offered / 5000, None if offered is None else 1.0, 3)


def test_the_knee_is_the_first_load_past_twice_the_lowest_loads_p99():
    assert KNEE_FACTOR == 2.0
    flat_then_up = [_pt("0.25", 1250, 1.0), _pt("0.5", 2500, 1.5), _pt("0.75", 3750, 2.5), _pt("0.9", 4500, 9.0)]
    assert knee(flat_then_up).load == "0.75"
    assert knee([_pt("0.25", 1250, 1.0), _pt("0.5", 2500, 2.0)]) is None       # exactly twice: not past it
    assert knee([_pt("0.25", 1250, 1.0), _pt("0.9", 4500, 1.9), _pt("saturation", None, 30.0)]).load == "saturation"
    assert knee([]) is None and knee([_pt("0.25", 1250, math.nan), _pt("0.5", 2500, 9.0)]) is None


def _results():
    rows = []
    for vbs, scale in ((8192, 1.0), (131072, 3.0)):
        for load, offered, p99 in (("0.25", 100, 1.0), ("0.5", 200, 1.2), ("0.9", 360, 5.0), ("saturation", None, 20)):
            for rep in range(2):
                rows.append({"workload": "randwrite", "direction": "write", "layout": "mirror", "sweep_id": "s",
                             "volblocksize_bytes": vbs, "load": load, "iops": (offered or 400) * 0.98,
                             "offered_iops": offered, "load_fraction": None if offered is None else offered / 400,
                             "load_achieved": None if offered is None else 0.98, "clat_p50_ns": 2e5,
                             "clat_p99_ns": p99 * scale * 1e6 * (1 + rep / 100),
                             "clat_p99_9_ns": 2 * p99 * scale * 1e6})
    return pd.DataFrame(rows)


def test_curves_per_configuration_in_load_order_with_their_knee():
    curves = load_curves(_results())
    assert [dict(c.config) for c in curves] == [{"volblocksize_bytes": 8192}, {"volblocksize_bytes": 131072}]
    c = curves[0]
    assert [p.load for p in c.points] == ["0.25", "0.5", "0.9", "saturation"] and c.points[0].runs == 2
    assert c.knee.load == "0.9" and c.points[-1].offered_iops is None
    assert load_curves(_results().drop(columns="load")) == []


def test_sentences_state_the_load_a_percentile_was_measured_at():
    c = load_curves(_results())[0]
    assert point_sentence(_pt("0.5", 2000, 4.1)) == "p99 4.10 ms at 2,000 IOPS offered (40% of saturation)"
    assert point_sentence(c.points[-1]).endswith("at saturation (closed loop, 392 IOPS)")
    short = LoadPoint("0.9", 1000.0, 800.0, 1e5, 2e6, 4e6, 0.9, 0.8, 3)
    assert "only 80% of it achieved" in point_sentence(short)
    s = curve_sentence(c)
    assert s.startswith("volblocksize_bytes 8192, writes: p99 1.0") and "its knee" in s and "0.9" not in s.split(";")[0]


def test_the_figure_draws_each_curve_and_its_knee():
    fig = plot_latency_vs_load(_results())
    names = [t.name for t in fig.data]
    assert sum(n.endswith("knee") for n in names) == 2 and len(names) == 2 * 3 + 2
    offered = plot_latency_vs_load(_results(), x="offered")
    assert all(None not in t.x for t in offered.data)                # saturation has no offer: left out
    with pytest.raises(ConfigError, match="no load factor"):
        plot_latency_vs_load(_results().drop(columns="load"))


# -- the shipped spec ------------------------------------------------------------------------------------
def test_the_shipped_spec_loads_and_plans_with_its_probes():
    plan = expand(load_spec(SPEC))
    loads = sorted({c["factors"]["load"] for c in plan.cells})
    assert loads == ["0.25", "0.5", "0.75", "0.9", "saturation"]
    assert len(plan.cells) == 2 * 2 * 5
    assert all(("probe_s" in c) == (c["factors"]["load"] != "saturation") for c in plan.cells)
    e = plan.estimates
    assert e["probes"] == 4 and e["probes_s"] > 0                    # 2 volblocksizes x 2 workloads
    text = plan.describe()
    assert "plus 4 saturation probe(s)" in text and "never a result row" in text
    assert 15 * 60 < e["wall_s"] < 35 * 60, e["wall_s"]              # ~20-30 min in the lab


def test_a_window_filed_until_steady_leaves_the_probe_where_its_event_says(tmp_path):
    from zbench_lib.measure.until_steady import file_window
    (tmp_path / "probe").mkdir()
    (tmp_path / "fio").mkdir()
    dest = file_window(tmp_path, 1)
    assert (tmp_path / "probe").is_dir() and (dest / "fio").is_dir() and not (dest / "probe").exists()
