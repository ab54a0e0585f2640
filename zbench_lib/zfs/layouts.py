"""Pool layouts as data: a family's vdevs (zfs/families/: stripe, mirror, raidz1/2/3, draid1/2/3)
with optional log, cache, special.

Conventions (decided once, here; each family's own in its module of zfs/families/):

- ``width`` disks per top-level vdev, ``vdevs`` of them (a stripe: ``width`` single-disk vdevs,
  ``vdevs`` 1); ``draid_data`` and ``draid_spares`` are dRAID's own fields, else 0.
- ``log``/``cache``/``special`` are *counts* of extra devices. A mirrored log or
  special vdev is one mirror of all its devices; unmirrored, each device is its
  own vdev. Cache devices are never mirrored (ZFS does not allow it).

``zpool_create_argv`` never passes ``-f``: device safety is checked separately
(safety module), and without ``-f`` zpool still refuses devices in use and
mismatched replication levels, a second line of defence we keep.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, fields

from zbench_lib.zfs import draid, families
from zbench_lib.zfs.zfs_json import pick
from zbench_lib.core.errors import ConfigError, ZbenchError

_POOL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")
# zpool refuses names starting with these (zpool_name_valid) and "log"; the
# workbench also refuses the other vdev keywords to keep argv unambiguous.
_RESERVED_PREFIXES = ("mirror", "raidz", "draid", "spare")
_RESERVED_NAMES = ("log", "cache", "special", "dedup")


@dataclass(frozen=True)
class Layout:
    family: str
    width: int
    vdevs: int = 1
    ashift: int = 12
    log: int = 0
    log_mirror: bool = False
    cache: int = 0
    special: int = 0
    special_mirror: bool = False
    draid_data: int = 0
    draid_spares: int = 0

    # -- derived facts: the family's record (zfs/families/) says each ---------
    fam = property(lambda self: families.get(self.family), doc="The family's record (zfs/families/).")
    parity = property(lambda self: self.fam.parity, doc="raidz/dRAID parity per vdev (0 for stripe and mirror).")
    redundancy = property(lambda self: self.fam.redundancy(self),
                          doc="Disks per top-level vdev that may fail without data loss.")
    total_disks = property(lambda self: self.fam.total_disks(self),
                           doc="Disks in the data vdevs (log/cache/special excluded).")
    extra_disks = property(lambda self: self.log + self.cache + self.special,
                           doc="Log + cache + special devices.")
    data_disks = property(lambda self: self.fam.data_disks(self),
                          doc="Stripe: n; mirror: number of mirrors; raidz-p: vdevs x (width - p); dRAID: vdevs x "
                              "(width - spares) x d/(d + p), an int when whole, else a float rounded to 2 places.")

    def raw_bytes(self, disk_bytes: int) -> int:
        """Sum of the data-vdev disk sizes."""
        return self.total_disks * disk_bytes

    def usable_bytes(self, disk_bytes: int) -> int:
        """Approximate: data_disks x disk_bytes, before raidz padding, metadata,
        labels and the pool's slop reservation (so ZFS reports somewhat less).
        dRAID: the exact vdevs x (width - spares) x d/(d+p) x disk_bytes, rounded down."""
        return self.fam.usable_bytes(self, disk_bytes)

    def describe(self) -> str:
        """Short label, e.g. '2x raidz2(6) + log mirror(2) + cache(1)', '1x draid2(8: 4d, 1s)'."""
        text = self.fam.label(self)
        for kind, n, mirrored in (("log", self.log, self.log_mirror), ("cache", self.cache, False),
                                  ("special", self.special, self.special_mirror)):
            if n:
                text += f" + {kind}{' mirror' if mirrored else ''}({n})"
        return text

    # -- validation ----------------------------------------------------------
    def validate(self) -> "Layout":
        """Raise ConfigError naming every violation; return self when valid."""
        if self.family not in families.names():
            raise ConfigError(f"unknown layout family {self.family!r}; "
                              f"expected one of {', '.join(families.names())}")
        for f in ("width", "vdevs", "ashift", "log", "cache", "special", "draid_data", "draid_spares"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"layout {f} must be an integer, got {v!r}")
        for f in ("log_mirror", "special_mirror"):
            if not isinstance(getattr(self, f), bool):
                raise ConfigError(f"layout {f} must be true or false, got {getattr(self, f)!r}")
        problems = self.fam.width_problems(self) + self.fam.vdev_problems(self) + self._device_problems()
        if problems:
            raise ConfigError(f"invalid layout {self.describe()}: " + "; ".join(problems))
        return self

    def _device_problems(self) -> list[str]:
        """ashift and the log, cache and special devices: the same rules for every family."""
        problems = []
        if not 9 <= self.ashift <= 16:
            problems.append(f"ashift must be between 9 and 16 (512 B to 64 KiB sectors), got {self.ashift}")
        for kind in ("log", "cache", "special"):
            if getattr(self, kind) < 0:
                problems.append(f"{kind} device count cannot be negative, got {getattr(self, kind)}")
        if self.log_mirror and self.log < 2:
            problems.append(f"a mirrored log needs at least 2 log devices, got {self.log}")
        if self.special_mirror and self.special < 2:
            problems.append(f"a mirrored special vdev needs at least 2 special devices, got {self.special}")
        if self.special and not self.special_mirror and self.fam.redundant:
            # zpool create refuses it ("mismatched replication level") unless forced, and a
            # lost special disk loses the pool: refuse it here, before anything runs.
            problems.append(f"a special vdev beside {self.family} must be mirrored (special_mirror), "
                            "or the pool loses its redundancy")
        return problems

    def check_disks(self, available: int) -> None:
        """Raise ConfigError when fewer than the needed disks are available."""
        need = self.total_disks + self.extra_disks
        if available < need:
            raise ConfigError(f"layout needs {need} disks ({self.total_disks} data + "
                              f"{self.extra_disks} log/cache/special) but only {available} are available")

    # -- YAML specs ----------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict) -> "Layout":
        """Build and validate a layout from a spec mapping; unknown keys are named."""
        if not isinstance(d, dict):
            raise ConfigError(f"layout spec must be a mapping, got {type(d).__name__}")
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(d) - set(allowed))
        if unknown:
            raise ConfigError(f"unknown layout key(s): {', '.join(map(repr, unknown))} "
                              f"(allowed: {', '.join(allowed)})")
        for key in ("family", "width"):
            if key not in d:
                raise ConfigError(f"layout spec is missing required key {key!r}")
        return cls(**d).validate()

    def to_dict(self) -> dict:
        """Every field; a family's own fields (the draid_* ones) only for it, so other layouts'
        dicts (plan.json) stay as they were."""
        own = {f for fam in families.by_name().values() for f in fam.layout_fields} - set(self.fam.layout_fields)
        return {k: v for k, v in asdict(self).items() if k not in own}


# -- command lines -----------------------------------------------------------
def validate_pool_name(pool: str) -> str:
    """Apply ZFS's pool-name rules (plus the workbench's reserved words)."""
    if not isinstance(pool, str) or not pool:
        raise ConfigError(f"pool name must be a non-empty string, got {pool!r}")
    if not _POOL_NAME_RE.match(pool) or len(pool) > 200:
        raise ConfigError(f"invalid pool name {pool!r}: must start with a letter and contain "
                          "only letters, digits, '_', '.', ':' and '-' (at most 200)")
    low = pool.lower()
    if low.startswith(_RESERVED_PREFIXES) or low in _RESERVED_NAMES:
        raise ConfigError(f"invalid pool name {pool!r}: reserved (names may not start with "
                          f"{'/'.join(_RESERVED_PREFIXES)} or be {'/'.join(_RESERVED_NAMES)})")
    if re.match(r"^c[0-9]", pool):
        raise ConfigError(f"invalid pool name {pool!r}: 'c' followed by a digit looks like a disk name")
    return pool


def validate_device(path: str) -> str:
    """A device is a /dev/ path or an absolute, normalised file path."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ConfigError(f"device {path!r} must be a /dev/ path or an absolute file path")
    if any(c.isspace() or ord(c) < 32 for c in path) or os.path.normpath(path) != path or path == "/":
        raise ConfigError(f"device path {path!r} is not a clean absolute path")
    return path


