"""A declared L2ARC warm-up through a sweep: the spec key, the plan's estimate, the executor's step
(warmed on every setup of a target, a resumed one too), the result columns and the report's caveat.

The host under the warm-up is the scripted fake of test_l2arc_warmup (a unit test of the wiring);
the columns are derived from a real run of the scaling example, with a warm-up record added to its
context, the way the executor records one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from test_l2arc_warmup import FakeArcHost
from zbench_lib.analysis.claims.caveats import caveats
from zbench_lib.analysis.report.data_dictionary import undocumented
from zbench_lib.core.events import event_name
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.running.executor import _schedule
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.planning.records import Target
from zbench_lib.sweeps.store.publish import unpack_raw
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store
from zbench_lib.sweeps.running.warmup import cache_devices, warm_target
from zbench_lib.zfs.layouts import Layout

MiB, GiB = 1024 ** 2, 1024 ** 3
SCALING = Path(__file__).resolve().parent.parent / "data" / "examples" / "scaling"
COLUMNS = ("l2arc_warmup_s", "l2arc_warm_fraction", "l2arc_warm_until", "l2arc_warm_reached", "l2arc_warmup_stop")


def spec_text(**changes) -> str:
    d = {"question": "Does a warmed L2ARC serve the reads?", "surface": "dataset", "host": "lab",
         "lab": {"disks": 1, "disk_size": "1G", "model": "custom:iops=400,bw=100M", "extra_disks": 1},
         "factors": {"layout": ["stripe"], "disks": [1], "cache": [0, 1]},
         "target": {"size": "192M", "recordsize": "128k", "compression": "off"},
         "workloads": [{"name": "randread", "overrides": {"runtime_s": 4, "ramp_time_s": 1, "direct": 0}},
                       {"name": "randwrite", "overrides": {"runtime_s": 4, "ramp_time_s": 1}}],
         "repetitions": {"fixed": 2, "pool_replicates": 1}, "seed": 3,
         "warmup": {"l2arc": {"until": "80%", "max_s": 120, "chunk_s": 5}}, **changes}
    return yaml.safe_dump(d)


def test_the_declaration_is_normalised_and_nfs_reads_may_be_direct():
    s = parse_spec(spec_text())
    assert s.warmup == {"l2arc": {"until": 0.8, "max_s": 120, "chunk_s": 5}}
    assert parse_spec(spec_text(warmup={"l2arc": {"until": "100%", "max_s": 60}})).warmup["l2arc"]["chunk_s"] == 10
    # through NFS, the client's O_DIRECT reaches the server as a buffered read: through the ARC
    nfs = yaml.safe_load(spec_text())
    nfs["target"]["access"] = "nfs"
    nfs["workloads"][0]["overrides"].pop("direct")
    assert parse_spec(yaml.safe_dump(nfs)).warmup is not None
    assert parse_spec(spec_text(warmup=None)).warmup is None


def test_the_estimate_counts_max_s_for_each_warmed_target_and_says_so():
    plan, bare = expand(parse_spec(spec_text())), expand(parse_spec(spec_text(warmup=None)))
    e = plan.estimates
    assert e["l2arc_warmed_targets"] == 1 and e["l2arc_warmup_max_s"] == 120          # the cache pool's target
    assert e["wall_s"] == pytest.approx(bare.estimates["wall_s"] + 120)
    assert e["wall_max_s"] == pytest.approx(bare.estimates["wall_max_s"] + 120)
    assert "L2ARC warm-up: 1 target(s)" in plan.describe() and "120 s in all" in plan.describe()
    assert "warm-up" not in bare.describe() and "l2arc_warmup_max_s" not in bare.estimates
    # plan.json names the warm-up only when one is declared: a sweep started before resumes as before
    assert plan.to_dict()["warmup"] == {"l2arc": {"until": 0.8, "max_s": 120, "chunk_s": 5}}
    assert "warmup" not in bare.to_dict()
    replicated = expand(parse_spec(spec_text(repetitions={"fixed": 2, "pool_replicates": 3})))
    assert replicated.estimates["l2arc_warmup_max_s"] == 3 * 120                      # every replicate warms


def test_the_cache_devices_are_taken_from_the_pools_device_list():
    layout = Layout("mirror", 2, 1, log=1, cache=2, special=2, special_mirror=True)
    devs = ["/dev/d1", "/dev/d2", "/dev/log", "/dev/c1", "/dev/c2", "/dev/s1", "/dev/s2"]
    assert cache_devices(layout, devs) == ["/dev/c1", "/dev/c2"]
    assert cache_devices(Layout("stripe", 2, 1), devs) == []


def on_pool(host):
    """What warm_target uses of a Pool: its host and its work directory."""
    return SimpleNamespace(host=host, work_dir=lambda: "/var/tmp/zbench/zb")


class Recorder:
    def __init__(self):
        self.events = []

    def record(self, event, **fields):          # refuses a name outside the vocabulary, as Store.record does
        self.events.append({"event": event_name(event).value, **fields})


def _target(plan, cached: bool) -> Target:
    pools = {p.pool_id: p for p in plan.pools}
    return next(t for t in plan.targets if (pools[t.pool_id].layout["cache"] > 0) == cached)


def _declared(spec) -> dict | None:
    return (spec.warmup or {}).get("l2arc")


def test_a_target_on_a_pool_with_cache_devices_is_warmed_and_recorded():
    plan = expand(parse_spec(spec_text()))
    host, store = FakeArcHost([0, 80 * MiB, 170 * MiB]), Recorder()
    pool, tinfo = on_pool(host), SimpleNamespace(path="/zb/p02-t01/fio.data")
    rec = warm_target(_declared(plan.spec), store, pool, tinfo, _target(plan, True), ["/dev/vdc"],
                      {"compressratio": 1.0})
    assert rec["stopped"] == "reached" and rec["target_bytes"] == 192 * MiB and rec["direct"] is False
    (event,) = store.events
    assert event["event"] == "l2arc warmed" and event["target_id"] == _target(plan, True).target_id
    assert event["goal_bytes"] == int(0.8 * 192 * MiB) and event["chunks"] == 2
    # no cache device, or no declaration: nothing read, nothing recorded
    for spec, caches in ((plan.spec, []), (parse_spec(spec_text(warmup=None)), ["/dev/vdc"])):
        idle = FakeArcHost([0])
        assert warm_target(_declared(spec), store, on_pool(idle), tinfo, _target(plan, True), caches, {}) is None
        assert idle.calls == [] and len(store.events) == 1


def test_a_zvol_is_read_with_o_direct():
    text = yaml.safe_load(spec_text())
    text.update(surface="zvol", target={"volsize": "192M", "compression": "off"},
                factors={"layout": ["stripe"], "disks": [1], "cache": [1], "volblocksize": ["16k"]})
    plan = expand(parse_spec(yaml.safe_dump(text)))
    host = FakeArcHost([0, 170 * MiB])
    rec = warm_target(_declared(plan.spec), Recorder(), on_pool(host), SimpleNamespace(path="/dev/zvol/zb/t"),
                      plan.targets[0], ["/dev/vdc"], {})
    assert rec["direct"] is True and all("--direct=1" in c for c in host.calls if "fio" in c)


def test_a_resumed_target_is_warmed_again_on_its_new_pool(tmp_path):
    """A target whose warm-up is recorded but whose runs are not all done: the resume sets it up
    again (the schedule has work for it) and the setup warms it again, like the prefill."""
    text = spec_text()
    plan = expand(parse_spec(text, name="warm"))
    target = _target(plan, True)
    store = Store.create(tmp_path, text, plan, sweep_id="warm")
    pool, tinfo = on_pool(FakeArcHost([0, 170 * MiB])), SimpleNamespace(path="/zb/a/fio.data")
    warm_target(_declared(plan.spec), store, pool, tinfo, target, ["/dev/vdc"], {})
    first = next(r for r in plan.runs if r.target_id == target.target_id)
    attempt = store.begin_attempt(first.run_id)
    (attempt / "fio.json").write_text("{}")
    store.complete_attempt(first.run_id, attempt, plan.run_meta(first))
    store.close()                                   # the session dies here: the pool with it

    resumed = Store.resume(tmp_path / "warm", text, plan)
    sched = _schedule(plan, resumed, lambda path, meta: [{"direction": "read", "iops": 1.0, "flagged": False}])
    assert sched.has_work(target.target_id) and sched.done_count == 1
    again = FakeArcHost([5 * MiB, 170 * MiB])           # a new pool: its cache starts cold
    rec = warm_target(_declared(plan.spec), resumed, on_pool(again), tinfo, target, ["/dev/vdc"], {})
    assert again.fio_runtimes() == [5] and rec["l2_size_before"] == 5 * MiB
    warmed = [e for e in resumed.events() if e["event"] == "l2arc warmed"]
    assert [e["target_id"] for e in warmed] == [target.target_id] * 2
    resumed.close()


@pytest.fixture(scope="module")
def real_attempt(tmp_path_factory):
    raw = unpack_raw(SCALING, tmp_path_factory.mktemp("scaling"))
    attempt = next(a for a in sorted(raw.glob("*/attempt-*")) if (a / "COMPLETE").exists())
    return attempt, json.loads((attempt / "meta.json").read_text())


def test_the_rows_of_a_warmed_target_carry_the_columns_and_others_do_not(real_attempt, tmp_path):
    attempt, meta = real_attempt
    plain = parse_results(attempt, meta)
    assert plain and not any(c in r for r in plain for c in COLUMNS)
    warmed = tmp_path / "attempt-1"
    shutil.copytree(attempt, warmed)
    run = json.loads((warmed / "run.json").read_text())
    run["context"]["l2arc_warmup"] = {"seconds": 42.3, "warm_fraction": 0.61, "until": 0.9, "reached": False,
                                      "stopped": "plateau"}
    (warmed / "run.json").write_text(json.dumps(run))
    rows = parse_results(warmed, meta)
    assert {c: rows[0][c] for c in COLUMNS} == {"l2arc_warmup_s": 42.3, "l2arc_warm_fraction": 0.61,
                                                "l2arc_warm_until": 0.9, "l2arc_warm_reached": False,
                                                "l2arc_warmup_stop": "plateau"}
    assert {k: v for k, v in rows[0].items() if k not in COLUMNS} == plain[0]       # nothing else changes
    assert undocumented(COLUMNS) == []
    # in one table with unwarmed rows, the columns are empty there, and parquet keeps that
    df = pd.DataFrame(plain + rows)
    df.to_parquet(tmp_path / "r.parquet", index=False)
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert back["l2arc_warm_reached"].isna().sum() == len(plain) and back["l2arc_warmup_s"].notna().sum() == len(rows)


def test_the_report_names_read_rows_whose_warm_up_fell_short():
    df = pd.DataFrame({"direction": ["read", "read", "read", "write", "read"],
                       "l2arc_warm_reached": [True, False, False, False, None],
                       "l2arc_warm_fraction": [0.93, 0.61, 0.7, 0.61, None],
                       "l2arc_warm_until": [0.9, 0.9, 0.9, 0.9, None],
                       "l2arc_warmup_stop": ["reached", "plateau", "time limit", "plateau", None]})
    (text,) = caveats(df)
    assert text.startswith("The L2ARC warm-up did not reach its goal for 2 of 3 warmed read rows")
    assert "held 61-70% of min(target, cache devices) where 90% was declared" in text
    assert "plateau: 1" in text and "time limit: 1" in text and "kept, not excluded" in text
    assert caveats(df[df["l2arc_warm_reached"].ne(False)]) == []          # every warm-up reached
    assert caveats(pd.DataFrame({"iops": [1.0]})) == []                   # no warm-up declared
