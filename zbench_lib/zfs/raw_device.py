"""The raw surface: fio on a modelled block device itself, no ZFS, as a baseline.

Before fio writes a byte, the device passes the checks a pool's disks pass
(`safety.check_devices`): it must be one of the devices the spec's host gave, a whole
block device, not mounted, not swap, not the root disk, not in an imported pool, with
no foreign ZFS label, and no filesystem/partition-table signature unless the caller
allows that device's signatures by name (lab disks are ours: their signatures are
allowed, every in-use check still applies). Nothing here writes except `wipe()`, and
it runs only when the caller asks for it.
"""

from __future__ import annotations

from zbench_lib.core.errors import ConfigError
from zbench_lib.core.signals import signals_deferred, terminate_as_exit
from zbench_lib.hosts.base import Host
from zbench_lib.zfs.safety import check_device, check_devices

# TERMs every fio that holds a file open at $1 or under $1/ (passed as an argument,
# never interpolated into the script). /proc/<pid>/fd links name resolved paths.
_KILL_BY_OPEN_FILE = ('for p in $(pgrep -x fio); do for f in /proc/"$p"/fd/*; do '
                      't=$(readlink "$f" 2>/dev/null); case "$t" in "$1"|"$1"/*) '
                      'kill -TERM "$p"; break;; esac; done; done; exit 0')

# Refusals that describe what the device holds, not who uses it: after a raw write
# they may come from fio's own random bytes, so they never stop a wipe.
_CONTENT_REASONS = ("has partitions", "has a ZFS label")
_QUEUE_FILES = ("logical_block_size", "physical_block_size", "rotational", "scheduler")


def stop_fio_on(host: Host, path: str) -> None:
    """Ask every fio on `host` that has `path` (a device, or a directory and what is
    under it) open to stop; fio started over SSH outlives the local client."""
    host.run(["sh", "-c", _KILL_BY_OPEN_FILE, "kill-by-open-file", path], check=False, timeout=60)


def parse_scheduler(text: str) -> str:
    """The active I/O scheduler of /sys/block/<dev>/queue/scheduler ('[mq-deadline] none')."""
    words = text.split()
    active = [w[1:-1] for w in words if w.startswith("[") and w.endswith("]")]
    return active[0] if active else (words[0] if len(words) == 1 else "unknown")


def parse_queue(text: str) -> dict:
    """`grep -H '' /sys/block/<dev>/queue/<file>...` output -> the queue's settings."""
    raw = {}
    for line in text.splitlines():
        path, sep, value = line.partition(":")
        if sep:
            raw[path.rsplit("/", 1)[-1]] = value.strip()
    out = {}
    for key in ("logical_block_size", "physical_block_size"):
        if raw.get(key, "").isdigit():
            out[key] = int(raw[key])
    if raw.get("rotational") in ("0", "1"):
        out["rotational"] = raw["rotational"] == "1"
    if "scheduler" in raw:
        out["scheduler"] = parse_scheduler(raw["scheduler"])
    return out


