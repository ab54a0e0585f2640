"""Targets: zvol/dataset validation, sizes, zfs create/get argv, JSON read-back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.zfs.targets import (Dataset, Zvol, parse_size, parse_zfs_get_json, parse_zpool_get_json,
                                property_mismatches, target_from_dict, zfs_create_argv, zfs_get_argv,
                                zpool_get_argv)

FIXTURES = Path(__file__).parent / "fixtures" / "zfs"
K, M, G = 1024, 1024 ** 2, 1024 ** 3


@pytest.mark.parametrize("text, expected", [
    ("1G", G), ("512M", 512 * M), ("8k", 8 * K), ("128K", 128 * K), ("4096", 4096), (8192, 8192),
    ("16KiB", 16 * K),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text, message", [
    ("-1G", "cannot parse"), (-5, "cannot be negative"), ("0", "must be greater than zero"),
    ("lots", "cannot parse"), ("0.3k", "not a whole number"), (None, "expected a size"),
    (True, "expected a size"),
])
def test_parse_size_rejects(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_size(text)


def test_parse_size_zero_when_allowed():
    assert parse_size("0", allow_zero=True) == 0


INVALID_TARGETS = [
    ({"kind": "zvol", "name": "v", "volsize": "1G", "volblocksize": "12K"},
     "volblocksize 12288 is not a power of two"),
    ({"kind": "zvol", "name": "v", "volsize": "1G", "volblocksize": 256},
     r"volblocksize 256 is outside 512\.\.128K"),
    ({"kind": "zvol", "name": "v", "volsize": "1G", "volblocksize": "256K"},
     r"volblocksize 256K is outside 512\.\.128K \(raise max_volblocksize"),
    ({"kind": "zvol", "name": "v", "volsize": "0"}, "zvol volsize: must be greater than zero"),
    ({"kind": "zvol", "name": "v", "volsize": 1000000, "volblocksize": "16K"},
     "volsize 1000000 is not a multiple of volblocksize 16K"),
    ({"kind": "zvol", "name": "v"}, "missing required key 'volsize'"),
    ({"kind": "zvol", "name": "v", "volsize": "1G", "recordsize": "16K"},
     r"recordsize does not apply to a zvol \(use volblocksize\)"),
    ({"kind": "dataset", "name": "d", "volblocksize": "16K"}, "volblocksize applies only to zvols"),
    ({"kind": "dataset", "name": "d", "recordsize": "2M"}, r"recordsize 2M is outside 512\.\.1M"),
    ({"kind": "dataset", "name": "d", "recordsize": "48K"}, "recordsize 49152 is not a power of two"),
    ({"kind": "dataset", "name": "d", "recordsize": "256"}, r"recordsize 256 is outside 512"),
    ({"kind": "dataset", "name": "d", "sync": "sometimes"},
     r"sync='sometimes' is not allowed; expected one of always, disabled, standard"),
    ({"kind": "dataset", "name": "d", "logbias": "fast"},
     r"logbias='fast' is not allowed; expected one of latency, throughput"),
    ({"kind": "dataset", "name": "d", "primarycache": "some"},
     r"primarycache='some' is not allowed; expected one of all, metadata, none"),
    ({"kind": "dataset", "name": "d", "secondarycache": "yes"}, r"secondarycache='yes' is not allowed"),
    ({"kind": "dataset", "name": "d", "checksum": "md5"}, r"checksum='md5' is not allowed; expected one of"),
    ({"kind": "dataset", "name": "d", "compression": "brotli"},
     r"compression='brotli' is not allowed; expected one of on, off, lz4"),
    ({"kind": "dataset", "name": "d", "copies": 4}, "copies must be 1, 2 or 3, got 4"),
    ({"kind": "dataset", "name": "d", "atime": "maybe"}, r"atime='maybe' is not allowed"),
    ({"kind": "dataset", "name": "d", "dedup": "on"}, r"unknown dataset key\(s\): 'dedup'"),
    ({"kind": "dataset", "name": "/abs"}, "must be relative to the pool"),
    ({"kind": "dataset", "name": "a//b"}, "must be relative to the pool"),
    ({"kind": "dataset", "name": "snap@x"}, "must be relative to the pool"),
    ({"kind": "dataset"}, "missing required key 'name'"),
    ({"kind": "lun", "name": "x"}, "target kind must be 'zvol' or 'dataset'"),
]


@pytest.mark.parametrize("spec, message", INVALID_TARGETS)
def test_invalid_targets_rejected_with_specific_message(spec, message):
    with pytest.raises(ConfigError, match=message):
        target_from_dict(spec)


def test_every_problem_named():
    with pytest.raises(ConfigError) as exc:
        Zvol("v", 1000, 3000, sync="x", copies=0).validate()
    text = str(exc.value)
    assert "sync='x'" in text and "copies must be" in text and "not a power of two" in text


def test_max_limits_raise_when_host_accepts_more():
    z = Zvol("v", G, 1 * M)
    with pytest.raises(ConfigError, match="outside 512..128K"):
        z.validate()
    assert z.validate(max_volblocksize=16 * M) is z
    d = Dataset("d", 16 * M)
    assert d.validate(max_recordsize=16 * M) is d
    assert Zvol.from_dict({"name": "v", "volsize": "1G", "volblocksize": "1M"},
                          max_volblocksize=16 * M).volblocksize_bytes == M


def test_kind_mismatch_rejected():
    with pytest.raises(ConfigError, match="spec of kind 'dataset' given to zvol"):
        Zvol.from_dict({"kind": "dataset", "name": "x", "volsize": "1G"})


@pytest.mark.parametrize("target", [
    Zvol("vm/disk0", G, 8 * K, compression="off", sync="always", logbias="throughput",
         primarycache="metadata", secondarycache="none", checksum="sha256", copies=2),
    Zvol("v", 512 * M),
    Dataset("db", 16 * K, "off", compression="zstd-3", sync="disabled"),
    Dataset("plain"),
])
def test_dict_round_trip(target):
    d = json.loads(json.dumps(target.to_dict()))
    assert target_from_dict(d) == target


def test_yaml_boolean_atime_accepted():
    assert Dataset.from_dict({"name": "d", "atime": False}).atime == "off"


def test_zfs_create_argv_zvol():
    z = Zvol("vm0", G, 16 * K, compression="off", sync="always", copies=1)
    assert zfs_create_argv("zb-t", z) == [
        "zfs", "create", "-V", str(G), "-b", "16384",
        "-o", "compression=off", "-o", "sync=always", "-o", "copies=1", "zb-t/vm0"]


def test_zfs_create_argv_dataset():
    d = Dataset("db", 16 * K, "off", primarycache="metadata", logbias="latency")
    assert zfs_create_argv("zb-t", d) == [
        "zfs", "create", "-o", "recordsize=16384", "-o", "logbias=latency",
        "-o", "primarycache=metadata", "-o", "atime=off", "zb-t/db"]


def test_zfs_create_argv_validates():
    with pytest.raises(ConfigError, match="invalid pool name"):
        zfs_create_argv("1bad", Dataset("d"))
    with pytest.raises(ConfigError, match="not a multiple"):
        zfs_create_argv("zb-t", Zvol("v", 1000))


def test_get_argv():
    assert zfs_get_argv("zb-t/vm0") == ["zfs", "get", "-j", "-p", "all", "zb-t/vm0"]
    assert zpool_get_argv("zb-t") == ["zpool", "get", "-j", "-p", "all", "zb-t"]


def test_parse_zfs_get_lab_capture():
    # Real `zfs get -j -p all tank/vol` (OpenZFS 2.3.2): values are strings, made int here.
    props = parse_zfs_get_json((FIXTURES / "lab-get-zvol-16k.json").read_text())
    assert parse_zfs_get_json((FIXTURES / "lab-get-zvol-16k.json").read_text(), "tank/vol") == props
    assert len(props) == 46 and props["type"] == "volume"
    assert props["volsize"] == 256 * M and props["volblocksize"] == 16 * K      # "268435456", "16384"
    assert props["compression"] == "on" and props["sync"] == "standard" and props["logbias"] == "latency"
    assert props["primarycache"] == "all" and props["secondarycache"] == "all"  # source DEFAULT
    assert props["compressratio"] == "1.00"                                     # a ratio stays a string
    # refreservation 274726912 = volsize 268435456 + 6291456 of overhead; used = refreservation
    assert props["refreservation"] == props["used"] == 274726912
    assert props["logicalused"] == 51620864 and props["referenced"] == 51743340
    want = Zvol("vol", 256 * M, 16 * K, compression="on", sync="standard", logbias="latency")
    assert property_mismatches(want, props) == {}
    other = Zvol("vol", 256 * M, 8 * K, compression="off", sync="always", primarycache="metadata")
    assert property_mismatches(other, props) == {"volblocksize": (8 * K, 16 * K), "compression": ("off", "on"),
                                                 "sync": ("always", "standard"),
                                                 "primarycache": ("metadata", "all")}


def test_parse_zpool_get_lab_capture():
    # Real `zpool get -j -p all tank` (OpenZFS 2.3.2) of the raidz1(3) + log + cache pool.
    props = parse_zpool_get_json((FIXTURES / "lab-zpool-get-raidz1.json").read_text(), pool="tank")
    assert len(props) == 78 and props["health"] == "ONLINE"
    assert props["size"] == props["free"] + props["allocated"]   # 2952790016 = 2874846208 + 77943808
    assert props["capacity"] == 2                                  # 77943808 / 2952790016 = 2.6 %
    assert props["ashift"] == 0      # the pool property: 0 = "auto", not the vdevs' actual ashift
    assert props["guid"] == 3808672062586841025 and props["version"] == "-"
    assert props["feature@raidz_expansion"] == "enabled" and props["feature@lz4_compress"] == "active"
    assert sum(k.startswith("feature@") for k in props) == 44


def test_parse_get_json_int_and_errors():
    doc = {"datasets": {"p/a": {"properties": {"used": {"value": 4096}}},
                        "p/b": {"properties": {"used": {"value": "-"}}}}}
    assert parse_zfs_get_json(json.dumps(doc), "p/a") == {"used": 4096}
    assert parse_zfs_get_json(json.dumps(doc), "p/b") == {"used": "-"}
    with pytest.raises(ZbenchError, match="say which one"):
        parse_zfs_get_json(json.dumps(doc))
    with pytest.raises(ZbenchError, match="not in zfs get JSON"):
        parse_zfs_get_json(json.dumps(doc), "p/c")
    with pytest.raises(ZbenchError, match="not zpool get JSON"):
        parse_zpool_get_json("NAME PROPERTY VALUE")
