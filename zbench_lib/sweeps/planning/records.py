"""The plan's records as typed, frozen values: a cell, a pool replicate and a target (``Plan``).

plan.json holds them as dicts, and a resume compares plan.json byte for byte, so each record
has every key its dict has as a field, ``from_dict`` (a key it does not know is a TypeError,
never dropped) and ``to_dict``, which gives the dict back: every field, but an optional one
(default None) only where it is set, as the plan left such keys out. A cell's ``factors`` and
``fio`` stay dicts (their keys come from the spec); they are copied in and out, so a caller
changing what it got does not change the plan. ``Target`` is what the executor runs on too
(``running.pool_request``); ``surface`` names what fio runs on (``running.surfaces``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from zbench_lib.zfs.models import RAW

# ZFS properties a target sets at creation (zfs create -o), when the plan gives them
ZFS_PROPERTIES = ("compression", "sync", "logbias", "primarycache", "secondarycache", "checksum", "copies")


def _copied(d: dict) -> dict:
    """`d` with each dict value copied (one level: a record never shares a dict with its caller)."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in d.items()}


def record_dict(record) -> dict:
    """A record's dict as the plan writes it: an optional field (default None) only where set."""
    return _copied({f.name: getattr(record, f.name) for f in fields(record)
                    if not (f.default is None and getattr(record, f.name) is None)})


@dataclass(frozen=True)
class Cell:
    """One cell: a factor combination x workload on its target (a pool replicate's, ``blocks``)."""
    cell_id: str
    pool_id: str
    target_id: str
    workload: str
    template: str
    reads_only: bool
    factors: dict                               # the result columns, by the spec's factor names
    fio: dict                                   # the workload's fio overrides
    runtime_s: float
    run_s: float                                # ramp + runtime + overhead: the estimate's
    write_bytes_per_run: int
    pool_replicate: int = 1
    base_cell_id: str | None = None             # the cell's id without its replicate's suffix
    until_steady: dict | None = None            # only where the workload declares it
    probe_s: float | None = None                # only where the load is a fraction of saturation

    @classmethod
    def from_dict(cls, d: dict) -> Cell:
        return cls(**_copied(d))

    def to_dict(self) -> dict:
        return record_dict(self)


@dataclass(frozen=True)
class PlanPool:
    """One pool replicate: its layout (``Layout.to_dict``, or the raw disks') and what is set around it."""
    pool_id: str
    layout: dict
    label: str
    data_disks: int
    kind: str | None = None                     # raw for the bare disks (no zpool), else left out
    fill: str | None = None                     # the fill factor's level, where it is a factor
    zfs: str | None = None                      # the OpenZFS release, where it is a factor
    settings: dict | None = None                # disk models and module parameters (spec.pool)
    pool_replicate: int = 1
    base_pool_id: str | None = None             # the pool's id without its replicate's suffix

    @classmethod
    def from_dict(cls, d: dict) -> PlanPool:
        return cls(**_copied(d))

    def to_dict(self) -> dict:
        return record_dict(self)


@dataclass(frozen=True)
class Target:
    """One target of the plan: a zvol, a dataset's file, or the raw disks' region (kind raw)."""
    target_id: str
    pool_id: str
    kind: str                                   # zvol, dataset or raw
    size_bytes: int                             # volsize, the file's size, or the region on each raw disk
    pool_replicate: int = 1
    prefill_bytes: int = 0                      # the plan's estimate
    prefill_s: float = 0.0
    file_bytes: int | None = None               # the file fio uses in a filesystem on the zvol
    volblocksize_bytes: int | None = None
    recordsize_bytes: int | None = None
    fs: str | None = None                       # none or ext4 (zvol sweeps, fs-on-zvol)
    access: str | None = None                   # local or nfs (dataset sweeps), iscsi (zvol sweeps with clients)
    clients: int | None = None                  # client VMs on it (NFS, iSCSI): its cells' largest count
    compressible_percent: int | None = None     # the data declared, where a spec declares it
    compression: str | None = None
    sync: str | None = None
    logbias: str | None = None
    primarycache: str | None = None
    secondarycache: str | None = None
    checksum: str | None = None
    copies: int | None = None
    atime: str | None = None
    special_small_blocks: int | None = None

    @classmethod
    def from_dict(cls, d: dict) -> Target:
        return cls(**d)

    def to_dict(self) -> dict:
        return record_dict(self)

    @property
    def surface(self) -> str:
        """What fio runs on: raw, fs-on-zvol (a filesystem made on the zvol), nfs (the dataset
        through an NFS mount), nfs-clients (the dataset mounted by client VMs, fio on each),
        iscsi-clients (the zvol logged in to by client VMs, fio on each), else the ZFS target itself."""
        if self.kind == RAW:
            return RAW
        if self.fs not in (None, "none"):
            return "fs-on-zvol"
        if self.access == "nfs":
            return "nfs-clients" if self.clients else "nfs"
        if self.access == "iscsi":
            return "iscsi-clients"
        return self.kind

    @property
    def fio_bytes(self) -> int:
        """What is written before the runs and read by them: the file in a filesystem, else the target
        (with clients: each client's file)."""
        return self.size_bytes if self.file_bytes is None else self.file_bytes

    @property
    def files(self) -> int:
        """How many files of `fio_bytes` it holds: one per NFS client, else one (an iSCSI LUN is shared)."""
        return (self.clients or 1) if self.access == "nfs" else 1

    def zfs_properties(self) -> dict:
        return {k: getattr(self, k) for k in ZFS_PROPERTIES if getattr(self, k) is not None}
