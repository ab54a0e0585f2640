"""Every `lab:` key of a spec reaches the lab it boots (disk_size was once parsed and ignored)."""

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.sweeps.running.sweep_host import lab_config
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

BASE = """
name: labkeys
question: which lab does this spec boot?
surface: zvol
host: lab
lab: {LAB}
factors: {layout: [stripe], disks: [2], volblocksize: [16k]}
target: {volsize: 64M}
workloads: [{name: randread}]
repetitions: {fixed: 2}
"""


def test_each_lab_key_reaches_the_lab_config():
    spec = parse_spec(BASE.replace("{LAB}", "{disks: 3, disk_size: 4G, model: hdd-slow, extra_disks: 2, zfs: '2.1'}"))
    cfg = lab_config(spec)
    assert cfg.disks == 3 and cfg.disk_bytes == 4 * 1024 ** 3 and cfg.extra_disks == 2
    assert cfg.model.name == "hdd-slow" and cfg.zfs == "2.1" and cfg.name == "sweep-labkeys"


def test_defaults_are_the_documented_ones():
    cfg = lab_config(parse_spec(BASE.replace("{LAB}", "{}")))
    assert (cfg.disks, cfg.disk_bytes, cfg.model.name, cfg.extra_disks, cfg.zfs) == (4, 2 * 1024 ** 3, "hdd", 0, "2.3")


def test_an_openzfs_release_the_lab_cannot_build_is_refused_at_load():
    with pytest.raises(ConfigError, match="lab.zfs"):
        parse_spec(BASE.replace("{LAB}", "{zfs: '0.8'}"))


def _served_spec(factors: str, lab: str = "{disks: 2, extra_disks: 2}"):
    """BASE on `lab` with the model factors `factors` (YAML flow text) beside its own."""
    grid = "factors: {layout: [stripe], disks: [2], volblocksize: [16k]}"
    return parse_spec(BASE.replace("{LAB}", lab).replace(grid, grid[:-1] + f", {factors}}}"))


def test_a_mech_level_of_a_model_factor_serves_that_roles_disks_through_nbdkit_from_boot():
    data = lab_config(_served_spec("model: [hdd, 'mech:hdd-7200']"))
    assert (data.nbd_data, data.nbd_extra) == (True, False) and data.model.name == "hdd"
    extra = lab_config(_served_spec("log_model: [unthrottled, 'mech:nvme']"))
    assert (extra.nbd_data, extra.nbd_extra) == (False, True)
    plain = lab_config(_served_spec("model: [hdd, sata-ssd]"))
    assert (plain.nbd_data, plain.nbd_extra) == (False, False)


def test_a_running_lab_without_the_nbdkit_disks_a_mech_level_needs_is_refused_in_one_line():
    from zbench_lib.hosts.lab_config import LabConfig
    from zbench_lib.sweeps.running.sweep_host import check_served
    spec = _served_spec("model: [hdd, 'mech:hdd-7200']")
    with pytest.raises(ConfigError, match=r"^lab 'pytest' serves its data disks as files QEMU opens, but a model "
                                          r"factor of this spec has a mech: level, which only nbdkit serves"):
        check_served(spec, "pytest", {"config": LabConfig(disks=2).to_dict()})
    check_served(spec, "mech", {"config": LabConfig(disks=2, nbd_data=True).to_dict()})
    check_served(spec, "boot", {"config": LabConfig(disks=2, model="mech:hdd-5400").to_dict()})
    with pytest.raises(ConfigError, match="serves its extra disks as files"):
        check_served(_served_spec("special_model: ['mech:nvme']"), "pytest",
                     {"config": LabConfig(disks=2, nbd_data=True).to_dict()})
