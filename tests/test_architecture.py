"""The layer contract of ARCHITECTURE.md, checked by import-linter on the real package.

The contract lives in pyproject.toml ([tool.importlinter]). Beside the check itself,
each kind of violation is planted in a copy of the package to show the check can fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")
MAX_MODULE_LINES = 330       # "about 300": a module past this wants splitting


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([str(LINT), "--no-cache", "--config", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_package_keeps_its_layer_contract():
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 kept, 0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, broken", [
    # zfs is below sweeps: an upward import
    ("zfs/pools.py", "from zbench_lib.sweeps import executor", "Layers"),
    # analysis must never reach a host, even through a lower layer
    ("analysis/tables.py", "from zbench_lib.hosts import ssh", "Analysis reads the store"),
    # ssh <- lab_state <- resolve is the allowed direction; back again is a cycle
    ("hosts/ssh.py", "from zbench_lib.hosts import resolve", "No import cycles"),
])
def test_a_planted_violation_breaks_the_contract(tmp_path, module, line, broken):
    shutil.copytree(ROOT / "zbench_lib", tmp_path / "zbench_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "zbench_lib" / module, "a") as fh:
        fh.write(f"\n{line}  # planted by the test\n")
    proc = _lint(tmp_path)
    assert proc.returncode != 0
    assert f"{broken}" in proc.stdout and "BROKEN" in proc.stdout


def test_modules_stay_small():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "zbench_lib").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
