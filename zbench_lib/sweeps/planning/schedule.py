"""What is left to run, target by target, and the repetition rule applied after each run.

Pure bookkeeping, no host: ``Schedule`` starts from the plan and the runs already
complete in raw/ (``outcomes_from_raw``), so a resumed cell decides with every run it
has, and its new reps continue from the highest complete, queued or planned one (never
a duplicate). After each run ``complete`` asks ``RepetitionRule.decide`` and interleaves
the runs it adds at random positions (seeded, recorded) among the target's remaining
runs of the same phase (reads before writes when ``reads_first``). What it decides is
queued in ``events`` for the executor to record.
"""

from __future__ import annotations

import math
import random

from zbench_lib.core.events import Event
from zbench_lib.sweeps.planning.blocks import run_id
from zbench_lib.sweeps.planning.plan import Plan, Run
from zbench_lib.sweeps.planning.records import Cell
from zbench_lib.sweeps.planning.repetitions import Outcome, RepetitionRule


def primary_direction(cell: Cell) -> str:
    return "read" if cell.reads_only else "write"


def outcome(rep: int, rows, direction: str, metric: str) -> Outcome:
    """A run's outcome from its rows: admissible iff its `direction` row is not flagged.

    ``flagged`` is True only when a truth check that *invalidates* the run raised its flag
    (``truth_flags`` names them, measure/truth.py declares each check's kind): such a run is
    excluded and replaced. A flag that *describes* the run (``described_flags``: read
    amplification, not steady, ...) keeps it: it counts toward the cell's repetitions, since
    replacing runs for what the system did would select the runs one likes. ``flagged`` None
    (not judged) does not exclude; a missing row or metric does.
    """
    row = next((r for r in rows if r.get("direction") == direction), None)
    if row is None:
        return Outcome(rep, None, False, f"no {direction} row")
    value = row.get(metric)
    try:
        value = float(value)
    except (TypeError, ValueError):
        value = math.nan
    flagged = row.get("flagged")
    if flagged is not None and not (isinstance(flagged, float) and math.isnan(flagged)) and bool(flagged):
        return Outcome(rep, value, False, f"invalidated by {row.get('truth_flags') or 'a truth check'}")
    if not math.isfinite(value):
        return Outcome(rep, None, False, f"no {metric} value")
    return Outcome(rep, value, True)


def outcomes_from_raw(attempts, plan: Plan, parse_run) -> dict[str, list[Outcome]]:
    """Outcomes per cell of the completed attempts ``(run_id, dir, meta)`` (``Store.completed_attempts``)."""
    metric = plan.spec.repetitions["metric"]
    cells = {c.cell_id: c for c in plan.cells}
    out: dict[str, list[Outcome]] = {}
    for _, path, meta in attempts:
        cell = cells.get(meta.get("cell_id"))
        if cell is None or not isinstance(meta.get("rep"), int):
            continue                      # not a run of this plan: rebuild decides what to do with it
        try:
            rows = parse_run(path, meta)
        except (OSError, ValueError, KeyError, TypeError) as e:
            out.setdefault(cell.cell_id, []).append(Outcome(meta["rep"], None, False, f"raw unreadable: {e}"))
            continue
        out.setdefault(cell.cell_id, []).append(outcome(meta["rep"], rows, primary_direction(cell), metric))
    return out


# A cell's closing event, by the stage the rule ends it in.
_CLOSING = {"done": Event.REPETITIONS_DONE, "gave up": Event.REPETITIONS_GAVE_UP}


