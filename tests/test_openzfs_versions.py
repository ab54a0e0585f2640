"""One record whatever OpenZFS answers: 2.1's text outputs and 2.3's JSON, on real captures.

The captures in tests/fixtures/openzfs/<release>/ were made in labs of each release by
scripts/capture_openzfs_outputs.py (three pools: raidz1 with a log, a cache and a
mirrored special vdev; two mirrors; a stripe).
"""

from pathlib import Path

import pytest

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.zfs import zfs_text
from zbench_lib.zfs.layouts import Layout, expected_topology, parse_zpool_status_json
from zbench_lib.zfs.targets import parse_zfs_get_json, parse_zpool_get_json
from zbench_lib.zfs.version import parse_zfs_version, require_supported

FIX = Path(__file__).parent / "fixtures" / "openzfs"
POOLS = {"raidz1-log-cache-special": ("zbench-raidz1-log-c",
                                      Layout("raidz1", 3, log=1, cache=1, special=2, special_mirror=True)),
         "mirror-2x2": ("zbench-mirror-2x2", Layout("mirror", 2, vdevs=2)),
         "stripe-3": ("zbench-stripe-3", Layout("stripe", 3))}


# Space that a live pool used between the two captures (taken a second apart).
LIVE = {"free", "allocated", "capacity", "fragmentation", "used", "available", "referenced", "written",
        "usedbydataset", "usedbyrefreservation", "logicalused", "logicalreferenced", "usedbysnapshots",
        "usedbychildren", "compressratio", "refcompressratio"}


def _same_record(text: dict, js: dict):
    assert set(text) == set(js)
    differ = {k for k in text if text[k] != js[k]}
    assert differ <= LIVE, {k: (text[k], js[k]) for k in differ - LIVE}
    assert all(type(text[k]) is type(js[k]) for k in text)


def _read(release, name):
    return (FIX / release / name).read_text()


@pytest.mark.parametrize("release, expected", [("2.1", (2, 1, 11)), ("2.3", (2, 3, 2))])
def test_the_version_is_read_from_zfs_version(release, expected):
    v = parse_zfs_version(_read(release, "zfs-version.txt"))
    assert (v.major, v.minor, v.patch) == expected
    assert v.has_json is (release == "2.3")
    assert v.kmod.startswith("zfs-kmod-")


@pytest.mark.parametrize("release", ["2.1", "2.3"])
@pytest.mark.parametrize("label", sorted(POOLS))
def test_topology_from_text_is_the_requested_layout(release, label):
    pool, layout = POOLS[label]
    text = _read(release, f"zpool-status-P-{label}.txt")
    assert zfs_text.parse_zpool_status_text(text, pool) == expected_topology(layout)


@pytest.mark.parametrize("label", sorted(POOLS))
def test_on_2_3_text_and_json_give_the_same_records(label):
    pool, _ = POOLS[label]
    assert zfs_text.parse_zpool_status_text(_read("2.3", f"zpool-status-P-{label}.txt"), pool) == \
        parse_zpool_status_json(_read("2.3", f"zpool-status-jP-{label}.json"), pool)
    text_pool = zfs_text.parse_get_hp(_read("2.3", f"zpool-get-Hp-{label}.txt"), pool)
    json_pool = parse_zpool_get_json(_read("2.3", f"zpool-get-jp-{label}.json"), pool)
    _same_record(text_pool, json_pool)
    vol = f"{pool}/vol"
    _same_record(zfs_text.parse_get_hp(_read("2.3", f"zfs-get-Hp-{label}.txt"), vol),
                 parse_zfs_get_json(_read("2.3", f"zfs-get-jp-{label}.json"), vol))


@pytest.mark.parametrize("release", ["2.1", "2.3"])
def test_properties_from_get_hp_are_exact_numbers(release):
    pool, _ = POOLS["raidz1-log-cache-special"]
    props = zfs_text.parse_get_hp(_read(release, "zpool-get-Hp-raidz1-log-cache-special.txt"), pool)
    assert props["ashift"] == 12 and isinstance(props["size"], int) and props["size"] > 0
    assert props["health"] == "ONLINE"
    vol = zfs_text.parse_get_hp(_read(release, "zfs-get-Hp-raidz1-log-cache-special.txt"), f"{pool}/vol")
    assert vol["volblocksize"] == 16384 and vol["volsize"] == 64 * 1024 ** 2 and vol["compression"] == "off"


@pytest.mark.parametrize("release", ["2.1", "2.3"])
def test_device_paths_of_imported_pools_and_the_scan_state(release):
    text = _read(release, "zpool-status-PL-all-raidz1-log-cache-special.txt")
    devices = zfs_text.device_paths_text(text)
    assert len(devices) == 7 and all(d.startswith("/dev/vd") for d in devices), devices
    assert zfs_text.parse_scan_text(_read(release, "zpool-status-t-stripe-3.txt")) == "none"
    assert zfs_text.parse_scan_text("  pool: p\n  scan: scrub in progress since Sun\n") == "scrub:scanning"


def test_a_foreign_pool_name_is_refused():
    with pytest.raises(ZbenchError, match="not 'other'"):
        zfs_text.parse_zpool_status_text(_read("2.1", "zpool-status-P-stripe-3.txt"), "other")


class _OldHost:
    name = "ssh://old-box"

    def run(self, argv, check=True, timeout=60):
        from zbench_lib.hosts.base import Result
        return Result(tuple(argv), 0, "zfs-0.8.3-1ubuntu12\nzfs-kmod-0.8.3-1ubuntu12\n", "", 0.01)


def test_an_older_openzfs_is_refused_with_its_version():
    with pytest.raises(ConfigError, match=r"OpenZFS 0\.8\.3; zbench supports OpenZFS 2\.1 and later"):
        require_supported(_OldHost())


def test_txgs_kstat_of_2_1_parses_as_on_2_3():
    from zbench_lib.zfs.zfsstats import parse_txgs
    t21 = parse_txgs(_read("2.1", "txgs.txt"))
    t23 = parse_txgs((FIX.parent / "counters" / "txgs.txt").read_text())
    assert list(t21.columns) == list(t23.columns) and len(t21) >= 4
    assert t21["nwritten"].sum() > 8 * 1024 ** 2 * 0.9      # the 8 MiB written before `zpool sync`
