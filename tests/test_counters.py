"""Counter parsers against captured text, and the sampler script run for real."""

from __future__ import annotations

import math
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.measure.counters import (parse_sampler_dir, sampler_argv, sampler_script, snap_after_argv,
                                         snap_after_script, snap_after_t1, split_snapshots)
from zbench_lib.measure.procstats import cpu_percent, diskstats_rates, parse_cpu_stat, parse_diskstats
from zbench_lib.zfs.zfsstats import arc_delta, parse_kstat, parse_txgs, parse_zpool_iostat
from zbench_lib.core.errors import ZbenchError
from zbench_lib.zfs.zfsstats import ZPOOL_LATENCY

FIX = Path(__file__).parent / "fixtures" / "counters"
LOCAL = FIX / "sampler-local"


def local_blocks(name):
    return split_snapshots((LOCAL / name).read_text())


# --- /proc/diskstats --------------------------------------------------------

def test_parse_real_diskstats():
    (_, _, body), *_ = local_blocks("diskstats.txt")
    df = parse_diskstats(body)
    vda = df[df.device == "vda"].iloc[0]
    assert (vda.major, vda.minor) == (254, 0)
    assert (vda.reads, vda.sectors_read, vda.writes, vda.sectors_written) == (1811203, 66418106, 2779335, 78820584)
    assert (vda.flushes, vda.flush_ms) == (367902, 9079)  # 17-field kernel


def test_diskstats_rates_real_write_interval():
    # Snapshots 2 -> 3 of the capture: dd wrote 96 MiB with O_DIRECT to a file on vda.
    (t2, _, a), (t3, _, b) = local_blocks("diskstats.txt")[1:3]
    dt = t3 - t2
    vda = diskstats_rates(a, b, dt).set_index("device").loc["vda"]
    # 2779529-2779336 writes, 79019216-78820624 sectors, 354831-354714 ms, io_ticks 60164-60084
    assert vda.w_s == pytest.approx(193 / dt)
    assert vda.write_bytes_s == pytest.approx(198592 * 512 / dt)
    assert vda.write_bytes_s > 90 * 2 ** 20
    assert vda.w_await_ms == pytest.approx(117 / 193)
    assert vda.wareq_bytes == pytest.approx(198592 * 512 / 193)
    assert vda.util_pct == pytest.approx(80 / (dt * 1000) * 100)
    assert vda.r_s == 0 and math.isnan(vda.r_await_ms)
    assert vda.wrqm_s == pytest.approx((58030 - 57911) / dt)


def test_diskstats_rates_edge_cases():
    a = "   8       0 sda 10 0 80 5 10 0 80 5 0 10 10\n   8      16 sdb 5 0 40 1 0 0 0 0 0 1 1\n"
    b = "   8       0 sda 20 0 160 15 10 0 80 5 0 510 20\n   8      16 sdb 1 0 8 1 0 0 0 0 0 1 1\n"
    df = diskstats_rates(a, b, 1.0).set_index("device")
    assert df.loc["sda", "r_s"] == 10 and df.loc["sda", "r_await_ms"] == 1.0
    assert df.loc["sda", "util_pct"] == 50 and df.loc["sda", "rareq_bytes"] == 4096
    assert df.loc["sdb"].isna().all()  # counters went backwards: re-created device
    with pytest.raises(ZbenchError):
        diskstats_rates(a, b, 0)


# --- /proc/stat ---------------------------------------------------------------

def test_cpu_percent_real_and_hand():
    blocks = local_blocks("stat.txt")
    assert "cpu0" in parse_cpu_stat(blocks[0][2])
    for (_, _, a), (_, _, b) in zip(blocks, blocks[1:]):
        p = cpu_percent(a, b)
        assert sum(p.values()) == pytest.approx(100)
    a = "cpu  100 0 50 800 20 0 10 0 40 0\n"
    b = "cpu  200 0 90 1600 60 0 30 0 80 0\n"
    # deltas: user 100 (40 of it guest), sys 40 + softirq 20, idle 800, iowait 40 -> total 1000
    assert cpu_percent(a, b) == pytest.approx(dict(usr_pct=6, sys_pct=6, iowait_pct=4, steal_pct=0,
                                                   guest_pct=4, idle_pct=80))
    with pytest.raises(ZbenchError):
        parse_cpu_stat("intr 1 2 3\n")


