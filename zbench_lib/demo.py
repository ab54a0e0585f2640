"""`make demo`: the main job end to end in the lab: sweep, then the report; it ends with what runs were lost
(the data-quality banner) and the one path to open, the report's index page."""

from __future__ import annotations

import time
from pathlib import Path

from zbench_lib.core.paths import REPO_ROOT

ROOT = REPO_ROOT


def run_demo(spec: str = "templates/sweeps/demo.yaml", out: str = "data/sweeps") -> int:
    from zbench_lib.analysis.report.data_quality import sweep_quality_text
    from zbench_lib.analysis.report.report import render_report
    from zbench_lib.sweeps.watching.notebook import run_sweep_notebook
    from zbench_lib.sweeps.planning.plan import expand
    from zbench_lib.sweeps.spec.sweep_spec import load_spec

    t0 = time.monotonic()
    plan = expand(load_spec(ROOT / spec))
    sweep_dir = run_sweep_notebook(str(ROOT / spec), plan, str(ROOT / out))     # it prints the sweep directory
    t1 = time.monotonic()
    report = render_report(sweep_dir)
    print(f"sweep {t1 - t0:.0f} s, report {time.monotonic() - t1:.0f} s")
    text = sweep_quality_text(sweep_dir, base=Path.cwd())       # what was lost, before the one path to open
    if text:
        print(text)
    print(f"open the report: {report}")
    return 0