def _properties_argv(flag: str, props: dict | None) -> list[str]:
    out = []
    for k, v in (props or {}).items():
        if not re.match(r"^[a-z][a-z0-9_:.@-]*$", str(k)) or not str(v) or any(c.isspace() for c in str(v)):
            raise ConfigError(f"bad property {k}={v!r} for {flag}")
        out += [flag, f"{k}={v}"]
    return out


def zpool_create_argv(pool: str, devices: list[str], layout: Layout,
                      properties: dict | None = None, fs_properties: dict | None = None) -> list[str]:
    """``zpool create`` argv for ``layout`` from devices ordered data, log, cache, special."""
    layout.validate()
    validate_pool_name(pool)
    devices = [validate_device(d) for d in devices]
    need = layout.total_disks + layout.extra_disks
    if len(devices) != need:
        raise ConfigError(f"layout {layout.describe()} takes exactly {need} devices "
                          f"({layout.total_disks} data + {layout.extra_disks} log/cache/special), "
                          f"got {len(devices)}")
    dupes = sorted({d for d in devices if devices.count(d) > 1})
    if dupes:
        raise ConfigError(f"device(s) listed more than once: {', '.join(dupes)}")
    if properties and "ashift" in properties:
        raise ConfigError("set ashift in the layout, not in pool properties")
    argv = ["zpool", "create", "-o", f"ashift={layout.ashift}"]
    argv += _properties_argv("-o", properties) + _properties_argv("-O", fs_properties) + [pool]
    data, rest = devices[:layout.total_disks], devices[layout.total_disks:]
    argv += layout.fam.vdev_args(layout, data)
    log, cache, special = (rest[:layout.log], rest[layout.log:layout.log + layout.cache],
                           rest[layout.log + layout.cache:])
    for kind, group, mirrored in (("log", log, layout.log_mirror), ("cache", cache, False),
                                  ("special", special, layout.special_mirror)):
        argv += ([kind] + (["mirror"] if mirrored else []) + group) if group else []
    return argv


