"""dRAID layouts: argv, OpenZFS's rules, derived facts, labels, dicts and topology read-back.

The rules and formats come from the OpenZFS sources (2.1.0 to 2.3.x): zpool_vdev.c
draid_config_by_type(), vdev_draid.c vdev_draid_init()/vdev_draid_asize()/vdev_draid_open(),
libzfs_pool.c zpool_draid_name(), zpool_main.c vdev_stats_nvlist()/spares_nvlist().
"""

from __future__ import annotations

import json

import pytest

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.zfs import draid, zfs_text
from zbench_lib.zfs import families, models
from zbench_lib.zfs.layouts import Layout, expected_topology, parse_zpool_status_json, zpool_create_argv

GiB, MiB = 1024 ** 3, 1024 ** 2
D = "/dev/disk/by-id/d"


def devs(n):
    return [f"{D}{i}" for i in range(n)]


def test_families():
    assert families.names()[-3:] == ("draid1", "draid2", "draid3")


# -- argv -----------------------------------------------------------------------
def test_argv_one_vdev_names_every_part():
    lay = Layout("draid2", 8, draid_data=4, draid_spares=1)
    assert zpool_create_argv("zb-t", devs(8), lay) == [
        "zpool", "create", "-o", "ashift=12", "zb-t", "draid2:4d:8c:1s"] + devs(8)


def test_argv_default_data_is_written_out():
    # draid_data 0: OpenZFS's default min(8, C - P - S), written explicitly in the keyword.
    assert zpool_create_argv("zb-t", devs(5), Layout("draid1", 5))[5] == "draid1:4d:5c:0s"
    assert zpool_create_argv("zb-t", devs(14), Layout("draid3", 14, draid_spares=2))[5] == "draid3:8d:14c:2s"


def test_argv_two_vdevs_with_log_cache_special():
    lay = Layout("draid2", 6, vdevs=2, draid_data=3, draid_spares=1, log=2, log_mirror=True, cache=1,
                 special=2, special_mirror=True)
    argv = zpool_create_argv("zb-t", devs(17), lay)
    d = devs(17)
    assert argv[5:] == (["draid2:3d:6c:1s"] + d[:6] + ["draid2:3d:6c:1s"] + d[6:12]
                        + ["log", "mirror", d[12], d[13], "cache", d[14], "special", "mirror", d[15], d[16]])
    assert "-f" not in argv


def test_argv_counts_children_not_spares_as_devices():
    # Distributed spares live on the children: no extra device is taken for them.
    with pytest.raises(ConfigError, match="takes exactly 8 devices"):
        zpool_create_argv("zb-t", devs(9), Layout("draid2", 8, draid_spares=1))


# -- validation -----------------------------------------------------------------
INVALID = [
    ({"family": "draid1", "width": 256}, "draid1 width 256 exceeds the maximum of 255 children"),
    ({"family": "draid2", "width": 8, "draid_data": -1}, r"draid_data must be at least 1 \(or 0 for"),
    ({"family": "draid2", "width": 8, "draid_spares": -1}, "draid_spares cannot be negative, got -1"),
    ({"family": "draid1", "width": 120, "draid_spares": 101},
     "draid_spares 101 exceeds OpenZFS's limit of 100 distributed spares"),
    ({"family": "draid2", "width": 3, "draid_spares": 1},
     r"draid2 of 3 disks with 1 distributed spare\(s\) leaves no disk for data \(width must be at least "
     r"parity \+ spares \+ 1 = 4\)"),
    ({"family": "draid1", "width": 1}, "leaves no disk for data"),
    ({"family": "draid2", "width": 8, "draid_data": 6, "draid_spares": 1},
     r"draid2 groups of 6 data \+ 2 parity with 1 distributed spare\(s\) need width >= 9, got 8"),
    ({"family": "draid3", "width": 6, "draid_data": 4},
     r"draid3 groups of 4 data \+ 3 parity with 0 distributed spare\(s\) need width >= 7, got 6"),
    ({"family": "draid2", "width": 0}, "width must be at least 1, got 0"),
    ({"family": "raidz1", "width": 3, "draid_spares": 1},
     "draid_data and draid_spares apply to draid1/2/3 only and must be 0 for raidz1, got 0 and 1"),
    ({"family": "mirror", "width": 2, "draid_data": 2}, "must be 0 for mirror"),
    ({"family": "draid2", "width": 8, "draid_data": "4"}, "layout draid_data must be an integer, got '4'"),
    ({"family": "draid2", "width": 8, "draid_spares": True}, "layout draid_spares must be an integer"),
    ({"family": "draid2", "width": 8, "special": 1}, "special vdev beside draid2 must be mirrored"),
]


