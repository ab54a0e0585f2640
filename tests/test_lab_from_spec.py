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
