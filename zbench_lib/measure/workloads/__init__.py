"""The workload registry: one typed record per fio workload, one module per workload.

Each module of this package (``randread.py``, ...) defines ``WORKLOAD``, a `Workload`: its name, its
job template in templates/fio/, its fio defaults, what it does (direction, sequential or random)
and the metric it is judged in. Every reader asks the record (`get`) rather than guessing from a
name (``startswith("seq")``) or a tuple of names: adding a workload is a module here (and its
template, unless it reuses one), nothing else.

Depths follow the question each workload answers: outstanding I/O beyond what keeps every disk
busy measures queueing, not devices, so throughput questions (random IOPS) keep 16 outstanding (two
per disk of an 8-disk pool), bandwidth questions four 1M I/Os, and latency questions (sync writes, a
WAL) one per writer; the latency-vs-depth trade itself is the iodepth-curve spec's question.

The registry is built on first use, not at import: the workload modules import this one for
`Workload` and `COMMON`.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from collections.abc import Mapping
from typing import Literal

from zbench_lib.core.errors import ConfigError

# The job parameters every workload takes, with the defaults a workload does not set.
COMMON = MappingProxyType(dict(
    filename=None, size=None, offset=None, ioengine="libaio", direct=1, iodepth=16, numjobs=1, runtime_s=60,
    ramp_time_s=10,
    time_based=True, randseed=1234, compressible_percent=0, sync=0, fsync=0, log_prefix=None,
    steadystate=None, ss_dur_s=None, ss_ramp_s=None, rwmixread=None))
METRICS = ("bw_bytes_s", "iops")
DIRECTIONS = ("read", "write", "mixed")


@dataclass(frozen=True)
class Workload:
    """One workload of the standard suite (docs/domain.md).

    ``sequential``: each job streams through its own contiguous region, so several jobs need a
    size to split (measure/fio.py); ``metric``: the column its results are judged in (a
    bandwidth question or an IOPS one; fsync-heavy streams but asks how many commits);
    ``rwmix``: takes ``rwmixread`` (the read share of a mixed job), which the others refuse.
    ``defaults`` is read-only: a job's parameters are ``{**w.defaults, **overrides}``."""
    name: str
    direction: Literal["read", "write", "mixed"]
    sequential: bool
    metric: Literal["bw_bytes_s", "iops"]
    defaults: Mapping = field(default_factory=lambda: COMMON)
    template: str = ""              # file in templates/fio/; "" means "<name>.fio.j2"
    rwmix: bool = False

    def __post_init__(self):
        # Checked when the registry is built, so a malformed workload module fails every test.
        if self.direction not in DIRECTIONS or self.metric not in METRICS:
            raise ConfigError(f"workload {self.name}: direction {self.direction!r} or metric {self.metric!r} "
                              f"is not one of {DIRECTIONS} / {METRICS}")
        unknown = sorted(set(self.defaults) - set(COMMON) - {"bs"})
        if unknown or "bs" not in self.defaults:
            raise ConfigError(f"workload {self.name}: needs a bs and only COMMON's keys, not {unknown}")
        object.__setattr__(self, "defaults", MappingProxyType({**COMMON, **self.defaults}))
        object.__setattr__(self, "template", self.template or f"{self.name}.fio.j2")

    reads_only = property(lambda self: self.direction == "read", doc="Reads only: it never writes the target.")
    reads = property(lambda self: self.direction in ("read", "mixed"), doc="Reads the target (alone or mixed).")
    compressible_percent = property(lambda self: self.defaults["compressible_percent"],
                                    doc="The share of each buffer fio makes compressible, unless overridden.")


@cache
def by_name() -> dict[str, Workload]:
    """Every workload by name, from this package's modules, sorted by name."""
    found = {}
    for mod in pkgutil.iter_modules(__path__):
        w = importlib.import_module(f"{__name__}.{mod.name}").WORKLOAD
        if w.name in found:
            raise ConfigError(f"workload {w.name} is defined twice")
        found[w.name] = w
    return dict(sorted(found.items()))


def names() -> list[str]:
    return list(by_name())


def get(name: str) -> Workload:
    """The workload called `name`; ConfigError naming the known ones otherwise."""
    w = by_name().get(name) if isinstance(name, str) else None
    if w is None:
        raise ConfigError(f"unknown workload {name!r}; choose one of {sorted(by_name())}")
    return w


def find(name) -> Workload | None:
    """The workload called `name`, or None (a results row's template may be missing or foreign)."""
    return by_name().get(name) if isinstance(name, str) else None


def judged_metric(name) -> str:
    """The metric a template (or a workload name, for rows without a template) is judged in.

    A name outside the registry (a sweep recorded before the template column: its workload
    names only) keeps the rule such sweeps were judged by: bandwidth when it starts with "seq"."""
    w = find(name)
    if w is not None:
        return w.metric
    return "bw_bytes_s" if str(name).startswith("seq") else "iops"


def is_random(name, direction: str) -> bool:
    """A random workload of `direction` ("read" or "write"; sync or not): the classic claims' rows.

    A name outside the registry keeps the rule of sweeps before the template column: its prefix."""
    w = find(name)
    if w is not None:
        return not w.sequential and w.direction == direction
    return str(name).startswith("randread" if direction == "read" else "randwrite")
