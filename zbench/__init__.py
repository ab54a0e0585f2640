"""zbench in a notebook: a what-if in five lines.

    import zbench as zb
    lab = zb.lab(disks=6, model="hdd")      # boots the lab once, or reuses a running one
    r = zb.measure("raidz2", disks=6, volblocksize="16k", workload="randwrite", bs="4k", lab=lab)
    display(r, r.model())                   # IOPS with its 95% CI, p99, truth checks; the raidz models
    r.plot()

`measure` writes the configuration as a one-cell sweep spec, validates it with the spec validator
(bad input gets the spec's one-line error), plans it (`estimate` shows the plan's estimate without
running anything) and runs it with the sweep executor on the lab: the same pools, prefill, truth
checks, repetitions and store as `zbench sweep`. The store lands under data/sweeps/ (so `zbench
catalog` lists it) unless `out` says otherwise. The Result it returns is `zbench.result.Result`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml

from zbench.errors import InvalidInput
from zbench.result import Result, load_result
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.core.sizes import parse_size

__all__ = ["Config", "InvalidInput", "LabHandle", "Result", "estimate", "import_fio", "lab", "load_result",
           "measure", "set_defaults"]

# What a what-if runs when not told otherwise: three pools, each created and prefilled on its own, one run
# on each (the unit of its interval is a pool, so it speaks for the layout, not for one pool: issue 45),
# a window by the workload's kind (runtime_s None: READ_WINDOW_S for reads, WRITE_WINDOW_S for writes),
# cold cache (reads reach the disks), incompressible data. `set_defaults` changes them for the session.
DEFAULTS = {"pools": 3, "repetitions": 1, "runtime_s": None, "ramp_s": 2, "volsize": "256M", "out": "data/sweeps"}
READ_WINDOW_S = 10
# A write's first seconds run ahead of what the pool sustains (dirty data, TXG bursts): a 10 s window
# read fresh writes up to 39% high (methods §12.1). 60 s is where the steady-state test starts to see a
# drift at the lab's rates (methods §12; the dry run states its power); runtime_s=150 gives it 80%.
WRITE_WINDOW_S = 60


@dataclass(frozen=True)
class Config:
    """One configuration to measure; every value is checked by the spec validator (`spec_text`)."""
    layout: str = "raidz2"
    disks: int = 6
    volblocksize: str | int = "16k"
    workload: str = "randwrite"
    bs: str | int | None = "4k"          # None: the workload's own block size
    iodepth: int | None = None          # None: the workload's own depth
    numjobs: int | None = None
    model: str = "hdd"                  # the data disks' model, set on the lab's disks for this pool
    pools: int = field(default_factory=lambda: DEFAULTS["pools"])               # pools created, one after another
    repetitions: int = field(default_factory=lambda: DEFAULTS["repetitions"])   # runs on each pool
    runtime_s: int | None = field(default_factory=lambda: DEFAULTS["runtime_s"])  # None: by the workload's kind
    ramp_s: int = field(default_factory=lambda: DEFAULTS["ramp_s"])
    volsize: str = field(default_factory=lambda: DEFAULTS["volsize"])

    def label(self) -> str:
        return (f"{self.layout} of {self.disks} at {str(self.volblocksize).upper()} volblocksize, "
                f"{self.workload}{' ' + str(self.bs) if self.bs else ''} on {self.model}")

    @property
    def window_s(self):
        """The measurement window: runtime_s, or by the workload's kind (READ_WINDOW_S, WRITE_WINDOW_S)."""
        if self.runtime_s is not None:
            return self.runtime_s
        from zbench_lib.measure import workloads
        kind = workloads.find(self.workload)
        return None if kind is None else READ_WINDOW_S if kind.reads_only else WRITE_WINDOW_S

    def spec(self, lab_disks: int | None = None, disk_size: str = "1G") -> dict:
        """The one-cell sweep spec this configuration is (host: the lab)."""
        overrides = {k: v for k, v in (("bs", self.bs), ("iodepth", self.iodepth), ("numjobs", self.numjobs),
                                       ("runtime_s", self.window_s), ("ramp_time_s", self.ramp_s))
                     if v is not None}
        return {"name": "whatif", "question": f"What does {self.label()} measure?", "surface": "zvol",
                "host": "lab", "lab": {"disks": lab_disks or self.disks, "disk_size": disk_size, "model": self.model,
                                       "extra_disks": 0},
                "factors": {"layout": [self.layout], "disks": [self.disks], "volblocksize": [self.volblocksize],
                            "model": [self.model]},
                "target": {"volsize": self.volsize, "compression": "off", "primarycache": "metadata"},
                "workloads": [{"name": self.workload, "overrides": overrides}],
                "repetitions": {"fixed": self.repetitions, "pool_replicates": self.pools,
                                "max_attempts": self.repetitions + 2, "metric": "iops"},
                "prefill": {"fill": "whole", "policy": "once-per-target"}, "order": "as-written", "seed": 32}

    def spec_text(self, lab_disks: int | None = None, disk_size: str = "1G") -> str:
        """The spec as YAML, validated (InvalidInput: the validator's one line)."""
        text = yaml.safe_dump(self.spec(lab_disks, disk_size), sort_keys=False)
        plan_of(text)
        return text


