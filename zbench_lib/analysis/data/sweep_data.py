"""A sweep as the analysis sees it: load it with its plan, check its truth flags, pick admissible runs.

The flags themselves (three-valued: True / False / None) and their kinds are read in
`flags.py` and re-exported here; the planned cells and their status in `coverage.py`. `read_events`
reads the store's events.jsonl (the resilver study's timings live there).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import yaml

from zbench_lib.analysis.data.columns import LABEL_PREFIX, config_columns
from zbench_lib.analysis.data.coverage import load_plan
from zbench_lib.analysis.data.flags import normalise_flags
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.core.sizes import format_size, parse_size
from zbench_lib.measure.load import SATURATION, Load
from zbench_lib.sweeps.store.raw_check import CLIENT_HISTOGRAMS, CLIENTS, HISTOGRAMS


# Columns whose values name themselves ("randwrite", "raidz2"); the others are said with their name.
BARE_COLUMNS = ("workload", "direction", "layout", "sweep_id")
# Auxiliary vdevs by their role: a count of 0 is "no SLOG", 1 "SLOG", more "2 SLOG disks".
AUX_VDEVS = {"log": "SLOG", "cache": "L2ARC", "special": "special vdev"}


def setting_text(column: str, value) -> str:
    """A configuration column's value as a reader says it: 'no SLOG', 'SLOG', 'sync always', '16K', 'raidz2'.

    Examples
    --------
    >>> [setting_text(c, v) for c, v in (("log", 0), ("log", 1), ("cache", 2), ("sync", "always"))]
    ['no SLOG', 'SLOG', '2 L2ARC disks', 'sync always']
    >>> setting_text("volblocksize_bytes", 16384), setting_text("layout", "raidz2"), setting_text("iodepth", 4)
    ('16K', 'raidz2', 'iodepth 4')
    >>> setting_text("label_kernel", "6.1")
    'kernel 6.1'
    >>> [setting_text("load", v) for v in ("saturation", "0.5", "2000iops")]
    ['closed loop, at saturation', 'at 50% of saturation (open loop)', 'at 2,000 IOPS offered (open loop)']
    """
    if column == "load":        # the load factor (methods §21): every percentile says the load it was measured at
        return load_text(value)
    if str(column).startswith(LABEL_PREFIX):      # an imported sweep's user label, said by its own name
        name = column.removeprefix(LABEL_PREFIX)
        return f"no {name}" if pd.isna(value) else f"{name} {value}"
    if pd.isna(value):
        return f"no {column}"
    if column in AUX_VDEVS and not isinstance(value, str) and float(value).is_integer():
        n, role = int(value), AUX_VDEVS[column]
        return f"no {role}" if n == 0 else role if n == 1 else f"{n} {role} disks"
    if column.endswith("_bytes"):
        return format_size(int(value))
    return str(value) if column in BARE_COLUMNS else f"{column.replace('_', ' ')} {value}"


def load_text(level) -> str:
    """A level of the load factor as a reader says it: 'closed loop, at saturation' or 'at 50% of saturation
    (open loop)' (a sweep without the factor is closed loop, at saturation)."""
    load = Load.of(level)
    if load.saturation:
        return "closed loop, at saturation"
    return f"at {load.label()}{' offered' if load.iops is not None else ''} (open loop)"


class Sweep(NamedTuple):
    path: Path
    spec: dict
    provenance: dict
    results: pd.DataFrame
    plan: pd.DataFrame | None = None    # planned cells (coverage.load_plan); empty without plan.json
    histograms: pd.DataFrame | None = None   # latency_hist.parquet (tails.cell_tails); None without it
    clients: pd.DataFrame | None = None      # clients.parquet (a sweep with clients, issue 30); None without
    client_histograms: pd.DataFrame | None = None   # client_hist.parquet: each client's bins (stats.fairness)


def resolve_sweep_dir(path) -> Path:
    """`path` as given, or relative to the repository root (notebooks run from notebooks/)."""
    p = Path(path).expanduser()
    if not p.is_absolute() and not p.exists() and (REPO_ROOT / p).exists():
        p = REPO_ROOT / p
    return p.resolve()


def read_results(path: Path) -> pd.DataFrame:
    """A sweep directory's results table as stored: results.parquet, else results.csv."""
    if (path / "results.parquet").exists():
        return pd.read_parquet(path / "results.parquet")
    if (path / "results.csv").exists():
        return pd.read_csv(path / "results.csv")
    raise ConfigError(f"{path} has no results.parquet or results.csv: has the sweep run?")


def data_disks_vary(df: pd.DataFrame) -> bool:
    """Whether some layout's data disks vary in `df`: a scaling study, what the scaling notebook needs."""
    return {"layout", "data_disks"} <= set(df) and bool((df.groupby("layout")["data_disks"].nunique() > 1).any())


