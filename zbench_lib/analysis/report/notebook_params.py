"""The analysis notebooks' parameters, checked by one call: the cell after `parameters`, and `zbench report`.

A reader opens a notebook for the question and the answer, not for twenty lines of checks (docs/style.md,
Notebooks); and `zbench report --param` must refuse a bad value before any work with the very message the
notebook's kernel would give (issue 31). So both call `check_parameters(notebook, values)`: a bad value is
one line, a ConfigError naming the notebook, the parameter, what it takes and what it got.

    check_parameters("analysis-scaling", globals())   an AnalysisParameters record, or ConfigError (also where
                                                        the sweep is no scaling study: no disk count varies)
    NOTEBOOK_PARAMETERS                                 the parameters each notebook declares
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from zbench_lib.analysis.data.sweep_data import data_disks_vary, read_results, resolve_sweep_dir
from zbench_lib.core.errors import ConfigError

# Each notebook's parameters cell declares exactly these, in this order (tests/test_notebooks_tagged.py).
NOTEBOOK_PARAMETERS = {
    "analysis-scaling": ("sweep_dir", "include_flagged", "metric", "static_figures", "timeline_run"),
    "analysis-volblocksize": ("sweep_dir", "include_flagged", "metric", "baseline", "margin", "static_figures",
                              "timeline_run"),
    "analysis-compare": ("sweep_dir", "other_sweep_dir", "factor", "baseline", "metric", "margin", "include_flagged",
                         "static_figures"),
}
# Every notebook judges each workload in its own metric by default ("auto": `data.metrics`, methods §9), as the
# headline above it does; a reader may ask for one throughput metric for all, and the compare notebook for latency.
METRICS = {"analysis-compare": ("auto", "iops", "bw_bytes_s", "lat_p99_ns")}
THROUGHPUT = ("auto", "iops", "bw_bytes_s")


@dataclass(frozen=True)
class AnalysisParameters:
    """An analysis notebook's parameters, checked; those a notebook does not declare keep their defaults."""
    notebook: str
    sweep_dir: Path                        # resolved: as given, or under the repository root
    include_flagged: bool = False
    static_figures: bool = False
    metric: str = "auto"                   # each workload's own (data.metrics), or one for every workload
    timeline_run: str = "auto"             # a run id, "auto", or "" (no timeline)
    baseline: str = "auto"
    margin: float = 0.05
    other_sweep_dir: Path | None = None    # resolved; None when not set
    factor: str = "auto"


def _bool(name: str, v) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"{name} must be True or False, got {v!r}")
    return v


def _text(name: str, v) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"{name} must be a non-empty string ('auto' to choose), got {v!r}")
    return v


def _timeline(name: str, v) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{name} must be a run id, \"auto\" or \"\", got {v!r}")
    return v


def _margin(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
        raise ValueError(f"{name} must be a fraction between 0 and 1 (e.g. 0.05 for ±5%), got {v!r}")
    return float(v)


def _sweep_dir(name: str, v) -> Path:
    if not isinstance(v, (str, Path)) or not str(v).strip():
        raise ValueError(f"{name} must be the path of a sweep directory (spec.yaml, results.parquet), got {v!r}")
    path = resolve_sweep_dir(v)
    if not any((path / f).exists() for f in ("results.parquet", "results.csv")):
        raise ValueError(f"{name} {str(v)!r} has no results.parquet or results.csv: "
                         "point it at a sweep directory written by `zbench sweep`")
    return path


def _other_sweep_dir(name: str, v) -> Path | None:
    if not isinstance(v, (str, Path)):
        raise ValueError(f"{name} must be a path or an empty string, got {v!r}")
    return _sweep_dir(name, v) if str(v) else None


CHECKS: dict[str, Callable] = {
    "sweep_dir": _sweep_dir, "include_flagged": _bool, "static_figures": _bool, "timeline_run": _timeline,
    "baseline": _text, "factor": _text, "margin": _margin, "other_sweep_dir": _other_sweep_dir,
}


def _metric(notebook: str, v) -> str:
    allowed = METRICS.get(notebook, THROUGHPUT)
    if v not in allowed:
        raise ValueError(f"metric must be one of {allowed}, got {v!r}")
    return v


def check_parameters(notebook: str, values: Mapping) -> AnalysisParameters:
    """The parameters `notebook` declares, read from `values` (the notebook's globals(), or the report's
    parameters over the notebook's defaults) and checked: an AnalysisParameters, or a one-line ConfigError."""
    if notebook not in NOTEBOOK_PARAMETERS:
        raise ConfigError(f"no analysis notebook {notebook!r}; have {', '.join(NOTEBOOK_PARAMETERS)}")
    checked = {}
    for name in NOTEBOOK_PARAMETERS[notebook]:
        if name not in values:
            raise ConfigError(f"{notebook}: parameter {name} is not set (is the parameters cell run?)")
        try:
            checked[name] = _metric(notebook, values[name]) if name == "metric" else CHECKS[name](name, values[name])
        except ValueError as exc:
            raise ConfigError(f"{notebook}: {exc}") from None
    params = AnalysisParameters(notebook=notebook, **checked)
    if notebook == "analysis-scaling":
        _check_scaling_design(params.sweep_dir)
    return params


def _check_scaling_design(path: Path) -> None:
    """Refuse a sweep whose layouts each have one data-disk count: there is nothing to scale, and the notebook ran
    to a page of one-configuration sentences (issue 52 item 8). The design's, every run: a count whose runs
    were all flagged still makes a scaling study, its cells "not judged"."""
    df = read_results(path)
    if data_disks_vary(df):
        return
    counts = (", ".join(f"{lay} {'/'.join(f'{d:g}' for d in sorted(g.dropna().unique()))}"
                        for lay, g in df.groupby("layout")["data_disks"])
              if {"layout", "data_disks"} <= set(df) else "no layout or data_disks column")
    raise ConfigError(f"analysis-scaling: {path.name} varies no layout's disk count (data disks: {counts}), so "
                      "there is nothing to scale; the compare notebook compares what it varies (--notebooks compare)")
