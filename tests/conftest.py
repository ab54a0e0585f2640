"""Shared fixtures. Every test that needs real OpenZFS shares one booted lab."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
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


@contextlib.contextmanager
def lab_in_thread(cfg: LabConfig, after: threading.Event | None = None):
    """A lab booting in a thread of its own while the caller does something else; yields a function
    that waits for it, whose `up` event is set once the boot ended (up, or failed). The thread holds
    the lab until the block ends: a lab's QEMU is sent SIGTERM when the thread that started it ends
    (PR_SET_PDEATHSIG is per thread). `after`: another lab's `up`, waited for before this one boots
    (one boot after another: a boot is a core of TCG)."""
    booted: queue.Queue = queue.Queue()
    release, up = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            if after is None or _waited(after, release):
                with Lab(cfg) as lab:
                    booted.put(lab)
                    up.set()
                    release.wait()
        except BaseException as exc:            # the boot's failure, raised in the caller's thread
            booted.put(exc)
        finally:
            up.set()

    thread = threading.Thread(target=hold, name=f"lab {cfg.name}", daemon=True)
    thread.start()
    got: list = []

    def wait() -> Lab:
        if not got:
            if after is not None:               # its boot starts once the one before it ended
                after.wait(timeout=cfg.boot_timeout_s + 300)
            got.append(booted.get(timeout=cfg.boot_timeout_s + 300))
        if isinstance(got[0], BaseException):
            raise got[0]
        return got[0]
    wait.up = up
    try:
        yield wait
    finally:
        release.set()
        thread.join(timeout=120)


def _waited(after: threading.Event, release: threading.Event) -> bool:
    """True once `after` is set; False if `release` came first (the session ended: boot nothing)."""
    while not after.wait(1):
        if release.is_set():
            return False
    return not release.is_set()


class _Booting:
    """Labs booting in threads while the unit tests run (the lab tests run after them): the
    session's, and module labs (`_early_module_labs`). A boot is a minute or more of TCG on one
    core; beside the unit tests it adds nothing to make test's time. Not every module's lab: a
    lab that waits idle beside a measuring one counts against it (host_load's OTHER_QEMUS_MAX),
    so only labs that wait beside modules marked `idle_labs_ok` boot early, and the first other."""

    def __init__(self):
        self._labs: dict[str, tuple[LabConfig, object, contextlib.ExitStack]] = {}

    def start(self, cfg: LabConfig, after: threading.Event | None = None) -> threading.Event:
        """Boot `cfg` in a thread (once `after` is set, if given); the event set once it is up."""
        stack = contextlib.ExitStack()
        wait = stack.enter_context(lab_in_thread(cfg, after))
        self._labs[cfg.name] = (cfg, wait, stack)
        return wait.up

    @contextlib.contextmanager
    def lab(self, cfg: LabConfig):
        """The lab of `cfg`: the one booting for it if any, else one booted now; down at the end."""
        booting = self._labs.pop(cfg.name, None)
        if booting is None or booting[0] != cfg:
            with Lab(cfg) as lab:
                yield lab
            return
        _, wait, stack = booting
        with stack:
            yield wait()

    def close(self) -> None:
        while self._labs:
            self._labs.popitem()[1][2].close()


_BOOTING = _Booting()


def own_lab(cfg: LabConfig):
    """A lab module's own lab (mark the module `pytest.mark.boots(cfg)` so it may boot early, and
    `pytest.mark.boots(cfg, idle_labs_ok=True)` if no check of it minds other labs idle beside it:
    it runs first, with the labs of the modules after it already up)."""
    return _BOOTING.lab(cfg)


def _phase(item) -> int:
    """Unit tests first, then the lab modules that boot a lab of their own (their labs are down
    before the rest run): those whose checks hold beside idle labs, then the others; then the
    other lab tests."""
    if item.get_closest_marker("lab") is None:
        return 0
    boots = item.get_closest_marker("boots")
    if boots is None:
        return 3
    return 1 if boots.kwargs.get("idle_labs_ok") else 2


def pytest_collection_modifyitems(config, items):
    items.sort(key=_phase)          # the order within each phase is kept


def _early_module_labs(items) -> list[LabConfig]:
    """The module labs to boot before the lab tests, in the order their modules run: the first
    module's; with unit tests to boot beside, also the next ones while every module before them
    is marked idle_labs_ok (the first not so marked is the last: its lab must not wait beside
    a module whose checks mind idle labs)."""
    labs: list[LabConfig] = []
    for item in items:
        boots = item.get_closest_marker("boots")
        if boots is None or boots.args[0] in labs:
            continue
        labs.append(boots.args[0])
        if not boots.kwargs.get("idle_labs_ok"):
            break
    return labs if any(_phase(i) == 0 for i in items) else labs[:1]


def pytest_collection_finish(session):
    if session.config.option.collectonly or os.environ.get("ZBENCH_SKIP_LAB"):
        return
    from zbench_lib.hosts.lab_image import cached_image
    session_lab = any("lab" in getattr(i, "fixturenames", ()) for i in session.items)
    if session_lab and cached_image(LabConfig(**LAB_TEST_CONFIG).zfs) is not None:
        _BOOTING.start(LabConfig(**LAB_TEST_CONFIG))
    before = None       # the session's lab and the first module lab boot together, the others one by one
    for cfg in _early_module_labs(session.items):
        if cached_image(cfg.zfs) is not None:      # the first boot builds the image: in the fixture, in the open
            before = _BOOTING.start(cfg, before)


def pytest_sessionfinish(session):
    _BOOTING.close()


@pytest.fixture(scope="session")
def lab(session_lab_config):
    if os.environ.get("ZBENCH_SKIP_LAB"):
        pytest.skip("ZBENCH_SKIP_LAB is set")
    with _BOOTING.lab(session_lab_config) as running:
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
    _reclaim_leftovers(request.getfixturevalue("lab"), request.node.name)
    yield


def _reclaim_leftovers(lab, before: str) -> None:
    # Pools of live fixtures (a module's shared pool) are not leftovers.
    owned = live_pools(lab.host)
    reclaimed = remove_leftovers(lab.host, [p for p in find_leftovers(lab.host) if p not in owned])
    if reclaimed:
        print(f"\nreclaimed leftover pools before {before}: {reclaimed}")


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


def wait_lock_free(host, timeout: float = 120) -> None:
    """Until no sweep holds `host`'s on-host lock. A killed sweep's lock goes once its holder has stopped
    what the session left on the host (hosts.host_lock): a sweep launched meanwhile is refused in one
    line, as a user's would be, so a test that kills a sweep waits for this before the next launch."""
    from zbench_lib.hosts.host_lock import HostBusy, check_free
    deadline = time.monotonic() + timeout
    while True:
        try:
            check_free(host)
            return
        except HostBusy as exc:
            assert time.monotonic() < deadline, f"the lock outlived its killed sweep by {timeout} s: {exc}"
            time.sleep(0.5)


