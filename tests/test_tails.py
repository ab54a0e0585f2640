"""Latency tails that hold (issue 27, item 5; docs/methods.md §18).

fio's json+ histogram read as fio reads it; a percentile the I/O count cannot support is not
judged (per run in the rows, per cell); a cell's percentiles come from its runs' merged bins,
never from averaged percentiles; the interval across pools is never narrower than a bin; runs
recorded with plain json (every example) give "not judged", not an error; the store derives
latency_hist.parquet from raw and `verify` checks it.

Expected values are worked out by hand in the comments, or with numpy / scipy in the test
itself (the reference call is in the test), never with the functions under test.
"""

import json
import math
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from zbench_lib import analysis as A
from zbench_lib.analysis.claims.conclusions import TAIL_NOTE
from zbench_lib.analysis.data.synthetic import synthetic_results
from zbench_lib.analysis.figures.timeline import run_files
from zbench_lib.core.errors import ZbenchError
from zbench_lib.measure.fio_hist import (NO_HISTOGRAM, bin_edges, judge_run_tails, min_ios, percentile_of,
                                         run_histograms)
from zbench_lib.measure.fio_parse import PERCENTILES, load_fio_json, parse_fio_json
from zbench_lib.measure.rows import parse_results, run_record
from zbench_lib.sweeps.store.publish import MANIFEST, pack, unpack_raw, verify, write_manifest
from zbench_lib.sweeps.store.raw_check import HISTOGRAMS
from zbench_lib.sweeps.store.store import Store

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "fio"
VBS = ROOT / "data" / "examples" / "volblocksize"
FEW_IOS_RUN = "c8155f9-pr2-r01"     # 4k random reads on raidz2 at 4K: 2,945 I/Os in its window


def _mid(value):
    """The midpoint of fio's bin holding `value` (ns), by stat.h's rule written out here: above
    127 ns a power of two [2^m, 2^(m+1)) has 64 bins of 2^(m-6) ns; fio names a bin by its midpoint."""
    m = int(value).bit_length() - 1
    if m <= 6:
        return int(value)
    width = 1 << (m - 6)
    return (1 << m) + (int(value) - (1 << m)) // width * width + width // 2


def _np_percentile(hist: dict, q: float) -> float:
    """The first key whose cumulative count reaches q·N (fio's calc_clat_percentiles), with numpy."""
    keys = np.array(sorted(hist))
    cum = np.cumsum([hist[k] for k in keys])
    return float(keys[np.argmax(cum >= q * cum[-1] - 1e-9)])


def _raw_json(path) -> dict:
    """fio's JSON read with plain json, not the code under test (fio's bare -nan, a steady-state slope, as NaN)."""
    return json.loads(re.sub(r'(?<![\w"])-nan\b', "NaN", Path(path).read_text()))


def _rows(cells):
    """Results rows: cells is [(pool_replicate, run_id, total_ios)], one workload and direction."""
    return pd.DataFrame([dict(workload="randread", direction="read", layout="raidz1", pool_id=f"p{pr}",
                              pool_replicate=pr, run_id=run, attempt=1, total_ios=n) for pr, run, n in cells])


def _hist(per_run: dict) -> pd.DataFrame:
    """latency_hist rows from {run_id: {bin_ns: count}}."""
    return pd.DataFrame([dict(run_id=r, attempt=1, direction="read", bin_ns=k, count=c)
                         for r, h in per_run.items() for k, c in sorted(h.items())])


# --- fio's histogram -------------------------------------------------------------------------

def test_bin_edges_follow_fios_log_linear_layout():
    # 1000 ns: 512..1023 holds 64 bins of 8 ns; (1000 - 512) // 8 = 61 -> [1000, 1008)
    # 610304 ns (a p99 fio printed): 524288..1048575, bins of 8192 ns, k = 10 -> [606208, 614400)
    # 100 ns: below 128 every ns is its own bin; 2^40 ns: past fio's range, into the last bin
    # [2^33 + 63 * 2^27, inf) = [17045651456, inf)
    lo, hi = bin_edges([1000, 610304, 100, 2 ** 40])
    assert lo.tolist() == [1000, 606208, 100, 17045651456]
    assert hi.tolist() == [1008, 614400, 101, math.inf]
    assert _mid(610304) == 610304 and _mid(1000) == 1004


