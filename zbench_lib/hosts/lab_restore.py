"""Labs started from a saved VM state instead of a boot.

A cold boot of the lab image is a minute or more of TCG (65-100 s on a busy 2-core machine), paid by
every lab: `zb.lab()`, `make demo`, each host of a fleet, each client VM, each lab of the test suite.
So the image is booted once per *machine shape* (image build, QEMU version, memory, CPUs,
accelerator: what a migration stream depends on), the running guest is saved right after it became
ready (QEMU migration to a file, `exec:cat`: QEMU 7.2 has no `file:` URI), and later labs load it:

- the root disk is a fresh qcow2 overlay over the frozen one the state was saved with, so what the
  guest's page cache holds matches the disk it sees;
- the data disks are hot-plugged after the load with the options a cold boot gives them
  (`lab_qemu.drive_options`), so their number, sizes, models and nbdkit serving stay per lab;
- what must be the lab's own is set over ssh (`fix_up`): its clock (the guest's clock stood still
  since the save; the drift found is recorded), its /etc/machine-id (a fleet's duplicate check tells
  machines apart by machine-id and boot_id, and the boot_id is the state's), its ZFS hostid, and the
  kernel's random generator is reseeded by the new `vmgenid` generation id. The ssh host key stays the
  image's, as on a cold boot (the controller pins it per image). The ZFS module is loaded with the
  parameters a fresh boot has (the state was saved from one, before any pool: no pool, no cache file,
  no mount), recorded in the state's manifest so a test can compare. The few parameters ZFS sizes from
  the memory the kernel counted at load (zfs_dirty_data_max and the like) are the bare machine's: a
  cold boot with its data disks counts a few pages less (24 KiB of 2 GiB measured, 0.001%).

A state that cannot be loaded (a QEMU that refuses it, a damaged file) is removed and the lab boots
cold, saying why; `ZBENCH_LAB_RESTORE=0` boots cold always (the boot benchmark's baseline).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from zbench_lib.core import paths
from zbench_lib.core.errors import ZbenchError
from zbench_lib.hosts.lab_config import QEMU, LabConfig
from zbench_lib.hosts.lab_qemu import disk_device
from zbench_lib.hosts.qmp import QMPClient

STATE_VERSION = 1          # what a state holds and how it is loaded; a change saves new ones
_SAFE_PATH = re.compile(r"[A-Za-z0-9_./+-]+")      # `exec:cat` goes through QEMU's /bin/sh


class RestoreFailed(ZbenchError):
    """A saved state this QEMU did not load; the lab boots cold instead."""


@dataclass(frozen=True)
class SavedState:
    dir: Path

    @property
    def root(self) -> Path:
        return self.dir / "root.qcow2"

    @property
    def vmstate(self) -> Path:
        return self.dir / "vm.state"

    @property
    def manifest(self) -> dict:
        return json.loads((self.dir / "manifest.json").read_text())


def enabled() -> bool:
    return os.environ.get("ZBENCH_LAB_RESTORE", "1") != "0"


@lru_cache(maxsize=1)
def qemu_version() -> str:
    return subprocess.run([QEMU, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]


def state_key(image: Path, cfg: LabConfig, accel: str) -> str:
    """What a state was saved from: the image *build* (a rebuilt image is other bytes under the same
    recipe key), QEMU, and the machine's shape."""
    built = json.loads((image / "manifest.json").read_text()).get("built_at")
    blob = json.dumps({"version": STATE_VERSION, "image": image.name, "built_at": built,
                       "qemu": qemu_version(), "memory_mib": cfg.memory_mib, "cpus": cfg.cpus,
                       "accel": accel}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def states_dir() -> Path:
    return paths.cache_dir() / "states"


def find(image: Path, cfg: LabConfig, accel: str) -> SavedState | None:
    d = states_dir() / state_key(image, cfg, accel)
    return SavedState(d) if (d / "manifest.json").exists() else None


@contextlib.contextmanager
def _state_lock(key: str):
    """One saver per state: labs booting together (a fleet, client VMs) wait for the first to save it."""
    states_dir().mkdir(parents=True, exist_ok=True)
    fd = os.open(states_dir() / f"{key}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def discard(state: SavedState) -> None:
    shutil.rmtree(state.dir, ignore_errors=True)


def ensure(image: Path, cfg: LabConfig, accel: str, boot) -> tuple[SavedState, bool]:
    """The state for this machine shape, saved now if there is none: `boot(lab_dir, root)` boots the
    bare machine (no data disks) in `lab_dir` and returns (QEMU process, ssh host) once it is ready.
    Returns the state and whether it was saved by this call."""
    key = state_key(image, cfg, accel)
    with _state_lock(key):
        found = find(image, cfg, accel)
        if found is not None:
            return found, False
        return _save(image, key, boot), True


def _save(image: Path, key: str, boot) -> SavedState:
    final = states_dir() / key
    work = states_dir() / f"{key}.saving-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    state = SavedState(work)
    _check_safe(state.vmstate)
    proc = None
    try:
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                        str(image / "rootfs.raw"), str(state.root)], check=True, capture_output=True)
        t0 = time.monotonic()
        proc, host = boot(work, state.root)
        boot_s = time.monotonic() - t0
        params = zfs_parameters(host)
        host.run(["sync"], timeout=120)
        host.close()
        t1 = time.monotonic()
        _migrate_to_file(work / "qmp.sock", state.vmstate)
        save_s = time.monotonic() - t1
        _quit(work / "qmp.sock", proc)
        manifest = {"key": key, "version": STATE_VERSION, "image": image.name, "qemu": qemu_version(),
                    "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "boot_s": round(boot_s, 1), "save_s": round(save_s, 1),
                    "vmstate_bytes": state.vmstate.stat().st_size, "zfs_parameters": params}
        for leftover in ("qmp.sock", "serial.log", "qemu.log"):
            (work / leftover).unlink(missing_ok=True)
        (work / "manifest.json").write_text(json.dumps(manifest, indent=2))
        os.replace(work, final)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    return SavedState(final)