# --- arcstats (real lab capture; see fixtures/counters/README.md) ------------------

def test_parse_kstat_arcstats():
    k = parse_kstat((FIX / "arcstats-a.txt").read_text())
    # header "18 1 0x01 147 ..." announces 147 values; the file has them after 'name type data'
    assert len(k) == 147 and k["hits"] == 29815 and k["misses"] == 0
    assert k["c_max"] == 1289011200 and k["c_min"] == 64450560 and k["size"] == 282322144
    with pytest.raises(ZbenchError, match="name type data"):
        parse_kstat("hits 4 12\n")


def test_arc_delta():
    d = arc_delta((FIX / "arcstats-a.txt").read_text(), (FIX / "arcstats-b.txt").read_text(), 1.0)
    # hits 31369 - 29815 = 1554, misses 404 - 0 = 404, iohits 0 - 0 = 0
    assert d["hits_s"] == 1554 and d["misses_s"] == 404 and d["iohits_s"] == 0
    # demand data: hits 3927 - 3465 = 462, misses 404 - 0 = 404 (every miss is a data miss:
    # metadata hits 27425 - 26333 = 1092, and 462 + 1092 = 1554 = all hits)
    assert d["demand_data_hits_s"] == 462 and d["demand_data_misses_s"] == 404
    assert d["demand_metadata_hits_s"] == 1092 and d["demand_metadata_misses_s"] == 0
    assert d["hit_ratio"] == pytest.approx(1554 / (1554 + 0 + 404))          # 0.794
    assert d["demand_data_hit_ratio"] == pytest.approx(462 / (462 + 404))     # 0.533
    assert math.isnan(d["prefetch_data_hit_ratio"])  # prefetch data hits and misses both 0 -> no access, NaN
    # gauges from the later snapshot
    assert d["size_bytes"] == 253146280 and d["c_bytes"] == 333541376 and d["c_max_bytes"] == 1289011200
    assert math.isnan(arc_delta("x\nname type data\nhits 4 5\n", "x\nname type data\nhits 4 5\n", 2)["hit_ratio"])


# --- zpool iostat -Hpvy -l -T u (real lab capture) -------------------------------------

