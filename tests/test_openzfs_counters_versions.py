"""What the counter sampler and provenance read, on real captures of OpenZFS 2.1.11 and 2.3.2.

Captured by `scripts/capture_openzfs_outputs.py --counters` on a mirror of two lab disks
while fio wrote 16k blocks to a zvol. Each difference between the releases that zbench
meets is named here with the numbers read from the files.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from zbench_lib.measure.provenance import parse_module_parameters
from zbench_lib.zfs.zfsstats import ARC_COUNTERS, ARC_GAUGES, arc_delta, parse_kstat, parse_txgs, parse_zpool_iostat

FIXTURES = Path(__file__).parent / "fixtures" / "openzfs"
RELEASES = ("2.1", "2.3")


def _text(release: str, name: str) -> str:
    return (FIXTURES / release / name).read_text()


# -- arcstats ----------------------------------------------------------------------------------

def test_arcstats_iohits_exist_from_2_2_on_and_every_gauge_in_both():
    arc = {r: parse_kstat(_text(r, "arcstats.txt")) for r in RELEASES}
    assert [k for k in ARC_COUNTERS if k not in arc["2.1"]] == ["iohits", "demand_data_iohits"]
    assert [k for k in ARC_COUNTERS if k not in arc["2.3"]] == []
    assert all(k in arc[r] for r in RELEASES for k in ARC_GAUGES)
    # 2.1's metadata limit and 'p' (the MRU target) are gone in 2.3 (the ARC was reworked in 2.2)
    assert {"arc_meta_limit", "p"} <= set(arc["2.1"]) and not {"arc_meta_limit", "p"} & set(arc["2.3"])
    assert (arc["2.1"]["hits"], arc["2.1"]["misses"]) == (30358, 0)
    assert (arc["2.3"]["hits"], arc["2.3"]["iohits"], arc["2.3"]["misses"]) == (29672, 0, 0)


@pytest.mark.parametrize("release", RELEASES)
def test_arc_rates_and_hit_ratio_come_out_on_both_releases(release):
    before = parse_kstat(_text(release, "arcstats.txt"))
    after = dict(before, hits=before["hits"] + 300, misses=before["misses"] + 100)
    if "iohits" in before:
        after["iohits"] = before["iohits"] + 100       # 2.2+: hits on blocks still being read
    d = arc_delta(before, after, dt_s=2.0)
    assert d["hits_s"] == 150.0 and d["misses_s"] == 50.0
    assert d["hit_ratio"] == (0.75 if release == "2.1" else 0.8)    # (300 [+100 io]) / (+100 misses)
    assert ("iohits_s" in d) == (release == "2.3")
    assert d["size_bytes"] == {"2.1": 53999232.0, "2.3": 53769000.0}[release]


# -- zpool iostat -Hpvy -l ---------------------------------------------------------------------

def test_iostat_latency_columns_differ_by_one_and_parse_into_one_shape():
    fields = {r: {len(line.split("\t")) for line in _text(r, "zpool-iostat-Hpvyl-mirror-2.txt").splitlines()
                  if line.strip()} for r in RELEASES}
    assert fields == {"2.1": {17}, "2.3": {18}}          # 2.2 added rebuild_wait
    frames = {r: parse_zpool_iostat(_text(r, "zpool-iostat-Hpvyl-mirror-2.txt")) for r in RELEASES}
    assert list(frames["2.1"].columns) == list(frames["2.3"].columns)
    for r, df in frames.items():
        assert df["sample"].nunique() == 3 and list(df[df["sample"] == 0]["kind"]) == ["pool", "vdev", "disk", "disk"]
    # numbers read from the files: first sample's pool write ops and write wait
    first = {r: df[(df["sample"] == 0) & (df["kind"] == "pool")].iloc[0] for r, df in frames.items()}
    assert (first["2.1"]["write_ops_s"], first["2.1"]["total_wait_write_ns"]) == (1010.0, 1413834.0)
    assert (first["2.3"]["write_ops_s"], first["2.3"]["total_wait_write_ns"]) == (877.0, 1566845.0)
    assert first["2.1"]["trim_wait_ns"] != first["2.1"]["trim_wait_ns"]          # '-': no trims, NaN
    # the second sample's two disks, as printed
    disks = frames["2.1"][(frames["2.1"]["sample"] == 1) & (frames["2.1"]["kind"] == "disk")]
    assert disks["write_ops_s"].tolist() == [1303.0, 1332.0]


# -- txgs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("release,first,written", [("2.1", 29, 5201920), ("2.3", 50, 5029888)])
def test_txgs_of_both_releases_parse_alike(release, first, written):
    df = parse_txgs(_text(release, "txgs-mirror-2.txt"))
    assert len(df) == 100 and int(df["txg"].iloc[0]) == first and int(df["nwritten"].iloc[0]) == written
    assert set(df["state"].iloc[:5]) == {"C"}


# -- module parameters -------------------------------------------------------------------------

def test_module_parameters_are_recorded_whatever_each_release_names():
    params = {r: parse_module_parameters(_text(r, "module-parameters.txt")) for r in RELEASES}
    assert (len(params["2.1"]), len(params["2.3"])) == (301, 356)
    for r in RELEASES:       # what zbench itself reads exists in both
        assert params[r]["zfs_param.zfs_txg_timeout"] == "5"
        assert params[r]["zfs_param.zfs_dirty_data_max"] == "206239334"
    only_21 = set(params["2.1"]) - set(params["2.3"])
    only_23 = set(params["2.3"]) - set(params["2.1"])
    assert len(only_21) == 15 and "zfs_param.zfs_arc_meta_limit" in only_21
    assert len(only_23) == 70 and "zfs_param.zfs_arc_meta_balance" in only_23
    assert not math.isnan(float(params["2.3"]["zfs_param.zfs_arc_meta_balance"]))
