"""Layouts as data: derived facts, validation messages, argv, topology read-back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.layouts import (Layout, expected_topology, parse_zpool_status_json,
                                validate_pool_name, zpool_create_argv)

FIXTURES = Path(__file__).parent / "fixtures" / "zpool"
GiB = 1024 ** 3


def devs(n, prefix="/dev/disk/by-id/d"):
    return [f"{prefix}{i}" for i in range(n)]


@pytest.mark.parametrize("layout, data_disks, total", [
    (Layout("stripe", 4), 4, 4),
    (Layout("mirror", 2, vdevs=2), 2, 4),
    (Layout("mirror", 3, vdevs=1), 1, 3),
    (Layout("raidz1", 5), 4, 5),
    (Layout("raidz2", 6, vdevs=2), 8, 12),
    (Layout("raidz3", 8), 5, 8),
])
def test_data_and_total_disks(layout, data_disks, total):
    layout.validate()
    assert layout.data_disks == data_disks
    assert layout.total_disks == total
    assert layout.raw_bytes(GiB) == total * GiB
    assert layout.usable_bytes(GiB) == data_disks * GiB


def test_parity_redundancy_extra():
    lay = Layout("raidz2", 6, log=2, log_mirror=True, cache=1, special=2, special_mirror=True)
    assert (lay.parity, lay.redundancy, lay.extra_disks) == (2, 2, 5)
    assert Layout("mirror", 3).redundancy == 2 and Layout("mirror", 3).parity == 0
    assert Layout("stripe", 3).redundancy == 0
    assert lay.describe() == "1x raidz2(6) + log mirror(2) + cache(1) + special mirror(2)"


INVALID_LAYOUTS = [
    ({"family": "raid5", "width": 4}, "unknown layout family 'raid5'"),
    ({"family": "stripe", "width": 0}, "width must be at least 1, got 0"),
    ({"family": "mirror", "width": 1}, "mirror needs width >= 2 disks per mirror, got 1"),
    ({"family": "raidz1", "width": 1}, r"raidz1 needs width >= 2 .*got 1"),
    ({"family": "raidz2", "width": 2}, r"raidz2 needs width >= 3 .*got 2"),
    ({"family": "raidz3", "width": 3}, r"raidz3 needs width >= 4 .*got 3"),
    ({"family": "mirror", "width": 2, "vdevs": 0}, "vdevs must be at least 1, got 0"),
    ({"family": "stripe", "width": 4, "vdevs": 2}, "stripe: width is the number of disks, so vdevs must be 1"),
    ({"family": "stripe", "width": 2, "ashift": 8}, r"ashift must be between 9 and 16 .*got 8"),
    ({"family": "stripe", "width": 2, "ashift": 17}, r"ashift must be between 9 and 16 .*got 17"),
    ({"family": "raidz1", "width": 256}, "raidz1 width 256 exceeds the maximum of 255"),
    ({"family": "stripe", "width": 2, "log": -1}, "log device count cannot be negative, got -1"),
    ({"family": "stripe", "width": 2, "cache": -2}, "cache device count cannot be negative, got -2"),
    ({"family": "stripe", "width": 2, "special": -1}, "special device count cannot be negative"),
    ({"family": "stripe", "width": 2, "log": 1, "log_mirror": True},
     "a mirrored log needs at least 2 log devices, got 1"),
    ({"family": "stripe", "width": 2, "special": 1, "special_mirror": True},
     "a mirrored special vdev needs at least 2 special devices, got 1"),
    ({"family": "stripe", "width": "4"}, "layout width must be an integer, got '4'"),
    ({"family": "stripe", "width": 2, "log_mirror": "yes"}, "log_mirror must be true or false"),
    ({"family": "stripe", "widht": 2}, r"unknown layout key\(s\): 'widht'"),
    ({"width": 2}, "missing required key 'family'"),
]


@pytest.mark.parametrize("spec, message", INVALID_LAYOUTS)
def test_invalid_layouts_rejected_with_specific_message(spec, message):
    with pytest.raises(ConfigError, match=message):
        Layout.from_dict(spec)


def test_all_violations_named_at_once():
    with pytest.raises(ConfigError) as exc:
        Layout("mirror", 1, vdevs=0, ashift=20).validate()
    text = str(exc.value)
    assert "width >= 2" in text and "vdevs must be" in text and "ashift" in text


def test_check_disks_message():
    lay = Layout("raidz2", 6, log=2, log_mirror=True, cache=1)
    lay.check_disks(9)
    with pytest.raises(ConfigError, match=r"^layout needs 9 disks \(6 data \+ 3 log/cache/special\) "
                                          r"but only 8 are available$"):
        lay.check_disks(8)


@pytest.mark.parametrize("layout", [
    Layout("stripe", 4),
    Layout("raidz2", 6, vdevs=2, ashift=9, log=2, log_mirror=True, cache=1, special=2, special_mirror=True),
])
def test_dict_round_trip(layout):
    d = layout.to_dict()
    assert Layout.from_dict(json.loads(json.dumps(d))) == layout
    assert set(d) == {"family", "width", "vdevs", "ashift", "log", "log_mirror", "cache",
                      "special", "special_mirror"}


# -- argv ----------------------------------------------------------------------
D = "/dev/disk/by-id/d"


def test_argv_stripe_plain():
    assert zpool_create_argv("zb-t", devs(3), Layout("stripe", 3)) == [
        "zpool", "create", "-o", "ashift=12", "zb-t", D + "0", D + "1", D + "2"]


def test_argv_stripe_with_log_cache_special():
    lay = Layout("stripe", 2, log=2, log_mirror=True, cache=1, special=2, special_mirror=True)
    assert zpool_create_argv("zb-t", devs(7), lay)[5:] == [
        D + "0", D + "1", "log", "mirror", D + "2", D + "3", "cache", D + "4",
        "special", "mirror", D + "5", D + "6"]


def test_argv_stripe_with_unmirrored_log_and_special():
    lay = Layout("stripe", 2, ashift=13, log=1, cache=2, special=1)
    assert zpool_create_argv("zb-t", devs(6), lay) == [
        "zpool", "create", "-o", "ashift=13", "zb-t", D + "0", D + "1",
        "log", D + "2", "cache", D + "3", D + "4", "special", D + "5"]


@pytest.mark.parametrize("family, width", [("mirror", 2), ("raidz1", 3)])
def test_an_unmirrored_special_beside_redundant_vdevs_is_refused(family, width):
    # OpenZFS refuses it too ("mismatched replication level: both raidz and disk vdevs").
    with pytest.raises(ConfigError, match="special vdev beside .* must be mirrored"):
        Layout(family, width, vdevs=2, log=1, special=1).validate()


@pytest.mark.parametrize("family, width", [("raidz1", 3), ("raidz2", 4), ("raidz3", 5)])
def test_argv_raidz_families_with_log_mirror_cache_special(family, width):
    lay = Layout(family, width, vdevs=2, log=2, log_mirror=True, cache=1, special=2, special_mirror=True)
    argv = zpool_create_argv("zb-t", devs(2 * width + 5), lay)
    n = 2 * width
    assert argv[5:] == ([family] + devs(width) + [family] + devs(n)[width:]
                        + ["log", "mirror", D + str(n), D + str(n + 1), "cache", D + str(n + 2),
                           "special", "mirror", D + str(n + 3), D + str(n + 4)])
    assert "-f" not in argv


def test_argv_properties_and_files():
    argv = zpool_create_argv("zb-t", ["/srv/zb/f0", "/srv/zb/f1"], Layout("mirror", 2),
                             properties={"autotrim": "on"}, fs_properties={"compression": "off"})
    assert argv == ["zpool", "create", "-o", "ashift=12", "-o", "autotrim=on", "-O", "compression=off",
                    "zb-t", "mirror", "/srv/zb/f0", "/srv/zb/f1"]


@pytest.mark.parametrize("pool, devices, props, message", [
    ("zb-t", devs(3), None, "takes exactly 4 devices"),
    ("zb-t", [D + "0", D + "0", D + "1", D + "2"], None, "listed more than once"),
    ("zb-t", ["sda", D + "1", D + "2", D + "3"], None, "must be a /dev/ path or an absolute file path"),
    ("zb-t", ["/dev/../etc/passwd", D + "1", D + "2", D + "3"], None, "not a clean absolute path"),
    ("zb-t", devs(4), {"ashift": "9"}, "set ashift in the layout"),
    ("zb-t", devs(4), {"comment": "two words"}, "bad property"),
    ("1pool", devs(4), None, "must start with a letter"),
    ("zb/t", devs(4), None, "only letters, digits"),
    ("mirror", devs(4), None, "reserved"),
    ("raidz-pool", devs(4), None, "reserved"),
    ("spares", devs(4), None, "reserved"),
    ("log", devs(4), None, "reserved"),
    ("c0t0d0", devs(4), None, "looks like a disk name"),
    ("", devs(4), None, "non-empty"),
])
def test_argv_rejects(pool, devices, props, message):
    with pytest.raises(ConfigError, match=message):
        zpool_create_argv(pool, devices, Layout("raidz1", 4), properties=props)


def test_pool_names_accepted():
    for name in ("zb-bench", "tank", "Zb_1.a:b", "logs", "cachepool"):
        assert validate_pool_name(name) == name


# -- topology -------------------------------------------------------------------
def test_expected_topology_shapes():
    assert expected_topology(Layout("stripe", 3, cache=1)) == {
        "data": [("leaf", 0)] * 3, "log": [], "cache": [("leaf", 0)], "special": []}
    assert expected_topology(Layout("mirror", 2, vdevs=2, log=2, special=2, special_mirror=True)) == {
        "data": [("mirror", 2)] * 2, "log": [("leaf", 0)] * 2, "cache": [],
        "special": [("mirror", 2)]}


def test_parse_lab_capture_matches_expected_topology():
    # Real `zpool status -j tank` (OpenZFS 2.3.2): raidz1 of vdb vdc vdd under the root vdev,
    # the log vdf under pools.tank.logs and the cache vdg under pools.tank.l2cache.
    text = (FIXTURES / "lab-status-raidz1-log-cache.json").read_text()
    assert parse_zpool_status_json(text) == expected_topology(Layout("raidz1", 3, log=1, cache=1)) == {
        "data": [("raidz1", 3)], "log": [("leaf", 0)], "cache": [("leaf", 0)], "special": []}
    assert parse_zpool_status_json(text, pool="tank")["data"] == [("raidz1", 3)]
    assert parse_zpool_status_json(text) != expected_topology(Layout("raidz1", 3, log=2, log_mirror=True))


def test_parse_lab_capture_with_bare_single_disk_vdevs():
    # Top-level single disks may carry only their name (no vdev_type, no path): still leaves.
    doc = json.loads((FIXTURES / "lab-status-raidz1-log-cache.json").read_text())
    p = doc["pools"]["tank"]
    for grp, name in (("logs", "vdf"), ("l2cache", "vdg")):
        p[grp][name] = {"name": name, "class": p[grp][name]["class"], "state": "ONLINE"}
    p["vdevs"]["tank"]["vdevs"]["vde"] = {"name": "vde", "class": "normal", "state": "ONLINE"}
    assert parse_zpool_status_json(json.dumps(doc)) == {
        "data": [("raidz1", 3), ("leaf", 0)], "log": [("leaf", 0)], "cache": [("leaf", 0)], "special": []}


def test_parse_fixture_matches_expected_topology():
    # Hand-made (see its _zbench_note), kept: a mirrored log group and raidz2, which the
    # lab capture above does not have.
    text = (FIXTURES / "status-raidz2-log-cache.json").read_text()
    lay = Layout("raidz2", 6, log=2, log_mirror=True, cache=1)
    assert parse_zpool_status_json(text) == expected_topology(lay)
    assert parse_zpool_status_json(text, pool="zb-test")["data"] == [("raidz2", 6)]


def test_parse_man_page_shape_with_dedup_and_special():
    doc = {"pools": {"tank": {"vdevs": {"tank": {"vdev_type": "root", "vdevs": {
        "mirror-0": {"name": "mirror-0", "vdev_type": "mirror",
                     "vdevs": {"a": {"vdev_type": "disk"}, "b": {"vdev_type": "disk"}}},
        "f": {"name": "/srv/f", "vdev_type": "file"}}}},
        "dedup": {"mirror-2": {"vdev_type": "mirror", "vdevs": {"c": {}, "d": {}}}},
        "special": {"e": {"vdev_type": "disk"}}}}}
    assert parse_zpool_status_json(json.dumps(doc)) == {
        "data": [("mirror", 2), ("leaf", 0)], "log": [], "cache": [],
        "special": [("leaf", 0)], "dedup": [("mirror", 2)]}


def test_parse_rejects_garbage_and_ambiguity():
    from zbench_lib.core.errors import ZbenchError
    with pytest.raises(ZbenchError, match="not zpool status JSON"):
        parse_zpool_status_json("pool: tank")
    with pytest.raises(ZbenchError, match="say which one"):
        parse_zpool_status_json(json.dumps({"pools": {"a": {}, "b": {}}}))
    with pytest.raises(ZbenchError, match="not in zpool status JSON"):
        parse_zpool_status_json(json.dumps({"pools": {"a": {}}}), pool="b")


def test_parse_groups_nested_under_root_and_vdev_named_like_a_group():
    doc = {"pools": {"p": {"vdevs": {"p": {"vdev_type": "root", "vdevs": {
        "logs": {"name": "logs", "vdev_type": "disk"},          # a disk that happens to be called logs
        "special": {"vdevs": {"mirror-1": {"vdev_type": "mirror", "vdevs": {"a": {}, "b": {}}}}}}}}}}}
    assert parse_zpool_status_json(json.dumps(doc)) == {
        "data": [("leaf", 0)], "log": [], "cache": [], "special": [("mirror", 2)]}
