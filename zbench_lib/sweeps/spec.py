"""Sweep specs: YAML describing a question, a host, factors, workloads and repetitions.

Everything a single value can get wrong is rejected here, before anything runs, with
a ConfigError naming the key path (``factors.volblocksize[2]: '12k' is not a power of
two``). Combinations of valid values that cannot be built (raidz2 of 2 disks, a layout
wider than the lab) are not errors: ``plan.expand`` skips them with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from zbench_lib.measure import fio
from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.hosts.lab_image import ZFS_RELEASES
from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.layouts import FAMILIES
from zbench_lib.sweeps.spec_values import METRICS, blocksize, fail, integer, mapping, size, zfs_property  # noqa: F401
from zbench_lib.sweeps.spec_values import repetitions as parse_repetitions

PROPERTIES = ("compression", "sync", "logbias", "primarycache", "secondarycache", "checksum",
              "copies", "atime")
POOL_FACTORS = ("layout", "disks", "width", "vdevs", "mirror_width", "log", "ashift")
WORKLOAD_FACTORS = ("iodepth", "numjobs", "bs")
BLOCKSIZE = {"zvol": "volblocksize", "dataset": "recordsize"}
MAX_BLOCKSIZE = {"volblocksize": 128 * 1024, "recordsize": 1024 ** 2}
TOP_KEYS = ("name", "question", "surface", "host", "lab", "devices", "extra_devices",
            "allow_signatures", "factors", "target", "workloads", "repetitions", "prefill",
            "order", "reads_first", "seed")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LAB_DEFAULTS = {"disks": 4, "disk_size": "2G", "model": "hdd", "extra_disks": 0, "zfs": "2.3"}


@dataclass(frozen=True)
class WorkloadSpec:
    name: str                 # label in results, unique within the sweep
    template: str             # key of fio.WORKLOADS
    overrides: dict = field(default_factory=dict)

    @property
    def reads_only(self) -> bool:
        return self.template in ("randread", "seqread")


@dataclass(frozen=True)
class SweepSpec:
    name: str
    question: str
    surface: str
    host: str
    lab: dict | None
    devices: tuple
    extra_devices: tuple
    allow_signatures: tuple
    factors: dict
    target: dict
    workloads: tuple
    repetitions: dict
    prefill: dict
    order: str
    reads_first: bool
    seed: int
    text: str = ""

    @property
    def available_disks(self) -> tuple[int, int]:
        """(data disks, extra disks for log/cache/special) the host offers."""
        if self.lab is not None:
            return self.lab["disks"], self.lab["extra_disks"]
        return len(self.devices), len(self.extra_devices)

    @property
    def disk_bytes(self) -> int | None:
        return self.lab["disk_bytes"] if self.lab is not None else None


_CHECKS = {
    **dict.fromkeys(("disks", "width", "vdevs", "iodepth", "numjobs"), lambda v, p: integer(v, p, 1)),
    "mirror_width": lambda v, p: integer(v, p, 2), "log": lambda v, p: integer(v, p, 0),
    "ashift": lambda v, p: integer(v, p, 9, 16), "bs": lambda v, p: blocksize(v, p, 512, 16 * 1024 ** 2),
    **{k: (lambda k: lambda v, p: blocksize(v, p, 512, MAX_BLOCKSIZE[k]))(k) for k in MAX_BLOCKSIZE},
}


def _factor(key: str, values, surface: str) -> list:
    path = f"factors.{key}"
    if key in ("volblocksize", "recordsize") and key != BLOCKSIZE[surface]:
        fail(path, f"{key} does not apply to a {surface} sweep (use {BLOCKSIZE[surface]})")
    if key == "atime" and surface == "zvol":
        fail(path, "atime applies only to datasets, not to a zvol sweep")
    if not isinstance(values, list) or not values:
        fail(path, f"expected a non-empty list of values, got {values!r}")
    out = []
    for i, v in enumerate(values):
        p = f"{path}[{i}]"
        if key == "layout":
            if isinstance(v, str):
                v = {"family": v}
            mapping(v, p, ("family", "width", "vdevs"), ("family",))
            if v["family"] not in FAMILIES:
                fail(p, f"unknown layout family {v['family']!r}; expected one of {', '.join(FAMILIES)}")
            v = {"family": v["family"], **{k: integer(v[k], f"{p}.{k}", 1) for k in ("width", "vdevs") if k in v}}
        else:
            v = _CHECKS.get(key, lambda v, p: zfs_property(key, v, p))(v, p)
        if v in out:
            fail(p, f"duplicate value {values[i]!r}")
        out.append(v)
    return out


def _factors(d, surface: str) -> dict:
    allowed = POOL_FACTORS + ("volblocksize", "recordsize") + PROPERTIES + WORKLOAD_FACTORS
    mapping(d, "factors", allowed, ("layout",))
    out = {k: _factor(k, v, surface) for k, v in d.items()}
    if "disks" in out and ("width" in out or "vdevs" in out):
        fail("factors.disks", "give either disks (width derived) or explicit width/vdevs, not both")
    for i, lay in enumerate(out["layout"]):
        if "width" in lay and ("disks" in out or "width" in out):
            fail(f"factors.layout[{i}]", "a layout with its own width cannot be combined with "
                  "factors.disks or factors.width")
    return out


def _workloads(items, target: dict, factors: dict) -> tuple:
    if not isinstance(items, list) or not items:
        fail("workloads", f"expected a non-empty list of workloads, got {items!r}")
    out, names = [], set()
    for i, w in enumerate(items):
        p = f"workloads[{i}]"
        if isinstance(w, str):
            w = {"name": w}
        mapping(w, p, ("name", "template", "overrides"), ("name",))
        name, template = w["name"], w.get("template", w["name"])
        if not isinstance(name, str) or not _NAME_RE.match(name):
            fail(f"{p}.name", f"must be a plain name (letters, digits, '_', '.', '-'), got {name!r}")
        if template not in fio.WORKLOADS:
            fail(f"{p}.template" if "template" in w else f"{p}.name",
                  f"unknown workload template {template!r}; choose one of {', '.join(sorted(fio.WORKLOADS))}")
        if name in names:
            fail(f"{p}.name", f"duplicate workload name {name!r}")
        names.add(name)
        overrides = mapping(w.get("overrides", {}), f"{p}.overrides", sorted(fio.WORKLOADS[template]))
        for k in overrides:
            if k in ("filename", "size"):
                fail(f"{p}.overrides.{k}", "is set by the sweep from the target, not per workload")
            if k in factors:
                fail(f"{p}.overrides.{k}", f"{k} is also a factor; give it in one place")
        try:
            fio.build_job(template, filename="/dev/zvol/check/target", size=target["size_bytes"], **overrides)
        except ConfigError as e:
            fail(f"{p}.overrides", str(e))
        out.append(WorkloadSpec(name, template, dict(overrides)))
    return tuple(out)


def _target(d, surface: str, factors: dict) -> dict:
    size_key = "volsize" if surface == "zvol" else "size"
    allowed = (size_key, BLOCKSIZE[surface]) + tuple(p for p in PROPERTIES if surface == "dataset" or p != "atime")
    mapping(d, "target", allowed, (size_key,))
    out = {"kind": surface, "size_bytes": size(d[size_key], f"target.{size_key}")}
    for k, v in d.items():
        if k in factors:
            fail(f"target.{k}", "is also a factor; a setting is either fixed (target) or varied (factors)")
        if k == BLOCKSIZE[surface]:
            out[f"{k}_bytes"] = blocksize(v, f"target.{k}", 512, MAX_BLOCKSIZE[k])
        elif k != size_key:
            out[k] = zfs_property(k, v, f"target.{k}")
    return out


def _host(d: dict):
    host = d["host"]
    if host != "lab" and host != "local" and not (isinstance(host, str) and re.match(r"^ssh://[^\s/]+$", host)):
        fail("host", f"expected 'lab', 'local' or 'ssh://user@host', got {host!r}")
    if host == "lab":
        for k in ("devices", "extra_devices", "allow_signatures"):
            if k in d:
                fail(k, "applies only to local or ssh:// hosts (the lab owns its disks)")
        lab = {**_LAB_DEFAULTS, **mapping(d.get("lab") or {}, "lab", tuple(_LAB_DEFAULTS))}
        lab = {"disks": integer(lab["disks"], "lab.disks", 1, 24),
               "disk_bytes": size(lab["disk_size"], "lab.disk_size"),
               "model": lab["model"], "extra_disks": integer(lab["extra_disks"], "lab.extra_disks", 0, 23),
               "zfs": str(lab["zfs"])}
        if lab["zfs"] not in ZFS_RELEASES:
            fail("lab.zfs", f"the lab builds OpenZFS {', '.join(sorted(ZFS_RELEASES))}, not {lab['zfs']!r}")
        try:
            parse_model(lab["model"])
        except ConfigError as e:
            fail("lab.model", str(e))
        if lab["disks"] + lab["extra_disks"] > 24:
            fail("lab", f"at most 24 disks in all, got {lab['disks'] + lab['extra_disks']}")
        return host, lab, (), (), ()
    if "lab" in d:
        fail("lab", f"applies only when host is 'lab', not {host!r}")
    if "devices" not in d:
        fail("devices", f"required for host {host!r}: the whole disks the sweep may destroy")
    lists = []
    for k in ("devices", "extra_devices", "allow_signatures"):
        v = d.get(k, [])
        if not isinstance(v, list) or (k == "devices" and not v):
            fail(k, f"expected a {'non-empty ' if k == 'devices' else ''}list of device paths, got {v!r}")
        for i, dev in enumerate(v):
            if not isinstance(dev, str) or not dev.startswith("/dev/"):
                fail(f"{k}[{i}]", f"expected a /dev/ path, got {dev!r}")
        lists.append(tuple(v))
    everything = lists[0] + lists[1]
    if len(set(everything)) != len(everything):
        fail("devices", "a device is listed more than once (devices and extra_devices together)")
    return host, None, *lists


def _prefill(d) -> dict:
    p = {"fill": "whole", "policy": "once-per-target", **mapping(d or {}, "prefill", ("fill", "policy"))}
    fill = p["fill"]
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", fill) if isinstance(fill, str) else None
    if fill != "whole" and not (m and 0 < float(m.group(1)) <= 100):
        fail("prefill.fill", f"expected 'whole' or a percentage like '60%' (0-100], got {fill!r}")
    if p["policy"] not in ("once-per-target", "none"):
        fail("prefill.policy", f"expected 'once-per-target' or 'none', got {p['policy']!r}")
    return p


def parse_spec(text: str, name: str = "sweep") -> SweepSpec:
    """Validate a sweep spec given as YAML text; ``name`` is used when the spec has none."""
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"spec is not valid YAML: {e}") from None
    mapping(d, "spec", TOP_KEYS, ("question", "surface", "host", "factors", "target", "workloads"))
    name = d.get("name", name)
    if not isinstance(name, str) or not _NAME_RE.match(name):
        fail("name", f"must be a plain name (letters, digits, '_', '.', '-'), got {name!r}")
    q = d["question"]
    if not isinstance(q, str) or len(re.findall(r"\w+", q)) < 3:
        fail("question", f"state the question in words (at least three), got {q!r}")
    surface = d["surface"]
    if surface not in BLOCKSIZE:
        fail("surface", f"expected 'zvol' or 'dataset', got {surface!r}")
    host, lab, devices, extra, sigs = _host(d)
    factors = _factors(d["factors"], surface)
    target = _target(d["target"], surface, factors)
    order = d.get("order", "randomised")
    if order not in ("randomised", "randomized", "as-written"):
        fail("order", f"expected 'randomised' or 'as-written', got {order!r}")
    reads_first = d.get("reads_first", True)
    if not isinstance(reads_first, bool):
        fail("reads_first", f"expected true or false, got {reads_first!r}")
    return SweepSpec(name=name, question=q.strip(), surface=surface, host=host, lab=lab, devices=devices,
                     extra_devices=extra, allow_signatures=sigs, factors=factors, target=target,
                     workloads=_workloads(d["workloads"], target, factors),
                     repetitions=parse_repetitions(d.get("repetitions")), prefill=_prefill(d.get("prefill")),
                     order=order.replace("randomized", "randomised"), reads_first=reads_first,
                     seed=integer(d.get("seed", 0), "seed", 0), text=text)


def load_spec(path) -> SweepSpec:
    """Read and validate a spec file; its stem names the sweep unless the spec says ``name``."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read sweep spec {path}: {e}") from None
    return parse_spec(text, name=path.stem)
