"""Faults on purpose in the lab: a disk pulled mid-run (QMP), a disk slowed to a crawl.

The runs during and after the fault are flagged, the sweep goes on with the next pool,
nothing measured is lost, the replaced disk's resilver is timed, and the lab ends with
every disk plugged in and no pool left.
"""

import json
import os
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
    code = ("import sys\nfrom zbench_lib.sweeps.executor import run_sweep\n"
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
    injected = _events(sweep_dir, "fault injected")
    assert len(injected) == 3 and {e["kind"] for e in injected} == {"remove"}
    faulted = {e["run_id"] for e in injected}
    rows = df[df["direction"] == "write"].set_index("run_id")
    # The run during which the disk went, and the later run on the degraded pool: flagged.
    assert rows.loc[sorted(faulted), "flag_device_lost"].tolist() == [True] * 3
    assert rows["flag_device_lost"].all(), rows["flag_device_lost"].to_dict()
    assert rows.loc[sorted(faulted), "truth_flags"].str.contains("device_lost").all()
    # The replaced disk resilvered, per pool, with its time, and the pool came back ONLINE.
    resilvers = _events(sweep_dir, "resilver")
    assert [e["layout"] for e in resilvers] == [p["label"] for p in plan["pools"]]
    assert all(e["seconds"] > 0 and e["health_after"] == "ONLINE" for e in resilvers), resilvers
    print("\n" + pd.DataFrame(resilvers)[["layout", "seconds", "resilvered", "allocated_bytes",
                                          "capacity_pct"]].to_string(index=False))
    # The lab is whole again: every data disk plugged in and seen by the guest, no pool left.
    assert {f"dev-{s}" for s in lab.cfg.data_serials} <= _lab_devices_present(lab)
    for dev in lab.data_disks:
        assert lab_host.run(["test", "-e", dev], check=False).ok, dev
    assert find_leftovers(lab_host) == []


def test_a_disk_slowed_to_a_crawl_is_flagged_slow_and_its_speed_restored(lab, lab_host, tmp_path):
    sweep_dir = _sweep("fault-slow.yaml", tmp_path)
    df = pd.read_parquet(sweep_dir / "results.parquet")
    rows = df[df["direction"] == "write"].set_index("run_id")
    (faulted,) = {e["run_id"] for e in _events(sweep_dir, "fault injected")}
    assert rows.loc[faulted, "flag_slow_device"] == True, rows.loc[faulted, "not_judged"]  # noqa: E712
    assert rows.loc[faulted, "flag_device_lost"] == False                   # noqa: E712  slow, not lost
    others = rows.drop(index=faulted)
    assert (others["flag_slow_device"] == False).all(), others["flag_slow_device"].to_dict()  # noqa: E712
    assert [e["kind"] for e in _events(sweep_dir, "fault undone")] == ["slow"]
    assert find_leftovers(lab_host) == []
