"""The factor registry: one record per factor a sweep can vary (``factors:`` in a spec).

A `Factor` says what a level may be (`check`: the value at its path to its canonical level, or a
one-line ConfigError naming the path), which sweeps accept it (`surfaces`; another surface's
sweep refuses it with `refusal`), and the result column its level shows in (`column`: the
plan's cell factors become results.parquet's columns). The spec (`sweep_spec`) and the raw
sweeps' rules (`raw_cells`) read these records; the order of `FACTORS` is the order the spec's
"allowed" message lists them in. The analysis keeps its own list of configuration columns
(`analysis/data/columns.CONFIG_COLUMNS`: it may not import what imports the hosts, as this
module's validators do); tests/test_factors.py checks every column here is in it.

``layout`` takes a family name or a mapping, checked by the spec itself (`sweep_spec.layout_value`:
the families and the raw disks' layout), so its record has no `check`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zbench_lib.measure.fio import IOENGINES
from zbench_lib.measure.load import parse_level as load_level
from zbench_lib.sweeps.spec.clients import MAX_CLIENTS
from zbench_lib.sweeps.spec.host import zfs_release
from zbench_lib.sweeps.spec.pool import POOL_SETTING_FACTORS, check_pool_setting
from zbench_lib.sweeps.spec.values import blocksize, fail, integer, zfs_property
from zbench_lib.zfs.models import RAW

ZVOL, DATASET, FS_ON_ZVOL = "zvol", "dataset", "fs-on-zvol"
ALL = (ZVOL, DATASET, FS_ON_ZVOL, RAW)
ZFS = (ZVOL, DATASET, FS_ON_ZVOL)
MAX_BLOCKSIZE = {"volblocksize": 128 * 1024, "recordsize": 1024 ** 2}
BLOCKSIZE = {ZVOL: "volblocksize", DATASET: "recordsize", FS_ON_ZVOL: "volblocksize"}


def fill_value(fill, path: str, allow_none: bool = False):
    """'whole', a percentage of the pool like '60%' (0-100], or (as a factor) 'none'."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", fill) if isinstance(fill, str) else None
    if not (fill == "whole" or (allow_none and fill == "none") or (m and 0 < float(m.group(1)) <= 100)):
        fail(path, f"expected {'none, ' if allow_none else ''}'whole' or a percentage like '60%' (0-100], "
                   f"got {fill!r}")
    return fill


@dataclass(frozen=True)
class Factor:
    """One factor (see the module's text). `refusal` is formatted with the factor's `key`, the
    sweep's `surface` and that surface's block-size factor `blocksize`."""
    name: str
    check: Callable[[Any, str], Any] | None
    column: str
    surfaces: tuple[str, ...] = ALL
    refusal: str = ""

    def refuses(self, surface: str) -> str | None:
        """Why a `surface` sweep refuses this factor (None: it accepts it). A raw sweep's reasons
        are `raw_cells`' (checked before the values)."""
        if surface in self.surfaces:
            return None
        return self.refusal.format(key=self.name, surface=surface, blocksize=BLOCKSIZE.get(surface))


def _int(lo: int, hi: int) -> Callable[[Any, str], Any]:
    return lambda v, p: integer(v, p, lo, hi)


def _choice(*levels: str, why: str = "") -> Callable[[Any, str], Any]:
    return lambda v, p: v if v in levels else fail(p, f"expected {' or '.join(levels)}{why}, got {v!r}")


def _small_blocks(v, p):
    # 0 (no small blocks on the special vdev) or a power of two up to 1M (OpenZFS 2.1-2.3)
    return 0 if v == 0 and not isinstance(v, bool) else blocksize(v, p, 512, 1024 ** 2)


def _property(key: str) -> Callable[[Any, str], Any]:
    return lambda v, p: zfs_property(key, v, p)


