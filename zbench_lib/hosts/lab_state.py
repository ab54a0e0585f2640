"""A lab's directory and state.json: who owns it, how to reach it, how to stop it.

`zbench lab up` leaves QEMU running detached; these functions find it again from
another process (connect, status, down) and clean up after a lab whose owner died.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

from zbench_lib.core import paths
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.lab_config import GiB, QEMU, LabConfig
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
    need = cfg.disks * cfg.disk_bytes + cfg.extra_disks * cfg.extra_disk_bytes + 2 * GiB
    probe = lab_dir.parent
    probe.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(probe).free
    if free < need:
        raise ConfigError(f"no space for the lab's disk files: they may grow to {need / GiB:.1f} GiB "
                          f"but {probe} has {free / GiB:.1f} GiB free (use fewer or smaller disks, "
                          "or set ZBENCH_CACHE to a larger filesystem)")
    state = lab_dir / "state.json"
    if state.exists():
        pid = json.loads(state.read_text()).get("pid", 0)
        if _pid_alive(pid):
            raise ConfigError(f"a lab named {cfg.name!r} is already running (pid {pid}); "
                              "`zbench lab down` stops it")


def connection_kwargs(port: int, image: Path) -> dict:
    # The image carries the lab's key pair and pinned host key.
    return {"destination": "root@127.0.0.1", "port": port, "identity": str(image / "id_ed25519"),
            "known_hosts": str(image / "known_hosts"), "host_key_alias": "zbench-lab"}


def remove_stale(lab_dir: Path):
    state = lab_dir / "state.json"
    if state.exists():
        pid = json.loads(state.read_text()).get("pid", 0)
        if _pid_alive(pid):
            raise ConfigError(f"lab directory {lab_dir} belongs to running pid {pid}")
    shutil.rmtree(lab_dir)


def read_state(name: str = "default") -> dict | None:
    """State of a detached lab, or None when none runs (stale state is removed)."""
    d = paths.labs_dir() / name
    state = d / "state.json"
    if not state.exists():
        return None
    data = json.loads(state.read_text())
    if not _pid_alive(data.get("pid", 0)):
        shutil.rmtree(d, ignore_errors=True)
        return None
    return data


def connect_lab(name: str = "default") -> SSHHost:
    """An SSH host for a lab started with `zbench lab up`."""
    st = read_state(name)
    if st is None:
        raise ZbenchError(f"no lab named {name!r} is running; start one with `zbench lab up`")
    return SSHHost(**connection_kwargs(st["port"], Path(st["image"])), name=f"lab:{name}")


def stop_lab(name: str = "default") -> bool:
    """Stop a detached lab and remove its files. False when none was running."""
    d = paths.labs_dir() / name
    st = read_state(name)
    if st is None:
        return False
    pid = st["pid"]
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not _pid_alive(pid):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(d, ignore_errors=True)
    return True