def _sweep_on_session_lab(spec, out_root, sweep_id="", *, resume=None, crash_at=None,
                          timeout=1500) -> subprocess.CompletedProcess:
    argv, env = sweep_child(spec, out_root, sweep_id, resume=resume, crash_at=crash_at,
                            ZBENCH_LAB=LAB_TEST_CONFIG["name"])
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if crash_at:                # it SIGKILLed itself: its lock on the lab goes once its holder has cleaned up
        from zbench_lib.hosts.lab_state import connect_lab
        host = connect_lab(LAB_TEST_CONFIG["name"])
        try:
            wait_lock_free(host)
        finally:
            host.close()
    return res


@pytest.fixture
def sweep_on_lab(lab):
    """Run a spec with `run_sweep` in a child process on the session's lab (`resume`, `crash_at`:
    as `sweep_child`); the CompletedProcess."""
    return _sweep_on_session_lab


@pytest.fixture(scope="session")
def shared_sweep_on_lab(lab):
    """`sweep_on_lab` for a module-scoped fixture: one sweep whose runs several tests read (each
    sweep pays a fixed start: a child python, provenance, the environment record).

    A module-scoped fixture is set up before the autouse reclaim of the test that first asks for
    it, so an earlier test's leftover pools are reclaimed here first, as that reclaim would."""
    def run(spec, out_root, sweep_id, timeout=1500):
        _reclaim_leftovers(lab, f"sweep {sweep_id}")
        return _sweep_on_session_lab(spec, out_root, sweep_id, timeout=timeout)
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
