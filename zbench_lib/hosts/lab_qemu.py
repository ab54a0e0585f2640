"""A lab's QEMU command line: the machine (root disk, network, RNG generation id), then its data disks.

The machine part is what a saved VM state depends on (`lab_restore`): a state is loaded into a QEMU
whose devices are the ones it was saved from, so a cold boot, the VM a state is saved from and a
restored lab all start from `machine_argv`. The data disks are per lab: given on a cold boot's command
line, hot-plugged into a restored one with the very same `-drive` options (`drive_options`).
"""

from __future__ import annotations

from pathlib import Path

from zbench_lib.hosts.disk_models import DiskModel
from zbench_lib.hosts.lab_config import QEMU, LabConfig


def machine_argv(cfg: LabConfig, *, name: str, accel: str, image: Path, lab_dir: Path, port: int,
                 root: Path) -> list[str]:
    """Everything but the data disks. `vmgenid` tells the guest kernel when it was restored from a
    state (a new generation id), so it reseeds its random generator: two labs restored from one
    state must not draw the same random numbers."""
    return [QEMU, "-name", f"zbench-lab-{name}", "-accel", "kvm" if accel == "kvm" else "tcg,thread=multi",
            "-smp", str(cfg.cpus), "-m", str(cfg.memory_mib),
            "-nodefaults", "-display", "none", "-vga", "none", "-monitor", "none",
            "-serial", f"file:{lab_dir / 'serial.log'}",
            "-qmp", f"unix:{lab_dir / 'qmp.sock'},server=on,wait=off",
            "-kernel", str(image / "vmlinuz"), "-initrd", str(image / "initrd.img"),
            "-append", "root=LABEL=zbench-root rw console=ttyS0 net.ifnames=0 quiet",
            # The root disk comes first on the PCI bus so that it is /dev/vda.
            "-drive", f"file={root},if=none,id=root,format=qcow2,cache=unsafe",
            "-device", "virtio-blk-pci,drive=root,serial=zbroot",
            "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:22",
            "-device", "virtio-net-pci,netdev=n0",
            "-device", "vmgenid,guid=auto"]


def drive_options(cfg: LabConfig, lab_dir: Path, serial: str, model: DiskModel) -> list[str]:
    """`-drive` options of one disk: a throttled file, or nbdkit's socket (a mech: model, or
    passthrough under a throttle model's QEMU throttle)."""
    if cfg.served(serial):
        # cache=writeback: the guest sees a volatile write cache, so its flushes reach the
        # model (NBD_CMD_FLUSH) instead of QEMU answering them; there is no host page cache on
        # a socket. A mech: model has no throttle (the model is the envelope).
        return ["driver=raw", "file.driver=nbd", "file.server.type=unix",
                f"file.server.path={nbd_socket(lab_dir, serial)}", "if=none", f"id={serial}",
                "cache=writeback", "discard=unmap", *model.qemu_throttle_options()]
    return [f"file={lab_dir / (serial + '.raw')}", "if=none", f"id={serial}", "format=raw",
            f"cache={cfg.disk_cache}", "aio=threads", "discard=unmap",
            *model.qemu_throttle_options()]


def lab_disks(cfg: LabConfig) -> list[tuple[str, DiskModel]]:
    """Every disk of the lab after the root, in bus order: the data disks, then the extra ones."""
    return ([(s, cfg.model) for s in cfg.data_serials]
            + [(s, cfg.extra_model) for s in cfg.extra_serials])


def disk_device(serial: str) -> str:
    """The `-device` (and `device_add`) of one disk; its id is what QMP throttles and faults name."""
    return f"virtio-blk-pci,drive={serial},serial={serial},id=dev-{serial}"


def nbd_socket(lab_dir: Path, serial: str) -> Path:
    return lab_dir / f"{serial}.nbd.sock"
