"""One Surface protocol (sweeps/running/surface.py) and the pool request the executor runs (pool_request.py).

Checked without a host: each target of the shipped specs gets the surface its kind, fs and access
say and each pool request its ground (a zpool, or no pool for raw disks); every pool request of
every shipped spec pickles and reads back the plan's records unchanged; and the executor's one
loop, on a zpool whose creation, prefill, mounts and fio are faked, makes and takes down each
surface in order (the raw disks' side of the same loop: tests/test_raw_surface.py). The lab runs
them for real (tests/test_pool_factors_lab.py, test_raw_surface_lab.py, test_dataset_sweep_lab.py).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest

from zbench_lib.hosts.node import Node
from zbench_lib.sweeps.running import pool_run, zfs_surfaces
from zbench_lib.sweeps.running.executor import _run_pool, _schedule
from zbench_lib.sweeps.running.faults import FaultInjector
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.planning.records import Target
from zbench_lib.sweeps.running.pool_request import pool_requests
from zbench_lib.sweeps.spec.raw_cells import RawLayout
from zbench_lib.sweeps.running.raw_surface import NoPool, RawSurface
from zbench_lib.sweeps.spec.sweep_spec import load_spec
from zbench_lib.sweeps.store.store import Store
from zbench_lib.sweeps.running.surfaces import SURFACES, ground_of, surface_of
from zbench_lib.sweeps.running.zfs_surfaces import DatasetSurface, FsOnZvolSurface, NfsSurface, ZfsPool, ZvolSurface
from zbench_lib.zfs.layouts import Layout
from zbench_lib.zfs.pools import TargetInfo
from zbench_lib.zfs.targets import Zvol

ROOT = Path(__file__).parent.parent
SPECS = sorted((ROOT / "tests" / "specs").glob("*.yaml")) + sorted((ROOT / "templates" / "sweeps").glob("*.yaml"))


def _plan(name: str):
    return expand(load_spec(ROOT / "tests" / "specs" / f"{name}.yaml"))


# --- which surface, which ground ------------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    ("tiny", {ZvolSurface}),
    ("dataset", {DatasetSurface}),
    ("fs-on-zvol", {ZvolSurface, FsOnZvolSurface}),      # fs: [none, ext4]
    ("nfs", {DatasetSurface, NfsSurface}),               # access: [local, nfs]
    ("raw", {RawSurface, ZvolSurface}),                  # layout: [raw, stripe]
])
def test_each_target_gets_the_surface_its_kind_fs_and_access_say(spec, expected):
    plan = _plan(spec)
    by_surface = {}
    for t in plan.targets:
        surface = surface_of(t)
        by_surface.setdefault(type(surface), []).append(t)
    assert set(by_surface) == expected
    for t in by_surface.get(FsOnZvolSurface, []):
        assert t.kind == "zvol" and t.fs == "ext4" and t.file_bytes < t.size_bytes
    for t in by_surface.get(NfsSurface, []):
        assert t.kind == "dataset" and t.access == "nfs"
    for t in by_surface.get(ZvolSurface, []) + by_surface.get(DatasetSurface, []):
        assert t.fs in (None, "none") and t.access in (None, "local")
    assert all(t.kind == "raw" for t in by_surface.get(RawSurface, []))


def test_every_surface_is_registered_under_its_own_name():
    assert sorted(SURFACES) == ["dataset", "fs-on-zvol", "iscsi-clients", "nfs", "nfs-clients", "raw", "zvol"]
    assert all(s.name == name for name, s in SURFACES.items())


def test_raw_disks_stand_on_no_pool_and_the_rest_on_a_zpool():
    grounds = {r.label: ground_of(r) for r in pool_requests(_plan("raw"))}
    assert {label: type(g) for label, g in grounds.items()} == {"raw(2)": NoPool, "stripe(2)": ZfsPool}


# --- the pool request -----------------------------------------------------------------------------

@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_pool_request_pickles_and_reads_back_the_plans_records(path):
    plan = expand(load_spec(path))
    requests = pool_requests(plan)
    assert [r.pool_id for r in requests] == [p.pool_id for p in plan.pool_order()]
    assert pickle.loads(pickle.dumps(requests)) == requests          # what a dispatch to a worker needs
    pools = {p.pool_id: p for p in plan.pools}
    for r in requests:
        p = pools[r.pool_id]
        assert isinstance(r.layout, RawLayout if p.kind == "raw" else Layout)
        assert r.layout.to_dict() == p.layout and r.label == p.label and r.pooled == (p.kind != "raw")
        assert r.replicate == p.pool_replicate and r.pool_id in plan.blocks[r.block - 1]
        assert r.settings == p.settings and r.zfs == p.zfs
        mine = [t for t in plan.targets if t.pool_id == r.pool_id]
        assert sorted(r.targets, key=lambda t: t.target_id) == sorted(mine, key=lambda t: t.target_id)
        # the targets in the order their first runs come in the plan
        first = {}
        for run in plan.runs:
            first.setdefault(run.target_id, run.order)
        assert [first[t.target_id] for t in r.targets] == sorted(first[t.target_id] for t in r.targets)


def test_what_the_spec_says_around_a_pool_rides_in_its_request():
    plain, cached = sorted(pool_requests(_plan("l2arc-warmup")), key=lambda r: r.layout.cache)
    assert cached.l2arc_warmup == {"until": 0.8, "max_s": 120, "chunk_s": 5} == plain.l2arc_warmup
    assert cached.settings == {"cache": 1, "zfs_arc_max": "100663296", "l2arc_write_max": "67108864"}
    assert [r.fill for r in pool_requests(_plan("fill"))] == ["none", "60%", "whole"]    # the fill factor's levels
    assert all(r.fault_study for r in pool_requests(_plan("fault")))
    assert not any(r.fault_study for r in pool_requests(_plan("tiny")))


def test_a_target_key_the_record_does_not_know_is_refused_not_dropped():
    t = _plan("tiny").targets[0].to_dict()
    assert Target.from_dict(t).to_dict() == t
    with pytest.raises(TypeError, match="unexpected keyword argument 'newkey'"):
        Target.from_dict({**t, "newkey": 1})


# --- the loop on a zpool, its surfaces made and taken down in order ------------------------------------

class FakePool:
    """zfs.pools.Pool as the ZFS ground and surfaces use it, recording what is made and destroyed."""

    def __init__(self, host, layout, devices, name, owned_devices=False, allow_signatures=()):
        self.host, self.name, self.topology, self.log = host, name, {"devices": list(devices)}, host.log

    def __enter__(self):
        self.log.append("zpool create")
        return self

    def __exit__(self, *exc):
        self.log.append("zpool destroy")

    def status(self):
        return {"scan": "none", "capacity_pct": 3, "fragmentation_pct": 0}

    def work_dir(self):
        return f"/var/tmp/zbench/{self.name}"

    def create_target(self, target):
        full = f"{self.name}/{target.name}"
        self.log.append(f"zfs create {full}")
        path = f"/dev/zvol/{full}" if isinstance(target, Zvol) else f"/{full}/fio.data"
        return TargetInfo(target, full, path, {"compression": "off", "primarycache": "metadata"}, {})


class Mount:
    """A filesystem made on a zvol, or an NFS mount of a dataset: mounted while entered."""

    def __init__(self, kind, log, host, path, **kw):
        self.kind, self.log = kind, log
        self.file_path = f"/mnt/{kind}/{path.rsplit('/', 1)[-1]}/fio.data"
        self.log.append(f"{kind} mount {path}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.log.append(f"{self.kind} unmount")

    def readback(self):
        return {"mounted": True}


@pytest.fixture
def zpool_loop(tmp_path, monkeypatch):
    log, seen = [], []
    monkeypatch.setattr(zfs_surfaces, "Pool", FakePool)
    monkeypatch.setattr(zfs_surfaces, "FsOnZvol", lambda host, path, **kw: Mount("ext4", log, host, path, **kw))
    monkeypatch.setattr(zfs_surfaces, "NfsDatastore", lambda host, path, **kw: Mount("nfs", log, host, path, **kw))

    def prefill(pool, tinfo, level, **kw):
        log.append(f"prefill {tinfo.path}")
        return {"prefill_bytes": kw["size_bytes"], "compressratio": 1.0}

    def measured_run(site, fio_target, plan, run):
        log.append(f"fio {fio_target.path}")
        seen.append((site, fio_target))
        attempt = store.begin_attempt(run.run_id)
        store.complete_attempt(run.run_id, attempt, {**plan.run_meta(run), **fio_target.meta})
        return [{"direction": "read", "iops": 1.0, "flagged": False, "truth_flags": ""}], 2.0

    monkeypatch.setattr(zfs_surfaces, "prefill", prefill)
    monkeypatch.setattr(pool_run, "measured_run", measured_run)
    store = None

    def run(spec: str):
        nonlocal store
        plan = _plan(spec)
        store = Store.create(tmp_path, plan.spec.text, plan, sweep_id=spec)
        sched = _schedule(plan, store, lambda a, m: [{"direction": "read", "iops": 1.0, "flagged": False}])
        host = SimpleNamespace(name="fake", log=log, run=lambda argv, **kw: SimpleNamespace(stdout="5\n"))
        node = Node(host, ("/dev/disk/by-id/d0", "/dev/disk/by-id/d1"), (), owned=True)
        (request,) = pool_requests(plan)
        secs = _run_pool(request, node, store, sched, FaultInjector(None, store, node), False, None)
        return secs, [e["event"] for e in store.events()]
    yield run, log, seen
    store.close()


def test_ext4_on_a_zvol_is_made_on_it_written_through_it_and_unmounted_before_the_pool_goes(zpool_loop):
    run, log, seen = zpool_loop
    secs, events = run("fs-on-zvol")
    assert secs == 4.0 and len(seen) == 2
    zvol, ext4 = (log.index(f"fio {ft.path}") for _, ft in seen)
    assert log[ext4 - 3].startswith("zfs create") and log[ext4 - 2].startswith("ext4 mount /dev/zvol/")
    assert log[ext4 - 1] == f"prefill {seen[1][1].path}" and seen[1][1].path.startswith("/mnt/ext4/")
    assert log[ext4 + 1:] == ["ext4 unmount", "zpool destroy"]
    assert seen[0][1].path.startswith("/dev/zvol/") and log[zvol - 1] == f"prefill {seen[0][1].path}"
    site, fs = seen[1]
    assert site.pool_name == site.pool.name and fs.target_name.startswith(site.pool.name + "/")
    assert fs.size_bytes == fs.context.file_bytes < 128 * 1024 ** 2 and fs.meta["target"] == fs.target_name
    assert fs.context.data_device_count == 2 and fs.context.txg_timeout_s == 5
    made = events.index("filesystem made")
    assert events[made + 1] == "prefilled" and made < events.index("pool teardown")
    assert [e for e in events if e.startswith("pool")] == ["pool creating", "pool created", "pool teardown"]


def test_an_nfs_datastore_is_prefilled_locally_then_mounted_and_unmounted_before_the_pool_goes(zpool_loop):
    run, log, seen = zpool_loop
    _, events = run("nfs")
    local, nfs = (ft for _, ft in seen)
    assert local.path.endswith("/fio.data") and not local.path.startswith("/mnt/")
    assert nfs.path.startswith("/mnt/nfs/") and nfs.context.file_bytes == 48 * 1024 ** 2
    at = log.index(f"fio {nfs.path}")
    assert log[at - 2].startswith("prefill /zbench-") and log[at - 1].startswith("nfs mount /zbench-")
    assert log[at + 1:] == ["nfs unmount", "zpool destroy"]
    assert events.index("nfs datastore mounted") < events.index("pool teardown")
