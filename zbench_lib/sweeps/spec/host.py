"""The host part of a spec: the lab and its disks, or a real host's destination and devices.

Everything is checked at load, so ``zbench sweep --dry-run`` refuses what a run would
refuse later only after the store and the connection exist: ``ssh://[user@]host[:port]``
with a plain user and host name (no leading '-', which ssh or scp could take for an
option) and a port in 1..65535; device paths absolute under /dev/, normalised, without
spaces or control characters, each listed once.
"""

from __future__ import annotations

import os
import re

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.hosts.lab_image import ZFS_RELEASES
from zbench_lib.hosts.resolve import capabilities_of
from zbench_lib.sweeps.spec.values import fail, integer, mapping, size

def zfs_release(v, path: str) -> str:
    """An OpenZFS release the lab builds ('2.1', '2.3'); `2.3` unquoted in YAML is a float."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = str(v)
    if not isinstance(v, str) or v not in ZFS_RELEASES:
        fail(path, f"the lab builds OpenZFS {', '.join(sorted(ZFS_RELEASES))}, not {v!r}")
    return v


LAB_DEFAULTS = {"disks": 4, "disk_size": "2G", "model": "hdd", "extra_disks": 0, "zfs": "2.3"}
_USER = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
_HOSTNAME = r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?"
_SSH_RE = re.compile(rf"ssh://(?:(?P<user>{_USER})@)?(?P<host>{_HOSTNAME})(?::(?P<port>[0-9]{{1,5}}))?")
MAX_DEVICES = 1024


def ssh_destination(host: str) -> str:
    """``ssh://[user@]host[:port]``, matched in full; ConfigError at ``host`` otherwise."""
    m = _SSH_RE.fullmatch(host)
    if m is None:
        fail("host", f"expected 'ssh://[user@]host[:port]' with a plain user and host name "
                     f"(letters, digits, '.', '-', '_'; not starting with '-'), got {host!r}")
    if m["port"] is not None and not 1 <= int(m["port"]) <= 65535:
        fail("host", f"ssh port must be 1..65535, got {m['port']} in {host!r}")
    return host


def require_capability(host: str, capability: str, path: str, why: str) -> None:
    """ConfigError at `path` when the node of `host` will not have `capability` (hosts.node)."""
    if capability not in capabilities_of(host):
        fail(path, f"needs {capability}, which host {host!r} lacks: {why}")


def _device(dev, path: str) -> str:
    if not isinstance(dev, str) or not dev.startswith("/dev/") or len(dev) <= len("/dev/"):
        fail(path, f"expected a /dev/ path, got {dev!r}")
    if len(dev) > 255 or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in dev):
        fail(path, f"device path {dev!r} contains spaces or control characters (or is too long)")
    if os.path.normpath(dev) != dev or "//" in dev:
        fail(path, f"device path {dev!r} is not normalised (no '..', '.', '//' or trailing '/')")
    return dev


def _lab(d: dict) -> dict:
    for k in ("devices", "extra_devices", "allow_signatures"):
        if k in d:
            fail(k, "applies only to local or ssh:// hosts (the lab owns its disks)")
    lab = {**LAB_DEFAULTS, **mapping(d.get("lab") or {}, "lab", tuple(LAB_DEFAULTS))}
    lab = {"disks": integer(lab["disks"], "lab.disks", 1, 24),
           "disk_bytes": size(lab["disk_size"], "lab.disk_size"),
           "model": lab["model"], "extra_disks": integer(lab["extra_disks"], "lab.extra_disks", 0, 23),
           "zfs": zfs_release(lab["zfs"], "lab.zfs")}
    if not isinstance(lab["model"], str) or len(lab["model"]) > 200:
        fail("lab.model", f"expected a disk model name such as 'hdd' or 'custom:iops=N,bw=SIZE', "
                          f"got {lab['model']!r}")
    try:
        parse_model(lab["model"])
    except ConfigError as e:
        fail("lab.model", str(e))
    except (ValueError, OverflowError, TypeError):
        fail("lab.model", f"cannot read disk model {lab['model']!r}")
    if lab["disks"] + lab["extra_disks"] > 24:
        fail("lab", f"at most 24 disks in all, got {lab['disks'] + lab['extra_disks']}")
    return lab


def _device_list(d: dict, k: str) -> tuple:
    """The spec's list `k` of device paths (devices, extra_devices, allow_signatures), checked."""
    v = d.get(k, [])
    if not isinstance(v, list) or (k == "devices" and not v):
        fail(k, f"expected a {'non-empty ' if k == 'devices' else ''}list of device paths, got {v!r}")
    if len(v) > MAX_DEVICES:
        fail(k, f"at most {MAX_DEVICES} devices, got {len(v)}")
    for i, dev in enumerate(v):
        _device(dev, f"{k}[{i}]")
    return tuple(v)


def parse_host(d: dict):
    """(host, lab or None, devices, extra_devices, allow_signatures) of a spec mapping."""
    host = d["host"]
    if host == "lab":
        return host, _lab(d), (), (), ()
    if not isinstance(host, str) or not (host == "local" or host.startswith("ssh://")):
        fail("host", f"expected 'lab', 'local' or 'ssh://user@host', got {host!r}")
    if host != "local":
        ssh_destination(host)
    if "lab" in d:
        fail("lab", f"applies only when host is 'lab', not {host!r}")
    if "devices" not in d:
        fail("devices", f"required for host {host!r}: the whole disks the sweep may destroy")
    lists = [_device_list(d, k) for k in ("devices", "extra_devices", "allow_signatures")]
    everything = lists[0] + lists[1]
    if len(set(everything)) != len(everything):
        fail("devices", "a device is listed more than once (devices and extra_devices together)")
    for i, dev in enumerate(lists[2]):
        if dev not in everything:
            fail(f"allow_signatures[{i}]", f"{dev!r} is not one of the sweep's devices or extra_devices")
    return host, None, *lists
