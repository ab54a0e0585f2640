"""A fleet opened for a sweep, before its store exists: every host reached, checked, locked.

`open_fleet(spec, owner, log)` yields an `OpenFleet`: a `HostEntry` per host, the controller's
own connection to each (its `Node`), their fingerprints, and the on-host locks it holds for the
whole session (`hosts.host_lock`: a second controller, or a colleague's sweep, is refused in one
line). N labs (`lab.count`) are booted here, one after another in this thread (a lab's QEMU
dies with the thread that started it), after the controller's memory was found to hold them; or
`ZBENCH_LABS=name,name` names running labs to use instead (the tests', `zbench lab up`'s).
Boxes are checked as a single host's are (`doctor.preflight`: reachable, root, OpenZFS, fio,
their devices free), then fingerprinted and compared (`hosts.fleet.check_fleet`). Every refusal
is one ConfigError line, before anything is created: `zbench sweep` runs the same checks, and looks
at each host's lock, before it writes anything (`preflight_fleet`), then the sweep's notebook opens
the fleet, the check that holds, as it takes the locks.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.hosts.fleet import LAB, Fingerprint, HostEntry, check_fleet, check_lab_cores, check_lab_count, \
    meminfo_available_mib, open_node, read_fingerprint
from zbench_lib.hosts.kvm import planned_accel
from zbench_lib.hosts.host_lock import LockOwner, check_free, session
from zbench_lib.hosts.lab import Lab
from zbench_lib.hosts.lab_group import up_together
from zbench_lib.hosts.lab_state import read_state
from zbench_lib.hosts.node import Node
from zbench_lib.sweeps.running.doctor import preflight
from zbench_lib.sweeps.running.sweep_host import lab_config

LABS_ENV = "ZBENCH_LABS"
PROBES, PROBE_WAIT_S = 3, 5.0


@dataclass(frozen=True)
class OpenFleet:
    entries: tuple[HostEntry, ...]
    nodes: tuple[Node, ...]                 # the controller's connections, in the entries' order
    fingerprints: tuple[Fingerprint, ...]


def named_labs(spec) -> list[HostEntry] | None:
    """The running labs ZBENCH_LABS names for the spec, checked; None when it names none."""
    named = [n for n in os.environ.get(LABS_ENV, "").split(",") if n]
    if named:
        if len(named) < spec.lab_count:
            raise ConfigError(f"{LABS_ENV} names {len(named)} labs, the spec's lab.count is {spec.lab_count}")
        for name in named[:spec.lab_count]:
            state = read_state(name)
            if state is None:
                raise ConfigError(f"{LABS_ENV}: no lab named {name!r} is running")
            if len(state["data_disks"]) < spec.lab["disks"]:
                raise ConfigError(f"lab {name!r} has {len(state['data_disks'])} data disks, "
                                  f"the spec needs {spec.lab['disks']}")
        return [HostEntry(f"lab{i}", LAB, name) for i, name in enumerate(named[:spec.lab_count], 1)]
    return None


def labs_to_boot(spec, blocks: int | None) -> int:
    """The labs a fleet sweep boots: `lab.count`, or fewer when its plan has fewer blocks (pools) to give
    them (a lab with no block would only idle)."""
    return spec.lab_count if blocks is None else max(1, min(spec.lab_count, blocks))


def _labs_fit(spec, count: int) -> None:
    """The controller's memory and cores hold the `count` labs the sweep would boot (one ConfigError line)."""
    cfg = lab_config(spec)
    check_lab_count(count, cfg.memory_mib, meminfo_available_mib(Path("/proc/meminfo").read_text()))
    check_lab_cores(count, planned_accel(cfg.accel, cfg.zfs), cfg.mech_disks, os.cpu_count() or 1)


def blocks_line(spec, blocks: int | None) -> str | None:
    """What the dry run says of a plan with fewer blocks than hosts (None when every host gets one)."""
    hosts = spec.host_count
    if blocks is None or blocks >= hosts:
        return None
    who = f"{labs_to_boot(spec, blocks)} of the {hosts} labs boot" if spec.host == "lab" else \
        f"{hosts - blocks} of the {hosts} hosts would idle"
    return (f"the plan has {blocks} block{'s' * (blocks != 1)} (pools) for {hosts} hosts: {who}; "
            "give it more blocks with repetitions.pool_replicates (each replicate a pool of its own)")


