"""`faults:` in a sweep spec: a lab data disk pulled, or slowed, in the middle of a run.

    faults: {kind: remove, disk: 2, after_s: 3, resilver: true}

During the first run of every pool, `after_s` seconds after fio starts, the pool's
`disk`-th data disk is unplugged through QMP (`remove`) or slowed to a crawl (`slow`,
for the rest of that run). The run is then flagged by the device_lost / slow_device
truth checks; later runs on a degraded pool are flagged too. Before the pool is torn
down a removed disk is plugged back in and, with `resilver`, an unused lab data disk replaces it
(the lab needs one data disk more than the widest layout) and its full resilver is timed (an event per
pool: seconds, bytes, layout, fill). Lab only: a real host's disks are
never touched on purpose. Checked at load, and against every pool at plan time: a
layout that cannot lose a disk (a stripe would be suspended) is refused.
"""

from __future__ import annotations

from zbench_lib.sweeps.spec_values import fail, finite, integer, mapping

KINDS = ("remove", "slow")


def parse_faults(d, host: str) -> dict | None:
    if d is None:
        return None
    mapping(d, "faults", ("kind", "disk", "after_s", "resilver"), ("kind",))
    if host != "lab":
        fail("faults", "faults are injected only in the lab (host: lab); a real host's disks are never "
                       "touched on purpose")
    kind = d["kind"]
    if kind not in KINDS:
        fail("faults.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    after = finite(d.get("after_s", 2), "faults.after_s")
    if isinstance(after, bool) or not isinstance(after, (int, float)) or not 0 <= after <= 3600:
        fail("faults.after_s", f"expected seconds between 0 and 3600, got {after!r}")
    resilver = d.get("resilver", kind == "remove")
    if not isinstance(resilver, bool) or (resilver and kind != "remove"):
        fail("faults.resilver", f"true or false, and true only with kind: remove; got {resilver!r}")
    return {"kind": kind, "disk": integer(d.get("disk", 1), "faults.disk", 1, 1024),
            "after_s": float(after), "resilver": resilver}


def check_faults(faults: dict | None, pools: list[dict], runtime_s: float, data_disks: int = 0) -> None:
    """Every pool can take the fault: the disk exists, a removal leaves the data readable,
    and the fault falls inside the run."""
    if not faults:
        return
    from zbench_lib.zfs.layouts import Layout
    for p in pools:
        layout = Layout.from_dict(p["layout"])
        if faults["disk"] > layout.total_disks:
            fail("faults.disk", f"pool {p['label']} has {layout.total_disks} data disks, "
                                f"not {faults['disk']}")
        if faults.get("resilver") and layout.total_disks >= data_disks:
            fail("faults.resilver", f"pool {p['label']} leaves no lab data disk to replace the lost one "
                                    f"with: give the lab one more (lab: disks: {layout.total_disks + 1})")
        if faults["kind"] == "remove" and layout.redundancy < 1:
            fail("faults.kind", f"pool {p['label']} cannot lose a disk: ZFS would suspend it and the "
                                "lab would hang; remove needs mirror, raidz or dRAID layouts")
    if faults["after_s"] >= runtime_s:
        fail("faults.after_s", f"{faults['after_s']:g} s is not inside the shortest run "
                               f"({runtime_s:g} s of ramp and measurement)")