@pytest.mark.parametrize("workload", ["randread", "mixed"])
def test_a_json_plus_run_gives_its_bins_and_fios_own_percentiles_back(workload):
    data = load_fio_json((FIX / f"host-jsonplus-{workload}.json").read_text())
    raw = _raw_json(FIX / f"host-jsonplus-{workload}.json")
    (job,) = raw["jobs"]                                      # group_reporting: the jobs' bins in one entry
    recs = run_histograms(data)
    for row in parse_fio_json(data):
        h = {r["bin_ns"]: r["count"] for r in recs if r["direction"] == row["direction"]}
        # the bins are fio's lat_ns ones (issue to completion), not clat_ns's (the completion half)
        lat, clat = (job[row["direction"]][k]["bins"] for k in ("lat_ns", "clat_ns"))
        assert h == {int(k): c for k, c in lat.items()} != {int(k): c for k, c in clat.items()}
        assert sum(h.values()) == row["total_ios"]           # every I/O of the window is in a bin
        assert all(_mid(k) == k for k in h)                   # the keys are the bins' midpoints
        lo, hi = bin_edges(list(h))
        assert ((hi - lo) / lo).max() <= 1 / 64               # at most 1.6% wide (stat.h: 64 per octave)
        for key, name in PERCENTILES.items():                 # fio's own list, read from the same bins
            printed = job[row["direction"]]["lat_ns"]["percentile"][key]
            assert percentile_of(list(h), list(h.values()), float(key) / 100) == row[f"lat_{name}_ns"] == printed
            assert _np_percentile(h, float(key) / 100) == printed
    # the same run with clat bins alone (json+ without lat_percentiles=1) has no histogram: its bins are
    # not of the latency the rows report
    for direction in {r["direction"] for r in recs}:
        del job[direction]["lat_ns"]["bins"]
        assert job[direction]["clat_ns"]["bins"]
    assert run_histograms(raw) == []


def test_plain_json_runs_have_no_histogram():
    for workload in ("randread", "mixed", "fsync-heavy"):
        assert run_histograms((FIX / f"host-{workload}.json").read_text()) == []


# --- what an I/O count supports --------------------------------------------------------------

def test_a_quantile_needs_ten_ios_beyond_it():
    # 10 / (1 - q): p99 1,000, p99.9 10,000, p99.99 100,000; p50 20
    assert [min_ios(q) for q in (0.99, 0.999, 0.9999, 0.5)] == [1000, 10000, 100000, 20]


def test_a_p99_99_from_3000_ios_is_not_judged_in_the_rows():
    # A real run of the volblocksize example: 2,945 reads. fio printed a lat p99.99 of 299,892,736 ns, the
    # midpoint of the bin of its slowest read (lat max 300,349,460 ns: 2^28 + 7 x 2^22 .. + 2^22): the
    # "p99.99" was the maximum.
    with run_files(VBS, FEW_IOS_RUN) as attempt:
        fio = json.loads((attempt / "fio" / "fio.json").read_text())
        _, (row,) = run_record(attempt)
    printed = fio["jobs"][0]["read"]["lat_ns"]["percentile"]
    assert row["total_ios"] == 2945 and printed["99.990000"] == 299892736
    assert math.isnan(row["lat_p99_99_ns"]) and math.isnan(row["lat_p99_9_ns"])
    assert row["lat_p99_ns"] == printed["99.000000"]        # 2,945 >= 1,000: judged
    # clat's p99, kept to show the split, is judged on the same count
    assert row["clat_p99_ns"] == fio["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"]
    assert row["tail_not_judged"] == "2945 I/Os: p99.9 needs 10000, p99.99 needs 100000"


def test_sync_percentiles_count_sync_calls():
    data = load_fio_json((FIX / "host-fsync-heavy.json").read_text())
    (row,) = judge_run_tails(parse_fio_json(data), data)
    syncs = data["jobs"][0]["sync"]["total_ios"]
    assert (syncs >= 1000) == (not math.isnan(row["sync_lat_p99_ns"]))
    (full,) = judge_run_tails([dict(parse_fio_json(data)[0], total_ios=200_000)], {"jobs": [
        dict(jobname="fsync-heavy", groupid=0, sync={"total_ios": 40})]})
    assert math.isnan(full["sync_lat_p99_ns"]) and full["tail_not_judged"] == "40 syncs: sync p99 needs 1000"


def test_a_p99_99_from_3000_ios_is_not_judged_in_a_cell():
    rows = _rows([(1, "a", 1500), (1, "b", 1500)])
    hist = _hist({"a": {_mid(1000): 1490, _mid(5000): 10}, "b": {_mid(1000): 1500}})
    t = A.cell_tails(rows, hist).set_index("percentile")
    assert t.loc["p99.99", "status"] == "not judged: 3000 I/Os, a p99.99 needs 100000"
    assert np.isnan(t.loc["p99.99", "value_ns"]) and t.loc["p99.9", "judged"] == False  # noqa: E712
    assert t.loc["p99", "judged"] and t.loc["p99", "ios"] == 3000


# --- merged histograms -----------------------------------------------------------------------

