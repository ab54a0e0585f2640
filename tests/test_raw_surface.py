"""Raw disks at run time without a lab: a fake host records every argv, a real store (tmp dir)
takes the events and attempts, and fio itself is replaced (the lab test runs it for real:
tests/test_raw_surface_lab.py). Checked: only the cell's data disks are touched, checked before
any write, read back, prefilled region by region, measured with no pool, and wiped afterwards
even when a run fails; and what the truth checks make of a raw run's context."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.hosts.base import Host, Result
from zbench_lib.hosts.node import Node
from zbench_lib.measure import truth
from zbench_lib.measure.device_health import device_lost
from zbench_lib.measure.runner import _devices_present
from zbench_lib.sweeps.running import pool_run
from zbench_lib.sweeps.running.executor import _run_pool, _schedule
from zbench_lib.sweeps.running.faults import FaultInjector
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.running.raw_surface import check_region, raw_context, raw_disks
from zbench_lib.sweeps.spec.sweep_spec import load_spec
from zbench_lib.sweeps.store.store import Store
from zbench_lib.zfs.models import has_model, predicted_random_read_iops
from zbench_lib.zfs.prefill import prefill_raw
from zbench_lib.zfs.raw_device import RawDevice
from zbench_lib.measure.run_context import RunFacts

SPEC = Path(__file__).parent / "specs" / "raw.yaml"
MiB = 1024 ** 2
BY_ID = "/dev/disk/by-id/virtio-zbdata0"
DISKS = [f"{BY_ID}{i}" for i in range(3)]
REAL = {d: f"/dev/vd{'bcd'[i]}" for i, d in enumerate(DISKS)}


class Proc:
    """What host.popen gives back: a finished process with nothing to say."""

    class _Out:
        def read(self, n=-1):
            return ""

    stdout = stderr = _Out()
    stdin = None

    def wait(self, timeout=None):
        return 0

    def poll(self):
        return 0

    def kill(self):
        pass


class FakeHost(Host):
    """Lab disks by id, partitions left by an earlier pool on the first (until a wipefs), an
    optional mount; records every argv and popen."""

    name = "lab:fake"

    def __init__(self, leftovers=("/dev/vdb",), mounted=()):
        self.calls: list[list[str]] = []
        self.partitions, self.mounted = set(leftovers), set(mounted)

    def run(self, argv, *, timeout=600, check=True, input=None):
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        rc, out = self.respond(argv)
        if check and rc:
            raise CommandError(self.name, argv, rc, "", out)
        return Result(tuple(argv), rc, out, "", 0.0)

    def popen(self, argv, **kwargs):
        self.calls.append([str(a) for a in argv])
        return Proc()

    def _node(self, dev):
        kids = [{"name": f"{dev}1", "path": f"{dev}1", "type": "part", "mountpoints": [None]}] \
            if dev in self.partitions else []
        return {"name": dev, "path": dev, "type": "disk", "fstype": None, "children": kids,
                "mountpoints": ["/srv"] if dev in self.mounted else [None]}

    def respond(self, argv):
        match argv:
            case ["readlink", "-e", path]:
                real = REAL.get(path, path if path.startswith("/dev/vd") else None)
                return (0, real + "\n") if real else (1, "")
            case ["test", "-f", _]:
                return 1, ""
            case ["test", "-b", _]:
                return 0, ""
            case ["lsblk", *_]:
                return 0, json.dumps({"blockdevices": [{"name": "/dev/vda", "path": "/dev/vda", "type": "disk",
                                                        "mountpoints": ["/"]}]
                                      + [self._node(r) for r in REAL.values()]})
            case ["cat", "/proc/swaps"]:
                return 0, "Filename\tType\tSize\tUsed\tPriority\n"
            case ["findmnt", "-n", "-o", "SOURCE", "/"]:
                return 0, "/dev/vda\n"
            case ["zfs", "version"]:
                return 0, "zfs-2.3.1-1~bpo12+1\nzfs-kmod-2.3.1-1~bpo12+1\n"
            case ["zpool", "status", "-P", "-L", "-j"]:
                return 0, json.dumps({"pools": {}})
            case ["zdb", "-l", _]:
                return 2, "failed to unpack label 0\n"
            case ["blkid", *_]:
                return 2, ""
            case ["wipefs", "-a", "-q", dev]:
                self.partitions.discard(dev)
            case ["blockdev", "--getsize64", _]:
                return 0, str(1024 ** 3) + "\n"
            case ["grep", "-H", "", *files]:
                values = {"logical_block_size": "512", "physical_block_size": "512", "rotational": "1",
                          "scheduler": "[none] mq-deadline"}
                return 0, "".join(f"{f}:{values[f.rsplit('/', 1)[1]]}\n" for f in files)
            case ["stat", "-L", "-c", "%f %n", *paths]:
                return 0, "".join(f"61b0 {p}\n" for p in paths if p in REAL or p.startswith("/dev/vd"))
        return 0, ""

    def ran(self, *prefix) -> list[list[str]]:
        return [c for c in self.calls if c[:len(prefix)] == list(prefix)]

    def touched(self, device) -> bool:
        return any(device in " ".join(c) or REAL.get(device, "@") in " ".join(c) for c in self.calls)


# --- the disks: checked before a write, wiped after ------------------------------------------

def test_lab_disks_lose_a_pools_leftovers_then_pass_the_checks_and_are_wiped_on_the_way_out():
    host = FakeHost(leftovers=("/dev/vdb",))
    with raw_disks(host, DISKS[:2], DISKS, owned=True) as raws:
        assert [r.checked for r in raws] == [True, True] and not any(r.wiped for r in raws)
        first_wipe = host.calls.index(["wipefs", "-a", "-q", "/dev/vdb"])
        assert host.ran("zpool", "labelclear", "-f", "/dev/vdb")
        assert first_wipe < max(i for i, c in enumerate(host.calls) if c[:1] == ["lsblk"])   # checked after
        before_exit = len(host.calls)
    wipes = [c for c in host.calls[before_exit:] if c[:1] == ["wipefs"]]
    assert wipes == [["wipefs", "-a", "-q", "/dev/vdc"], ["wipefs", "-a", "-q", "/dev/vdb"]]
    assert all(r.wiped for r in raws) and not host.touched(DISKS[2])
    # fio an interrupted session left on a disk is stopped first, by the device's resolved path
    kills = [c for c in host.calls if c[:2] == ["sh", "-c"]]
    assert [c[-1] for c in kills][:2] == ["/dev/vdb", "/dev/vdc"]


def test_a_real_hosts_disk_with_partitions_is_refused_and_nothing_is_written():
    host = FakeHost(leftovers=("/dev/vdc",))
    with pytest.raises(ConfigError, match=r"has partitions"):
        with raw_disks(host, DISKS[:2], DISKS, owned=False):
            pytest.fail("the block must not run")
    assert not host.ran("zpool", "labelclear")
    # the disk that passed its check is wiped on the way out; the refused one never is
    assert host.ran("wipefs") == [["wipefs", "-a", "-q", "/dev/vdb"]]


def test_a_mounted_lab_disk_is_not_cleared():
    host = FakeHost(leftovers=("/dev/vdb",), mounted=("/dev/vdb",))
    with pytest.raises(ConfigError, match=r"not cleared, it is mounted \(/srv\)"):
        RawDevice(host, DISKS[0], host_devices=DISKS, owned=True).clear_leftovers()
    assert not host.ran("wipefs") and not host.ran("zpool", "labelclear")
    with pytest.raises(ConfigError, match="only a lab disk's leftovers are cleared"):
        RawDevice(host, DISKS[0], host_devices=DISKS).clear_leftovers()


def test_the_region_must_fit_every_disk():
    disks = [{"device": "/dev/sdb", "size_bytes": 1024 ** 3}, {"device": "/dev/sdc", "size_bytes": 64 * MiB}]
    check_region(disks, 64 * MiB)
    with pytest.raises(ConfigError, match=r"raw disks smaller than the 128M region .*: /dev/sdc \(64M\)"):
        check_region(disks, 128 * MiB)


def test_prefill_writes_each_region_once_in_one_job_over_the_disks():
    host = FakeHost()
    names = [DISKS[0], "/dev/disk/by-path/pci-0000:00:1f.2"]
    rec = prefill_raw(host, names, 128 * MiB, "/var/tmp/zbench/x", progress=False)
    (argv,) = [c for c in host.calls if c[:1] == ["fio"]]
    assert rf"--filename={DISKS[0]}:/dev/disk/by-path/pci-0000\:00\:1f.2" in argv
    assert f"--size={256 * MiB}" in argv and "--rw=write" in argv and "--direct=1" in argv
    assert rec["prefill_bytes"] == 256 * MiB and rec["prefill_region_bytes"] == 128 * MiB


# --- a raw pool of a plan, end to end but for fio -----------------------------------------------

def _parse(attempt, meta):
    return [{"direction": "read", "iops": 100.0, "flagged": False, "truth_flags": ""}]


def _setup(tmp_path, monkeypatch, fail=False):
    plan = expand(load_spec(SPEC))
    store = Store.create(tmp_path, plan.spec.text, plan, sweep_id="raw-unit")
    sched = _schedule(plan, store, _parse)
    calls = []

    def fake_run(site, fio_target, plan, run):
        calls.append((site, fio_target))
        if fail:
            raise CommandError(site.host.name, ["fio"], 1, "fio: device gone")
        attempt = store.begin_attempt(run.run_id)
        store.complete_attempt(run.run_id, attempt, {**plan.run_meta(run), **fio_target.meta})
        return _parse(attempt, {}), 3.0

    monkeypatch.setattr(pool_run, "measured_run", fake_run)
    return plan, store, sched, calls


def _run_raw_pool(plan, store, sched, node) -> float:
    """The executor's loop on the plan's raw pool (no faults: a raw sweep refuses them)."""
    request = next(PoolRequest.from_plan(plan, p) for p in plan.pools if p.kind == "raw")
    assert not request.pooled
    return _run_pool(request, node, store, sched, FaultInjector(None, store, node), False, None)


def _fake_node(host, disks) -> Node:
    """The fake host's disks as a node of its own (owned, as a lab's), with no device control."""
    return Node(host, tuple(disks), (), owned=True)


def test_a_raw_pool_checks_reads_back_prefills_measures_bare_and_wipes(tmp_path, monkeypatch):
    plan, store, sched, calls = _setup(tmp_path, monkeypatch)
    host = FakeHost()
    secs = _run_raw_pool(plan, store, sched, _fake_node(host, DISKS))
    assert secs == 3.0 and len(calls) == 1
    site, fio_target = calls[0]
    assert site.pool is None and fio_target.path == tuple(DISKS[:2]) and fio_target.target_name is None
    assert site.devices == tuple(DISKS[:2]) and fio_target.meta["pool"] is None
    assert fio_target.meta["raw_devices"] == DISKS[:2] and fio_target.size_bytes == 2 * 128 * MiB
    ctx = fio_target.context.to_record()      # what run.json records
    assert ctx["surface"] == "raw" and ctx["file_bytes"] == 2 * 128 * MiB and ctx["block_bytes"] == 512
    assert ctx["cache"] == "cold" and ctx["data_device_count"] == 2 and ctx["space"]["prefill_bytes"] == 2 * 128 * MiB
    ev = [e["event"] for e in store.events()]
    order = [ev.index(name) for name in ("raw devices checking", "raw devices checked", "prefilled",
                                         "run completed", "raw devices wiped")]
    assert order == sorted(order)
    checked = next(e for e in store.events() if e["event"] == "raw devices checked")
    assert [d["resolved"] for d in checked["devices"]] == ["/dev/vdb", "/dev/vdc"]
    assert checked["devices"][0]["logical_block_size"] == 512 and checked["layout"] == "raw(2)"
    assert "not_read" in checked["throttles"]         # no device control on the fake host: said, not invented
    fio = next(i for i, c in enumerate(host.calls) if c[:1] == ["fio"])
    # each disk cleared of leftovers and checked (lsblk each time) before the first write
    assert len([c for c in host.calls[:fio] if c[:1] == ["lsblk"]]) == 4
    assert [c for c in host.calls[fio:] if c[:1] == ["wipefs"]] == [["wipefs", "-a", "-q", "/dev/vdc"],
                                                                    ["wipefs", "-a", "-q", "/dev/vdb"]]
    assert not host.touched(DISKS[2]) and not host.ran("zpool", "create")


def test_a_failed_run_still_wipes_the_disks(tmp_path, monkeypatch):
    plan, store, sched, _ = _setup(tmp_path, monkeypatch, fail=True)
    p = next(pl for pl in plan.pools if pl.kind == "raw")
    host = FakeHost()
    with pytest.raises(CommandError, match="device gone"):
        _run_raw_pool(plan, store, sched, _fake_node(host, DISKS))
    fio = next(i for i, c in enumerate(host.calls) if c[:1] == ["fio"])
    assert len([c for c in host.calls[fio:] if c[:1] == ["wipefs"]]) == 2
    work_dir = next(e for e in store.events() if e["event"] == "raw devices checking")["work_dir"]
    assert work_dir.startswith(f"/var/tmp/zbench/zbench-raw-{p.pool_id}-") and ["rm", "-rf", work_dir] in host.calls
    assert "raw devices wiped" not in [e["event"] for e in store.events()]
    # a resumed session stops what the interrupted one left under its work directory first
    again = FakeHost()
    _run_raw_pool(plan, store, sched, _fake_node(again, DISKS))
    assert again.calls[:2] == [["pkill", "-TERM", "-f", f"{work_dir}/"], ["rm", "-rf", work_dir]]


def test_a_host_with_fewer_data_disks_than_the_cell_is_refused_before_a_command(tmp_path, monkeypatch):
    plan, store, sched, _ = _setup(tmp_path, monkeypatch)
    host = FakeHost()
    with pytest.raises(ConfigError, match=r"raw\(2\) needs 2 data disks, the host gave 1"):
        _run_raw_pool(plan, store, sched, _fake_node(host, DISKS[:1]))
    assert host.calls == []


def test_raw_context_without_a_model_or_lab():
    disks = [{"logical_block_size": 512}, {"logical_block_size": 4096}]
    ctx = raw_context(_fake_node(FakeHost(), DISKS), None, disks, 64 * MiB, {}, {}).to_record()
    assert ctx["block_bytes"] == 4096 and ctx["file_bytes"] == 128 * MiB and "disk_model_iops" not in ctx
    assert ctx["qemu_pid"] is None and ctx["lab"] is False      # a node without device control: no QEMU


# --- what the truth checks make of a raw run ---------------------------------------------------

FIO_READ = [{"direction": "read", "rw": "randread", "io_bytes": 512 * MiB, "bs_bytes": 16384, "total_ios": 32768}]
FIO_WRITE = [{"direction": "write", "rw": "randwrite", "io_bytes": 512 * MiB, "bs_bytes": 16384, "total_ios": 32768}]
RAW_CTX = {"surface": "raw", "cache": "cold", "scan_at_start": None, "compressratio": None, "block_bytes": 512,
           "raw_devices_after": {"devices": DISKS[:2], "missing": []}}


def test_a_raw_read_is_judged_on_the_disks_alone():
    c = {"dev_read_bytes": 512 * MiB, "dev_write_bytes": 0.0}       # no pool layer at all
    checks = truth.truth_checks(FIO_READ, c, RunFacts.of(**RAW_CTX))
    assert checks["no_device_io"]["flag"] is False and checks["no_device_io"]["comparisons"] == {"disk:read": False}
    assert checks["cache_served"]["flag"] is False
    assert checks["read_amplification"]["flag"] is False and checks["read_amplification"]["expected"] == 1.0
    assert checks["background_work"]["flag"] is None and "raw disks: no pool" in checks["background_work"]["reason"]
    assert checks["compressible_data"]["flag"] is None and "raw disks" in checks["compressible_data"]["reason"]
    assert checks["device_lost"]["flag"] is False and "all 2 raw disks present" in checks["device_lost"]["reason"]
    zfs = truth.truth_checks(FIO_READ, c, RunFacts.of(**{**RAW_CTX, "surface": None}))
    assert zfs["no_device_io"]["flag"] is None             # a pool's run without its pool layer is not judged


def test_raw_writes_have_no_txg_rounds_and_a_lost_disk_is_flagged():
    series = [1000.0] * 12
    raw = truth.truth_checks(FIO_WRITE, {"dev_write_bytes": 512 * MiB}, RunFacts.of(**RAW_CTX, iops_series=series))
    zfs = truth.truth_checks(FIO_WRITE, {"dev_write_bytes": 512 * MiB},
                             RunFacts.of(iops_series=series, txg_timeout_s=5))
    assert raw["not_steady"]["txg_period_s"] is None and raw["not_steady"]["flag"] is False
    assert zfs["not_steady"]["txg_period_s"] == 5 and zfs["not_steady"]["flag"] is None   # 12 s < 5 rounds of 5 s
    assert raw["write_amplification"]["flag"] is False and math.isclose(raw["write_amplification"]["value"], 1.0)
    gone = {"devices": DISKS[:2], "missing": [DISKS[1]]}
    lost = device_lost([], {}, RunFacts.of(**{**RAW_CTX, "raw_devices_after": gone}))
    assert lost["flag"] is True and lost["devices_not_online"] == DISKS[1]
    unknown = device_lost([], {}, RunFacts.of(surface="raw"))
    assert unknown["flag"] is None and "not recorded" in unknown["reason"]


def test_the_disks_presence_is_read_from_their_mode_not_words():
    host = FakeHost()
    assert _devices_present(host, DISKS[:2] + ["/dev/disk/by-id/gone"]) == {
        "raw_devices_after": {"devices": DISKS[:2] + ["/dev/disk/by-id/gone"], "missing": ["/dev/disk/by-id/gone"]}}
    assert host.ran("stat", "-L", "-c", "%f %n")


def test_the_raw_model_is_n_disks_and_has_no_space_model():
    assert has_model("raw") and not has_model("raw", "space")
    assert has_model("mirror", "space") and not has_model("draid2")
    assert predicted_random_read_iops("raw", 4, 1, 150.0, 16384) == 600.0
    with pytest.raises(ConfigError):
        predicted_random_read_iops("raw", 0, 1, 150.0, 16384)


def test_counters_without_a_pool_summarise_the_disks_and_name_the_missing_layers(tmp_path):
    from zbench_lib.measure.counters import parse_sampler_dir
    from zbench_lib.measure.run_summary import summarize_counters
    src = Path(__file__).parent / "fixtures" / "counters" / "sampler-local"
    for f in src.iterdir():                 # what the sampler writes when given no pool
        if f.name not in ("zpool_iostat.txt", "txgs.txt"):
            (tmp_path / f.name).write_bytes(f.read_bytes())
    s = parse_sampler_dir(tmp_path)
    t = s["disk"]["t_s"]
    out = summarize_counters(s, float(t.min()), float(t.max()), sorted(s["disk"]["device"].unique())[:2], "")
    assert out["dev_read_bytes"] > 0 and math.isnan(out["pool_read_bytes"]) and out["samples_zpool"] == 0
    assert {"zpool", "txg"} <= set(out["missing_layers"].split(","))
