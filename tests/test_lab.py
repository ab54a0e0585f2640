"""The lab: real OpenZFS on modelled disks, reached over SSH."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from zbench_lib.core.errors import CommandError

pytestmark = pytest.mark.lab


def test_guest_runs_real_openzfs(lab_host):
    out = lab_host.run(["zfs", "version"]).stdout
    assert out.startswith("zfs-2.3"), out
    assert "zfs-kmod-2.3" in out
    assert lab_host.run(["cat", "/sys/module/zfs/version"]).stdout.startswith("2.3")


def test_every_lab_disk_is_visible_by_id(lab, lab_host):
    for path in lab.data_disks + lab.extra_disks:
        size = int(lab_host.run(["blockdev", "--getsize64", path]).stdout)
        assert size in (lab.cfg.disk_bytes, lab.cfg.extra_disk_bytes)


def test_zpool_create_and_destroy_on_modelled_disks(lab, lab_host):
    pool = "zbench-t-lab"
    lab_host.run(["zpool", "create", "-o", "ashift=12", pool, "raidz1", *lab.data_disks[:4]])
    try:
        status = json.loads(lab_host.run(["zpool", "status", "-j", pool]).stdout)
        top = status["pools"][pool]["vdevs"][pool]["vdevs"]
        assert [v["vdev_type"] for v in top.values()] == ["raidz"]
        assert len(next(iter(top.values()))["vdevs"]) == 4
    finally:
        lab_host.run(["zpool", "destroy", pool])
    listed = lab_host.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()
    assert pool not in listed


def test_ssh_passes_arguments_verbatim(lab_host):
    res = lab_host.run(["printf", "%s|", "a b", "$(id -u)", "x;y", "'q'"])
    assert res.stdout == "a b|$(id -u)|x;y|'q'|"


def test_failure_names_command_and_stderr(lab_host):
    with pytest.raises(CommandError) as exc:
        lab_host.run(["zpool", "status", "no-such-pool"])
    assert "no-such-pool" in str(exc.value) and "lab:" in str(exc.value)


def test_file_roundtrip(lab_host, tmp_path):
    src = tmp_path / "job.fio"
    src.write_text("[global]\nbs=4k\n")
    lab_host.put(src, "/tmp/zbench-roundtrip.fio")
    lab_host.get("/tmp/zbench-roundtrip.fio", tmp_path / "back.fio")
    assert (tmp_path / "back.fio").read_text() == src.read_text()


def test_disk_model_can_be_changed_live_through_qmp(lab):
    serial = lab.cfg.data_serials[-1]
    lab.set_model(serial, "hdd")
    lab.set_model(serial, lab.cfg.model)       # restore for other tests
    info = {d["device"] or d["qdev"]: d for d in lab.qmp("query-block")}
    assert info[serial]["inserted"]["iops"] == 400


def test_sigterm_during_boot_leaves_no_qemu_and_no_files(tmp_path):
    # A second, short-lived lab in a child process: SIGTERM it while it boots.
    env = dict(os.environ)
    code = ("from zbench_lib.hosts.lab import Lab, LabConfig\n"
            "Lab(LabConfig(disks=1, disk_bytes=64*1024**2, name='sigterm', accel='tcg')).up()\n")
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    from zbench_lib.core import paths
    lab_dir = paths.labs_dir() / "sigterm"
    deadline = time.monotonic() + 120
    while not (lab_dir / "qemu.log").exists():
        assert time.monotonic() < deadline and child.poll() is None, "lab never started"
        time.sleep(0.2)
    time.sleep(2)
    qemu = subprocess.run(["pgrep", "-f", "zbench-lab-sigterm"], capture_output=True, text=True)
    assert qemu.stdout.strip(), "qemu was not running"
    child.send_signal(signal.SIGTERM)
    assert child.wait(60) != 0
    time.sleep(1)
    left = subprocess.run(["pgrep", "-f", "zbench-lab-sigterm"], capture_output=True, text=True)
    assert left.stdout.strip() == ""
    assert not lab_dir.exists()
