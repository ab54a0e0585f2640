"""One store, one writer: a fleet's workers stage what they measure, the controller commits it.

A worker runs a pool against a `StagingStore`: the same calls as `store.Store` (record, events,
begin_attempt, complete_attempt) into a staging directory of its own (one per execution of a
dispatched pool), never into the sweep's store. Its events go, in order, to the staging
directory's events.jsonl (each line fsynced) and its attempts to raw/<run_id>/s<k>/, meta.json
written last.

The controller's `Committer` follows each staging directory and replays it into the store in the
worker's order: a staged "run started" opens the store's own attempt (the store numbers attempts,
and records its own "run started"), the staged "run completed" copies the attempt's files in and
completes it (fsync, COMPLETE last: `Store.complete_attempt`), and every other event is recorded
as the worker wrote it, with its time and the host's name added. How far a directory was
committed is kept beside it (`.committed`), so a controller killed and resumed commits what its
workers had staged and not yet handed over (an attempt completed on the host is never measured
twice), and an attempt cut off with its host is discarded as a single host's is.

A worker numbers its attempts from 1 in each execution; the store numbers them after any earlier one
(a cut-off attempt, another host's). So an event of a staged attempt (run judged, run extended, load
probed) is recorded with the store's number, and a saturation probe's event with the store's path: its
files (the attempt's ``probe/``) are copied in before the event is recorded, into the store's attempt
(opened then if the controller was killed since its start), so a recorded probe always has its files,
in that attempt whether its run completes or is cut off, as a single host leaves them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from zbench_lib.core.errors import ZbenchError
from zbench_lib.core.events import Event, event_name
from zbench_lib.measure.load import PROBE_DIR
from zbench_lib.sweeps.store.store import Store, atomic_write, fsync_tree, utc_now

EVENTS = "events.jsonl"
META = "meta.json"
COMMITTED = ".committed"          # bytes of events.jsonl the controller has committed


class StagingStore:
    """The store a fleet worker writes: a staging directory (see the module's text)."""

    def __init__(self, path, known_events=()):
        self.path = Path(path)
        self.raw = self.path / "raw"
        self.raw.mkdir(parents=True, exist_ok=False)      # one execution, one directory
        self._known = list(known_events)
        self._mine: list[dict] = []
        self._attempts: dict[str, int] = {}

    @property
    def sweep_id(self) -> str:
        return self.path.name

    def record(self, event: Event | str, **fields) -> dict:
        entry = {"ts": utc_now(), "event": event_name(event).value, **fields}
        with open(self.path / EVENTS, "ab") as f:
            f.write((json.dumps(entry, sort_keys=True, default=str) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())
        self._mine.append(entry)
        return entry

    def events(self) -> list[dict]:
        """The sweep's events as the controller gave them, then this execution's own."""
        return self._known + self._mine

    def begin_attempt(self, run_id: str) -> Path:
        k = self._attempts.get(run_id, 0) + 1
        self._attempts[run_id] = k
        path = self.raw / run_id / f"attempt-{k}"
        path.mkdir(parents=True)
        self.record(Event.RUN_STARTED, run_id=run_id, attempt=k)
        return path

    def complete_attempt(self, run_id: str, path, meta: dict) -> None:
        attempt = int(Path(path).name.rsplit("-", 1)[1])
        atomic_write(Path(path) / META, json.dumps({**meta, "run_id": run_id}, sort_keys=True, default=str),
                     exclusive=True)
        self.record(Event.RUN_COMPLETED, run_id=run_id, attempt=attempt)


@dataclass
class Committer:
    """Replays staging directories into the store, in order (see the module's text)."""
    store: Store
    opened: dict = field(default_factory=dict)     # (staging dir, run_id, staged attempt) -> the store's attempt
    numbers: dict = field(default_factory=dict)    # (staging dir, run_id, staged attempt) -> the store's number

    def commit_all(self, root: Path) -> int:
        """Commit every staging directory under `root` (oldest first); event lines committed."""
        return sum(self.commit(d, host) for host, d in staged_executions(root))

    def commit(self, staging: Path, host: str) -> int:
        """Commit every complete event line of `staging` past its mark; the number committed."""
        staging = Path(staging)
        events_file = staging / EVENTS
        if not events_file.exists():
            return 0
        done = _mark(staging)
        data = events_file.read_bytes()[done:]
        n = 0
        while (nl := data.find(b"\n")) >= 0:       # a torn last line waits for its end
            line, data = data[:nl + 1], data[nl + 1:]
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None                        # torn by a killed worker: nothing to replay
            if isinstance(entry, dict) and "event" in entry:
                self._replay(staging, host, entry)
            done += len(line)
            atomic_write(staging / COMMITTED, str(done))
            n += 1
        return n

    def close(self, staging: Path, host: str, lost: str | None = None) -> list[str]:
        """Commit `staging` to its end, discard the store's attempts its host never completed
        (`lost`: why), and remove it; the run ids discarded."""
        staging = Path(staging)
        self.commit(staging, host)
        out = []
        for key in sorted(k for k in self.opened if k[0] == str(staging)):
            path = self.opened.pop(key)
            self.store.record(Event.RUN_DISCARDED, run_id=key[1], attempt=_number(path),
                              path=str(path.relative_to(self.store.path)), host=host,
                              reason=f"its host was lost mid-run ({lost or 'no reason given'}); excluded from results")
            out.append(key[1])
        shutil.rmtree(staging, ignore_errors=True)
        return out

    def _replay(self, staging: Path, host: str, e: dict) -> None:
        name = e.pop("event")
        key = (str(staging), e.get("run_id"), e.get("attempt"))
        if name == Event.RUN_STARTED:
            if e["run_id"] not in self.store.completed_runs():
                self.opened[key] = self.store.begin_attempt(e["run_id"])
            return
        if name == Event.RUN_COMPLETED:
            self._complete(staging, host, key)
            return
        if e.get("run_id") and isinstance(e.get("attempt"), int):
            e.update(self._renumbered(staging, key, name == Event.LOAD_PROBED))
        self.store.record(name, **{**e, "host": host})     # the worker's own time kept (its ts)

    def _renumbered(self, staging: Path, key: tuple, probe: bool) -> dict:
        """An event of staged attempt `key` as the store numbers it (and a probe's path, its files
        copied in first into the store's open attempt)."""
        if key in self.numbers:
            return {"attempt": self.numbers[key]}
        target = self._open(key)
        if target is None:      # completed, then the controller was killed before this event: a new Committer
            return {"attempt": _complete_number(self.store, key[1])}
        out = {"attempt": _number(target)}
        if probe:
            source = staging / "raw" / key[1] / f"attempt-{key[2]}" / PROBE_DIR
            if source.is_dir() and not (target / PROBE_DIR).exists():
                shutil.copytree(source, target / PROBE_DIR)
                fsync_tree(target / PROBE_DIR)      # on disk before the event says it is there
            out["path"] = str((target / PROBE_DIR).relative_to(self.store.path))
        return out

    def _open(self, key: tuple) -> Path | None:
        """The store's attempt of staged attempt `key`: the one opened at its start, or one opened now
        (a controller killed since its start: the resume discarded that one), None if its run is complete."""
        if key not in self.opened and key[1] not in self.store.completed_runs():
            self.opened[key] = self.store.begin_attempt(key[1])
        return self.opened.get(key)

    def _complete(self, staging: Path, host: str, key: tuple) -> None:
        _, run_id, k = key
        if run_id in self.store.completed_runs():
            return                                  # committed before the controller was killed
        target = self._open(key)
        source = staging / "raw" / run_id / f"attempt-{k}"
        meta = json.loads((source / META).read_text())
        for item in source.iterdir():
            if item.name != META and not (target / item.name).exists():    # a probe is in already
                (shutil.copytree if item.is_dir() else shutil.copy2)(item, target / item.name)
        self.store.complete_attempt(run_id, target, {**meta, "host": host})
        del self.opened[key]
        self.numbers[key] = _number(target)


def _number(attempt: Path) -> int:
    """An attempt directory's number: attempt-3 -> 3."""
    return int(attempt.name.rsplit("-", 1)[1])


def _complete_number(store: Store, run_id: str) -> int:
    """The number of a complete run's one COMPLETE attempt in the store."""
    return min(_number(a.parent) for a in (store.raw / run_id).glob("attempt-*/COMPLETE"))


def _mark(staging: Path) -> int:
    try:
        return int((Path(staging) / COMMITTED).read_text())
    except (OSError, ValueError):
        return 0


def staged_executions(root: Path, pool_id: str | None = None) -> list[tuple[str, Path]]:
    """(host, staging directory) of every execution under a sweep's staging root (of `pool_id`), oldest first."""
    if not Path(root).is_dir():
        return []
    out = []
    for d in sorted(Path(root).iterdir()):
        try:
            host, pool = (d / "HOST").read_text().split()
        except (OSError, ValueError):
            continue                                # being made: its HOST file comes last
        if pool_id is None or pool == pool_id:
            out.append((host, d))
    return out


def new_execution(root: Path, pool_id: str, host: str, known_events=()) -> StagingStore:
    """The staging store of one execution of a dispatched pool on `host` (named by time: oldest first)."""
    path = Path(root) / f"{time.time_ns()}-{pool_id}-{host}-{os.getpid()}"
    if path.exists():
        raise ZbenchError(f"staging directory {path} exists")
    store = StagingStore(path, known_events)
    atomic_write(path / "HOST", f"{host} {pool_id}\n")
    return store