def test_parse_zpool_iostat():
    df = parse_zpool_iostat((FIX / "zpool-iostat-Hpvyl.txt").read_text())
    # -T u printed 1795282565 and 1795282570 before the first block (the since-boot sample
    # that -y skips still prints its stamp): the last stamp before a block is its time.
    assert df["sample"].nunique() == 3 and list(df["t_s"].unique()) == [1795282570, 1795282572, 1795282573]
    assert len(df) == 3 * 7
    s0 = df[df["sample"] == 0].set_index("name")
    assert list(s0.index) == ["tank", "raidz1-0", "vdb", "vdc", "vdd", "vdf", "vdg"]
    assert s0.loc["tank", "kind"] == "pool" and s0.loc["raidz1-0", "kind"] == "vdev"
    assert (s0.loc[["vdb", "vdc", "vdd", "vdf", "vdg"], "kind"] == "disk").all()
    assert (s0.loc[["vdb", "vdc", "vdd"], "parent"] == "raidz1-0").all()
    # a blank line opens the logs class (vdf), another the cache class (vdg)
    assert s0.loc["vdf", "parent"] == "tank" and s0.loc["vdf", "section"] == 1
    assert s0.loc["vdg", "parent"] == "tank" and s0.loc["vdg", "section"] == 2
    assert (s0.loc[["tank", "raidz1-0", "vdb", "vdc", "vdd"], "section"] == 0).all()
    for _, s in df.groupby("sample"):
        s = s.set_index("name")
        top = s[(s.parent == "tank") & (s.section < 2)]   # raidz1-0 and the log vdf, not the cache
        # write ops 1 = 0 + 1, 6 = 6 + 0, 38 = 38 + 0; read ops 30 = 30 + 0, 2 = 2 + 0, 0 = 0 + 0
        assert s.loc["tank", "write_ops_s"] == top["write_ops_s"].sum()
        assert s.loc["tank", "read_ops_s"] == top["read_ops_s"].sum()
    # Bytes do not add up like that in the real output: sample 0 pool writes 259576 B/s while
    # raidz1-0 0 + vdf 224755 = 224755; and raidz leaves write parity, so in sample 1 the
    # leaves write 4951 + 4792 + 3594 = 13337 B/s against 6479 for raidz1-0.
    s1 = df[df["sample"] == 1].set_index("name")
    assert s1.loc[["vdb", "vdc", "vdd"], "write_bytes_s"].sum() == 13337 > s1.loc["raidz1-0", "write_bytes_s"] == 6479
    assert s0.loc["tank", "read_ops_s"] == 30 and s0.loc["tank", "read_bytes_s"] == 246772
    assert s0.loc[["vdb", "vdc", "vdd"], "read_ops_s"].sum() == 26   # 7 + 11 + 8, fewer than raidz1-0's 30
    # -p: the pool and raidz1-0 report 405209088 allocated (the log's 6291456 is not in it);
    # leaves print 0 for alloc/free
    assert s0.loc["tank", "alloc_bytes"] == s0.loc["raidz1-0", "alloc_bytes"] == 405209088
    assert s0.loc["tank", "free_bytes"] == 2547580928
    assert s0.loc["vdb", "alloc_bytes"] == 0 and s0.loc["vdf", "alloc_bytes"] == 6291456
    # '-' where there was no I/O: the log only wrote, the cache did nothing
    assert math.isnan(s0.loc["vdf", "total_wait_read_ns"]) and s0.loc["vdf", "total_wait_write_ns"] == 61566390
    assert s0.loc["tank", "total_wait_write_ns"] == 61566390   # all sync writes of sample 0 went to the log
    assert s0.loc["vdg", ZPOOL_LATENCY].isna().all()
    assert df[["scrub_wait_ns", "trim_wait_ns", "rebuild_wait_ns"]].isna().all().all()
    assert s1.loc["tank", "asyncq_wait_write_ns"] == 362397696


def test_parse_zpool_iostat_mirrored_log():
    # Hand-written (raidz2 + mirrored log): the real lab pool has no group vdev among its logs.
    df = parse_zpool_iostat((FIX / "handwritten-zpool-iostat-Hpvyl.txt").read_text())
    s0 = df[df["sample"] == 0].set_index("name")
    assert s0.loc["mirror-1", "section"] == 1 and s0.loc["mirror-1", "parent"] == "tank"
    assert s0.loc["vdh", "parent"] == "mirror-1" and s0.loc["vdi", "parent"] == "mirror-1"
    assert s0.loc["vdj", "parent"] == "tank" and s0.loc["vdj", "section"] == 2  # cache after the group


def test_parse_zpool_iostat_variants():
    old = "tank\t100\t900\t1\t2\t4096\t8192\n"  # without -l, without -T
    df = parse_zpool_iostat(old + old)
    assert list(df["sample"]) == [0, 1] and df["t_s"].isna().all()
    assert df["total_wait_read_ns"].isna().all()
    with pytest.raises(ZbenchError, match="-H -p"):
        parse_zpool_iostat("tank   100G  900G  1  2  4K  8K\n")
    with pytest.raises(ZbenchError, match="does not start with pool"):
        parse_zpool_iostat("vdb\t0\t0\t1\t2\t3\t4\n", pool="tank")


# --- txgs (real lab capture) ---------------------------------------------------------

