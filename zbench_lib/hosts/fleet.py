"""Several machines for one sweep: how to reach each (`HostEntry`), what each is (`Fingerprint`),
and the checks that make them one fleet (`check_fleet`), before anything runs on them.

A `HostEntry` is plain data (it pickles): a Dask worker on the controller opens its `Node` from it
(`open_node`) for each pool it runs. A lab is reached by its name (its state.json, as `zbench lab
up` leaves it), a box by its `ssh://` destination. "Is this a lab" stays the node's capability.

Two entries name the same machine when they share both `/etc/machine-id` and the kernel's
`boot_id`: the machine-id alone is copied with an image (every lab of one image has the same one,
and so do cloned VMs), but two names of one running machine always agree on both.

Hosts must be interchangeable: their fingerprints (CPU model and count, memory, the data disks'
models and sizes, OpenZFS, kernel, fio) must agree unless `host` is a declared factor, and a
fleet never mixes OpenZFS releases (a release is a factor of its own, never a host's accident).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, fields

from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.hosts.base import Host
from zbench_lib.hosts.lab_node import running_node
from zbench_lib.hosts.lab_state import connect_lab, read_state
from zbench_lib.hosts.node import Node
from zbench_lib.hosts.resolve import parse_host

LAB, SSH, LOCAL = "lab", "ssh", "local"
# What a lab costs the controller beyond its guest memory: QEMU's own, TCG's translation cache,
# nbdkit (measured RSS of a 2 GiB guest's QEMU under TCG: guest + ~350 MiB), rounded up.
LAB_OVERHEAD_MIB = 512
CONTROLLER_RESERVE_MIB = 2048        # the controller's Python, Dask's workers and the page cache


@dataclass(frozen=True)
class HostEntry:
    """How to reach one machine of a fleet; the name is what rows and events call it."""
    name: str
    kind: str                              # lab, ssh or local
    address: str                           # the lab's name, or the ssh:// destination, or "local"
    data_devices: tuple[str, ...] = ()     # a lab's come from its state
    extra_devices: tuple[str, ...] = ()

    @property
    def resource(self) -> str:
        """The Dask resource only this host's worker holds (one pool at a time on it)."""
        return f"host-{self.name}"


@contextlib.contextmanager
def open_node(entry: HostEntry):
    """The Node of `entry`, connected (root or passwordless sudo on a box), closed on the way out."""
    if entry.kind == LAB:
        state = read_state(entry.address)
        if state is None:
            raise ConfigError(f"host {entry.name}: no lab named {entry.address!r} is running")
        host = connect_lab(entry.address)
        node = running_node(entry.address, state, host)
    else:
        host = parse_host(entry.address)
        if hasattr(host, "use_privilege"):
            host.use_privilege()
        node = Node(host, entry.data_devices, entry.extra_devices, owned=False)
    try:
        yield Node(node.host, node.data_devices, node.extra_devices, node.owned, node.disk_model, node.control,
                   node.provenance, alias=entry.name)
    finally:
        host.close()


@dataclass(frozen=True)
class Fingerprint:
    """What a host is, as far as a measurement can tell (`read_fingerprint`)."""
    cpu_model: str
    cpus: int
    memory_gib: int                        # MemTotal rounded: firmware reserves differ by a few MiB
    kernel: str
    openzfs: str                           # the loaded module's version, e.g. 2.3.2-1~bpo12+1
    fio: str
    disks: tuple[str, ...]                 # each data disk's "<size bytes> <model>"
    disk_model: str = ""                   # a lab's modelled envelope (its throttle), else ""
    machine_id: str = ""                   # identity, not compared: see the module's text
    boot_id: str = ""

    COMPARED = ("cpu_model", "cpus", "memory_gib", "kernel", "openzfs", "fio", "disks", "disk_model")

    @property
    def release(self) -> str:
        """The OpenZFS release, major.minor ('2.3')."""
        m = re.match(r"(\d+)\.(\d+)", self.openzfs)
        return f"{m[1]}.{m[2]}" if m else self.openzfs

    @property
    def identity(self) -> tuple[str, str]:
        return self.machine_id, self.boot_id

    def differences(self, other: Fingerprint) -> list[str]:
        """'field: mine vs theirs' for each compared field that differs."""
        return [f"{f}: {getattr(self, f)} vs {getattr(other, f)}" for f in self.COMPARED
                if getattr(self, f) != getattr(other, f)]

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _first(text: str, pattern: str) -> str:
    m = re.search(pattern, text, re.M)
    return m.group(1).strip() if m else ""


def _openzfs(host: Host) -> str:
    """The OpenZFS module's version: loaded (sysfs), else installed (modinfo: a host whose module is not
    loaded yet, a lab before its first pool, must not differ from one whose is), else the userland's."""
    for argv in (["cat", "/sys/module/zfs/version"], ["modinfo", "-F", "version", "zfs"], ["zfs", "version"]):
        try:
            out = host.run(argv, check=False, timeout=60).stdout.strip()
        except CommandError:            # the command is not there (modinfo on a minimal host)
            continue
        if out:
            return out.splitlines()[0].removeprefix("zfs-")
    return ""


