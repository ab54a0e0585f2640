"""Shared fixtures. Every test that needs real OpenZFS shares one booted lab."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.zfs.pools import find_leftovers, live_pools, remove_leftovers

GiB = 1024 ** 3

# One lab for the whole session: 8 data disks (enough for raidz3 and 2 x raidz2
# of 4), plus 4 unthrottled extra disks for log / cache / special vdevs and the
# safety tests. A modest envelope keeps runs short but disk-bound.
LAB_TEST_CONFIG = dict(disks=8, disk_bytes=1 * GiB, model="custom:iops=400,bw=100M",
                       extra_disks=4, extra_disk_bytes=256 * 1024 ** 2,
                       memory_mib=2048, name="pytest")


@pytest.fixture(scope="session")
def session_lab_config() -> LabConfig:
    """The session lab's shape, without booting it (a second lab of this shape is interchangeable with it)."""
    return LabConfig(**LAB_TEST_CONFIG)


@pytest.fixture(scope="session")
def lab(session_lab_config):
    if os.environ.get("ZBENCH_SKIP_LAB"):
        pytest.skip("ZBENCH_SKIP_LAB is set")
    with Lab(session_lab_config) as running:
        yield running


@pytest.fixture(scope="session")
def lab_host(lab):
    return lab.host


@pytest.fixture(autouse=True)
def _reclaim_leftover_pools(request):
    """Every lab test starts on a lab without zbench pools.

    A test that fails mid-teardown (a destroy outrun by slow disks on a busy machine)
    must not make every later test fail on busy disks: its leftovers are destroyed here,
    before the next lab test, and named so the cause is not hidden.
    """
    if request.node.get_closest_marker("lab") is None or "lab" not in request.fixturenames:
        yield
        return
    lab = request.getfixturevalue("lab")
    # Pools of live fixtures (a module's shared pool) are not leftovers.
    owned = live_pools(lab.host)
    reclaimed = remove_leftovers(lab.host, [p for p in find_leftovers(lab.host) if p not in owned])
    if reclaimed:
        print(f"\nreclaimed leftover pools before {request.node.name}: {reclaimed}")
    yield


@pytest.fixture
def ext4_disk(lab, lab_host):
    """The lab's first extra disk carrying an ext4 filesystem (a disk no sweep may touch)."""
    disk = lab.extra_disks[0]
    lab_host.run(["wipefs", "-a", "-q", disk])
    lab_host.run(["mkfs.ext4", "-q", "-F", disk])
    yield disk
    lab_host.run(["wipefs", "-a", "-q", disk], check=False)


# `run_sweep` in a child process, as `zbench sweep` runs it: a test can kill it, or run another beside it.
_SWEEP_CHILD = ("import sys\nfrom zbench_lib.sweeps.running.executor import run_sweep\n"
                "print(run_sweep(sys.argv[1], sys.argv[2], sweep_id=sys.argv[3] or None, "
                "resume_dir=sys.argv[4] or None, progress=False))\n")


def sweep_child(spec, out_root, sweep_id: str = "", *, resume=None, crash_at: str | None = None,
                cli: bool = False, **env) -> tuple[list[str], dict]:
    """The argv and environment of a child sweep: the one way the tests launch one.

    `resume`: the sweep directory it completes; `crash_at`: the crash point (core.crash) where it
    SIGKILLs itself; `cli`: `zbench sweep` itself (no sweep id), which turns a signal into exit
    128 + n as for a user; `env`: the labs it uses (ZBENCH_LAB, ZBENCH_LABS).
    """
    environ = dict(os.environ, **env)
    environ.pop("ZBENCH_CRASH_AT", None)         # a crash point is the test's own, never inherited
    if crash_at:
        environ["ZBENCH_CRASH_AT"] = crash_at
    if cli:
        assert not sweep_id, "`zbench sweep` names its sweep itself"
        return [sys.executable, "-m", "zbench_lib.cli", "sweep", str(spec), "--out", str(out_root), "--no-progress",
                *(["--resume", str(resume)] if resume else [])], environ
    return [sys.executable, "-c", _SWEEP_CHILD, str(spec), str(out_root), sweep_id, str(resume or "")], environ


@pytest.fixture
def sweep_on_lab(lab):
    """Run a spec with `run_sweep` in a child process on the session's lab (`resume`, `crash_at`:
    as `sweep_child`); the CompletedProcess."""
    def run(spec, out_root, sweep_id="", *, resume=None, crash_at=None, timeout=1500):
        argv, env = sweep_child(spec, out_root, sweep_id, resume=resume, crash_at=crash_at,
                                ZBENCH_LAB=LAB_TEST_CONFIG["name"])
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    return run


@pytest.fixture(scope="session")
def pdflatex():
    """pdflatex with the packages the LaTeX export's preamble names (setup_host.LATEX_TOOLS).

    Missing, the test skips, but fails where `make test` has installed the test tools
    (ZBENCH_TEST_TOOLS=installed): there a skip would hide that the LaTeX check stopped running.
    """
    import shutil

    from zbench_lib.hosts.setup_host import LATEX_TOOLS, missing_packages
    missing = missing_packages(LATEX_TOOLS)
    if not missing and shutil.which("pdflatex"):
        return shutil.which("pdflatex")
    why = f"pdflatex or a package it needs is missing: apt-get install {' '.join(missing)} (make test-packages)"
    if os.environ.get("ZBENCH_TEST_TOOLS") == "installed":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="session")
def start_sweep():
    """Start `run_sweep` of a spec in a child process, its output to `log`; the Popen, left running.
    A file, not a pipe: a sweep's Dask workers write to it too, and a pipe nobody reads fills."""
    def start(spec, out_root, sweep_id: str, log: Path, **env) -> subprocess.Popen:
        argv, environ = sweep_child(spec, out_root, sweep_id, **env)
        with open(log, "w") as out:
            return subprocess.Popen(argv, env=environ, stdout=out, stderr=subprocess.STDOUT, text=True)
    return start
