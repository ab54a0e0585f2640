"""The results store of one sweep, ``<root>/<sweep-id>/``.

    spec.yaml          the spec as given            (written once, never changed)
    plan.json          the expanded plan            (written once, never changed)
    provenance.json    who/where/when it started    (written once)
    events.jsonl       append-only, one `core.events.Event` a line: started, run started, run
                       completed, run discarded, attempt invalid, resumed, runs added, ...
    raw/<run_id>/attempt-<n>/   job.fio, fio.json, logs, counters, meta.json, COMPLETE
    results.parquet, results.csv, latency_hist.parquet   derived: rebuilt from raw COMPLETE attempts only
    clients.parquet, client_hist.parquet                 derived likewise, only for a sweep with clients

Every file is written to a temporary name, fsynced, then moved into place; files that
must never change are linked into place, which fails if the name exists. ``COMPLETE``
is written last, once the whole attempt is fsynced (``fsync_tree``), so an attempt
without it was cut off: a resume records it as discarded, leaves its files alone, and
the run is done again in a new attempt. A COMPLETE attempt whose files do not parse is
set aside (COMPLETE -> COMPLETE.invalid, event ``attempt invalid``) and done again.
Results use only the plan's runs recorded in events.jsonl (``raw_check``).
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import stat
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from zbench_lib.core.errors import ZbenchError
from zbench_lib.core.events import Event, event_name
from zbench_lib.sweeps.store.raw_check import INVALID_MARKER, SweepRuns, derived_files, read_attempt, usable_runs, warn

_ATTEMPT_RE = re.compile(r"^attempt-(\d+)$")
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
SPEC_CHANGED = "spec changed since this sweep started; start a new sweep"


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_sweep_id(spec_name: str) -> str:
    """``<spec-name>-<UTC timestamp>``, e.g. ``demo-20240501T120000Z``."""
    return f"{spec_name}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"


def fsync_path(path) -> None:
    """fsync one file or directory by name."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path, workers: int = 1) -> None:
    """fsync every regular file and every directory under ``path`` (itself included), deepest first.

    With ``workers`` > 1 the files are fsynced from that many threads, then the directories: a journal
    commits concurrent fsyncs together, so a tree of thousands of files (an import) takes a fraction of a
    second instead of some milliseconds a file."""
    files, dirs = [], []
    for dirpath, _, filenames in os.walk(path, topdown=False):
        files += [f for f in (os.path.join(dirpath, n) for n in filenames)
                  if stat.S_ISREG(os.lstat(f).st_mode)]        # not a link out, not a fifo
        dirs.append(dirpath)
    if workers <= 1:
        for p in files + dirs:
            fsync_path(p)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fsync_path, files))
        list(pool.map(fsync_path, dirs))


