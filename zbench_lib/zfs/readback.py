"""Read a pool's and a target's state back from the host, whatever OpenZFS it runs.

OpenZFS 2.3 answers in JSON (`-j`); 2.1 and 2.2 through their parseable text
outputs. Both paths give the same records (zfs_text's parsers mirror the JSON ones),
so pools, targets, safety and the counters never branch on the version themselves.
"""

from __future__ import annotations

import json

from zbench_lib.hosts.base import Host
from zbench_lib.zfs import zfs_text
from zbench_lib.zfs.layouts import parse_zpool_status_json
from zbench_lib.zfs.targets import (parse_zfs_get_json, parse_zpool_get_json, validate_pool_name, zfs_get_argv,
                                    zpool_get_argv)
from zbench_lib.zfs.version import openzfs_version


def _json(host: Host) -> bool:
    return openzfs_version(host).has_json


def pool_properties(host: Host, pool: str) -> dict:
    """Every property of `pool`, exact numbers, integers as int."""
    validate_pool_name(pool)
    if _json(host):
        return parse_zpool_get_json(host.run(zpool_get_argv(pool)).stdout, pool)
    return zfs_text.parse_get_hp(host.run(["zpool", "get", "-Hp", "all", pool]).stdout, pool)


def target_properties(host: Host, full_name: str) -> dict:
    """Every property of one dataset or zvol, exact numbers, integers as int."""
    if _json(host):
        return parse_zfs_get_json(host.run(zfs_get_argv(full_name)).stdout, full_name)
    return zfs_text.parse_get_hp(host.run(["zfs", "get", "-Hp", "all", full_name]).stdout, full_name)


def pool_topology(host: Host, pool: str) -> dict:
    """class -> [(vdev type, children)], as layouts.expected_topology states it."""
    if _json(host):
        return parse_zpool_status_json(host.run(["zpool", "status", "-j", "-P", pool]).stdout, pool)
    return zfs_text.parse_zpool_status_text(host.run(["zpool", "status", "-P", pool]).stdout, pool)


def pool_scan(host: Host, pool: str) -> str:
    """Background work right now: 'scrub:scanning', 'resilver:scanning' or 'none'."""
    if _json(host):
        return _scan_of_json(host.run(["zpool", "status", "-j", "-t", pool]).stdout, pool)
    return zfs_text.parse_scan_text(host.run(["zpool", "status", "-t", pool]).stdout)


def _scan_of_json(text: str, pool: str) -> str:
    scan = (json.loads(text).get("pools", {}).get(pool, {}).get("scan_stats") or {})
    state = str(scan.get("state", "none")).lower()
    return f"{scan.get('function', 'scan').lower()}:{state}" if state == "scanning" else "none"


_STATE_SEPARATOR = "zbench-pool-state-separator"


def pool_state(host: Host, pool: str) -> tuple[dict, str]:
    """(pool_properties, pool_scan) in one round trip: a run reads both before it starts, and each
    command to a lab's emulated guest costs 0.1-0.3 s. The two outputs are split at a line of
    their own; a failure of either is the command's."""
    validate_pool_name(pool)
    js = _json(host)
    get = zpool_get_argv(pool) if js else ["zpool", "get", "-Hp", "all", pool]
    status = ["zpool", "status", "-j", "-t", pool] if js else ["zpool", "status", "-t", pool]
    script = (f'{" ".join(get[:-1])} "$1" && echo {_STATE_SEPARATOR} && {" ".join(status[:-1])} "$1"')
    out = host.run(["sh", "-c", script, "zbench-pool-state", pool]).stdout
    props_text, sep, status_text = out.partition(f"{_STATE_SEPARATOR}\n")
    if not sep:
        raise ValueError(f"pool state of {pool}: no separator in the output")
    if js:
        return parse_zpool_get_json(props_text, pool), _scan_of_json(status_text, pool)
    return zfs_text.parse_get_hp(props_text, pool), zfs_text.parse_scan_text(status_text)


def imported_device_paths(host: Host) -> set[str]:
    """Every device (resolved path) of every imported pool; empty when none is imported."""
    if _json(host):
        res = host.run(["zpool", "status", "-P", "-L", "-j"], check=False, timeout=60)
        if not res.ok or not res.stdout.strip():
            return set()
        devices = set()

        def walk(node):
            # A top-level single-disk vdev carries neither vdev_type nor path in
            # OpenZFS 2.3's JSON, only its name: take any leaf named by a path.
            if isinstance(node, dict):
                leaf = node.get("path") or node.get("name")
                if not node.get("vdevs") and isinstance(leaf, str) and leaf.startswith("/"):
                    devices.add(leaf)
                for v in node.values():
                    walk(v)
        walk(json.loads(res.stdout))
        return devices
    res = host.run(["zpool", "status", "-P", "-L"], check=False, timeout=60)
    return zfs_text.device_paths_text(res.stdout) if res.ok else set()


def pool_health(host: Host, pool: str) -> dict:
    """The pool's state (ONLINE, DEGRADED, SUSPENDED, ...) and every device not ONLINE."""
    validate_pool_name(pool)
    return zfs_text.parse_pool_health_text(host.run(["zpool", "status", "-P", pool], timeout=60).stdout)
