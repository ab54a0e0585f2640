"""`faults:` in a sweep spec: a lab data disk pulled, or slowed, in the middle of a run.

    faults: {kind: remove, disk: 2, after_s: 3, resilver: true,
             resilver_load: {name: randread, overrides: {bs: 16k, iodepth: 4}}}

During the first run of every pool, `after_s` seconds after fio starts, the pool's
`disk`-th data disk is unplugged through QMP (`remove`) or slowed to a crawl (`slow`,
for the rest of that run). The device_lost / slow_device truth checks then describe the
run (a fault study: the rows carry fault_study, so a lost disk is the question, not an
accident that excludes the run); later runs on a degraded pool are described too. Before
the pool is torn down a removed disk is plugged back in and, with `resilver`, an unused lab data disk replaces it
(the lab needs one data disk more than the widest layout) and its full resilver is timed (an event per
pool: seconds, bytes, layout, fill). With `resilver_load` (a workload of the standard suite,
`none` by default) each pool is resilvered twice, once idle and once while that workload runs
on the pool's target, in an order drawn per pool from the seed: the pair answers "how much
longer under load, and what does the load get meanwhile" within one pool (sweeps/running/resilver_timing).
Lab only: a real host's disks are
never touched on purpose. Checked at load, and against every pool at plan time: a
layout that cannot lose a disk (a stripe would be suspended) is refused.
"""

from __future__ import annotations

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.node import DEVICE_CONTROL
from zbench_lib.measure import fio, workloads
from zbench_lib.sweeps.spec.host import require_capability
from zbench_lib.sweeps.spec.values import fail, finite, fio_overrides, integer, mapping

KINDS = ("remove", "slow")
# The resilver sets these on its load: it runs until the resilver ends, on the pool's target.
LOAD_SET_BY_RESILVER = ("filename", "size", "runtime_s", "ramp_time_s", "time_based", "log_prefix",
                        "steadystate", "ss_dur_s", "ss_ramp_s")
LOAD_MAX_S = 3600


def load_job(load: dict, filename: str, size: int | None = None) -> str:
    """The load's fio job: time-based for up to LOAD_MAX_S, stopped when the resilver ends."""
    return fio.build_job(load["name"], filename=filename, size=size, runtime_s=LOAD_MAX_S, ramp_time_s=0,
                         log_prefix="load", **load["overrides"])


def load_label(load: dict | None) -> str | None:
    if not load:
        return None
    p = {**workloads.get(load["name"]).defaults, **load["overrides"]}
    return f"{load['name']} {p['bs']} qd{p['iodepth']}x{p['numjobs']}"


def _parse_load(v) -> dict | None:
    path = "faults.resilver_load"
    if v is None or v == "none":
        return None
    if isinstance(v, str):
        v = {"name": v}
    mapping(v, path, ("name", "overrides"), ("name",))
    if workloads.find(v["name"]) is None:
        fail(f"{path}.name", f"unknown workload {v['name']!r}; choose one of {', '.join(workloads.names())}")
    known = sorted(workloads.get(v["name"]).defaults)
    overrides = fio_overrides(mapping(v.get("overrides", {}), f"{path}.overrides", known), f"{path}.overrides")
    for k in overrides:
        if k in LOAD_SET_BY_RESILVER:
            fail(f"{path}.overrides.{k}", "is set by the resilver (the load runs on the pool's target until "
                                          "the resilver ends)")
    load = {"name": v["name"], "overrides": dict(overrides)}
    try:
        load_job(load, "/dev/zvol/check/target", 1 << 30)
    except ConfigError as e:
        fail(f"{path}.overrides", str(e))
    return load


def parse_faults(d, host: str) -> dict | None:
    if d is None:
        return None
    mapping(d, "faults", ("kind", "disk", "after_s", "resilver", "resilver_load"), ("kind",))
    require_capability(host, DEVICE_CONTROL, "faults", "faults are injected only in the lab (host: lab); "
                                                       "a real host's disks are never touched on purpose")
    kind = d["kind"]
    if kind not in KINDS:
        fail("faults.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    after = finite(d.get("after_s", 2), "faults.after_s")
    if isinstance(after, bool) or not isinstance(after, (int, float)) or not 0 <= after <= 3600:
        fail("faults.after_s", f"expected seconds between 0 and 3600, got {after!r}")
    resilver = d.get("resilver", kind == "remove")
    if not isinstance(resilver, bool) or (resilver and kind != "remove"):
        fail("faults.resilver", f"true or false, and true only with kind: remove; got {resilver!r}")
    load = _parse_load(d.get("resilver_load"))
    if load and not resilver:
        fail("faults.resilver_load", "a load during the resilver needs resilver: true")
    return {"kind": kind, "disk": integer(d.get("disk", 1), "faults.disk", 1, 1024),
            "after_s": float(after), "resilver": resilver, "resilver_load": load}


def check_faults(faults: dict | None, pools: list, runtime_s: float, data_disks: int = 0) -> None:
    """Every pool can take the fault: the disk exists, a removal leaves the data readable,
    and the fault falls inside the run. `pools`: the plan's pool records (``planning.records.PlanPool``,
    a layer above this one: read by their fields' names, not imported)."""
    if not faults:
        return
    from zbench_lib.zfs.layouts import Layout
    for p in pools:
        layout = Layout.from_dict(p.layout)
        if faults["disk"] > layout.total_disks:
            fail("faults.disk", f"pool {p.label} has {layout.total_disks} data disks, "
                                f"not {faults['disk']}")
        if faults.get("resilver") and layout.total_disks >= data_disks:
            fail("faults.resilver", f"pool {p.label} leaves no lab data disk to replace the lost one "
                                    f"with: give the lab one more (lab: disks: {layout.total_disks + 1})")
        if faults["kind"] == "remove" and layout.redundancy < 1:
            fail("faults.kind", f"pool {p.label} cannot lose a disk: ZFS would suspend it and the "
                                "lab would hang; remove needs mirror, raidz or dRAID layouts")
    if faults["after_s"] >= runtime_s:
        fail("faults.after_s", f"{faults['after_s']:g} s is not inside the shortest run "
                               f"({runtime_s:g} s of ramp and measurement)")
