"""Pools and targets on a host, with guaranteed teardown.

`Pool` is a context manager: whatever happens inside the block (an exception,
Ctrl-C, SIGTERM), the pool and everything in it is destroyed on the way out.
Pools made by zbench carry the POOL_PREFIX, so leftovers from a crash are
recognisable; they are reported, and removed only when asked.
"""

from __future__ import annotations

import secrets
import sys
import time
from dataclasses import dataclass, field

from zbench_lib.core.errors import CommandError, CommandTimeout, ConfigError, ZbenchError
from zbench_lib.hosts.base import Host
from zbench_lib.core.stopping import stop_by_cwd
from zbench_lib.zfs import readback
from zbench_lib.zfs.layouts import Layout, expected_topology, zpool_create_argv
from zbench_lib.zfs.safety import POOL_PREFIX, check_devices
from zbench_lib.core.signals import signals_deferred, terminate_as_exit
from zbench_lib.zfs.targets import Dataset, Zvol, property_mismatches, zfs_create_argv
from zbench_lib.zfs.version import require_supported

REMOTE_WORK = "/var/tmp/zbench"
# Pools this process has created and not yet destroyed, by host name: a leftover
# sweep of the same host must never take one of these for a crash's leftover.
_LIVE: set[tuple[str, str]] = set()


def live_pools(host: Host) -> set[str]:
    """Pools that Pool objects of this process own on `host` right now."""
    return {pool for h, pool in _LIVE if h == host.name}


def new_pool_name(tag: str = "") -> str:
    tag = "".join(c for c in tag if c.isalnum() or c in "-_")[:20]
    return f"{POOL_PREFIX}{tag + '-' if tag else ''}{secrets.token_hex(3)}"


def find_leftovers(host: Host) -> list[str]:
    """Imported pools whose name says zbench made them (e.g. after a crash)."""
    out = host.run(["zpool", "list", "-H", "-o", "name"], timeout=60).stdout.split()
    return [p for p in out if p.startswith(POOL_PREFIX)]


def remove_leftovers(host: Host, pools: list[str] | None = None) -> list[str]:
    """Destroy zbench leftovers: only pools with the prefix, only when asked."""
    pools = find_leftovers(host) if pools is None else pools
    for p in pools:
        if not p.startswith(POOL_PREFIX):
            raise ConfigError(f"refusing to destroy {p!r}: not a zbench pool")
        _destroy(host, p)
    return pools


def wipe_argv(devices: list[str]) -> list[str]:
    """One command that clears each device's ZFS labels (a failure is no label: ignored) and wipes its
    signatures (a failure stops it, with wipefs's status): two round trips a disk were 0.3-0.6 s each
    on a lab, seconds a pool."""
    return ["sh", "-c", 'for d in "$@"; do zpool labelclear -f "$d" >/dev/null 2>&1; '
            'wipefs -a -q "$d" || exit $?; done', "zbench-wipe", *devices]


def _kill_workers(host: Host, pool: str) -> None:
    # fio started over SSH survives the local ssh client; stop what uses the pool. Three commands, not
    # one script: a shell holding the patterns in its own command line would be matched by pkill -f.
    host.run(["pkill", "-TERM", "-f", f"{REMOTE_WORK}/{pool}/"], check=False, timeout=30)
    host.run(["pkill", "-TERM", "-f", f"/dev/zvol/{pool}/"], check=False, timeout=30)
    host.run(stop_by_cwd(f"{REMOTE_WORK}/{pool}/"), check=False, timeout=30)


# A destroy of a busy pool on slow disks first writes out its dirty data: allow for
# the most ZFS holds dirty (zfs_dirty_data_max, 10% of RAM and at most 4 GiB) at the
# slowest disk rate zbench models (a few MiB/s under load), plus the unmount itself.
DESTROY_ATTEMPT_S = 300
DESTROY_BUDGET_S = 1200