def plan_of(text: str):
    """The Plan of a spec's text; InvalidInput when the validator or the planner refuses it, or when the
    configuration cannot be built (raidz2 of 2 disks: the planner's reason for skipping it)."""
    from zbench_lib.sweeps.planning.plan import expand
    from zbench_lib.sweeps.spec.sweep_spec import parse_spec
    try:
        plan = expand(parse_spec(text))
    except ConfigError as e:
        raise InvalidInput(str(e)) from None
    if not plan.cells:
        raise InvalidInput(plan.skipped[0]["reason"] if plan.skipped else "nothing to measure")
    return plan


def _config(config, kw: dict) -> Config:
    if isinstance(config, Config):
        return replace(config, **kw) if kw else config
    unknown = set(kw) - set(Config.__dataclass_fields__)
    if unknown:
        raise InvalidInput(f"unknown argument(s) {', '.join(sorted(unknown))}; "
                           f"a configuration takes {', '.join(Config.__dataclass_fields__)}")
    return Config(**({"layout": config} if config is not None else {}), **kw)


def estimate(config=None, **kw) -> str:
    """The dry run: what `measure` would run, how long it takes and what it writes (nothing starts)."""
    cfg = _config(config, kw)
    from zbench_lib.analysis.report.plan_advice import design_lines
    plan = plan_of(cfg.spec_text())
    return "\n".join([plan.describe(), *design_lines(plan)])


def set_defaults(**kw) -> dict:
    """Change the session's defaults (pools, repetitions, runtime_s, ramp_s, volsize, out); the new defaults."""
    unknown = set(kw) - set(DEFAULTS)
    if unknown:
        raise InvalidInput(f"unknown default(s) {', '.join(sorted(unknown))}; defaults are {', '.join(DEFAULTS)}")
    DEFAULTS.update(kw)
    return dict(DEFAULTS)


@dataclass
class LabHandle:
    """A lab this kernel measures on: one it booted (shut down when the kernel ends) or a running one
    (`zbench lab up`, ZBENCH_LAB, a test session's), which it leaves running."""
    name: str
    disks: int
    disk_bytes: int
    model: str
    lab: object = None          # hosts.lab.Lab when this kernel booted it

    @property
    def owned(self) -> bool:
        return self.lab is not None

    @contextlib.contextmanager
    def node(self):
        """The lab as the sweep executor's Node."""
        from zbench_lib.hosts.lab_node import booted_node, running_node
        from zbench_lib.hosts.lab_state import connect_lab, read_state
        if self.lab is not None:
            yield booted_node(self.lab)
            return
        state = read_state(self.name)
        if state is None:
            raise InvalidInput(f"lab {self.name!r} is no longer running; call zb.lab() again")
        host = connect_lab(self.name)
        try:
            yield running_node(self.name, state, host)
        finally:
            host.close()

    def down(self) -> None:
        """Shut a lab this kernel booted down (a running lab it reused is left as it was)."""
        if self.lab is not None:
            lab, self.lab = self.lab, None
            lab.down()
            _LABS.pop(self.name, None)


_LABS: dict[str, LabHandle] = {}


def _running(name: str) -> LabHandle | None:
    from zbench_lib.hosts.lab_state import read_state
    state = read_state(name)
    if state is None:
        return None
    cfg = state["config"]
    model = cfg.get("model")
    return LabHandle(name, len(state["data_disks"]), int(cfg.get("disk_bytes", 0)),
                     model.get("name", str(model)) if isinstance(model, dict) else str(model))


