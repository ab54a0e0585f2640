"""How long a plan will take and what it writes: the dry run's estimate.

The figures below were measured, not guessed: `benchmarks/sweep_efficiency.py` prints a
sweep's breakdown (boot, pool create, prefill, each run's phases) and
`benchmarks/prefill_speed.py` what the lab's prefill reaches. Where a lab cannot write as
fast as its disks' models allow (the emulated CPU computes checksums and parity), the
prefill is estimated at the lab's ceiling, not the disks' sum.
"""

from __future__ import annotations

from zbench_lib.hosts.disk_models import parse_model
from zbench_lib.zfs import families
from zbench_lib.sweeps.planning.probes import probe_bytes, probe_seconds
from zbench_lib.sweeps.planning.records import Cell, PlanPool, Target

MiB = 1024 ** 2
# Measured by benchmarks/sweep_efficiency.py on 2026-11-24 (TCG lab, cached image; the
# iodepth-curve study and the efficiency spec): boot 20 s and the sweep's kernel, leftovers
# check and environment record 11-27 s; 13 s per pool; per run, beyond ramp + runtime, fio's
# start 0.9 s and 1.8 s of set-up, fetch and judging (15 s was assumed before: estimates ran long).
BOOT_S = 45.0            # lab boot to SSH, the sweep's kernel and its environment record
POOL_CREATE_S = 13.0     # zpool create + checks + read-back + destroy
TARGET_CREATE_S = 5.0    # zfs create + property read-back
RUN_OVERHEAD_S = 3.0     # fio start, sampler, one fetch of outputs and counters, judging
ASSUMED_BW, ASSUMED_IOPS = 200 * MiB, 10_000   # per disk, when no model caps it
# What a TCG lab's prefill reaches at most, whatever the disks' models allow: the guest's ZFS
# write path (checksums, and parity on raidz/dRAID) on the emulated CPU binds. Measured by
# benchmarks/prefill_speed.py (2026-11-24, 1 GiB into a 16k zvol on hdd-model disks): a 4-disk
# stripe 72-78 MiB/s, a raidz2 of 6 21 MiB/s, neither changed by fio's buffer refills, two
# writers or zero buffers. A KVM lab writes faster: its estimate errs long.
LAB_WRITE_CEILING = {"no parity": 72 * MiB, "parity": 21 * MiB}


def disk_rates(spec) -> tuple[float, float]:
    """(write bytes/s, write IOPS) of one disk: the lab's model, else assumed."""
    m = parse_model(spec.lab["model"] if spec.lab else "unthrottled")
    return float(m.bw_write or m.bw or ASSUMED_BW), float(m.write_iops_limit() or ASSUMED_IOPS)


def prefill_seconds(spec, nbytes: int, data_disks: float, family: str = "stripe") -> float:
    """Seconds to write `nbytes` at the data disks' bandwidth, or the lab's ceiling if lower."""
    bw = data_disks * disk_rates(spec)[0]
    if spec.lab is not None and family != "raw":        # bare disks: no ZFS write path
        parity = families.get(family).parity > 0
        bw = min(bw, LAB_WRITE_CEILING["parity" if parity else "no parity"])
    return round(nbytes / bw, 1)


def estimates(spec, cells: list[Cell], pools: list[PlanPool], targets: list[Target], warm: dict) -> dict:
    """Wall time (planned runs, and every run the rule may add), windows, bytes written."""
    lo, hi = spec.repetitions["pilot"], spec.repetitions["max"]
    probes = probe_seconds(cells)               # the saturation probes a load fraction needs
    fixed = (BOOT_S if spec.host == "lab" else 0.0) + POOL_CREATE_S * len(pools) + \
        sum(TARGET_CREATE_S + t.prefill_s for t in targets) + warm.get("l2arc_warmup_max_s", 0.0) + \
        sum(probes.values())
    # what fio writes once beside the runs: the prefill, and a write cell's probe (as long as a run)
    prefill = sum(t.prefill_bytes for t in targets)
    once = prefill + sum(probe_bytes(cells, RUN_OVERHEAD_S).values())
    per_run = sum(c.run_s for c in cells)
    written = sum(c.write_bytes_per_run for c in cells)
    # a run extended until steady may measure up to max_windows windows: only the maxima count them
    per_run_max = sum(c.run_s * _windows(c) for c in cells)
    written_max = sum(c.write_bytes_per_run * _windows(c) for c in cells)
    return {"runs": lo * len(cells), "runs_max": hi * len(cells),
            "attempts_max": spec.repetitions["max_attempts"] * len(cells),
            "pool_replicates": spec.repetitions["pool_replicates"], "pools_created": len(pools),
            "wall_s": round(fixed + lo * per_run, 1), "wall_max_s": round(fixed + hi * per_run_max, 1),
            # every run excluded and replaced up to max_attempts (a flagged write doubles its cell)
            "wall_attempts_max_s": round(fixed + max(hi, spec.repetitions["max_attempts"]) * per_run_max, 1),
            "measure_s": lo * sum(c.runtime_s for c in cells), "prefill_bytes": prefill,
            "bytes_written": once + lo * written, "bytes_written_max": once + hi * written_max, **warm,
            **({"probes_s": round(sum(probes.values()), 1), "probes": len(probes)} if probes else {}),
            "assumptions": {"boot_s": BOOT_S, "pool_create_s": POOL_CREATE_S, "target_create_s": TARGET_CREATE_S,
                            "run_overhead_s": RUN_OVERHEAD_S, "disk_write_bw_iops": disk_rates(spec),
                            **({"lab_write_ceiling": LAB_WRITE_CEILING} if spec.lab else {})}}


def _windows(cell: Cell) -> int:
    """The most windows a run of `cell` measures: its until_steady maximum, else one."""
    return int((cell.until_steady or {}).get("max_windows", 1))
