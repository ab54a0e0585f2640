"""What a lab looks like: disks, their models, memory, CPUs. Validated before anything exists."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.disk_models import DiskModel, parse_model
from zbench_lib.hosts.lab_image import DEFAULT_ZFS, ZFS_RELEASES

GiB = 1024 ** 3
MIN_DISK_BYTES = 64 * 1024 * 1024   # ZFS refuses vdevs below 64 MiB
QEMU = "qemu-system-x86_64"
_LAB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


def check_lab_name(name) -> str:
    """A lab name is a directory name under the labs directory, never a path."""
    if not isinstance(name, str) or not _LAB_NAME.fullmatch(name):
        raise ConfigError(f"lab: name must be 1-32 letters, digits, - or _ (starting with a letter "
                          f"or digit), got {name!r}")
    return name


@dataclass
class LabConfig:
    """What a lab looks like. Validated before anything is created."""

    disks: int = 4
    disk_bytes: int = 2 * GiB
    model: DiskModel | str = "hdd"
    extra_disks: int = 0             # for log / cache / special vdevs
    extra_disk_bytes: int = 1 * GiB
    extra_model: DiskModel | str = "unthrottled"
    memory_mib: int = 2048
    cpus: int = 2
    accel: str = "auto"              # auto | kvm | tcg
    name: str = "default"
    boot_timeout_s: float = 240
    disk_cache: str = "none"         # QEMU cache mode for data disks (none = O_DIRECT on host)
    zfs: str = DEFAULT_ZFS           # OpenZFS release of the image (lab_image.ZFS_RELEASES)
    # Served through nbdkit whatever their model, so a mech: model can be switched in between pools (a
    # throttle model: nbdkit passes the I/O through, QEMU throttles it). A mech: model is always served.
    nbd_data: bool = False
    nbd_extra: bool = False

    def __post_init__(self):  # noqa: C901, PLR0912 (a flat list of checks, one per field)
        self.model = parse_model(self.model)
        self.extra_model = parse_model(self.extra_model)
        for f in ("disks", "extra_disks", "memory_mib", "cpus", "disk_bytes", "extra_disk_bytes"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"lab: {f} must be an integer, got {v!r}")
        if self.disks < 1:
            raise ConfigError(f"lab: needs at least 1 data disk, got {self.disks}")
        if self.disks + self.extra_disks > 24:
            raise ConfigError(f"lab: at most 24 disks in all, got {self.disks + self.extra_disks}")
        if self.extra_disks < 0:
            raise ConfigError(f"lab: extra_disks cannot be negative, got {self.extra_disks}")
        for f in ("disk_bytes", "extra_disk_bytes"):
            if getattr(self, f) < MIN_DISK_BYTES:
                raise ConfigError(f"lab: {f} must be at least 64 MiB (ZFS's minimum vdev size)")
        if self.memory_mib < 1024:
            raise ConfigError(f"lab: memory_mib must be at least 1024, got {self.memory_mib}")
        if not 1 <= self.cpus <= 64:
            raise ConfigError(f"lab: cpus must be 1..64, got {self.cpus}")
        if self.accel not in ("auto", "kvm", "tcg"):
            raise ConfigError(f"lab: accel must be auto, kvm or tcg, got {self.accel!r}")
        if self.disk_cache not in ("none", "writeback", "writethrough", "directsync"):
            raise ConfigError(f"lab: unknown disk_cache {self.disk_cache!r}")
        for f in ("nbd_data", "nbd_extra"):
            if not isinstance(getattr(self, f), bool):
                raise ConfigError(f"lab: {f} must be true or false, got {getattr(self, f)!r}")
        check_lab_name(self.name)
        self.zfs = str(self.zfs)
        if self.zfs not in ZFS_RELEASES:
            raise ConfigError(f"lab: zfs must be one of {', '.join(sorted(ZFS_RELEASES))}, got {self.zfs!r}")

    @property
    def data_serials(self) -> list[str]:
        return [f"zbdata{i:02d}" for i in range(self.disks)]

    @property
    def extra_serials(self) -> list[str]:
        return [f"zbextra{i:02d}" for i in range(self.extra_disks)]

    def served(self, serial: str) -> bool:
        """Is disk `serial` served through nbdkit (QEMU reaching its socket), not a file QEMU opens?"""
        if serial in self.data_serials:
            return self.nbd_data or self.model.mech is not None
        return self.nbd_extra or self.extra_model.mech is not None

    @property
    def mech_disks(self) -> int:
        """Disks a `mech:` model serves: each costs nbdkit's Python on the controller per I/O."""
        return (self.disks if self.model.mech is not None else 0) + \
            (self.extra_disks if self.extra_model.mech is not None else 0)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["model"] = self.model.to_dict()
        d["extra_model"] = self.extra_model.to_dict()
        return d


def guest_disk_path(serial: str) -> str:
    """Stable by-id path of a lab disk inside the guest."""
    return f"/dev/disk/by-id/virtio-{serial}"


def serial_of(device: str) -> str:
    """/dev/disk/by-id/virtio-<serial> -> <serial> (lab disks only: guest_disk_path's inverse)."""
    name = Path(device).name
    if not name.startswith("virtio-"):
        raise ValueError(f"not a lab disk: {device}")
    return name[len("virtio-"):]
