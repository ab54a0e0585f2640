"""The declared L2ARC warm-up on real OpenZFS (tests/specs/l2arc-warmup.yaml), on one sweep killed
once and resumed: a cache pool's target is read until arcstats' l2_size holds what was declared,
the event and the warmed rows say so, the measured reads then hit the L2ARC, a pool without a
cache device is not warmed and has no warm-up columns; and a target resumed after a crash is
warmed again on its new pool."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "l2arc-warmup.yaml"
MiB = 1024 ** 2
COLUMNS = ("l2arc_warmup_s", "l2arc_warm_fraction", "l2arc_warm_until", "l2arc_warm_reached", "l2arc_warmup_stop")


def _events(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]


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


def test_a_warm_up_fills_the_l2arc_the_reads_hit_it_and_a_resumed_target_is_warmed_again(
        lab_host, sweep_on_lab, tmp_path):
    # One sweep serves both: the cache pool runs first, killed after its warm-up and its run's fio,
    # before the run is complete (the target has work left); the resume warms it again on a new
    # pool and runs it, then the pool without a cache device.
    sweep_dir = tmp_path / "warm"
    first = sweep_on_lab(SPEC, tmp_path, sweep_dir.name, crash_at="run")
    assert first.returncode == -9, first.stderr[-2000:]
    assert [e["event"] for e in _events(sweep_dir)].count("l2arc warmed") == 1
    final = sweep_on_lab(SPEC, tmp_path, resume=sweep_dir)     # reclaims the killed session's pool
    assert final.returncode == 0, final.stderr[-3000:]
    df = pd.read_parquet(sweep_dir / "results.parquet")
    read = df[df["direction"] == "read"].set_index("cache")
    assert sorted(read.index) == [0, 1]
    hot, cold = read.loc[1], read.loc[0]
    events = _events(sweep_dir)
    warmed = [(i, e) for i, e in enumerate(events) if e["event"] == "l2arc warmed"]
    assert len(warmed) == 2 and warmed[0][1]["target_id"] == warmed[1][1]["target_id"]
    for _, e in warmed:
        _check_warmed(e)
    resumed = next(i for i, e in enumerate(events) if e["event"] == "resumed")
    assert warmed[0][0] < resumed < warmed[1][0]         # once per session, on each session's own pool
    assert [e["run_id"] for e in events if e["event"] == "run discarded"] == [hot["run_id"]]
    created = [(e["pool_id"], e["pool"]) for e in events if e["event"] == "pool created"]
    assert [p for p, _ in created] == [hot["pool_id"], hot["pool_id"], cold["pool_id"]] and \
        created[0][1] != created[1][1]
    warm = warmed[1][1]                                   # the resumed session's: the one its run read after
    assert warm["target_id"].split("-")[0] == hot["pool_id"]                            # the cache pool's target
    assert warm["path"] == f"/{created[1][1]}/{warm['target_id'].replace('-', '_')}/fio.data"
    # in order for that target in the resumed session: prefilled, then warmed, then its run
    at = {(e["event"], e.get("target_id") or e.get("run_id")): i for i, e in enumerate(events) if i > resumed}
    assert at[("prefilled", warm["target_id"])] < warmed[1][0] < at[("run started", hot["run_id"])]
    # the completed run's rows carry the warm-up of the session it ran in, exactly as the event has it
    assert bool(hot["l2arc_warm_reached"]) and hot["l2arc_warmup_stop"] == "reached"
    assert hot["l2arc_warm_fraction"] == warm["warm_fraction"] and hot["l2arc_warm_until"] == 0.8
    assert hot["l2arc_warmup_s"] == warm["seconds"]
    # ... and its reads then found the L2ARC warm: it served some of what the 96M ARC could not hold
    assert hot["arc_l2_hits"] > 0 and hot["l2_hit_ratio"] > 0, hot[["arc_l2_hits", "arc_l2_misses"]].to_dict()
    assert hot["l2_size_bytes_mean"] >= 0.5 * warm["goal_bytes"]
    # the pool without a cache device, after the cache pool's teardown: no warm-up, no warm-up
    # columns, no L2ARC columns (the torn-down pool's L2ARC does not reach its rows)
    assert all(pd.isna(cold[c]) for c in COLUMNS), cold[list(COLUMNS)].to_dict()
    assert pd.isna(cold.get("l2_hit_ratio", math.nan))
    assert find_leftovers(lab_host) == []
