"""host_contention: the controller's load around a lab run, parsed, sampled, summarised and judged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from zbench_lib.measure.counters import split_snapshots
from zbench_lib.measure.host_load import (OTHER_CORES_MAX, LabThreads, Sampler, cpu_ticks,
                                          host_contention, lab_pids, process_ticks, summarize, thread_schedstats,
                                          zbench_qemus)
from zbench_lib.measure.rows import derive_rows
from zbench_lib.measure.run_context import RunFacts

FIX = Path(__file__).parent / "fixtures" / "counters" / "sampler-local"
SCALING = Path(__file__).resolve().parent.parent / "data" / "examples" / "scaling" / "raw.tar.xz"


def test_cpu_ticks_of_a_real_proc_stat_capture():
    blocks = split_snapshots((FIX / "stat.txt").read_text())
    (b1, t1, n1), (b2, t2, n2) = cpu_ticks(blocks[1][2]), cpu_ticks(blocks[2][2])
    assert n1 == n2 == 2                                   # cpu0, cpu1
    # t1 -> t2 (as in test_run_summary): user 131, system 32, softirq 3 busy; idle 30, iowait 5
    assert (b2 - b1, t2 - t1) == (166, 201)
    # first block: cpu  84426 0 19859 184009 2209 0 1120 8014: steal counts as busy, iowait as idle
    assert cpu_ticks(blocks[0][2])[:2] == (84426 + 19859 + 1120 + 8014, 84426 + 19859 + 184009 + 2209 + 1120 + 8014)


def test_process_ticks_parses_utime_and_stime_whatever_comm_holds():
    tail = "S 1 100 100 0 -1 4194560 5000 0 12 0 {u} {s} 0 0 20 0 9 0 1234 0 0"
    assert process_ticks("4242 (qemu-system-x86) " + tail.format(u=7000, s=1500)) == 8500
    assert process_ticks("4242 (a) b (c)) " + tail.format(u=3, s=4)) == 7
    # the real thing: this process's own ticks, against what the kernel reports through os.times()
    t = os.times()
    real = process_ticks(Path(f"/proc/{os.getpid()}/stat").read_text())
    assert abs(real - (t.user + t.system) * os.sysconf("SC_CLK_TCK")) <= 5


def fake_proc(root: Path, cmdlines: dict) -> Path:
    for pid, argv in cmdlines.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    return root


def test_zbench_qemus_are_found_by_their_name(tmp_path):
    proc = fake_proc(tmp_path, {
        101: ["/usr/bin/qemu-system-x86_64", "-name", "zbench-lab-pytest", "-accel", "tcg"],
        102: ["qemu-system-x86_64", "-name", "zbench-lab-sweep-demo"],
        200: ["/usr/bin/qemu-system-x86_64", "-name", "someone-elses-vm"],
        300: ["python", "-c", "print('zbench-lab-pytest')"],
    })
    (proc / "self").mkdir()
    assert zbench_qemus(proc) == [101, 102]


def snap(t, busy, total, qemu, qemus=(4242,), ncpu=2):
    return dict(t=t, busy=busy, total=total, ncpu=ncpu, qemu=qemu, qemus=list(qemus))


def record(*snaps, pid=4242):
    return dict(qemu_pid=pid, interval_s=1.0, error=None, snapshots=list(snaps))


def test_summary_in_cores():
    # 2 CPUs, 10 s at 100 ticks/s: 2000 ticks pass; 1500 busy = 1.5 cores, the QEMU 1200 = 1.2 cores
    s = summarize(record(snap(0, 0, 0, 0), snap(5, 700, 1000, 600), snap(10, 1500, 2000, 1200)))
    assert s["host_busy_cores"] == pytest.approx(1.5) and s["host_qemu_cores"] == pytest.approx(1.2)
    # the second half was busier: 800 of 1000 ticks against the QEMU's 600, 0.4 cores beside it
    assert s["host_other_cores"] == pytest.approx(0.3) and s["host_other_cores_peak"] == pytest.approx(0.4)
    assert (s["host_cpus"], s["host_load_s"], s["host_other_qemus"], s["host_load_error"]) == (2, 10, 0, None)
    assert summarize(None) == {}
    gone = summarize(record(snap(0, 0, 0, 0), snap(10, 1500, 2000, None)))
    assert "not seen" in gone["host_load_error"] and gone["host_other_cores"] != gone["host_other_cores"]


def judge(rec, counters=None, **ctx):
    return host_contention([], counters or {}, RunFacts.of(qemu_pid=4242, **summarize(rec), **ctx))


PACED = {"cpu_idle_pct": 2.4, "cpu_iowait_pct": 3.1}        # a CPU-bound guest: 5.5% of its time spare
SPARE = {"cpu_idle_pct": 4.0, "cpu_iowait_pct": 38.2}       # a disk-bound guest waiting on its disks


def test_host_contention_flags_cpu_taken_beside_the_lab_and_a_crowd_of_labs():
    quiet = judge(record(snap(0, 0, 0, 0), snap(10, 1500, 2000, 1200)))
    assert quiet["flag"] is False and quiet["other_cores"] == pytest.approx(0.3)
    # another busy lab (or a compile) took 0.9 of a core while ours ran
    busy = judge(record(snap(0, 0, 0, 0), snap(10, 1900, 2000, 1000)))
    assert busy["flag"] is True and busy["reason"].startswith("0.90 cores busy beside the lab's QEMU")
    assert busy["other_cores_max"] == OTHER_CORES_MAX
    # one idle lab beside ours is allowed, two are not
    one = judge(record(snap(0, 0, 0, 0, qemus=(4242, 7)), snap(10, 1300, 2000, 1200, qemus=(4242, 7))))
    assert one["flag"] is False and one["other_qemus"] == 1
    two = judge(record(snap(0, 0, 0, 0, qemus=(4242, 7, 8)), snap(10, 1300, 2000, 1200, qemus=(4242, 7))))
    assert two["flag"] is True and "2 other zbench labs running" in two["reason"]


def test_host_contention_not_judged_outside_a_lab_or_without_samples():
    nolab = host_contention([], {}, RunFacts())
    assert nolab["flag"] is None and nolab["reason"].startswith("not a lab run")
    unrecorded = host_contention([], {}, RunFacts.of(qemu_pid=4242))
    assert unrecorded["flag"] is None and unrecorded["reason"] == "controller load not recorded"
    gone = judge(record(snap(0, 0, 0, 0), snap(10, 1500, 2000, None)))
    assert gone["flag"] is None and "QEMU pid 4242 not seen" in gone["reason"]


def test_sampler_on_this_machine_with_this_process_as_the_qemu(tmp_path):
    s = Sampler(os.getpid(), interval_s=0.05).start()
    end = time.monotonic() + 0.4
    while time.monotonic() < end:          # keep this process busy: it stands in for the QEMU
        sum(range(1000))
    rec = s.write(tmp_path / "controller.json")
    assert json.loads((tmp_path / "controller.json").read_text()) == rec
    assert rec["error"] is None and len(rec["snapshots"]) >= 3 and rec["qemu_pid"] == os.getpid()
    out = summarize(rec)
    assert out["host_cpus"] == os.cpu_count() and out["host_qemu_cores"] > 0
    assert out["host_busy_cores"] >= out["host_qemu_cores"] - 0.2        # tick granularity
    assert Sampler(os.getpid(), 0.05, proc=tmp_path).start().stop()["error"]   # no /proc there: recorded


@pytest.fixture()
def real_attempt(tmp_path):
    """One raw run of the scaling example (stripe of 4, 4k random reads, pool 1), copied so it can be edited."""
    with tarfile.open(SCALING) as tf:
        tf.extractall(tmp_path, members=[m for m in tf.getmembers() if m.name.startswith("raw/cb3cb65-pr1-r01/")],
                      filter="data")
    return tmp_path / "raw" / "cb3cb65-pr1-r01" / "attempt-1"


def test_derive_rows_reads_the_controllers_record(real_attempt):
    rows, checks = derive_rows(real_attempt)
    r = rows[0]            # the study ran alone: QEMU had the host, nothing else ran
    assert r["flag_host_contention"] is False and r["host_other_cores"] < 0.5 < r["host_qemu_cores"]
    (real_attempt / "controller.json").unlink()
    rows, checks = derive_rows(real_attempt)
    assert rows[0]["flag_host_contention"] is None and "host_contention: controller load not recorded" in \
        rows[0]["not_judged"]
    run = json.loads((real_attempt / "run.json").read_text())
    run["context"]["qemu_pid"] = 4242                                # the pid the record below names
    (real_attempt / "run.json").write_text(json.dumps(run))
    (real_attempt / "controller.json").write_text(json.dumps(record(snap(0, 0, 0, 0), snap(15, 2800, 3000, 1500))))
    rows, checks = derive_rows(real_attempt)
    r = rows[0]
    assert r["flag_host_contention"] is True and r["host_other_cores"] == pytest.approx(0.87, abs=0.01)
    assert r["host_qemu_cores"] == pytest.approx(1.0) and "host_contention" in r["truth_flags"].split(",")
    assert "host_contention" not in r["not_judged"] and r["flagged"] is True


# --- starvation (issue 47): the lab's threads waited for a CPU, whatever else ran -----------------------

def lsnap(t, busy, total, lab_ticks, wait_s, run_s, qemus=(4242,), steal=0, ncpu=2):
    """A snapshot with the lab's figures: its processes' ticks, its threads' run-queue wait and run (s)."""
    return dict(snap(t, busy, total, lab_ticks, qemus, ncpu), steal=steal, lab_ticks=lab_ticks,
                lab_run_ns=int(run_s * 1e9), lab_wait_ns=int(wait_s * 1e9), lab_pids=[4242], lab_threads=9)


