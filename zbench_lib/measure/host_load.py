"""The controller's load around a lab run: did the lab want CPU and not get it?

A lab's disks and CPU are emulated by processes on the controller (the machine running
zbench): its QEMU, and the nbdkit processes that serve its `mech:` disks. Whatever else runs
there slows the emulation only when these processes wanted a CPU and waited for one, and Linux
records exactly that per thread: `/proc/<pid>/task/<tid>/schedstat` holds the time a thread ran
and the time it waited on a run queue. Around each lab run the controller samples, every
second: /proc/stat (all CPUs, steal among them: a controller that is itself a VM loses CPU to
its hypervisor), the lab's processes' CPU ticks, the run-queue wait and run time summed over
their threads, and the other zbench QEMUs running. The snapshots are raw (controller.json in the
attempt directory); `summarize()` turns them into cores and shares.

host_contention is raised when the lab's threads waited on a run queue for more than
WAIT_SHARE_MAX of the window (their waits summed: two vCPU threads both waiting half the time is
1.0) while its guest had almost no time to spare (idle + iowait inside the guest under
GUEST_SPARE_PCT: the emulation's CPU paced the run), or the controller lost more than
STEAL_SHARE_MAX of its CPU time to steal: starvation on the run's critical path, whatever else
ran beside it. A niced burner or an idle sibling lab that took nothing the lab
wanted is described (other cores, other labs) and flags nothing. The threshold is calibrated
against the measurement itself (benchmarks/host_contention.py; docs/methods.md §7.1).

A record made before the run-queue figures existed (no `lab_wait_ns` in its snapshots) is
judged by the rule it was made under: more than OTHER_CORES_MAX cores busy beside the QEMU, or
more than OTHER_QEMUS_MAX other zbench QEMUs, so derived tables rebuilt from old raw files do
not change.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

from zbench_lib.measure.judging import not_judged, num
from zbench_lib.measure.procstats import parse_cpu_stat

QEMU_MARK = "zbench-lab-"      # QEMU's -name of every zbench lab (hosts/lab.py qemu_argv)
# Starvation on the emulation's critical path (benchmarks/host_contention.py, this 2-core machine, 2026-12-03;
# methods §7.3): the lab's threads waited on a run queue more than WAIT_SHARE_MAX s per window second (summed
# over them) while its guest had under GUEST_SPARE_PCT of its CPU time idle or waiting for its disks. A
# disk-bound lab waited up to 1.2 s/s beside burners with 20-60% of its guest's time spare, and its IOPS did
# not move; a CPU-bound lab (guest spare 5-6%) waited 0.68-0.84 s/s quiet and 0.95-1.42 s/s when a burner
# took two thirds of its IOPS.
WAIT_SHARE_MAX = 0.9
GUEST_SPARE_PCT = 10.0
STEAL_SHARE_MAX = 0.10         # the controller's CPU time taken by its hypervisor (no steal here to calibrate)
# The rule of records without run-queue figures (made before 2026-12-03):
OTHER_CORES_MAX = 0.5          # cores the controller may spend on anything but this QEMU
OTHER_QEMUS_MAX = 1            # other zbench QEMUs allowed to run (idle) beside this one
_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")   # guest time is inside user


def cpu_ticks(stat_text: str) -> tuple[int, int, int]:
    """(busy, total, CPUs) from /proc/stat: busy excludes idle and iowait, in clock ticks."""
    return _ticks(parse_cpu_stat(stat_text))


def _ticks(cpus: dict) -> tuple[int, int, int]:
    a = cpus["cpu"]
    busy = sum(a[k] for k in _BUSY)
    return busy, busy + a["idle"] + a["iowait"], max(1, sum(1 for k in cpus if k != "cpu"))


def process_ticks(pid_stat_text: str) -> int:
    """utime + stime of /proc/<pid>/stat, in clock ticks (comm may hold spaces and ')')."""
    fields = pid_stat_text[pid_stat_text.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])        # fields 14 and 15 of proc(5)


def zbench_qemus(proc: Path = Path("/proc")) -> list[int]:
    """Pids of running zbench lab QEMUs (a QEMU whose arguments carry QEMU_MARK)."""
    pids = []
    for d in proc.glob("[0-9]*"):
        argv = _argv(proc, int(d.name))
        if argv and os.path.basename(argv[0]).startswith("qemu-system") and \
                any(a.startswith(QEMU_MARK) for a in argv):
            pids.append(int(d.name))
    return sorted(pids)


def _argv(proc: Path, pid: int) -> list[str]:
    try:
        return [a.decode(errors="replace") for a in (proc / str(pid) / "cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return []


def lab_dir_of(qemu_argv: list[str]) -> str | None:
    """The lab's directory, from its QEMU's `-serial file:<dir>/serial.log` (hosts/lab_qemu.py)."""
    for a in qemu_argv:
        if a.startswith("file:") and a.endswith("/serial.log"):
            return a[len("file:"):-len("/serial.log")]
    return None


def lab_pids(qemu_pid: int, proc: Path = Path("/proc")) -> list[int]:
    """The lab's QEMU and the nbdkit processes serving its disks (their sockets are in its directory)."""
    lab_dir = lab_dir_of(_argv(proc, qemu_pid))
    pids = [qemu_pid]
    if lab_dir is None:
        return pids
    for d in proc.glob("[0-9]*"):
        argv = _argv(proc, int(d.name))
        if argv and os.path.basename(argv[0]) == "nbdkit" and any(a.startswith(lab_dir + "/") for a in argv):
            pids.append(int(d.name))
    return sorted(pids)