_BLOCK_REFUSAL = "{key} does not apply to a {surface} sweep (use {blocksize})"
_DATASET_ONLY = "{key} applies only to datasets, not to a zvol sweep"
_POOL = (
    Factor("layout", None, "layout"),
    Factor("disks", _int(1, 1024), "total_disks"),
    Factor("width", _int(1, 1024), "width", ZFS),
    Factor("vdevs", _int(1, 1024), "vdevs", ZFS),
    Factor("mirror_width", _int(2, 1024), "width", ZFS),
    Factor("log", _int(0, 64), "log", ZFS),
    Factor("ashift", _int(9, 16), "ashift", ZFS),
    Factor("fill", lambda v, p: fill_value(v, p, allow_none=True), "fill"),
    Factor("zfs", zfs_release, "zfs", ZFS),
)
# cache, special, log_mirror, the disk models by role and the ZFS module parameters (spec/pool.py);
# raw disks take the data disks' model only
_POOL_SETTINGS = tuple(Factor(k, (lambda k: lambda v, p: check_pool_setting(k, v, p))(k), k,
                              ALL if k == "model" else ZFS) for k in POOL_SETTING_FACTORS)
_BLOCKS = (
    Factor("volblocksize", lambda v, p: blocksize(v, p, 512, MAX_BLOCKSIZE["volblocksize"]), "volblocksize_bytes",
           (ZVOL, FS_ON_ZVOL), _BLOCK_REFUSAL),
    Factor("recordsize", lambda v, p: blocksize(v, p, 512, MAX_BLOCKSIZE["recordsize"]), "recordsize_bytes",
           (DATASET,), _BLOCK_REFUSAL),
)
_PROPERTIES = (
    *(Factor(k, _property(k), k, ZFS) for k in ("compression", "sync", "logbias", "primarycache", "secondarycache",
                                                 "checksum", "copies")),
    Factor("atime", _property("atime"), "atime", (DATASET,), _DATASET_ONLY),
    Factor("special_small_blocks", _small_blocks, "special_small_blocks", (DATASET,), _DATASET_ONLY),
)
_WORKLOAD = (
    Factor("iodepth", _int(1, 65536), "iodepth"),
    Factor("numjobs", _int(1, 4096), "numjobs"),
    Factor("bs", lambda v, p: blocksize(v, p, 512, 16 * 1024 ** 2), "bs_bytes"),
    # the data the workloads write and the prefill lays down, as fio's buffer_compress_percentage
    # (0: incompressible); what the compressible_data check judges against
    Factor("compressible_percent", _int(0, 100), "compressible_percent", ZFS),
)
_TARGET = (
    # fs (zvol sweeps): none, fio on the zvol itself, or ext4, on a file in ext4 made on the zvol
    Factor("fs", _choice("none", "ext4", why=" (xfs needs xfsprogs, which the lab image does not carry)"), "fs",
           (ZVOL,), "fs (none or ext4 on the zvol) is a factor of a zvol sweep; a fs-on-zvol sweep sets target.fs"),
    # access (dataset sweeps): local, or nfs, through an NFSv3 mount of the dataset with stable writes
    # (iscsi: a zvol's target.access with clients, spec/clients.py; never a factor)
    Factor("access", _choice("local", "nfs", "iscsi"), "access", (DATASET,),
           "access (local or nfs) is a factor of a dataset sweep"),
)
# the offered load (issue 33): 'saturation' (closed loop, as without the factor), a fraction of the
# cell's saturation IOPS (0.5, '50%') or an absolute rate ('2000iops'): open loop (measure/load.py)
_LOAD = (Factor("load", load_level, "load"),)
# the client VMs a run's load comes from, over NFS or iSCSI (issue 30; spec/clients.py says where it applies)
_CLIENTS = (Factor("clients", _int(1, MAX_CLIENTS), "clients", (DATASET, ZVOL),
                   "clients (client VMs on a datastore) is a factor of a dataset sweep with access: nfs "
                   "or a zvol sweep with access: iscsi"),)
# the I/O path (issue 44): fio's engine and O_DIRECT, as a workload's overrides set them; a factor when the
# path is the question (a database's buffered psync against a VM's libaio O_DIRECT; sweeps/spec/io_path.py)
_IO_PATH = (Factor("ioengine", _choice(*sorted(IOENGINES)), "ioengine"), Factor("direct", _int(0, 1), "direct"))
FACTORS: tuple[Factor, ...] = (*_POOL, *_POOL_SETTINGS, *_BLOCKS, *_PROPERTIES, *_WORKLOAD, *_TARGET, *_LOAD,
                               *_CLIENTS, *_IO_PATH)
BY_NAME = {f.name: f for f in FACTORS}
NAMES = tuple(BY_NAME)
PROPERTIES = tuple(f.name for f in _PROPERTIES)     # the target's ZFS properties (plan: a target's settings)