def test_a_niced_burner_beside_a_lab_that_did_not_wait_flags_nothing():
    # 10 s on 2 CPUs: the lab 1.2 cores, nice-19 burners the other 0.7; the lab's threads waited 8.8 s in all,
    # as a disk-bound lab beside niced burners did in the calibration (not moved: IOPS within 4%)
    rec = record(lsnap(0, 0, 0, 0, 0, 0), lsnap(10, 1900, 2000, 1200, 8.8, 12.0))
    out = judge(rec, PACED)
    assert out["flag"] is False and out["other_cores"] == pytest.approx(0.7)
    assert out["lab_wait_share"] == pytest.approx(0.88) and "waited 88.0% of the window" in out["reason"]
    # the demo beside one niced burner (2026-12-03): 1.18 s/s of wait, its guest 42% spare, IOPS as quiet
    demo = judge(record(lsnap(0, 0, 0, 0, 0, 0), lsnap(10, 1970, 2000, 990, 11.8, 9.9)), SPARE)
    assert demo["flag"] is False and demo["guest_spare_pct"] == pytest.approx(42.2)
    # the earlier rule, on the same cores, flagged it: what a record without wait figures still gets
    old = judge(record(snap(0, 0, 0, 0), snap(10, 1900, 2000, 1200)))
    assert old["flag"] is True and old["reason"].startswith("0.70 cores busy beside the lab's QEMU")