def _check_safe(path: Path) -> None:
    if not _SAFE_PATH.fullmatch(str(path)):
        raise ZbenchError(f"the lab's cache path {path} has characters QEMU's exec: migration cannot "
                          "take: set ZBENCH_CACHE to a plain path")


def _migrate_to_file(qmp_sock: Path, target: Path, timeout_s: float = 300) -> None:
    with QMPClient(qmp_sock, timeout=30) as q:
        q.command("stop")
        q.command("migrate", uri=f"exec:cat > {target}")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status = q.command("query-migrate").get("status")
            if status == "completed":
                return
            if status in ("failed", "cancelled"):
                raise ZbenchError(f"saving the lab's VM state failed: {status}")
            time.sleep(0.2)
    raise ZbenchError(f"saving the lab's VM state did not end within {timeout_s:.0f} s")


def _quit(qmp_sock: Path, proc: subprocess.Popen) -> None:
    with contextlib.suppress(ZbenchError, OSError):
        with QMPClient(qmp_sock) as q:
            q.command("quit")
    proc.wait(30)


def incoming_argv(state: SavedState) -> list[str]:
    """What loads the state into a QEMU started with the machine's own argv; it runs once loaded."""
    _check_safe(state.vmstate)
    return ["-incoming", f"exec:cat {state.vmstate}"]


def wait_loaded(qmp_sock: Path, proc: subprocess.Popen, log: Path, timeout_s: float = 120) -> None:
    """Until the loaded guest runs; RestoreFailed (QEMU's words) if QEMU refused the state."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RestoreFailed(f"QEMU exited with {proc.returncode} loading the saved state: "
                                f"{log.read_text(errors='replace').strip()[-400:]}")
        with contextlib.suppress(OSError, ZbenchError):
            with QMPClient(qmp_sock, timeout=5) as q:
                status = q.command("query-status").get("status")
                if status == "running":
                    return
                if status == "paused":      # saved stopped (`stop` before `migrate`): it loads paused
                    q.command("cont")
                    return
        time.sleep(0.2)
    raise RestoreFailed(f"the saved state was not loaded within {timeout_s:.0f} s")


def hotplug(qmp_sock: Path, disks: list[tuple[str, list[str]]]) -> None:
    """Attach each (serial, drive options) as a cold boot's `-drive` + `-device` would."""
    with QMPClient(qmp_sock, timeout=30) as q:
        for serial, options in disks:
            said = q.command("human-monitor-command", **{"command-line": f"drive_add 0 {','.join(options)}"})
            if said.strip() != "OK":
                raise ZbenchError(f"lab disk {serial}: QEMU did not add its drive: {said.strip()}")
            device = dict(kv.split("=", 1) for kv in disk_device(serial).split(",")[1:])
            q.command("device_add", driver="virtio-blk-pci", **device)


def fix_up(host, disk_paths: list[str], timeout_s: float = 60) -> dict:
    """What a restored guest must not keep of the state: the clock, the machine-id. Waits for the
    hot-plugged disks. Returns what it found (recorded in the lab's provenance)."""
    before = time.time()
    guest = float(host.run(["date", "+%s.%N"], timeout=30).stdout)
    drift = guest - (before + time.time()) / 2
    host.run(["date", "-u", "-s", f"@{time.time():.6f}"], timeout=30)
    host.run(["tee", "/etc/machine-id"], input=uuid.uuid4().hex + "\n", timeout=30)
    # The hostid ZFS writes into a pool's labels (read from /etc/hostid at each use): the image's
    # one on a cold boot, each lab's own here, so two restored labs are two hosts to ZFS too.
    hostid = f"{secrets.randbelow(0xFFFFFFFE) + 1:08x}"
    host.run(["zgenhostid", "-f", hostid], timeout=30)
    deadline = time.monotonic() + timeout_s
    while True:
        host.run(["udevadm", "settle"], timeout=60)
        if not disk_paths or host.run(["ls", *disk_paths], check=False, timeout=30).ok:
            break
        if time.monotonic() > deadline:
            raise ZbenchError(f"hot-plugged lab disks did not appear within {timeout_s:.0f} s")
        time.sleep(0.5)
    return {"clock_drift_s": round(drift, 3), "hostid": hostid}


def zfs_parameters(host) -> dict[str, str]:
    """The zfs and spl module parameters, name -> value (a fresh boot's, in a state's manifest)."""
    out = host.run(["grep", "-r", "", "/sys/module/zfs/parameters", "/sys/module/spl/parameters"],
                   check=False, timeout=60).stdout
    found = {}
    for line in out.splitlines():
        path, _, value = line.partition(":")
        found[f"{Path(path).parent.parent.name}.{Path(path).name}"] = value
    return found
