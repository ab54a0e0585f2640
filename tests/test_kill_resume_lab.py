"""`zbench sweep` stopped by a signal at random points, then resumed: the promise of #15.

Each kill point is a stage of the sweep (startup, pool creation, prefill, a run, the
pool's teardown) reached by watching the store's events, plus a seeded random delay, or
a remote command seen running on the lab (`zpool create`, the prefill's fio: issue 34,
where a signal during `zpool create` left the pool behind), watched from inside the
guest so the signal lands while the command is in flight;
the signal cycles through SIGINT (Ctrl-C), SIGTERM, SIGKILL and SIGHUP (terminal
closed), sent to the CLI as a user or a scheduler would. After each kill:
- SIGINT/SIGTERM/SIGHUP: the CLI exits with 128 + the signal, and leaves no pool of its
  own (a SIGKILL's leftover may still wait for a launch that gets as far as reclaiming it);
- SIGKILL: a pool may be left; the resume destroys it (it is named in the store);
- the raw files that existed before the launch are unchanged.
Every sweep is resumed until it finishes, with exactly its planned rows and no
duplicates; then the next sweep starts, until at least MIN_KILLS signals landed.
The table of kill points is printed (pytest -s shows it).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from zbench_lib.zfs.pools import find_leftovers

from conftest import LAB_TEST_CONFIG, sweep_child, wait_lock_free

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "kill.yaml"
# `make test` lands one kill per stage (7), the signals cycling from an offset drawn per run, so
# successive CI runs cover every (stage, signal) pair; the offset is printed with the table
# (ZBENCH_KILL_OFFSET=N repeats a run). ZBENCH_KILLS=28 soaks: four kills per stage, each signal
# once at each.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL, signal.SIGHUP)
MIN_KILLS = int(os.environ.get("ZBENCH_KILLS", "7"))
SIGNAL_OFFSET = int(os.environ.get("ZBENCH_KILL_OFFSET", random.SystemRandom().randrange(len(SIGNALS))))
# stage -> (what starts it, delay range after it in s). What starts it: None (the launch),
# an event of the store, or "remote:" and the start of a command line running on the lab.
STAGES = {"startup": (None, (0.5, 6.0)), "pool create": ("pool creating", (0.0, 0.6)),
          "in zpool create": ("remote:zpool create", (0.0, 0.05)),
          "prefill": ("pool created", (0.1, 0.8)),
          "in prefill": ("remote:fio --name=prefill", (0.0, 0.8)),
          "run": ("run started", (0.3, 4.0)), "teardown": ("pool teardown", (0.0, 0.5))}
# The guest watches for the command itself (pgrep every 20 ms): polling over ssh from here
# would see a one-second `zpool create` too late. `^` keeps the watcher's own shell out.
_WATCH = 'until pgrep -f "^$1" >/dev/null; do sleep 0.02; done'


def _raw_digests(sweep_dir: Path | None) -> dict:
    if sweep_dir is None or not (sweep_dir / "raw").is_dir():
        return {}
    return {str(p.relative_to(sweep_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in (sweep_dir / "raw").rglob("*") if p.is_file()}


def _events(sweep_dir: Path | None) -> list[dict]:
    try:
        lines = (sweep_dir / "events.jsonl").read_text().splitlines()
    except (OSError, TypeError):
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _launch(out_root: Path, sweep_dir: Path | None) -> subprocess.Popen:
    """`zbench sweep` itself: the CLI turns the signals into its exit status, as for a user."""
    argv, env = sweep_child(SPEC, out_root, resume=sweep_dir, cli=True, ZBENCH_LAB=LAB_TEST_CONFIG["name"])
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _sweep_dir(out_root: Path, known: set) -> Path | None:
    new = [p for p in out_root.iterdir() if p.is_dir() and p.name not in known] if out_root.is_dir() else []
    return new[0] if new else None


def _wait_trigger(proc, out_root, sweep_dir, known, stage, rng, watcher) -> tuple[bool, Path | None]:
    """Wait for `stage` to begin in this launch, then its random delay; False if the sweep ended first."""
    event, (lo, hi) = STAGES[stage]
    start_count = None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False, sweep_dir or _sweep_dir(out_root, known)
        sweep_dir = sweep_dir or _sweep_dir(out_root, known)
        if event is None or (watcher is not None and watcher.poll() is not None):
            break
        if watcher is None:
            n = sum(1 for e in _events(sweep_dir) if e.get("event") == event)
            start_count = n if start_count is None else start_count
            if n > start_count:
                break
        time.sleep(0.02)
    time.sleep(rng.uniform(lo, hi))
    return proc.poll() is None, sweep_dir or _sweep_dir(out_root, known)


def _watch(lab_host, stage: str):
    """A guest-side watcher that exits once the stage's remote command runs (None for other stages)."""
    what = STAGES[stage][0]
    if not (what or "").startswith("remote:"):
        return None
    return lab_host.popen(["sh", "-c", _WATCH, "watch", what.split(":", 1)[1]])