def lab(disks: int = 6, model: str = "hdd", disk_size: str = "1G", *, name: str = "explore",
        zfs: str = "2.3") -> LabHandle:
    """A lab with at least `disks` data disks: ZBENCH_LAB's, one this kernel booted, a running lab
    called `name`, or a new one (booted now, shut down when the kernel ends). `model` is the data
    disks' model at boot; each measurement sets its own model on the disks of its pool."""
    from zbench_lib.hosts.lab import Lab, LabConfig
    env = os.environ.get("ZBENCH_LAB")
    for candidate in ([env] if env else []) + [name]:
        handle = _LABS.get(candidate) or _running(candidate)
        if handle is not None and handle.disks >= disks:
            return handle
        if candidate == env:
            raise InvalidInput(f"ZBENCH_LAB={env!r}: " + ("no lab of that name is running" if handle is None
                               else f"it has {handle.disks} data disks, {disks} are asked for"))
    try:
        cfg = LabConfig(disks=disks, disk_bytes=parse_size(disk_size, "disk_size"), model=model, name=name, zfs=zfs)
    except ConfigError as e:
        raise InvalidInput(str(e)) from None
    booted = Lab(cfg).up()
    handle = _LABS[name] = LabHandle(name, disks, cfg.disk_bytes, model, booted)
    atexit.register(handle.down)        # the kernel ends: the lab goes (Lab also dies with its parent)
    return handle


_lab = lab          # `measure`'s keyword `lab` shadows the function inside it


def measure(config=None, *, lab: LabHandle | None = None, out=None, progress: bool = True,
            log=print, **kw) -> Result:
    """Measure one configuration on the lab (`config` a Config, or its layout with the other fields as
    keywords); the Result of its sweep. Validated before any lab is booted."""
    cfg = _config(config, kw)
    text = cfg.spec_text()                       # refused here, before a lab boots
    handle = lab if lab is not None else _lab(disks=max(cfg.disks, 4), model=cfg.model)
    if handle.disks < cfg.disks:
        raise InvalidInput(f"lab {handle.name!r} has {handle.disks} data disks; {cfg.layout} of {cfg.disks} "
                           "needs more: zb.lab(disks=...) with more, or fewer disks")
    text = cfg.spec_text(lab_disks=handle.disks, disk_size=f"{handle.disk_bytes // 1024 ** 2}M")
    root = Path(out or DEFAULTS["out"])
    root = root if root.is_absolute() else REPO_ROOT / root
    sweep_id = f"whatif-{cfg.layout}-{cfg.disks}-{cfg.volblocksize}-{cfg.workload}-" \
               f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    from zbench_lib.sweeps.running.executor import run_sweep
    with tempfile.TemporaryDirectory(prefix="zbench-whatif-") as tmp, handle.node() as node:
        spec_path = Path(tmp) / "whatif.yaml"
        spec_path.write_text(text, encoding="utf-8")
        sweep_dir = run_sweep(spec_path, root, sweep_id=sweep_id, progress=progress, log=log, host=node)
    return load_result(sweep_dir, config=asdict(cfg))


def import_fio(src, out, *, dry_run: bool = False, **options):
    """Read fio JSON results measured elsewhere (`src`: a file or a directory) into a new sweep store at
    `out`, as `zbench import` does; the ImportResult (`.summary`, `.path`). `options` are the command's:
    path_pattern, map_path, environment (a dict: zfs, host, kernel...), question, surface, set_aside. A file
    that cannot be imported refuses the import in one line per file (InvalidInput) unless set_aside=True;
    `zb.load_result` and the analysis notebooks read the store like any sweep's."""
    from dataclasses import fields

    from zbench_lib.core.errors import ZbenchError
    from zbench_lib.sweeps.importing.import_store import ImportOptions, import_fio as run_import
    known = [f.name for f in fields(ImportOptions)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise InvalidInput(f"unknown option(s) {', '.join(unknown)}; import_fio takes {', '.join(known)}")
    try:
        return run_import(src, out, ImportOptions(**options), dry_run=dry_run)
    except ZbenchError as e:
        raise InvalidInput(str(e)) from None
