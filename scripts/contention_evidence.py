"""What the busy-host iodepth sweep shows about the host-contention rule (issue 47), from its pack alone.

Per queue depth: the IOPS range of its runs, the lab's run-queue wait (s per s of window), the Spearman
correlation of the two (scipy), and how many runs `host_contention` flagged; then the same IOPS of the
idle-host example (data/examples/iodepth-curve, 2026-11-24, its admissible runs), for comparison.

    python scripts/contention_evidence.py [PACK]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from scipy import stats

from zbench_lib.core.paths import REPO_ROOT

BUSY = REPO_ROOT / "data" / "calibration" / "iodepth-curve-busy-host"
IDLE = REPO_ROOT / "data" / "examples" / "iodepth-curve"


def table(busy: Path = BUSY, idle: Path = IDLE) -> pd.DataFrame:
    b = pd.read_parquet(busy / "results.parquet")
    i = pd.read_parquet(idle / "results.parquet")
    i = i[~i["flagged"]]
    rows = []
    for depth, g in b.groupby("iodepth"):
        rho = stats.spearmanr(g["host_lab_wait_share"], g["iops"]).statistic
        ig = i[i["iodepth"] == depth]["iops"]
        rows.append({"iodepth": depth, "runs": len(g), "pools": g["pool_replicate"].nunique(),
                     "iops busy": f"{g['iops'].min():.0f}-{g['iops'].max():.0f}",
                     "lab wait s/s": f"{g['host_lab_wait_share'].min():.2f}-{g['host_lab_wait_share'].max():.2f}",
                     "spearman rho": round(float(rho), 2), "flagged": int(g["flagged"].sum()),
                     "iops idle host": f"{ig.min():.1f}-{ig.max():.1f} ({len(ig)} runs)" if len(ig) else "none"})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else BUSY).to_string(index=False))
