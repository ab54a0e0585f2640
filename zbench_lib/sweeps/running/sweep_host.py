"""The host a sweep runs on: the spec's real host, a running lab, or a lab it boots
(one per OpenZFS release when the release is a factor).

`open_host(spec, zfs)` yields the `hosts.node.Node` (host, disks, device control);
`open_session` yields it for a sweep's session, the host's lock held (`hosts.host_lock.session`,
as a fleet holds each of its hosts'); `with_clients` boots a sweep's client labs beside its lab
(issue 30), one after another, and takes them down at the end, also on Ctrl-C or SIGTERM;
`check_labs_free` refuses, before anything is created, a running lab another sweep holds;
`check_release` refuses a lab whose OpenZFS is not the release its pools are labelled with.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.events import Event
from zbench_lib.hosts.host_lock import LockOwner, check_free, session
from zbench_lib.hosts.lab import Lab, LabConfig
from zbench_lib.hosts.lab_node import booted_node, running_node
from zbench_lib.hosts.lab_state import connect_lab, read_state
from zbench_lib.hosts.fleet import CONTROLLER_RESERVE_MIB, LAB_OVERHEAD_MIB, meminfo_available_mib
from zbench_lib.hosts.lab_clients import CLIENT_SHAPE, client_labs
from zbench_lib.hosts.node import ClientNode, ClientNodes, Node
from zbench_lib.hosts.resolve import parse_host
from zbench_lib.sweeps.planning.plan import Plan
from zbench_lib.sweeps.running.pool_request import pool_requests
from zbench_lib.sweeps.spec.pool import nbd_disks
from zbench_lib.sweeps.spec.sweep_spec import SweepSpec
from zbench_lib.zfs.version import openzfs_version


def lab_config(spec: SweepSpec, zfs: str | None = None) -> LabConfig:
    """The lab a spec asks for: every `lab:` key of the spec reaches the VM. With the OpenZFS
    release as a factor, `zfs` names the release of this lab (and its name says it)."""
    lab = spec.lab or {}
    name = f"sweep-{spec.name}"[:32] if zfs is None else f"sweep-{spec.name}"[:26] + f"-zfs{zfs.replace('.', '')}"
    nbd_data, nbd_extra = nbd_disks(spec.factors)      # a mech: level: those disks through nbdkit from boot
    return LabConfig(disks=lab["disks"], disk_bytes=lab["disk_bytes"], model=lab["model"],
                     extra_disks=lab["extra_disks"], zfs=zfs or lab.get("zfs", "2.3"),
                     nbd_data=nbd_data, nbd_extra=nbd_extra,
                     name=name)   # one lab per spec (and release): two sweeps can run at once


def check_served(spec: SweepSpec, name: str, state: dict) -> None:
    """A running lab serves through nbdkit the disks the spec's mech: levels need (the lab a sweep boots
    does: `lab_config`); one that does not is refused in one line before anything of the sweep runs."""
    cfg = state["config"]
    booted = {"data": cfg.get("nbd_data") or bool(cfg["model"].get("mech")),
              "extra": cfg.get("nbd_extra") or bool(cfg.get("extra_model", {}).get("mech"))}
    for role, needed in zip(("data", "extra"), nbd_disks(spec.factors)):
        if needed and not booted[role]:
            raise ConfigError(f"lab {name!r} serves its {role} disks as files QEMU opens, but a model factor "
                              f"of this spec has a mech: level, which only nbdkit serves: boot it with "
                              f"nbd_{role}=True (or run the sweep without ZBENCH_LAB: it boots its own)")


def _running_lab(zfs: str | None) -> dict | None:
    """The lab ZBENCH_LAB names, if it runs the release asked for (any, without a zfs factor)."""
    name = os.environ.get("ZBENCH_LAB")
    if not name:
        return None
    state = read_state(name)
    if state is None:
        raise ConfigError(f"ZBENCH_LAB={name!r} but no lab of that name is running")
    return state if zfs is None or state["config"].get("zfs", "2.3") == zfs else None


@contextlib.contextmanager
def open_host(spec: SweepSpec, zfs: str | None = None):
    """The Node of the spec's host; with an OpenZFS release factor, of a lab of release `zfs`."""
    state = _running_lab(zfs) if spec.host == "lab" else None
    if state is not None:
        # Reuse a running lab (`zbench lab up`, or the test session's) instead of booting one.
        name = os.environ["ZBENCH_LAB"]
        need = int((spec.lab or {}).get("disks", 1))
        if len(state["data_disks"]) < need:
            raise ConfigError(f"lab {name!r} has {len(state['data_disks'])} data disks, spec needs {need}")
        check_served(spec, name, state)
        host = connect_lab(name)
        try:
            yield running_node(name, state, host)
        finally:
            host.close()
    elif spec.host == "lab":
        cfg = lab_config(spec, zfs)
        with Lab(cfg) as lab:
            yield booted_node(lab)
    else:
        host = parse_host(spec.host)
        try:
            if hasattr(host, "use_privilege"):
                host.use_privilege()        # root, or every command through passwordless sudo
            yield Node(host, tuple(spec.devices), tuple(spec.extra_devices or ()), owned=False)
        finally:
            host.close()


