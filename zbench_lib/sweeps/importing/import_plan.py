"""An import's plan: every file read and checked, its groups in cells, the cells' repetitions, and the dry
summary (files, cells, repetitions, factors found) `zbench import --dry-run` prints.

A file becomes one run per group of its fio report (a group is one measurement: `measure/imported_rows.py`).
A run's configuration is what its fields say (the path's, the map's: `fields`) and what fio's JSON says
(its workload, rw, block size, depth, jobs, engine, O_DIRECT, O_SYNC, size, runtime); a field that fio's
own options contradict ("numjobs 4 in the path, 2 in fio's options") is one line naming the file, and a
field fio does not state fills in for it. Runs of one configuration are a cell's repetitions, numbered by
their ``rep`` field where every file of the cell has one, else in path order. A cell whose files come
from two fio releases is refused whole: its repetitions would not be repetitions of one measurement
(releases change fio's defaults and its accounting).

Each file that cannot be imported is one `sources.Problem` line naming it: not JSON, a text report,
truncated, no job, a field the registry refuses, a contradiction, a cell of mixed fio versions, a
repetition given twice. `ImportPlan.problems` lists them; the store refuses the import unless they are
set aside on request (import_store).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.measure.imported_rows import CONFIG, FioReport, group_rows, has_lat_bins, other_options, read_report
from zbench_lib.sweeps.importing.fields import FileFields, check_fields
from zbench_lib.sweeps.importing.sources import Problem, SourceFile, sources
from zbench_lib.sweeps.planning.blocks import run_id as make_run_id

FORMAT = "zbench-import-1"          # plan.json's format of an imported sweep


@dataclass(frozen=True)
class Unit:
    """One group of one file: what it is, what it says, and what fio says of it."""
    source: SourceFile
    fields: FileFields
    group: int
    config: dict                    # every configuration column: the fields' and fio's
    version: str
    notes: tuple[str, ...]
    bins: bool                      # json+ lat bins (a latency histogram)
    lat_source: str                 # where its lat percentiles come from (imported_rows.lat_pct_source)
    options: dict                   # fio's other options (imported_rows.other_options): one in a cell
    sha256: str = ""                # of the bytes read: the copy filed must be them (import_store)
    rows: tuple = ()                # `group_rows` of those bytes: what the store's rebuild derives from the copy


@dataclass(frozen=True)
class ImportedRun:
    run_id: str
    cell_id: str
    rep: int
    order_index: int
    unit: Unit


@dataclass(frozen=True)
class ImportCell:
    cell_id: str
    factors: dict
    runs: tuple[ImportedRun, ...]

    @property
    def workload(self) -> str:
        return str(self.factors.get("workload"))


@dataclass(frozen=True)
class ImportPlan:
    """What an import will write (see the module's text)."""
    source: Path
    pattern: str | None
    map_path: str | None
    surface: str | None
    cells: tuple[ImportCell, ...]
    problems: tuple[Problem, ...]
    candidates: int                         # files found (imported or not)
    field_names: tuple[str, ...] = ()       # the names the path or the map gave
    environment: dict = field(default_factory=dict)
    sweep_id: str = ""                      # the store's name, once it has one (plan.json's "sweep")

    @property
    def runs(self) -> list[ImportedRun]:
        return sorted((r for c in self.cells for r in c.runs), key=lambda r: r.order_index)

    def to_dict(self) -> dict:
        """plan.json: the cells with their factors, the runs, what the import read (load_plan, SweepRuns)."""
        return {"format": FORMAT, "sweep": self.sweep_id, "imported": True, "surface": self.surface,
                "source": str(self.source), "path_pattern": self.pattern, "map": self.map_path,
                "cells": [{"cell_id": c.cell_id, "factors": c.factors, "workload": c.workload,
                           "template": c.factors.get("template"), "pool_id": None, "target_id": None}
                          for c in self.cells],
                "runs": [{"run_id": r.run_id, "cell_id": r.cell_id, "rep": r.rep, "order": r.order_index,
                          "source": r.unit.source.rel, "group": r.unit.group} for r in self.runs]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, default=str) + "\n"


def _unit_config(fields: FileFields, fio: dict) -> dict:
    """A group's configuration: fio's statement with the fields over it where fio says nothing; a field fio
    contradicts raises."""
    out = dict(fio)
    for k, v in fields.columns.items():
        said = fio.get(k)
        if k in CONFIG and said is not None and k != "workload" and said != v:
            raise ConfigError(f"{k} is {v!r} in its path or the map, but fio's own options say {said!r}")
        out[k] = v
    return out


def _units(src: SourceFile, surface: str | None) -> list[Unit]:
    """The file's groups as units; ZbenchError (ConfigError too) in one line if it cannot be imported."""
    try:
        data = src.path.read_bytes()
    except OSError as e:
        raise ZbenchError(f"cannot read it: {e.strerror or e}") from None
    report: FioReport = read_report(data.decode(errors="replace"))
    sha = hashlib.sha256(data).hexdigest()
    fields = check_fields(src.fields, surface)
    out = []
    for g in report.groups():
        rows = group_rows(report, g)
        fio = {k: rows[0].get(k) for k in CONFIG if rows[0].get(k) is not None}
        bins = has_lat_bins(report, g)
        out.append(Unit(src, fields, g, _unit_config(fields, fio), report.version, report.notes, bins,
                        rows[0]["lat_pct_source"], other_options(report, g), sha, tuple(rows)))
    return out


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def _cell_id(key: str) -> str:
    return "c" + hashlib.sha1(key.encode()).hexdigest()[:7]


def _mixed_versions(units: list[Unit]) -> list[Problem]:
    versions = Counter(u.version for u in units)
    if len(versions) < 2:
        return []
    shown = ", ".join(f"{v or 'no version'} ({n})" for v, n in sorted(versions.items()))
    return [Problem(u.source.rel, f"its cell mixes fio versions ({shown}): this file is {u.version or 'unversioned'}; "
                                  "import each release apart") for u in units]


def _differing_options(units: list[Unit]) -> list[Problem]:
    """A cell's files that differ in an option beyond what they ran: not repetitions of one configuration."""
    keys = sorted({k for u in units for k in u.options})
    differ = [k for k in keys if len({str(u.options.get(k)) for u in units}) > 1]
    if not differ:
        return []
    k = differ[0]
    shown = ", ".join(sorted({str(u.options.get(k, "(unset)")) for u in units}))
    return [Problem(u.source.rel, f"its cell's files differ in fio's {k} ({shown}): not repetitions of one "
                                  f"configuration; give {k} as a field of the path or the map to import them apart")
            for u in units]


def _numbered(units: list[Unit]) -> tuple[list[tuple[int, Unit]], list[Problem]]:
    """(rep, unit) of a cell's units: their rep fields where every unit has one (a repeat is a problem), else
    1..n in path order."""
    units = sorted(units, key=lambda u: (u.source.rel, u.group))
    if not all(u.fields.rep is not None for u in units):
        return list(enumerate(units, start=1)), []
    seen: dict[int, Unit] = {}
    problems = []
    for u in sorted(units, key=lambda u: (u.fields.rep, u.source.rel)):
        if u.fields.rep in seen:
            problems.append(Problem(u.source.rel, f"rep {u.fields.rep} of its cell again (also "
                                                  f"{seen[u.fields.rep].source.rel})"))
        else:
            seen[u.fields.rep] = u
    return sorted(seen.items()), problems


def _cells(units: list[Unit]) -> tuple[list[ImportCell], list[Problem]]:
    by_key: dict[str, list[Unit]] = defaultdict(list)
    for u in units:
        by_key[_key(u.config)].append(u)
    cells, problems = [], []
    order = {(u.source.rel, u.group): i for i, u in enumerate(sorted(units, key=lambda u: (u.source.rel, u.group)))}
    for key, members in sorted(by_key.items()):
        mixed = _mixed_versions(members) or _differing_options(members)
        if mixed:
            problems += mixed
            continue
        numbered, repeated = _numbered(members)
        problems += repeated
        cid = _cell_id(key)
        runs = tuple(ImportedRun(make_run_id(cid, rep), cid, rep, order[(u.source.rel, u.group)], u)
                     for rep, u in numbered)
        cells.append(ImportCell(cid, dict(members[0].config), runs))
    return cells, problems


def plan_import(src, pattern: str | None = None, map_path=None, surface: str | None = None,
                environment: dict | None = None) -> ImportPlan:
    """Read and check every file of `src` (see the module's text); nothing is written."""
    files, problems = sources(src, pattern, map_path)
    found = len(files) + len(problems)
    units: list[Unit] = []
    for f in files:
        try:
            units += _units(f, surface)
        except ZbenchError as e:
            problems.append(Problem(f.rel, " ".join(str(e).split())))
    cells, more = _cells(units)
    bad = {p.rel for p in problems + more}
    if bad & {u.source.rel for u in units}:     # a file left out is left out whole, all its groups
        cells, _ = _cells([u for u in units if u.source.rel not in bad])
    names = tuple(dict.fromkeys(n for f in files for n in f.fields))
    return ImportPlan(Path(src).resolve(), pattern, str(map_path) if map_path else None, surface, tuple(cells),
                      tuple(sorted(problems + more, key=lambda p: p.rel)), found, names, dict(environment or {}))
