"""Runs used by adaptive repetition against a fixed 5-repetition plan, per sweep.

Reads the sweep directory's events (why each configuration stopped) and results:

    python benchmarks/adaptive_repetitions.py data/sweeps/demo-...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

FIXED = 5


def main(argv) -> int:
    for d in map(Path, argv or sorted(Path("data/sweeps").glob("*"))):
        events = [json.loads(l) for l in (d / "events.jsonl").read_text().splitlines() if l.strip()]
        df = pd.read_parquet(d / "results.parquet")
        runs = df.groupby("cell_id")["run_id"].nunique()
        stops = {e["cell_id"]: e["reason"] for e in events if e.get("event") == "repetitions"
                 and not e.get("more")}
        timing = next((e for e in reversed(events) if e.get("event") == "timing"), {})
        print(f"{d.name}: {len(runs)} configurations, {runs.sum()} runs used vs {FIXED * len(runs)} "
              f"for a fixed {FIXED}-repetition plan ({100 * (1 - runs.sum() / (FIXED * len(runs))):.0f}% saved)")
        reached = [c for c, r in stops.items() if r.startswith("reached target")]
        capped = [c for c, r in stops.items() if r.startswith("hit max")]
        if reached:
            print(f"  {len(reached)} configurations reached the target CI with "
                  f"{runs[reached].mean():.1f} runs on average; {len(capped)} stopped at the maximum "
                  f"({', '.join(str(n) for n in sorted(set(runs[capped])))} runs) without reaching it")
        if timing:
            print(f"  wall {timing['wall_s']:.0f} s, inside fio windows {timing['measure_s']:.0f} s "
                  f"({100 * timing['measure_share']:.0f}%)")
        for cell, n in runs.items():
            print(f"  {cell}: {n} runs; {stops.get(cell, '?')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
