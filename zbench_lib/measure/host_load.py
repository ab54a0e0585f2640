"""The controller's own load around a lab run: did anything but the lab's QEMU take the CPU?

A lab's disks and CPU are emulated by one QEMU process on the controller (the machine
running zbench), so whatever else runs there (another lab, a compiler, a test suite)
slows the emulation and, through it, the measured disks. Around each lab run the
controller samples /proc/stat (all CPUs), /proc/<qemu pid>/stat (utime + stime of the
lab's QEMU) and the other zbench QEMUs running (their -name starts with
`zbench-lab-`). The snapshots are raw (controller.json in the attempt directory);
`summarize()` turns them into cores: everything busy, the QEMU, and the rest (busy
minus QEMU; steal counts as busy, as the hypervisor took that CPU from us).

host_contention is raised when the rest took more than OTHER_CORES_MAX cores on
average over the run, or more than OTHER_QEMUS_MAX other zbench QEMUs ran beside this
one (an idle lab costs little CPU, but two busy ones on a small host share it).
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
OTHER_CORES_MAX = 0.5          # cores the controller may spend on anything but this QEMU
OTHER_QEMUS_MAX = 1            # other zbench QEMUs allowed to run (idle) beside this one
_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")   # guest time is inside user


def cpu_ticks(stat_text: str) -> tuple[int, int, int]:
    """(busy, total, CPUs) from /proc/stat: busy excludes idle and iowait, in clock ticks."""
    cpus = parse_cpu_stat(stat_text)
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
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]).startswith(b"qemu-system") and \
                any(a.startswith(QEMU_MARK.encode()) for a in argv):
            pids.append(int(d.name))
    return sorted(pids)


def snapshot(qemu_pid: int, proc: Path = Path("/proc")) -> dict:
    """One sample: controller epoch, CPU ticks, the QEMU's ticks (None if gone), zbench QEMUs."""
    busy, total, ncpu = cpu_ticks((proc / "stat").read_text())
    try:
        qemu = process_ticks((proc / str(qemu_pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        qemu = None
    return dict(t=time.time(), busy=busy, total=total, ncpu=ncpu, qemu=qemu, qemus=zbench_qemus(proc))


class Sampler:
    """Samples the controller every `interval_s` in a thread, from start() to stop()."""

    def __init__(self, qemu_pid: int, interval_s: float = 1.0, proc: Path = Path("/proc")):
        self.qemu_pid, self.interval_s, self.proc = int(qemu_pid), interval_s, Path(proc)
        self.snapshots: list[dict] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="zbench-host-load")

    def _take(self):
        try:
            self.snapshots.append(snapshot(self.qemu_pid, self.proc))
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


def _cores(a: dict, b: dict) -> tuple[float, float]:
    """(busy cores, QEMU cores) between two snapshots; NaN when the QEMU was not seen."""
    per_cpu = (b["total"] - a["total"]) / max(1, b["ncpu"])     # ticks that passed on each CPU
    if per_cpu <= 0:
        return math.nan, math.nan
    qemu = (b["qemu"] - a["qemu"]) / per_cpu if a.get("qemu") is not None and b.get("qemu") is not None else math.nan
    return (b["busy"] - a["busy"]) / per_cpu, qemu


def summarize(record: dict | None) -> dict:
    """host_* figures of a controller.json record (empty dict when there is none)."""
    if not record:
        return {}
    snaps, pid = record.get("snapshots") or [], record.get("qemu_pid")
    out = dict(host_qemu_pid=pid, host_cpus=math.nan, host_load_s=math.nan, host_busy_cores=math.nan,
               host_qemu_cores=math.nan, host_other_cores=math.nan, host_other_cores_peak=math.nan,
               host_other_qemus=math.nan, host_load_error=record.get("error"))
    if len(snaps) < 2:
        return {**out, "host_load_error": out["host_load_error"] or f"{len(snaps)} controller samples"}
    busy, qemu = _cores(snaps[0], snaps[-1])
    pairs = [_cores(a, b) for a, b in zip(snaps, snaps[1:])]
    out.update(host_cpus=snaps[-1]["ncpu"], host_load_s=snaps[-1]["t"] - snaps[0]["t"], host_busy_cores=busy,
               host_qemu_cores=qemu, host_other_cores=busy - qemu,
               host_other_cores_peak=max((b - q for b, q in pairs if not math.isnan(b - q)), default=math.nan),
               host_other_qemus=max(len([p for p in s.get("qemus", []) if p != pid]) for s in snaps))
    if math.isnan(qemu):
        out["host_load_error"] = out["host_load_error"] or f"QEMU pid {pid} not seen in every sample"
    return out


def host_contention(fio_rows, c, ctx) -> dict:
    """The truth check: True when the controller was busy with more than this lab's QEMU."""
    out = dict(qemu_pid=ctx.qemu_pid, other_cores=num(ctx.host_other_cores),
               other_cores_peak=num(ctx.host_other_cores_peak), qemu_cores=num(ctx.host_qemu_cores),
               busy_cores=num(ctx.host_busy_cores), cpus=num(ctx.host_cpus),
               other_qemus=num(ctx.host_other_qemus), other_cores_max=OTHER_CORES_MAX,
               other_qemus_max=OTHER_QEMUS_MAX)
    if not ctx.qemu_pid:
        return not_judged("not a lab run: no QEMU process to tell from the rest", **out)
    if math.isnan(out["other_cores"]):
        return not_judged("controller load not recorded" + (f" ({ctx.host_load_error})"
                                                            if ctx.host_load_error else ""), **out)
    reasons = [f"{out['other_cores']:.2f} cores busy beside the lab's QEMU (> {OTHER_CORES_MAX:g})"] * \
        (out["other_cores"] > OTHER_CORES_MAX) + \
        [f"{out['other_qemus']:.0f} other zbench labs running (> {OTHER_QEMUS_MAX})"] * \
        (out["other_qemus"] > OTHER_QEMUS_MAX)
    return {**out, "flag": bool(reasons),
            "reason": "; ".join(reasons) or f"{out['other_cores']:.2f} cores busy beside the lab's QEMU "
                                             f"({out['qemu_cores']:.2f} cores), {out['other_qemus']:.0f} other labs"}