def test_a_cells_percentile_comes_from_its_runs_summed_bins():
    a = {_mid(1000): 990, _mid(2000): 9, _mid(4000): 1}           # 1,000 I/Os
    b = {_mid(1000): 980, _mid(2000): 15, _mid(4000): 5}          # 1,000 I/Os
    # summed: 1004 ns x 1970, 2008 ns x 24, 4016 ns x 6; p99 is the 1,980th: 1970 < 1980 <= 1994,
    # so 2008 ns. Each run's own p99 is 1004 (990 >= 990) and 2008 (980 < 990): their mean, 1506 ns,
    # is no latency any I/O had.
    summed = {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}
    assert _np_percentile(summed, 0.99) == 2008
    assert (_np_percentile(a, 0.99) + _np_percentile(b, 0.99)) / 2 == 1506
    rows, hist = _rows([(1, "a", 1000), (1, "b", 1000)]), _hist({"a": a, "b": b})
    t = A.cell_tails(rows, hist, estimand="pooled").set_index("percentile")
    assert t.loc["p99", "value_ns"] == 2008 and t.loc["p99", "ios"] == 2000
    assert (t.loc["p99", "bin_lo_ns"], t.loc["p99", "bin_hi_ns"]) == (2000, 2016)
    assert t.loc["p50", "value_ns"] == _np_percentile(summed, 0.5) == 1004
    assert t.loc["p99.9", "status"] == "not judged: 2000 I/Os, a p99.9 needs 10000"
    # the default estimand, a typical run's p99 (one pool): each run's own from its bins, their geometric mean
    # sqrt(1004 x 2008) = 1419.9 ns (scipy.stats.gmean): a statistic of the runs' p99s, and said to be one
    typical = A.cell_tails(rows, hist).set_index("percentile").loc["p99"]
    assert typical["value_ns"] == pytest.approx(sps.gmean([1004, 2008])) and "typical run" in typical["estimand"]


def _three_pools(rng, spread):
    pools, rows = {}, []
    for pr in (1, 2, 3):
        centre = 2_000_000 * (1 + spread * rng.standard_normal())
        lat = rng.lognormal(np.log(centre), 0.3, 5000)
        keys, counts = np.unique([_mid(v) for v in lat], return_counts=True)
        pools[f"r{pr}"] = dict(zip(keys.tolist(), counts.tolist()))
        rows.append((pr, f"r{pr}", 5000))
    return _rows(rows), pools


def test_an_interval_across_three_pools_is_never_narrower_than_one_bin():
    # Three pools whose runs fell in the same bins: a t interval of zero width, shown as the bin.
    same = {_mid(1_000_000): 4990, _mid(3_000_000): 10}
    t = A.cell_tails(_rows([(1, "a", 5000), (2, "b", 5000), (3, "c", 5000)]),
                     _hist({"a": same, "b": same, "c": same})).set_index("percentile")
    r = t.loc["p99"]
    # p99 = 1,000,000's bin: 524288..1048575 has bins of 8192 ns; k = 58 -> [999424, 1007616)
    assert r["value_ns"] == _mid(1_000_000) == 1003520 and r["unit"] == "pool" and r["n_units"] == 3
    assert (r["ci_low_ns"], r["ci_high_ns"]) == (999424, 1007616)
    assert "narrower than fio's bin" in r["note"] and r["interval"] == "t across 3 pools, log scale"
    # Pools that differ: the t interval of the log percentile (scipy), its ends rounded out to bins.
    rng = np.random.default_rng(27)
    for spread in (0.0, 0.002, 0.05, 0.3):
        rows, pools = _three_pools(rng, spread)
        r = A.cell_tails(rows, _hist(pools)).set_index("percentile").loc["p99"]
        logs = np.log([_np_percentile(h, 0.99) for h in pools.values()])
        half = sps.t.ppf(0.975, 2) * logs.std(ddof=1) / np.sqrt(3)
        low, high = np.exp(logs.mean() - half), np.exp(logs.mean() + half)
        assert r["ci_low_ns"] <= low * (1 + 1e-12) and r["ci_high_ns"] >= high * (1 - 1e-12)
        width = 1 << (int(r["ci_low_ns"]).bit_length() - 7)         # the bin at the low end, stat.h
        assert r["ci_high_ns"] - r["ci_low_ns"] >= width > 0
        assert _mid(r["ci_low_ns"]) - width // 2 == r["ci_low_ns"]  # ends are bin edges
        assert r["value_ns"] == pytest.approx(np.exp(logs.mean()))       # the interval's own centre


def test_one_pool_gives_an_interval_across_runs_conditional_on_it():
    h = {_mid(1_000_000): 1980, _mid(2_000_000): 20}
    g = {_mid(1_000_000): 1975, _mid(2_100_000): 25}
    rows = _rows([(1, "a", 2000), (1, "b", 2000)])
    r = A.cell_tails(rows, _hist({"a": h, "b": g})).set_index("percentile").loc["p99"]
    assert r["unit"] == "run" and r["interval"] == "t across 2 runs, log scale, conditional on one pool"
    assert any("conditional on one pool" in s for s in A.tail_lines(A.cell_tails(rows, _hist({"a": h, "b": g}))))