# -- topology read-back ------------------------------------------------------
def expected_topology(layout: Layout) -> dict:
    """What ``parse_zpool_status_json`` should return for a pool made from ``layout``:
    class -> list of (vdev type, number of children); single devices are ('leaf', 0).
    A dRAID vdev is ('draidP', children); its distributed spares, listed under the pool's
    spares, are a 'spare' class of ('dspare', 0), present only when there are some."""
    layout.validate()
    data = layout.fam.data_topology(layout)

    def group(n, mirrored):
        return [("mirror", n)] if mirrored else [("leaf", 0)] * n

    spares = layout.fam.spare_topology(layout)
    return {"data": data, "log": group(layout.log, layout.log_mirror),
            "cache": [("leaf", 0)] * layout.cache, "special": group(layout.special, layout.special_mirror), **spares}


# JSON group keys (pool level, beside "vdevs") and vdev "class" values, by our name.
_GROUP_KEYS = {"logs": "log", "log": "log", "l2cache": "cache", "cache": "cache",
               "special": "special", "dedup": "dedup", "spares": "spare", "spare": "spare"}
_CLASSES = {"normal": "data", "log": "log", "logs": "log", "special": "special", "dedup": "dedup",
            "l2cache": "cache", "spare": "spare"}


def _vdev_shape(name: str, v: dict) -> tuple[str, int]:
    vtype = v.get("vdev_type", "")
    children = v.get("vdevs") or {}
    # OpenZFS 2.3 gives dRAID vdevs and spares no vdev_type/class/state (openzfs/zfs#18431): use names.
    kind = draid.status_kind(str(v.get("name", name))) or ("dspare" if vtype == "dspare" else None)
    if vtype == "draid" and not (kind or "").startswith("draid"):
        raise ZbenchError(f"zpool status JSON: cannot tell the parity of dRAID vdev {name!r}")
    if kind:
        return kind, 0 if kind == "dspare" else len(children)
    if vtype == "raidz":
        m = re.match(r"^raidz([123])", v.get("name", name))
        if not m:
            raise ZbenchError(f"zpool status JSON: cannot tell the parity of raidz vdev {name!r}")
        return f"raidz{m.group(1)}", len(children)
    if vtype in ("disk", "file", "") and not children:
        # a device; a top-level single disk may come with only its name (no vdev_type, no path)
        return "leaf", 0
    return vtype or "unknown", len(children)


def parse_zpool_status_json(text: str, pool: str | None = None) -> dict:
    """Turn ``zpool status -j`` (OpenZFS 2.3, nested vdevs) into expected_topology's shape.
    Classes other than data/log/cache/special (dedup, spare) appear only when present."""
    pool, p = pick(text, "pools", pool, "zpool status")
    out = {"data": [], "log": [], "cache": [], "special": []}
    roots = p.get("vdevs") or {}
    root = roots.get(pool) or next(iter(roots.values()), {})
    sources = [(k, v, None) for k, v in (root.get("vdevs") or {}).items()]
    sources += [(k, v, grp) for grp_key, grp in _GROUP_KEYS.items()
                for k, v in (p.get(grp_key) or {}).items()]
    for name, v, grp in sources:                    # grows while iterating: nested groups
        if grp is None and name in _GROUP_KEYS and "vdev_type" not in v:
            sources += [(k, c, _GROUP_KEYS[name]) for k, c in (v.get("vdevs") or v).items()
                        if isinstance(c, dict)]
            continue
        cls = grp or _CLASSES.get(v.get("class", "normal"), v.get("class"))
        out.setdefault(cls, []).append(_vdev_shape(name, v))
    return out
