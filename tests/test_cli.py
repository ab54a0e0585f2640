"""The command line refuses bad input with a clear message before anything starts."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def zbench(*args, env=None):
    return subprocess.run([sys.executable, "-m", "zbench_lib.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env=env)


@pytest.mark.parametrize("args, message", [
    (["lab", "up", "--disks", "0"], "needs at least 1 data disk"),
    (["lab", "up", "--model", "custom:iops=-5"], "iops must be positive"),
    (["lab", "up", "--model", "tape"], "unknown disk model 'tape'"),
    (["lab", "up", "--disk-size", "lots"], "cannot parse 'lots' as a size"),
    (["lab", "up", "--disk-size", "1P"], "cannot parse '1P' as a size"),
])
def test_bad_lab_input(args, message, tmp_path):
    import os
    res = zbench(*args, env=dict(os.environ, ZBENCH_CACHE=str(tmp_path)))
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert not (tmp_path / "labs").exists() or not any((tmp_path / "labs").iterdir())


def test_no_space_for_disk_files(tmp_path):
    import os
    res = zbench("lab", "up", "--disks", "8", "--disk-size", "1000T",
                 env=dict(os.environ, ZBENCH_CACHE=str(tmp_path)))
    assert res.returncode == 2 and "no space for the lab's disk files" in res.stderr


def test_sweep_dry_run_prints_the_plan_and_creates_nothing(tmp_path):
    res = zbench("sweep", "templates/sweeps/demo.yaml", "--dry-run", "--out", str(tmp_path / "s"))
    assert res.returncode == 0, res.stderr
    assert "cells:" in res.stdout and "estimated wall time" in res.stdout
    assert not (tmp_path / "s").exists()


def test_sweep_with_a_malformed_spec_fails_before_anything_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("question: x\nsurface: tape\n")
    res = zbench("sweep", str(bad), "--out", str(tmp_path / "s"))
    assert res.returncode == 2 and "missing required key 'host'" in res.stderr
    assert not (tmp_path / "s").exists()
