"""The load factor (issue 33 item 6): levels and refusals, the open-loop job file rendered through the
real templates, the rate from a probe (and a recorded probe reused), the rows' columns, the knee rule
on curves whose knee is known, the sentences, the figure and the shipped latency-vs-load spec's plan.
The lab half (a tiny sweep on the lab) is tests/test_load_lab.py."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from scipy.stats import t as scipy_t

from zbench_lib.analysis.claims.load_claims import (at_load, curve_line, curve_sentence, knee_short, knee_text,
                                                   point_sentence)
from zbench_lib.analysis.figures.plots import plot_latency_vs_load
from zbench_lib.analysis.stats.load_curves import (KNEE_FACTOR, LOWEST, PAST, UNDER, LoadCurve, LoadPoint, Tail,
                                                   curves_table,
                                                   knee, knee_verdicts, load_curves)
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.measure.fio import build_job
from zbench_lib.measure.fio_hist import NO_HISTOGRAM
from zbench_lib.measure.fio_parse import load_fio_json
from zbench_lib.measure import workloads
from zbench_lib.measure.load import (OPEN_LOOP_DEPTH_FLOOR, Load, fio_rate, open_loop_iodepth, parse_level,
                                     probe_overrides, probe_seconds)
from zbench_lib.measure.rows import load_columns
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.planning.probes import probe_id
from zbench_lib.sweeps.planning.records import Cell
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


def test_a_read_probe_is_the_job_short_with_its_ramp():
    read = workloads.get("randread")                        # defaults: a 60 s window after a 10 s ramp
    assert probe_overrides({"bs": "8k"}, read) == {"bs": "8k", "runtime_s": 11}      # longer than its ramp
    spec = {"runtime_s": 40, "ramp_time_s": 3}              # latency-vs-load.yaml's reads
    assert probe_overrides(spec, read) == {**spec, "runtime_s": 10}                  # PROBE_RUNTIME_MAX_S
    assert probe_seconds(spec, read) == 3 + 10
    assert probe_overrides({"runtime_s": 4, "ramp_time_s": 1}, read)["runtime_s"] == 4


@pytest.mark.parametrize("name", ["randwrite", "mixed", "seqwrite"])
def test_a_write_probe_measures_the_cells_own_window(name):
    """ZFS absorbs a short write window in memory (methods §21): a probe of a job that writes, a mixed
    one too, measures the window its runs measure, ramp included."""
    w = workloads.get(name)
    spec = {"bs": "8k", "runtime_s": 40, "ramp_time_s": 3}  # latency-vs-load.yaml's writes
    assert probe_overrides(spec, w) == spec and probe_seconds(spec, w) == 3 + 40
    assert probe_overrides({}, w) == {"runtime_s": 60} and probe_seconds({}, w) == 10 + 60     # the defaults


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


def _cell(load="0.5", target="p01-t01", volblocksize=8192, template="randwrite"):
    return Cell("c1", "p01", target, template, template, template == "randread",
                {"layout": "mirror", "volblocksize_bytes": volblocksize, "workload": template, "load": load},
                {"bs": "8k"}, 60, 73.0, 0)


def _fake_fio(monkeypatch) -> list:
    """The jobs the probe runs, each answered by a real fio JSON (its IOPS the probe's)."""
    ran = []

    def fake_run_fio(host, job, remote, local):
        ran.append((job, local))
        return SimpleNamespace(data=load_fio_json(FIO_JSON.read_text()))
    monkeypatch.setattr(open_loop, "run_fio", fake_run_fio)
    return ran


def test_loads_of_one_cell_share_a_probe_and_replicates_do_not():
    assert probe_id(_cell("0.5")) == probe_id(_cell("0.9")) == probe_id(_cell("saturation"))
    assert probe_id(_cell("0.5")) != probe_id(_cell("0.5", target="p01-pr2-t01"))
    assert probe_id(_cell("0.5", volblocksize=131072)) != probe_id(_cell("0.5"))


def test_a_fraction_is_of_the_probe_measured_once_then_reused(monkeypatch, tmp_path):
    ran = _fake_fio(monkeypatch)
    store = _Store()
    site = SimpleNamespace(store=store, work_dir="/tmp/zb", host=None)
    attempt = tmp_path / "raw" / "c1-r01" / "attempt-1"
    run = SimpleNamespace(run_id="c1-r01")
    job = {"filename": "/dev/x", "iodepth": 8, "runtime_s": 40, "ramp_time_s": 3}   # latency-vs-load.yaml's
    first = open_loop.offered_load(site, _cell("0.5"), run, attempt, job)
    probes = [e for e in store.events() if e["event"] == Event.LOAD_PROBED]
    assert len(ran) == 1 and len(probes) == 1 and ran[0][1] == attempt / "probe"
    # closed loop, and a write: the run's own 40 s window after its 3 s ramp (methods §21)
    probe_job = _lines(ran[0][0])
    assert "rate_iops" not in probe_job and (probe_job["runtime"], probe_job["ramp_time"]) == ("40", "3")
    assert (probes[0]["runtime_s"], probes[0]["ramp_time_s"]) == (40, 3)
    assert first.probe_iops == probes[0]["iops"] > 0 and probes[0]["path"] == "raw/c1-r01/attempt-1/probe"
    assert first.offered_iops == pytest.approx(0.5 * first.probe_iops) and first.iodepth == 64
    # a later load of the cell, or a resumed sweep (the event is in events.jsonl), reuses it
    later = SimpleNamespace(run_id="c2-r01")
    again = open_loop.offered_load(site, _cell("0.9"), later, attempt, {"filename": "/dev/x"})
    assert len(ran) == 1 and again.offered_iops == pytest.approx(0.9 * first.probe_iops)
    assert again.probe_id == first.probe_id


def test_a_read_probe_keeps_its_short_window(monkeypatch, tmp_path):
    ran, store = _fake_fio(monkeypatch), _Store()
    site = SimpleNamespace(store=store, work_dir="/tmp/zb", host=None)
    job = {"filename": "/dev/x", "iodepth": 8, "runtime_s": 40, "ramp_time_s": 3}   # latency-vs-load.yaml's
    open_loop.offered_load(site, _cell("0.5", template="randread"), SimpleNamespace(run_id="c1-r01"),
                           tmp_path / "attempt-1", job)
    probe_job = _lines(ran[0][0])
    assert (probe_job["runtime"], probe_job["ramp_time"]) == ("10", "3")       # its ramp, at most 10 s measured
    assert (store.events()[0]["runtime_s"], store.events()[0]["ramp_time_s"]) == (10, 3)


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


# -- the curves from merged histograms, the knee, the words, the figure ---------------------------------
# Hand-made histograms. fio's bins (fio_hist): above 128 ns, [2^m, 2^(m+1)) is cut into 64 bins of
# 2^(m-6) ns, so a power of two, or 2^m + k * 2^(m-6), is a bin's lower edge. Each run has 1,000 I/Os:
# 600 at 2^19 ns, 390 at its p99 key and 10 at 2^25 ns: p50 is 2^19 (600 >= 500), p99 the key
# (cumulative 990 >= 0.99 x 1,000). Three alike runs merge to 1,800 / 1,170 / 30: p99 still the key
# (2,970 >= 0.99 x 3,000), and three equal units give an interval of the key's own bin.
MS = 2 ** 20                                # 1.048576 ms; its bin is [2^20, 2^20 + 2^14)
OVERLAP = 2 ** 21 + 2 ** 15                 # 2x the lowest load's bin's upper edge exactly: overlaps the bound
P99_KEYS = {8192: {"0.25": MS, "0.5": 3 * MS // 2, "0.75": OVERLAP, "0.9": 8 * MS, "saturation": 16 * MS},
            131072: {"0.25": MS, "0.5": 3 * MS // 2, "0.75": 4 * MS, "0.9": 8 * MS, "saturation": 16 * MS}}
OFFERED = {"0.25": 100, "0.5": 200, "0.75": 300, "0.9": 360, "saturation": None}


def _bin(v: int) -> tuple[int, int]:
    """By hand: the edges of fio's bin holding latency v (>= 128 ns)."""
    w = 2 ** (v.bit_length() - 1 - 6)
    return v // w * w, v // w * w + w


def _hist_rows(run_id: str, p99_key: int) -> list[dict]:
    return [{"run_id": run_id, "attempt": 1, "direction": "write", "bin_ns": b, "count": n}
            for b, n in ((2 ** 19, 600), (p99_key, 390), (2 ** 25, 10))]


def _store(keys=P99_KEYS, reps=3):
    """Results rows and their histograms; the rows' own fio percentiles are nonsense (1 ns) on purpose:
    a curve never reads them."""
    rows, hist = [], []
    for vbs, by_load in keys.items():
        for load, key in by_load.items():
            offered = OFFERED[load]
            for rep in range(reps):
                run_id = f"v{vbs}-{load}-r{rep}"
                rows.append({"workload": "randwrite", "direction": "write", "layout": "mirror", "sweep_id": "s",
                             "volblocksize_bytes": vbs, "load": load, "run_id": run_id, "attempt": 1,
                             "iops": (offered or 400) * 0.98, "total_ios": 1000, "offered_iops": offered,
                             "load_fraction": None if offered is None else offered / 400,
                             "load_achieved": None if offered is None else 0.98,
                             "lat_p50_ns": 1.0, "lat_p99_ns": 1.0, "lat_p99_9_ns": 1.0})
                hist += _hist_rows(run_id, key)
    return pd.DataFrame(rows), pd.DataFrame(hist)


def _tail(lo_ms, hi_ms, value_ms=None):
    lo, hi = lo_ms * 1e6, hi_ms * 1e6
    return Tail(value_ms * 1e6 if value_ms else (lo + hi) / 2, lo, hi, "judged", "t across 3 runs, log scale")


def _pt(load, offered, p99: Tail):
    none = Tail.missing("x")
    return LoadPoint(load, offered, offered or 5000.0, none, p99, none,
                     None if offered is None else offered / 5000, None if offered is None else 1.0, 3)


def test_the_knee_is_judged_on_the_intervals():
    assert KNEE_FACTOR == 2.0
    base = _pt("0.25", 1250, _tail(1.0, 1.1))                   # bound: 2.0 (its low end) to 2.2 (its high end)
    pts = [base, _pt("0.5", 2500, _tail(1.2, 2.0)), _pt("0.75", 3750, _tail(2.3, 2.6)),
           _pt("0.9", 4500, _tail(9.0, 9.5))]
    assert knee_verdicts(pts) == [LOWEST, UNDER, PAST, PAST] and knee(pts) is pts[2]
    # its interval reaches over 2x the lowest's low end but not past 2x its high end: not judged, no knee
    overlap = [base, _pt("0.5", 2500, _tail(1.9, 2.3)), _pt("0.9", 4500, _tail(9.0, 9.5))]
    v = knee_verdicts(overlap)
    assert v[1].startswith("not judged: its p99 interval (1.9–2.3 ms) overlaps 2x the lowest load's (2–2.2 ms)")
    assert v[2] == PAST and knee(overlap) is None
    # the point value alone (2.3 > 2 x 1.1) would have called a knee; the interval's low end (2.1) does not
    assert knee_verdicts([base, _pt("0.5", 2500, _tail(2.1, 2.5, value_ms=2.3))])[1].startswith("not judged")
    assert knee([base, _pt("0.5", 2500, _tail(1.5, 2.0)), _pt("saturation", None, _tail(30, 31))]).load == \
        "saturation"
    assert knee([]) is None and knee([base]) is None
    # a lowest load without an interval leaves every verdict not judged
    lone = [_pt("0.25", 1250, Tail.missing("no histogram")), _pt("0.9", 4500, _tail(9.0, 9.5))]
    assert knee_verdicts(lone)[1] == "not judged: the lowest load's p99 has no interval (no histogram)"
    assert knee(lone) is None


def test_a_knee_verdict_writes_large_latencies_as_the_sentences_do():
    # the lvl sweep's randwrite 128K: 151-1,728 ms against a lowest load of 62-780 ms (bound 124-1,560 ms);
    # '.3g' printed "(151–1.73e+03 ms)"
    base = _pt("0.25", 31, _tail(62.0, 780.0))
    v = knee_verdicts([base, _pt("0.5", 62, _tail(151.0, 1728.0))])[1]
    assert v == "not judged: its p99 interval (151–1,728 ms) overlaps 2x the lowest load's (124–1,560 ms)"


def test_points_are_the_merged_histograms_percentiles_with_their_intervals():
    df, hist = _store()
    curves = load_curves(df, hist)
    assert [dict(c.config) for c in curves] == [{"workload": "randwrite", "volblocksize_bytes": 8192},
                                                {"workload": "randwrite", "volblocksize_bytes": 131072}]
    c = curves[0]
    assert [p.load for p in c.points] == ["0.25", "0.5", "0.75", "0.9", "saturation"] and c.points[0].runs == 3
    for p in c.points:
        key = P99_KEYS[8192][p.load]
        assert p.p50_ns == 2 ** 19 and p.p99_ns == key                   # never the rows' 1 ns
        assert (p.p99.lo_ns, p.p99.hi_ns) == _bin(key) and p.p99.judged    # three equal units: the key's bin
        # 3,000 I/Os cannot support a p99.9 (it needs 10 / (1 - 0.999) = 10,000): not judged, no number
        assert math.isnan(p.p99_9_ns) and p.p99_9.status == "not judged: 3000 I/Os, a p99.9 needs 10000"
    assert _bin(MS) == (1048576, 1064960) and _bin(OVERLAP) == (2129920, 2162688)
    # 0.75: its low end 2,129,920 is not past 2 x 1,064,960 = 2,129,920 exactly: not judged, so no knee
    assert c.verdicts == (LOWEST, UNDER, c.verdicts[2], PAST, PAST) and c.verdicts[2].startswith("not judged")
    assert c.knee is None and c.knee_not_judged is c.points[2] and c.points[-1].offered_iops is None
    assert curves[1].knee.load == "0.75" and curves[1].verdicts == (LOWEST, UNDER, PAST, PAST, PAST)
    assert load_curves(df.drop(columns="load"), hist) == []
    t = curves_table(curves)
    assert len(t) == 10 and t["knee"].sum() == 1 and t.loc[t["knee"], "load"].tolist() == ["0.75"]
    assert t["p99_ci_low_ns"].iloc[0] == 1048576 and t["p99_9_status"].str.startswith("not judged").all()


def test_an_interval_across_differing_runs_is_t_on_their_logs_rounded_out_to_bins():
    df, hist = _store({8192: {"0.25": MS, "0.5": MS}})
    # the 0.5 level's three runs: p99 at 2^20, 2^21, 2^22 ns
    df = df[df["load"] == "0.5"]
    hist = pd.DataFrame([r for i, k in enumerate((MS, 2 * MS, 4 * MS)) for r in _hist_rows(f"v8192-0.5-r{i}", k)])
    (c,) = load_curves(df, hist)
    (p,) = c.points
    # a typical run's p99, the centre of its interval: the runs' own (2^20, 2^21, 2^22) have the geometric
    # mean 2^21; merged (1,800 at 2^19, then 390 at each key) the 2,970th I/O would be in 2^22's bin, the
    # estimand "all I/Os pooled", which this point does not give
    assert p.p99_ns == pytest.approx(2 * MS)
    # logs: 20, 21, 22 times ln 2; mean 21 ln 2, sd ln 2; t(0.975, 2 df) half-width
    half = scipy_t.ppf(0.975, 2) * math.log(2) / math.sqrt(3)
    low, high = 2 ** 21 * math.exp(-half), 2 ** 21 * math.exp(half)
    assert (p.p99.lo_ns, p.p99.hi_ns) == (_bin(int(low))[0], _bin(int(high))[1])
    assert "t across 3 runs" in p.p99.interval


def test_a_p99_9_is_judged_where_the_io_count_supports_it():
    # one run of 10,000 I/Os per level: 5,000 at 2^19, 4,900 at 2^20, 90 at 2^22, 10 at 2^24 ns:
    # p99.9 is 2^22 (cumulative 9,990 >= 0.999 x 10,000), p99 2^20 (9,900 >= 9,900)
    df = pd.DataFrame([{"direction": "write", "workload": "w", "load": "0.5", "run_id": "a", "attempt": 1,
                        "iops": 100.0, "offered_iops": 100.0, "total_ios": 10000}])
    hist = pd.DataFrame([{"run_id": "a", "attempt": 1, "direction": "write", "bin_ns": b, "count": n}
                         for b, n in ((2 ** 19, 5000), (2 ** 20, 4900), (2 ** 22, 90), (2 ** 24, 10))])
    (p,) = load_curves(df, hist)[0].points
    assert (p.p50_ns, p.p99_ns, p.p99_9_ns) == (2 ** 19, 2 ** 20, 2 ** 22)
    assert p.p99.interval == "no interval: 1 run with a histogram" and not p.p99.has_interval


def test_without_histograms_nothing_is_estimated_and_no_median_stands_in():
    df, _ = _store()
    c = load_curves(df, None)[0]
    assert all(math.isnan(p.p99_ns) and p.p99.status == f"not judged: {NO_HISTOGRAM}" for p in c.points)
    assert c.knee is None and c.verdicts[1].startswith("not judged: the lowest load's p99 has no interval")
    s = curve_sentence(c)
    assert f"p99 not judged ({NO_HISTOGRAM}) at 100 IOPS offered" in s and "knee not judged" in s and "1e" not in s
    # one run a level: a number, but no interval to judge a knee on
    one = load_curves(*_store(reps=1))[1]
    assert one.points[2].p99_ns == 4 * MS and one.knee is None
    assert knee_text(one) == "knee not judged: the lowest load's p99 has no interval (1 run with a histogram)"


def test_sentences_state_the_load_and_interval_of_each_percentile():
    a, b = load_curves(*_store())
    assert point_sentence(a.points[1]) == "p99 1.57 ms (95% CI 1.57–1.59 ms) at 200 IOPS offered (50% of saturation)"
    assert point_sentence(a.points[-1]) == "p99 16.8 ms (95% CI 16.8–17.0 ms), closed loop, at saturation (392 IOPS)"
    assert point_sentence(a.points[1], "p99.9").startswith("p99.9 not judged (3000 I/Os, a p99.9 needs 10000) at")
    short = LoadPoint("0.9", 1000.0, 800.0, a.points[0].p50, a.points[0].p99, a.points[0].p99_9, 0.9, 0.8, 3)
    assert "only 80% of it achieved" in point_sentence(short)
    s = curve_sentence(a)
    # 100 IOPS is 25% of the probe's 400 and 100 / 392 = 25.5% of what the saturation runs sustained (400 x 0.98)
    assert s.startswith("randwrite, 8K, writes: p99 1.05 ms (95% CI 1.05–1.06 ms) at 100 IOPS offered "
                        "(25% of saturation by the probe, 26% by the closed-loop runs); p99 1.57 ms")
    assert s.count(" ms (95% CI ") == 5 and "closed loop, at saturation" in s
    # then where between the loads the p99 reaches twice the lowest load's (issue 46): 1.5 ms at 50%, 2.03125 ms
    # (OVERLAP) at 75%, a bound of 2 ms: (ln 2 - ln 1.5) / (ln 2.03125 - ln 1.5) = 0.948864 of the way, 0.737216;
    # its three runs at each load are alike, so every resample gives it
    assert s.endswith("no knee up to 50% of saturation; knee not judged at 75% of saturation: its p99 interval "
                      "(2.13–2.16 ms) overlaps 2x the lowest load's (2.1–2.13 ms); past the bound by 90% of "
                      "saturation; the p99 reaches 2x the lowest load's at 74% of saturation (the same in every one "
                      "of 2,000 resamples of the 3 runs; read between the loads on a log-linear line).")
    # 128K: 4 ms at 75%: (ln 2 - ln 1.5) / (ln 4 - ln 1.5) = 0.293305 of the way from 50%: 0.573326
    assert curve_sentence(b).endswith("its knee (the first load whose p99 interval lies above 2x the lowest "
                                      "load's) is at 75% of saturation; the p99 reaches 2x the lowest load's at "
                                      "57% of saturation (the same in every one of 2,000 resamples of the 3 runs; "
                                      "read between the loads on a log-linear line).")
    flat = load_curves(*_store({8192: {k: MS for k in OFFERED}}))[0]
    assert knee_text(flat).startswith("no knee up to saturation (closed loop)")
    part = load_curves(*_store({8192: {k: MS for k in ("0.25", "0.5", "0.9")}}))[0]
    assert knee_text(part).startswith("no knee up to 90% of saturation")


def test_the_figure_draws_each_curve_its_interval_and_its_knee():
    df, hist = _store()
    fig = plot_latency_vs_load(df, hist)
    names = [t.name for t in fig.data]
    assert sum(n.endswith("knee") for n in names) == 1 and len(names) == 2 * 3 + 1 + 2
    # the legend names each curve once, by its p99 line; p50 and the knee by a grey entry each, and not the
    # p99.9, judged nowhere, so never drawn (issue 52, item 4)
    assert [t.name for t in fig.data if t.showlegend is not False] == [
        "randwrite, 8K write p99", "randwrite, 128K write p99", "p50 (dotted, each curve's colour)",
        "knee (ringed)"]
    p99 = next(t for t in fig.data if t.name.endswith("write p99"))
    assert p99.error_y.array is not None and list(p99.y)[0] == pytest.approx(MS / 1e6)
    p999 = next(t for t in fig.data if t.name.endswith("write p99.9"))
    assert all(math.isnan(y) for y in p999.y)                          # not judged: a gap, not a number
    offered = plot_latency_vs_load(df, hist, x="offered")
    # saturation has no offer: left out (the legend's grey entries draw nothing)
    assert all(None not in t.x for t in offered.data if t.legendgroup != "percentiles")
    with pytest.raises(ConfigError, match="no load factor"):
        plot_latency_vs_load(df.drop(columns="load"), hist)


def test_reads_and_writes_get_a_panel_each_with_their_own_iops_axis():
    # the lvl sweep drew reads (0-200 IOPS) and writes (300-1,000) on one axis, the reads squashed in a corner
    df, hist = _store({8192: P99_KEYS[8192]})
    reads = df.assign(workload="randread", direction="read", run_id=df["run_id"] + "-r",
                      iops=df["iops"] / 10, offered_iops=df["offered_iops"] / 10)
    rhist = hist.assign(run_id=hist["run_id"] + "-r", direction="read", bin_ns=hist["bin_ns"] * 64)   # slower
    fig = plot_latency_vs_load(pd.concat([df, reads]), pd.concat([hist, rhist]))
    assert [a.text for a in fig.layout.annotations][:2] == ["randread reads", "randwrite writes"]
    axis = {t.name: t.xaxis for t in fig.data}
    assert axis["randread read p99"] == "x" and axis["randwrite write p99"] == "x2"
    assert max(next(t for t in fig.data if t.name == "randread read p99").x) == pytest.approx(39.2)
    assert fig.layout.xaxis.matches is None and fig.layout.xaxis2.matches is None      # each its own range
    assert fig.layout.yaxis2.matches == "y" and fig.layout.yaxis2.type == "log"     # one latency scale
    assert fig.layout.xaxis.type != "log"
    # the static redraw (--figures) keeps the one latency scale: seaborn fitted each facet to its own data
    from zbench_lib.analysis.figures.figures_static import static_figure
    read_ax, write_ax = static_figure(fig).axes[:2]
    assert read_ax.get_ylim() == write_ax.get_ylim() and read_ax.get_xlim() != write_ax.get_xlim()
    # two curves of one panel whose saturations are 392 and 39.2 IOPS (10x > LOAD_LOG_X): a log IOPS axis
    both, bhist = _store()
    slow = both["volblocksize_bytes"] == 131072
    both.loc[slow, "iops"] /= 10
    assert plot_latency_vs_load(both, bhist).layout.xaxis.type == "log"
    assert plot_latency_vs_load(*_store()).layout.xaxis.type != "log"


# -- the shipped spec ------------------------------------------------------------------------------------
def test_the_shipped_spec_loads_and_plans_with_its_probes():
    plan = expand(load_spec(SPEC))
    loads = sorted({c.factors["load"] for c in plan.cells})
    assert loads == ["0.25", "0.5", "0.75", "0.9", "saturation"]
    assert len(plan.cells) == 2 * 2 * 5 * 5          # five pool replicates (issue 46: the knee rule's power)
    assert all((c.probe_s is not None) == (c.factors["load"] != "saturation") for c in plan.cells)
    # its jobs: a 40 s window after a 3 s ramp, 3 s of overhead a run (estimate.RUN_OVERHEAD_S); a write
    # probe measures that window, a read probe 10 s of it (methods §21)
    probe_s = {c.template: c.probe_s for c in plan.cells if c.factors["load"] != "saturation"}
    assert probe_s == {"randwrite": 3 + 40 + 3, "randread": 3 + 10 + 3}
    e = plan.estimates
    # each pool replicate probes its own saturation: 5 pools x 2 volblocksizes x 2 workloads
    assert e["probes"] == 20 and e["probes_s"] == 5 * (2 * 46 + 2 * 16)
    # a write probe writes what a saturation run of its cell writes (the same window, closed loop); a read
    # probe nothing: the bytes are the prefill, 1 run of every cell and one saturation run per write cell
    saturation_writes = [c.write_bytes_per_run for c in plan.cells
                         if c.template == "randwrite" and c.factors["load"] == "saturation"]
    assert len(saturation_writes) == 2 * 5 and min(saturation_writes) > 0
    assert e["bytes_written"] == e["prefill_bytes"] + sum(c.write_bytes_per_run for c in plan.cells) + \
        sum(saturation_writes)
    text = plan.describe()
    assert "plus 20 saturation probe(s)" in text and "never a result row" in text
    assert 80 * 60 < e["wall_s"] < 100 * 60, e["wall_s"]             # ~90 min in the lab (40 s windows; 55 at 3 pools)


def test_a_window_filed_until_steady_leaves_the_probe_where_its_event_says(tmp_path):
    from zbench_lib.measure.until_steady import file_window
    (tmp_path / "probe").mkdir()
    (tmp_path / "fio").mkdir()
    dest = file_window(tmp_path, 1)
    assert (tmp_path / "probe").is_dir() and (dest / "fio").is_dir() and not (dest / "probe").exists()


def test_an_open_loop_run_is_estimated_to_write_its_offered_share():
    from zbench_lib.measure.load import Load
    from zbench_lib.sweeps.planning.plan import _offered_rate
    assert _offered_rate(Load.of("saturation"), 100e6, 8192) == 100e6
    assert _offered_rate(Load.of(0.25), 100e6, 8192) == 25e6
    assert _offered_rate(Load.of("1000iops"), 100e6, 8192) == 8_192_000           # 1,000 x 8 KiB per second
    assert _offered_rate(Load.of("100000iops"), 100e6, 8192) == 100e6             # offered beyond what it can take


def _write_curve(sustained=952.0, probe=1319.0):
    """The lvl sweep's randwrite 8K, by hand: a probe of `probe` IOPS set each load; the closed-loop runs
    sustained `sustained`; p99 in ms with its interval as measured there."""
    t = {"0.25": (18.5, 15.3, 22.5), "0.5": (20.3, 6.0, 116.0), "0.75": (952.0, 688.0, 1342.0),
         "0.9": (1200.0, 747.0, 1929.0), "saturation": (8.09, 7.08, 9.70)}
    achieved = {"0.25": 0.97, "0.5": 0.96, "0.75": 0.96, "0.9": 0.82}
    none = Tail.missing("x")
    pts = []
    for load, (v, lo, hi) in t.items():
        sat = load == "saturation"
        f = None if sat else float(load)
        pts.append(LoadPoint(load, None if sat else f * probe, sustained if sat else f * probe * achieved[load],
                             none, _tail(lo, hi, value_ms=v), none, f, None if sat else achieved[load], 3,
                             None if sat else probe))
    return LoadCurve((("workload", "randwrite"), ("volblocksize_bytes", 8192)), "write", tuple(pts),
                     tuple(knee_verdicts(pts)), knee(pts))


def test_a_load_is_also_stated_against_what_the_closed_loop_runs_sustained():
    c = _write_curve()
    assert c.sustained_iops == 952.0
    # 0.75 x 1,319 = 989.25 IOPS offered, 989.25 / 952 = 104% of what saturation sustained: 39% past its 75%
    p75 = c.points[2]
    assert round(c.sustained_share(p75), 4) == 1.0391 and c.probe_off(p75)
    assert at_load(p75, c) == ("at 989 IOPS offered (75% of saturation by the probe, but 104% of the 952 IOPS the "
                               "closed-loop runs sustained)")
    assert at_load(p75) == "at 989 IOPS offered (75% of saturation)"          # without its curve, as before
    # every load of the curve shares the probe: its reading is said once, at the first load it misset
    assert at_load(c.points[0], c).endswith("35% of the 952 IOPS the closed-loop runs sustained; the probe read 1,319)")
    assert curve_sentence(c).count("the probe read 1,319") == 1
    # within 10%: the share is said, the probe not questioned (1,000 / 910 = 1.099; 1,000 / 900 = 1.111)
    assert not _write_curve(910.0, 1000.0).probe_off(_write_curve(910.0, 1000.0).points[2])
    near = _write_curve(950.0, 1000.0)
    assert at_load(near.points[0], near) == "at 250 IOPS offered (25% of saturation by the probe, 26% by the " \
                                            "closed-loop runs)"
    assert _write_curve(900.0, 1000.0).probe_off(_write_curve(900.0, 1000.0).points[0])
    # an absolute rate has no stated fraction to be off from; a curve without saturation has nothing to compare
    absolute = LoadPoint("2000iops", 2000.0, 1990.0, p75.p50, p75.p99, p75.p99_9, None, 0.995, 3)
    assert not c.probe_off(absolute) and round(c.sustained_share(absolute), 3) == 2.101
    bare = LoadCurve(c.config, c.direction, c.points[:-1], c.verdicts[:-1], None)
    assert bare.sustained_iops is None and bare.sustained_share(p75) is None and not bare.probe_off(p75)


def test_the_first_screen_line_gives_each_p99_in_load_order_and_the_knee():
    line = curve_line(_write_curve())
    assert line == ("p99 18.5 → 20.3 → 952 → 1,200 ms at 25/50/75/90% of saturation (8.09 ms closed loop, 952 IOPS); "
                    "past the knee by 75% (50% not judged). Offered 330/660/989/1,187 IOPS: 35/69/104/125% of what "
                    "the closed-loop runs sustained (952 IOPS); the probe read 1,319. At 90% only 82% of the offer "
                    "was achieved.")
    # a probe within 10% of saturation and loads all achieved: the line is the p99s and the knee alone
    a, b = load_curves(*_store())
    assert curve_line(b) == "p99 1.05 → 1.57 → 4.19 → 8.39 ms at 25/50/75/90% of saturation (16.8 ms closed " \
                            "loop, 392 IOPS); knee at 75%."
    assert knee_short(a) == "no knee up to 50%, past the knee by 90% (75% not judged)"
    flat = load_curves(*_store({8192: {k: MS for k in OFFERED}}))[0]
    assert knee_short(flat) == "no knee up to saturation"
    lone = load_curves(*_store(reps=1))[0]
    assert knee_short(lone) == "knee not judged: the lowest load's p99 has no interval (1 run with a histogram)"