def test_no_interval_when_a_pool_alone_cannot_support_the_percentile():
    # merged, 22,000 I/Os support a p99.9; pool 3 alone (2,000) does not: leaving it out would select
    # the pools with more I/Os, the faster ones, so there is no interval rather than a biased one
    big = {_mid(1_000_000): 9990, _mid(9_000_000): 10}
    small = {_mid(2_000_000): 1990, _mid(9_000_000): 10}
    t = A.cell_tails(_rows([(1, "a", 10000), (2, "b", 10000), (3, "c", 2000)]),
                     _hist({"a": big, "b": big, "c": small})).set_index("percentile")
    r = t.loc["p99.9"]
    assert r["judged"] and r["ios"] == 22000 and np.isnan(r["ci_low_ns"])
    assert r["interval"] == "no interval: 1 of 3 pools has fewer than 10000 I/Os"


def test_runs_without_bins_beside_runs_with_them_are_named():
    t = A.cell_tails(_rows([(1, "a", 2000), (1, "old", 2000)]),
                     _hist({"a": {_mid(1_000_000): 2000}})).set_index("percentile")
    assert t.loc["p99", "n_runs_hist"] == 1 and "1 of 2 runs without histogram left out" in t.loc["p99", "note"]


def test_conclusions_that_compare_p99_say_what_they_average():
    df = synthetic_results(400, seed=4, shape="volblocksize")
    cmp = A.compare_table(df, "iops", "volblocksize_bytes", 16384)
    cmp99 = A.compare_table(df, "lat_p99_ns", "volblocksize_bytes", 16384)
    assert TAIL_NOTE in A.conclusions_volblocksize(cmp, cmp99, None, "iops")
    assert TAIL_NOTE not in A.conclusions_volblocksize(cmp, None, None, "iops")
    assert TAIL_NOTE in A.conclusions_compare(cmp99, "lat_p99_ns")
    assert TAIL_NOTE not in A.conclusions_compare(cmp, "iops")


# --- old raw ---------------------------------------------------------------------------------

def test_old_raw_without_bins_reads_the_runs_own_percentiles_and_says_so():
    sweep = A.load_sweep(VBS)            # recorded with plain json; no latency_hist.parquet beside it
    assert sweep.histograms is None
    df = A.select_admissible(sweep.results)
    t = A.cell_tails(df, sweep.histograms)
    assert len(t) == 4 * df.groupby(["workload", "direction", "layout", "volblocksize_bytes"]).ngroups
    assert (t["source"] == f"each run's own fio percentile ({NO_HISTOGRAM})").all()
    # a typical pool's p99 of raidz2 4K random reads: its three pools' own fio p99 (one run each), their
    # geometric mean (scipy.stats.gmean) with Student's t on the logs, the ends rounded out to fio's bins
    pick = lambda d: d[(d["layout"] == "raidz2") & (d["volblocksize_bytes"] == 4096) & (d["workload"] == "randread")]
    cell, runs = pick(t).set_index("percentile"), pick(df)
    logs = np.log(runs["lat_p99_ns"].to_numpy(float))
    half = sps.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    p99 = cell.loc["p99"]
    assert p99["value_ns"] == pytest.approx(sps.gmean(runs["lat_p99_ns"])) and p99["n"] == len(runs) == 3
    assert p99["ci_low_ns"] == _edges(np.exp(logs.mean() - half))[0]
    assert p99["ci_high_ns"] == _edges(np.exp(logs.mean() + half))[1]
    # no run of it has the 10,000 I/Os a p99.9 needs: not judged, and each pool named with its count
    p999 = cell.loc["p99.9"]
    assert not p999["judged"] and p999["unsupported"].count(" I/Os") == 3
    assert all(f"{p} has {n:,} I/Os" in p999["unsupported"] for p, n in zip(runs["pool_id"], runs["total_ios"]))
    # all I/Os cannot be pooled without bins
    pooled = A.cell_tails(df, sweep.histograms, estimand="pooled")
    assert (pooled["status"] == f"not judged: {NO_HISTOGRAM}").all() and pooled["value_ns"].isna().all()
    assert A.tail_lines(t)[0] == ("Latency tails: a typical pool's percentile, from each run's own fio percentile "
                                  f"({NO_HISTOGRAM}) (methods §18).")