def read_fingerprint(host: Host, data_devices: tuple[str, ...], disk_model: str = "") -> Fingerprint:
    """A host's fingerprint, over its own commands (a few short reads, no writes)."""
    ids = host.run(["cat", "/etc/machine-id", "/proc/sys/kernel/random/boot_id"], timeout=60).stdout.split()
    cpuinfo = host.run(["grep", "-m1", "^model name", "/proc/cpuinfo"], check=False, timeout=60).stdout
    meminfo = host.run(["grep", "^MemTotal:", "/proc/meminfo"], timeout=60).stdout
    zfs = _openzfs(host)
    fio = host.run(["fio", "--version"], check=False, timeout=60).stdout.strip()
    disks = host.run(["lsblk", "-dbnpo", "SIZE,MODEL", *data_devices], timeout=60).stdout if data_devices else ""
    mem_kib = int(_first(meminfo, r"MemTotal:\s+(\d+)") or 0)
    return Fingerprint(cpu_model=_first(cpuinfo, r"model name\s*:\s*(.*)"),
                       cpus=int(host.run(["nproc"], timeout=60).stdout.strip() or 0),
                       memory_gib=round(mem_kib / 1024 ** 2),
                       kernel=host.run(["uname", "-r"], timeout=60).stdout.strip(), openzfs=zfs or "none",
                       fio=fio, disks=tuple(" ".join(line.split()) for line in disks.splitlines() if line.strip()),
                       disk_model=disk_model, machine_id=ids[0] if ids else "",
                       boot_id=ids[1] if len(ids) > 1 else "")


def check_fleet(named: list[tuple[str, Fingerprint]], *, host_factor: bool = False,
                release_factor: bool = False) -> None:
    """One ConfigError line for the first reason these hosts are not one fleet:
    one machine under two names, mixed OpenZFS releases, or fingerprints that differ
    (allowed when `host` is a declared factor)."""
    seen: dict[tuple[str, str], str] = {}
    for name, fp in named:
        if fp.machine_id and fp.identity in seen:
            raise ConfigError(f"hosts: {seen[fp.identity]} and {name} are the same machine "
                              f"(machine-id {fp.machine_id}, one boot): list it once")
        seen[fp.identity] = name
    releases = {fp.release for _, fp in named}
    if len(releases) > 1 and not release_factor:
        which = ", ".join(f"{n} {fp.openzfs}" for n, fp in named)
        raise ConfigError(f"hosts: the fleet mixes OpenZFS releases ({which}) and the release is not a factor: "
                          "its effect would be read as the layouts'")
    if host_factor:
        return
    (first, ref), *rest = named
    for name, fp in rest:
        # with the release a factor, the hosts differ by it on purpose
        diff = [d for d in ref.differences(fp) if not (release_factor and d.startswith("openzfs:"))]
        if diff:
            raise ConfigError(f"hosts: {first} and {name} differ ({'; '.join(diff)}); "
                              "use identical hosts, or declare host as a factor (host_factor: true)")


def meminfo_available_mib(text: str) -> int:
    """MemAvailable of a /proc/meminfo text, in MiB."""
    m = re.search(r"^MemAvailable:\s+(\d+)\s*kB", text, re.M)
    if m is None:
        raise ConfigError("cannot read MemAvailable from /proc/meminfo")
    return int(m.group(1)) // 1024


def check_lab_count(count: int, memory_mib: int, available_mib: int) -> None:
    """Refuse `count` labs of `memory_mib` each that the controller's free memory cannot hold."""
    need = count * (memory_mib + LAB_OVERHEAD_MIB) + CONTROLLER_RESERVE_MIB
    if need > available_mib:
        fits = max(0, (available_mib - CONTROLLER_RESERVE_MIB) // (memory_mib + LAB_OVERHEAD_MIB))
        raise ConfigError(f"lab.count: {count} labs need {need} MiB ({count} x ({memory_mib} MiB guest + "
                          f"{LAB_OVERHEAD_MIB} MiB QEMU) + {CONTROLLER_RESERVE_MIB} MiB for the controller) "
                          f"but this machine has {available_mib} MiB available: at most {fits} fit")


# A busy TCG lab keeps about a core of the controller busy emulating its guest (the demo's QEMU: 0.9-1.1 cores
# while its runs ran, 2026-12-03), and an nbdkit `mech:` model adds its own Python per I/O (0.28 cores for one
# HDD-model disk at depth 32, issue 47). Labs that together want more cores than the controller has wait for
# them, and host_contention then excludes their runs: such a fleet is refused before it boots.
TCG_LAB_CORES = 1.0
MECH_DISK_CORES = 0.3


def lab_cores(accel: str, mech_disks: int) -> float:
    """The controller cores one busy lab wants: its emulation (TCG; KVM runs the guest on the CPU itself and
    is not counted) and its `mech:` disks' nbdkit models."""
    return (TCG_LAB_CORES if accel == "tcg" else 0.0) + MECH_DISK_CORES * mech_disks


def check_lab_cores(count: int, accel: str, mech_disks: int, cpus: int) -> None:
    """Refuse a fleet of `count` labs whose emulation wants more cores than the controller's `cpus`."""
    each = lab_cores(accel, mech_disks)
    if count > 1 and count * each > cpus:
        fits = max(1, int(cpus // each)) if each else count
        mech = f" + {mech_disks} mech: disks x {MECH_DISK_CORES:g}" if mech_disks else ""
        raise ConfigError(f"lab.count: {count} {accel.upper()} labs want {count * each:.1f} cores when busy "
                          f"({count} x ({TCG_LAB_CORES:g} of emulation{mech})) but this machine has {cpus} CPUs: "
                          f"at most {fits} run without starving each other (host_contention would exclude "
                          "their runs)")
