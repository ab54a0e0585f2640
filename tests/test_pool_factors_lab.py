"""#14's pool factors from their specs, on real OpenZFS: a mirrored log, an L2ARC, a special
vdev with small blocks, per-role disk models, a module parameter, dRAID, ext4 on a zvol and an
NFS datastore. Each is read back (topology, properties, throttles, parameters) and what was set
around a pool is put back after it.

Two sweeps, each run once for the module (a sweep's fixed start, a child python with provenance
and the environment record, is paid twice, not four times): the zvol factors (dRAID beside raidz,
ext4 on a zvol) in pool-factors-zvol.yaml, the dataset ones (pool settings, NFS) in
pool-factors-dataset.yaml. A spec has one surface, so the two cannot be one sweep."""

import json
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.hosts import lab_faults
from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPECS = Path(__file__).parent / "specs"
TXG_TIMEOUT = "/sys/module/zfs/parameters/zfs_txg_timeout"


def _events(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]


def _jobs(sweep_dir: Path, factor: str) -> list[tuple]:
    """(the run's level of `factor`, its fio job) for every run."""
    return [(json.loads((p.parent / "meta.json").read_text())["factors"][factor],
             (p.parent / "fio" / "job.fio").read_text()) for p in sorted((sweep_dir / "raw").rglob("run.json"))]


@pytest.fixture(scope="module")
def zvol_sweep(shared_sweep_on_lab, tmp_path_factory) -> Path:
    """pool-factors-zvol.yaml, run once: a dRAID and a raidz pool, each with a zvol and ext4 on a zvol."""
    out = tmp_path_factory.mktemp("zvol")
    res = shared_sweep_on_lab(SPECS / "pool-factors-zvol.yaml", out, "zvol")
    assert res.returncode == 0, res.stderr[-3000:]
    return out / "zvol"


@pytest.fixture(scope="module")
def dataset_sweep(lab, lab_host, shared_sweep_on_lab, tmp_path_factory) -> tuple[Path, dict]:
    """pool-factors-dataset.yaml, run once, and what it must put back as it was before it: the
    module parameter and the throttles of the disks it models (the data disk, the two log disks)."""
    serials = [Path(d).name.removeprefix("virtio-") for d in lab.data_disks[:1] + lab.extra_disks[:2]]
    before = {"txg": lab_host.read_text(TXG_TIMEOUT).strip(),
              "throttles": {s: lab_faults.throttle_of(lab.dir, s) for s in serials}}
    out = tmp_path_factory.mktemp("dataset")
    res = shared_sweep_on_lab(SPECS / "pool-factors-dataset.yaml", out, "dataset")
    assert res.returncode == 0, res.stderr[-3000:]
    return out / "dataset", before


def test_pool_settings_reach_each_pool_and_are_put_back(lab, lab_host, dataset_sweep):
    sweep_dir, before = dataset_sweep
    assert before["txg"] != "3"
    df = pd.read_parquet(sweep_dir / "results.parquet")
    # special [0, 1] x access [local, nfs]: a run each
    assert len(df) == 4 and sorted(df["special"]) == [0, 0, 1, 1]
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
    metas = list((sweep_dir / "raw").rglob("meta.json"))
    assert len(metas) == 4
    for meta in metas:
        assert json.loads(meta.read_text())["target_properties"]["special_small_blocks"] == 16384
    # everything set around the pools is back as it was
    assert lab_host.read_text(TXG_TIMEOUT).strip() == before["txg"]
    assert {s: lab_faults.throttle_of(lab.dir, s) for s in before["throttles"]} == before["throttles"]
    assert find_leftovers(lab_host) == []


def test_an_nfs_datastore_beside_the_dataset_used_locally(lab_host, dataset_sweep):
    sweep_dir, _ = dataset_sweep
    df = pd.read_parquet(sweep_dir / "results.parquet").set_index("access")
    # in each of the two pools, the dataset used locally and through NFS
    assert sorted(df.index) == ["local", "local", "nfs", "nfs"] and (df["iops"] > 0).all()
    mounted = [e for e in _events(sweep_dir) if e["event"] == "nfs datastore mounted"]
    assert len(mounted) == 2, mounted
    for e in mounted:
        assert e["nfs_vers"] == "3" and "sync" in e["export_options"], e
        assert "sync" in e["mount_vfs_options"] + e["mount_options"], e
    jobs = _jobs(sweep_dir, "access")
    assert sorted(access for access, _ in jobs) == ["local", "local", "nfs", "nfs"]
    for access, job in jobs:
        assert ("/mnt/zbench/nfs-" in job) if access == "nfs" else ("/mnt/zbench" not in job), (access, job)
    assert "/mnt/zbench" not in lab_host.read_text("/proc/self/mounts")
    assert lab_host.run(["exportfs", "-v"]).stdout.strip() == ""
    assert find_leftovers(lab_host) == []


def test_a_draid_pool_with_a_distributed_spare_runs_beside_raidz(lab_host, zvol_sweep):
    df = pd.read_parquet(zvol_sweep / "results.parquet").set_index("layout")
    # each layout with fs none and ext4: a run each
    assert sorted(df.index) == ["draid2", "draid2", "raidz2", "raidz2"]
    draid_rows, raidz_rows = df.loc[["draid2"]], df.loc[["raidz2"]]
    assert (draid_rows["draid_data"] == 2).all() and (draid_rows["draid_spares"] == 1).all()
    assert (draid_rows["data_disks"] == 2.5).all() and (raidz_rows["data_disks"] == 4).all()
    assert (df["iops"] > 0).all()
    topo = {e["layout"]: e["topology"] for e in _events(zvol_sweep) if e["event"] == "pool created"}
    assert len(topo) == 2
    draid = next(t for label, t in topo.items() if "draid2" in label)
    assert draid["data"] == [["draid2", 6]] and draid.get("spare") == [["dspare", 0]], draid
    assert find_leftovers(lab_host) == []


def test_ext4_on_a_zvol_beside_the_zvol_itself(lab_host, zvol_sweep):
    df = pd.read_parquet(zvol_sweep / "results.parquet").set_index("fs")
    # in each of the two pools, fio on the zvol and on ext4 made on a twin zvol
    assert sorted(df.index) == ["ext4", "ext4", "none", "none"] and (df["iops"] > 0).all()
    assert (df.loc[["ext4"], "file_size_bytes"] == 48 * 1024 ** 2).all()       # 75% of the 64M zvol
    made = [e for e in _events(zvol_sweep) if e["event"] == "filesystem made"]
    assert len(made) == 2 and all(e["fs"] == "ext4" and e["fs_block_size"] == 4096 for e in made), made
    jobs = _jobs(zvol_sweep, "fs")
    assert sorted(fs for fs, _ in jobs) == ["ext4", "ext4", "none", "none"]
    for fs, job in jobs:
        assert ("/mnt/zbench/" in job) if fs == "ext4" else ("/dev/zvol/" in job), (fs, job)
    # nothing is left mounted once the pool is gone
    assert "/mnt/zbench" not in lab_host.read_text("/proc/self/mounts")
    assert find_leftovers(lab_host) == []
