"""Every sweep under a directory, queryable: the catalogue (`zbench catalog`) and the rows of several
sweeps at once with their environments (`A.load_sweeps`, with `stats/across.py`).

A sweep is a directory holding `results.parquet`. DuckDB reads all of them in one query
(`read_parquet([...], union_by_name = true)`: an older sweep without a newer column gets NULL there),
so a catalogue of a shared directory costs one scan, not one pandas load per sweep. The environment
of a sweep is what its results cannot show by themselves and a comparison across sweeps must hold
equal unless it is the question: the OpenZFS release (from each session's host provenance), the
data disks' model and the host (a lab, with its accelerator, or a real host's name). `check_comparable`
refuses, in one line, sweeps whose environments differ in something not chosen for comparison.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from zbench_lib.analysis.data.flags import normalise_flags, select_admissible
from zbench_lib.analysis.data.sweep_data import read_events, replacement_runs, resolve_sweep_dir, with_load_level
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.paths import REPO_ROOT

DEFAULT_ROOTS = ("data/examples", "data/sweeps")
# What a comparison across sweeps holds equal unless the user chose it as the question.
ENVIRONMENT = ("zfs", "disk_model", "host")
MAX_DEPTH = 4                   # sweeps sit at <root>/<id>/ or one or two levels below (a shared tree)
_LISTED = {"layout": "layouts", "workload": "workloads", "disk_model": "disk_models"}


@dataclass(frozen=True)
class Environment:
    """What a sweep ran on, beyond its factors: each field a sorted, comma-joined set of values."""
    sweep_dir: str
    zfs: str            # OpenZFS releases ("2.3"; "2.1, 2.3" when the release was a factor)
    disk_model: str     # the data disks' model(s) in the results
    host: str           # "lab (tcg)", "lab (kvm)", or a real host's name

    def differs(self, other: "Environment") -> list[str]:
        return [k for k in ENVIRONMENT if getattr(self, k) != getattr(other, k)]


def sweep_dirs(roots=None) -> list[Path]:
    """The sweep directories (holding results.parquet) under `roots` (default: DEFAULT_ROOTS), sorted.

    A root that is itself a sweep is listed; one that does not exist is skipped unless it was named
    explicitly (a typo must not read as "no sweeps").
    """
    named = roots is not None
    roots = [roots] if isinstance(roots, (str, Path)) else list(roots or DEFAULT_ROOTS)
    found = []
    for root in roots:
        p = resolve_sweep_dir(root)
        if not p.is_dir():
            if named:
                raise ConfigError(f"catalog: {root!r} is not a directory (looked at {p})")
            continue
        found += [f.parent for f in p.glob("results.parquet")]
        for depth in range(1, MAX_DEPTH + 1):
            found += [f.parent for f in p.glob("/".join(["*"] * depth) + "/results.parquet")
                      if not any(part.startswith(".") for part in f.relative_to(p).parts)]
    return sorted(set(found))


def _sql_list(paths) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _replacements(dirs) -> pd.DataFrame:
    """(sweep_dir, run_id) of every run added to replace an excluded one: it stays out of an estimate (§8)."""
    rows = [(str(Path(d)), r)
            for d in dirs for r in sorted(replacement_runs(read_events(d)))]
    return pd.DataFrame(rows, columns=["sweep_dir", "run_id"], dtype=str)


def query(sql: str, dirs) -> pd.DataFrame:
    """Run `sql` in DuckDB over the sweeps' results as the view `results` (one row per run and
    direction, every column of every sweep; `sweep_dir` says which sweep a row came from), and the view
    `admissible`: the rows an estimate uses (no invalidating flag, first attempts of planned runs, §7-§8),
    so that a query that averages does not average excluded runs."""
    import duckdb
    files = [Path(d) / "results.parquet" for d in dirs]
    if not files:
        raise ConfigError("catalog: no sweeps to query")
    con = duckdb.connect()
    try:
        con.execute("CREATE VIEW results AS SELECT *, regexp_replace(filename, '/results\\.parquet$', '') "
                    f"AS sweep_dir FROM read_parquet({_sql_list(files)}, union_by_name = true, filename = true)")
        con.register("replacements", _replacements(dirs))
        con.execute("CREATE VIEW admissible AS SELECT * FROM results r WHERE NOT coalesce(r.flagged, false) "
                    "AND NOT EXISTS (SELECT 1 FROM replacements x WHERE x.sweep_dir = r.sweep_dir "
                    "AND x.run_id = r.run_id)")
        return con.execute(sql).df()
    except duckdb.Error as e:
        raise ConfigError(f"catalog query failed: {' '.join(str(e).split())[:300]}") from None
    finally:
        con.close()


def _release(text) -> str | None:
    m = re.search(r"(\d+)\.(\d+)\.\d+", str(text or ""))
    return f"{m.group(1)}.{m.group(2)}" if m else None


IMPORTED = "fio import"             # provenance.json's origin of an imported sweep (sweeps/importing/import_store.py)
NOT_RECORDED = "not recorded"


def _imported_environment(p: Path) -> Environment | None:
    """An imported sweep's environment as its user gave it (provenance.json), "not recorded" where not."""
    try:
        prov = json.loads((p / "provenance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(prov, dict) or prov.get("origin") != IMPORTED:
        return None
    env = prov.get("environment") or {}
    m = re.search(r"(\d+)\.(\d+)", str(env.get("zfs", "")))
    return Environment(str(p), f"{m.group(1)}.{m.group(2)}" if m else NOT_RECORDED,
                       str(env.get("disk_model") or NOT_RECORDED), str(env.get("host") or NOT_RECORDED))


def environment(sweep_dir, disk_models=()) -> Environment:
    """A sweep's environment from its host provenance files (one per session) and its disk models; an imported
    sweep's from what its user gave (`zbench import --env`), "not recorded" where nothing was given."""
    p = Path(sweep_dir)
    imported = _imported_environment(p)
    if imported is not None:
        return imported
    releases, hosts = set(), set()
    for f in sorted(p.glob("host-provenance-*.json")):
        try:
            prov = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue                    # unreadable: the release stays unknown, never guessed
        rel = _release(prov.get("zfs_kmod") or prov.get("zfs_userland"))
        releases |= {rel} if rel else set()
        host = str(prov.get("host", ""))
        hosts.add(f"lab ({prov.get('lab_accel', '?')})" if host.startswith("lab:") else host or "?")
    join = lambda xs: ", ".join(sorted(xs)) or "unknown"    # noqa: E731
    return Environment(str(p), join(releases), join(str(m) for m in disk_models if m == m and m), join(hosts))


def catalog(roots=None) -> pd.DataFrame:
    """One row per sweep under `roots`: id, question, rows, runs, cells, excluded runs, layouts,
    workloads, its environment and where it is. DuckDB reads every results.parquet in one query."""
    dirs = sweep_dirs(roots)
    if not dirs:
        return pd.DataFrame(columns=["sweep", "rows", "runs", "cells", *ENVIRONMENT, "path"])
    cols = set(query("SELECT * FROM results LIMIT 0", dirs).columns)
    listed = ", ".join(f"string_agg(DISTINCT CAST({c} AS VARCHAR), ', ' ORDER BY CAST({c} AS VARCHAR)) AS {name}"
                       for c, name in _LISTED.items() if c in cols)
    runs = "count(DISTINCT run_id)" if "run_id" in cols else "count(*)"
    # config_id names a cell's pool replicate: cells are configurations, replicates a column of their own
    reps = "greatest(count(DISTINCT pool_replicate), 1)" if "pool_replicate" in cols else "1"
    cells = f"count(DISTINCT config_id) // {reps}" if "config_id" in cols else "NULL"
    excluded = "count(DISTINCT run_id) FILTER (WHERE flagged)" if {"flagged", "run_id"} <= cols else "NULL"
    sweep = "any_value(sweep_id)" if "sweep_id" in cols else "any_value(sweep)" if "sweep" in cols else "NULL"
    t = query(f"SELECT sweep_dir, {sweep} AS sweep, count(*) AS rows, {runs} AS runs, {cells} AS cells, "
              f"{reps} AS pools_per_cell, {excluded} AS excluded_runs{', ' + listed if listed else ''} "
              "FROM results GROUP BY sweep_dir ORDER BY sweep_dir", dirs)
    envs = [environment(d, str(m).split(", ") if m == m and m else ())
            for d, m in zip(t["sweep_dir"], t.get("disk_models", pd.Series([None] * len(t))))]
    t["zfs"] = [e.zfs for e in envs]
    t["host"] = [e.host for e in envs]
    t["disk_model"] = t.pop("disk_models") if "disk_models" in t else "unknown"
    imported = [_imported_environment(Path(d)) is not None for d in t["sweep_dir"]]
    t["disk_model"] = [e.disk_model if i else m for e, i, m in zip(envs, imported, t["disk_model"])]
    t["question"] = [_question(d) for d in t["sweep_dir"]]
    t["path"] = [_shown(d) for d in t.pop("sweep_dir")]
    t["sweep"] = t["sweep"].fillna(pd.Series([Path(p).name for p in t["path"]]))
    return t


def _question(sweep_dir) -> str:
    import yaml
    try:
        spec = yaml.safe_load((Path(sweep_dir) / "spec.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return ""
    return " ".join(str(spec.get("question", "")).split()) if isinstance(spec, dict) else ""


def _shown(path) -> str:
    """A path relative to the repository when it is inside it (shorter, and the same on every machine)."""
    p = Path(path)
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def check_comparable(envs: list[Environment], compare=(), allow_mixed: bool = False) -> None:
    """Refuse sweeps whose environments differ in something not in `compare`, in one line."""
    chosen = {compare} if isinstance(compare, str) else set(compare or ())
    unknown = chosen - set(ENVIRONMENT)
    if unknown:
        raise ConfigError(f"load_sweeps: compare={sorted(unknown)} is not an environment; "
                          f"choose from {', '.join(ENVIRONMENT)}")
    if allow_mixed or len(envs) < 2:
        return
    for key in ENVIRONMENT:
        values = {getattr(e, key) for e in envs}
        if key not in chosen and len(values) > 1:
            # Sorted by value, then name: the line reads the same whatever order the sweeps were found in.
            pairs = sorted((str(getattr(e, key)), Path(e.sweep_dir).name) for e in envs)
            shown = "; ".join(f"{name}: {value}" for value, name in pairs)
            raise ConfigError(f"these sweeps differ in {key} ({shown}), which was not chosen for comparison: "
                              f"pass compare=[{key!r}] to compare along it, or allow_mixed=True")


def load_rows(dirs, where: str | None = None, include_flagged: bool = False) -> pd.DataFrame:
    """The admissible first-attempt rows of several sweeps (DuckDB over their parquet files, `where`
    an optional SQL condition on the results' columns), flags read as in one sweep's analysis."""
    sql = "SELECT * FROM results" + (f" WHERE {where}" if where else "")
    df = query(sql, dirs)
    parts = []
    for d, part in df.groupby("sweep_dir", sort=True):
        part = normalise_flags(part.drop(columns=["filename"]).reset_index(drop=True))
        if "run_id" in part:
            part["replacement"] = part["run_id"].isin(replacement_runs(read_events(d)))
        if "sweep_id" not in part or part["sweep_id"].isna().all():
            part["sweep_id"] = part["sweep"] if "sweep" in part else Path(d).name
        parts.append(select_admissible(part, include_flagged=include_flagged))
    return with_load_level(pd.concat(parts, ignore_index=True)) if parts else df
