"""Faults on purpose in the lab: a disk pulled mid-run (QMP), a disk slowed to a crawl.

The runs during and after the fault are flagged, the sweep goes on with the next pool,
nothing measured is lost, the replaced disk's resilver is timed, and the lab ends with
every disk plugged in and no pool left.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core import paths
from zbench_lib.hosts.qmp import QMPClient
from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPECS = Path(__file__).parent / "specs"


def _sweep(spec: str, out: Path) -> Path:
    env = dict(os.environ, ZBENCH_LAB="pytest")
    code = ("import sys\nfrom zbench_lib.sweeps.running.executor import run_sweep\n"
            "print('DIR', run_sweep(sys.argv[1], sys.argv[2], progress=False))\n")
    res = subprocess.run([sys.executable, "-c", code, str(SPECS / spec), str(out)], env=env,
                         capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    return Path(res.stdout.split("DIR ")[-1].split()[0])


def _events(sweep_dir: Path, name: str) -> list[dict]:
    return [e for e in map(json.loads, (sweep_dir / "events.jsonl").read_text().splitlines())
            if e["event"] == name]


def _lab_devices_present(lab) -> set:
    with QMPClient(paths.labs_dir() / "pytest" / "qmp.sock") as q:
        return {p["name"] for p in q.command("qom-list", path="/machine/peripheral")}


def test_a_disk_pulled_mid_run_is_flagged_and_the_sweep_goes_on(lab, lab_host, tmp_path):
    sweep_dir = _sweep("fault.yaml", tmp_path)
    df = pd.read_parquet(sweep_dir / "results.parquet")
    plan = json.loads((sweep_dir / "plan.json").read_text())
    assert sorted(df["run_id"].unique()) == sorted(r["run_id"] for r in plan["runs"])   # nothing lost
    # Two pools (a mirror of 2, then a raidz1 of 3): the second ran after the first lost a disk.
    assert [p["label"] for p in plan["pools"]] == ["1x mirror(2)", "1x raidz1(3)"]
    injected = _events(sweep_dir, "fault injected")
    assert len(injected) == 2 and {e["kind"] for e in injected} == {"remove"}     # one per pool
    faulted = {e["run_id"] for e in injected}
    assert {e["pool_id"] for e in injected} == {"p01", "p02"}
    rows = df[df["direction"] == "write"].set_index("run_id")
    # The run during which the disk went, and the later run on the degraded pool: flagged.
    assert rows.loc[sorted(faulted), "flag_device_lost"].tolist() == [True] * 2
    assert rows["flag_device_lost"].all(), rows["flag_device_lost"].to_dict()
    # In a fault study a lost disk describes the run (a degraded pool is what was asked): kept.
    assert rows.loc[sorted(faulted), "described_flags"].str.contains("device_lost").all()
    # (A busy machine may still invalidate a run for host contention: that is another check.)
    assert rows["fault_study"].all() and not rows["truth_flags"].str.contains("device_lost").any()
    # Each pool resilvered twice, idle and under the random-read load, in its own drawn order,
    # with its time, and came back ONLINE each time.
    resilvers = _events(sweep_dir, "resilver")
    assert not _events(sweep_dir, "resilver failed")
    by_pool = {}
    for e in resilvers:
        by_pool.setdefault(e["pool_id"], []).append(e)
    assert sorted(by_pool) == sorted(p["pool_id"] for p in plan["pools"])
    for pid, pair in by_pool.items():
        assert [e["order"] for e in pair] == [1, 2], pair
        assert sorted(e["under_load"] for e in pair) == [False, True], pair
        assert pair[0]["replacement"] == pair[1]["device"] and pair[1]["replacement"] == pair[0]["device"]
        assert [e["fill"] for e in pair] == ["whole", "whole"]
    assert all(e["seconds"] > 0 and e["health_after"] == "ONLINE" for e in resilvers), resilvers
    assert all(e["resilvered_bytes"] > 0 for e in resilvers), resilvers
    loaded = [e for e in resilvers if e["under_load"]]
    assert all(e["load"] == "randread 16k qd4x1" and e["load_read_iops"] > 0 and e["load_write_iops"] == 0
               for e in loaded), loaded
    assert all(e["load_read_iops"] is None for e in resilvers if not e["under_load"])
    assert {(sweep_dir / "resilver" / f"{e['pool_id']}-{e['order']}" / "fio.json").is_file() for e in loaded} == {True}
    print("\n" + pd.DataFrame(resilvers)[["layout", "order", "under_load", "seconds", "resilvered",
                                          "allocated_bytes", "capacity_pct", "load_read_iops"]].to_string(index=False))
    # The lab is whole again: every data disk plugged in and seen by the guest, no pool left.
    assert {f"dev-{s}" for s in lab.cfg.data_serials} <= _lab_devices_present(lab)
    for dev in lab.data_disks:
        assert lab_host.run(["test", "-e", dev], check=False).ok, dev
    assert find_leftovers(lab_host) == []
    # No disk keeps the label of a pool still "active" (state 0; a drive swapped out while
    # OFFLINE would, and `zpool create` then refuses it as part of a potentially active pool).
    for dev in lab.data_disks:
        labels = lab_host.run(["zdb", "-l", f"{dev}-part1"], check=False).stdout
        assert not re.search(r"^\s*state: 0\s*$", labels, re.M), (dev, labels[:400])


def test_a_disk_slowed_to_a_crawl_is_flagged_slow_and_its_speed_restored(lab, lab_host, tmp_path):
    dirty_max = "/sys/module/zfs/parameters/zfs_dirty_data_max"
    dirty_before = lab_host.read_text(dirty_max).strip()
    sweep_dir = _sweep("fault-slow.yaml", tmp_path)
    df = pd.read_parquet(sweep_dir / "results.parquet")
    rows = df[df["direction"] == "write"].set_index("run_id")
    (faulted,) = {e["run_id"] for e in _events(sweep_dir, "fault injected")}
    started = {e["run_id"]: e["ts"] for e in _events(sweep_dir, "run started")}
    done = {e["run_id"]: e["ts"] for e in _events(sweep_dir, "run completed")}
    print("\nrun wall times (s):", {r: round((pd.Timestamp(done[r]) - pd.Timestamp(started[r])).total_seconds(), 1)
                                    for r in done if r in started}, "faulted:", faulted)
    assert rows.loc[faulted, "flag_slow_device"] == True, rows.loc[faulted, "not_judged"]  # noqa: E712
    assert rows.loc[faulted, "flag_device_lost"] == False                   # noqa: E712  slow, not lost
    others = rows.drop(index=faulted)
    assert (others["flag_slow_device"] == False).all(), others["flag_slow_device"].to_dict()  # noqa: E712
    assert [e["kind"] for e in _events(sweep_dir, "fault undone")] == ["slow"]
    # the spec's dirty-data cap (a shorter drain through the crawl) is put back for later tests
    assert lab_host.read_text(dirty_max).strip() == dirty_before
    assert find_leftovers(lab_host) == []
