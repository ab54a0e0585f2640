"""Sweep specs: YAML describing a question, a host, factors, workloads and repetitions.

Everything a single value can get wrong is rejected here, before anything runs, with
a ConfigError naming the key path (``factors.volblocksize[2]: '12k' is not a power of
two``). Combinations of valid values that cannot be built (raidz2 of 2 disks, a layout
wider than the lab) are not errors: ``plan.expand`` skips them with a reason.

The text is read by ``spec.yaml_file`` (at most 1 MiB of UTF-8, no anchors or aliases, no
duplicate keys), the host and its devices are checked by ``spec.host``, numbers must be
finite and bounded and names match in full (``spec.values``), a declared L2ARC warm-up must be
able to warm something the runs then read (``spec.warmup``), and a study larger than
MAX_CELLS cells or MAX_RUNS runs is refused from its factor lengths alone. At plan time,
``capacity`` refuses a lab pool whose targets together do not fit in it. The bare disks
(``surface: raw``, or ``raw`` among a zvol sweep's layouts) are checked by ``raw_cells``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from zbench_lib.measure import fio, workloads
from zbench_lib.measure.until_steady import MAX_WINDOWS, MIN_WINDOWS, UntilSteady
from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs import families
from zbench_lib.sweeps.spec.io_path import check_release_paths
from zbench_lib.sweeps.spec.clients import check_clients, client_levels
from zbench_lib.sweeps.spec.fleet import check_fleet_spec, parse_hosts
from zbench_lib.sweeps.spec.factors import BLOCKSIZE, BY_NAME, MAX_BLOCKSIZE, NAMES, PROPERTIES, fill_value
from zbench_lib.sweeps.spec.faults import parse_faults
from zbench_lib.sweeps.spec.pool import check_pool_factors
from zbench_lib.sweeps.spec.raw_cells import RAW, check_layouts, check_raw, check_raw_factors, raw_layout, raw_target
from zbench_lib.sweeps.spec.values import blocksize, fail, integer, mapping, size
from zbench_lib.sweeps.spec.values import fio_overrides, name as plain_name
from zbench_lib.sweeps.spec.values import repetitions as parse_repetitions
from zbench_lib.sweeps.spec.warmup import parse_warmup
from zbench_lib.sweeps.spec.yaml_file import load_yaml, read_spec_text

# fs-on-zvol: a zvol like any other, with a filesystem made on it and fio on a file inside
ZVOL_SURFACES = ("zvol", "fs-on-zvol")
SURFACES = (*BLOCKSIZE, RAW)     # raw: fio on the bare disks, no pool (raw_cells)
FS_FILE_SHARE = 0.75            # of volsize: the file fio uses in a fs-on-zvol (ext4's journal and inode
                                # tables take up to ~17% of a 128M volume, less of larger ones)
TOP_KEYS = ("name", "question", "surface", "host", "lab", "devices", "extra_devices",
            "allow_signatures", "factors", "target", "workloads", "repetitions", "prefill",
            "order", "reads_first", "seed", "randseed", "faults", "warmup", "hosts", "host_factor")
# Stated limits on the size of a study, checked from the factor lengths before anything is
# expanded (planning takes a few ms per cell, a run a minute or more).
MAX_CELLS = 2_000               # factor combinations x workloads x pool replicates
MAX_RUNS = 20_000               # cells x planned repetitions (the pilot, or all of a fixed design)
# A run's random offsets: its own sequence by default, so reruns of one pool sample the disks' positional
# service times (mech: models) rather than replaying one path through them; fixed replays the workload's seed.
RANDSEED_MODES = ("per-run", "fixed")
MAX_VALUES = 100                # values of one factor, workloads of one sweep


@dataclass(frozen=True)
class WorkloadSpec:
    name: str                 # label in results, unique within the sweep
    template: str             # a registered workload's name (measure/workloads/)
    overrides: dict = field(default_factory=dict)
    until_steady: UntilSteady | None = None     # runs extended until steady (SNIA-style), or plain runs

    kind = property(lambda self: workloads.get(self.template), doc="The registered Workload it runs.")
    reads_only = property(lambda self: self.kind.reads_only, doc="Never writes its target.")


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
    randseed: str = "per-run"       # per-run: each run's own fio randseed (blocks.run_seed); fixed: one sequence
    faults: dict | None = None      # spec.faults: a disk pulled or slowed mid-run (lab only)
    warmup: dict | None = None      # spec.warmup: an L2ARC warm-up before a cached target's runs
    hosts: tuple = ()               # spec.fleet: the boxes of a hosts: list (hosts.fleet.HostEntry)
    lab_count: int = 1              # labs on the controller (lab.count)
    host_factor: bool = False       # the hosts may differ: host is a declared factor

    @property
    def host_count(self) -> int:
        """How many hosts the sweep runs on (1: exactly as before fleets)."""
        return len(self.hosts) or (self.lab_count if self.host == "lab" else 1)

    @property
    def clients(self) -> int:
        """Client labs the sweep boots beside its lab: the largest client count (0: no clients, the load on
        the storage host as before)."""
        return max(client_levels(self.factors, self.target), default=0)

    @property
    def available_disks(self) -> tuple[int, int]:
        """(data disks, extra disks for log/cache/special) the host offers."""
        if self.lab is not None:
            return self.lab["disks"], self.lab["extra_disks"]
        return len(self.devices), len(self.extra_devices)

    @property
    def disk_bytes(self) -> int | None:
        return self.lab["disk_bytes"] if self.lab is not None else None


def layout_value(v, p: str) -> dict:
    """One value of factors.layout (a family name, or a mapping), checked and normalised."""
    if isinstance(v, str):
        v = {"family": v}
    mapping(v, p, ("family", "width", "vdevs", "data", "spares"), ("family",))
    if v["family"] == RAW:
        v = raw_layout(v, p)            # the family alone: what follows adds nothing to it
    elif not isinstance(v["family"], str) or v["family"] not in families.names():
        fail(p, f"unknown layout family {v['family']!r}; expected one of {', '.join(families.names())}, raw")
    for k in ("data", "spares"):        # dRAID's own keys: data disks per group, distributed spares
        if k in v and k not in families.get(v["family"]).spec_keys:
            fail(f"{p}.{k}", f"applies only to dRAID (draid1/2/3), not {v['family']}")
    return {"family": v["family"], **{k: integer(v[k], f"{p}.{k}", 1, 1024) for k in ("width", "vdevs") if k in v},
            **({"data": integer(v["data"], f"{p}.data", 1, 255)} if "data" in v else {}),
            **({"spares": integer(v["spares"], f"{p}.spares", 0, 100)} if "spares" in v else {})}


def _factor(key: str, values, surface: str) -> list:
    path = f"factors.{key}"
    refused = BY_NAME[key].refuses(surface)       # spec.factors: which sweeps take it
    if refused:
        fail(path, refused)
    if not isinstance(values, list) or not values:
        fail(path, f"expected a non-empty list of values, got {values!r}")
    if len(values) > MAX_VALUES:
        fail(path, f"at most {MAX_VALUES} values, got {len(values)}")
    out = []
    for i, v in enumerate(values):
        p = f"{path}[{i}]"
        if key == "layout":
            v = layout_value(v, p)
        else:
            v = BY_NAME[key].check(v, p)
        if v in out:        # the same level after parsing: 0.5 and '50%', 8k and 8192
            j = out.index(v)
            same = "" if values[j] == values[i] else f": the same level as {path}[{j}] ({values[j]!r})"
            fail(p, f"duplicate value {values[i]!r}{same}")
        out.append(v)
    return out


def _factors(d, surface: str) -> dict:
    allowed = NAMES
    d = check_raw_factors(d, allowed) if surface == RAW else d
    mapping(d, "factors", allowed, ("layout",))
    out = {k: _factor(k, v, surface) for k, v in d.items()}
    check_layouts(out["layout"], surface)
    if "disks" in out and ("width" in out or "vdevs" in out):
        fail("factors.disks", "give either disks (width derived) or explicit width/vdevs, not both")
    for i, lay in enumerate(out["layout"]):
        if "width" in lay and ("disks" in out or "width" in out):
            fail(f"factors.layout[{i}]", "a layout with its own width cannot be combined with "
                  "factors.disks or factors.width")
    return out


def _until_steady(v, p: str, template: str, faults) -> UntilSteady | None:
    """A workload's `until_steady: {max_windows: M}` (methods §12.1), or None where it declares none."""
    if v is None:
        return None
    mapping(v, p, ("max_windows",), ("max_windows",))
    n = v["max_windows"]
    if isinstance(n, bool) or not isinstance(n, int) or not MIN_WINDOWS <= n <= MAX_WINDOWS:
        fail(f"{p}.max_windows", f"expected an integer {MIN_WINDOWS}..{MAX_WINDOWS} (1 window is a plain run; "
                                 f"SNIA PTS allows {MAX_WINDOWS} rounds to reach steady state), got {n!r}")
    if workloads.get(template).reads_only:
        # Steady state is a write's question: writes change what the disks hold (allocation,
        # fragmentation, the SSD's free blocks) and the rate follows. Reads change only the caches,
        # so more read windows measure a warmer cache: another question (warmup:, cache: warm).
        fail(p, f"{template} only reads: its windows do not precondition the target, they only warm the "
                "caches; declare until_steady on a workload that writes")
    if faults:
        fail(p, "a fault study times its fault into a run's first window; further windows would measure "
                "another pool (degraded, resilvering): leave until_steady out of a fault study")
    return UntilSteady(n)


