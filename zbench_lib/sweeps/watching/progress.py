"""A terminal progress view of a headless sweep, fed by the store's events.jsonl.

The sweep runs inside a papermill kernel; the only thing it shares with the `zbench`
process while it runs is its store. `EventTail` follows <sweep_dir>/events.jsonl from a
thread (the file may not exist yet, and its last line may be half written);
`SweepProgress.apply` turns each event into the state the bar shows: runs done /
planned (adaptive repetitions add runs as they go), the current cell, the ETA and the
last finished run's IOPS (from its fio.json). `ProgressView` draws it with tqdm.

    runs 12/90 ▕███▏ [06:12] cell raidz2(6) randread-4k vbs 16K · ETA 41:20 · last 523 IOPS
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from zbench_lib.core.events import Event
from zbench_lib.core.sizes import format_size


def _ts(text) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def cell_label(cell: dict) -> str:
    """'raidz2(6) randread-4k vbs 16K qd8': the factors a person recognises a cell by."""
    f = {**cell.get("factors", {}), **{k: v for k, v in cell.items() if k != "factors"}}
    bits = [f.get("layout_label") or f.get("layout", ""), f.get("workload", "")]
    for key, name in (("volblocksize_bytes", "vbs"), ("recordsize_bytes", "rs")):
        if f.get(key):
            bits.append(f"{name} {format_size(int(f[key]))}")
    if f.get("iodepth"):
        bits.append(f"qd{f['iodepth']}")
    return " ".join(str(b) for b in bits if b)


def fio_iops(sweep_dir, run_id: str, attempt) -> float | None:
    """Total IOPS (all directions) of one finished attempt, from its fio.json; None if unreadable."""
    from zbench_lib.measure.fio_parse import parse_fio_json
    try:
        attempt_dir = Path(sweep_dir) / "raw" / run_id / f"attempt-{attempt}"
        rows = parse_fio_json((attempt_dir / "fio" / "fio.json").read_text())
    except Exception:                  # a missing or torn file must never stop the view
        return None
    return float(sum(r["iops"] for r in rows)) if rows else None


@dataclass
class SweepProgress:
    """The state of a sweep as its events tell it."""
    cells: dict = field(default_factory=dict)          # run_id and cell_id -> cell label (the plan)
    run_s: float | None = None                         # planned seconds per run, before any finished
    iops_of: Callable | None = None                    # (run_id, attempt) -> IOPS
    planned: int = 0
    done: int = 0
    current: str = ""
    current_is_cell: bool = False                      # a run's cell, not a pool being made or torn down
    last_iops: float | None = None
    finished: bool = False
    session_start: float | None = None                 # first run started in this session
    session_done: int = 0
    last_done_at: float | None = None
    hosts: dict = field(default_factory=dict)          # a fleet's: host -> its current pool (or idle, lost)

    @classmethod
    def from_plan(cls, plan, iops_of=None) -> "SweepProgress":
        """From a Plan (or plan.json's dict): labels per run and the planned time per run."""
        d = plan if isinstance(plan, dict) else json.loads(plan.to_json())
        cells = {c["cell_id"]: cell_label(c) for c in d.get("cells", [])}
        run_s = [c.get("run_s") for c in d.get("cells", []) if c.get("run_s")]
        runs = {r["run_id"]: cells.get(r["cell_id"], r["cell_id"]) for r in d.get("runs", [])}
        return cls(cells={**cells, **runs}, run_s=sum(run_s) / len(run_s) if run_s else None,
                   iops_of=iops_of, planned=len(d.get("runs", [])))

    def apply(self, ev: dict) -> None:
        kind, t = ev.get("event"), _ts(ev.get("ts"))
        if kind == Event.STARTED:
            self.planned = int(ev.get("runs_planned", self.planned))
        elif kind == Event.RESUMED:
            self.done = int(ev.get("completed", 0))
            self.planned = self.done + int(ev.get("remaining", 0))
        elif kind == Event.RUN_STARTED:
            rid = ev.get("run_id", "")
            cell = rid.rsplit("-r", 1)[0]                # extra repetitions are not in the plan
            self.current = self.cells.get(rid) or self.cells.get(cell) or cell
            self.current_is_cell = True
            if self.session_start is None:
                self.session_start = t
        elif kind == Event.RUN_COMPLETED:
            self.done += 1
            self.session_done += 1
            self.last_done_at = t
            if self.iops_of is not None:
                iops = self.iops_of(ev.get("run_id", ""), ev.get("attempt", 1))
                self.last_iops = iops if iops is not None else self.last_iops
        elif kind in (Event.POOL_CREATING, Event.POOL_TEARDOWN):
            what = "creating" if kind == Event.POOL_CREATING else "tearing down"
            self.current = f"{what} pool {ev.get('pool', '')}"
            self.current_is_cell = False
        elif kind in (Event.RAW_DEVICES_CHECKING, Event.RAW_DEVICES_WIPED):
            what = "checking" if kind == Event.RAW_DEVICES_CHECKING else "wiped"
            self.current = f"{what} raw disks {ev.get('pool_id', '')}"
            self.current_is_cell = False
        elif kind == Event.RUNS_ADDED:                # the repetition rule queued runs beyond the plan
            self.planned += len(ev.get("run_ids") or ())
        elif kind in (Event.POOL_DISPATCHED, Event.POOL_RETURNED, Event.POOL_LOST):
            pool = ev.get("pool_id", "")
            self.hosts[ev.get("host", "?")] = {Event.POOL_DISPATCHED: pool, Event.POOL_RETURNED: "idle"}.get(
                kind, f"lost {pool}")
        elif kind == Event.FINISHED:
            self.finished = True
            self.current = ""
        self.planned = max(self.planned, self.done)

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds left: the pace of this session's runs (pools and prefill included) x runs left."""
        left = self.planned - self.done
        if self.finished or left <= 0:
            return 0.0
        if self.session_done and self.session_start is not None and self.last_done_at is not None:
            return left * (self.last_done_at - self.session_start) / self.session_done
        return left * self.run_s if self.run_s else None

    def postfix(self, now: float | None = None) -> str:
        eta = self.eta_s(now)
        now_doing = f"cell {self.current}" if self.current_is_cell else self.current
        if self.hosts:              # a fleet: each host's pool (its cells interleave with the others')
            now_doing = " ".join(f"{h}:{p}" for h, p in sorted(self.hosts.items()))
        bits = [now_doing if self.current or self.hosts else ("finished" if self.finished else "starting")]
        if eta is not None and not self.finished:
            bits.append("ETA " + time.strftime("%H:%M:%S" if eta >= 3600 else "%M:%S", time.gmtime(eta)))
        if self.last_iops is not None:
            bits.append(f"last {self.last_iops:,.0f} IOPS")
        return " · ".join(bits)


class EventTail(threading.Thread):
    """Follow an append-only JSON-lines file from a thread; `on_event` gets each whole line's dict."""

    def __init__(self, path, on_event: Callable[[dict], None], interval: float = 0.5,
                 on_tick: Callable[[], None] | None = None):
        super().__init__(daemon=True, name="zbench-events")
        self.path, self.on_event, self.on_tick, self.interval = Path(path), on_event, on_tick, interval
        self._offset, self._partial, self._stop_event = 0, b"", threading.Event()

    def poll(self) -> int:
        """Read what was appended since the last poll; returns the number of events handled."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return 0
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()                     # an unfinished last line waits for its end
        n = 0
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:
                continue                                # a torn line (the store starts anew after it)
            self.on_event(ev)
            n += 1
        return n

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.poll()
            if self.on_tick:
                self.on_tick()

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(5)
        self.poll()


class LineWriter:
    """A file-like object handing whole lines to `emit` (the notebook's streams, above the bar)."""

    def __init__(self, emit: Callable[[str], None]):
        self.emit, self._buf = emit, ""

    def write(self, text: str) -> int:
        self._buf += text
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            self.emit(line)
        return len(text)

    def flush(self) -> None:
        if self._buf:
            self.emit(self._buf)
            self._buf = ""


class ProgressView:
    """`with ProgressView(sweep_dir, plan): ...` shows a tqdm bar driven by events.jsonl."""

    def __init__(self, sweep_dir, plan=None, file=None, interval: float = 0.5):
        from tqdm import tqdm
        self.sweep_dir = Path(sweep_dir)
        reader = lambda rid, att: fio_iops(self.sweep_dir, rid, att)  # noqa: E731
        self.state = SweepProgress.from_plan(plan, reader) if plan is not None else SweepProgress(iops_of=reader)
        self.file = file or sys.stderr
        self._lock = threading.Lock()
        self.bar = tqdm(total=self.state.planned or None, desc="runs", unit="run", file=self.file,
                        dynamic_ncols=True,
                        bar_format="{desc} {n_fmt}/{total_fmt} {bar} [{elapsed}]{postfix}")  # postfix: ", ..."
        self.tail = EventTail(self.sweep_dir / "events.jsonl", self._on_event, interval, self._refresh)

    def _on_event(self, ev: dict) -> None:
        with self._lock:
            self.state.apply(ev)

    def _refresh(self) -> None:
        with self._lock:
            self.bar.total = self.state.planned or None
            self.bar.n = self.state.done
            self.bar.set_postfix_str(self.state.postfix(), refresh=False)
            self.bar.refresh()

    def write(self, line: str) -> None:
        with self._lock:
            self.bar.write(line, file=sys.stdout)

    def write_err(self, line: str) -> None:
        with self._lock:
            self.bar.write(line, file=self.file)

    def __enter__(self) -> "ProgressView":
        self.tail.start()
        return self

    def __exit__(self, *exc) -> None:
        self.tail.stop()
        self._refresh()
        self.bar.close()
