"""How long the scaling notebook takes on a SYNTHETIC 100,000-row results table.

Goal (issue 6): under a minute on the project's 2-core machines. The table is made up
(`zbench_lib.analysis.data.synthetic`); only the time is of interest. Usage:

    python3 benchmarks/analysis_notebook.py [--rows 100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import papermill as pm

from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.analysis.data.synthetic import write_synthetic_sweep

GOAL_S = 60.0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--keep", help="write the sweep and executed notebook here instead of a temp dir")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.keep or tmp)
        t0 = time.perf_counter()
        sweep = write_synthetic_sweep(base / "synthetic-scaling", n_rows=args.rows, seed=0)
        t_gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        pm.execute_notebook(str(REPO_ROOT / "notebooks" / "analysis-scaling.ipynb"),
                            str(base / "analysis-scaling.executed.ipynb"),
                            parameters={"sweep_dir": str(sweep)}, cwd=str(REPO_ROOT),
                            progress_bar=False, log_output=False)
        t_nb = time.perf_counter() - t0
    verdict = "within" if t_nb < GOAL_S else "OVER"
    print(f"analysis-scaling.ipynb on a synthetic {args.rows:,}-row results table: {t_nb:.1f} s "
          f"(papermill, kernel start included; {verdict} the {GOAL_S:.0f} s goal); "
          f"table generation {t_gen:.1f} s")
    return 0 if t_nb < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
