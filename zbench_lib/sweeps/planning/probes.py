"""The saturation probes a plan needs: one per cell whose load is a fraction of its saturation.

A load fraction is relative to the cell's own saturation IOPS, measured by a closed-loop probe of the
cell's job on its target (measure/load.py: a read's window short, a write's the cell's own). A cell
here is everything but its load: the pool replicate, the target, the workload and its fio
parameters, so the loads 0.25 ... 0.9 of one configuration share one probe (`probe_id`), and each
pool replicate probes its own pool. The executor runs a probe before the first run that needs it
and reuses a recorded one on resume (`sweeps/running/open_loop.py`); the plan counts them in its
estimate and says so (`describe`).
"""

from __future__ import annotations

import hashlib
import json

from zbench_lib.measure.load import Load
from zbench_lib.sweeps.planning.records import Cell


def probe_id(cell: Cell) -> str:
    """The probe a cell's load is a fraction of: its target and its factors but the load, hashed."""
    rest = {k: v for k, v in cell.factors.items() if k != "load"}
    digest = hashlib.sha1(json.dumps([cell.target_id, rest, cell.fio], sort_keys=True,
                                     default=str).encode()).hexdigest()[:8]
    return f"probe-{cell.target_id}-{digest}"


def needs_probe(cell: Cell) -> bool:
    return Load.of(cell.factors.get("load")).needs_probe


def probe_seconds(cells: list[Cell]) -> dict[str, float]:
    """Each probe the cells need, with its wall time (the cell's `probe_s`, set by the plan)."""
    return {probe_id(c): c.probe_s for c in cells if needs_probe(c)}


def probe_bytes(cells: list[Cell], overhead_s: float) -> dict[str, int]:
    """Each probe the cells need, with the bytes it writes: closed loop, at the saturation rate of which
    the cell's load is a fraction, over the probe's fio time (its `probe_s` less `overhead_s`). A cell's
    run writes `write_bytes_per_run` at that fraction over its own fio time (`run_s` less the same
    overhead), so the probe writes that over the fraction, scaled to its time (a write probe's time is
    the run's: methods §21). A read probe writes nothing, as its runs do."""
    out = {}
    for c in cells:
        if needs_probe(c):
            saturation = c.write_bytes_per_run / Load.of(c.factors["load"]).fraction
            out[probe_id(c)] = int(saturation * (c.probe_s - overhead_s) / (c.run_s - overhead_s))
    return out


def describe(cells: list[Cell]) -> list[str]:
    """The dry run's line on the probes, if any."""
    probes = probe_seconds(cells)
    if not probes:
        return []
    return [f"plus {len(probes)} saturation probe(s), one closed-loop run per cell whose load is a fraction of "
            f"saturation (about {sum(probes.values()):.0f} s, in the estimate): reported, never a result row; "
            "a resumed sweep reuses those recorded"]