@pytest.mark.parametrize("spec, message", INVALID)
def test_invalid_draid_layouts(spec, message):
    with pytest.raises(ConfigError, match=message):
        Layout.from_dict(spec)


def test_a_group_that_just_fits_is_valid():
    Layout("draid3", 6, draid_data=3).validate()          # 3 + 3 = 6 children, no spare
    Layout("draid1", 2).validate()                        # smallest: 1 data + 1 parity
    Layout("draid1", 255, draid_spares=100).validate()    # both maxima
    Layout("draid2", 9, draid_data=6, draid_spares=1).validate()


def test_every_violation_named_at_once():
    with pytest.raises(ConfigError) as exc:
        Layout("draid1", 300, vdevs=0, draid_data=-1, draid_spares=101).validate()
    text = str(exc.value)
    assert "exceeds the maximum of 255" in text and "draid_data must be" in text
    assert "limit of 100" in text and "vdevs must be at least 1" in text


def test_rules_match_draid_config_by_type():
    # zpool_vdev.c: ndata = MIN(children - nspares - nparity, 8) when not given; then
    # ndata + nparity <= children - nspares and nspares <= 100, children <= 255.
    for c in range(2, 40):
        for p in (1, 2, 3):
            for s in range(0, 5):
                for d in range(0, 12):
                    nd = d if d else min(c - s - p, 8)
                    ok = nd >= 1 and nd + p <= c - s
                    assert (not draid.problems(c, p, d, s)) == ok, (c, p, d, s)


# -- derived facts ----------------------------------------------------------------
@pytest.mark.parametrize("layout, data_disks, total", [
    (Layout("draid2", 8, draid_data=4, draid_spares=1), 4.67, 8),    # 7 x 4/6
    (Layout("draid1", 7, draid_data=4), 5.6, 7),                      # 7 x 4/5
    (Layout("draid1", 7), 6, 7),                                      # default d = 6: 7 x 6/7
    (Layout("draid2", 11, draid_data=8, draid_spares=1), 8, 11),      # 10 x 8/10
    (Layout("draid3", 14, vdevs=2, draid_spares=2), 17.45, 28),       # d = 8: 2 x 12 x 8/11
])
def test_data_and_total_disks(layout, data_disks, total):
    layout.validate()
    assert layout.data_disks == data_disks
    assert isinstance(layout.data_disks, int) == float(data_disks).is_integer()
    assert layout.total_disks == total and layout.raw_bytes(GiB) == total * GiB
    assert abs(layout.usable_bytes(GiB) - data_disks * GiB) < 0.01 * GiB
    assert isinstance(layout.usable_bytes(GiB), int)


def test_usable_bytes_is_exact_and_rounded_down():
    lay = Layout("draid2", 8, draid_data=4, draid_spares=1)
    assert lay.usable_bytes(6 * GiB) == 7 * 4 * GiB              # 7 x 4/6 x 6 GiB
    assert lay.usable_bytes(1000) == 7 * 4 * 1000 // 6


def test_parity_redundancy_and_ndata():
    lay = Layout("draid3", 14, draid_spares=2)
    assert (lay.parity, lay.redundancy, lay.fam.ndata(lay)) == (3, 3, 8)
    assert lay.fam.layout_fields and not Layout("raidz2", 6).fam.layout_fields
    assert Layout("draid1", 5).redundancy == 1


def test_describe():
    assert Layout("draid2", 8, draid_data=4, draid_spares=1).describe() == "1x draid2(8: 4d, 1s)"
    assert Layout("draid1", 5).describe() == "1x draid1(5: 4d, 0s)"
    lay = Layout("draid2", 12, vdevs=2, draid_spares=2, log=2, log_mirror=True, cache=1)
    assert lay.describe() == "2x draid2(12: 8d, 2s) + log mirror(2) + cache(1)"