def _stop_watch(lab_host, watcher) -> bool:
    """Stop a watcher still waiting; True if it had seen its command."""
    if watcher is None:
        return False
    seen = watcher.poll() == 0
    if watcher.poll() is None:
        lab_host.run(["pkill", "-f", "until pgrep -f"], check=False, timeout=30)
        watcher.kill()
    watcher.communicate()
    return seen


def _kill(proc: subprocess.Popen, sig: int) -> tuple[int, str]:
    kids = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=1500)
    # After a SIGKILL the kernel notices its parent is gone and exits (ipykernel's
    # parent poller): wait for it, as its lock on the store goes with it.
    psutil.wait_procs(kids, timeout=60)
    return proc.returncode, err


def _check_finished(sweep_dir: Path) -> int:
    df = pd.read_parquet(sweep_dir / "results.parquet")
    planned = sorted(r["run_id"] for r in json.loads((sweep_dir / "plan.json").read_text())["runs"])
    assert sorted(df["run_id"]) == planned, (sweep_dir, sorted(df["run_id"]))
    assert not df.duplicated(["run_id", "direction"]).any()
    assert _events(sweep_dir)[-1]["event"] == "finished"
    return len(df)


def test_sweeps_killed_at_random_points_resume_to_exactly_their_plan(lab, lab_host, tmp_path):
    rng = random.Random(20261122)
    out_root = tmp_path / "sweeps"
    known: set[str] = set()
    sweep_dir, table, kills, launches = None, [], 0, 0
    stages = list(STAGES)
    while kills < MIN_KILLS or sweep_dir is not None:
        assert launches < 4 * MIN_KILLS, "the sweeps never finish"
        # kills // len(stages) shifts the cycle after each round, so a soak pairs every stage with every signal
        stage = stages[kills % len(stages)]
        sig = SIGNALS[(kills % len(stages) + kills // len(stages) + SIGNAL_OFFSET) % len(SIGNALS)]
        before = _raw_digests(sweep_dir)
        # A SIGKILL's leftover stays until the next launch gets far enough to reclaim it:
        # a launch stopped at startup must not be blamed for it.
        left_before = set(find_leftovers(lab_host))
        resuming = sweep_dir
        watcher = _watch(lab_host, stage) if kills < MIN_KILLS else None
        proc = _launch(out_root, sweep_dir)
        launches += 1
        landed, sweep_dir = (False, sweep_dir) if kills >= MIN_KILLS else \
            _wait_trigger(proc, out_root, sweep_dir, known, stage, rng, watcher)
        seen = _stop_watch(lab_host, watcher)
        landed = landed and (watcher is None or seen)
        if landed:
            rc, err = _kill(proc, sig)
            kills += 1
            wait_lock_free(lab_host)        # a SIGKILLed sweep's lock goes once its holder has cleaned up
        else:
            _, err = proc.communicate(timeout=1500)
            rc = proc.returncode
        removed = [e for e in _events(sweep_dir) if e.get("event") == "leftovers removed"]
        after = _raw_digests(sweep_dir)
        assert all(after.get(k) == v for k, v in before.items()), f"raw files changed ({stage}, {sig})"
        left = find_leftovers(lab_host)
        row = {"kill": kills if landed else "-", "stage": stage if landed else "(none)",
               "signal": signal.Signals(sig).name if landed else "-", "rc": rc,
               "waited for": "zpool create" if "waiting for `zpool create" in err else "",
               "resumed": bool(resuming), "pools left": len(left), "raw files": len(after),
               "own leftovers removed so far": sum(len(e["pools"]) for e in removed)}
        if landed and sig != signal.SIGKILL:
            # The teardown ran before the CLI exited, whatever stage it was in.
            assert rc == 128 + sig, (row, err[-2000:])           # honoured, never lost
            assert set(left) <= left_before, (row, left_before, err[-2000:])  # none of its own
        if not landed or rc == 0:
            assert rc == 0, (row, err[-3000:])
        if sweep_dir is not None and (sweep_dir / "results.parquet").exists() and \
                _events(sweep_dir) and _events(sweep_dir)[-1].get("event") == "finished":
            row["outcome"] = f"finished: {_check_finished(sweep_dir)} rows, exactly the plan"
            assert find_leftovers(lab_host) == []
            known.add(sweep_dir.name)
            sweep_dir = None
        else:
            row["outcome"] = "stopped" if sweep_dir else "stopped before the store existed"
        table.append(row)
    print(f"\nsignal offset {SIGNAL_OFFSET} (ZBENCH_KILL_OFFSET={SIGNAL_OFFSET} repeats this run's pairs)\n"
          + pd.DataFrame(table).to_string(index=False))
    assert kills >= MIN_KILLS
    assert {r["stage"] for r in table} >= set(STAGES)
    assert len(known) >= 1 and find_leftovers(lab_host) == []