class RawDevice:
    """One whole block device as a fio target, checked before use, wiped only on request.

    `host_devices` are the devices the spec's host gave (a lab's disks, or a real
    host's `devices` list); `device` must be one of them, as written there.
    `allow_signatures` names the devices whose filesystem/partition-table signatures
    may be overwritten (the spec's `allow_signatures`); `owned` marks lab disks.
    As a context manager it checks on entry and, with `wipe_after`, wipes on exit
    with signals held, so the next `zpool create` does not find fio's garbage.
    """

    def __init__(self, host: Host, device: str, *, host_devices, allow_signatures=(),
                 owned: bool = False, wipe_after: bool = False):
        if isinstance(allow_signatures, (str, bytes)) or isinstance(host_devices, (str, bytes)):
            raise ConfigError("raw device: host_devices and allow_signatures are lists of device paths")
        if device not in list(host_devices):
            raise ConfigError(f"raw device {device!r} is not one of the host's devices "
                              f"({', '.join(host_devices) or 'none given'}); only those may be written")
        self.host, self.device = host, device
        self.allow_signatures = device in list(allow_signatures) or owned
        self.owned, self.wipe_after = owned, wipe_after
        self.resolved = ""
        self.checked = False
        self.wiped = False

    @property
    def file_path(self) -> str:
        """What fio writes: the device itself."""
        return self.device

    def check(self) -> "RawDevice":
        """Refuse the device unless it is free; ConfigError naming every reason."""
        overrides = [self.device] if self.allow_signatures else []
        checks = check_devices(self.host, [self.device], overrides=overrides)
        self.resolved = checks[0].resolved
        # safety accepts zbench's file vdevs for pools; the raw surface is a disk only.
        if not self.host.run(["test", "-b", self.resolved], check=False).ok:
            raise ConfigError(f"raw device {self.device}: is not a block device (a raw baseline "
                              "measures a whole disk)")
        self.checked = True
        return self

    def clear_leftovers(self) -> "RawDevice":
        """A lab disk only (`owned`), before `check()`: clear the partitions and labels earlier
        zbench pools left on it (as `Pool.create` does for lab disks), so the check does not
        refuse the disk for them. Refused, without a write, if the disk is in use."""
        if not self.owned:
            raise ConfigError(f"raw device {self.device}: only a lab disk's leftovers are cleared "
                              "(a real host's disk must pass the checks as it is)")
        chk = check_device(self.host, self.device)
        in_use = [r for r in chk.reasons if not r.startswith(_CONTENT_REASONS)]
        if in_use:
            raise ConfigError(f"raw device {self.device}: not cleared, it {'; '.join(in_use)}")
        with signals_deferred():
            self.host.run(["zpool", "labelclear", "-f", chk.resolved], check=False, timeout=60)
            self.host.run(["wipefs", "-a", "-q", chk.resolved], timeout=120)
            self.host.run(["udevadm", "settle"], check=False, timeout=60)
        return self

    def readback(self) -> dict:
        """Size and queue settings of the device, as the kernel reports them."""
        real = self.resolved or self.host.run(["readlink", "-e", self.device], timeout=30).stdout.strip()
        size = int(self.host.run(["blockdev", "--getsize64", real], timeout=60).stdout.strip())
        name = real.rsplit("/", 1)[-1]
        files = [f"/sys/block/{name}/queue/{f}" for f in _QUEUE_FILES]
        queue = parse_queue(self.host.run(["grep", "-H", "", *files], check=False, timeout=30).stdout)
        return {"device": self.device, "resolved": real, "size_bytes": size,
                "logical_block_size": queue.get("logical_block_size"),
                "physical_block_size": queue.get("physical_block_size"),
                "rotational": queue.get("rotational"), "scheduler": queue.get("scheduler")}

    def wipe(self) -> None:
        """`wipefs -a` the device: only a device this object checked, only if still unused."""
        if not self.checked:
            raise ConfigError(f"raw device {self.device}: refusing to wipe a device that was never checked")
        with signals_deferred():
            stop_fio_on(self.host, self.resolved)
            chk = check_device(self.host, self.device)
            in_use = [r for r in chk.reasons if not r.startswith(_CONTENT_REASONS)]
            if in_use or chk.resolved != self.resolved:
                raise ConfigError(f"raw device {self.device}: not wiped, it "
                                  f"{'; '.join(in_use) or 'now resolves to ' + chk.resolved}")
            self.host.run(["wipefs", "-a", "-q", self.resolved], timeout=120)
            self.host.run(["udevadm", "settle"], check=False, timeout=60)
            self.wiped = True

    def __enter__(self) -> "RawDevice":
        self._signals = terminate_as_exit()
        self._signals.__enter__()
        try:
            return self.check()
        except BaseException:
            self._signals.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        try:
            if self.wipe_after and self.checked:
                self.wipe()
        finally:
            self._signals.__exit__(None, None, None)
