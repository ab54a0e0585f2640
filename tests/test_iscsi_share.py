"""iSCSI datastore commands (zfs/iscsi_share.py): names, argument lists and the clients' regions.

The lab test that runs them against LIO and open-iscsi waits for the image with targetcli-fb and
open-iscsi (issue 30); these check what the commands are, not what they do.
"""

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.iscsi_share import (client_login_argvs, client_logout_argvs, initiator_iqn, lun_path, region,
                                        server_argvs, server_teardown_argvs, target_iqn)

ZVOL = "/dev/zvol/zbench-ab12cd/vm_store"


def test_a_zbench_zvol_gets_a_target_of_its_own_and_nothing_else_is_served():
    assert target_iqn(ZVOL) == "iqn.2026-11.org.zbench:zbench-ab12cd.vm-store"
    for bad in ("/dev/sda", "/dev/zvol/tank/vol", "/dev/zvol/zbench-ab12cd/a/../b", "", None):
        with pytest.raises(ConfigError, match="not a zvol of a zbench pool"):
            target_iqn(bad)


def test_the_server_serves_lun_0_without_saving_and_removes_what_it_made():
    argvs = server_argvs(ZVOL)
    assert argvs[0] == ["targetcli", "set", "global", "auto_save_on_exit=false"]
    assert ["targetcli", "/backstores/block", "create", "name=zb-zbench-ab12cd-vm-store", f"dev={ZVOL}"] in argvs
    assert any(a[:2] == ["targetcli", f"/iscsi/{target_iqn(ZVOL)}/tpg1/luns"] for a in argvs)
    assert [a[1:3] for a in server_teardown_argvs(ZVOL)] == [["/iscsi", "delete"], ["/backstores/block", "delete"]]


def test_a_client_makes_its_node_by_hand_logs_in_and_out_and_deletes_it():
    iqn = target_iqn(ZVOL)
    login = client_login_argvs(iqn, "10.0.2.2", 40123)
    assert login[0][-4:] == ["-T", iqn, "-p", "10.0.2.2:40123"] and "new" in login[0]
    assert login[1][-1] == "--login" and client_logout_argvs(iqn, "10.0.2.2", 40123)[0][-1] == "--logout"
    assert lun_path(iqn, "10.0.2.2", 40123) == f"/dev/disk/by-path/ip-10.0.2.2:40123-iscsi-{iqn}-lun-0"
    assert initiator_iqn("c0") == "iqn.2026-11.org.zbench:client.c0"
    with pytest.raises(ConfigError):
        initiator_iqn("C 0")


def test_clients_share_a_lun_in_regions_that_never_overlap():
    size = 100 * 1024 ** 2 + 12345
    regions = [region(i, 3, size) for i in range(3)]
    assert regions == [(0, 33 * 1024 ** 2), (33 * 1024 ** 2, 33 * 1024 ** 2), (66 * 1024 ** 2, 33 * 1024 ** 2)]
    assert all(a[0] + a[1] <= b[0] for a, b in zip(regions, regions[1:])) and regions[-1][0] + regions[-1][1] <= size
    with pytest.raises(ConfigError):
        region(0, 4, 3 * 1024 ** 2)