def test_idle_sibling_labs_flag_nothing_when_the_lab_did_not_wait():
    rec = record(lsnap(0, 0, 0, 0, 0, 0, qemus=(4242, 7, 8, 9)), lsnap(10, 1300, 2000, 1200, 0.2, 12.0,
                                                                       qemus=(4242, 7, 8, 9)))
    out = judge(rec)
    assert out["flag"] is False and out["other_qemus"] == 3


def test_nbdkit_serving_the_lab_counts_as_the_lab_not_as_other_load():
    # QEMU 1.0 core and its nbdkit 0.6: lab_ticks holds both; only 0.1 core is anything else
    rec = record(lsnap(0, 0, 0, 0, 0, 0), lsnap(10, 1700, 2000, 1600, 0.3, 16.0))
    rec["snapshots"][1]["qemu"] = 1000            # the QEMU alone, as the earlier record had it
    s = summarize(rec)
    assert s["host_qemu_cores"] == pytest.approx(1.6) and s["host_other_cores"] == pytest.approx(0.1)
    assert judge(rec)["flag"] is False


def test_a_starved_lab_is_flagged_with_its_figures():
    # a CPU-bound lab beside a burner (benchmarks/host_contention.py): its threads waited 14 s in a 10 s window
    # (1.4 per second, summed over them) and ran 10 s
    rec = record(lsnap(0, 0, 0, 0, 0, 0), lsnap(10, 2000, 2000, 800, 14.0, 10.0))
    out = judge(rec, PACED)
    assert out["flag"] is True and out["lab_wait_share"] == pytest.approx(1.4)
    assert out["reason"].startswith("the lab's threads waited for a CPU 140.0% of the window (> 90%) while its "
                                    "guest had 5.5% of its time spare (< 10%)")
    assert "1.20 cores busy beside the lab" in out["reason"]
    # a controller that is itself a VM, its hypervisor taking a fifth of its CPU time: starvation too
    stolen = judge(record(lsnap(0, 0, 0, 0, 0, 0), lsnap(10, 1500, 2000, 1200, 0.1, 12.0, steal=400)))
    assert stolen["flag"] is True and stolen["steal_share"] == pytest.approx(0.2) and "steal" in stolen["reason"]