def _workloads(items, target: dict, factors: dict, faults=None) -> tuple:
    if not isinstance(items, list) or not items:
        fail("workloads", f"expected a non-empty list of workloads, got {items!r}")
    if len(items) > MAX_VALUES:
        fail("workloads", f"at most {MAX_VALUES} workloads, got {len(items)}")
    out, names = [], set()
    for i, w in enumerate(items):
        p = f"workloads[{i}]"
        if isinstance(w, str):
            w = {"name": w}
        mapping(w, p, ("name", "template", "overrides", "until_steady"), ("name",))
        name, template = w["name"], w.get("template", w["name"])
        plain_name(name, f"{p}.name")
        if workloads.find(template) is None:
            fail(f"{p}.template" if "template" in w else f"{p}.name",
                  f"unknown workload template {template!r}; choose one of {', '.join(workloads.names())}")
        if name in names:
            fail(f"{p}.name", f"duplicate workload name {name!r}")
        names.add(name)
        known = sorted(workloads.get(template).defaults)
        overrides = fio_overrides(mapping(w.get("overrides", {}), f"{p}.overrides", known), f"{p}.overrides")
        for k in overrides:
            if k in ("filename", "size"):
                fail(f"{p}.overrides.{k}", "is set by the sweep from the target, not per workload")
            if k in factors:
                fail(f"{p}.overrides.{k}", f"{k} is also a factor; give it in one place")
        try:
            fio.build_job(template, filename="/dev/zvol/check/target", size=target["size_bytes"], **overrides)
        except ConfigError as e:
            fail(f"{p}.overrides", str(e))
        out.append(WorkloadSpec(name, template, dict(overrides),
                                _until_steady(w.get("until_steady"), f"{p}.until_steady", template, faults)))
    return tuple(out)


