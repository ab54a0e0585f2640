"""The dry summary of an import (`zbench import --dry-run`, and the first lines of a real one): the files
found and imported, the cells and their repetitions, each factor with its levels and where it came from
(the path or the map, or fio's JSON), the latency the files hold, what is not recorded, and every file
left out with its reason."""

from __future__ import annotations

from collections import Counter

from zbench_lib.core.sizes import format_size
from zbench_lib.measure.fio_layout import LAT_FROM_CLAT
from zbench_lib.measure.imported_rows import CONFIG
from zbench_lib.sweeps.importing.fields import LABEL_PREFIX, column_of
from zbench_lib.sweeps.importing.import_plan import ImportPlan

_LISTED = 8                         # levels named per factor before "and N more"
ONE_RUN = "one run per cell: no interval"
NOT_RECORDED = ("not recorded: counters (pool, devices, ARC, CPU): the truth checks are not judged, but not_steady "
                "where fio's own steadystate ran and a controller's clients against fio's 'All clients' sum")


def level_text(column: str, value) -> str:
    """A level as the summary names it: sizes in binary units, seconds with their unit, the rest as is."""
    if column.endswith("_bytes") and isinstance(value, int):
        return format_size(value)
    if column.endswith("_s") and isinstance(value, float):
        return f"{value:g} s"
    return str(value)


def _levels(plan: ImportPlan, column: str) -> str:
    values = sorted({c.factors[column] for c in plan.cells if c.factors.get(column) is not None},
                    key=lambda v: (isinstance(v, str), v))
    shown = [level_text(column, v) for v in values[:_LISTED]]
    more = f" and {len(values) - _LISTED} more" if len(values) > _LISTED else ""
    return f"{column.removeprefix(LABEL_PREFIX)}: {', '.join(shown)}{more}"


def _named(plan: ImportPlan, name: str) -> str:
    """A field by the name the path or the map gave it, with its levels (rep: its range)."""
    if name == "rep":
        reps = sorted({r.rep for r in plan.runs})
        return f"rep: {reps[0]}-{reps[-1]}" if reps else "rep"
    return f"{name}: " + _levels(plan, column_of(name)).split(": ", 1)[1]


def _derived(plan: ImportPlan) -> str:
    cols = [k for k in ("data_disks", "width", "vdevs") if any(c.factors.get(k) is not None for c in plan.cells)]
    return f" (from each layout and its disks: {'; '.join(_levels(plan, k) for k in cols)})" if cols else ""


def _columns(plan: ImportPlan) -> tuple[list[str], list[str], list[str]]:
    """(names the fields gave, labels, columns fio's JSON gave), in the order they are met."""
    given = [n for n in plan.field_names if n != "rep" and not column_of(n).startswith(LABEL_PREFIX)]
    labels = [n for n in plan.field_names if n != "rep" and column_of(n).startswith(LABEL_PREFIX)]
    filled = {k for r in plan.runs for k in r.unit.fields.columns}
    fio = [k for k in CONFIG if k not in filled and any(c.factors.get(k) is not None for c in plan.cells)]
    return given + (["rep"] if "rep" in plan.field_names else []), labels, fio


def repetitions_text(plan: ImportPlan) -> str:
    counts = Counter(len(c.runs) for c in plan.cells)
    if not counts:
        return "no cell"
    lo, hi = min(counts), max(counts)
    if hi == 1:
        return f"1 per cell ({ONE_RUN})"
    text = f"{lo}-{hi} per cell" if lo != hi else f"{lo} per cell"
    return text + (f" ({counts[1]} cells with one run: no interval there)" if counts.get(1) else "")


def _latency(plan: ImportPlan) -> str:
    runs = plan.runs
    bins = sum(r.unit.bins for r in runs)
    clat = sum(r.unit.lat_source == "clat" for r in runs)
    none = sum(r.unit.lat_source == "" for r in runs)
    parts = [f"json+ bins in {bins} of {len(runs)} runs (latency_hist.parquet)"]
    if clat:
        parts.append(f"lat percentiles read from clat in {clat} (no submission latency recorded)")
    if none:
        parts.append(f"no lat percentiles in {none} (fio ran without lat_percentiles=1)")
    return "; ".join(parts)


def environment_text(environment: dict) -> str:
    given = ", ".join(f"{k} {v}" for k, v in environment.items())
    return f"environment: {given} (as given); the rest not recorded" if given else "environment: not recorded"


def describe(plan: ImportPlan) -> str:
    """The summary's lines (see the module's text)."""
    runs = plan.runs
    fields, labels, fio = _columns(plan)
    versions = Counter(r.unit.version or "no version" for r in runs)
    notes = Counter(n for r in runs for n in r.unit.notes if n != LAT_FROM_CLAT)
    head = f"zbench import: {plan.source}" + (f" (path pattern {plan.pattern!r})" if plan.pattern else "") \
        + (f" (map {plan.map_path})" if plan.map_path else "")
    lines = [head,
             f"  files: {plan.candidates} found, {len({r.unit.source.rel for r in runs})} imported, "
             f"{len({p.rel for p in plan.problems})} left out" + (" (below)" if plan.problems else ""),
             f"  runs: {len(runs)} in {len(plan.cells)} cells; repetitions: {repetitions_text(plan)}",
             "  from the " + ("map" if plan.map_path and not plan.pattern else "path") + ": "
             + ("; ".join(_named(plan, n) for n in fields) + _derived(plan) if fields else "nothing"),
             "  user labels: " + ("; ".join(_named(plan, n) for n in labels) or "none"),
             "  from fio's JSON: " + ("; ".join(_levels(plan, c) for c in fio) or "nothing"),
             "  fio: " + ", ".join(f"{v} ({n} runs)" for v, n in sorted(versions.items()))
             + "".join(f"; {n} runs: {note}" for note, n in sorted(notes.items())),
             f"  latency: {_latency(plan)}",
             f"  {NOT_RECORDED}; {environment_text(plan.environment)}"]
    if plan.problems:
        lines.append("  left out:")
        lines += [f"    {p.line()}" for p in plan.problems]
    return "\n".join(lines)
