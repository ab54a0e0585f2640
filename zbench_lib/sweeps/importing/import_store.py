"""An import written as a sweep store, whole or not at all (`zbench import`, `zbench.import_fio`).

The store is a sweep's (sweeps/store/store.py): spec.yaml (the import's record: where from, the pattern,
the question, the environment as given), plan.json (`import_plan`), provenance.json (what is known and
what is not recorded), events.jsonl, ``raw/<run>/attempt-1/`` with the fio file copied unchanged into
``import/`` and its sha256 in meta.json, and results.parquet, results.csv and latency_hist.parquet rebuilt
from raw by the store's own rebuild (`measure.rows.parse_results` reads an imported attempt), then
SHA256SUMS over every file (`publish.write_manifest`), so `zbench verify` checks the store as it checks a
pack and `zbench pack` publishes it like a measured sweep.

It is built in a hidden directory beside its destination, fsynced whole and renamed into place: a refused
or interrupted import leaves nothing at the destination (a crash can leave the hidden directory, never a
store). A file that cannot be imported refuses the import, one line per file, unless `set_aside` asks
for the others; the files set aside are then named in events.jsonl and provenance.json.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from zbench_lib import __version__
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.events import Event
from zbench_lib.measure.imported_rows import IMPORT_DIR, run_rows
from zbench_lib.measure.rows import parse_results
from zbench_lib.sweeps.importing.fields import check_surface
from zbench_lib.sweeps.importing.import_plan import ImportedRun, ImportPlan, plan_import
from zbench_lib.sweeps.importing.summary import describe
from zbench_lib.sweeps.store.publish import write_manifest
from zbench_lib.sweeps.store.store import Store, fsync_path, fsync_tree

ORIGIN = "fio import"               # provenance.json's origin of an imported sweep (catalog, caveats read it)
FSYNC_WORKERS = 32
_ENV_KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")
NOT_RECORDED = ("counters (pool, devices, ARC, CPU, TXGs)", "the pool's and targets' properties and space",
                "the run's window on a host clock", "the truth checks' context (cache state, pool health)")


@dataclass(frozen=True)
class ImportOptions:
    """What an import is asked for beyond its source and destination."""
    path_pattern: str | None = None
    map_path: str | None = None
    environment: dict | None = None         # name -> value as the user gives it (zfs, host, kernel, disks ...)
    question: str | None = None
    surface: str | None = None
    set_aside: bool = False                 # import the good files, naming the others, instead of refusing


@dataclass(frozen=True)
class ImportResult:
    path: Path | None               # the store written; None for a dry run
    plan: ImportPlan
    summary: str                    # the dry summary
    rows: int                       # results rows written (0 for a dry run)
    seconds: float                  # wall time of the import


def check_environment(env: dict | None) -> dict:
    """The environment as given: plain names, one-line printable values; ConfigError naming the first bad one."""
    out = {}
    for k, v in (env or {}).items():
        text = str(v).strip()
        if not _ENV_KEY.fullmatch(str(k)) or not text or len(text) > 200 or not text.isprintable():
            raise ConfigError(f"environment {k}={str(v)[:40]!r}: a lowercase name and a one-line value "
                              "(zfs=2.2.2, host=bench1, kernel=6.1.0-18)")
        out[str(k)] = text
    return out


def _spec_text(plan: ImportPlan, opts: ImportOptions, env: dict) -> str:
    question = opts.question or f"What do the fio results imported from {plan.source.name} show?"
    doc = {"name": plan.sweep_id, "question": question, "surface": plan.surface or "not recorded",
           "imported": {"source": str(plan.source), "path_pattern": plan.pattern, "map": plan.map_path,
                        "files": len({r.unit.source.rel for r in plan.runs}), "environment": env or "not recorded"}}
    return ("# An imported sweep (zbench import): fio results measured elsewhere, read into a store; not a spec\n"
            "# zbench can run.\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


def _provenance(plan: ImportPlan, env: dict) -> dict:
    return {"origin": ORIGIN, "zbench": __version__, "source": str(plan.source), "path_pattern": plan.pattern,
            "map": plan.map_path, "environment": env, "environment_recorded": bool(env),
            "not_recorded": list(NOT_RECORDED), "set_aside": [p.line() for p in plan.problems]}


def _file_run(store: Store, run: ImportedRun, sweep_id: str, env: dict) -> None:
    src = run.unit.source
    name = f"{IMPORT_DIR}/{src.path.name}"
    data = src.path.read_bytes()
    if hashlib.sha256(data).hexdigest() != run.unit.sha256:
        raise ZbenchError(f"{src.rel} changed while it was imported; import again")
    meta = {"sweep": sweep_id, "cell_id": run.cell_id, "rep": run.rep, "order_index": run.order_index,
            "factors": run.unit.fields.columns,
            "import": {"file": name, "source": src.rel, "sha256": run.unit.sha256,
                       "group": run.unit.group, "fio_version": run.unit.version, "environment": env}}
    store.file_attempt(run.run_id, {name: data}, meta)


def _parse_run(plan: ImportPlan):
    """The store's row derivation, with each run's group rows as the plan derived them from the same bytes
    (the copy's sha256 is theirs, checked as it was filed): a second parse of thousands of files saved.
    `zbench verify` derives them again from the copies alone."""
    derived = {(r.unit.sha256, r.unit.group): r.unit.rows for r in plan.runs}

    def parse(attempt_dir, meta: dict) -> list[dict]:
        record = meta.get("import") or {}
        rows = derived.get((record.get("sha256"), record.get("group")))
        return run_rows([dict(r) for r in rows], meta) if rows is not None else parse_results(attempt_dir, meta)
    return parse


def _write(plan: ImportPlan, opts: ImportOptions, env: dict, work: Path) -> int:
    """The store, complete, in `work`/<sweep id>; the rows of its results."""
    store = Store.create(work, _spec_text(plan, opts, env), plan, sweep_id=plan.sweep_id,
                         provenance=_provenance(plan, env))
    try:
        runs = plan.runs
        store.record_many([(Event.FIO_IMPORTED, dict(source=str(plan.source), path_pattern=plan.pattern,
                                                     map=plan.map_path, files=len({r.unit.source.rel for r in runs}),
                                                     runs=len(runs), cells=len(plan.cells),
                                                     set_aside=len(plan.problems)))]
                          + [(Event.IMPORT_SET_ASIDE, dict(file=p.rel, reason=p.reason)) for p in plan.problems])
        for run in runs:
            _file_run(store, run, plan.sweep_id, env)
        store.record_many([(e, dict(run_id=r.run_id, attempt=1)) for r in runs
                           for e in (Event.RUN_STARTED, Event.RUN_COMPLETED)])
        rows = len(store.rebuild_results(_parse_run(plan)))
        store.finish(rows=rows)
    finally:
        store.close()
    write_manifest(store.path)
    return rows


def _refusal(plan: ImportPlan) -> ZbenchError:
    files = sorted({p.rel for p in plan.problems})
    lines = "\n  ".join(p.line() for p in plan.problems)
    return ZbenchError(f"{len(files)} file(s) of {plan.source} cannot be imported (nothing written; --set-aside "
                       f"imports the others and names these):\n  {lines}")


def import_fio(src, out, options: ImportOptions | None = None, *, dry_run: bool = False) -> ImportResult:
    """Import the fio results under `src` into a new sweep store at `out` (see the module's text)."""
    start, opts = time.monotonic(), options or ImportOptions()
    out = Path(out).expanduser().absolute()
    if out.exists() and not dry_run:
        raise ZbenchError(f"{out} exists; an import writes a new store (choose another --out)")
    env = check_environment(opts.environment)
    plan = replace(plan_import(src, opts.path_pattern, opts.map_path, check_surface(opts.surface), env),
                   sweep_id=out.name)
    summary = describe(plan)
    if plan.problems and not opts.set_aside and not dry_run:
        raise _refusal(plan)
    if not plan.runs and not dry_run:
        raise ZbenchError(f"{plan.source}: no fio run to import")
    if dry_run:
        return ImportResult(None, plan, summary, 0, time.monotonic() - start)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".{out.name}.importing-{os.getpid()}"
    work.mkdir()
    try:
        rows = _write(plan, opts, env, work)
        fsync_tree(work / out.name, workers=FSYNC_WORKERS)     # durable whole, then in place at once
        if out.exists():            # made meanwhile: rename would replace an empty directory
            raise ZbenchError(f"{out} appeared while importing; an import writes a new store")
        os.rename(work / out.name, out)
        fsync_path(out.parent)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ImportResult(out, plan, summary, rows, time.monotonic() - start)