class Schedule:
    """Queues per target and outcomes per cell; ``events`` holds (name, fields) to record."""

    def __init__(self, plan: Plan, rule: RepetitionRule, outcomes: dict | None = None,
                 known_events=(), seed: int = 0, completed=()):
        self.plan, self.rule = plan, rule
        self.metric = plan.spec.repetitions["metric"]
        self.randomised = plan.spec.order == "randomised"
        self.seed = f"{seed}/extra-runs"
        self.rng = random.Random(self.seed)
        self.cells = {c.cell_id: c for c in plan.cells}
        self.outcomes = {cid: list((outcomes or {}).get(cid, [])) for cid in self.cells}
        self.completed = set(completed) | {run_id(cid, o.rep) for cid, outs in self.outcomes.items() for o in outs}
        self.done_count = len(self.completed)
        self.queues = {t.target_id: [r for r in plan.runs if r.target_id == t.target_id
                                     and r.run_id not in self.completed] for t in plan.targets}
        self.events: list[tuple[Event, dict]] = []
        self._said = {(e.get("event"), e.get("cell_id")) for e in known_events if e.get("cell_id")}
        self._said |= {("closed", cid) for ev, cid in self._said if ev in _CLOSING.values()}
        for cid in self.cells:              # a resumed cell may need runs beyond its planned ones
            self._decide(cid, "resumed from raw" if self.outcomes[cid] else "plan")

    # -- queries --------------------------------------------------------------
    def has_work(self, target_id: str) -> bool:
        return bool(self.queues[target_id])

    def pool_has_work(self, pool_id: str) -> bool:
        return any(self.queues[t.target_id] for t in self.plan.targets if t.pool_id == pool_id)

    def remaining(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def next_run(self, target_id: str) -> Run | None:
        q = self.queues[target_id]
        return q.pop(0) if q else None

    # -- after a run ------------------------------------------------------------
    def complete(self, run: Run, rows) -> None:
        """Record a finished run (its rows as derived from raw) and apply the rule to its cell."""
        cell = self.cells[run.cell_id]
        self.outcomes[run.cell_id].append(outcome(run.rep, rows, primary_direction(cell), self.metric))
        self.completed.add(run.run_id)
        self.done_count += 1
        self._decide(run.cell_id, "after " + run.run_id)

    def _pending(self, cell_id: str) -> list[int]:
        return [r.rep for r in self.queues[self.cells[cell_id].target_id] if r.cell_id == cell_id]

    def _decide(self, cell_id: str, when: str) -> None:
        pending = self._pending(cell_id)
        d = self.rule.decide(self.outcomes[cell_id], pending)
        if d.stein is not None and self._first(Event.REPETITIONS_DECIDED, cell_id):
            self.events.append((Event.REPETITIONS_DECIDED, {"cell_id": cell_id, "design": self.rule.design,
                                                            "metric": self.metric, **d.stein, "reason": d.reason}))
        if d.add:
            self._add(cell_id, d, pending, when)
        elif d.stage in _CLOSING and self._first("closed", cell_id):
            excluded = [{"rep": o.rep, "why": o.why} for o in self.outcomes[cell_id] if not o.admissible]
            self.events.append((_CLOSING[d.stage], {
                "cell_id": cell_id, "design": self.rule.design, "admissible": d.admissible, "needed": d.needed,
                "excluded": d.excluded, "attempts": len(self.outcomes[cell_id]),
                "max_attempts": self.rule.max_attempts, "excluded_runs": excluded, "reason": d.reason}))

    def _first(self, event: Event | str, cell_id: str) -> bool:
        if (event, cell_id) in self._said:
            return False
        self._said.add((event, cell_id))
        return True

    def _add(self, cell_id: str, d, pending: list, when: str) -> None:
        cell = self.cells[cell_id]
        planned = self.plan.spec.repetitions["pilot"]
        rep = max([planned] + [o.rep for o in self.outcomes[cell_id]] + pending)
        runs = []
        while len(runs) < d.add:
            rep += 1
            if run_id(cell_id, rep) not in self.completed:     # complete but unreadable: never reused
                runs.append(self.plan.extra_run(cell_id, rep))
        q = self.queues[cell.target_id]
        lo, hi = 0, len(q)
        if self.plan.spec.reads_first:      # keep reads before writes within the target
            n_reads = sum(self.cells[r.cell_id].reads_only for r in q)
            lo, hi = (0, n_reads) if cell.reads_only else (n_reads, len(q))
        positions, queued_before = [], len(q)
        for run in runs:
            pos = self.rng.randint(lo, hi) if self.randomised else hi
            q.insert(pos, run)
            positions = [p + (p >= pos) for p in positions] + [pos]
            hi += 1
        why = ("replace excluded pilot runs" if d.stage == "pilot" else
               "replace excluded runs" if d.stein is None else
               f"Stein's second stage: {d.needed} admissible runs in all")
        self.events.append((Event.RUNS_ADDED, {
            "cell_id": cell_id, "why": why, "when": when, "reps": [r.rep for r in runs],
            "run_ids": [r.run_id for r in runs], "needed": d.needed, "admissible": d.admissible,
            "excluded": d.excluded, "queue_positions": positions, "queue_length_before": queued_before,
            "interleave_seed": self.seed, "randomised": self.randomised, "reason": d.reason}))