def lab_entries(spec, stack: contextlib.ExitStack, log, blocks: int | None = None) -> list[HostEntry]:
    """The spec's labs: the running ones ZBENCH_LABS names, or `lab.count` booted now (no more than the
    plan's `blocks`)."""
    named = named_labs(spec)
    if named is not None:
        return named
    count = labs_to_boot(spec, blocks)
    _labs_fit(spec, count)
    if count < spec.lab_count:
        log(blocks_line(spec, blocks))
    labs = []
    for i in range(1, count + 1):
        cfg = lab_config(spec)
        cfg.name = f"{cfg.name[:28]}-h{i}"
        labs.append(Lab(cfg))
    log(f"starting {len(labs)} labs together ({', '.join(lab.cfg.name for lab in labs)})")
    for lab in up_together(labs):
        stack.callback(lab.down)           # the last one first, as each puts back the handlers it found
        log(f"lab {lab.cfg.name}: {lab.start_kind} in {lab.boot_s:.1f} s"
            + (f" ({lab.start_note})" if lab.start_note else ""))
    return [HostEntry(f"lab{i}", LAB, lab.cfg.name) for i, lab in enumerate(labs, 1)]


def _probe(spec, e: HostEntry, stack: contextlib.ExitStack) -> tuple[Node, Fingerprint]:
    """`e`'s node, opened on `stack`, checked and fingerprinted; one ConfigError line when it cannot be.
    ssh's own failure (exit 255: a connection refused or timed out) is tried PROBES times, PROBE_WAIT_S
    apart: a busy machine's sshd (a lab's, under a loaded controller) can miss one banner exchange."""
    for attempt in range(1, PROBES + 1):
        try:
            node = stack.enter_context(open_node(e))
            if e.kind != LAB:
                preflight(node.host, list(e.data_devices + e.extra_devices), tuple(spec.allow_signatures or ()))
            return node, read_fingerprint(node.host, node.data_devices, node.disk_model.name if node.disk_model else "")
        except ConfigError as exc:
            raise ConfigError(f"host {e.name}: {exc}") from None
        except CommandError as exc:
            if exc.returncode != 255 or attempt == PROBES:
                raise ConfigError(f"host {e.name} ({e.address}) is unreachable: "
                                  f"{' '.join(str(exc).split())[:300]}") from None
            time.sleep(PROBE_WAIT_S)
        except ZbenchError as exc:
            raise ConfigError(f"host {e.name} ({e.address}) is unreachable: "
                              f"{' '.join(str(exc).split())[:300]}") from None
    raise AssertionError("unreachable")


def label(entry: HostEntry, node: Node) -> str:
    """What a message calls a fleet's host: its name in the fleet, and the host's own ("lab1 (lab:x)")."""
    return entry.name if entry.name == node.host.name else f"{entry.name} ({node.host.name})"


def _probe_fleet(spec, entries: list[HostEntry], stack: contextlib.ExitStack) -> tuple[list, list]:
    """(nodes, fingerprints) of `entries`, opened on `stack`, each checked, and together one fleet."""
    nodes, prints = [], []
    for e in entries:
        node, fp = _probe(spec, e, stack)
        nodes.append(node)
        prints.append(fp)
    check_fleet(list(zip([e.name for e in entries], prints)), host_factor=spec.host_factor)
    return nodes, prints


def preflight_fleet(spec, blocks: int | None = None) -> list[str]:
    """`zbench sweep`'s checks of a fleet, before anything is created: each host reached and checked,
    their fingerprints one fleet, each host's lock free (one ConfigError or HostBusy line otherwise);
    what it found, a line a host. Labs the sweep will boot are not there yet: their memory is checked.
    `open_fleet` checks again as it takes the locks: that is the check that holds."""
    entries = list(spec.hosts) if spec.host != "lab" else named_labs(spec)
    note = [line] if (line := blocks_line(spec, blocks)) else []
    if entries is None:
        count = labs_to_boot(spec, blocks)
        _labs_fit(spec, count)
        return note + [f"{count} labs to boot: this machine's memory and cores hold them"]
    with contextlib.ExitStack() as stack:
        nodes, prints = _probe_fleet(spec, entries, stack)
        for e, node in zip(entries, nodes):
            check_free(node.host, label(e, node))
        return note + [f"host {label(e, node)}: reachable, checked, not locked; {fp.cpus} CPUs, {fp.memory_gib} GiB, "
                f"OpenZFS {fp.openzfs}" for e, node, fp in zip(entries, nodes, prints)]


@contextlib.contextmanager
def open_fleet(spec, owner: LockOwner, log=print, blocks: int | None = None):
    """The spec's hosts, opened, checked and locked for this session (see the module's text); from
    the lock on, the controller's commands on a host pass its gate (`hosts.host_lock`)."""
    with contextlib.ExitStack() as stack:
        if spec.host == "lab":
            entries = lab_entries(spec, stack, log, blocks)
        else:
            entries = list(spec.hosts)
        nodes, prints = _probe_fleet(spec, entries, stack)
        for e, node in zip(entries, nodes):
            stack.enter_context(session(node.host, owner, label(e, node)))
        yield OpenFleet(tuple(entries), tuple(nodes), tuple(prints))