def fake_lab_proc(root: Path) -> Path:
    proc = fake_proc(root, {
        4242: ["qemu-system-x86_64", "-name", "zbench-lab-demo", "-serial", "file:/labs/demo/serial.log"],
        5000: ["/usr/sbin/nbdkit", "--unix", "/labs/demo/zbdata00.nbd.sock", "python", "model.py"],
        5001: ["/usr/sbin/nbdkit", "--unix", "/labs/other/zbdata00.nbd.sock", "python", "model.py"],
        5002: ["vim", "/labs/demo/notes"],
    })
    for pid, tids in {4242: {4242: (100, 10), 4243: (50, 5)}, 5000: {5000: (30, 3)}}.items():
        for tid, (run, wait) in tids.items():
            (proc / str(pid) / "task" / str(tid)).mkdir(parents=True)
            (proc / str(pid) / "task" / str(tid) / "schedstat").write_text(f"{run} {wait} 7\n")
    return proc


def test_the_lab_is_its_qemu_and_the_nbdkit_serving_its_directory(tmp_path):
    proc = fake_lab_proc(tmp_path)
    assert lab_pids(4242, proc) == [4242, 5000]
    assert thread_schedstats([4242, 5000], proc) == {4242: (100, 10), 4243: (50, 5), 5000: (30, 3)}


def test_lab_threads_count_each_threads_own_progress_and_new_threads_whole(tmp_path):
    proc = fake_lab_proc(tmp_path)
    for pid in (4242, 5000):
        (proc / str(pid) / "stat").write_text(f"{pid} (x) S " + " ".join(["0"] * 10) + " 3 4 0")
    lab = LabThreads(4242, proc)
    first = lab.sample()
    assert (first["lab_run_ns"], first["lab_wait_ns"], first["lab_ticks"]) == (0, 0, 14)
    (proc / "4242" / "task" / "4243" / "schedstat").write_text("80 25 9\n")       # +30 run, +20 wait
    (proc / "4242" / "task" / "4250").mkdir()
    (proc / "4242" / "task" / "4250" / "schedstat").write_text("5 2 1\n")          # an I/O thread, new
    (proc / "5000" / "task" / "5000" / "schedstat").unlink()                       # gone: left out
    second = lab.sample()
    assert (second["lab_run_ns"], second["lab_wait_ns"], second["lab_threads"]) == (35, 22, 3)


def test_this_machine_records_the_run_queue_wait_of_a_starved_thread(tmp_path):
    """The real thing: this process stands in for the lab, beside an un-niced burner per CPU and two more;
    its busy thread must wait on a run queue, and the sampler must see it."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() + 2)]
    try:
        s = Sampler(os.getpid(), interval_s=0.1).start()
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            sum(range(1000))
        out = summarize(s.stop())
    finally:
        for b in burners:
            b.kill()
            b.wait()
    # one busy thread among CPUs + 2 burners on as many CPUs gets at most CPUs / (CPUs + 2) of one: it waits
    # at least a third of the time (a quarter, for the sampler's own share and timing)
    assert out["host_lab_run_cores"] > 0 and out["host_lab_wait_share"] > 0.25, out
