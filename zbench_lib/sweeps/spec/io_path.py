"""The I/O path a sweep's workloads take (issue 44): fio's engine, O_DIRECT and O_SYNC, checked at load.

Which path a write takes is part of the question, not a detail of the tool. On a dataset, libaio with
``direct=1`` is an O_DIRECT file write: OpenZFS 2.3 honours it (Direct I/O: each data block goes to
the pool, a sync write leaves only a pointer in the log, and reads bypass the ARC), while 2.1 accepts
the flag and buffers the I/O as any other. A dataset sweep whose ``zfs`` factor spans both releases
with ``direct=1`` would compare two I/O paths under one label, so it is refused here. A zvol (a block
device) and a dataset behind NFS (the NFS server writes the file buffered) take the same path on both.
"""

from __future__ import annotations

from zbench_lib.sweeps.spec.values import fail

DIRECT_IO_RELEASE = (2, 3)     # the first OpenZFS release with Direct I/O on files (O_DIRECT honoured)


def release(v: str) -> tuple[int, int]:
    """'2.3' as (2, 3), to compare releases as numbers."""
    major, minor = str(v).split(".")[:2]
    return int(major), int(minor)


def _direct_levels(workload, factors: dict) -> set[int]:
    """The direct values a workload runs with: the factor's levels, else its override or default."""
    if "direct" in factors:
        return set(factors["direct"])
    return {int(workload.overrides.get("direct", workload.kind.defaults["direct"]))}


def _local_dataset(surface: str, factors: dict, target: dict) -> bool:
    """fio opens the dataset's file itself (no NFS server in between)."""
    access = factors.get("access") or [target.get("access", "local")]
    return surface == "dataset" and "local" in access


def check_release_paths(surface: str, factors: dict, target: dict, workloads) -> None:
    """Refuse a local dataset sweep over OpenZFS releases on both sides of Direct I/O with direct=1."""
    releases = [release(r) for r in factors.get("zfs", [])]
    if not _local_dataset(surface, factors, target) or not releases:
        return
    if not (min(releases) < DIRECT_IO_RELEASE <= max(releases)):
        return
    direct = [w.name for w in workloads if 1 in _direct_levels(w, factors)]
    if direct:
        fail("factors.zfs", f"a dataset sweep across OpenZFS {', '.join(map(str, factors['zfs']))} with direct=1 "
                            f"({', '.join(direct)}) compares two I/O paths: 2.3 honours O_DIRECT on a file "
                            "(Direct I/O, reads past the ARC), 2.1 buffers it; set direct: 0 in the workloads' "
                            "overrides (both buffered) or compare on a zvol")


# What each I/O path models, stated by the dry run and, from the rows, on every page (analysis/claims/caveats).
def path_text(ioengine: str, direct: int, sync) -> str:
    """'psync, buffered, O_SYNC' for a job's engine, direct and sync (fio's 0/1/'sync'/'dsync')."""
    o_sync = {0: "", "0": "", "none": "", 1: "O_SYNC", "1": "O_SYNC", "sync": "O_SYNC", "dsync": "O_DSYNC"}
    return ", ".join(p for p in (ioengine, "O_DIRECT" if int(direct) else "buffered", o_sync.get(sync, str(sync))) if p)


def _value(workload, factors: dict, key: str):
    if key in factors:
        return "|".join(str(v) for v in factors[key])
    return workload.overrides.get(key, workload.kind.defaults[key])


def declared(workload, factors: dict) -> bool:
    """The workload states its engine and O_DIRECT (its overrides, or factors), not the registry's defaults."""
    return all(k in factors or k in workload.overrides for k in ("ioengine", "direct"))


def is_sync_study(spec) -> bool:
    """A study of durable writes: a sync factor or setting, or a workload that writes O_SYNC or fsyncs."""
    def syncs(w):
        return any(w.overrides.get(k, w.kind.defaults[k]) not in (0, "0", "none", False) for k in ("sync", "fsync"))
    return "sync" in spec.factors or "sync" in spec.target or any(syncs(w) for w in spec.workloads)


def describe(spec) -> list[str]:
    """The dry run's line: each workload's I/O path, and whether the spec chose it or took the default."""
    parts = []
    for w in spec.workloads:
        ioengine, direct = _value(w, spec.factors, "ioengine"), _value(w, spec.factors, "direct")
        sync = w.overrides.get("sync", w.kind.defaults["sync"])
        fsync = w.overrides.get("fsync", w.kind.defaults["fsync"])
        text = f"ioengine {ioengine}, direct {direct}" if "|" in f"{ioengine}{direct}" else \
            path_text(str(ioengine), int(direct), sync)
        parts.append(f"{w.name} {text}{', fsync every write' if fsync else ''}"
                     f"{'' if declared(w, spec.factors) else ' (default)'}")
    return ["I/O path: " + "; ".join(parts)]
