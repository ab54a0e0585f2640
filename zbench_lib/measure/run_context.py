"""A run's context: what a run records beside fio, and what its truth checks read.

``RunContext`` is what a surface declares about a run before fio starts (the pool's state at
start, the target's cache and block, the lab and its disks' model, the declared data) and what
``runner.measure`` adds after it (the pool's health or the raw disks' presence, the ratio read
back). It is written as run.json's ``"context"``, a JSON object whose keys and their order are
the format of shipped sweeps: ``to_record`` gives back exactly the object it was built from
(``from_record``), keys this version does not know included, and a new context records its keys
in the order its builder names them (``recording``), as the dict literals before it did.

``RunFacts`` is a ``RunContext`` plus what ``rows.derive_rows`` derives from the raw files
(per-second IOPS, the window, the layout's facts from meta.json, each disk's service time, the
controller's load): the one object every truth check reads, by attribute.

A field's default is what a reader assumed of a record without the key (``None``; no data
declared meant incompressible), so a run recorded before a key existed reads as it did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Ground(Enum):
    """What fio's target stands on; run.json spells no pool as ``"surface": "raw"`` (and a
    zpool by leaving the key out: the ZFS surfaces never recorded it)."""
    ZPOOL = None
    NO_POOL = "raw"         # raw disks: no pool, zpool iostat, TXG or compression to judge


_RENAMED = {"surface": "ground"}            # the record's key -> the field's name, where they differ
_NOT_RECORDED = ("extra", "recorded")       # the bookkeeping fields, never keys of a record


@dataclass(frozen=True)
class RunContext:
    """run.json's "context" (see the module's text). Built by the surfaces (``sweeps/running``)."""
    ground: Ground = Ground.ZPOOL
    file_bytes: int | None = None               # fio's size: the file, or the raw disks' regions
    cache: str | None = None                    # 'cold' | 'warm' (primarycache), as the target was made
    scan_at_start: str | None = None            # 'none' | 'scrub:scanning' ...; None on raw disks
    pool_capacity_pct: float | None = None
    pool_fragmentation_pct: float | None = None
    compressratio: float | None = None          # the prefill's, replaced by the one read after the run
    compression: str | None = None              # the target's property as read back
    lab: bool | None = None                     # the disks are a VM's emulation
    qemu_pid: int | None = None                 # the lab's QEMU on the controller (host_contention)
    space: Mapping[str, Any] | None = field(default_factory=dict)   # the prefill's record
    txg_timeout_s: int | None = None
    block_bytes: int | None = None              # volblocksize / recordsize, or the raw disks' sector
    disk_model_iops: float | None = None        # per-disk limits of the data disks' model, None = unthrottled
    disk_model_bw: float | None = None
    disk_model: str | None = None
    data_device_count: int | None = None        # the devices' first N are the data disks
    settings_readback: Mapping[str, Any] | None = None    # pool_setup's read-back as result columns
    l2arc_warmup: Mapping[str, Any] | None = None
    fault_study: bool | None = None             # the spec injects faults (device_lost then describes)
    compressible_percent_declared: float | None = None    # the data the spec declared, 0 = incompressible
    incompressible_intended: bool | None = True           # its spelling before declarations (always True)
    pool_health_after: Mapping[str, Any] | None = None    # after fio: the pool's health,
    pool_health_error: str | None = None                  # or why it could not be read,
    raw_devices_after: Mapping[str, Any] | None = None    # or (no pool) which raw disks were still there
    trim_active: bool | None = None             # read by background_work if a record holds it (none does yet)
    prefilled: bool | None = None               # shown by fill_level if a record holds it (none does yet)
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)    # keys this version does not know
    recorded: tuple[str, ...] = field(default=(), repr=False)             # the record's keys, in order

    @classmethod
    def recording(cls, **values) -> RunContext:
        """A new context recording `values` in their order (TypeError for a key no field has)."""
        unknown = [k for k in values if _field_of(k) not in _known(cls)]
        if unknown:
            raise TypeError(f"{cls.__name__} records no key {', '.join(unknown)}")
        return cls.from_record(values)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RunContext:
        """The context of a run.json's "context" object, whatever version wrote it."""
        known, typed, extra = _known(cls), {}, {}
        for key, value in record.items():
            name = _field_of(key)
            if name not in known:
                extra[key] = value
            else:
                typed[name] = Ground(value) if name == "ground" else value
        return cls(**typed, extra=extra, recorded=tuple(record))

    def with_recorded(self, **values) -> RunContext:
        """This context with `values` recorded: a known key keeps its place, a new one goes last."""
        unknown = [k for k in values if _field_of(k) not in _known(RunContext)]
        if unknown:
            raise TypeError(f"RunContext records no key {', '.join(unknown)}")
        return dataclasses.replace(self, **{_field_of(k): Ground(v) if k == "surface" else v
                                            for k, v in values.items()},
                                   recorded=self.recorded + tuple(k for k in values if k not in self.recorded))

    def to_record(self) -> dict[str, Any]:
        """run.json's "context": the recorded keys in their order, each with its value."""
        return {key: self._value(key) for key in self.recorded}

    def _value(self, key: str):
        if key in self.extra:
            return self.extra[key]
        value = getattr(self, _field_of(key))
        return value.value if isinstance(value, Ground) else value

    @property
    def no_pool(self) -> bool:
        """fio ran on bare disks: there is no pool, zpool iostat, TXG or compression to judge."""
        return self.ground is Ground.NO_POOL


@dataclass(frozen=True)
class RunFacts(RunContext):
    """A run's context plus what is derived from its raw files: what the truth checks read."""
    iops_series: list | None = None             # total IOPS per second over the window (run_summary)
    window_s: float | None = None
    layout: str | None = None                   # from meta.json's factors: the family's name,
    layout_width: int | None = None             # its vdevs' width
    ashift: int | None = None                   # and the pool's ashift
    dev_service_each: Mapping[str, tuple] | None = None   # each data disk's service time (device_health)
    # the controller's load around a lab run (host_load.summarize; absent without controller.json)
    host_qemu_pid: int | None = None
    host_cpus: float | None = None
    host_load_s: float | None = None
    host_busy_cores: float | None = None
    host_qemu_cores: float | None = None
    host_other_cores: float | None = None
    host_other_cores_peak: float | None = None
    host_other_qemus: float | None = None
    host_load_error: str | None = None
    host_lab_wait_share: float | None = None     # run-queue wait of the lab's threads per window second
    host_lab_wait_share_peak: float | None = None
    host_lab_run_cores: float | None = None
    host_steal_share: float | None = None

    @classmethod
    def judging(cls, context: RunContext, **derived) -> RunFacts:
        """`context`'s fields with the derived ones (TypeError for a name no field has)."""
        own = {f.name: getattr(context, f.name) for f in dataclasses.fields(RunContext)}
        return cls(**{**own, **derived})

    @classmethod
    def of(cls, **values) -> RunFacts:
        """Facts named as run.json and the derivation name them, in one mapping (tests, tools)."""
        ctx = {k: v for k, v in values.items() if _field_of(k) in _known(RunContext)}
        return cls.judging(RunContext.recording(**ctx), **{k: v for k, v in values.items() if k not in ctx})


def _field_of(key: str) -> str:
    return _RENAMED.get(key, key)


def _known(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} - set(_NOT_RECORDED)
