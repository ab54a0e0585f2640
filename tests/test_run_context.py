"""The run context is a typed record whose run.json form is unchanged (issue 28, item 3).

Every shipped example's raw run.json context goes through `RunContext` and comes back the same
object: keys, values, their order and the JSON text. A context the surfaces build today records
its keys in the order the dict literals before it wrote them.
"""

from __future__ import annotations

import dataclasses
import json
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from zbench_lib.measure.run_context import Ground, RunContext, RunFacts

EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "examples"


def _contexts(example: str):
    with tarfile.open(EXAMPLES / example / "raw.tar.xz") as tar:
        for member in tar:
            if member.name.endswith("/run.json"):
                yield member.name, json.loads(tar.extractfile(member).read())["context"]


@pytest.mark.parametrize("example", sorted(p.parent.name for p in EXAMPLES.glob("*/raw.tar.xz")))
def test_every_shipped_context_round_trips_unchanged(example):
    seen = 0
    for name, record in _contexts(example):
        back = RunContext.from_record(record).to_record()
        assert back == record and list(back) == list(record), name
        assert json.dumps(back, indent=1, default=str) == json.dumps(record, indent=1, default=str), name
        seen += 1
    assert seen > 10


def test_a_record_read_by_attribute_as_the_dict_was():
    record = {"file_bytes": 1024, "cache": "cold", "lab": True, "space": {"used_bytes": 7}, "someday": [1]}
    ctx = RunContext.from_record(record)
    assert (ctx.file_bytes, ctx.cache, ctx.lab, ctx.space["used_bytes"]) == (1024, "cold", True, 7)
    assert ctx.ground is Ground.ZPOOL and not ctx.no_pool
    # absent keys read as the readers of the dict assumed: None, and no data declared = incompressible
    assert (ctx.compressratio, ctx.fault_study, ctx.incompressible_intended) == (None, None, True)
    assert ctx.extra == {"someday": [1]} and ctx.to_record() == record      # a later version's key is kept
    assert RunContext.from_record({"surface": "raw"}).no_pool


def test_after_the_run_a_known_key_keeps_its_place_and_a_new_one_goes_last():
    ctx = RunContext.recording(cache="cold", compressratio=1.0, block_bytes=None)
    after = ctx.with_recorded(pool_health_after={"state": "ONLINE"}).with_recorded(compressratio=1.3)
    assert list(after.to_record()) == ["cache", "compressratio", "block_bytes", "pool_health_after"]
    assert after.compressratio == 1.3 and ctx.compressratio == 1.0              # frozen: a new context
    with pytest.raises(TypeError, match="no key cach"):
        RunContext.recording(cach="cold")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.cache = "warm"


# The keys as the surfaces' dict literals wrote them before the dataclass (zfs_surfaces.pool_context
# plus ZvolSurface.prepare's, raw_surface.raw_context), then run_loop.declared_data, then measure's.
ZFS_KEYS = ["file_bytes", "cache", "scan_at_start", "pool_capacity_pct", "pool_fragmentation_pct", "compressratio",
            "compression", "lab", "qemu_pid", "space", "txg_timeout_s", "block_bytes", "disk_model_iops",
            "disk_model_bw", "disk_model", "data_device_count", "settings_readback", "l2arc_warmup", "fault_study",
            "compressible_percent_declared", "incompressible_intended", "pool_health_after"]
RAW_KEYS = ["surface", "file_bytes", "cache", "scan_at_start", "pool_capacity_pct", "pool_fragmentation_pct",
            "compressratio", "space", "txg_timeout_s", "lab", "qemu_pid", "block_bytes", "data_device_count",
            "settings_readback", "disk_model_iops", "disk_model_bw", "disk_model", "compressible_percent_declared",
            "incompressible_intended", "raw_devices_after"]


class _Host:
    def run(self, argv, check=True, timeout=None):
        return SimpleNamespace(stdout="5")


def test_the_surfaces_record_their_keys_in_the_order_run_json_always_had():
    from zbench_lib.sweeps.running.raw_surface import raw_context
    from zbench_lib.sweeps.running.run_loop import declared_data
    from zbench_lib.sweeps.running.zfs_surfaces import pool_context
    node = SimpleNamespace(host=_Host(), is_lab=True, qemu_pid=42, disk_model="hdd")
    request = SimpleNamespace(layout=SimpleNamespace(total_disks=2), fault_study=False)
    pool = SimpleNamespace(status=lambda: {"scan": "none", "capacity_pct": 3, "fragmentation_pct": 0})
    site = SimpleNamespace(node=node, request=request, pool=pool, model=None, readback={})
    target = SimpleNamespace(file_bytes=None, size_bytes=64 << 20, kind="zvol", volblocksize_bytes=16384)
    tinfo = SimpleNamespace(properties={"primarycache": "all", "compression": "off"})
    zfs = pool_context(site, tinfo, target, {}, None).with_recorded(**declared_data("randread", {}))
    zfs = zfs.with_recorded(pool_health_after={"state": "ONLINE", "not_online": []}, compressratio=1.0)
    assert list(zfs.to_record()) == ZFS_KEYS
    raw = raw_context(node, "hdd", [{"logical_block_size": 512}], 1 << 20, {}, {})
    raw = raw.with_recorded(**declared_data("randread", {}), raw_devices_after={"devices": [], "missing": []})
    assert list(raw.to_record()) == RAW_KEYS and raw.no_pool and raw.to_record()["surface"] == "raw"


def test_facts_add_what_is_derived_and_keep_the_record():
    ctx = RunContext.recording(cache="cold", block_bytes=None)
    facts = RunFacts.judging(ctx, block_bytes=4096, iops_series=[1.0], host_other_cores=0.2)
    assert (facts.cache, facts.block_bytes, facts.iops_series, facts.host_other_cores) == ("cold", 4096, [1.0], 0.2)
    with pytest.raises(TypeError):
        RunFacts.judging(ctx, nonsense=1)