def releases(plan: Plan) -> set[str | None]:
    """The OpenZFS releases of the plan's pools: {None} unless the release is a factor (a lab each)."""
    return {r.zfs for r in pool_requests(plan)} or {None}


@contextlib.contextmanager
def open_session(spec: SweepSpec, zfs: str | None, owner: LockOwner, given: Node | None = None):
    """The Node of `open_host(spec, zfs)`, or `given` (already open: the test session's lab, a what-if's),
    for `owner`'s session: its host's lock held and every command through the lock's gate until the
    session ends (`host_lock.session`, as each host of a fleet); HostBusy, naming the holder, when
    another sweep holds it. Nothing of the sweep runs on the host before the lock is held."""
    opened = contextlib.nullcontext(given) if given is not None else open_host(spec, zfs)
    with opened as node, session(node.host, owner):
        yield node


def check_labs_free(spec: SweepSpec, plan: Plan) -> None:
    """HostBusy, one line naming the holder, when a running lab this sweep would use is held by another
    sweep: the one ZBENCH_LAB names, or one of the name it would boot (another controller of the same
    spec booted it). A lab it boots itself is nobody else's. `zbench sweep` looks before it creates anything."""
    for zfs in sorted(releases(plan), key=str):
        name = os.environ["ZBENCH_LAB"] if _running_lab(zfs) is not None else lab_config(spec, zfs).name
        if read_state(name) is None:
            continue
        host = connect_lab(name)
        try:
            check_free(host)
        finally:
            host.close()


def check_release(store, host, release: str) -> None:
    """The lab of release `release` runs that release (a mislabelled result is worse than none)."""
    v = openzfs_version(host)
    store.record(Event.OPENZFS_RELEASE, release=release, version=str(v), host=host.name)
    if f"{v.major}.{v.minor}" != release:
        raise ZbenchError(f"{host.name} runs OpenZFS {v}, but its pools are labelled zfs={release}")


def check_client_memory(count: int, available_mib: int) -> None:
    """Refuse `count` client labs that the controller's free memory (beside its running labs) cannot hold."""
    each = CLIENT_SHAPE["memory_mib"] + LAB_OVERHEAD_MIB
    need = count * each + CONTROLLER_RESERVE_MIB
    if need > available_mib:
        fits = max(0, (available_mib - CONTROLLER_RESERVE_MIB) // each)
        raise ConfigError(f"clients: {count} client labs need {need} MiB ({count} x {each} MiB + "
                          f"{CONTROLLER_RESERVE_MIB} MiB for the controller) but this machine has {available_mib} "
                          f"MiB available beside its labs: at most {fits} fit")


def _storage_lab(node: Node) -> tuple[Path, LabConfig]:
    """The node's lab directory and the config its clients are derived from (its name and OpenZFS image)."""
    lab_dir = getattr(node.control, "lab_dir", None)
    state = read_state(Path(lab_dir).name) if lab_dir is not None else None
    if state is None:
        raise ConfigError(f"clients run beside a lab; {node.name} is not a running lab")
    return Path(lab_dir), LabConfig(name=Path(lab_dir).name, zfs=state["config"].get("zfs", "2.3"))


@contextlib.contextmanager
def with_clients(spec: SweepSpec, node: Node):
    """`node` with the sweep's client labs (`spec.clients` of them) booted beside it, or `node` itself
    when the spec has none. Booted one after another in this (main) thread: a lab installs its signal
    handlers as it boots; taken down when the block ends, also on an error or a signal."""
    if not spec.clients:
        yield node
        return
    lab_dir, storage = _storage_lab(node)
    with open("/proc/meminfo") as f:
        check_client_memory(spec.clients, meminfo_available_mib(f.read()))
    with client_labs(storage, spec.clients) as labs:
        nodes = tuple(ClientNode(f"c{i}", lab.host, Path(lab.dir)) for i, lab in enumerate(labs, 1))
        yield dataclasses.replace(node, clients=ClientNodes(lab_dir, nodes))