def _pool_exists(host: Host, pool: str) -> bool:
    try:
        res = host.run(["zpool", "list", "-H", "-o", "name", pool], check=False, timeout=120)
    except CommandTimeout:      # blocked behind a destroy still in progress: not gone yet
        return True
    return res.ok and res.stdout.strip() == pool


def _destroy(host: Host, pool: str, budget_s: float = DESTROY_BUDGET_S) -> None:
    """Destroy `pool` for sure: kill its workers, retry, and wait out a slow sync.

    A `zpool destroy` that times out on our side may still be running on the host
    (it is syncing dirty data to slow disks), so a timeout is not a failure: the pool
    is looked for again and the destroy retried until the budget is spent.
    """
    _kill_workers(host, pool)
    deadline = time.monotonic() + budget_s
    last, attempt = None, 0
    while True:
        remaining = deadline - time.monotonic()
        try:
            res = host.run(["zpool", "destroy", "-f", pool], check=False,
                           timeout=max(30.0, min(DESTROY_ATTEMPT_S, remaining)))
            if res.ok or "no such pool" in res.stderr:
                break
            last = res
        except CommandTimeout as exc:
            print(f"zbench: destroying {pool} on {host.name}: still syncing dirty data to its disks "
                  f"after {DESTROY_ATTEMPT_S:.0f} s, waiting (up to {remaining:.0f} s more)",
                  file=sys.stderr)
            last = exc
        if not _pool_exists(host, pool):
            break
        attempt += 1
        if time.monotonic() >= deadline:
            if isinstance(last, CommandTimeout):
                raise last
            raise CommandError(host.name, last.argv, last.returncode, last.stderr)
        _kill_workers(host, pool)
        time.sleep(min(1 + attempt, 10))
    host.run(["rm", "-rf", f"{REMOTE_WORK}/{pool}"], check=False, timeout=60)


def file_vdevs(host: Host, scratch_dir: str, count: int, size_bytes: int) -> list[str]:
    """Sparse files to use as vdevs on a host without spare disks."""
    if not scratch_dir.startswith("/") or scratch_dir in ("/", "/dev", "/etc", "/usr", "/boot"):
        raise ConfigError(f"scratch directory must be an absolute, dedicated path: {scratch_dir!r}")
    if count < 1 or size_bytes < 64 * 1024 ** 2:
        raise ConfigError("file vdevs: need at least 1 file of at least 64 MiB")
    host.run(["mkdir", "-p", scratch_dir])
    paths = [f"{scratch_dir.rstrip('/')}/zbench-vdev{i:02d}.img" for i in range(count)]
    existing = host.run(["ls", "-1", scratch_dir]).stdout.split()
    clash = [p for p in paths if p.rsplit("/", 1)[1] in existing]
    if clash:
        raise ConfigError(f"file vdevs already exist (in use by an earlier pool?): {clash}")
    for p in paths:
        host.run(["truncate", "-s", str(size_bytes), p])
    return paths


