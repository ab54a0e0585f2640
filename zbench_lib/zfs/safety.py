"""Refuse devices that hold anything, before a single byte is written.

On a real host (local or ssh) devices come only from an explicit allow-list,
and each is checked: it must be a whole block device that is not mounted,
has no partitions, carries no filesystem/RAID/partition-table signature, has no
ZFS label of a foreign pool, is not swap and does not hold the root filesystem.
Only signatures can be overridden, per device, by name. Everything here reads;
nothing writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.base import Host
from zbench_lib.zfs import readback

POOL_PREFIX = "zbench-"


@dataclass
class DeviceCheck:
    device: str
    resolved: str = ""
    reasons: list = field(default_factory=list)       # hard refusals
    signatures: list = field(default_factory=list)    # refusals the user may override

    def refused(self, overrides=()) -> list[str]:
        sig = [] if self.device in overrides else self.signatures
        return self.reasons + sig


def _blkid(host: Host, dev: str) -> dict:
    # -p probes the device itself (no cache); exit 2 means "nothing found".
    res = host.run(["blkid", "-p", "-o", "export", dev], check=False, timeout=60)
    out = {}
    for line in res.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def _zfs_label_pool(host: Host, dev: str) -> str | None:
    """Pool name in the device's ZFS label, or None when there is no label."""
    res = host.run(["zdb", "-l", dev], check=False, timeout=60)
    for line in res.stdout.splitlines():
        line = line.strip()
        if line.startswith("name:"):
            return line.split(":", 1)[1].strip().strip("'")
    return None


def check_device(host: Host, device: str, *, lsblk: dict | None = None,  # noqa: C901, PLR0912 (one refusal per check, in the message's order; debt, issue 28)
                 swaps: str | None = None, root_source: str | None = None,
                 pool_devices: set | None = None) -> DeviceCheck:
    chk = DeviceCheck(device)
    res = host.run(["readlink", "-e", device], check=False, timeout=30)
    if not res.ok:
        chk.reasons.append("does not exist")
        return chk
    real = chk.resolved = res.stdout.strip()
    if host.run(["test", "-f", real], check=False).ok:
        return _check_file_vdev(host, chk, pool_devices)
    if not host.run(["test", "-b", real], check=False).ok:
        chk.reasons.append("is not a block device")
        return chk
    lsblk = lsblk if lsblk is not None else _lsblk(host)
    node = lsblk.get(real)
    if node is None:
        chk.reasons.append("is not listed by lsblk")
        return chk
    if node.get("type") not in ("disk", "loop"):
        chk.reasons.append(f"is a {node.get('type')}, not a whole disk")
    mounts = [m for m in node.get("mountpoints") or [] if m]
    for child in node.get("children") or []:
        mounts += [m for m in child.get("mountpoints") or [] if m]
    if mounts:
        chk.reasons.append(f"is mounted ({', '.join(mounts)})")
    if node.get("children"):
        parts = ", ".join(c["path"] for c in node["children"])
        chk.reasons.append(f"has partitions ({parts})")
    swaps = swaps if swaps is not None else host.read_text("/proc/swaps")
    swap_devs = {line.split()[0] for line in swaps.splitlines()[1:] if line.strip()}
    if real in swap_devs or any(c["path"] in swap_devs for c in node.get("children") or []):
        chk.reasons.append("is in use as swap")
    root_source = root_source if root_source is not None else _root_source(host)
    if root_source and (root_source == real or root_source in
                        [c["path"] for c in node.get("children") or []]):
        chk.reasons.append("holds the root filesystem")
    pool_devices = pool_devices if pool_devices is not None else readback.imported_device_paths(host)
    if real in pool_devices or any(c["path"] in pool_devices for c in node.get("children") or []):
        chk.reasons.append("belongs to an imported ZFS pool")
    # ZFS on Linux puts the label on partition 1 of a whole disk it was given.
    for path in [real] + [c["path"] for c in node.get("children") or []]:
        label_pool = _zfs_label_pool(host, path)
        if label_pool and not label_pool.startswith(POOL_PREFIX) and \
                "belongs to an imported ZFS pool" not in chk.reasons:
            chk.reasons.insert(0, f"has a ZFS label of pool {label_pool!r} (importable; "
                               "`zpool labelclear` it yourself if it is really free)")
            break
    probe = _blkid(host, real)
    if probe.get("PTTYPE"):
        chk.signatures.append(f"carries a {probe['PTTYPE']} partition table")
    if probe.get("TYPE") and probe["TYPE"] != "zfs_member":
        chk.signatures.append(f"carries a {probe['TYPE']} signature")
    return chk


def _check_file_vdev(host: Host, chk: DeviceCheck, pool_devices) -> DeviceCheck:
    """A file vdev: only a file this workbench made, not part of a live pool."""
    name = chk.resolved.rsplit("/", 1)[1]
    if not name.startswith("zbench-vdev"):
        chk.reasons.append("is a regular file not made by zbench (use pools.file_vdevs)")
    if pool_devices is None:
        pool_devices = readback.imported_device_paths(host)
    if chk.resolved in pool_devices:
        chk.reasons.append("belongs to an imported ZFS pool")
    label_pool = _zfs_label_pool(host, chk.resolved)
    if label_pool and not label_pool.startswith(POOL_PREFIX):
        chk.reasons.append(f"has a ZFS label of pool {label_pool!r}")
    return chk


def _lsblk(host: Host) -> dict:
    out = host.run(["lsblk", "-J", "-p", "-o", "NAME,PATH,TYPE,MOUNTPOINTS,FSTYPE"], timeout=60).stdout
    flat = {}

    def add(nodes):
        for n in nodes:
            flat[n["path"]] = n
            add(n.get("children") or [])
    add(json.loads(out).get("blockdevices", []))
    return flat


def _root_source(host: Host) -> str:
    res = host.run(["findmnt", "-n", "-o", "SOURCE", "/"], check=False)
    src = res.stdout.strip()
    if src.startswith("/dev/"):
        real = host.run(["readlink", "-e", src], check=False).stdout.strip()
        return real or src
    return src


def device_checks(host: Host, devices: list[str]) -> list[DeviceCheck]:
    """Every device's verdict, refusals included (nothing raised); reads the host's
    block devices, swaps, root source and imported pools once for all of them."""
    lsblk, swaps = _lsblk(host), host.read_text("/proc/swaps")
    root, pools = _root_source(host), readback.imported_device_paths(host)
    return [check_device(host, d, lsblk=lsblk, swaps=swaps, root_source=root, pool_devices=pools)
            for d in devices]


def check_devices(host: Host, devices: list[str], overrides=()) -> list[DeviceCheck]:
    """Check every device; raise ConfigError listing every refusal with its reason."""
    if not devices:
        raise ConfigError("no devices given: list them explicitly (prefer /dev/disk/by-id paths)")
    if len(set(devices)) != len(devices):
        raise ConfigError("a device is listed twice")
    unknown = set(overrides) - set(devices)
    if unknown:
        raise ConfigError(f"override names devices not in the list: {sorted(unknown)}")
    checks = device_checks(host, devices)
    resolved = [c.resolved for c in checks if c.resolved]
    if len(set(resolved)) != len(resolved):
        raise ConfigError("two listed paths name the same device")
    problems = [f"{c.device}: {'; '.join(c.refused(overrides))}" for c in checks
                if c.refused(overrides)]
    if problems:
        raise ConfigError("refusing devices that are in use or hold data:\n  " +
                          "\n  ".join(problems) +
                          "\n(only signatures can be overridden, per device: allow_signatures=[...])")
    return checks