def _target(d, surface: str, factors: dict) -> dict:
    if surface == RAW:
        return raw_target(d)
    size_key = "volsize" if surface in ZVOL_SURFACES else "size"
    allowed = (size_key, BLOCKSIZE[surface]) + tuple(p for p in PROPERTIES if surface in BY_NAME[p].surfaces)
    own = {"fs-on-zvol": ("fs",), "dataset": ("access", "clients"), "zvol": ("access", "clients")}.get(surface, ())
    mapping(d, "target", allowed + own, (size_key,))
    out = {"kind": "zvol" if surface in ZVOL_SURFACES else surface,
           "size_bytes": size(d[size_key], f"target.{size_key}")}
    if surface == "fs-on-zvol":
        fs = d.get("fs", "ext4")
        if fs != "ext4":
            fail("target.fs", f"expected ext4 (xfs needs xfsprogs, which the lab image does not carry), got {fs!r}")
        out["fs"] = fs
    for k in ("access", "clients"):
        if k in d:
            out[k] = BY_NAME[k].check(d[k], f"target.{k}")
    for k, v in d.items():
        if k in ("fs", "access", "clients"):
            continue
        if k in factors:
            fail(f"target.{k}", "is also a factor; a setting is either fixed (target) or varied (factors)")
        if k == BLOCKSIZE[surface]:
            out[f"{k}_bytes"] = blocksize(v, f"target.{k}", 512, MAX_BLOCKSIZE[k])
        elif k != size_key:
            out[k] = BY_NAME[k].check(v, f"target.{k}")
    return out


def _prefill(d) -> dict:
    p = {"fill": "whole", "policy": "once-per-target", **mapping(d or {}, "prefill", ("fill", "policy"))}
    fill_value(p["fill"], "prefill.fill")
    if p["policy"] not in ("once-per-target", "none"):
        fail("prefill.policy", f"expected 'once-per-target' or 'none', got {p['policy']!r}")
    return p


