"""A run's offered load on a host: the rate its job is given, and the saturation probe it may need.

A cell at saturation runs closed loop as ever (`offered_load` gives None). A cell with an absolute
rate offers it. A cell whose load is a fraction of saturation offers that fraction of its probe's IOPS:
the probe (`planning/probes.py`: one per cell but its load) is the cell's own job, closed loop (a
read's window short, a write's its own: measure/load.py `probe_overrides`), on the same target,
measured before the first run that needs it into that run's attempt directory (``probe/``: raw,
kept as it came) and recorded as a ``load probed`` event with its IOPS. A
later run, or a resumed sweep, finds the event and reuses it: a probe is never measured twice, and it
is reported, never a result row (its files are outside the attempt's ``fio/``, which rows read). On a
fleet the worker's store is a staging one: the controller commits the event under the store's attempt
(``staging.Committer``), and a pool dispatched to another host is given its cells' probes (``fleet``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from zbench_lib.core.events import Event
from zbench_lib.measure import workloads
from zbench_lib.measure.fio import build_job, run_fio
from zbench_lib.measure.fio_parse import parse_fio_json
from zbench_lib.measure.load import PROBE_DIR, Load, open_loop_iodepth, probe_overrides
from zbench_lib.sweeps.planning.probes import probe_id
from zbench_lib.sweeps.planning.records import Cell
from zbench_lib.sweeps.running.surface import Site


@dataclass(frozen=True)
class OpenLoop:
    """What an open-loop run offered, as meta.json's ``open_loop`` records it (rows read it back)."""
    load: str                       # the load factor's canonical level
    offered_iops: float             # all jobs and directions together
    iodepth: int                    # the job's open-loop depth (measure/load.py)
    probe_iops: float | None = None     # the cell's saturation IOPS, where the load is a fraction of it
    probe_id: str | None = None

    def to_record(self) -> dict:
        return asdict(self)


def recorded_probe(events: list[dict], pid: str) -> float | None:
    """The IOPS of probe `pid` if an event records it (this session's or an earlier one's), else None."""
    for e in events:
        if e.get("event") == Event.LOAD_PROBED and e.get("probe_id") == pid:
            return float(e["iops"])
    return None


def offered_load(site: Site, cell: Cell, run, attempt: Path, fio: dict) -> OpenLoop | None:
    """The open loop of a run of `cell` (None at saturation), its probe measured first if it has none.
    `fio`: the run's job parameters, its filename included (the probe runs the same job)."""
    load = Load.of(cell.factors.get("load"))
    if load.saturation:
        return None
    depth = open_loop_iodepth(fio.get("iodepth", workloads.get(cell.template).defaults["iodepth"]))
    if not load.needs_probe:
        return OpenLoop(cell.factors["load"], load.offered(None), depth)
    pid = probe_id(cell)
    iops = recorded_probe(site.store.events(), pid)
    if iops is None:
        iops = _probe(site, cell, run, attempt, fio, pid)
    return OpenLoop(cell.factors["load"], load.offered(iops), depth, iops, pid)


def _probe(site: Site, cell: Cell, run, attempt: Path, fio: dict, pid: str) -> float:
    """Measure probe `pid` (the cell's job closed loop) into `attempt`/probe/ and record it."""
    kind = workloads.get(cell.template)
    params = probe_overrides(fio, kind)
    job = build_job(cell.template, **params)
    remote = f"{site.work_dir}/{run.run_id}-{attempt.name}-{PROBE_DIR}"
    done = run_fio(site.host, job, remote, attempt / PROBE_DIR)
    iops = sum(r["iops"] for r in parse_fio_json(done.data))        # every direction: what the load splits
    ramp = params.get("ramp_time_s", kind.defaults["ramp_time_s"])
    site.store.record(Event.LOAD_PROBED, probe_id=pid, run_id=run.run_id, attempt=int(attempt.name.rsplit("-", 1)[1]),
                      path=str(Path("raw") / run.run_id / attempt.name / PROBE_DIR), iops=iops,
                      runtime_s=params["runtime_s"], ramp_time_s=ramp)
    return iops