def test_dict_round_trip():
    lay = Layout("draid2", 12, vdevs=2, ashift=13, draid_data=4, draid_spares=2, special=2, special_mirror=True)
    d = lay.to_dict()
    assert d["draid_data"] == 4 and d["draid_spares"] == 2
    assert Layout.from_dict(json.loads(json.dumps(d))) == lay
    assert Layout.from_dict({"family": "draid1", "width": 5}).to_dict()["draid_data"] == 0
    # Other families' dicts keep exactly their old keys (plans and stored runs compare equal).
    assert "draid_data" not in Layout("raidz2", 6).to_dict()
    assert Layout.from_dict(Layout("mirror", 2).to_dict()) == Layout("mirror", 2)


def test_geometry_refuses_draid_with_a_reason():
    with pytest.raises(ConfigError, match="dRAID geometry needs data disks per group"):
        families.get("draid2").data_disks_of(8, 1)
    with pytest.raises(ConfigError, match="dRAID geometry needs data disks per group"):
        models.space_efficiency("draid2", 8, 16384)


def test_allocation_pads_to_whole_groups():
    # vdev_draid_asize: rows = ceil(psize / (d x sector)); allocated = rows x (d + p) sectors.
    assert draid.asize(512, 12, 4, 2) == 6 * 4096           # one row even for a tiny block
    assert draid.asize(16384, 12, 4, 2) == 6 * 4096
    assert draid.asize(16385, 12, 4, 2) == 12 * 4096
    assert draid.asize(131072, 12, 8, 2) == 4 * 10 * 4096
    assert draid.asize(131072, 9, 8, 1) == 32 * 9 * 512


def test_capacity_model_for_draid():
    from zbench_lib.sweeps.planning.capacity import target_need, usable_bytes
    from zbench_lib.sweeps.planning.records import Target
    lay = Layout("draid2", 8, draid_data=4, draid_spares=1)
    # child 512M - 13.5M, less the 32M reflow reserve, to 16M rows: 464M; x 7 non-spare
    # children = 3248M, to whole 96M groups: 3168M; 12 metaslabs of 256M: 3072M; deflated
    # by 128K / asize(128K) = 131072 // 384 = 341: 2046M; slop 128M.
    assert usable_bytes(lay, 512 * MiB) == 1918 * MiB
    # A 4K zvol block takes a whole 4d+2p group, 24K, reserved as 24K x 128K / 192K = 16K
    # (volsize_from_vdevs), plus 7 + 16 + 1 indirect blocks of 128K, twice (copies + 1).
    need = target_need(Target("t", "p", "zvol", 64 * MiB, volblocksize_bytes=4096), lay)
    assert need == 16384 * 16 * 1024 + 24 * 2 * 128 * 1024


# -- topology -------------------------------------------------------------------
def test_expected_topology():
    assert expected_topology(Layout("draid2", 8, draid_data=4, draid_spares=1)) == {
        "data": [("draid2", 8)], "log": [], "cache": [], "special": [], "spare": [("dspare", 0)]}
    assert expected_topology(Layout("draid1", 5, vdevs=2, cache=1)) == {
        "data": [("draid1", 5)] * 2, "log": [], "cache": [("leaf", 0)], "special": []}
    assert expected_topology(Layout("draid3", 14, vdevs=2, draid_spares=2))["spare"] == [("dspare", 0)] * 4


def _leaf(path, cls="normal"):
    return {"name": path, "vdev_type": "disk", "guid": "1", "path": path, "class": cls, "state": "ONLINE",
            "rep_dev_size": "1014M", "phys_space": "1014M", "read_errors": "0", "write_errors": "0",
            "checksum_errors": "0", "slow_ios": "0"}


