"""`zbench sweep SPEC`: run the sweep notebook with papermill, keep it with the data."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.core.errors import ConfigError

NOTEBOOK = REPO_ROOT / "notebooks" / "sweep.ipynb"


def run_sweep_notebook(spec: str, out_root: str = "data/sweeps", *, resume_dir: str = "",
                       dry_run: bool = False, progress: bool = True) -> Path | None:
    """Execute notebooks/sweep.ipynb; the executed copy lands in the sweep directory."""
    import papermill as pm

    from zbench_lib.sweeps.plan import expand
    from zbench_lib.sweeps.store import new_sweep_id
    from zbench_lib.sweeps.spec import load_spec

    spec_obj = load_spec(spec)           # validates before anything starts
    plan = expand(spec_obj)
    if dry_run:
        print(plan.describe())
        return None
    if not NOTEBOOK.exists():
        raise ConfigError(f"sweep notebook not found: {NOTEBOOK}")
    sweep_id = "" if resume_dir else new_sweep_id(spec_obj.name)
    out = Path(out_root)
    out.mkdir(parents=True, exist_ok=True)
    # papermill writes its output from the first cell on: keep it beside the sweep
    # directory (which the store must create itself) and move it in at the end.
    target = Path(resume_dir) if resume_dir else out / sweep_id
    executing = target.parent / f".{target.name}.executing.ipynb"
    try:
        pm.execute_notebook(str(NOTEBOOK), str(executing), cwd=str(NOTEBOOK.parent.parent),
                            parameters={"spec": str(Path(spec).resolve()), "out_root": str(out.resolve()),
                                        "sweep_id": sweep_id, "resume_dir": str(resume_dir),
                                        "progress": progress},
                            log_output=True, stdout_file=sys.stdout, stderr_file=sys.stderr,
                            progress_bar=False)
    finally:
        if target.is_dir() and executing.exists():
            n = len(list(target.glob("sweep*.ipynb")))
            shutil.move(str(executing), str(target / (f"sweep-{n + 1}.ipynb" if n else "sweep.ipynb")))
    print(f"sweep directory: {target}")
    return target
