"""Benchmark targets: zvols and datasets, their properties, create/get command lines.

Property fields left at ``None`` are not passed to ``zfs create`` (ZFS's default or
the inherited value applies); the effective values are read back after creation
with ``zfs get -j -p all`` and recorded, never assumed. Zvols are created
non-sparse (no ``-s``), so their space is reserved as a real deployment's would be.
"""

from __future__ import annotations

import re
from dataclasses import KW_ONLY, dataclass, fields

from zbench_lib.core import sizes
from zbench_lib.zfs.zfs_json import pick
from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.layouts import validate_pool_name

KiB, MiB = 1024, 1024 ** 2
_COMPRESSION = {"on", "off", "lz4", "lzjb", "zle", "gzip", "zstd", "zstd-fast"} | \
    {f"gzip-{i}" for i in range(1, 10)} | {f"zstd-{i}" for i in range(1, 20)} | \
    {f"zstd-fast-{i}" for i in (*range(1, 11), *range(20, 101, 10), 500, 1000)}
ALLOWED = {
    "compression": _COMPRESSION,
    "sync": ("standard", "always", "disabled"),
    "logbias": ("latency", "throughput"),
    "primarycache": ("all", "metadata", "none"),
    "secondarycache": ("all", "metadata", "none"),
    "checksum": ("on", "off", "fletcher2", "fletcher4", "sha256", "noparity", "sha512",
                 "skein", "edonr", "blake3"),
    "atime": ("on", "off"),
}
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]+(/[A-Za-z0-9_.:-]+)*$")


def parse_size(value, what: str = "size", allow_zero: bool = False) -> int:
    """Bytes from 4096, '8k', '128K', '512M', '1G' (binary units); rejects garbage,
    negatives and, unless ``allow_zero``, zero."""
    n = sizes.parse_size(value, what)
    if n == 0 and not allow_zero:
        raise ConfigError(f"{what}: must be greater than zero, got {value!r}")
    return n


def _check_blocksize(what: str, n, maximum: int) -> list[str]:
    if isinstance(n, bool) or not isinstance(n, int):
        return [f"{what} must be a whole number of bytes, got {n!r}"]
    if n <= 0 or n & (n - 1):
        return [f"{what} {n} is not a power of two"]
    if not 512 <= n <= maximum:
        return [f"{what} {sizes.format_size(n)} is outside 512..{sizes.format_size(maximum)}"
                f" (raise max_{what} if this host's OpenZFS accepts more)"]
    return []


@dataclass(frozen=True)
class _Target:
    name: str
    _: KW_ONLY
    compression: str | None = None
    sync: str | None = None
    logbias: str | None = None
    primarycache: str | None = None
    secondarycache: str | None = None
    checksum: str | None = None
    copies: int | None = None

    KIND = "target"
    _SIZE_KEYS = ()

    def _common_problems(self) -> list[str]:
        problems = []
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name) or len(self.name) > 200:
            problems.append(f"{self.KIND} name {self.name!r} must be relative to the pool "
                            "(e.g. 'bench' or 'vm/disk0') using letters, digits, '_', '.', ':', '-'")
        for prop, allowed in ALLOWED.items():
            v = getattr(self, prop, None)
            if v is not None and v not in allowed:
                shown = ", ".join(sorted(allowed)) if len(allowed) < 12 else \
                    "on, off, lz4, lzjb, zle, gzip[-1..9], zstd[-1..19], zstd-fast[-N]"
                problems.append(f"{prop}={v!r} is not allowed; expected one of {shown}")
        if self.copies is not None and (isinstance(self.copies, bool) or self.copies not in (1, 2, 3)):
            problems.append(f"copies must be 1, 2 or 3, got {self.copies!r}")
        return problems

    def zfs_properties(self) -> dict:
        """Properties to pass as ``-o k=v`` (recordsize in bytes first), set ones only."""
        out = {"recordsize": self.recordsize_bytes} if isinstance(self, Dataset) else {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name != "name" and not f.name.endswith("_bytes") and v is not None:
                out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: dict, **limits):
        """Build and validate from a spec; sizes may be strings like '16K'."""
        if not isinstance(d, dict):
            raise ConfigError(f"{cls.KIND} spec must be a mapping, got {type(d).__name__}")
        if d.get("kind", cls.KIND) != cls.KIND:
            raise ConfigError(f"spec of kind {d['kind']!r} given to {cls.KIND}")
        d = {k: v for k, v in d.items() if k != "kind"}
        allowed = ["name", *cls._SIZE_KEYS] + [f.name for f in fields(cls)
                                               if f.name != "name" and not f.name.endswith("_bytes")]
        unknown = sorted(set(d) - set(allowed))
        hints = {"recordsize": "recordsize does not apply to a zvol (use volblocksize)",
                 "volblocksize": "volblocksize applies only to zvols (use recordsize)",
                 "volsize": "volsize applies only to zvols"}
        for k in unknown:
            if k in hints:
                raise ConfigError(f"{cls.KIND} {d.get('name')!r}: {hints[k]}")
        if unknown:
            raise ConfigError(f"unknown {cls.KIND} key(s): {', '.join(map(repr, unknown))} "
                              f"(allowed: {', '.join(allowed)})")
        for k in ("name", *cls._REQUIRED):
            if k not in d:
                raise ConfigError(f"{cls.KIND} spec is missing required key {k!r}")
        kwargs = {k: v for k, v in d.items() if k not in cls._SIZE_KEYS}
        for k in cls._SIZE_KEYS:
            if k in d:
                kwargs[f"{k}_bytes"] = parse_size(d[k], f"{cls.KIND} {k}")
        if isinstance(kwargs.get("atime"), bool):     # YAML turns on/off into booleans
            kwargs["atime"] = "on" if kwargs["atime"] else "off"
        return cls(**kwargs).validate(**limits)

    def to_dict(self) -> dict:
        d = {"kind": self.KIND}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_bytes"):
                d[f.name.removesuffix("_bytes")] = sizes.format_size(v)
            elif v is not None:
                d[f.name] = v
        return d


