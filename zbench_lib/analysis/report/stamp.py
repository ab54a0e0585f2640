"""The line every exported table and figure carries: what the disks were, and which zbench made it.

A table pasted into a paper loses the page around it (issue 31): the caveat that the disks were
emulated in a lab, and the zbench version and commit that computed the numbers, travel with it.

    caveat_line(results)    "Lab measurements on emulated disks (disk model ...): ..." or the real host's
    zbench_stamp()          "zbench 0.1.0, commit 1a2b3c4" (the commit of the checkout running it, if any)
"""

from __future__ import annotations

import subprocess
from functools import lru_cache

import pandas as pd

from zbench_lib import __version__
from zbench_lib.analysis.claims.caveats import import_line, io_path_line, unit_line
from zbench_lib.core.paths import REPO_ROOT


def caveat_line(results: pd.DataFrame) -> str:
    """What the disks were, emulated (named by their model) or real, what the units were (pools or the runs
    of one pool: caveats.unit_line) and the I/O path each workload took; for imported rows what they cannot
    say (caveats.import_line)."""
    models = sorted(set(results["disk_model"].dropna().astype(str))) if "disk_model" in results else []
    path = " ".join(p for p in (unit_line(results), io_path_line(results)) if p)
    imported = import_line(results)
    if imported and not models:
        return imported + (f" {path}" if path else "")
    if imported:
        path = f"{path} {imported}".strip()
    if models:
        return (f"Lab measurements on emulated disks ({', '.join(models)}): they describe the disk model and "
                "the layout's arithmetic, not a real drive." + (f" {path}" if path else ""))
    return "Measured on the sweep's own host and disks (no disk model declared)." + (f" {path}" if path else "")


@lru_cache(maxsize=1)
def _commit() -> str:
    try:
        r = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                           text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    if r.returncode != 0:
        return ""
    # A checkout with edits to tracked files did not compute the numbers as that commit would: say so.
    dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=5, check=False).stdout.strip()
    return r.stdout.strip() + ("+local-changes" if dirty else "")


def zbench_stamp() -> str:
    """'zbench 0.1.0, commit 1a2b3c4d5e6f' ('zbench 0.1.0' outside a git checkout)."""
    commit = _commit()
    return f"zbench {__version__}" + (f", commit {commit}" if commit else "")
