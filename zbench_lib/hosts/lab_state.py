"""A lab's directory and state.json: who owns it, how to reach it, how to stop it.

`zbench lab up` leaves QEMU running detached; these functions find it again from
another process (connect, status, down) and clean up after a lab whose owner died.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import time
from pathlib import Path

from zbench_lib.core import paths
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.lab_config import GiB, QEMU, LabConfig, check_lab_name
from zbench_lib.hosts.ssh import SSHHost


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie counts as dead
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def check_can_start(cfg: LabConfig, lab_dir: Path) -> None:
    """Every reason a lab cannot start, raised before anything is created."""
    if not shutil.which(QEMU) or not shutil.which("qemu-img"):
        raise ConfigError(f"{QEMU} or qemu-img not found: run `zbench setup` "
                          "(apt-get install qemu-system-x86 qemu-utils)")
    if not shutil.which("ssh"):
        raise ConfigError("ssh not found: run `zbench setup` (apt-get install openssh-client)")
    if any(map(cfg.served, cfg.data_serials + cfg.extra_serials)) and not shutil.which("nbdkit"):
        raise ConfigError("a mech: disk model needs nbdkit: run `zbench setup` "
                          "(apt-get install nbdkit nbdkit-plugin-python)")
    need = cfg.disks * cfg.disk_bytes + cfg.extra_disks * cfg.extra_disk_bytes + 2 * GiB
    probe = lab_dir.parent
    probe.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(probe).free
    if free < need:
        raise ConfigError(f"no space for the lab's disk files: they may grow to {need / GiB:.1f} GiB "
                          f"but {probe} has {free / GiB:.1f} GiB free (use fewer or smaller disks, "
                          "or set ZBENCH_CACHE to a larger filesystem)")
    st = _load(lab_dir / "state.json")
    if st is not None and is_lab_qemu(st, cfg.name):
        raise ConfigError(f"a lab named {cfg.name!r} is already running (pid {st.get('pid')}); "
                          "`zbench lab down` stops it")


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (/proc/PID/stat field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _live_argv(pid) -> list[bytes] | None:
    """The command line of a live process `pid` (a recorded pid, not yet trusted), or None."""
    if not isinstance(pid, int) or pid <= 1 or not _pid_alive(pid):
        return None
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None


def is_lab_qemu(state: dict, name: str) -> bool:
    """Is the PID recorded in `state` still this lab's QEMU (not a reused PID)?"""
    pid = state.get("pid")
    argv = _live_argv(pid)
    if not argv or not argv[0].decode(errors="replace").endswith(QEMU) \
            or f"zbench-lab-{name}".encode() not in argv:
        return False
    started = state.get("qemu_start_ticks")
    return started is None or started == process_start_time(pid)


def is_lab_nbdkit(entry: dict, lab_dir: Path) -> bool:
    """Is the pid recorded for a mech: disk still the nbdkit serving a file of this lab?"""
    pid = entry.get("pid") if isinstance(entry, dict) else None
    argv = _live_argv(pid)
    if not argv or not argv[0].endswith(b"nbdkit") or not any(a.startswith(f"file={lab_dir}/".encode()) for a in argv):
        return False
    started = entry.get("start_ticks")
    return started is None or started == process_start_time(pid)


def stop_lab_nbdkit(state: dict, lab_dir: Path) -> None:
    """SIGTERM each nbdkit recorded in `state` that is still this lab's (never a reused pid)."""
    for entry in (state.get("nbdkit") or {}).values():
        if is_lab_nbdkit(entry, lab_dir):
            os.kill(entry["pid"], signal.SIGTERM)


def take_lock(name: str) -> int:
    """Hold the lab name's lock; the returned fd keeps it (QEMU inherits it, so the
    lock lives exactly as long as the lab does, detached or not)."""
    labs = paths.labs_dir()
    labs.mkdir(parents=True, exist_ok=True)
    fd = os.open(labs / f".{check_lab_name(name)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ConfigError(f"a lab named {name!r} is already running or starting (its lock is held); "
                          "`zbench lab status` shows it, `zbench lab down` stops it") from None
    return fd


def _load(state_path: Path) -> dict | None:
    try:
        return json.loads(state_path.read_text())
    except (OSError, ValueError):
        return None


def connection_kwargs(port: int, image: Path) -> dict:
    # The image carries the lab's key pair and pinned host key.
    return {"destination": "root@127.0.0.1", "port": port, "identity": str(image / "id_ed25519"),
            "known_hosts": str(image / "known_hosts"), "host_key_alias": "zbench-lab"}


def remove_stale(lab_dir: Path):
    st = _load(lab_dir / "state.json")
    if st is not None and is_lab_qemu(st, lab_dir.name):
        raise ConfigError(f"lab directory {lab_dir} belongs to running pid {st.get('pid')}")
    shutil.rmtree(lab_dir)


def read_state(name: str = "default") -> dict | None:
    """State of a running lab, or None when none runs (a dead lab's files are removed)."""
    d = paths.labs_dir() / check_lab_name(name)
    data = _load(d / "state.json")
    if data is None:
        return None
    if not is_lab_qemu(data, name):
        shutil.rmtree(d, ignore_errors=True)
        return None
    return data


def connect_lab(name: str = "default") -> SSHHost:
    """An SSH host for a lab started with `zbench lab up`."""
    st = read_state(check_lab_name(name))
    if st is None:
        raise ZbenchError(f"no lab named {name!r} is running; start one with `zbench lab up`")
    return SSHHost(**connection_kwargs(st["port"], Path(st["image"])), name=f"lab:{name}")


def stop_lab(name: str = "default") -> bool:
    """Stop a detached lab and remove its files. False when none was running.

    The PID is signalled only while it is still this lab's QEMU (command line and
    start time checked again before each signal), never whatever reused the number.
    """
    d = paths.labs_dir() / check_lab_name(name)
    st = read_state(name)
    if st is None:
        return False
    pid = st["pid"]
    if is_lab_qemu(st, name):
        os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not is_lab_qemu(st, name):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    stop_lab_nbdkit(st, d)       # after QEMU, which held their connections
    shutil.rmtree(d, ignore_errors=True)
    return True