@dataclass(frozen=True)
class Zvol(_Target):
    volsize_bytes: int
    volblocksize_bytes: int = 16 * KiB

    KIND = "zvol"
    _SIZE_KEYS = ("volsize", "volblocksize")
    _REQUIRED = ("volsize",)

    def validate(self, max_volblocksize: int = 128 * KiB) -> "Zvol":
        """Raise ConfigError naming every problem; the lab accepts volblocksize up to 128K."""
        problems = self._common_problems()
        problems += _check_blocksize("volblocksize", self.volblocksize_bytes, max_volblocksize)
        v = self.volsize_bytes
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            problems.append(f"volsize must be a positive number of bytes, got {v!r}")
        elif not problems and v % self.volblocksize_bytes:
            problems.append(f"volsize {v} is not a multiple of volblocksize "
                            f"{sizes.format_size(self.volblocksize_bytes)}")
        if problems:
            raise ConfigError(f"invalid zvol {self.name!r}: " + "; ".join(problems))
        return self


@dataclass(frozen=True)
class Dataset(_Target):
    recordsize_bytes: int = 128 * KiB
    atime: str | None = None
    # Blocks up to this size go to the special vdev (0: none); a dataset property only.
    special_small_blocks: int | None = None

    KIND = "dataset"
    _SIZE_KEYS = ("recordsize",)
    _REQUIRED = ()

    def validate(self, max_recordsize: int = 1 * MiB) -> "Dataset":
        """Raise ConfigError naming every problem; ZFS goes to 16M only when tuned to."""
        problems = self._common_problems()
        problems += _check_blocksize("recordsize", self.recordsize_bytes, max_recordsize)
        if self.special_small_blocks not in (None, 0):
            # OpenZFS 2.1-2.3 accept 0 or a power of two up to 1M (SPA_OLD_MAXBLOCKSIZE).
            problems += _check_blocksize("special_small_blocks", self.special_small_blocks, MiB)
        if problems:
            raise ConfigError(f"invalid dataset {self.name!r}: " + "; ".join(problems))
        return self


def target_from_dict(d: dict) -> Zvol | Dataset:
    """Dispatch on ``kind: zvol|dataset``."""
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind not in ("zvol", "dataset"):
        raise ConfigError(f"target kind must be 'zvol' or 'dataset', got {kind!r}")
    return (Zvol if kind == "zvol" else Dataset).from_dict(d)


def zfs_create_argv(pool: str, target: Zvol | Dataset, **limits) -> list[str]:
    """``zfs create -V size -b vbs -o k=v ... pool/name`` or ``-o recordsize=...`` for datasets."""
    validate_pool_name(pool)
    target.validate(**limits)
    argv = ["zfs", "create"]
    if isinstance(target, Zvol):
        argv += ["-V", str(target.volsize_bytes), "-b", str(target.volblocksize_bytes)]
    for k, v in target.zfs_properties().items():
        argv += ["-o", f"{k}={v}"]
    return argv + [f"{pool}/{target.name}"]


def zfs_get_argv(full_name: str) -> list[str]:
    """Every property of one dataset/zvol, exact numbers, OpenZFS 2.3 JSON."""
    return ["zfs", "get", "-j", "-p", "all", full_name]


def zpool_get_argv(pool: str) -> list[str]:
    return ["zpool", "get", "-j", "-p", "all", validate_pool_name(pool)]


def _flat_properties(text: str, top: str, name: str | None, what: str) -> dict:
    name, obj = pick(text, top, name, what)
    out = {}
    for prop, entry in (obj.get("properties") or {}).items():
        v = entry.get("value") if isinstance(entry, dict) else entry
        if isinstance(v, str) and re.fullmatch(r"-?\d+", v):
            v = int(v)
        out[prop] = v
    return out


def parse_zfs_get_json(text: str, name: str | None = None) -> dict:
    """``zfs get -j -p`` output -> {property: value}, integers as int."""
    return _flat_properties(text, "datasets", name, "zfs get")


def parse_zpool_get_json(text: str, pool: str | None = None) -> dict:
    """``zpool get -j -p`` output -> {property: value}, integers as int."""
    return _flat_properties(text, "pools", pool, "zpool get")


def property_mismatches(target: Zvol | Dataset, effective: dict) -> dict:
    """{property: (requested, effective)} for every requested value ZFS did not apply."""
    wanted = target.zfs_properties()
    if isinstance(target, Zvol):
        wanted.update(volsize=target.volsize_bytes, volblocksize=target.volblocksize_bytes)
    return {k: (v, effective.get(k)) for k, v in wanted.items() if effective.get(k) != v}
