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
from zbench_lib.measure.fio_hist import (bin_edges, judge_run_tails, min_ios, percentile_of, run_histograms)
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
    t = A.cell_tails(_rows([(1, "a", 1000), (1, "b", 1000)]), _hist({"a": a, "b": b})).set_index("percentile")
    assert t.loc["p99", "value_ns"] == 2008 and t.loc["p99", "ios"] == 2000
    assert (t.loc["p99", "bin_lo_ns"], t.loc["p99", "bin_hi_ns"]) == (2000, 2016)
    assert t.loc["p50", "value_ns"] == _np_percentile(summed, 0.5) == 1004
    assert t.loc["p99.9", "status"] == "not judged: 2000 I/Os, a p99.9 needs 10000"


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
        assert r["units_geomean_ns"] == pytest.approx(np.exp(logs.mean()))


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

def test_old_raw_without_bins_is_not_judged_rather_than_an_error():
    sweep = A.load_sweep(VBS)            # recorded with plain json; no latency_hist.parquet beside it
    assert sweep.histograms is None
    df = A.select_admissible(sweep.results)
    t = A.cell_tails(df, sweep.histograms)
    assert len(t) == 4 * df.groupby(["workload", "direction", "layout", "volblocksize_bytes"]).ngroups
    assert (t["status"] == "not judged: no histogram in raw (run before json+)").all()
    assert t["value_ns"].isna().all() and t["ci_low_ns"].isna().all()
    # the labelled fallback: the median of the runs' own fio p99 (each run had >= 1,000 I/Os here)
    cell = t[(t["layout"] == "raidz2") & (t["volblocksize_bytes"] == 4096) & (t["workload"] == "randread")]
    runs = df[(df["layout"] == "raidz2") & (df["volblocksize_bytes"] == 4096) & (df["workload"] == "randread")]
    p99 = cell.set_index("percentile").loc["p99"]
    assert p99["runs_median_ns"] == np.median(runs["lat_p99_ns"]) and "not the cell's" in p99["note"]
    assert np.isnan(cell.set_index("percentile").loc["p99.99", "runs_median_ns"])   # 1,536-9,143 I/Os
    (line,) = A.tail_lines(t)
    assert line.startswith("Latency tails not judged: no histogram in raw (run before json+)")


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
