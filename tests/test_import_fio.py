"""`zbench import` (issue 49): fio results measured elsewhere, read into a sweep store the analysis, the
reports and the catalogue serve.

The inputs are real: tests/fixtures/fio_import/*.json were written by the fio installed here (fio 3.33,
scripts/capture_import_fixtures.py: several rw modes, json and json+, numjobs, group_reporting, two groups,
a trim, an fsync section, a text report), tests/fixtures/fio_clients_lat/fio.json by fio 3.33 in client/server
mode (two `fio --server` on 127.0.0.1, its README), and the fio 2.x fixtures of fio_import/fio2/ are written
by hand in fio 2.21's and 2.2.10's key layouts (stat.c at those tags), their expected values worked out by
hand below. One test runs the installed fio itself for a second.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import zbench as zb
from zbench_lib.analysis.data import columns
from zbench_lib.analysis.data.catalog import catalog, environment
from zbench_lib.analysis.data.coverage import cell_status
from zbench_lib.analysis.data.sweep_data import load_sweep, setting_text, varying_columns
from zbench_lib.analysis.report.compare_factor import auto_factor
from zbench_lib.analysis.report.stamp import caveat_line
from zbench_lib.analysis.stats.across import load_sweeps
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.events import Event
from zbench_lib.measure.fio_hist import percentile_of, run_histograms
from zbench_lib.measure.fio_layout import FIO2, FIO2_BINS, FIO2_KIB, LAT_FROM_CLAT, NO_N
from zbench_lib.measure.imported_rows import NO_LAT, NO_OPTIONS, group_rows, read_report
from zbench_lib.sweeps.importing import fields
from zbench_lib.sweeps.importing.import_store import ImportOptions, import_fio
from zbench_lib.sweeps.store.publish import verify

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "fio_import"
CLIENTS = ROOT / "tests" / "fixtures" / "fio_clients_lat" / "fio.json"
PATTERN = "{layout}/{disks}-disks/vbs-{volblocksize}/run-{rep}/fio.json"


def rows_of(path: Path, group: int = 0) -> list[dict]:
    return group_rows(read_report(path.read_text()), group)


def fio_doc(name: str) -> dict:
    text = (FIX / name).read_text()
    return json.loads(text[text.index("{"):])


def tree(root: Path, cells, reps: int = 3, fixture: str = "randread-libaio-lat.json") -> Path:
    """A nested source directory of copies of one real fio output, the configuration in the path."""
    for layout, disks, vbs in cells:
        for rep in range(1, reps + 1):
            dest = root / layout / f"{disks}-disks" / f"vbs-{vbs}" / f"run-{rep}" / "fio.json"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIX / fixture, dest)
    return root


def refused(src, tmp_path, **opts) -> str:
    out = tmp_path / "store"
    with pytest.raises(ZbenchError) as e:
        import_fio(src, out, ImportOptions(**opts))
    assert not out.exists() and not [p for p in out.parent.iterdir() if p.name.startswith(".store.")]
    return str(e.value)


# -- one fio report into rows: real fio 3.33 output --------------------------------------------------------

def test_a_psync_json_plus_run_reads_its_lat_percentiles_and_bins_from_clat():
    doc = fio_doc("randread-psync.json")
    read = doc["jobs"][0]["read"]
    assert "percentile" not in read["lat_ns"] and read["slat_ns"]["N"] == 0     # a sync engine: no submission
    (row,) = rows_of(FIX / "randread-psync.json")
    assert row["lat_pct_source"] == "clat" and LAT_FROM_CLAT in row["import_notes"]
    assert row["lat_p99_ns"] == read["clat_ns"]["percentile"]["99.000000"] == 16512
    assert row["lat_mean_ns"] == read["lat_ns"]["mean"]              # the mean stays lat's own
    bins = run_histograms(read_report((FIX / "randread-psync.json").read_text()).data)
    assert sum(b["count"] for b in bins) == read["total_ios"] == row["total_ios"] == 2891
    assert row["workload"] == "randread-4k" and row["template"] == "randread" and row["fio_jobs"] == 1
    assert (row["ioengine"], row["direct"], row["iodepth"], row["fio_size_bytes"], row["fio_runtime_s"]) == \
        ("psync", 0, 1, 4 * 1024 ** 2, 1.0)


def test_lat_percentiles_are_fio_s_own_where_the_job_printed_them():
    read = fio_doc("randread-libaio-lat.json")["jobs"][0]["read"]
    (row,) = rows_of(FIX / "randread-libaio-lat.json")
    assert row["lat_pct_source"] == "lat" and read["slat_ns"]["N"] == 3000
    assert row["lat_p99_ns"] == read["lat_ns"]["percentile"]["99.000000"] == 30336
    assert row["clat_p99_ns"] == read["clat_ns"]["percentile"]["99.000000"]
    assert math.isnan(row["lat_p99_9_ns"]) and "3000 I/Os: p99.9 needs 10000" in row["tail_not_judged"]


def test_an_async_engine_without_lat_percentiles_leaves_them_not_judged():
    (row,) = rows_of(FIX / "randwrite-libaio.json")                   # plain json, slat recorded
    assert row["lat_pct_source"] == "" and math.isnan(row["lat_p99_ns"]) and row["clat_p99_ns"] > 0
    assert row["tail_not_judged"].startswith(NO_LAT)
    assert (row["workload"], row["iodepth"], row["ioengine"]) == ("randwrite-4k", 8, "libaio")


def test_jobs_of_one_group_are_merged_as_group_reporting_merges_them():
    jobs = [j["write"] for j in fio_doc("seqwrite-numjobs2.json")["jobs"]]
    assert len(jobs) == 2
    (row,) = rows_of(FIX / "seqwrite-numjobs2.json")
    n = [j["lat_ns"]["N"] for j in jobs]
    m = [j["lat_ns"]["mean"] for j in jobs]
    s = [j["lat_ns"]["stddev"] for j in jobs]
    mean = (n[0] * m[0] + n[1] * m[1]) / (n[0] + n[1])
    # the union's S / (N - 1): each job's (n - 1) s^2 plus n (its mean - the union's)^2
    sd = math.sqrt(sum((k - 1) * v * v + k * (mu - mean) ** 2 for k, mu, v in zip(n, m, s)) / (sum(n) - 1))
    assert row["fio_jobs"] == 2 and row["numjobs"] == 2
    assert row["iops"] == pytest.approx(jobs[0]["iops"] + jobs[1]["iops"])
    assert row["io_bytes"] == jobs[0]["io_bytes"] + jobs[1]["io_bytes"]
    assert row["total_ios"] == jobs[0]["total_ios"] + jobs[1]["total_ios"]
    assert row["runtime_ms"] == max(j["runtime"] for j in jobs)
    assert row["lat_mean_ns"] == pytest.approx(mean) and row["lat_stddev_ns"] == pytest.approx(sd)
    assert row["lat_min_ns"] == min(j["lat_ns"]["min"] for j in jobs)
    summed: dict[int, int] = {}
    for j in jobs:                       # a sync engine: the lat histogram is clat's (no submission)
        for k, c in j["clat_ns"]["bins"].items():
            summed[int(k)] = summed.get(int(k), 0) + c
    assert row["lat_p99_ns"] == percentile_of(list(summed), list(summed.values()), Fraction(99, 100))
    assert math.isnan(row["clat_p99_ns"])        # the completion half of several jobs: not merged


def test_group_reporting_and_a_mixed_job_give_a_read_and_a_write_row():
    rows = rows_of(FIX / "randrw-group.json")
    assert [r["direction"] for r in rows] == ["read", "write"]
    assert {r["workload"] for r in rows} == {"mixed-8k"} and {r["template"] for r in rows} == {"mixed"}
    assert all(r["fio_jobs"] == 1 and r["numjobs"] == 2 and r["lat_pct_source"] == "lat" for r in rows)


def test_two_groups_are_two_measurements_of_two_workloads():
    report = read_report((FIX / "two-groups.json").read_text())
    assert report.groups() == (0, 1)
    (r0,), (r1,) = group_rows(report, 0), group_rows(report, 1)
    assert (r0["workload"], r0["direction"], r1["workload"], r1["direction"]) == \
        ("randread-4k", "read", "randwrite-4k", "write")
    assert r0["fio_size_bytes"] == r1["fio_size_bytes"] == 4 * 1024 ** 2     # the global options, both


def test_a_trim_section_and_an_fsync_section_are_read():
    (trim,) = rows_of(FIX / "randtrim-falloc.json")
    assert (trim["direction"], trim["workload"], trim["template"], trim["ioengine"]) == \
        ("trim", "randtrim-64k", None, "falloc")
    (wal,) = rows_of(FIX / "fsync-write.json")
    sync = fio_doc("fsync-write.json")["jobs"][0]["sync"]
    assert wal["template"] == "fsync-heavy" and wal["sync_lat_mean_ns"] == sync["lat_ns"]["mean"]


def test_client_server_output_is_summed_over_the_clients_and_checked_against_all_clients():
    text = CLIENTS.read_text()
    stats = json.loads(text[text.index("{"):])["client_stats"]
    clients = [e for e in stats if e["jobname"] != "All clients"]
    (row,) = rows_of(CLIENTS)
    assert row["clients"] == 2 and row["fio_jobs"] == 2
    assert row["iops"] == pytest.approx(sum(c["read"]["iops"] for c in clients))
    assert row["total_ios"] == sum(c["read"]["total_ios"] for c in clients)
    assert row["client_fio_sum_agrees"] is True            # fio's own "All clients" entry agrees with the sum
    (older,) = rows_of(CLIENTS.parent.parent / "fio_clients" / "fio.json")   # the capture without lat percentiles
    assert older["lat_pct_source"] == "clat" and older["client_fio_sum_agrees"] is True


def test_jobs_of_one_group_that_ran_two_workloads_are_refused():
    doc = fio_doc("two-groups.json")
    doc["jobs"][1]["groupid"] = 0                         # as if the stonewall were missing
    with pytest.raises(ZbenchError, match=r"jobs of group 0 differ in rw \(randread, randwrite\)"):
        group_rows(read_report(json.dumps(doc)), 0)


def test_a_release_without_sample_counts_reads_as_one_with_them():
    doc = fio_doc("randread-libaio-lat.json")
    for d in ("read", "write", "trim"):
        for lat in ("slat_ns", "clat_ns", "lat_ns"):
            doc["jobs"][0][d][lat].pop("N")                # fio before 3.18
    (old,) = group_rows(read_report(json.dumps(doc)), 0)
    (new,) = rows_of(FIX / "randread-libaio-lat.json")
    assert NO_N in old["import_notes"]
    same = [k for k in new if k != "import_notes"]
    assert {k: old[k] for k in same} == {k: new[k] for k in same}


# -- fio 2.x, hand-checked ---------------------------------------------------------------------------------

def test_the_fio_2_21_layout_hand_checked():
    (row,) = rows_of(FIX / "fio2" / "fio-2.21-randread.json")
    # io_bytes is bytes from 2.21 (beside io_kbytes 5000); no bw_bytes: 5,120,000 B x 1000 / 10,000 ms
    assert (row["io_bytes"], row["bw_bytes_s"], row["total_ios"], row["iops"]) == (5_120_000, 512_000, 1250, 125.0)
    # µs x 1000: lat mean 8000.1 µs, min 212 µs; clat mean 7990.5 µs
    assert (row["lat_mean_ns"], row["lat_min_ns"], row["clat_mean_ns"]) == (8_000_100.0, 212_000.0, 7_990_500.0)
    # no slat (zeros: a sync engine) and no lat percentiles in 2.x: clat's are its lat's, 20,096 µs at p99
    assert row["lat_pct_source"] == "clat" and row["lat_p99_ns"] == 20_096_000.0 and math.isnan(row["slat_mean_ns"])
    assert math.isnan(row["lat_p99_9_ns"])
    assert row["tail_not_judged"] == "1250 I/Os: p99.9 needs 10000, p99.99 needs 100000"
    assert (row["bs_bytes"], row["iodepth"], row["fio_size_bytes"], row["fio_runtime_s"]) == (4096, 1, 1024 ** 3, 10.0)
    assert FIO2 in row["import_notes"] and FIO2_BINS in row["import_notes"]
    assert run_histograms(read_report((FIX / "fio2" / "fio-2.21-randread.json").read_text()).data) == []


def test_the_fio_2_2_layout_hand_checked():
    (row,) = rows_of(FIX / "fio2" / "fio-2.2.10-randwrite.json")
    # io_bytes is KiB before 2.21: 16,000 KiB; bw_bytes 16,384,000 B x 1000 / 10,000 ms
    assert (row["io_bytes"], row["bw_bytes_s"], row["total_ios"]) == (16_384_000, 1_638_400, 4000)
    assert (row["lat_mean_ns"], row["slat_mean_ns"], row["clat_p99_ns"]) == (39_990_400.0, 6_200.0, 91_648_000.0)
    # libaio recorded a submission latency: clat is half the wait, and 2.x printed no lat percentiles
    assert row["lat_pct_source"] == "" and math.isnan(row["lat_p99_ns"]) and row["tail_not_judged"].startswith(NO_LAT)
    # fio before 2.3 printed no options: what ran is unknown (None), never fio's defaults
    assert (row["rw"], row["bs_bytes"], row["iodepth"], row["ioengine"], row["workload"]) == \
        (None, None, None, None, "rw-hdd")
    assert FIO2_KIB in row["import_notes"] and NO_OPTIONS in row["import_notes"]
    assert LAT_FROM_CLAT not in row["import_notes"]          # its empty read section is not read


# -- malformed input: refused, one line per file, nothing written ------------------------------------------

def _bad(tmp_path: Path, name: str, text: str) -> Path:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    shutil.copyfile(FIX / "randread-libaio-lat.json", src / "good.json")
    (src / name).write_text(text)
    return src


GOOD = (FIX / "randread-libaio-lat.json").read_text()


@pytest.mark.parametrize("text, why", [
    (GOOD[: len(GOOD) // 2], "fio output is not valid JSON"),                               # truncated
    ((FIX / "text-report.json").read_text(), "fio output holds no JSON object"),            # fio's text report
    ('{"fio version": "fio-3.33", "timestamp": 1}', "fio JSON has no 'jobs' list"),         # no job at all
    ('{"fio version": "fio-3.33", "jobs": []}', "fio JSON holds no job"),                    # an empty jobs list
    (GOOD.replace('"error" : 0', '"error" : 5', 1), "ended with fio error 5"),
    (GOOD.replace('"read" : {', '"mixed" : {', 1), "'mixed' section (unified_rw_reporting)"),
], ids=["truncated", "text-report", "no-jobs-list", "empty-jobs", "job-error", "unified-rw"])
def test_a_malformed_file_refuses_the_import_in_one_line_naming_it(tmp_path, text, why):
    message = refused(_bad(tmp_path, "bad.json", text), tmp_path)
    lines = message.splitlines()
    assert "1 file(s)" in lines[0] and "nothing written" in lines[0]
    assert len(lines) == 2 and lines[1].strip().startswith("bad.json: ") and why in lines[1]


def test_mixed_fio_versions_in_one_cell_refuse_the_cell_naming_each_file(tmp_path):
    src = _bad(tmp_path, "older.json", GOOD.replace('"fio version" : "fio-3.33"', '"fio version" : "fio-3.28"'))
    lines = refused(src, tmp_path).splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == ["good.json", "older.json"]
    assert all("its cell mixes fio versions (fio-3.28 (1), fio-3.33 (1))" in line for line in lines)


def test_set_aside_imports_the_rest_and_names_each_file_left_out(tmp_path):
    src = _bad(tmp_path, "bad.json", GOOD[:100])
    shutil.copyfile(FIX / "randwrite-libaio.json", src / "other.json")
    result = import_fio(src, tmp_path / "store", ImportOptions(set_aside=True))
    assert len(result.plan.runs) == 2 and "bad.json: fio output is not valid JSON" in result.summary
    events = [json.loads(x) for x in (tmp_path / "store" / "events.jsonl").read_text().splitlines()]
    aside = [e for e in events if e["event"] == Event.IMPORT_SET_ASIDE]
    assert [e["file"] for e in aside] == ["bad.json"]
    assert json.loads((tmp_path / "store" / "provenance.json").read_text())["set_aside"][0].startswith("bad.json: ")


# -- the configuration: the path's fields, the registry's checks, the map ----------------------------------

CELLS = [("mirror", 4, "4k"), ("mirror", 4, "16k"), ("raidz2", 6, "4k"), ("raidz2", 6, "16k")]


def test_a_nested_tree_imports_with_its_fields_typed_and_checked(tmp_path):
    src = tree(tmp_path / "src", CELLS, reps=3)
    result = import_fio(src, tmp_path / "store", ImportOptions(path_pattern=PATTERN))
    df = load_sweep(tmp_path / "store").results
    assert result.rows == len(df) == 12 and df["cell_id"].nunique() == 4
    assert "runs: 12 in 4 cells; repetitions: 3 per cell" in result.summary
    assert "from the path: layout: mirror, raidz2; disks: 4, 6; volblocksize: 4K, 16K; rep: 1-3 (from each " \
           "layout and its disks: data_disks: 2, 4; width: 2, 6; vdevs: 1, 2)" in result.summary
    raidz2 = df[df["layout"] == "raidz2"]
    assert set(raidz2["total_disks"]) == {6} and set(raidz2["data_disks"]) == {4} and set(raidz2["width"]) == {6}
    mirror = df[df["layout"] == "mirror"]
    assert set(mirror["vdevs"]) == {2} and set(mirror["data_disks"]) == {2}
    assert sorted(df["volblocksize_bytes"].unique()) == [4096, 16384]
    assert sorted(df["rep"].unique()) == [1, 2, 3] and set(df["imported"]) == {True}
    assert set(df["import_source"].str.endswith("/fio.json")) == {True}


def test_a_value_the_registry_refuses_is_one_line_naming_the_file(tmp_path):
    src = tree(tmp_path / "src", [("mirror", 4, "4k"), ("raidz9", 4, "4k"), ("mirror", 4, "17k")], reps=1)
    lines = refused(src, tmp_path, path_pattern=PATTERN).splitlines()[1:]
    assert lines == [
        "  mirror/4-disks/vbs-17k/run-1/fio.json: volblocksize: '17k' is not a power of two",
        "  raidz9/4-disks/vbs-4k/run-1/fio.json: layout: unknown layout family 'raidz9'; expected one of stripe, "
        "mirror, raidz1, raidz2, raidz3, draid1, draid2, draid3, raw"]


def test_a_layout_its_disks_cannot_make_and_a_surface_that_refuses_a_factor(tmp_path):
    src = tree(tmp_path / "src", [("raidz2", 2, "4k")], reps=1)
    assert "raidz2 needs width >= 3" in refused(src, tmp_path, path_pattern=PATTERN)
    src = tree(tmp_path / "src2", [("mirror", 4, "4k")], reps=1)
    assert "volblocksize does not apply to a dataset sweep" in refused(src, tmp_path, path_pattern=PATTERN,
                                                                       surface="dataset")


def test_a_file_the_pattern_does_not_match_is_named_and_a_pattern_that_matches_none_refuses(tmp_path):
    src = tree(tmp_path / "src", [("mirror", 4, "4k")], reps=2)
    shutil.copyfile(FIX / "randread-libaio-lat.json", src / "stray.json")
    message = refused(src, tmp_path, path_pattern=PATTERN)
    assert message.splitlines()[1] == "  stray.json: does not match the path pattern"
    with pytest.raises(ConfigError, match=r"no file matches the path pattern '\{kernel\}/x.json'"):
        import_fio(src, tmp_path / "store", ImportOptions(path_pattern="{kernel}/x.json"))


def test_a_field_fio_contradicts_is_refused_and_one_it_does_not_state_fills_in(tmp_path):
    src = tmp_path / "src" / "numjobs-4"
    src.mkdir(parents=True)
    shutil.copyfile(FIX / "randread-libaio-lat.json", src / "a.json")
    message = refused(src.parent, tmp_path, path_pattern="numjobs-{numjobs}/*.json")
    assert "a.json: numjobs is 4 in its path or the map, but fio's own options say 1" in message
    old = tmp_path / "old" / "bs-4k" / "qd-16"
    old.mkdir(parents=True)
    shutil.copyfile(FIX / "fio2" / "fio-2.2.10-randwrite.json", old / "w.json")
    import_fio(old.parents[1], tmp_path / "store", ImportOptions(path_pattern="bs-{bs}/qd-{iodepth}/*.json"))
    (row,) = load_sweep(tmp_path / "store").results.to_dict("records")
    assert (row["bs_bytes"], row["iodepth"], row["rw"]) == (4096, 16, None)


def test_a_repetition_given_twice_is_refused(tmp_path):
    src = tree(tmp_path / "src", [("mirror", 4, "4k")], reps=1)
    twin = src / "mirror" / "4-disks" / "vbs-4k" / "run-01" / "fio.json"
    twin.parent.mkdir()
    shutil.copyfile(FIX / "randread-libaio-lat.json", twin)
    # "run-01" and "run-1" are both rep 1: the first in path order stays, the other is named
    assert "run-1/fio.json: rep 1 of its cell again (also mirror/4-disks/vbs-4k/run-01/fio.json)" in \
        refused(src, tmp_path, path_pattern=PATTERN)


def test_user_labels_from_a_map_csv_or_yaml(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a.json", "b.json", "c.json", "d.json"):
        shutil.copyfile(FIX / "randread-libaio-lat.json", src / name)
    csv = tmp_path / "map.csv"
    csv.write_text("file,kernel,layout,disks\na.json,6.1,mirror,4\nb.json,6.1,mirror,4\nc.json,6.6,mirror,4\n"
                   "d.json,6.6,mirror,4\n")
    yml = tmp_path / "map.yaml"
    yml.write_text("".join(f"{f}: {{kernel: '{k}', layout: mirror, disks: 4}}\n"
                           for f, k in (("a.json", "6.1"), ("b.json", "6.1"), ("c.json", "6.6"), ("d.json", "6.6"))))
    tables = []
    for m in (csv, yml):
        import_fio(src, tmp_path / m.suffix[1:], ImportOptions(map_path=str(m)))
        tables.append(load_sweep(tmp_path / m.suffix[1:]).results)
    cols = ["run_id", "label_kernel", "layout", "data_disks", "iops"]
    pd.testing.assert_frame_equal(tables[0][cols], tables[1][cols])
    assert sorted(tables[0]["label_kernel"].unique()) == ["6.1", "6.6"]


def test_one_file_per_configuration_imports_with_n_1_and_says_no_interval(tmp_path):
    src = tree(tmp_path / "src", CELLS[:2], reps=1)
    result = import_fio(src, tmp_path / "store", ImportOptions(path_pattern=PATTERN))
    assert "repetitions: 1 per cell (one run per cell: no interval)" in result.summary
    sweep = load_sweep(tmp_path / "store")
    assert "One run per cell: no interval." in caveat_line(sweep.results)
    status = cell_status(sweep.results, sweep.plan)
    assert len(status) == 2 and status["status"].str.endswith("1 admissible run (a CI needs 2)").all()


# -- the store: immutable copies, checksummed, verified --------------------------------------------------

def test_the_store_verifies_and_holds_the_files_unchanged(tmp_path):
    src = tree(tmp_path / "src", CELLS[:2], reps=2, fixture="seqwrite-numjobs2.json")
    import_fio(src, tmp_path / "store", ImportOptions(path_pattern=PATTERN))
    store = tmp_path / "store"
    rebuilt = verify(store)
    assert rebuilt.attrs["manifest"].startswith("checked: ") and len(rebuilt) == 4
    for meta_path in sorted(store.glob("raw/*/attempt-1/meta.json")):
        meta = json.loads(meta_path.read_text())
        copy = meta_path.parent / meta["import"]["file"]
        assert copy.read_bytes() == (src / meta["import"]["source"]).read_bytes()
    hist = pd.read_parquet(store / "latency_hist.parquet")
    assert hist.groupby("run_id")["count"].sum().tolist() == [2002] * 4 or len(hist["run_id"].unique()) == 4
    copy = next(store.glob("raw/*/attempt-1/import/fio.json"))
    copy.write_text(copy.read_text().replace('"iops" : 5', '"iops" : 6', 1))
    with pytest.raises(ZbenchError, match="edited"):
        verify(store)


def test_an_import_never_overwrites(tmp_path):
    (tmp_path / "store").mkdir()
    with pytest.raises(ZbenchError, match="exists; an import writes a new store"):
        import_fio(FIX / "randwrite-libaio.json", tmp_path / "store")


# -- the analysis, reports and catalogue serve it --------------------------------------------------------

def test_the_label_prefix_is_one():
    assert fields.LABEL_PREFIX == columns.LABEL_PREFIX


def test_a_user_label_is_a_configuration_column_the_comparison_takes(tmp_path):
    src = tmp_path / "src"
    for kernel in ("6.1", "6.6"):
        tree(src / f"kernel-{kernel}", [("raidz2", 6, "16k")], reps=2)
    import_fio(src, tmp_path / "store", ImportOptions(path_pattern="kernel-{kernel}/" + PATTERN))
    df = load_sweep(tmp_path / "store").results
    assert "label_kernel" in varying_columns(df) and auto_factor(df) == "label_kernel"
    assert setting_text("label_kernel", "6.6") == "kernel 6.6"
    assert df.groupby("label_kernel")["cell_id"].nunique().tolist() == [1, 1]


def test_the_caveat_says_what_an_import_cannot(tmp_path):
    import_fio(FIX / "randread-libaio-lat.json", tmp_path / "store", ImportOptions(environment={"zfs": "2.2.2"}))
    line = caveat_line(load_sweep(tmp_path / "store").results)
    assert line.startswith("Imported fio results (1 runs read from fio JSON measured elsewhere): no counters were "
                           "recorded, so the truth checks are not judged (fio's own figures allow none here)")
    assert "environment: zfs 2.2.2 (as given)." in line and "Measured on the sweep's own host" not in line


def test_the_catalog_lists_an_import_and_refuses_to_mix_it_with_a_lab_sweep(tmp_path):
    import_fio(FIX / "randread-libaio-lat.json", tmp_path / "sweeps" / "mine")
    t = catalog([tmp_path / "sweeps"])
    assert t["sweep"].tolist() == ["mine"] and t["zfs"].tolist() == t["disk_model"].tolist() == ["not recorded"]
    assert environment(tmp_path / "sweeps" / "mine").host == "not recorded"
    with pytest.raises(ConfigError, match=r"these sweeps differ in zfs \(scaling: 2.3; mine: not recorded\)"):
        load_sweeps([tmp_path / "sweeps" / "mine", ROOT / "data" / "examples" / "scaling"])
    both = load_sweeps([tmp_path / "sweeps" / "mine", ROOT / "data" / "examples" / "scaling"], allow_mixed=True)
    assert set(both.environments["zfs"]) == {"not recorded", "2.3"}


def test_the_environment_as_given_reaches_the_catalog(tmp_path):
    import_fio(FIX / "randread-libaio-lat.json", tmp_path / "mine",
               ImportOptions(environment={"zfs": "2.2.2", "host": "bench1", "kernel": "6.1.0-18"}))
    env = environment(tmp_path / "mine")
    assert (env.zfs, env.host, env.disk_model) == ("2.2", "bench1", "not recorded")


# -- the command and the notebooks' API ------------------------------------------------------------------

def zbench(*args):
    return subprocess.run([sys.executable, "-m", "zbench_lib.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_the_cli_dry_run_prints_the_summary_and_writes_nothing(tmp_path):
    src = tree(tmp_path / "src", CELLS, reps=2)
    res = zbench("import", str(src), "--out", str(tmp_path / "store"), "--path-pattern", PATTERN, "--dry-run",
                 "--env", "zfs=2.2.2")
    assert res.returncode == 0, res.stderr
    assert "files: 8 found, 8 imported, 0 left out" in res.stdout and "8 in 4 cells" in res.stdout
    assert "environment: zfs 2.2.2 (as given)" in res.stdout and not (tmp_path / "store").exists()


def test_the_cli_refuses_in_one_line_per_file(tmp_path):
    res = zbench("import", str(_bad(tmp_path, "bad.json", "fio: no such option\n")), "--out", str(tmp_path / "s"))
    assert res.returncode == 2 and res.stderr.splitlines()[1] == "  bad.json: fio output holds no JSON object"
    assert not (tmp_path / "s").exists()


def test_zb_import_fio_is_the_command_in_python(tmp_path):
    result = zb.import_fio(FIX / "randrw-group.json", tmp_path / "store", dry_run=True)
    assert result.path is None and "runs: 1 in 1 cells" in result.summary
    with pytest.raises(zb.InvalidInput, match="unknown option.*pattern; import_fio takes path_pattern"):
        zb.import_fio(FIX, tmp_path / "store", pattern="x")
    with pytest.raises(zb.InvalidInput, match="cannot be imported"):
        zb.import_fio(FIX, tmp_path / "store")


@pytest.mark.skipif(shutil.which("fio") is None, reason="no fio on this machine")
def test_a_fresh_run_of_the_installed_fio_imports(tmp_path):
    out = tmp_path / "src" / "raidz1" / "4-disks" / "vbs-16k" / "run-1" / "fio.json"
    out.parent.mkdir(parents=True)
    subprocess.run(["nice", "-n", "19", "fio", "--name=rr", f"--filename={tmp_path / 'data.bin'}", "--size=4M",
                    "--runtime=1", "--time_based", "--rw=randread", "--bs=4k", "--ioengine=psync", "--rate_iops=500",
                    "--output-format=json+", f"--output={out}"], check=True, timeout=60, capture_output=True)
    result = import_fio(tmp_path / "src", tmp_path / "store", ImportOptions(path_pattern=PATTERN))
    (row,) = load_sweep(tmp_path / "store").results.to_dict("records")
    assert result.rows == 1 and row["layout"] == "raidz1" and row["data_disks"] == 3 and row["iops"] > 0
    assert verify(tmp_path / "store").attrs["manifest"].startswith("checked")


def test_an_imported_store_packs_and_its_pack_verifies(tmp_path):
    from zbench_lib.sweeps.store.publish import pack
    import_fio(tree(tmp_path / "src", CELLS[:2], reps=2), tmp_path / "store", ImportOptions(path_pattern=PATTERN))
    packed = pack(tmp_path / "store", tmp_path / "packed")
    assert verify(packed).attrs["manifest"].startswith("checked: ") and not (packed / "raw").exists()


def test_the_first_screen_of_an_imported_block_size_study_with_two_widths_of_a_layout(tmp_path):
    from zbench_lib.analysis.data.flags import select_admissible
    from zbench_lib.analysis.report.headline import study_headline
    from zbench_lib.analysis.report.report import applicable_notebooks
    cells = [("raidz2", d, v) for d in (4, 6) for v in ("4k", "16k")]
    import_fio(tree(tmp_path / "src", cells, reps=2), tmp_path / "store", ImportOptions(path_pattern=PATTERN))
    sweep = load_sweep(tmp_path / "store")
    adm = select_admissible(sweep.results, False)
    assert applicable_notebooks(adm) == ["analysis-scaling", "analysis-volblocksize"]
    head = study_headline(sweep, adm, False)
    assert head["kind"] == "scaling" and head["answers"]
    labelled = adm.assign(label_kernel=["6.1", "6.6"] * (len(adm) // 2))
    assert "analysis-volblocksize" not in applicable_notebooks(labelled)     # its maps cannot hold the label


def test_zb_load_result_reads_one_imported_configuration_and_says_what_it_cannot(tmp_path):
    import_fio(FIX / "randread-libaio-lat.json", tmp_path / "store", ImportOptions(environment={"host": "bench1"}))
    text = repr(zb.load_result(tmp_path / "store"))
    assert text.startswith("layout not recorded, randread-4k 4K x4\nIOPS: 2,997")
    assert "n = 1 imported runs (whether they ran on one pool is not recorded)" in text
    assert "Imported fio results (1 runs read from fio JSON measured elsewhere)" in text and "host bench1" in text


def test_a_controller_s_report_imports_with_its_clients_and_its_check(tmp_path):
    import_fio(CLIENTS, tmp_path / "store")
    sweep = load_sweep(tmp_path / "store")
    (row,) = sweep.results.to_dict("records")
    assert row["clients"] == 2 and row["client_fio_sum_agrees"] is True and sweep.histograms["count"].sum() == 6002
    assert "but where fio's own figures allow: the clients' sum against fio's 'All clients' in 1 runs" in \
        caveat_line(sweep.results)
