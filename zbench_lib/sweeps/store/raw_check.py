"""Which raw attempts a results rebuild may use: runs of the plan, recorded, whose files parse.

Reading only: setting an attempt aside and recording it is the store's (``on_invalid``).

- ``read_attempt`` reads a COMPLETE attempt's meta.json and derives its rows; a file
  that does not parse (a torn fio.json beside COMPLETE after a power cut) gives a
  one-line reason instead of an exception.
- ``SweepRuns`` knows a sweep's runs from plan.json (planned runs, and added repetitions
  ``<cell>-rNN`` of planned cells) and events.jsonl (``run started``): a run directory
  that is not one of them is stray; a planned run with no usable attempt is missing.
- ``usable_runs`` walks raw/ with both and ``results_frame`` makes the results table;
  ``histogram_frame`` the completion-latency histograms of the same runs (json+ bins);
  a sweep with clients also ``client_frame`` (a row per client and run) and
  ``client_histogram_frame`` (each client's own bins per run).
  Whatever is left out is named in a ``StoreWarning``, never dropped silently.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd

from zbench_lib.core.errors import ZbenchError
from zbench_lib.core.events import Event
from zbench_lib.measure.client_rows import (CLIENT_HIST_COLUMNS, CLIENT_TABLE_COLUMNS, client_histograms,
                                            client_table, is_clients_run)
from zbench_lib.measure.fio_hist import HIST_COLUMNS, attempt_histograms
from zbench_lib.measure.imported_rows import imported_histograms, is_imported_run
from zbench_lib.sweeps.planning.blocks import run_id as make_run_id

INVALID_MARKER = "COMPLETE.invalid"
HISTOGRAMS = "latency_hist.parquet"       # histogram_frame's table, beside results.parquet
CLIENTS = "clients.parquet"               # client_frame's table: only a sweep with clients has one
CLIENT_HISTOGRAMS = "client_hist.parquet"  # client_histogram_frame's table: beside clients.parquet, never without
CLIENT_ID_COLUMNS = ["run_id", "attempt", "cell_id"]
# What torn or malformed raw files raise while rows are derived (a missing file, bad JSON,
# a JSON value of the wrong shape, fio_parse's own ZbenchError).
PARSE_ERRORS = (ZbenchError, OSError, ValueError, KeyError, TypeError, IndexError, AttributeError)
ID_COLUMNS = ["sweep", "run_id", "cell_id", "rep", "attempt", "order_index"]
_REP_RE = re.compile(r"^(.+)-r(\d+)$")
_LISTED = 10


class StoreWarning(UserWarning):
    """Something in raw/ is left out of the results; the message names it."""


def warn(message: str) -> None:
    warnings.warn(message, StoreWarning, stacklevel=3)


def one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def read_attempt(attempt: Path, parse_run) -> tuple[dict, list, str | None]:
    """(meta, rows, None) of a COMPLETE attempt, or ({}, [], reason) if its files do not parse."""
    try:
        meta = json.loads((Path(attempt) / "meta.json").read_text())
        if not isinstance(meta, dict):
            raise ValueError("meta.json is not a JSON object")
        rows = list(parse_run(Path(attempt), meta))
    except PARSE_ERRORS as exc:
        return {}, [], one_line(exc)
    return meta, rows, None


def usable_runs(raw: Path, runs: "SweepRuns", attempts_of, parse_run, on_invalid) -> list[tuple[str, dict, list]]:
    """(run_id, meta, rows) of each run of ``raw`` the results may use, by run id.

    A stray run directory is left out with a warning; ``on_invalid(run_id, attempt, reason)``
    gets a COMPLETE attempt whose files do not parse (None: skipped with a warning); planned
    runs left out are named in warnings. ``attempts_of(run_id)`` lists a run's attempts.
    """
    found = []
    for d in sorted(p for p in raw.iterdir() if p.is_dir()) if raw.is_dir() else []:
        if (stray := runs.stray(d.name)) is not None:
            warn(f"raw/{d.name}: {stray}; excluded from the results")
            continue
        done = [a for a in attempts_of(d.name) if (a / "COMPLETE").exists()]
        if len(done) > 1:
            raise ZbenchError(f"run {d.name} has {len(done)} complete attempts "
                              f"({', '.join(a.name for a in done)}); the store is inconsistent")
        if not done:
            continue
        meta, rows, why = read_attempt(done[0], parse_run)
        if why is not None:
            if on_invalid is None:
                warn(f"{done[0].relative_to(raw.parent)}: its files do not parse ({why}); skipped")
            else:
                on_invalid(d.name, done[0], why)
            continue
        found.append((d.name, meta, rows))
    for message in runs.missing({name for name, _, _ in found}, raw):
        warn(message)
    return found


def results_frame(runs: list[tuple[str, dict, list]], sweep_id: str) -> pd.DataFrame:
    """The results table of ``(run_id, meta, rows)`` per run: ids, factors, then the rows' columns.

    Every factor of meta["factors"] and the run's ids become columns (the factors win
    over a parser column of the same name); rows are sorted by run and direction.
    """
    rows, factor_cols = [], []
    for run_id, meta, run_rows in runs:
        factors = meta.get("factors", {})
        factor_cols += [k for k in factors if k not in factor_cols]
        ids = {"sweep": meta.get("sweep", sweep_id), "run_id": run_id, "cell_id": meta.get("cell_id"),
               "rep": meta.get("rep"), "attempt": meta.get("attempt"), "order_index": meta.get("order_index")}
        rows += [{**row, **factors, **ids} for row in run_rows]
    df = pd.DataFrame(rows)
    if len(df):
        first = ID_COLUMNS + [c for c in factor_cols if c not in ID_COLUMNS]
        df = df[first + [c for c in df.columns if c not in first]]
        df = df.sort_values(["run_id"] + (["direction"] if "direction" in df else []), kind="stable")
        df = df.reset_index(drop=True)
    return df


def histogram_frame(runs: list[tuple[str, dict, list]], raw: Path) -> pd.DataFrame:
    """latency_hist.parquet's table: run_id, attempt, direction, bin_ns, count of each run's
    completion latencies (its jobs' json+ bins summed; fio_hist), for the runs `results_frame`
    gets. A run recorded with plain json has no rows: an empty table says no run had bins. An imported run's
    are its group's bins in its copy of the fio file (measure/imported_rows.py)."""
    cols: dict[str, list] = {c: [] for c in HIST_COLUMNS}
    for run_id, _, _ in runs:
        for a in sorted(p for p in (Path(raw) / run_id).glob("attempt-*") if (p / "COMPLETE").exists()):
            bins = imported_histograms(a) if is_imported_run(a) else attempt_histograms(a)
            cols["run_id"] += [run_id] * len(bins)
            cols["attempt"] += [int(a.name.split("-")[1])] * len(bins)
            for c in HIST_COLUMNS[2:]:          # columns, not a dict a bin: thousands of runs have 10^5-10^6 bins
                cols[c] += [r[c] for r in bins]
    df = pd.DataFrame(cols, columns=HIST_COLUMNS)
    return df.astype({"run_id": str, "attempt": "int64", "direction": str, "bin_ns": "int64", "count": "int64"})


def _clients_attempts(runs: list[tuple[str, dict, list]], raw: Path):
    """(run_id, meta, attempt number, attempt dir) of each COMPLETE clients attempt of `runs`."""
    for run_id, meta, _ in runs:
        for a in sorted(p for p in (Path(raw) / run_id).glob("attempt-*") if (p / "COMPLETE").exists()):
            if is_clients_run(a):
                yield run_id, meta, int(a.name.split("-")[1]), a


def client_frame(runs: list[tuple[str, dict, list]], raw: Path) -> pd.DataFrame:
    """clients.parquet's table: a row per client and direction of each clients run (issue 30;
    `measure.client_rows.client_table`), for the runs `results_frame` gets, the same attempt as its row."""
    recs = [{"run_id": run_id, "attempt": n, "cell_id": meta.get("cell_id"), **r}
            for run_id, meta, n, a in _clients_attempts(runs, raw) for r in client_table(a)]
    return pd.DataFrame.from_records(recs, columns=[*CLIENT_ID_COLUMNS, *CLIENT_TABLE_COLUMNS])


def client_histogram_frame(runs: list[tuple[str, dict, list]], raw: Path) -> pd.DataFrame:
    """client_hist.parquet's table: run_id, attempt, direction, client, bin_ns, count of each client's own
    completion latencies in each clients run (`measure.client_rows.client_histograms`): latency_hist.parquet
    keeps only their sum, and a client's p99 over a cell's runs merges its own bins (methods §18, §20)."""
    recs = [{"run_id": run_id, "attempt": n, **r}
            for run_id, _, n, a in _clients_attempts(runs, raw) for r in client_histograms(a)]
    df = pd.DataFrame.from_records(recs, columns=["run_id", "attempt", *CLIENT_HIST_COLUMNS])
    return df.astype({"run_id": str, "attempt": "int64", "direction": str, "client": str, "bin_ns": "int64",
                      "count": "int64"})


def derived_files(runs: list[tuple[str, dict, list]], raw: Path, sweep_id: str) -> tuple[pd.DataFrame, dict]:
    """The results table, and what the store writes from raw: latency_hist.parquet first (so
    results.parquet, written after it, is never newer than the histograms), then the results.
    A sweep with clients has clients.parquet and client_hist.parquet too, written before the results likewise."""
    df = results_frame(runs, sweep_id)
    clients = client_frame(runs, raw)
    per_client = {CLIENTS: clients.to_parquet(index=False),
                  CLIENT_HISTOGRAMS: client_histogram_frame(runs, raw).to_parquet(index=False)} if len(clients) else {}
    return df, {HISTOGRAMS: histogram_frame(runs, raw).to_parquet(index=False), **per_client,
                "results.parquet": df.to_parquet(index=False), "results.csv": df.to_csv(index=False)}


def _listing(ids) -> str:
    ids = sorted(ids)
    return ", ".join(ids[:_LISTED]) + (f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else "")


class SweepRuns:
    """The runs a sweep's plan.json and events.jsonl account for."""

    def __init__(self, plan: dict, events: list[dict]):
        self.planned = {r["run_id"] for r in plan.get("runs", [])}
        self.cells = {c["cell_id"] for c in plan.get("cells", [])}
        self.pilot = int((plan.get("repetitions") or {}).get("pilot", 0))
        self.recorded = {e.get("run_id") for e in events if e.get("event") == Event.RUN_STARTED}
        self.said_complete = {(e.get("run_id"), e.get("attempt")) for e in events
                              if e.get("event") == Event.RUN_COMPLETED}

    @classmethod
    def read(cls, store_path: Path, events: list[dict]) -> "SweepRuns":
        """From a store's plan.json and its events (``Store.events()``)."""
        return cls(json.loads((Path(store_path) / "plan.json").read_text()), events)

    def _added(self, name: str) -> bool:
        m = _REP_RE.match(name)
        return bool(m) and m.group(1) in self.cells and int(m.group(2)) > self.pilot \
            and name == make_run_id(m.group(1), int(m.group(2)))

    def stray(self, name: str) -> str | None:
        """Why raw/<name> is not a run of this sweep, or None if it is one."""
        if name not in self.planned and not self._added(name):
            return "not a run of this sweep's plan (plan.json)"
        if name not in self.recorded:
            return "never recorded in events.jsonl (no 'run started')"
        return None

    def missing(self, used: set, raw: Path) -> list[str]:
        """Warnings for runs left out: recorded complete but without COMPLETE, planned but not usable."""
        out, named = [], set()
        for run, attempt in sorted(self.said_complete, key=str):
            a = Path(raw) / str(run) / f"attempt-{attempt}"
            if run in used or self.stray(str(run)) or not a.is_dir() or (a / "COMPLETE").exists() \
                    or (a / INVALID_MARKER).exists():
                continue
            named.add(run)
            out.append(f"raw/{run}/attempt-{attempt} was recorded complete but its COMPLETE marker is gone: "
                       "the run is missing from the results (not judged)")
        rest = self.planned - used - named
        if rest:
            out.append(f"{len(rest)} planned run(s) have no valid COMPLETE attempt and are missing from the "
                       f"results (not judged): {_listing(rest)}")
        return out
