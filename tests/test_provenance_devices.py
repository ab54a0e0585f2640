"""The devices of the provenance record: every listed path resolved in one command (a command on a
lab is 0.3-0.6 s and a lab lists a dozen disks), each path's line as before, a failure as before."""

from __future__ import annotations

import json
import shutil

import pytest

from zbench_lib.hosts.base import LocalHost, Result
from zbench_lib.measure import provenance

needs_readlink = pytest.mark.skipif(shutil.which("readlink") is None, reason="no readlink")
LSBLK = {"blockdevices": [
    {"path": "/dev/zbfake-a", "model": "QEMU HARDDISK", "serial": "zbdata00", "rev": "2.5+", "size": "1G"},
    {"path": "/dev/zbfake-b", "model": None, "serial": "zbdata01", "rev": None, "size": "1G"}]}


class _Host(LocalHost):
    """This machine's readlink on symlinks the test made; lsblk answered from LSBLK; every command kept."""

    def __init__(self):
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv, **kwargs):
        self.calls.append(tuple(map(str, argv)))
        if argv[0] == "lsblk":
            return Result(tuple(argv), 0, json.dumps(LSBLK), "", 0.0)
        return super().run(argv, **kwargs)


def _links(tmp_path) -> list[str]:
    links = []
    for name, target in (("by-id-a", "/dev/zbfake-a"), ("by-id-b", "/dev/zbfake-b"), ("by-id-c", "/dev/zbfake-c")):
        (tmp_path / name).symlink_to(target)
        links.append(str(tmp_path / name))
    return links


@needs_readlink
def test_every_device_is_resolved_in_one_command_each_with_its_own_line(tmp_path):
    host = _Host()
    paths = _links(tmp_path)
    out = provenance.devices(host, paths)
    assert [c for c in host.calls if c[0] == "readlink"] == [("readlink", "-f", *paths)]
    assert out == {f"device[{paths[0]}]": "QEMU HARDDISK zbdata00 2.5+ 1G",
                   f"device[{paths[1]}]": "zbdata01  1G",
                   f"device[{paths[2]}]": ""}               # not listed by lsblk: empty, as before


@needs_readlink
def test_a_path_readlink_cannot_resolve_fails_the_collector_not_the_others(tmp_path):
    host = _Host()
    paths = _links(tmp_path) + [str(tmp_path / "no-such-dir" / "disk")]
    rec = provenance.collect(host, devices_list=paths)
    assert "devices_error" in rec and not any(k.startswith("device[") for k in rec)
    assert "kernel" in rec                                  # the other collectors ran


def test_no_device_runs_no_readlink():
    host = _Host()
    assert provenance.devices(host, []) == {} and [c[0] for c in host.calls] == ["lsblk"]