def _write_tmp(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return tmp


def atomic_write(path, data, *, exclusive: bool = False) -> None:
    """Write ``data`` (str or bytes) to ``path`` atomically: tmp + fsync + rename.

    With ``exclusive``, refuse (FileExistsError) if ``path`` exists, even under a race.
    """
    path = Path(path)
    tmp = _write_tmp(path, data.encode() if isinstance(data, str) else data)
    try:
        if exclusive:
            os.link(tmp, path)          # fails if path exists; replace would not
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_path(path.parent)


def _plan_identity(plan_json: str) -> dict:
    """What must not change on resume: everything but the time/bytes estimates."""
    d = json.loads(plan_json)
    d.pop("estimates", None)
    return d


class Store:
    """One sweep's directory. ``create`` starts one, ``resume`` continues one, ``open`` reads one."""

    def __init__(self, path):
        self.path = Path(path)
        self._lock = None
        if not (self.path / "spec.yaml").is_file() or not (self.path / "plan.json").is_file():
            raise ZbenchError(f"{self.path} is not a sweep store (no spec.yaml / plan.json)")

    @property
    def sweep_id(self) -> str:
        return self.path.name

    @property
    def raw(self) -> Path:
        return self.path / "raw"

    # -- life cycle ----------------------------------------------------------
    @classmethod
    def create(cls, root, spec_text: str, plan, *, sweep_id: str | None = None,
               provenance: dict | None = None) -> "Store":
        """Start a new sweep directory; refuses one that exists (use ``resume``)."""
        sweep_id = sweep_id or new_sweep_id(plan.spec.name)
        if not _RUN_ID_RE.match(sweep_id):
            raise ZbenchError(f"sweep id {sweep_id!r} must be a plain name")
        path = Path(root) / sweep_id
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir()
        except FileExistsError:
            raise ZbenchError(f"{path} already exists; resume it or choose another sweep id") from None
        (path / "raw").mkdir()
        atomic_write(path / "spec.yaml", spec_text, exclusive=True)
        atomic_write(path / "plan.json", plan.to_json(), exclusive=True)
        prov = {"created": utc_now(), "sweep_id": sweep_id, "python": sys.version.split()[0],
                "node": platform.node(), **(provenance or {})}
        atomic_write(path / "provenance.json", json.dumps(prov, indent=1, sort_keys=True, default=str) + "\n",
                     exclusive=True)
        store = cls(path)
        store._acquire()
        store.record(Event.STARTED, runs_planned=len(plan.runs), cells=len(plan.cells))
        return store

    @classmethod
    def open(cls, path) -> "Store":
        """Open for reading (results, events); takes no lock."""
        return cls(path)

    @classmethod
    def resume(cls, path, spec_text: str, plan, provenance: dict | None = None, parse_run=None) -> "Store":
        """Continue a sweep with the same spec: cut-off attempts discarded, torn ones set aside (``parse_run``)."""
        store = cls(path)
        if (store.path / "spec.yaml").read_text() != spec_text:
            raise ZbenchError(f"{store.path}: {SPEC_CHANGED}")
        if _plan_identity((store.path / "plan.json").read_text()) != _plan_identity(plan.to_json()):
            raise ZbenchError(f"{store.path}: the plan expanded from this spec differs from plan.json "
                              "(zbench changed how it expands sweeps); start a new sweep")
        store._acquire()
        discarded = store.discard_incomplete()
        invalid = store.set_aside_invalid(parse_run) if parse_run is not None else []
        done = store.completed_runs()
        store.record(Event.RESUMED, completed=len(done), discarded=len(discarded), invalid=len(invalid),
                     remaining=len([r for r in plan.runs if r.run_id not in done]), provenance=provenance or {})
        return store

    def _acquire(self) -> None:
        """One executor per sweep: a second one would race on attempts."""
        fd = open(self.path / ".lock", "a")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fd.close()
            raise ZbenchError(f"sweep {self.sweep_id} is being run by another process") from None
        self._lock = fd

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def finish(self, **fields) -> None:
        self.record(Event.FINISHED, completed=len(self.completed_runs()), **fields)

    # -- events --------------------------------------------------------------
    def record(self, event: Event | str, **fields) -> dict:
        """Append one event line (fsynced) to events.jsonl; a name outside `Event` raises `UnknownEvent`."""
        entry = {"ts": utc_now(), "event": event_name(event).value, **fields}
        line = (json.dumps(entry, sort_keys=True, default=str) + "\n").encode()
        with open(self.path / "events.jsonl", "a+b") as f:
            if f.seek(0, os.SEEK_END) and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n":
                line = b"\n" + line            # a torn last line stays alone, never glued to this one
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        return entry

    def record_many(self, events) -> None:
        """Append ``(event, fields)`` pairs as event lines in one write and one fsync (an import files
        thousands of runs at once); a name outside `Event` raises `UnknownEvent` before anything is written."""
        lines = b"".join((json.dumps({"ts": utc_now(), "event": event_name(e).value, **f}, sort_keys=True,
                                     default=str) + "\n").encode() for e, f in events)
        with open(self.path / "events.jsonl", "ab") as f:
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())

    def events(self) -> list[dict]:
        """Events so far; a torn last line (power cut mid-append) is ignored."""
        try:
            lines = (self.path / "events.jsonl").read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    # -- attempts ------------------------------------------------------------
    def _attempts(self, run_id: str) -> list[Path]:
        d = self.raw / run_id
        found = [(int(m.group(1)), p) for p in d.iterdir() if p.is_dir() and (m := _ATTEMPT_RE.match(p.name))] \
            if d.is_dir() else []
        return [p for _, p in sorted(found)]

    def begin_attempt(self, run_id: str) -> Path:
        """A new, empty ``raw/<run_id>/attempt-<n>/``; never reuses or overwrites one."""
        if not _RUN_ID_RE.match(run_id):
            raise ZbenchError(f"run id {run_id!r} must be a plain name")
        if any((a / "COMPLETE").exists() for a in self._attempts(run_id)):
            raise ZbenchError(f"run {run_id} is already complete; raw results are never overwritten")
        (self.raw / run_id).mkdir(parents=True, exist_ok=True)
        existing = self._attempts(run_id)
        n = int(_ATTEMPT_RE.match(existing[-1].name).group(1)) + 1 if existing else 1
        while True:
            path = self.raw / run_id / f"attempt-{n}"
            try:
                path.mkdir()
                break
            except FileExistsError:
                n += 1
        fsync_path(path.parent)
        self.record(Event.RUN_STARTED, run_id=run_id, attempt=n)
        return path

    def complete_attempt(self, run_id: str, path, meta: dict) -> None:
        """Write meta.json, then the COMPLETE marker, each atomically; the attempt is then final."""
        path = Path(path)
        if path.parent != self.raw / run_id or not _ATTEMPT_RE.match(path.name) or not path.is_dir():
            raise ZbenchError(f"{path} is not an attempt directory of run {run_id}")
        others = [a for a in self._attempts(run_id) if a != path and (a / "COMPLETE").exists()]
        if others:
            raise ZbenchError(f"run {run_id} already has a complete attempt ({others[0].name})")
        attempt = int(_ATTEMPT_RE.match(path.name).group(1))
        meta = {**meta, "run_id": run_id, "attempt": attempt, "completed_at": utc_now()}
        try:
            atomic_write(path / "meta.json", json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n",
                         exclusive=True)
            fsync_tree(path)              # every byte of the attempt is on disk before COMPLETE says so
            atomic_write(path / "COMPLETE", meta["completed_at"] + "\n", exclusive=True)
        except FileExistsError:
            raise ZbenchError(f"{path} is already complete; raw results are never overwritten") from None
        self.record(Event.RUN_COMPLETED, run_id=run_id, attempt=attempt)

    def file_attempt(self, run_id: str, files: dict, meta: dict) -> Path:
        """A finished attempt filed whole from files that exist already (an import: fio's JSON copied
        unchanged): ``raw/<run_id>/attempt-1/`` with ``files`` ({name in the attempt: its bytes}),
        meta.json and COMPLETE, and no event and no fsync: the caller records the runs' events
        (`record_many`) and builds the store aside, made durable whole (`fsync_tree`) before it is renamed
        into place. A run that has an attempt already is refused."""
        if not _RUN_ID_RE.match(run_id):
            raise ZbenchError(f"run id {run_id!r} must be a plain name")
        path = self.raw / run_id / "attempt-1"
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            raise ZbenchError(f"run {run_id} has an attempt already; raw results are never overwritten") from None
        for name, data in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(data)
        done = utc_now()
        meta = {**meta, "run_id": run_id, "attempt": 1, "completed_at": done}
        (path / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
        (path / "COMPLETE").write_text(done + "\n")
        return path

    def completed_runs(self) -> set:
        if not self.raw.is_dir():
            return set()
        return {d.name for d in self.raw.iterdir() if any((a / "COMPLETE").exists() for a in self._attempts(d.name))}

    def completed_attempts(self) -> list[tuple[str, Path, dict]]:
        """(run_id, attempt directory, meta) of every COMPLETE attempt, by run id: the raw record.

        A meta.json that does not parse gives ``{}`` (the run stays complete; its cell is
        unknown), so a resume can still read every other run.
        """
        out = []
        for d in sorted(self.raw.iterdir()) if self.raw.is_dir() else []:
            for a in (a for a in self._attempts(d.name) if (a / "COMPLETE").exists()):
                try:
                    meta = json.loads((a / "meta.json").read_text())
                except (OSError, ValueError):
                    meta = {}
                out.append((d.name, a, meta if isinstance(meta, dict) else {}))
        return out

    def incomplete_attempts(self) -> list[Path]:
        """Attempt directories without COMPLETE (cut off, or running right now); set-aside ones are not."""
        if not self.raw.is_dir():
            return []
        return [a for d in sorted(self.raw.iterdir()) for a in self._attempts(d.name)
                if not (a / "COMPLETE").exists() and not (a / INVALID_MARKER).exists()]

    def discard_incomplete(self) -> list[Path]:
        """Record each cut-off attempt once as discarded; files stay where they are."""
        known = {e.get("path") for e in self.events() if e.get("event") == Event.RUN_DISCARDED}
        out = []
        for a in self.incomplete_attempts():
            rel = str(a.relative_to(self.path))
            if rel not in known:
                self.record(Event.RUN_DISCARDED, run_id=a.parent.name, attempt=int(a.name.split("-")[1]),
                            path=rel, reason="no COMPLETE marker: interrupted mid-run; excluded from results")
                out.append(a)
        return out

    def set_aside_invalid(self, parse_run) -> list[Path]:
        """Set aside each COMPLETE attempt of the sweep's runs whose files do not parse: the run is not done."""
        runs = SweepRuns.read(self.path, self.events())
        bad = [(r, a, why) for r, a, _ in self.completed_attempts()
               if runs.stray(r) is None and (why := read_attempt(a, parse_run)[2])]
        for run_id, attempt, why in bad:
            self._set_aside(run_id, attempt, why)
        return [a for _, a, _ in bad]

    def _set_aside(self, run_id: str, attempt: Path, why: str) -> None:
        os.replace(attempt / "COMPLETE", attempt / INVALID_MARKER)     # atomic: one name or the other
        fsync_path(attempt)
        rel = str(attempt.relative_to(self.path))
        self.record(Event.ATTEMPT_INVALID, run_id=run_id, attempt=int(_ATTEMPT_RE.match(attempt.name).group(1)),
                    path=rel, reason=why)
        warn(f"{rel}: its files do not parse ({why}); set aside as {INVALID_MARKER}, the run is not done")

    # -- derived results -----------------------------------------------------
    def rebuild_results(self, parse_run, *, set_aside: bool = True) -> pd.DataFrame:
        """Rebuild results.parquet, results.csv and latency_hist.parquet from COMPLETE attempts only.

        ``parse_run(attempt_dir, meta) -> list[dict]`` gives the rows of one run. Only the plan's
        runs recorded in events.jsonl are used, what is left out is named in a warning; an attempt
        whose files do not parse is set aside (``set_aside=False``, a copy kept as it is: skipped).
        """
        runs = SweepRuns.read(self.path, self.events())
        found = usable_runs(self.raw, runs, self._attempts, parse_run, self._set_aside if set_aside else None)
        df, files = derived_files(found, self.raw, self.sweep_id)
        for name, data in files.items():
            atomic_write(self.path / name, data)
        return df
