"""Issue 44: every latency of the packed examples re-read from raw, fio's clat (what zbench reported
before) against its lat (issue to completion, what it reports now), per example and workload.

    python scripts/latency_before_after.py [data/examples]

Reads each example's raw.tar.xz (the runs' fio.json, unchanged) with the standard library and
numpy only, so the figures do not come from zbench's own parser. Prints a markdown table: runs,
and the median and largest lat/clat ratio of each run's p99 and mean.
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path

import numpy as np

_NAN = re.compile(r"([:\[,]\s*)-?nan\b")


def _runs(pack: Path):
    with tarfile.open(pack / "raw.tar.xz") as tar:
        for m in tar.getmembers():
            if m.name.endswith("/fio/fio.json"):
                text = tar.extractfile(m).read().decode()
                meta = tar.extractfile(m.name.replace("fio/fio.json", "meta.json"))
                factors = json.loads(meta.read())["factors"] if meta else {}
                yield factors, json.loads(_NAN.sub(r"\1NaN", text[text.find("{"):]))


def ratios(pack: Path) -> dict:
    out: dict = {}
    for factors, data in _runs(pack):
        for job in data["jobs"]:
            for d in ("read", "write"):
                x = job[d]
                if not x["io_bytes"] or x["total_ios"] < 1000:      # a p99 needs 1,000 I/Os (methods §18)
                    continue
                c, lat = x["clat_ns"], x["lat_ns"]
                key = (factors.get("workload", job["jobname"]), d)
                out.setdefault(key, []).append((lat["percentile"]["99.000000"] / c["percentile"]["99.000000"],
                                                lat["mean"] / c["mean"], x["slat_ns"]["mean"] / 1e6))
    return out


def cells(pack: Path) -> list[tuple]:
    """Per cell (workload, direction and the factors of its runs' meta.json), the mean of its runs' own
    p99 and mean latency in clat and in lat, in ms: the figures the examples' pages state, before and after."""
    by: dict = {}
    for factors, data in _runs(pack):
        key = tuple(sorted((k, str(v)) for k, v in factors.items()))
        for job in data["jobs"]:
            for d in ("read", "write"):
                x = job[d]
                if not x["io_bytes"] or x["total_ios"] < 1000:
                    continue
                c, lat = x["clat_ns"], x["lat_ns"]
                by.setdefault((key, d), []).append((c["percentile"]["99.000000"], lat["percentile"]["99.000000"],
                                                     c["mean"], lat["mean"]))
    return [(dict(k), d, len(v), *(np.mean(np.array(v), axis=0) / 1e6)) for (k, d), v in by.items()]


def main(root: Path) -> None:
    print("| example | workload | direction | runs | lat/clat p99: median (max) | lat/clat mean: median (max) "
          "| slat mean, ms: median (max) |")
    print("|---|---|---|---|---|---|---|")
    for pack in sorted(p for p in root.iterdir() if (p / "raw.tar.xz").is_file()):
        for (w, d), rs in sorted(ratios(pack).items()):
            a = np.array(rs)
            med = [f"{np.median(a[:, i]):.4f} ({a[:, i].max():.4f})" for i in (0, 1)]
            print(f"| {pack.name} | {w} | {d} | {len(a)} | {med[0]} | {med[1]} | "
                  f"{np.median(a[:, 2]):.3f} ({a[:, 2].max():.3f}) |")
    print("\nCells whose mean p99 or mean latency moved by 1% or more (ms, clat before -> lat after):\n")
    print("| example | cell | direction | runs | p99 before -> after | mean before -> after |")
    print("|---|---|---|---|---|---|")
    for pack in sorted(p for p in root.iterdir() if (p / "raw.tar.xz").is_file()):
        for f, d, n, c99, l99, cm, lm in sorted(cells(pack), key=lambda r: str(r[0])):
            if abs(l99 / c99 - 1) >= 0.01 or abs(lm / cm - 1) >= 0.01:
                label = ", ".join(f"{k}={f[k]}" for k in ("workload", "layout", "total_disks", "volblocksize_bytes",
                                                         "iodepth") if k in f)
                print(f"| {pack.name} | {label} | {d} | {n} | {c99:.3g} -> {l99:.3g} | {cm:.3g} -> {lm:.3g} |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/examples"))