def _small_store(tmp_path, runs=3):
    """The first `runs` runs of the volblocksize example as a store of its own, results rebuilt."""
    store = tmp_path / "sweep"
    store.mkdir()
    for name in ("spec.yaml", "plan.json", "provenance.json", "events.jsonl"):
        shutil.copy2(VBS / name, store / name)
    unpack_raw(VBS, store)
    for run in sorted((store / "raw").iterdir())[runs:]:
        shutil.rmtree(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # the runs left out are named as missing
        return store, Store.open(store).rebuild_results(parse_results)


def _graft_bins(attempt: Path) -> dict:
    """Give a plain-json run the lat bins json+ would have printed (all its reads at about 2 ms, ten at
    40 ms), as if it had been recorded after this change; returns the bins."""
    path = attempt / "fio" / "fio.json"
    data = json.loads(path.read_text())
    read = data["jobs"][0]["read"]
    n = read["total_ios"]
    bins = {str(_mid(2_000_000)): n - 10, str(_mid(40_000_000)): 10}
    read["lat_ns"]["bins"] = bins         # the run had lat_percentiles=1: its lat_ns is there, without bins
    path.write_text(json.dumps(data))
    return {int(k): v for k, v in bins.items()}


def test_the_store_derives_histograms_from_raw_and_verify_checks_them(tmp_path):
    store, results = _small_store(tmp_path)
    assert pd.read_parquet(store / HISTOGRAMS).empty           # plain json: no bins, and no error
    assert "tail_not_judged" in results
    run = results.loc[results["direction"] == "read", "run_id"].iloc[0]
    bins = _graft_bins(store / "raw" / run / "attempt-1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = Store.open(store).rebuild_results(parse_results)
    hist = pd.read_parquet(store / HISTOGRAMS)
    assert list(hist.columns) == ["run_id", "attempt", "direction", "bin_ns", "count"]
    assert set(hist["run_id"]) == {run} and dict(zip(hist["bin_ns"], hist["count"])) == bins
    assert hist["count"].sum() == results.set_index("run_id").loc[run, "total_ios"]
    sweep = A.load_sweep(store)
    t = A.cell_tails(A.select_admissible(sweep.results), sweep.histograms)
    assert (t["n_runs_hist"] > 0).sum() == 4                   # that run's cell, four percentiles
    # packed, the histograms travel and verify rebuilds and compares them
    dest = pack(store, tmp_path / "packed")
    assert HISTOGRAMS in (dest / MANIFEST).read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verify(dest)
        edited = pd.read_parquet(dest / HISTOGRAMS)
        edited.loc[0, "count"] += 1
        edited.to_parquet(dest / HISTOGRAMS, index=False)
        write_manifest(dest)                                    # a forged manifest: the raw files catch it
        with pytest.raises(ZbenchError, match="latency_hist.parquet does not match what its raw files give"):
            verify(dest)
        (dest / HISTOGRAMS).unlink()
        write_manifest(dest)
        with pytest.raises(ZbenchError, match="latency_hist.parquet is missing, but its raw files hold"):
            verify(dest)


# --- one estimand per number, and units counted (issue 46, item 4) ---------------------------

def _edges(value) -> tuple[int, int]:
    """fio's bin [low, high) holding `value` ns, by stat.h's rule written out (see _mid)."""
    v = int(value)
    m = v.bit_length() - 1
    if m <= 6:
        return v, v + 1
    width = 1 << (m - 6)
    low = (1 << m) + (v - (1 << m)) // width * width
    return low, low + width


def _rank_bin(hist: dict, rank: int) -> int:
    """The key of the bin holding the I/O of 1-based `rank`, with numpy."""
    keys = np.array(sorted(hist))
    cum = np.cumsum([hist[k] for k in keys])
    return int(keys[np.searchsorted(cum, rank)])


def _unequal_pools():
    """Three pools of unequal I/O counts whose own p99s differ: 3 ms, 1 ms and 2 ms."""
    a = {_mid(1_000_000): 1975, _mid(3_000_000): 25}      # 2,000 I/Os: the 1,980th is in 3 ms's bin
    b = {_mid(1_000_000): 1990, _mid(5_000_000): 10}      # 2,000 I/Os: the 1,980th is in 1 ms's bin
    c = {_mid(2_000_000): 9950, _mid(8_000_000): 50}      # 10,000 I/Os: the 9,900th is in 2 ms's bin
    return _rows([(1, "a", 2000), (2, "b", 2000), (3, "c", 10000)]), {"a": a, "b": b, "c": c}


def test_the_point_and_its_interval_estimate_the_same_thing():
    rows, pools = _unequal_pools()
    own = [_np_percentile(h, 0.99) for h in pools.values()]
    assert own == [_mid(3_000_000), _mid(1_000_000), _mid(2_000_000)]
    # The default, a typical pool's p99: the geometric mean of the pools' own p99 (scipy.stats.gmean), with
    # Student's t on their logs, exp(mean -/+ t(0.975, 2) sd / sqrt(3)), its ends rounded out to fio's bins.
    r = A.cell_tails(rows, _hist(pools)).set_index("percentile").loc["p99"]
    logs = np.log(own)
    half = sps.t.ppf(0.975, 2) * logs.std(ddof=1) / np.sqrt(3)
    assert r["value_ns"] == pytest.approx(sps.gmean(own)) and "typical pool" in r["estimand"]
    assert (r["ci_low_ns"], r["ci_high_ns"]) == (_edges(np.exp(logs.mean() - half))[0],
                                                 _edges(np.exp(logs.mean() + half))[1])
    assert r["n"] == 3 and r["n_units"] == 3
    # All I/Os pooled, the labelled alternative: the merged p99 and the order statistics of the 14,000 I/Os
    # around it. Merged, 3,965 I/Os in 1 ms's bin and 9,950 in 2 ms's: the 13,860th is in 2 ms's bin.
    # Ranks l = binom.ppf(0.025, 14000, 0.99) and u = binom.ppf(0.975, 14000, 0.99) + 1 cover the p99 with
    # P(l <= B <= u - 1) >= 95%, B ~ Binomial(14000, 0.99); their bins give the interval's ends.
    summed = {k: sum(h.get(k, 0) for h in pools.values()) for k in set().union(*pools.values())}
    p = A.cell_tails(rows, _hist(pools), estimand="pooled").set_index("percentile").loc["p99"]
    low, high = (int(sps.binom.ppf(x, 14000, 0.99)) for x in (0.025, 0.975))
    assert p["value_ns"] == _np_percentile(summed, 0.99) == _mid(2_000_000) and "all I/Os pooled" in p["estimand"]
    assert (p["ci_low_ns"], p["ci_high_ns"]) == (_edges(_rank_bin(summed, low))[0],
                                                 _edges(_rank_bin(summed, high + 1))[1])
    # The two differ here (1.82 ms, 2.01 ms): a point of one beside the interval of the other would be neither.
    assert r["value_ns"] != p["value_ns"]


def test_each_unit_has_a_distribution_free_interval_from_its_own_bins():
    rows, pools = _unequal_pools()
    u = A.unit_tails(rows, _hist(pools)).set_index(["percentile", "unit_name"])
    a = u.loc[("p99", "p1")]
    # pool 1's 2,000 I/Os: ranks l = binom.ppf(0.025, 2000, 0.99), u = binom.ppf(0.975, 2000, 0.99) + 1;
    # coverage P(l <= B <= u - 1) = binom.cdf(u - 1) - binom.cdf(l - 1) >= 95%
    lo, hi = int(sps.binom.ppf(0.025, 2000, 0.99)), int(sps.binom.ppf(0.975, 2000, 0.99)) + 1
    assert (lo, hi) == (a["os_low_rank"], a["os_high_rank"])
    assert a["os_level"] == pytest.approx(sps.binom.cdf(hi - 1, 2000, 0.99) - sps.binom.cdf(lo - 1, 2000, 0.99))
    assert a["os_level"] >= 0.95 and a["ios"] == 2000 and a["supported"]
    assert a["value_ns"] == _mid(3_000_000)
    assert (a["os_low_ns"], a["os_high_ns"]) == (_edges(_rank_bin(pools["a"], lo))[0],
                                                 _edges(_rank_bin(pools["a"], hi))[1])
    # its p99.9 from 2,000 I/Os (two expected beyond it) is not judged, and its upper rank lies past the
    # slowest I/O when binom.ppf(0.975, 2000, 0.999) + 1 > 2000: then no upper bound at all
    b = u.loc[("p99.9", "p1")]
    top = int(sps.binom.ppf(0.975, 2000, 0.999)) + 1
    assert not b["supported"] and np.isnan(b["value_ns"]) and (np.isinf(b["os_high_ns"]) == (top > 2000))


def test_a_unit_that_cannot_support_a_percentile_is_counted_and_named():
    big = {_mid(1_000_000): 9985, _mid(9_000_000): 15}        # 10,000 I/Os: p99.9 the 9,990th, 9 ms's bin
    other = {_mid(1_000_000): 9995, _mid(9_000_000): 5}       # 10,000 I/Os: the 9,990th in 1 ms's bin
    small = {_mid(2_000_000): 800, _mid(9_000_000): 12}       # 812 I/Os: a p99.9 needs 10,000
    rows = _rows([(1, "a", 10000), (2, "b", 10000), (3, "c", 812)])
    t = A.cell_tails(rows, _hist({"a": big, "b": other, "c": small}))
    r = t.set_index("percentile").loc["p99.9"]
    # it rests on the two pools that support it, and says so: n 2 of 3, pool p3 named with its count
    assert r["judged"] and r["n"] == 2 and r["n_units"] == 3
    assert r["value_ns"] == pytest.approx(sps.gmean([_mid(9_000_000), _mid(1_000_000)]))
    assert r["unsupported"] == "p3 has 812 I/Os" and np.isnan(r["ci_low_ns"])
    assert "2 of 3 pools support a p99.9" in r["note"] and "p3 has 812 I/Os" in r["note"]
    assert any("2 of 3 pools support a p99.9; p3 has 812 I/Os" in s for s in A.tail_lines(t))


def test_without_bins_the_runs_own_percentiles_are_used_and_labelled():
    rows = _rows([(1, "a", 2000), (2, "b", 2000), (3, "c", 900)]).assign(
        lat_p99_ns=[1_003_520.0, 2_007_040.0, np.nan])          # fio's own p99s; run c's blanked (900 I/Os)
    r = A.cell_tails(rows, None).set_index("percentile").loc["p99"]
    assert r["value_ns"] == pytest.approx(sps.gmean([1_003_520.0, 2_007_040.0]))
    assert NO_HISTOGRAM in r["source"] and r["n"] == 2 and r["unsupported"] == "p3 has 900 I/Os"
    pooled = A.cell_tails(rows, None, estimand="pooled").set_index("percentile").loc["p99"]
    assert pooled["status"] == f"not judged: {NO_HISTOGRAM}" and np.isnan(pooled["value_ns"])
def _pub_runs(iops=(175.0, 175.0, 175.0), ios=(20000, 20000, 20000), p99=None):
    """Three pools of a mirror, one randread run each."""
    return pd.DataFrame({"layout": "mirror", "vdevs": 1, "width": 2, "total_disks": 2, "data_disks": 1,
                         "workload": "randread", "direction": "read", "iops": list(iops), "bw_bytes_s": 4e5,
                         "total_ios": list(ios), "run_id": ["a", "b", "c"], "attempt": 1, "flagged": False,
                         "pool_id": ["p1", "p2", "p3"], "pool_replicate": [1, 2, 3],
                         "lat_p99_ns": list(p99) if p99 is not None else np.nan, "lat_p99_9_ns": np.nan})


def test_a_p99_in_the_summary_table_keeps_the_unit_it_cannot_use():
    from zbench_lib.analysis.report.pub_tables import display_table, export_table, summary_table

    # The scaling example's raidz3 1x8 seqread: three pools, one run each, no bins; the third's 816 I/Os
    # cannot support a p99, so fio's own p99 of it is blanked. Its mean over the other two, 185.6 ms, was
    # printed as the cell's with "n 3" beside it. Now: the geometric mean of the two (scipy.stats.gmean),
    # n 2, and the pool named.
    runs = _pub_runs(ios=(1018, 1032, 816), p99=(179306496.0, 191889408.0, np.nan))
    (row,) = summary_table(runs).to_dict("records")
    assert row["n"] == 3 and row["p99_n"] == 2
    assert row["p99_ms"] == pytest.approx(sps.gmean([179306496.0, 191889408.0]) / 1e6)
    assert "p3 has 816 I/Os" in row["tail_units"] and NO_HISTOGRAM in row["tail_estimand"]
    md = export_table(summary_table(runs), "md")
    assert "p3 has 816 I/Os" in md and "185.6" not in md
    assert display_table(summary_table(runs))[["p99_ms", "p99_ci"]].values.tolist() == [["185", "n=2, no CI"]]


def test_exports_carry_p99_and_p99_9_with_intervals_and_never_175_175():
    from zbench_lib.analysis.report.pub_tables import display_table, export_table, summary_table

    runs = _pub_runs()
    h = {_mid(1_000_000): 19_970, _mid(3_000_000): 30}       # each pool: 20,000 I/Os
    hist = _hist({r: h for r in ("a", "b", "c")})
    table = summary_table(runs, hist=hist)
    (row,) = table.to_dict("records")
    # every pool in the same bins: p99 1 ms's bin, p99.9 the 19,980th of 20,000, 3 ms's bin; the t interval
    # has zero width and is shown as the bin (methods §18)
    assert (row["p99_ci95_low_ms"], row["p99_ci95_high_ms"]) == tuple(e / 1e6 for e in _edges(1_000_000))
    assert (row["p99_9_ci95_low_ms"], row["p99_9_ci95_high_ms"]) == tuple(e / 1e6 for e in _edges(3_000_000))
    assert row["p99_n"] == row["p99_9_n"] == 3 and "typical pool" in row["tail_estimand"]
    for fmt_name in ("md", "latex", "html"):
        text = export_table(table, fmt_name)
        assert "175–175" not in text and "175--175" not in text and "one value (n = 3)" in text    # the IOPS
        assert "p99.9" in text and "typical pool" in text
    csv = export_table(table, "csv")
    assert all(c in csv.splitlines()[0] for c in ("p99_ci95_low_ms", "p99_9_ci95_high_ms", "tail_estimand"))
    # an interval of zero width in a tail column reads as one value with its n, as the IOPS one does
    flat = table.assign(p99_ci95_low_ms=row["p99_ms"], p99_ci95_high_ms=row["p99_ms"])
    assert display_table(flat)["p99_ci"][0] == "one value (n = 3)"


def _p99_comparison_rows():
    """4K against 16K on three pools each, with bins: 4K's pools at about 1 ms, 16K's at about 4 ms."""
    rows, hist = [], {}
    for size, centre in ((4096, 1_000_000), (16384, 4_000_000)):
        for pr, shift in ((1, 0.95), (2, 1.0), (3, 1.1)):
            run = f"{size}-{pr}"
            rows.append(dict(workload="randwrite", direction="write", layout="mirror", volblocksize_bytes=size,
                             pool_id=f"p{size}-{pr}", pool_replicate=pr, run_id=run, attempt=1, total_ios=5000,
                             iops=100.0))
            hist[run] = {_mid(centre): 4940, _mid(int(centre * 3 * shift)): 60}
    return pd.DataFrame(rows), hist


def test_a_p99_comparison_is_a_ratio_of_typical_pools_decided_by_the_one_rule():
    rows, per_run = _p99_comparison_rows()
    hist = _hist(per_run).assign(direction="write")
    cmp = A.compare_table(rows, "lat_p99_ns", "volblocksize_bytes", 16384, hist=hist)
    (r,) = cmp.to_dict("records")
    # each pool's own p99 from its bins (the 4,950th of 5,000, in the upper bin), then Welch's t on the logs
    # (scipy.stats.ttest_ind(equal_var=False)): the ratio of geometric means and its 95% interval
    own = {s: np.log([_np_percentile(per_run[f"{s}-{pr}"], 0.99) for pr in (1, 2, 3)]) for s in (4096, 16384)}
    res = sps.ttest_ind(own[4096], own[16384], equal_var=False)
    ci = res.confidence_interval(0.95)
    assert r["ratio"] == pytest.approx(np.exp(own[4096].mean() - own[16384].mean()))
    assert (r["ratio_ci_low"], r["ratio_ci_high"]) == pytest.approx((np.exp(ci.low), np.exp(ci.high)))
    assert r["p"] == pytest.approx(res.pvalue) and "typical pool" in r["estimand"]
    # a family of one: the deciding interval is that 95% one, below 1/(1.05): lower
    assert r["verdict"] == "lower" and r["decided_high"] == pytest.approx(np.exp(ci.high))


def test_a_p99_comparison_with_a_pool_short_of_ios_is_not_judged_and_names_it():
    rows, per_run = _p99_comparison_rows()
    per_run["4096-3"] = {_mid(1_000_000): 790, _mid(3_000_000): 10}          # 800 I/Os: no p99
    rows.loc[rows["run_id"] == "4096-3", "total_ios"] = 800
    hist = _hist(per_run).assign(direction="write")
    (r,) = A.compare_table(rows, "lat_p99_ns", "volblocksize_bytes", 16384, hist=hist).to_dict("records")
    # leaving the short pool out would compare the faster two: not judged, the pool named
    assert r["verdict"] == "not judged" and "p4096-3 has 800 I/Os" in r["note"] and np.isnan(r["holm_p"])
    # the same without bins: fio's own p99 of that run is blanked, and the comparison says so just as well
    own = rows.assign(lat_p99_ns=[np.nan if r == "4096-3" else _np_percentile(per_run[r], 0.99)
                                  for r in rows["run_id"]])
    (r,) = A.compare_table(own, "lat_p99_ns", "volblocksize_bytes", 16384).to_dict("records")
    assert r["verdict"] == "not judged" and "p4096-3 has 800 I/Os" in r["note"] and NO_HISTOGRAM in r["estimand"]


def test_the_result_summary_never_prints_175_175_and_says_what_its_p99_estimates():
    from zbench.result import Result

    r = Result(A.load_sweep(ROOT / "data" / "examples" / "iodepth-curve"))
    iops, p99 = r.summary_lines()[1:3]
    # the IOPS of 23 runs of one pool: the t interval of the mean on the log scale, m exp(-/+ t(0.975, 22) s / m
    # / sqrt(23)) (scipy.stats.t), 175.2 .. 175.4: printed "175-175" before, now to the decimals that differ
    v = r.admissible["iops"].to_numpy(float)
    half = sps.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / v.mean() / np.sqrt(len(v))
    lo, hi = v.mean() * np.exp(-half), v.mean() * np.exp(half)
    assert f"95% CI {lo:.1f}–{hi:.1f}, n = 23 runs" in iops and "175-175" not in iops
    assert "a typical run's p99 (one pool), from its runs' own fio p99" in p99