def status_json_2_3(fixed=False):
    """`zpool status -j -P zb-t` of draid2:4d:8c:1s + log, as OpenZFS 2.3 builds it.

    vdev_stats_nvlist() names the vdev with zpool_vdev_name(): 'draid2:4d:8c:1s-0'
    (zpool_draid_name + '-<id>'); fill_vdev_info() then looks that name up with
    zpool_find_vdev(), which fails for dRAID names (the parity check in
    vdev_to_nvlist_iter() wants 'draidP' alone), so the entry has no vdev_type, class or
    state (openzfs/zfs#18431). spares_nvlist() puts the distributed spare, path
    'draid2-0-0' (vdev_draid_spare_create), under pools.<pool>.spares; its short path does
    not resolve either, so it has its name and the spare state only. `fixed` adds what
    the proposed fix (#18803) would: vdev_type and state.
    """
    leaves = {f"/dev/vd{c}1": _leaf(f"/dev/vd{c}1") for c in "bcdefghi"}
    dr = {"name": "draid2:4d:8c:1s-0", "alloc_space": "1.02M", "total_space": "5.62G", "def_space": "3.56G",
          "read_errors": "0", "write_errors": "0", "checksum_errors": "0", "vdevs": leaves}
    spare = {"name": "draid2-0-0", "state": "AVAIL"}
    if fixed:
        dr.update(vdev_type="draid", state="ONLINE")
        spare["vdev_type"] = "dspare"
    root = {"name": "zb-t", "vdev_type": "root", "guid": "2", "class": "normal", "state": "ONLINE",
            "alloc_space": "1.02M", "total_space": "5.62G", "read_errors": "0", "write_errors": "0",
            "checksum_errors": "0", "vdevs": {"draid2:4d:8c:1s-0": dr}}
    return json.dumps({"output_version": {"command": "zpool status", "vers_major": 0, "vers_minor": 1},
                       "pools": {"zb-t": {"name": "zb-t", "state": "ONLINE", "vdevs": {"zb-t": root},
                                          "logs": {"/dev/vdj1": _leaf("/dev/vdj1", "log")},
                                          "spares": {"draid2-0-0": spare}, "error_count": "0"}}})


@pytest.mark.parametrize("fixed", [False, True])
def test_parse_json_draid_matches_expected_topology(fixed):
    lay = Layout("draid2", 8, draid_data=4, draid_spares=1, log=1)
    got = parse_zpool_status_json(status_json_2_3(fixed), "zb-t")
    assert got == expected_topology(lay) == {
        "data": [("draid2", 8)], "log": [("leaf", 0)], "cache": [], "special": [], "spare": [("dspare", 0)]}
    assert got != expected_topology(Layout("draid2", 8, draid_data=4, draid_spares=2, log=1))
    assert got != expected_topology(Layout("raidz2", 8, log=1))


def test_parse_json_draid_vdev_without_a_readable_name_is_an_error():
    doc = json.loads(status_json_2_3(fixed=True))
    root = doc["pools"]["zb-t"]["vdevs"]["zb-t"]["vdevs"]
    root["x"] = dict(root.pop("draid2:4d:8c:1s-0"), name="x")
    with pytest.raises(ZbenchError, match="parity of dRAID vdev"):
        parse_zpool_status_json(json.dumps(doc))


STATUS_TEXT = """  pool: zb-t
 state: ONLINE
config:

\tNAME                   STATE     READ WRITE CKSUM
\tzb-t                   ONLINE       0     0     0
\t  draid2:4d:8c:1s-0    ONLINE       0     0     0
""" + "".join(f"\t    /dev/vd{c}1          ONLINE       0     0     0\n" for c in "bcdefghi") + """\
\t  draid2:4d:8c:1s-1    ONLINE       0     0     0
""" + "".join(f"\t    /dev/vd{c}1          ONLINE       0     0     0\n" for c in "jklmnopq") + """\
\tspares
\t  draid2-0-0           AVAIL
\t  draid2-1-0           AVAIL

errors: No known data errors
"""


def test_parse_text_draid_matches_expected_topology():
    # 2.1/2.2 text: print_status_config() with the same vdev names, print_spares() the spares.
    lay = Layout("draid2", 8, vdevs=2, draid_data=4, draid_spares=1)
    assert zfs_text.parse_zpool_status_text(STATUS_TEXT, "zb-t") == expected_topology(lay)


def test_status_kind():
    assert draid.status_kind("draid2:4d:8c:1s-0") == "draid2"
    assert draid.status_kind("draid3:19d:24c:2s-12") == "draid3"
    assert draid.status_kind("draid1-3-0") == "dspare"
    assert draid.status_kind("draid2:4d:8c:1s") is None         # the keyword, not a vdev name
    assert draid.status_kind("raidz2-0") is None and draid.status_kind("/dev/draid2-0-0") is None


def test_docstring_examples_run():
    import doctest
    result = doctest.testmod(draid)
    assert result.attempted > 0 and result.failed == 0
