"""The declared L2ARC warm-up on real OpenZFS (tests/specs/l2arc-warmup.yaml): a cache pool's target
is read until arcstats' l2_size holds what was declared, the event and the warmed rows say so, the
measured reads then hit the L2ARC, a pool without a cache device is not warmed and has no warm-up
columns; and a target resumed after a crash is warmed again on its new pool."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "l2arc-warmup.yaml"
MiB = 1024 ** 2
COLUMNS = ("l2arc_warmup_s", "l2arc_warm_fraction", "l2arc_warm_until", "l2arc_warm_reached", "l2arc_warmup_stop")


def _events(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]


def _sweep(spec: Path, out_root: Path, sweep_id: str, resume: Path | None = None, crash_at: str | None = None):
    """run_sweep in a child process on the session's lab (optionally killed at a crash point)."""
    env = dict(os.environ, ZBENCH_LAB="pytest")
    env.pop("ZBENCH_CRASH_AT", None)
    if crash_at:
        env["ZBENCH_CRASH_AT"] = crash_at
    code = ("import sys\nfrom zbench_lib.sweeps.running.executor import run_sweep\n"
            "run_sweep(sys.argv[1], sys.argv[2], resume_dir=sys.argv[3] or None, sweep_id=sys.argv[4], "
            "progress=False)\n")
    return subprocess.run([sys.executable, "-c", code, str(spec), str(out_root), str(resume or ""), sweep_id],
                          env=env, capture_output=True, text=True, timeout=1500)


def _check_warmed(event: dict) -> None:
    """The event's numbers agree with each other and with the declaration."""
    assert event["stopped"] == "reached" and event["reached"] is True, event      # a plateau or the clock: see l2_sizes
    assert event["until"] == 0.8 and event["max_s"] == 120 and event["direct"] is False, event
    assert event["target_bytes"] == 192 * MiB
    # one 256M extra disk: less 4.5M of labels, less min(l2arc_write_max 64M, a quarter) of eviction room
    assert 150 * MiB < event["cache_bytes"] < 256 * MiB, event
    assert event["warm_bytes"] == min(event["target_bytes"], event["cache_bytes"])
    assert event["goal_bytes"] == int(0.8 * event["warm_bytes"])
    assert event["l2_size_after"] >= event["goal_bytes"] and event["warm_fraction"] >= 0.8, event
    assert event["seconds"] <= 120 + 30 and event["chunks"] == len(event["l2_sizes"]) - 1
    if event["chunks"]:
        assert event["read_bytes"] > 0, event          # fio read the target to feed the ARC


def test_a_declared_warm_up_fills_the_l2arc_and_the_reads_then_hit_it(lab_host, tmp_path):
    res = _sweep(SPEC, tmp_path, "warm")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "warm"
    df = pd.read_parquet(sweep_dir / "results.parquet")
    read = df[df["direction"] == "read"].set_index("cache")
    assert sorted(read.index) == [0, 1]
    events = _events(sweep_dir)
    (warmed,) = [e for e in events if e["event"] == "l2arc warmed"]
    _check_warmed(warmed)
    pools = {e["pool_id"]: e["pool"] for e in events if e["event"] == "pool created"}
    hot = read.loc[1]
    assert len(pools) == 2 and warmed["target_id"].split("-")[0] == hot["pool_id"]      # the cache pool's target
    assert warmed["path"] == f"/{pools[hot['pool_id']]}/{warmed['target_id'].replace('-', '_')}/fio.data"
    # in order for that target: prefilled, then warmed, then its run
    at = {(e["event"], e.get("target_id") or e.get("run_id")): i for i, e in enumerate(events)}
    assert at[("prefilled", warmed["target_id"])] < at[("l2arc warmed", warmed["target_id"])] \
        < at[("run started", hot["run_id"])]
    # the warmed target's rows carry the warm-up, exactly as the event has it
    assert bool(hot["l2arc_warm_reached"]) and hot["l2arc_warmup_stop"] == "reached"
    assert hot["l2arc_warm_fraction"] == warmed["warm_fraction"] and hot["l2arc_warm_until"] == 0.8
    assert hot["l2arc_warmup_s"] == warmed["seconds"]
    # ... and its reads then found the L2ARC warm: it served some of what the 96M ARC could not hold
    assert hot["arc_l2_hits"] > 0 and hot["l2_hit_ratio"] > 0, hot[["arc_l2_hits", "arc_l2_misses"]].to_dict()
    assert hot["l2_size_bytes_mean"] >= 0.5 * warmed["goal_bytes"]
    # the pool without a cache device: no warm-up, no warm-up columns, no L2ARC columns
    cold = read.loc[0]
    assert all(pd.isna(cold[c]) for c in COLUMNS), cold[list(COLUMNS)].to_dict()
    assert pd.isna(cold.get("l2_hit_ratio", math.nan))
    assert find_leftovers(lab_host) == []


def test_a_target_resumed_after_a_crash_is_warmed_again(lab_host, tmp_path):
    spec = yaml.safe_load(SPEC.read_text())
    spec.update(name="l2arc-warmup-resume")
    spec["factors"]["cache"] = [1]                      # only the warmed pool
    path = tmp_path / "l2arc-warmup-resume.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    # killed after its warm-up and its run's fio, before the run is complete: the target has work left
    first = _sweep(path, tmp_path, "resume", crash_at="run")
    assert first.returncode == -9, first.stderr[-2000:]
    sweep_dir = tmp_path / "resume"
    assert [e["event"] for e in _events(sweep_dir)].count("l2arc warmed") == 1
    final = _sweep(path, tmp_path, "resume", resume=sweep_dir)     # reclaims the killed session's pool
    assert final.returncode == 0, final.stderr[-3000:]
    events = _events(sweep_dir)
    warmed = [(i, e) for i, e in enumerate(events) if e["event"] == "l2arc warmed"]
    assert len(warmed) == 2 and warmed[0][1]["target_id"] == warmed[1][1]["target_id"]
    resumed = next(i for i, e in enumerate(events) if e["event"] == "resumed")
    assert warmed[0][0] < resumed < warmed[1][0]         # once per session, on each session's own pool
    pools = [e["pool"] for e in events if e["event"] == "pool created"]
    assert len(pools) == 2 and pools[0] != pools[1]
    assert any(e["event"] == "run discarded" for e in events)
    for _, e in warmed:
        _check_warmed(e)
    df = pd.read_parquet(sweep_dir / "results.parquet")
    row = df[df["direction"] == "read"].iloc[0]
    # the completed run's row carries the warm-up of the session it ran in: the second one
    assert row["l2arc_warmup_s"] == warmed[1][1]["seconds"] and bool(row["l2arc_warm_reached"])
    assert find_leftovers(lab_host) == []