def thread_schedstats(pids: list[int], proc: Path = Path("/proc")) -> dict[int, tuple[int, int]]:
    """{tid: (ns run on a CPU, ns waited on a run queue)} of every thread of `pids` (schedstat's first
    two fields); a process or thread gone meanwhile is left out."""
    out = {}
    for pid in pids:
        for task in (proc / str(pid) / "task").glob("[0-9]*"):
            try:
                run, wait = (task / "schedstat").read_text().split()[:2]
            except (OSError, ValueError):
                continue
            out[int(task.name)] = (int(run), int(wait))
    return out


class LabThreads:
    """Run and run-queue wait of a lab's threads, summed since the first sample: each thread counts
    what it did since it was last seen (a thread new since then, all it did), so threads of QEMU's
    I/O pool that come and go between samples are counted while they live."""

    def __init__(self, qemu_pid: int, proc: Path = Path("/proc")):
        self.qemu_pid, self.proc = qemu_pid, proc
        self.pids = lab_pids(qemu_pid, proc)
        self._seen: dict[int, tuple[int, int]] = {}
        self.run_ns = self.wait_ns = 0
        self._first = True

    def sample(self) -> dict:
        now = thread_schedstats(self.pids, self.proc)
        if not self._first:
            for tid, (run, wait) in now.items():
                r0, w0 = self._seen.get(tid, (0, 0))
                self.run_ns += max(0, run - r0)
                self.wait_ns += max(0, wait - w0)
        self._first, self._seen = False, now
        ticks = 0
        for pid in self.pids:
            try:
                ticks += process_ticks((self.proc / str(pid) / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue
        return dict(lab_pids=self.pids, lab_threads=len(now), lab_ticks=ticks,
                    lab_run_ns=self.run_ns, lab_wait_ns=self.wait_ns)


def snapshot(qemu_pid: int, proc: Path = Path("/proc"), lab: LabThreads | None = None) -> dict:
    """One sample: controller epoch, CPU ticks (steal among them), the QEMU's ticks (None if gone),
    zbench QEMUs, and with `lab` its processes' ticks and their threads' run and run-queue wait."""
    cpus = parse_cpu_stat((proc / "stat").read_text())       # parsed once: the ticks and the steal
    busy, total, ncpu = _ticks(cpus)
    try:
        qemu = process_ticks((proc / str(qemu_pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        qemu = None
    out = dict(t=time.time(), busy=busy, total=total, ncpu=ncpu, steal=cpus["cpu"]["steal"],
               qemu=qemu, qemus=zbench_qemus(proc))
    return {**out, **(lab.sample() if lab is not None and qemu is not None else {})}


class Sampler:
    """Samples the controller every `interval_s` in a thread, from start() to stop()."""

    def __init__(self, qemu_pid: int, interval_s: float = 1.0, proc: Path = Path("/proc")):
        self.qemu_pid, self.interval_s, self.proc = int(qemu_pid), interval_s, Path(proc)
        self.snapshots: list[dict] = []
        self.error: str | None = None
        self._lab: LabThreads | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="zbench-host-load")

    def _take(self):
        try:
            if self._lab is None:
                self._lab = LabThreads(self.qemu_pid, self.proc)
            self.snapshots.append(snapshot(self.qemu_pid, self.proc, self._lab))
        except (OSError, ValueError, KeyError) as exc:   # no /proc (not Linux): recorded, not fatal
            self.error = self.error or f"{type(exc).__name__}: {exc}"

    def _loop(self):
        while not self._stop.wait(self.interval_s):
            self._take()

    def start(self) -> "Sampler":
        self._take()
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join(self.interval_s + 5)
        self._take()
        return dict(qemu_pid=self.qemu_pid, interval_s=self.interval_s, error=self.error,
                    snapshots=self.snapshots)

    def write(self, path: Path) -> dict:
        rec = self.stop()
        Path(path).write_text(json.dumps(rec, indent=1))
        return rec


def _cores(a: dict, b: dict, key: str = "qemu") -> tuple[float, float]:
    """(busy cores, `key`'s cores: the QEMU's, or with "lab_ticks" the lab's processes') between two
    snapshots; NaN when it was not seen."""
    per_cpu = (b["total"] - a["total"]) / max(1, b["ncpu"])     # ticks that passed on each CPU
    if per_cpu <= 0:
        return math.nan, math.nan
    own = (b[key] - a[key]) / per_cpu if a.get(key) is not None and b.get(key) is not None else math.nan
    return (b["busy"] - a["busy"]) / per_cpu, own


def _starvation(a: dict, b: dict) -> tuple[float, float, float]:
    """(run-queue wait of the lab's threads per second, its run time per second, the controller's
    steal share) between two snapshots; NaN for what the snapshots do not hold."""
    seconds = b["t"] - a["t"]
    if "lab_wait_ns" not in a or "lab_wait_ns" not in b or seconds <= 0:
        return math.nan, math.nan, math.nan
    ticks = b["total"] - a["total"]
    steal = (b["steal"] - a["steal"]) / ticks if ticks > 0 else math.nan
    return ((b["lab_wait_ns"] - a["lab_wait_ns"]) / 1e9 / seconds,
            (b["lab_run_ns"] - a["lab_run_ns"]) / 1e9 / seconds, steal)


def summarize(record: dict | None) -> dict:
    """host_* figures of a controller.json record (empty dict when there is none)."""
    if not record:
        return {}
    snaps, pid = record.get("snapshots") or [], record.get("qemu_pid")
    out = dict(host_qemu_pid=pid, host_cpus=math.nan, host_load_s=math.nan, host_busy_cores=math.nan,
               host_qemu_cores=math.nan, host_other_cores=math.nan, host_other_cores_peak=math.nan,
               host_other_qemus=math.nan, host_load_error=record.get("error"), host_lab_wait_share=math.nan,
               host_lab_wait_share_peak=math.nan, host_lab_run_cores=math.nan, host_steal_share=math.nan)
    if len(snaps) < 2:
        return {**out, "host_load_error": out["host_load_error"] or f"{len(snaps)} controller samples"}
    # the lab's own CPU: its QEMU and the nbdkit processes serving its disks (records before them: QEMU)
    key = "lab_ticks" if all("lab_ticks" in s for s in snaps) else "qemu"
    busy, qemu = _cores(snaps[0], snaps[-1], key)
    pairs = [_cores(a, b, key) for a, b in zip(snaps, snaps[1:])]
    wait, run, steal = _starvation(snaps[0], snaps[-1])
    waits = [_starvation(a, b)[0] for a, b in zip(snaps, snaps[1:])]
    out.update(host_cpus=snaps[-1]["ncpu"], host_load_s=snaps[-1]["t"] - snaps[0]["t"], host_busy_cores=busy,
               host_qemu_cores=qemu, host_other_cores=busy - qemu,
               host_other_cores_peak=max((b - q for b, q in pairs if not math.isnan(b - q)), default=math.nan),
               host_other_qemus=max(len([p for p in s.get("qemus", []) if p != pid]) for s in snaps),
               host_lab_wait_share=wait, host_lab_run_cores=run, host_steal_share=steal,
               host_lab_wait_share_peak=max((w for w in waits if not math.isnan(w)), default=math.nan))
    if math.isnan(qemu):
        out["host_load_error"] = out["host_load_error"] or f"QEMU pid {pid} not seen in every sample"
    return out


def host_contention(fio_rows, c, ctx) -> dict:
    """The truth check: True when the lab wanted CPU and did not get it (run-queue wait, steal); for
    records made before those figures, the earlier rule (other cores, other labs)."""
    out = dict(qemu_pid=ctx.qemu_pid, other_cores=num(ctx.host_other_cores),
               other_cores_peak=num(ctx.host_other_cores_peak), qemu_cores=num(ctx.host_qemu_cores),
               busy_cores=num(ctx.host_busy_cores), cpus=num(ctx.host_cpus),
               other_qemus=num(ctx.host_other_qemus), lab_wait_share=num(ctx.host_lab_wait_share),
               lab_wait_share_peak=num(ctx.host_lab_wait_share_peak), steal_share=num(ctx.host_steal_share),
               lab_run_cores=num(ctx.host_lab_run_cores),
               wait_share_max=WAIT_SHARE_MAX, steal_share_max=STEAL_SHARE_MAX)
    if not ctx.qemu_pid:
        return not_judged("not a lab run: no QEMU process to tell from the rest", **out)
    if math.isnan(out["other_cores"]):
        return not_judged("controller load not recorded" + (f" ({ctx.host_load_error})"
                                                            if ctx.host_load_error else ""), **out)
    if math.isnan(out["lab_wait_share"]):
        return _earlier_rule(out)
    # the guest's spare time (idle + iowait, in the guest): a guest that had time to spare was not paced by
    # its CPU, so the emulation's waits delayed nothing the run measured (unknown: the wait alone decides)
    spare = num(c.get("cpu_idle_pct")) + num(c.get("cpu_iowait_pct"))
    out.update(guest_spare_pct=spare, guest_spare_max_pct=GUEST_SPARE_PCT)
    paced = math.isnan(spare) or spare < GUEST_SPARE_PCT
    starved = out["lab_wait_share"] > WAIT_SHARE_MAX and paced
    reasons = [f"the lab's threads waited for a CPU {out['lab_wait_share']:.1%} of the window "
               f"(> {WAIT_SHARE_MAX:.0%}) while its guest had {spare:.1f}% of its time spare "
               f"(< {GUEST_SPARE_PCT:g}%)"] * starved + \
        [f"the controller lost {out['steal_share']:.1%} of its CPU to steal (> {STEAL_SHARE_MAX:.0%})"] * \
        (out["steal_share"] > STEAL_SHARE_MAX)
    beside = (f"{out['other_cores']:.2f} cores busy beside the lab ({out['qemu_cores']:.2f} cores), "
              f"{out['other_qemus']:.0f} other labs, {out['cpus']:.0f} CPUs")
    return {**out, "flag": bool(reasons),
            "reason": "; ".join(reasons + [beside]) if reasons else
            f"the lab's threads waited {out['lab_wait_share']:.1%} of the window, its guest {spare:.1f}% "
            f"spare; {beside}"}


def _earlier_rule(out: dict) -> dict:
    """The rule of a record without run-queue figures: cores busy beside the QEMU, other labs running."""
    out = {**out, "other_cores_max": OTHER_CORES_MAX, "other_qemus_max": OTHER_QEMUS_MAX}
    reasons = [f"{out['other_cores']:.2f} cores busy beside the lab's QEMU (> {OTHER_CORES_MAX:g})"] * \
        (out["other_cores"] > OTHER_CORES_MAX) + \
        [f"{out['other_qemus']:.0f} other zbench labs running (> {OTHER_QEMUS_MAX})"] * \
        (out["other_qemus"] > OTHER_QEMUS_MAX)
    return {**out, "flag": bool(reasons),
            "reason": "; ".join(reasons) or f"{out['other_cores']:.2f} cores busy beside the lab's QEMU "
                                             f"({out['qemu_cores']:.2f} cores), {out['other_qemus']:.0f} other labs"}
