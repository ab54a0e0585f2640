"""The lab: a disposable QEMU VM with real OpenZFS and modelled data disks.

The VM is reached over SSH on a loopback port forward, so to the rest of
zbench it is just another SSH host. Each lab lives in its own directory
(overlay root disk, sparse data disks, QMP socket, serial log, state.json);
`down()` kills QEMU and removes the directory, leaving nothing behind.

A disk whose model is a mechanism model (`mech:...`) is not a file QEMU opens: nbdkit
serves its sparse file on a unix socket in the lab directory with the model's delays
(`nbd_disk`), QEMU reaches it with `driver=nbd`, and the nbdkit pids are recorded in
state.json so a teardown stops exactly them. Throttle models keep the plain-file path, unless the
config serves those disks through nbdkit anyway (`nbd_data`, `nbd_extra`: a sweep with a mech: level of
a model factor), in passthrough under the QEMU throttle, so a mech: model can be switched in later.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from zbench_lib.core import paths
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred, terminate_as_exit
from zbench_lib.hosts import lab_image, lab_restore
from zbench_lib.hosts.disk_models import DiskModel, parse_model
from zbench_lib.hosts.kvm import choose_accel
from zbench_lib.hosts.lab_config import LabConfig, guest_disk_path
from zbench_lib.hosts.lab_group import lasting_popen
from zbench_lib.hosts.lab_qemu import disk_device, drive_options, lab_disks, machine_argv, nbd_socket
from zbench_lib.hosts.lab_state import (check_can_start, connection_kwargs, process_start_time,
                                         remove_stale, take_lock)
from zbench_lib.hosts.nbd_disk import start_nbd_disk, stop_nbd_disk
from zbench_lib.hosts.nbd_model import PASSTHROUGH
from zbench_lib.hosts.qmp import QMPClient
from zbench_lib.hosts.ssh import SSHHost

__all__ = ["Lab", "LabConfig"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    # Linux: deliver SIGTERM to QEMU if the Python process that owns it dies,
    # even by SIGKILL, so a context-managed lab never outlives its owner.
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Lab:
    """A running lab VM. Use as a context manager, or `up()` / `down()`."""

    def __init__(self, config: LabConfig | None = None, *, detach: bool = False):
        self.cfg = config or LabConfig()
        self.dir = paths.labs_dir() / self.cfg.name
        self.detach = detach            # CLI `lab up`: QEMU outlives this process
        self.proc: subprocess.Popen | None = None
        self.host: SSHHost | None = None
        self.port: int | None = None
        self.accel: str | None = None
        self.boot_s: float | None = None
        self.start_kind: str | None = None      # "restored" from a saved VM state, or "cold"
        self.start_note = ""                    # why it was not restored, or that a state was saved first
        self.restored: dict = {}                # what the restore found (the guest clock's drift)
        self.image: Path | None = None
        self._signals = None
        self._lock_fd: int | None = None
        self.models = {s: self.cfg.model for s in self.cfg.data_serials}
        self.models.update({s: self.cfg.extra_model for s in self.cfg.extra_serials})
        self.nbd: dict[str, subprocess.Popen] = {}     # serial -> nbdkit serving a mech: disk

    # --- lifecycle -----------------------------------------------------------
    def up(self) -> "Lab":
        self._lock_fd = take_lock(self.cfg.name)     # two `up`s of one name: the second stops here
        try:
            check_can_start(self.cfg, self.dir)
        except BaseException:
            self._release_lock()
            raise
        self.image = lab_image.cached_image(self.cfg.zfs)
        if self.image is None:
            self.image = lab_image.build_image(zfs=self.cfg.zfs)
        if self.dir.exists():
            remove_stale(self.dir)
        self.dir.mkdir(parents=True)
        if not self.detach:
            atexit.register(self.down)
            if threading.current_thread() is threading.main_thread():      # else: lab_group.up_together
                self.install_signal_handlers()
        try:
            self._create_disks()
            self.accel = choose_accel(self.cfg.accel, self.image / "vmlinuz")
            t0 = time.monotonic()
            self._start(t0)
            self.boot_s = time.monotonic() - t0
            self._write_state()
        except BaseException:
            self.down()
            raise
        return self

    def _start(self, t0: float) -> None:
        """Restore the machine's saved state (saved first if this shape has none); boot cold when
        restoring is off or the state cannot be loaded, saying why in `start_note`."""
        state, self.start_note = self._saved_state()
        if state is not None:
            try:
                try:
                    self._root_overlay(state.root, "qcow2")
                except subprocess.CalledProcessError as exc:
                    said = exc.stderr.decode(errors="replace").strip()[-300:]
                    raise lab_restore.RestoreFailed(f"its root disk is unusable: {said}") from None
                _with_free_port(lambda: self._restore(state, t0))
                self.start_kind = "restored"
                return
            except lab_restore.RestoreFailed as exc:
                lab_restore.discard(state)
                self.start_note = f"the saved state was not loaded, so it was removed: {exc}"
                self._stop_qemu()
        self._root_overlay(self.image / "rootfs.raw", "raw")
        _with_free_port(lambda: self._cold_boot(t0))
        self.start_kind = "cold"

    def _saved_state(self) -> tuple[lab_restore.SavedState | None, str]:
        if not lab_restore.enabled():
            return None, "ZBENCH_LAB_RESTORE=0: booted cold"
        try:
            state, saved = lab_restore.ensure(self.image, self.cfg, self.accel, self._boot_bare)
        except ZbenchError as exc:
            return None, f"no VM state could be saved, so it booted cold: {exc}"
        return state, ("first lab of this machine shape: booted once and saved" if saved else "")

    def _boot_bare(self, work: Path, root: Path):
        """The machine without data disks, booted in `work` for a state to be saved (lab_restore)."""
        box: dict = {}

        def boot():
            box["port"] = _free_port()
            argv = machine_argv(self.cfg, name=f"state-{self.cfg.name}", accel=self.accel,
                                image=self.image, lab_dir=work, port=box["port"], root=root)
            box["proc"] = self._popen(argv, work / "qemu.log")
            box["host"] = SSHHost(**connection_kwargs(box["port"], self.image), connect_timeout=5,
                                  name=f"lab-state:{self.cfg.name}")
            try:
                _wait_ssh(box["proc"], box["host"], work, self.cfg.boot_timeout_s, self.accel, time.monotonic())
            except BaseException:
                if box["proc"].poll() is None:
                    box["proc"].kill()
                raise
        _with_free_port(boot)
        return box["proc"], box["host"]

    def _restore(self, state: lab_restore.SavedState, t0: float) -> None:
        self.port = _free_port()
        self.proc = self._popen(self.machine_argv() + lab_restore.incoming_argv(state), self.dir / "qemu.log")
        try:
            lab_restore.wait_loaded(self.dir / "qmp.sock", self.proc, self.dir / "qemu.log")
        except lab_restore.RestoreFailed:
            if "Could not set up host forwarding" in (self.dir / "qemu.log").read_text(errors="replace"):
                raise _PortTaken() from None
            raise
        lab_restore.hotplug(self.dir / "qmp.sock",
                            [(s, drive_options(self.cfg, self.dir, s, m)) for s, m in lab_disks(self.cfg)])
        self.host = SSHHost(**self.connection(), connect_timeout=5, name=f"lab:{self.cfg.name}")
        _wait_ssh(self.proc, self.host, self.dir, self.cfg.boot_timeout_s, self.accel, t0)
        self.restored = lab_restore.fix_up(self.host, self.data_disks + self.extra_disks)

    def _cold_boot(self, t0: float) -> None:
        self.port = _free_port()
        self.proc = self._popen(self.qemu_argv(), self.dir / "qemu.log")
        self.host = SSHHost(**self.connection(), connect_timeout=5, name=f"lab:{self.cfg.name}")
        _wait_ssh(self.proc, self.host, self.dir, self.cfg.boot_timeout_s, self.accel, t0)

    def _stop_qemu(self) -> None:
        if self.host:
            self.host.close()
            self.host = None
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def down(self) -> None:
        """Stop QEMU and remove every file of this lab. Safe to call twice.

        Signals arriving meanwhile are delivered once the files are gone, so a second
        Ctrl-C cannot leave a half-deleted lab directory behind.
        """
        with signals_deferred():
            self._down()

    def _down(self) -> None:
        if self.host:
            try:
                self.host.close()
            except Exception:
                pass
            self.host = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
        if not self.detach:
            self._stop_nbd()
        if self.dir.exists() and not self.detach:
            shutil.rmtree(self.dir, ignore_errors=True)
        self._restore_signal_handlers()
        self._release_lock()
        # An old Lab object's handler must not run at exit and delete a newer lab's files.
        atexit.unregister(self.down)

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.detach = False
        self.down()

    def _stop_nbd(self) -> None:
        for serial in list(self.nbd):
            stop_nbd_disk(self.nbd.pop(serial))

    # --- pieces --------------------------------------------------------------
    def _root_overlay(self, backing: Path, backing_format: str) -> None:
        (self.dir / "root.qcow2").unlink(missing_ok=True)
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", backing_format, "-b",
                        str(backing), str(self.dir / "root.qcow2")], check=True, capture_output=True)

    def _create_disks(self):
        for serial in self.cfg.data_serials:
            _sparse(self.dir / f"{serial}.raw", self.cfg.disk_bytes)
        for serial in self.cfg.extra_serials:
            _sparse(self.dir / f"{serial}.raw", self.cfg.extra_disk_bytes)
        for serial, model in self.models.items():
            if self.cfg.served(serial):
                self._start_nbd(serial, model.mech or PASSTHROUGH)

    def _start_nbd(self, serial: str, mech: str) -> None:
        # Detached, nbdkit outlives this process with QEMU (stop_lab ends both, by recorded pid);
        # owned, it dies with it.
        self.nbd[serial] = lasting_popen(lambda: start_nbd_disk(
            self.nbd_socket(serial), self.dir / f"{serial}.raw", mech, log=self.dir / f"{serial}.nbdkit.log",
            exit_with_parent=not self.detach, start_new_session=True))

    def nbd_socket(self, serial: str) -> Path:
        return nbd_socket(self.dir, serial)

    def machine_argv(self) -> list[str]:
        return machine_argv(self.cfg, name=self.cfg.name, accel=self.accel, image=self.image,
                            lab_dir=self.dir, port=self.port, root=self.dir / "root.qcow2")

    def qemu_argv(self) -> list[str]:
        """A cold boot's command line: the machine and every disk."""
        argv = self.machine_argv()
        for serial, model in lab_disks(self.cfg):
            argv += ["-drive", ",".join(drive_options(self.cfg, self.dir, serial, model)),
                     "-device", disk_device(serial)]
        return argv

    def _popen(self, argv: list[str], log_path: Path) -> subprocess.Popen:
        def start() -> subprocess.Popen:
            with open(log_path, "w") as log:
                return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=None if self.detach else _die_with_parent,
                                        pass_fds=(self._lock_fd,) if self._lock_fd is not None else ())
        return lasting_popen(start)

    def serial_tail(self, n: int = 30) -> str:
        return _tail(self.dir / "serial.log", n)

    def _write_state(self):
        state = {"pid": self.proc.pid, "qemu_start_ticks": process_start_time(self.proc.pid),
                 "owner_pid": os.getpid(), "port": self.port, "accel": self.accel, "image": str(self.image),
                 "boot_s": round(self.boot_s, 1), "start": self.start_kind, "start_note": self.start_note,
                 **self.restored, "config": self.cfg.to_dict(),
                 "data_disks": [guest_disk_path(s) for s in self.cfg.data_serials],
                 "extra_disks": [guest_disk_path(s) for s in self.cfg.extra_serials],
                 "nbdkit": {s: {"pid": p.pid, "start_ticks": process_start_time(p.pid)}
                            for s, p in self.nbd.items()},
                 "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, self.dir / "state.json")

    def install_signal_handlers(self):
        if self._signals is not None:
            return
        self._signals = terminate_as_exit()
        self._signals.__enter__()

    def _restore_signal_handlers(self):
        if self._signals is not None:
            signals, self._signals = self._signals, None
            try:
                signals.__exit__(None, None, None)
            except (ValueError, TypeError):
                pass

    # --- what the rest of zbench uses ------------------------------------------
    @property
    def data_disks(self) -> list[str]:
        return [guest_disk_path(s) for s in self.cfg.data_serials]

    @property
    def extra_disks(self) -> list[str]:
        return [guest_disk_path(s) for s in self.cfg.extra_serials]

    def qmp(self, command: str, **arguments):
        with QMPClient(self.dir / "qmp.sock") as q:
            return q.command(command, **arguments)

    def set_model(self, serial: str, model: DiskModel | str) -> DiskModel:
        """Change one disk's performance envelope live, through QMP."""
        model = parse_model(model)
        if serial not in self.cfg.data_serials + self.cfg.extra_serials:
            raise ConfigError(f"lab has no disk {serial!r}")
        if model.mech or self.models[serial].mech:
            raise ConfigError(f"disk {serial}: a mechanism model is no QEMU throttle: nbdkit serves it, "
                              f"switched through the disk's control file (lab_faults.serve), not here "
                              f"({self.models[serial].name} -> {model.name})")
        # virtio-blk-pci is a proxy; the block backend sits on its virtio child.
        self.qmp("block_set_io_throttle", id=f"/machine/peripheral/dev-{serial}/virtio-backend",
                 **model.qmp_throttle_arguments())
        self.models[serial] = model
        return model

    def connection(self) -> dict:
        """Keyword arguments for SSHHost, so another process can reach this lab."""
        return connection_kwargs(self.port, self.image)

    def provenance(self) -> dict:
        return {"lab_config": self.cfg.to_dict(), "lab_accel": self.accel, "lab_port": self.port,
                "lab_image": self.image.name if self.image else None, "lab_boot_s": self.boot_s,
                "lab_start": self.start_kind, "lab_start_note": self.start_note or None,
                "lab_clock_drift_s": self.restored.get("clock_drift_s"),
                "lab_disk_models": {s: m.to_dict() for s, m in self.models.items()}}


class _PortTaken(Exception):
    pass


def _with_free_port(start) -> None:
    """`start()` again on another port when the chosen one was taken before QEMU bound it."""
    for _attempt in range(3):
        try:
            return start()
        except _PortTaken:
            continue
    raise ZbenchError("could not bind a loopback port for the lab's SSH")


def _wait_ssh(proc: subprocess.Popen, host: SSHHost, lab_dir: Path, timeout_s: float, accel: str, t0: float):
    """Until the guest answers ssh with /dev/zfs present and udev settled."""
    while True:
        if proc.poll() is not None:
            log = (lab_dir / "qemu.log").read_text(errors="replace")
            if "Could not set up host forwarding" in log:
                raise _PortTaken()
            raise ZbenchError(f"QEMU exited with {proc.returncode} while booting:\n"
                              f"{log[-2000:]}\n--- serial ---\n{_tail(lab_dir / 'serial.log')}")
        if time.monotonic() - t0 > timeout_s:
            raise ZbenchError(f"lab did not answer SSH within {timeout_s:.0f} s "
                              f"({accel}); serial console tail:\n{_tail(lab_dir / 'serial.log')}")
        if host.run(["true"], check=False, timeout=15).ok:
            # zfs.ko is loaded by systemd-modules-load; wait until /dev/zfs exists.
            host.run(["sh", "-c", "for i in $(seq 60); do [ -e /dev/zfs ] && exit 0; "
                      "modprobe zfs 2>/dev/null; sleep 1; done; exit 1"], timeout=90)
            host.run(["udevadm", "settle"], timeout=60)
            return
        time.sleep(1)


def _tail(path: Path, n: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:]) if path.exists() else ""


def _sparse(path: Path, size: int):
    with open(path, "wb") as fh:
        fh.truncate(size)
