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
import time
from pathlib import Path

from zbench_lib.core import paths
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred, terminate_as_exit
from zbench_lib.hosts import lab_image
from zbench_lib.hosts.disk_models import DiskModel, parse_model
from zbench_lib.hosts.kvm import choose_accel
from zbench_lib.hosts.lab_config import QEMU, LabConfig, guest_disk_path
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
            self._install_signal_handlers()
        try:
            self._create_disks()
            self.accel = choose_accel(self.cfg.accel, self.image / "vmlinuz")
            t0 = time.monotonic()
            for attempt in range(3):      # the chosen port may be taken before QEMU binds it
                self.port = _free_port()
                self._start_qemu()
                try:
                    self._wait_ready(t0)
                    break
                except _PortTaken:
                    continue
            else:
                raise ZbenchError("could not bind a loopback port for the lab's SSH")
            self.boot_s = time.monotonic() - t0
            self._write_state()
        except BaseException:
            self.down()
            raise
        return self

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
    def _create_disks(self):
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                        str(self.image / "rootfs.raw"), str(self.dir / "root.qcow2")],
                       check=True, capture_output=True)
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
        self.nbd[serial] = start_nbd_disk(
            self.nbd_socket(serial), self.dir / f"{serial}.raw", mech, log=self.dir / f"{serial}.nbdkit.log",
            exit_with_parent=not self.detach, start_new_session=True)

    def nbd_socket(self, serial: str) -> Path:
        return self.dir / f"{serial}.nbd.sock"

    def _drive_options(self, serial: str, model: DiskModel) -> list[str]:
        """`-drive` options of one disk: a throttled file, or nbdkit's socket (a mech: model, or
        passthrough under a throttle model's QEMU throttle)."""
        if self.cfg.served(serial):
            # cache=writeback: the guest sees a volatile write cache, so its flushes reach the
            # model (NBD_CMD_FLUSH) instead of QEMU answering them; there is no host page cache on
            # a socket. A mech: model has no throttle (the model is the envelope).
            return ["driver=raw", "file.driver=nbd", "file.server.type=unix",
                    f"file.server.path={self.nbd_socket(serial)}", "if=none", f"id={serial}",
                    "cache=writeback", "discard=unmap", *model.qemu_throttle_options()]
        return [f"file={self.dir / (serial + '.raw')}", "if=none", f"id={serial}", "format=raw",
                f"cache={self.cfg.disk_cache}", "aio=threads", "discard=unmap",
                *model.qemu_throttle_options()]

    def qemu_argv(self) -> list[str]:
        d = self.dir
        accel = "kvm" if self.accel == "kvm" else "tcg,thread=multi"
        argv = [QEMU, "-name", f"zbench-lab-{self.cfg.name}", "-accel", accel,
                "-smp", str(self.cfg.cpus), "-m", str(self.cfg.memory_mib),
                "-nodefaults", "-display", "none", "-vga", "none", "-monitor", "none",
                "-serial", f"file:{d / 'serial.log'}",
                "-qmp", f"unix:{d / 'qmp.sock'},server=on,wait=off",
                "-kernel", str(self.image / "vmlinuz"), "-initrd", str(self.image / "initrd.img"),
                "-append", "root=LABEL=zbench-root rw console=ttyS0 net.ifnames=0 quiet",
                # The root disk comes first on the PCI bus so that it is /dev/vda.
                "-drive", f"file={d / 'root.qcow2'},if=none,id=root,format=qcow2,cache=unsafe",
                "-device", "virtio-blk-pci,drive=root,serial=zbroot",
                "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{self.port}-:22",
                "-device", "virtio-net-pci,netdev=n0"]
        disks = [(s, self.cfg.model) for s in self.cfg.data_serials]
        disks += [(s, self.cfg.extra_model) for s in self.cfg.extra_serials]
        for serial, model in disks:
            argv += ["-drive", ",".join(self._drive_options(serial, model)),
                     "-device", f"virtio-blk-pci,drive={serial},serial={serial},id=dev-{serial}"]
        return argv

    def _start_qemu(self):
        log = open(self.dir / "qemu.log", "w")
        self.proc = subprocess.Popen(self.qemu_argv(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=None if self.detach else _die_with_parent,
                                     pass_fds=(self._lock_fd,) if self._lock_fd is not None else ())
        log.close()

    def _wait_ready(self, t0: float):
        self.host = SSHHost(**self.connection(), connect_timeout=5, name=f"lab:{self.cfg.name}")
        while True:
            if self.proc.poll() is not None:
                log = (self.dir / "qemu.log").read_text(errors="replace")
                if "Could not set up host forwarding" in log:
                    raise _PortTaken()
                raise ZbenchError(f"QEMU exited with {self.proc.returncode} while booting:\n"
                                  f"{log[-2000:]}\n--- serial ---\n{self.serial_tail()}")
            if time.monotonic() - t0 > self.cfg.boot_timeout_s:
                raise ZbenchError(f"lab did not answer SSH within {self.cfg.boot_timeout_s:.0f} s "
                                  f"({self.accel}); serial console tail:\n{self.serial_tail()}")
            res = self.host.run(["true"], check=False, timeout=15)
            if res.ok:
                # zfs.ko is loaded by systemd-modules-load; wait until /dev/zfs exists.
                self.host.run(["sh", "-c", "for i in $(seq 60); do [ -e /dev/zfs ] && exit 0; "
                               "modprobe zfs 2>/dev/null; sleep 1; done; exit 1"], timeout=90)
                self.host.run(["udevadm", "settle"], timeout=60)
                return
            time.sleep(1)

    def serial_tail(self, n: int = 30) -> str:
        p = self.dir / "serial.log"
        return "\n".join(p.read_text(errors="replace").splitlines()[-n:]) if p.exists() else ""

    def _write_state(self):
        state = {"pid": self.proc.pid, "qemu_start_ticks": process_start_time(self.proc.pid),
                 "owner_pid": os.getpid(), "port": self.port, "accel": self.accel, "image": str(self.image),
                 "boot_s": round(self.boot_s, 1), "config": self.cfg.to_dict(),
                 "data_disks": [guest_disk_path(s) for s in self.cfg.data_serials],
                 "extra_disks": [guest_disk_path(s) for s in self.cfg.extra_serials],
                 "nbdkit": {s: {"pid": p.pid, "start_ticks": process_start_time(p.pid)}
                            for s, p in self.nbd.items()},
                 "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, self.dir / "state.json")

    def _install_signal_handlers(self):
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
                "lab_disk_models": {s: m.to_dict() for s, m in self.models.items()}}


class _PortTaken(Exception):
    pass


def _sparse(path: Path, size: int):
    with open(path, "wb") as fh:
        fh.truncate(size)
