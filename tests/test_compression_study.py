"""A compression study must not exclude its own runs (issue 27, item 6).

The sweep's path is run without a host: the executor's target context, the target loop and its
repetition rule, `measured_run` with fio's numbers and the counters written by hand, as a lab
raidz1 of three disks gives them for 1M sequential I/O on data declared 50% compressible,
compression off, lz4 and zstd. Before declarations the context said every run's data was meant
incompressible (`incompressible_intended` True, hard-wired), so the compressible_data check
invalidated every lz4 and zstd run, the sweep replaced them until its attempts ran out, and the
analysis excluded them all; the compressed cold reads, which read half of fio's bytes from the
disks while the prefetcher made most demand reads ARC hits, were also taken for reads from memory
(cache_served). Here no run is excluded, and each run's context says what was declared.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from zbench_lib import analysis as A
from zbench_lib.hosts.node import Node
from zbench_lib.measure import truth
from zbench_lib.measure.runner import RunResult
from zbench_lib.sweeps.running import run_loop
from zbench_lib.sweeps.running.executor import _schedule, run_target
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.running.surface import FioTarget, Site
from zbench_lib.sweeps.running.zfs_surfaces import pool_context
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store
from zbench_lib.zfs.pools import TargetInfo
from zbench_lib.zfs.targets import Dataset
from zbench_lib.measure.run_context import RunFacts

MiB = 1024 * 1024
SPEC = {
    "question": "How much sequential bandwidth do lz4 and zstd give on 50% compressible data?",
    "surface": "dataset", "host": "lab", "lab": {"disks": 3, "disk_size": "2G", "model": "hdd", "extra_disks": 0},
    "factors": {"layout": ["raidz1"], "disks": [3], "compression": ["off", "lz4", "zstd"]},
    "target": {"size": "512M", "recordsize": "128k", "primarycache": "metadata"},
    "workloads": [{"name": "seqwrite", "overrides": {"runtime_s": 20, "ramp_time_s": 5, "compressible_percent": 50}},
                  {"name": "seqread", "overrides": {"runtime_s": 20, "ramp_time_s": 5, "compressible_percent": 50}}],
    "repetitions": {"fixed": 3, "pool_replicates": 1, "max_attempts": 5, "metric": "bw_bytes_s"}, "seed": 28}
# What `zfs get compressratio` says of each target, prefilled and after a run: fio's 50% buffers
# (random then zeros in every 512 bytes) in 128K records, 4K sectors.
RATIO = {"off": 1.00, "lz4": 1.88, "zstd": 1.96}
FIO_BYTES, WINDOW_S = 400 * MiB, 20.0


def fio_rows(template: str) -> list[dict]:
    direction = "write" if template == "seqwrite" else "read"
    return [{"direction": direction, "rw": template.removeprefix("seq"), "io_bytes": FIO_BYTES, "bs_bytes": MiB,
             "total_ios": FIO_BYTES // MiB, "iops": FIO_BYTES / MiB / WINDOW_S, "bw_bytes_s": FIO_BYTES / WINDOW_S}]


def counters(template: str, compression: str) -> dict:
    """The disks move fio's bytes / compressratio: writes with raidz1's parity (x 1.5 on three
    disks), reads without; the prefetcher turns 70% of a cold sequential read's demand reads into
    ARC hits although every byte came from the disks."""
    physical = FIO_BYTES / RATIO[compression]
    write, read = (physical * 1.5, 0.0) if template == "seqwrite" else (0.0, physical)
    return dict(dev_read_bytes=read, dev_write_bytes=write, pool_read_bytes=read, pool_write_bytes=write,
                arc_hit_ratio=0.7, arc_demand_data_hit_ratio=0.7 if read else float("nan"), window_s=WINDOW_S,
                dev_iops_busiest=120.0, dev_bw_bytes_s_busiest=15 * MiB, cpu_usr_pct=12.0, cpu_sys_pct=18.0,
                cpu_iowait_pct=60.0, cpu_idle_pct=10.0, cpu_steal_pct=0.0, pool_scrub_io_samples=0,
                pool_trim_io_samples=0, pool_rebuild_io_samples=0, missing_layers="")


def fake_measure(host, *, pool, target_path, devices, workload, overrides, remote_dir, raw_dir, context,
                 target_name=None, sample_interval_s=1.0):
    """What runner.measure records: the context it was given, the ratio read after the run."""
    ctx = context.with_recorded(compressratio=RATIO[target_name.rsplit("-", 1)[-1]])
    raw_dir.mkdir(parents=True, exist_ok=True)
    (raw_dir / "run.json").write_text(json.dumps({"workload": workload, "context": ctx.to_record()}))
    return RunResult(raw_dir, (0.0, WINDOW_S), ctx)


def fake_parse(attempt_dir, meta) -> list[dict]:
    """rows.parse_results on the hand-written layers: the truth checks as derive_rows calls them."""
    ctx = json.loads((attempt_dir / "run.json").read_text())["context"]
    f = meta["factors"]
    rows, c = fio_rows(f["template"]), counters(f["template"], f["compression"])
    cols = truth.flag_columns(truth.truth_checks(rows, c, RunFacts.of(**ctx)))
    return [{**r, **c, **cols, **f, "run_id": meta.get("run_id"), "cell_id": meta.get("cell_id")} for r in rows]


@pytest.fixture
def study(tmp_path, monkeypatch):
    monkeypatch.setattr(run_loop, "measure", fake_measure)
    monkeypatch.setattr(run_loop, "parse_results", fake_parse)
    text = yaml.safe_dump(SPEC)
    plan = expand(parse_spec(text, name="compression"))
    store = Store.create(tmp_path, text, plan, sweep_id="compression")
    host = SimpleNamespace(name="fake", run=lambda argv, check=True: SimpleNamespace(stdout="5"))
    pool = SimpleNamespace(name="zb", status=lambda: {"scan": "none", "capacity_pct": 30, "fragmentation_pct": 1})
    rows, seen = [], []
    sched = _schedule(plan, store, fake_parse)
    for t in plan.targets:
        tinfo = TargetInfo(Dataset(t.target_id), f"zb/{t.target_id}-{t.compression}", "/zb/f.data",
                           {"compression": t.compression, "primarycache": "metadata"}, {})
        node = Node(host=host, data_devices=(), extra_devices=(), owned=False)
        request = PoolRequest.from_plan(plan, next(p for p in plan.pools if p.pool_id == t.pool_id))
        site = Site(request, node, store, (), "/var/tmp/zb", pool, "hdd", {})
        ctx = pool_context(site, tinfo, t, {"compressratio": RATIO[t.compression]}, None)
        fio_target = FioTarget(tinfo.path, ctx.file_bytes, tinfo.full_name, ctx, meta={})

        def one(run, fio_target=fio_target, site=site):
            got, seconds = run_loop.measured_run(site, fio_target, plan, run)
            rows.extend(got)
            seen.append(json.loads((store.path / "raw" / run.run_id).glob("attempt-*").__next__()
                                   .joinpath("run.json").read_text())["context"])
            return got, seconds
        run_target(store, sched, t.target_id, one)
    yield plan, store, pd.DataFrame(rows), seen
    store.close()


def test_a_compression_sweep_excludes_none_of_its_runs(study):
    plan, store, runs, seen = study
    judged = [e for e in store.events() if e["event"] == "run judged"]
    assert [e["invalidating_flags"] for e in judged] == [[]] * 18           # 6 cells x 3 runs, no replacement
    done = {e["cell_id"]: (e["admissible"], e["excluded"], e["attempts"])
            for e in store.events() if e["event"] == "repetitions done"}
    assert sorted(done.values()) == [(3, 0, 3)] * 6
    assert len(A.select_admissible(runs)) == 18 and not runs["flagged"].any()
    # the check judged every run against what was declared, and passed it
    assert runs["flag_compressible_data"].tolist() == [False] * 18
    assert runs["flag_cache_served"].dropna().tolist() == [False] * 9       # the reads
    assert runs["flag_write_amplification"].dropna().tolist() == [False] * 9  # the writes
    # each run's context carried the declaration and its target's compression
    assert {(c["compressible_percent_declared"], c["incompressible_intended"]) for c in seen} == {(50, False)}
    assert sorted({c["compression"] for c in seen}) == ["lz4", "off", "zstd"]


def test_the_compression_study_table_shows_logical_and_physical_bandwidth(study):
    """fio's MiB/s beside the disks': a seqread of lz4 data gives fio 20 MiB/s from
    20 / 1.88 = 10.64 MiB/s on the disks; a seqwrite on zstd 20 x 1.5 / 1.96 = 15.31 MiB/s."""
    from zbench_lib.analysis.report.pub_tables import display_table, summary_table
    from zbench_lib.measure.rows import physical_bw
    _plan, _store, runs, _seen = study
    runs = runs.assign(physical_bw_bytes_s=[physical_bw(r, r) for r in runs.to_dict("records")],
                       compressratio_after_run=runs["compression"].map(RATIO))
    table = summary_table(runs)
    row = lambda comp, w: table[(table["compression"] == comp) & (table["workload"] == w)].iloc[0]  # noqa: E731
    assert row("lz4", "seqread")["mib_s"] == pytest.approx(20.0)
    assert row("lz4", "seqread")["physical_mib_s"] == pytest.approx(10.64, abs=0.005)
    assert row("zstd", "seqwrite")["physical_mib_s"] == pytest.approx(15.31, abs=0.005)
    assert row("off", "seqwrite")["physical_mib_s"] == pytest.approx(30.0)
    assert row("zstd", "seqread")["compressratio"] == 1.96 and row("off", "seqread")["compressratio"] == 1.0
    shown = list(display_table(table).columns)
    at = shown.index("mib_s")
    # sequential workloads: MiB/s is the metric they are judged in, with its interval (methods §9)
    assert shown[at:at + 5] == ["mib_s", "mib_s_ci", "physical_mib_s", "compressratio", "p99_ms"]
    # a study where neither compression nor the declared data varies keeps the table it had
    assert "physical_mib_s" not in summary_table(runs[runs["compression"] == "lz4"]).columns


def test_physical_bandwidth_is_the_disks_bytes_in_the_rows_direction_over_the_window():
    from zbench_lib.measure.rows import physical_bw
    c = {"dev_read_bytes": 200 * MiB, "dev_write_bytes": 600 * MiB, "window_s": 20.0}
    assert physical_bw({"direction": "read"}, c) == 10 * MiB
    assert physical_bw({"direction": "write"}, c) == 30 * MiB
    assert pd.isna(physical_bw({"direction": "read"}, {"window_s": 20.0}))          # no device counters
    assert pd.isna(physical_bw({"direction": "read"}, {**c, "window_s": 0}))
