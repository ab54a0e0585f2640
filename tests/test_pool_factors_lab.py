"""#14's pool factors from their specs, on real OpenZFS: a mirrored log, an L2ARC, a special
vdev with small blocks, per-role disk models, a module parameter, dRAID, and ext4 on a zvol.
Each is read back (topology, properties, throttles, parameters) and what was set around a
pool is put back after it."""

import json
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.hosts import lab_faults
from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPECS = Path(__file__).parent / "specs"


def _events(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]


def test_pool_settings_reach_each_pool_and_are_put_back(lab, lab_host, sweep_on_lab, tmp_path):
    txg_before = lab_host.read_text("/sys/module/zfs/parameters/zfs_txg_timeout").strip()
    serials = [Path(d).name.removeprefix("virtio-") for d in lab.data_disks[:1] + lab.extra_disks[:2]]
    throttles_before = {s: lab_faults.throttle_of(lab.dir, s) for s in serials}
    assert txg_before != "3"

    res = sweep_on_lab(SPECS / "pool-settings.yaml", tmp_path, "settings")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "settings"
    df = pd.read_parquet(sweep_dir / "results.parquet")
    assert len(df) == 2 and sorted(df["special"]) == [0, 1]
    # read back, per run: the parameter as ZFS reported it, the models as QEMU applies them
    assert set(df["param_zfs_txg_timeout"]) == {"3"}
    assert set(df["log_model_readback"]) == {"custom:iops=2000,bw=200M"}
    assert set(df["data_model_readback"]) == {"custom:iops=300,bw=80M"} == set(df["disk_model"])
    assert set(df["disk_model_iops"]) == {300}
    events = _events(sweep_dir)
    created = {e["pool_id"]: e["topology"] for e in events if e["event"] == "pool created"}
    assert len(created) == 2
    for topo in created.values():
        assert topo["data"] == [["leaf", 0]] and topo["log"] == [["mirror", 2]] and topo["cache"] == [["leaf", 0]]
    assert sorted(len(t["special"]) for t in created.values()) == [0, 1]
    models = [e for e in events if e["event"] == "disk models set"]
    assert len(models) == 2
    for e in models:
        log_serials = [s for s, m in e["models"].items() if m.startswith("custom:iops=2000")]
        assert len(log_serials) == 2 and all(e["throttles"][s]["iops"] == 2000 for s in log_serials)
    sets = [e for e in events if e["event"] == "module parameters set"]
    restored = [e for e in events if e["event"] == "module parameters restored"]
    assert len(sets) == len(restored) == 2
    assert all(e["params"]["zfs_txg_timeout"]["readback"] == "3" for e in sets)
    for meta in (sweep_dir / "raw").rglob("meta.json"):
        assert json.loads(meta.read_text())["target_properties"]["special_small_blocks"] == 16384
    # everything set around the pools is back as it was
    assert lab_host.read_text("/sys/module/zfs/parameters/zfs_txg_timeout").strip() == txg_before
    assert {s: lab_faults.throttle_of(lab.dir, s) for s in serials} == throttles_before
    assert find_leftovers(lab_host) == []


def test_a_draid_pool_with_a_distributed_spare_runs_beside_raidz(lab_host, sweep_on_lab, tmp_path):
    res = sweep_on_lab(SPECS / "draid.yaml", tmp_path, "draid")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "draid"
    df = pd.read_parquet(sweep_dir / "results.parquet").set_index("layout")
    assert sorted(df.index) == ["draid2", "raidz2"]
    assert df.loc["draid2", "draid_data"] == 2 and df.loc["draid2", "draid_spares"] == 1
    assert df.loc["draid2", "data_disks"] == 2.5 and df.loc["raidz2", "data_disks"] == 4
    assert (df["iops"] > 0).all()
    topo = {e["layout"]: e["topology"] for e in _events(sweep_dir) if e["event"] == "pool created"}
    draid = next(t for label, t in topo.items() if "draid2" in label)
    assert draid["data"] == [["draid2", 6]] and draid.get("spare") == [["dspare", 0]], draid
    assert find_leftovers(lab_host) == []


def test_ext4_on_a_zvol_beside_the_zvol_itself(lab_host, sweep_on_lab, tmp_path):
    res = sweep_on_lab(SPECS / "fs-on-zvol.yaml", tmp_path, "fs")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "fs"
    df = pd.read_parquet(sweep_dir / "results.parquet").set_index("fs")
    assert sorted(df.index) == ["ext4", "none"] and (df["iops"] > 0).all()
    assert df.loc["ext4", "file_size_bytes"] == 96 * 1024 ** 2
    made = [e for e in _events(sweep_dir) if e["event"] == "filesystem made"]
    assert len(made) == 1 and made[0]["fs"] == "ext4" and made[0]["fs_block_size"] == 4096, made
    jobs = {json.loads((p.parent / "meta.json").read_text())["factors"]["fs"]:
                (p.parent / "fio" / "job.fio").read_text()
            for p in (sweep_dir / "raw").rglob("run.json")}
    assert "/mnt/zbench/" in jobs["ext4"] and "/dev/zvol/" in jobs["none"]
    # nothing is left mounted once the pool is gone
    assert "/mnt/zbench" not in lab_host.read_text("/proc/self/mounts")
    assert find_leftovers(lab_host) == []


def test_an_nfs_datastore_beside_the_dataset_used_locally(lab_host, sweep_on_lab, tmp_path):
    res = sweep_on_lab(SPECS / "nfs.yaml", tmp_path, "nfs")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "nfs"
    df = pd.read_parquet(sweep_dir / "results.parquet").set_index("access")
    assert sorted(df.index) == ["local", "nfs"] and (df["iops"] > 0).all()
    (mounted,) = [e for e in _events(sweep_dir) if e["event"] == "nfs datastore mounted"]
    assert mounted["nfs_vers"] == "3" and "sync" in mounted["export_options"], mounted
    assert "sync" in mounted["mount_vfs_options"] + mounted["mount_options"], mounted
    jobs = {json.loads((p.parent / "meta.json").read_text())["factors"]["access"]:
                (p.parent / "fio" / "job.fio").read_text()
            for p in (sweep_dir / "raw").rglob("run.json")}
    assert "/mnt/zbench/nfs-" in jobs["nfs"] and "/mnt/zbench" not in jobs["local"]
    assert "/mnt/zbench" not in lab_host.read_text("/proc/self/mounts")
    assert lab_host.run(["exportfs", "-v"]).stdout.strip() == ""
    assert find_leftovers(lab_host) == []
