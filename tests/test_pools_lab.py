"""Pools and targets on real OpenZFS in the lab: every layout family, read back."""

import signal
import subprocess
import sys
import time

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool, file_vdevs, find_leftovers, remove_leftovers
from zbench_lib.zfs.prefill import prefill
from zbench_lib.zfs.targets import Dataset, Zvol

pytestmark = pytest.mark.lab
MiB = 1024 ** 2

LAYOUTS = [
    (Layout("stripe", 3), 3),
    (Layout("mirror", 2, vdevs=2), 2),
    (Layout("raidz1", 4), 3),
    (Layout("raidz2", 5), 3),
    (Layout("raidz3", 6), 3),
    (Layout("raidz2", 4, vdevs=2), 4),
    (Layout("raidz2", 4, log=2, log_mirror=True, cache=1), 2),
    (Layout("mirror", 2, vdevs=2, special=2, special_mirror=True), 2),
]


def _devices(lab, layout):
    return lab.data_disks[:layout.total_disks] + lab.extra_disks[:layout.extra_disks]


@pytest.mark.parametrize("layout, data_disks", LAYOUTS, ids=[l.describe() for l, _ in LAYOUTS])
def test_every_layout_family_is_created_read_back_and_destroyed(lab, lab_host, layout, data_disks):
    assert layout.data_disks == data_disks
    with Pool(lab_host, layout, _devices(lab, layout), owned_devices=True) as pool:
        # create() compared `zpool status -j` with the requested topology already
        assert pool.topology["data"]
        assert pool.pool_properties["ashift"] == 12
        name = pool.name
        assert name in find_leftovers(lab_host)
    assert name not in lab_host.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()


def test_targets_properties_are_read_back(lab, lab_host):
    with Pool(lab_host, Layout("raidz1", 3), lab.data_disks[:3], owned_devices=True) as pool:
        z = pool.create_target(Zvol("vol", 64 * MiB, 8192, compression="off", sync="always",
                                    primarycache="metadata", logbias="throughput"))
        assert z.properties["volblocksize"] == 8192 and z.properties["volsize"] == 64 * MiB
        assert z.properties["sync"] == "always" and z.properties["primarycache"] == "metadata"
        assert z.mismatches == {}
        assert lab_host.run(["test", "-b", z.path]).ok
        d = pool.create_target(Dataset("fs", 16384, atime="off", compression="lz4", copies=2))
        assert d.properties["recordsize"] == 16384 and d.properties["copies"] == 2
        assert d.properties["atime"] == "off" and d.mismatches == {}


def test_prefill_writes_incompressible_data_and_records_space(lab, lab_host):
    with Pool(lab_host, Layout("stripe", 2), lab.data_disks[:2], owned_devices=True) as pool:
        t = pool.create_target(Zvol("vol", 96 * MiB, 16384, compression="lz4"))
        stats = prefill(pool, t, "whole", progress=False)
        assert stats["prefill_bytes"] == 96 * MiB
        assert stats["compressratio"] < 1.05                  # incompressible data
        assert stats["logicalused_bytes"] >= 0.95 * 96 * MiB
        assert stats["pool_capacity_pct"] >= 1
        d = pool.create_target(Dataset("fs", 131072))
        s2 = prefill(pool, d, "20%", progress=False)
        assert s2["pool_capacity_pct"] >= 15


def test_file_backed_vdevs(lab_host):
    files = file_vdevs(lab_host, "/var/tmp/zbench-scratch", 2, 128 * MiB)
    try:
        with Pool(lab_host, Layout("mirror", 2), files) as pool:
            assert pool.topology["data"] == [("mirror", 2)]
    finally:
        lab_host.run(["rm", "-rf", "/var/tmp/zbench-scratch"])


def test_leftovers_are_reported_and_removed_only_when_asked(lab, lab_host):
    lab_host.run(["zpool", "labelclear", "-f", lab.data_disks[7]], check=False)
    lab_host.run(["zpool", "create", "-f", "zbench-crashed", lab.data_disks[7]])
    assert "zbench-crashed" in find_leftovers(lab_host)
    with pytest.raises(ConfigError, match="not a zbench pool"):
        remove_leftovers(lab_host, ["tank"])
    assert remove_leftovers(lab_host) == ["zbench-crashed"]
    assert find_leftovers(lab_host) == []


def test_dry_run_prints_commands_and_runs_nothing(lab, lab_host, capsys):
    pool = Pool(lab_host, Layout("raidz2", 4), lab.data_disks[:4], owned_devices=True, dry_run=True)
    pool.create()
    assert not pool.created and pool.commands[-1][:2] == ["zpool", "create"]
    assert "would run: zpool create" in capsys.readouterr().err
    assert pool.name not in lab_host.run(["zpool", "list", "-H", "-o", "name"]).stdout


CHILD = r"""
import json, sys
from zbench_lib.hosts.ssh import SSHHost
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import Pool
from zbench_lib.zfs.prefill import prefill
from zbench_lib.zfs.targets import Zvol
conn = json.loads(sys.argv[1]); disks = json.loads(sys.argv[2])
host = SSHHost(**conn)
with Pool(host, Layout("raidz1", 3), disks, owned_devices=True) as pool:
    t = pool.create_target(Zvol("vol", 900 * 1024**2, 131072))
    print("POOL", pool.name, flush=True)
    prefill(pool, t, "whole", progress=False)
    print("PREFILL DONE", flush=True)
"""


def test_sigterm_during_prefill_leaves_no_pool(lab, lab_host):
    import json
    # Slow the disks down so that prefill is surely running when SIGTERM lands.
    for s in lab.cfg.data_serials[:3]:
        lab.set_model(s, "custom:bw=20M")
    try:
        child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(lab.connection()),
                                  json.dumps(lab.data_disks[:3])], stdout=subprocess.PIPE, text=True)
        line = child.stdout.readline()
        assert line.startswith("POOL"), line
        pool = line.split()[1]
        deadline = time.monotonic() + 60
        while "prefill" not in lab_host.run(["pgrep", "-af", "fio"], check=False).stdout:
            assert time.monotonic() < deadline, "prefill never started"
            time.sleep(0.5)
        time.sleep(2)
        child.send_signal(signal.SIGTERM)
        rest = child.stdout.read()
        assert child.wait(120) != 0 and "PREFILL DONE" not in rest
        assert pool not in lab_host.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()
        assert "prefill" not in lab_host.run(["pgrep", "-af", "fio"], check=False).stdout
    finally:
        for s in lab.cfg.data_serials[:3]:
            lab.set_model(s, lab.cfg.model)