@dataclass
class Pool:
    """A pool made from `layout` on `devices` (ordered data, log, cache, special)."""

    host: Host
    layout: Layout
    devices: list
    name: str = field(default_factory=new_pool_name)
    properties: dict = field(default_factory=dict)       # zpool -o
    fs_properties: dict = field(default_factory=dict)    # zpool -O
    owned_devices: bool = False     # lab disks: ours, wiped before use
    allow_signatures: tuple = ()    # per-device override, real hosts only
    dry_run: bool = False
    created: bool = False
    topology: dict | None = None
    pool_properties: dict | None = None
    commands: list = field(default_factory=list)

    def argv(self) -> list[str]:
        return zpool_create_argv(self.name, list(self.devices), self.layout,
                                 self.properties or None, self.fs_properties or None)

    def validate(self) -> None:
        if not self.name.startswith(POOL_PREFIX):
            raise ConfigError(f"pool names must start with {POOL_PREFIX!r}, got {self.name!r}")
        self.layout.validate()
        self.layout.check_disks(len(self.devices))
        self.argv()

    def _run(self, argv, **kw):
        self.commands.append(list(argv))
        if self.dry_run:
            print("would run: " + " ".join(map(str, argv)), file=sys.stderr)
            return None
        return self.host.run(argv, **kw)

    def create(self) -> "Pool":
        self.validate()
        if not self.dry_run:
            require_supported(self.host)     # an OpenZFS too old is refused before anything is made
        if not self.dry_run and not self.owned_devices:
            check_devices(self.host, list(self.devices), overrides=self.allow_signatures)
        if self.owned_devices:      # lab disks only: clear labels of earlier pools
            self._run(wipe_argv(list(self.devices)), timeout=60 + 30 * len(self.devices))
        # Marked created before the command runs: if we are interrupted while `zpool
        # create` works, teardown still looks for the pool (destroy tolerates its absence).
        self.created = not self.dry_run
        if self.created:
            _LIVE.add((self.host.name, self.name))
        self._run(self.argv(), timeout=300)
        if self.created:
            self.host.run(["mkdir", "-p", f"{REMOTE_WORK}/{self.name}"])
            self.topology = readback.pool_topology(self.host, self.name)
            want = expected_topology(self.layout)
            if self.topology != want:
                raise ZbenchError(f"pool {self.name} topology {self.topology} != requested {want}")
            self.pool_properties = readback.pool_properties(self.host, self.name)
        return self

    def destroy(self) -> None:
        """Destroy the pool; signals that arrive meanwhile are delivered afterwards."""
        if self.created:
            with signals_deferred():
                _destroy(self.host, self.name)
                self.created = False
                _LIVE.discard((self.host.name, self.name))

    def __enter__(self):
        self._signals = terminate_as_exit()
        self._signals.__enter__()
        try:
            return self.create()
        except BaseException:
            self.destroy()
            self._signals.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        try:
            self.destroy()
        finally:
            self._signals.__exit__(None, None, None)

    # --- targets ---------------------------------------------------------------
    def create_target(self, target: Zvol | Dataset) -> "TargetInfo":
        argv = zfs_create_argv(self.name, target)
        self._run(argv, timeout=300)
        full = f"{self.name}/{target.name}"
        if self.dry_run:
            return TargetInfo(target, full, self._target_path(target), {}, {})
        if isinstance(target, Zvol):
            # The zvol's device node appears asynchronously (udev).
            # udev settled, then the node waited for, in one command (a settle failure is no failure)
            self.host.run(["sh", "-c", 'udevadm settle >/dev/null 2>&1; for i in $(seq 100); do [ -e "$1" ] '
                           '&& exit 0; sleep 0.1; done; exit 1', "wait-zvol", f"/dev/zvol/{full}"], timeout=120)
        props = readback.target_properties(self.host, full)
        return TargetInfo(target, full, self._target_path(target), props,
                          property_mismatches(target, props))

    def _target_path(self, target) -> str:
        full = f"{self.name}/{target.name}"
        return f"/dev/zvol/{full}" if isinstance(target, Zvol) else f"/{full}/fio.data"

    def work_dir(self) -> str:
        return f"{REMOTE_WORK}/{self.name}"

    def status(self) -> dict:
        """Capacity, fragmentation and background work (scrub/resilver/trim) right now."""
        props, scan = readback.pool_state(self.host, self.name)
        return {"capacity_pct": props.get("capacity"), "fragmentation_pct": props.get("fragmentation"),
                "allocated_bytes": props.get("allocated"), "size_bytes": props.get("size"),
                "free_bytes": props.get("free"), "scan": scan}


@dataclass
class TargetInfo:
    target: Zvol | Dataset
    full_name: str
    path: str                 # block device (zvol) or file (dataset) that fio uses
    properties: dict          # effective, read back
    mismatches: dict          # requested property -> (requested, effective)