def load_sweep(path) -> Sweep:
    """Read a sweep directory: spec.yaml, provenance.json, results.parquet (or .csv), plan.json,
    latency_hist.parquet.

    Flag columns become True / False / <NA> (`flags.tristate`), `flagged` is "an invalidating
    flag True" (`flags.normalise_flags`), `replacement` marks the runs added to replace excluded
    ones (from events.jsonl), and `plan` holds the planned cells so that none is silently dropped.
    `histograms` is each run's completion-latency histogram (None for a store built before they
    were kept); a sweep with clients has `clients` (a row per client and run) and `client_histograms`
    (each client's own bins per run), None otherwise.
    """
    p = resolve_sweep_dir(path)
    if not p.is_dir():
        raise ConfigError(f"sweep directory {path!r} does not exist (looked at {p})")
    spec = yaml.safe_load((p / "spec.yaml").read_text()) if (p / "spec.yaml").exists() else {}
    prov = json.loads((p / "provenance.json").read_text()) if (p / "provenance.json").exists() else {}
    # The executor records the host under test once per session (a resume may boot a new lab).
    # With the OpenZFS release as a factor each release's lab is a session of its own:
    # every session's release is kept (the merge keeps only the last one's).
    releases = []
    for extra in sorted(p.glob("host-provenance-*.json")):
        session = json.loads(extra.read_text())
        prov.update({k: v for k, v in session.items() if not k.startswith("zfs_param.")})
        releases.append({k: session.get(k) for k in ("zfs_userland", "zfs_kmod", "zfs_version", "zfs_kmod_version")})
    if len({json.dumps(r, sort_keys=True) for r in releases}) > 1:     # else the merged record says it
        prov["session_openzfs"] = releases
    df = normalise_flags(read_results(p))
    if "run_id" in df:                          # first attempts are primary: replacements are marked
        df["replacement"] = df["run_id"].isin(replacement_runs(read_events(p)))
    if "surface" in df and spec:                # only raw cells carry it: the others are the spec's surface
        df["surface"] = df["surface"].fillna(spec.get("surface"))
    if "sweep_id" not in df:                  # two sweeps must stay apart when compared
        df["sweep_id"] = df["sweep"] if "sweep" in df else spec.get("name", p.name) if spec else p.name
    ids = df["sweep_id"].dropna().unique()
    hist = pd.read_parquet(p / HISTOGRAMS) if (p / HISTOGRAMS).is_file() else None
    clients = pd.read_parquet(p / CLIENTS) if (p / CLIENTS).is_file() else None
    client_hist = pd.read_parquet(p / CLIENT_HISTOGRAMS) if (p / CLIENT_HISTOGRAMS).is_file() else None
    return Sweep(p, spec or {}, prov or {}, df, load_plan(p, ids[0] if len(ids) == 1 else None), hist, clients,
                 client_hist)


def join_sweeps(sweeps: list[Sweep]) -> Sweep:
    """Sweeps read as one (the compare notebook's two): the first's directory, spec and provenance, every
    sweep's runs and planned cells, each row keeping its `sweep_id`. Their histograms are left out: run ids
    name a configuration and a repetition, so two sweeps' bins could merge under one id."""
    if len(sweeps) == 1:
        return sweeps[0]
    plans = [s.plan for s in sweeps if s.plan is not None and len(s.plan)]
    return sweeps[0]._replace(results=with_load_level(pd.concat([s.results for s in sweeps], ignore_index=True)),
                              plan=with_load_level(pd.concat(plans, ignore_index=True)) if plans else sweeps[0].plan,
                              histograms=None, clients=None, client_histograms=None)


def with_load_level(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of several sweeps with `load` filled where only some have it: a sweep without the load factor ran
    closed loop, at saturation (methods §21). Its runs then pair with the other sweep's saturation level, and
    never with an open-loop level (a missing load held equal to nothing, or to the one level the other has)."""
    if "load" not in rows or rows["load"].notna().all():
        return rows
    return rows.assign(load=rows["load"].astype(object).where(rows["load"].notna(), SATURATION))


def replacement_runs(events: list[dict]) -> set[str]:
    """Run ids the repetition rule added to replace excluded runs ("runs added", why "replace ...").

    Stein's second-stage runs are added too, but by the design, not for an excluded run: they
    are not replacements.
    """
    return {rid for e in events if e.get("event") == Event.RUNS_ADDED
            and str(e.get("why", "")).startswith("replace") for rid in e.get("run_ids") or []}


def read_events(path) -> list[dict]:
    """The sweep's events.jsonl, one dict per line; a torn or unreadable line is skipped, never raised on."""
    try:
        text = (Path(path) / "events.jsonl").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def environment_table(provenance: dict) -> pd.DataFrame:
    """Provenance as a two-column table; nested keys are joined with dots."""
    flat = pd.json_normalize(provenance, sep=".").iloc[0] if provenance else pd.Series(dtype=object)
    return pd.DataFrame({"item": list(flat.index), "value": [
        ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v) for v in flat]})


def varying_columns(df: pd.DataFrame, exclude=()) -> list[str]:
    """Configuration columns that vary in `df`, minus those the earlier ones determine.

    bs_bytes and numjobs usually follow the workload: grouping by them too would split
    nothing, and labels stay short.
    """
    out = []
    for c in (c for c in config_columns(df) if c in df.columns and c not in exclude):
        if df[c].nunique() > 1 and (not out or (df.groupby(out, dropna=False)[c].nunique() > 1).any()):
            out.append(c)
    return out


def parse_level(df: pd.DataFrame, factor: str, text):
    """The level of `factor` that `text` names ('16k' for a *_bytes column, '4', 'raidz2')."""
    if factor not in df.columns:
        raise ConfigError(f"no column {factor!r} in the results")
    levels = list(pd.unique(df[factor].dropna()))
    for lv in levels:
        if str(lv) == str(text):
            return lv
    if factor.endswith("_bytes") and re.fullmatch(r"\s*\d+\s*[kKmM]?\s*", str(text)):
        if parse_size(str(text)) in levels:
            return parse_size(str(text))
    shown = [format_size(int(v)) if factor.endswith("_bytes") else str(v) for v in sorted(levels, key=str)]
    raise ConfigError(f"{factor}={text!r} is not in the results; levels are {shown}")