def parse_spec(text: str, name: str = "sweep") -> SweepSpec:
    """Validate a sweep spec given as YAML text; ``name`` is used when the spec has none."""
    d = load_yaml(text)
    where = () if isinstance(d, dict) and "hosts" in d else ("host",)     # a fleet names its hosts in hosts:
    mapping(d, "spec", TOP_KEYS, ("question", "surface", *where, "factors", "target", "workloads"))
    name = plain_name(d.get("name", name), "name")
    q = d["question"]
    if not isinstance(q, str) or len(re.findall(r"\w+", q)) < 3:
        fail("question", f"state the question in words (at least three), got {q!r}")
    surface = d["surface"]
    if not isinstance(surface, str) or surface not in SURFACES:
        fail("surface", f"expected 'zvol', 'dataset', 'fs-on-zvol' or 'raw', got {surface!r}")
    host, lab, devices, extra, sigs, hosts, lab_count, host_factor = parse_hosts(d)
    factors = _factors(d["factors"], surface)
    repetitions = parse_repetitions(d.get("repetitions"))
    check_grid(factors, d["workloads"], repetitions)
    target = _target(d["target"], surface, factors)
    order = d.get("order", "randomised")
    if not isinstance(order, str) or order not in ("randomised", "randomized", "as-written"):
        fail("order", f"expected 'randomised' or 'as-written', got {order!r}")
    reads_first = d.get("reads_first", True)
    randseed = d.get("randseed", "per-run")
    if randseed not in RANDSEED_MODES:
        fail("randseed", f"expected 'per-run' (each run its own random sequence) or 'fixed' (every run "
                         f"replays one), got {randseed!r}")
    if not isinstance(reads_first, bool):
        fail("reads_first", f"expected true or false, got {reads_first!r}")
    if "zfs" in factors and host != "lab":
        fail("factors.zfs", "the OpenZFS release is a factor only in the lab (one lab per release); "
                            "a real host runs the release it has")
    if "zfs" in factors and isinstance(d.get("lab"), dict) and "zfs" in d["lab"]:
        fail("factors.zfs", "give the OpenZFS release in lab.zfs or as factors.zfs, not both")
    check_pool_factors(factors, host, d.get("faults"))
    if d.get("faults") and (surface == "fs-on-zvol" or "fs" in factors or "access" in factors
                            or target.get("access") == "nfs"):
        fail("faults", "faults run on zvols and datasets, not under a filesystem made on a zvol")
    prefill = _prefill(d.get("prefill"))
    check_raw(factors, surface, target, prefill, d.get("faults"), lab)
    if "fill" in factors and prefill["policy"] == "none":
        fail("factors.fill", "a fill factor needs prefill.policy once-per-target "
                             "(its 'none' value is the no-prefill level)")
    workloads = _workloads(d["workloads"], target, factors, d.get("faults"))
    check_release_paths(surface, factors, target, workloads)
    warmup = parse_warmup(d.get("warmup"), factors=factors, target=target, surface=surface, prefill=prefill,
                          workloads=workloads, reads_first=reads_first)
    spec = SweepSpec(name=name, question=q.strip(), surface=surface, host=host, lab=lab, devices=devices,
                     extra_devices=extra, allow_signatures=sigs, factors=factors, target=target,
                     workloads=workloads, warmup=warmup,
                     repetitions=repetitions, prefill=prefill,
                     order=order.replace("randomized", "randomised"), reads_first=reads_first,
                     seed=integer(d.get("seed", 0), "seed", 0, 2 ** 32 - 1), text=text, randseed=randseed,
                     faults=parse_faults(d.get("faults"), host), hosts=hosts, lab_count=lab_count,
                     host_factor=host_factor)
    check_fleet_spec(spec)
    check_clients(d, surface, factors, target, prefill, workloads)
    return spec


def load_spec(path) -> SweepSpec:
    """Read and validate a spec file; its stem names the sweep unless the spec says ``name``."""
    path = Path(path)
    return parse_spec(read_spec_text(path), name=path.stem)


def check_grid(factors: dict, workloads, repetitions: dict) -> None:
    """Refuse a study over MAX_CELLS cells or MAX_RUNS planned runs, from the factor lengths
    alone (an upper bound: skipped combinations still count), before any expansion."""
    n_work = len(workloads) if isinstance(workloads, (list, tuple)) else 1
    cells = math.prod(len(v) for v in factors.values()) * n_work * repetitions["pool_replicates"]
    runs = cells * repetitions["pilot"]
    if cells > MAX_CELLS or runs > MAX_RUNS:
        shape = " x ".join(f"{len(v)} {k}" for k, v in factors.items())
        fail("factors", f"the grid has up to {cells:,} cells ({shape} x {n_work} workload(s) x "
                        f"{repetitions['pool_replicates']} pool replicate(s)) and {runs:,} planned runs; "
                        f"the limit is {MAX_CELLS:,} cells and {MAX_RUNS:,} runs: split the study")
