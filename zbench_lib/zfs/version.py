"""Which OpenZFS a host runs, read once per host, and what that release can do.

zbench supports OpenZFS 2.1 to 2.3. `-j` (JSON) output of `zpool status/get` and
`zfs get` appeared in 2.3; older releases are read through their parseable text
outputs (`zfs_text`) into the same records. An older release is refused before
anything is created, with the version in the message.
"""

from __future__ import annotations

import re
import weakref
from typing import NamedTuple

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.base import Host

OLDEST_SUPPORTED = (2, 1)
JSON_SINCE = (2, 3)

_CACHE: "weakref.WeakKeyDictionary[Host, OpenZFSVersion]" = weakref.WeakKeyDictionary()


class OpenZFSVersion(NamedTuple):
    major: int
    minor: int
    patch: int
    userland: str          # first line of `zfs version`, e.g. zfs-2.1.11-1
    kmod: str              # second line, e.g. zfs-kmod-2.1.11-1

    @property
    def release(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def has_json(self) -> bool:
        return (self.major, self.minor) >= JSON_SINCE

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def parse_zfs_version(text: str) -> OpenZFSVersion:
    """`zfs version` output -> OpenZFSVersion (the kernel module's version when both are given,
    since the module is what runs the pools).

    >>> str(parse_zfs_version("zfs-2.1.11-1\\nzfs-kmod-2.1.11-1\\n"))
    '2.1.11'
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    found = {}
    for line in lines:
        m = re.match(r"^zfs-(kmod-)?(\d+)\.(\d+)\.(\d+)", line)
        if m:
            found["kmod" if m.group(1) else "user"] = (line, tuple(int(g) for g in m.group(2, 3, 4)))
    if not found:
        raise ZbenchError(f"cannot read an OpenZFS version from `zfs version`: {text.strip()[:200]!r}")
    line, nums = found.get("kmod") or found["user"]
    return OpenZFSVersion(*nums, found.get("user", ("", None))[0], found.get("kmod", ("", None))[0])


def openzfs_version(host: Host) -> OpenZFSVersion:
    """The host's OpenZFS version, asked once per host object."""
    try:
        return _CACHE[host]
    except (KeyError, TypeError):
        pass
    res = host.run(["zfs", "version"], check=False, timeout=60)
    if not res.ok:
        raise ConfigError(f"{host.name}: `zfs version` failed ({res.stderr.strip()[:200] or res.returncode}); "
                          "is OpenZFS installed and its module loaded?")
    version = parse_zfs_version(res.stdout)
    try:
        _CACHE[host] = version
    except TypeError:
        pass
    return version


def require_supported(host: Host) -> OpenZFSVersion:
    """The host's version, or a ConfigError when it is older than zbench supports."""
    v = openzfs_version(host)
    if (v.major, v.minor) < OLDEST_SUPPORTED:
        raise ConfigError(f"{host.name} runs OpenZFS {v}; zbench supports OpenZFS "
                          f"{OLDEST_SUPPORTED[0]}.{OLDEST_SUPPORTED[1]} and later")
    return v
