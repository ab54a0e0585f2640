"""The variance components the shipped examples can estimate, for the planner's dry run (methods §22).

For every example sweep under data/examples (a directory with results.parquet), per family (a
workload, a direction and the lab's disk model) and metric: the relative (log-scale) variance it
can estimate, split into between pools and within a pool where its design allows, else only the
total (one run per pool) or only the run-to-run part (one pool per cell), with the example it came
from, its workload kind (randread / randwrite / seqread / seqwrite) and disk model. Written to
data/examples/components.json, which `variance_components.expected_for_design` reads.

    python scripts/example_components.py [--check]

--check writes nothing and exits 1 when the file differs from what the examples give now.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from zbench_lib.analysis.data.sweep_data import load_sweep
from zbench_lib.analysis.stats.variance_components import COMPONENTS_FILE, FAMILY, fit_components, kind_of
from zbench_lib.core.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "data" / "examples"
METRICS = ("iops", "bw_bytes_s", "lat_p99_ns")
ABOUT = ("Variance components (log scale: relative variances, squared CoVs) that the shipped examples can "
         "estimate, per workload kind and disk model: between pools and within a pool where split, else the "
         "total (one run per pool) or the run-to-run part only (one pool per cell). Written by "
         "scripts/example_components.py; read by zbench_lib.analysis.stats.variance_components."
         "expected_for_design (docs/methods.md §22).")


def _mode(series) -> str | None:
    s = series.dropna().astype(str)
    return str(s.mode().iloc[0]) if len(s) else None


def _clean(value):
    """JSON has no NaN: None instead; numpy scalars as plain numbers."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def example_entries(path: Path, metrics=METRICS) -> list[dict]:
    """The entries of one example sweep directory."""
    sweep = load_sweep(path)
    df = sweep.results
    by = list(FAMILY) + (["disk_model"] if "disk_model" in df.columns else [])
    out = []
    for metric in (m for m in metrics if m in df.columns):
        for c in fit_components(df, metric, by):
            fam = dict(c.family)
            rows = df[(df["workload"] == fam["workload"]) & (df["direction"] == fam["direction"])]
            rw = _mode(rows["rw"]) if "rw" in rows else None
            entry = {"example": path.name, "workload_kind": kind_of(rw or fam["workload"], fam["direction"]),
                     "disk_model": fam.get("disk_model") or "unknown", "split": c.split}
            entry.update(c.to_record())
            out.append({k: _clean(v) for k, v in entry.items()})
    return out


def build_table(examples: Path = EXAMPLES, metrics=METRICS) -> dict:
    dirs = sorted(p.parent for p in Path(examples).glob("*/results.parquet"))
    entries = [e for d in dirs for e in example_entries(d, metrics)]
    return {"about": ABOUT, "conf": 0.95, "metrics": list(metrics), "entries": entries}


def same_table(a, b, rel: float = 1e-6) -> bool:
    """Equal JSON values, numbers within `rel` (a REML fit's last digits may differ across BLAS builds)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_table(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_table(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-15)
    return a == b


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    ap.add_argument("--out", default=str(COMPONENTS_FILE), help="where the table goes")
    args = ap.parse_args(argv)
    text = json.dumps(build_table(), indent=1, ensure_ascii=False) + "\n"
    out = Path(args.out)
    if args.check:
        same = out.is_file() and same_table(json.loads(out.read_text()), json.loads(text))
        print(f"{out}: {'up to date' if same else 'differs from what the examples give: rerun the script'}")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    table = json.loads(text)
    for e in table["entries"]:
        if e["metric"] == "iops":
            what = "split" if e["split"] else ("total only" if e.get("total") is not None else
                                                "within only" if e.get("within") is not None else "nothing")
            print(f"{e['example']:14s} {e['workload_kind']:9s} {e['disk_model']:24s} {e['family']:24s} {what}")
    print(f"wrote {out} ({len(table['entries'])} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
