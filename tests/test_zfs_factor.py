"""The OpenZFS release as a sweep factor (`factors: {zfs: [2.1, 2.3]}`), without a lab."""

from __future__ import annotations

from pathlib import Path

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.sweeps.running.sweep_host import lab_config
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import parse_spec

SPEC = (Path(__file__).parent / "specs" / "zfs-versions.yaml").read_text()


def test_each_release_gets_its_own_pools_and_is_a_result_column():
    plan = expand(parse_spec(SPEC))
    assert sorted(p.zfs for p in plan.pools) == ["2.1", "2.3"]
    assert {c.factors["zfs"] for c in plan.cells} == {"2.1", "2.3"}
    for c in plan.cells:                      # a cell runs on the pool of its own release
        pool = next(p for p in plan.pools if p.pool_id == c.pool_id)
        assert pool.zfs == c.factors["zfs"]
    assert len(plan.runs) == 8


def test_an_unquoted_release_is_read_as_the_release_it_names():
    plan = expand(parse_spec(SPEC.replace('zfs: ["2.1", "2.3"]', "zfs: [2.1, 2.3]")))
    assert sorted(p.zfs for p in plan.pools) == ["2.1", "2.3"]


def test_each_release_has_a_lab_of_its_own_name_and_image():
    spec = parse_spec(SPEC)
    a, b = lab_config(spec, "2.1"), lab_config(spec, "2.3")
    assert (a.zfs, b.zfs) == ("2.1", "2.3") and a.name != b.name
    assert a.name == "sweep-zfs-versions-zfs21" and lab_config(spec).name == "sweep-zfs-versions"
    long = parse_spec(SPEC.replace("name: zfs-versions", "name: " + "x" * 60))
    assert len(lab_config(long, "2.1").name) <= 32


@pytest.mark.parametrize("old,new,message", [
    ('zfs: ["2.1", "2.3"]', 'zfs: ["2.0", "2.3"]', "factors.zfs[0]: the lab builds OpenZFS 2.1, 2.3, not '2.0'"),
    ('zfs: ["2.1", "2.3"]', 'zfs: ["2.3", "2.3"]', "factors.zfs[1]: duplicate value"),
    ('zfs: ["2.1", "2.3"]', "zfs: [true]", "factors.zfs[0]: the lab builds OpenZFS"),
    ("extra_disks: 0}", 'extra_disks: 0, zfs: "2.1"}', "factors.zfs: give the OpenZFS release in lab.zfs or"),
])
def test_bad_release_factors_are_refused_at_load(old, new, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_spec(SPEC.replace(old, new))


def test_a_real_host_cannot_vary_its_release():
    text = SPEC.replace("host: lab", "host: ssh://root@bench1").replace(
        'lab: {disks: 2, disk_size: 1G, model: "custom:iops=400,bw=100M", extra_disks: 0}',
        "devices: [/dev/disk/by-id/a, /dev/disk/by-id/b]")
    with pytest.raises(ConfigError, match="factors.zfs: the OpenZFS release is a factor only in the lab"):
        parse_spec(text)