def test_parse_txgs():
    df = parse_txgs((FIX / "txgs.txt").read_text())
    # no kstat header line in this capture, just the column header and TXGs 5..79
    assert list(df["txg"]) == list(range(5, 80))
    assert list(df["state"]) == ["C"] * 74 + ["O"]
    first = df.iloc[0]
    assert (first.birth_ns, first.ndirty, first.nwritten, first.writes) == (104992615230, 688128, 163840, 118)
    assert (first.otime_ns, first.qtime_ns, first.wtime_ns, first.stime_ns) == (1108564620, 82820, 253250, 972144830)
    # a TXG stays open until the next one is born: 104992615230 + 1108564620 = 106101179850 (TXG 6)
    c = df[df.state == "C"]
    assert ((c["birth_ns"] + c["otime_ns"]).values == df["birth_ns"].iloc[1:].values).all()
    last = df.iloc[-1]
    assert last.txg == 79 and last.otime_ns == 0 and last.stime_ns == 0   # open: no times yet
    assert df.loc[df.txg == 33, "nwritten"].item() == 58058752            # the busiest TXG


# --- the sampler, for real ----------------------------------------------------------

def run_sampler(tmp_path, seconds, pool="tank", path_prefix=None, work=None):
    script = tmp_path / "sampler.sh"
    script.write_text(sampler_script())
    out = tmp_path / "out"
    env = dict(os.environ)
    if path_prefix:
        env["PATH"] = f"{path_prefix}:{env['PATH']}"
    proc = subprocess.Popen(sampler_argv(str(script), str(out), 1, pool), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(seconds / 2)
        if work:
            work()
        time.sleep(seconds / 2)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    return out, proc.returncode, err


def alive(pid: int) -> bool:
    """Running (not a zombie waiting for a reaper)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def fake_zpool(tmp_path, body):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    z = bindir / "zpool"
    z.write_text("#!/bin/sh\n" + body)
    z.chmod(z.stat().st_mode | stat.S_IEXEC)
    return bindir


@pytest.mark.skipif(not shutil.which("sh") or not Path("/proc/diskstats").exists(), reason="needs Linux")
def test_sampler_without_zfs(tmp_path):
    def work():
        with open(tmp_path / "junk", "wb") as f:
            f.write(os.urandom(8 << 20))
            os.fsync(f.fileno())
    out, rc, err = run_sampler(tmp_path, 3.2, work=work)
    assert rc == 0, err
    assert len(split_snapshots((out / "diskstats.txt").read_text())) >= 3
    assert not (out / "arcstats.txt").exists() and (out / "zpool_iostat.err").exists()
    series = parse_sampler_dir(out)
    disk, cpu = series["disk"], series["cpu"]
    assert list(disk.columns) == ["t_s", "layer", "device", "metric", "value"]
    assert disk["t_s"].nunique() >= 2 and {"w_s", "util_pct", "await_ms"} <= set(disk["metric"])
    assert disk[disk.metric == "write_bytes_s"]["value"].max() > 0
    per_t = cpu.pivot_table(index="t_s", columns="metric", values="value")
    assert (per_t.sum(axis=1) - 100).abs().max() < 1e-6
    assert series["arc"].empty and series["zpool"].empty and series["txg"].empty


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may raise a process's priority")
def test_sampler_runs_ahead_of_the_load(tmp_path):
    """The sampler and what it forks run 10 steps nicer than their caller, so a CPU-bound fio cannot starve it."""
    script = tmp_path / "sampler.sh"
    script.write_text(sampler_script())
    proc = subprocess.Popen(sampler_argv(str(script), str(tmp_path / "out"), 1, ""),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "out" / "sampler.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        # nice execs the shell: the pid Popen knows is the sampler's own.
        assert int((tmp_path / "out" / "sampler.pid").read_text()) == proc.pid
        # nice -n is relative to the caller's niceness (a test run under nice starts above 0).
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == max(-20, os.getpriority(os.PRIO_PROCESS, 0) - 10)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_sampler_survives_failing_zpool(tmp_path):
    bindir = fake_zpool(tmp_path, "echo \"cannot open '$6': no such pool\" >&2\nexit 1\n")
    out, rc, err = run_sampler(tmp_path, 2.5, path_prefix=bindir)
    assert rc == 0, err
    assert "no such pool" in (out / "zpool_iostat.err").read_text()
    assert len(split_snapshots((out / "stat.txt").read_text())) >= 2
    assert not parse_sampler_dir(out)["cpu"].empty


def test_sampler_kills_zpool_child_and_parses_it(tmp_path):
    fixture = FIX / "zpool-iostat-Hpvyl.txt"
    bindir = fake_zpool(tmp_path, f"echo \"$@\" > {tmp_path}/zpool.argv\necho $$ > {tmp_path}/zpool.pid\n"
                                  f"cat {fixture}\nexec sleep 300\n")
    out, rc, _ = run_sampler(tmp_path, 2.2, path_prefix=bindir)
    assert rc == 0
    assert (tmp_path / "zpool.argv").read_text().split() == ["iostat", "-Hpvy", "-l", "-T", "u", "tank", "1"]
    pid = int((tmp_path / "zpool.pid").read_text())
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid), "the sampler left its zpool iostat child running"
    zp = parse_sampler_dir(out)["zpool"]
    assert list(zp.columns) == ["t_s", "layer", "device", "metric", "value", "kind"]
    tank = zp[(zp.device == "tank") & (zp.metric == "write_ops_s")]
    assert list(tank["value"]) == [1, 6, 38]
    # the whole-second stamps were replaced by the times the lines arrived (after the sampler started)
    start = float((out / "sampler.info").read_text().split()[1])
    assert all(start <= t < start + 5 for t in tank["t_s"]) and tank["t_s"].is_monotonic_increasing
    assert sum(1 for line in (out / "zpool_iostat.txt").read_text().splitlines()
               if "." in line and "\t" not in line) == 4
    assert not (out / ".zpool.fifo").exists()


def test_parse_sampler_dir_with_zfs_files(tmp_path):
    """A directory as the sampler writes it on the lab, built from the real captures."""
    out = tmp_path / "out"
    shutil.copytree(LOCAL, out)
    (out / "sampler.info").write_text("start 1795282569.0 interval 1 pool tank\n")
    a, b = (FIX / "arcstats-a.txt").read_text(), (FIX / "arcstats-b.txt").read_text()
    (out / "arcstats.txt").write_text(f"@@ 1795282569.5 420.6\n{a}@@ 1795282570.5 421.6\n{b}")
    (out / "txgs.txt").write_text(f"@@ 1795282570.5 421.6\n{(FIX / 'txgs.txt').read_text()}")
    shutil.copyfile(FIX / "zpool-iostat-Hpvyl.txt", out / "zpool_iostat.txt")
    s = parse_sampler_dir(out)
    arc = s["arc"].set_index("metric")["value"]
    # dt = 1795282570.5 - 1795282569.5 = 1 s: 404 misses, 1554 / 1958 hits
    assert arc["misses_s"] == 404 and arc["hit_ratio"] == pytest.approx(1554 / 1958)
    assert (s["arc"]["t_s"] == 1795282570.5).all()
    txg = s["txg"]
    assert sorted(txg["txg"].unique()) == list(range(5, 79))  # committed only: 79 is still open
    assert set(txg["device"]) == {"tank"}
    t5 = txg[(txg.txg == 5) & (txg.metric == "nwritten")]
    assert t5["value"].item() == 163840
    assert t5["t_s"].item() == pytest.approx(1795282570.5 - 421.6 + 104.99261523)
    zp = s["zpool"]
    assert set(zp["t_s"]) == {1795282570, 1795282572, 1795282573}
    assert set(zp["device"]) == {"tank", "raidz1-0", "vdb", "vdc", "vdd", "vdf", "vdg"}
    assert not s["disk"].empty


def test_parse_empty_sampler_dir(tmp_path):
    s = parse_sampler_dir(tmp_path)
    assert set(s) == {"disk", "cpu", "arc", "zpool", "txg"} and all(df.empty for df in s.values())
    assert isinstance(s["disk"], pd.DataFrame)


def test_sampler_script_is_posix_sh():
    text = sampler_script()
    assert text.startswith("#!/bin/sh") and "trap cleanup TERM" in text and "[[" not in text
    if shutil.which("dash"):
        subprocess.run(["dash", "-n"], input=text, text=True, check=True)
    with pytest.raises(ValueError):
        sampler_argv("s.sh", "/tmp/o", 0)



def test_last_stamps_of_a_real_sampler_dir_match_the_parsers(tmp_path):
    """measure() waits on these stamps before stopping the sampler (the window's last second)."""
    from zbench_lib.measure.runner import last_stamps
    fixture = FIX / "zpool-iostat-Hpvyl.txt"
    bindir = fake_zpool(tmp_path, f"cat {fixture}\nexec sleep 300\n")
    out, rc, _ = run_sampler(tmp_path, 2.2, path_prefix=bindir)
    assert rc == 0
    files = [out / f for f in ("diskstats.txt", "stat.txt", "arcstats.txt", "zpool_iostat.txt")]
    res = subprocess.run(["tail", "-c", "32768", *map(str, files)], capture_output=True, text=True)
    stamps = last_stamps(res.stdout)
    series = parse_sampler_dir(out)
    assert stamps["diskstats.txt"] == pytest.approx(series["disk"]["t_s"].max())
    assert stamps["stat.txt"] == pytest.approx(series["cpu"]["t_s"].max())
    assert stamps["zpool_iostat.txt"] == pytest.approx(series["zpool"]["t_s"].max())
    assert "arcstats.txt" not in stamps and "arcstats.txt" in res.stderr   # no ZFS here: not waited for


# --- a snapshot at once on SIGUSR1, sent by the wrapper fio runs in (docs/methods.md 7.1) ---

needs_linux = pytest.mark.skipif(not shutil.which("sh") or not Path("/proc/diskstats").exists(),
                                 reason="needs Linux")


def disk_stamps(out: Path) -> list[float]:
    file = out / "diskstats.txt"
    return [b[0] for b in split_snapshots(file.read_text())] if file.exists() else []


def wait_for_blocks(out: Path, n: int, timeout_s: float) -> list[float]:
    deadline = time.monotonic() + timeout_s
    while len(stamps := disk_stamps(out)) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return stamps


def start_slow_sampler(tmp_path, interval_s=5):
    """A sampler whose own rhythm (5 s) cannot explain a block that arrives within 1.5 s."""
    script = tmp_path / "sampler.sh"
    script.write_text(sampler_script())
    out = tmp_path / "out"
    proc = subprocess.Popen(sampler_argv(str(script), str(out), interval_s, ""),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = wait_for_blocks(out, 1, 10)
    assert len(first) == 1 and (out / "sampler.pid").exists()
    time.sleep(0.3)                                   # well into its sleep
    return proc, out


def stop(proc) -> tuple[int, float]:
    """TERM the sampler; its exit status and how long it took to end."""
    start = time.monotonic()
    proc.terminate()
    rc = proc.wait(timeout=10)
    return rc, time.monotonic() - start


@needs_linux
def test_sampler_snapshots_at_once_on_usr1_and_still_stops_on_term(tmp_path):
    proc, out = start_slow_sampler(tmp_path)
    try:
        sent, sent_epoch = time.monotonic(), time.time()
        os.kill(proc.pid, 10)                         # SIGUSR1 (nice execs sh: the pid is the sampler's)
        stamps = wait_for_blocks(out, 2, 5)
        took = time.monotonic() - sent
        assert len(stamps) == 2 and took < 1.5, (stamps, took)
        assert stamps[1] >= sent_epoch - 0.05          # stamped after the signal, not before it
        # and its rhythm goes on from there: no third block within the next second
        assert len(wait_for_blocks(out, 3, 1.0)) == 2
    finally:
        rc, took = stop(proc)
    assert rc == 0 and took < 2, (rc, took)
    assert parse_sampler_dir(out)["disk"]["t_s"].nunique() == 1   # one interval from the two blocks


@needs_linux
def test_snap_after_runs_the_command_then_signals_its_sampler(tmp_path):
    proc, out = start_slow_sampler(tmp_path)
    wrapper = tmp_path / "snap_after.sh"
    wrapper.write_text(snap_after_script())
    try:
        command = ["sh", "-c", "sleep 0.2; echo out; echo err >&2; exit 3"]
        started = time.time()
        res = subprocess.run([*snap_after_argv(str(wrapper), str(out)), *command],
                             capture_output=True, text=True, timeout=10)
        ended = time.time()
        # the command's status and output, as if it had run alone, then the host's clock after it
        # exited (measure's t1) as the last line
        t1, stdout = snap_after_t1(res.stdout)
        assert (res.returncode, stdout, res.stderr) == (3, "out\n", "err\n")
        assert res.stdout.splitlines()[-1].startswith("zbench-t1 ") and started + 0.2 <= t1 <= ended
        stamps = wait_for_blocks(out, 2, 5)
        assert len(stamps) == 2 and ended - 0.25 < stamps[1] < ended + 1.0, (stamps, ended)
    finally:
        rc, _ = stop(proc)
    assert rc == 0


@needs_linux
def test_snap_after_signals_no_process_but_its_sampler(tmp_path):
    """A pid file whose process is not this run's sampler (it ended, the pid was reused):
    USR1 would end that process, so it is left alone; the command's status is kept."""
    wrapper = tmp_path / "snap_after.sh"
    wrapper.write_text(snap_after_script())
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        out = tmp_path / "out"
        out.mkdir()
        (out / "sampler.pid").write_text(f"{bystander.pid}\n")
        res = subprocess.run([*snap_after_argv(str(wrapper), str(out)), "true"], timeout=10)
        assert res.returncode == 0
        time.sleep(0.2)
        assert bystander.poll() is None
        (out / "sampler.pid").unlink()                  # no sampler at all: still the command's status
        assert subprocess.run([*snap_after_argv(str(wrapper), str(out)), "false"], timeout=10).returncode == 1
    finally:
        bystander.kill()
        bystander.wait()


def test_snap_after_t1_reads_the_wrappers_last_line_and_leaves_the_rest():
    assert snap_after_t1("zbench-t1 1700000000.123456789\n") == (1700000000.123456789, "")
    assert snap_after_t1("fio said\nzbench-t1 12.5\n") == (12.5, "fio said\n")
    assert snap_after_t1("fio said\n") == (None, "fio said\n")         # no line: t1 is read apart
    assert snap_after_t1("zbench-t1 \n") == (None, "zbench-t1 \n")     # date failed


def test_snap_after_script_is_posix_sh():
    text = snap_after_script()
    assert text.startswith("#!/bin/sh") and "[[" not in text and "USR1" in sampler_script()
    if shutil.which("dash"):
        subprocess.run(["dash", "-n"], input=text, text=True, check=True)


STARTER = """
import sys, time
from zbench_lib.hosts.base import LocalHost
from zbench_lib.measure.counters import sampler_argv
import subprocess
# as runner.measure starts it: in a session of its own (it outlives this process), its input a pipe
proc = LocalHost().popen(sampler_argv(sys.argv[1], sys.argv[2], 1, sys.argv[3], tied=True), stdin=subprocess.PIPE)
print(proc.pid, flush=True)
time.sleep(600)
"""


@needs_linux
def test_a_tied_sampler_stops_when_the_process_that_started_it_is_killed(tmp_path):
    """A worker killed mid-run leaves no sampler looping on its host (nor its zpool iostat)."""
    script = tmp_path / "sampler.sh"
    script.write_text(sampler_script())
    # a `zpool iostat` that never ends by itself, and says who it is
    zpool = fake_zpool(tmp_path, f"echo $$ > {tmp_path}/zpool.pid\nexec sleep 600\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent),
               PATH=f"{zpool}:{os.environ['PATH']}")
    out = tmp_path / "out"
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(script), str(out), "tank"], env=env,
                               stdout=subprocess.PIPE, text=True)
    sampler = int(starter.stdout.readline())
    wait_for_blocks(out, 2, 10)
    iostat = int((tmp_path / "zpool.pid").read_text())
    assert alive(sampler) and alive(iostat)
    starter.kill()
    starter.wait()
    try:
        deadline = time.monotonic() + 10
        while alive(sampler) or alive(iostat):
            assert time.monotonic() < deadline, "the sampler or its zpool iostat outlived their starter"
            time.sleep(0.1)
    finally:
        for pid in (sampler, iostat):       # a failed check leaves nothing running
            if alive(pid):
                os.kill(pid, 15)
    assert not (out / ".zpool.fifo").exists()                  # it stopped as on TERM, cleaning up
