"""A modelled disk on the controller: nbdkit serving a sparse file through `nbd_disk_plugin`.

`build_nbdkit_argv` is pure; `start_nbd_disk` runs it and waits for the socket;
`stop_nbd_disk` ends it. The lab (`lab.py`) and the calibration benchmark use these. The model it
serves can be switched while it runs through the files beside the disk (`nbd_model`).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.mech_models import parse_mech

PLUGIN = Path(__file__).with_name("nbd_disk_plugin.py")
NBDKIT = "nbdkit"
# nbdkit's request threads per connection: how many requests can be in flight at once. Above
# NCQ's 32 so the drive, not nbdkit, bounds the queue; QEMU keeps few more in flight.
THREADS = 64


def build_nbdkit_argv(socket: Path, backing: Path, model: str, *, exit_with_parent: bool = True) -> list[str]:
    """The nbdkit command serving `backing` on a unix socket with the mechanism model `model`."""
    parse_mech(model)
    argv = [NBDKIT, "--foreground", "--unix", str(socket), "--threads", str(THREADS)]
    if exit_with_parent:
        argv.append("--exit-with-parent")
    return argv + ["python", str(PLUGIN), f"file={backing}", f"model={model}"]


def nbd_uri(socket: Path) -> str:
    """The NBD URI of a unix-socket export (fio's `uri=`, qemu-img's filename)."""
    return f"nbd+unix:///?socket={socket}"


def start_nbd_disk(socket: Path, backing: Path, model: str, *, log: Path | None = None,
                   exit_with_parent: bool = True, timeout_s: float = 20.0, **popen) -> subprocess.Popen:
    """Start nbdkit and return once its socket accepts connections (or raise with its log)."""
    if not shutil.which(NBDKIT):
        raise ConfigError("nbdkit not found: run `zbench setup` (apt-get install nbdkit nbdkit-plugin-python)")
    socket.unlink(missing_ok=True)
    out = open(log, "w") if log else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(build_nbdkit_argv(socket, backing, model, exit_with_parent=exit_with_parent),
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **popen)
    finally:
        if log:
            out.close()
    deadline = time.monotonic() + timeout_s
    while not socket.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_nbd_disk(proc)
            tail = log.read_text(errors="replace")[-1500:] if log and log.exists() else ""
            raise ZbenchError(f"nbdkit for {backing.name} ({model}) did not start: {tail}")
        time.sleep(0.05)
    return proc


def stop_nbd_disk(proc: subprocess.Popen | None, timeout_s: float = 10.0) -> None:
    """End one nbdkit started here (its own pid only); safe on one already gone."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout_s)
