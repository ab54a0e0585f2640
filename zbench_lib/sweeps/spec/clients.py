"""Several clients on one datastore (issue 30): `clients` in a spec, checked at load.

`clients` is a factor (``clients: [1, 2, 4]``) or a target key (``clients: 2``) of a dataset
sweep whose every cell is reached over NFS (``access: nfs``), each client mounting the dataset and
writing a file of its own, or of a zvol sweep served over iSCSI (``access: iscsi``), each client
logged in to the one LUN and writing a region of its own. Each run's load comes from that many
client VMs beside the storage lab (``hosts.lab_clients``) through fio's client/server mode; the
storage lab keeps its observers. The sweep boots as many client labs as the largest level, once,
and a run uses the first k.

What cannot be run yet is refused here in one line, before anything exists: clients on another
surface or on a local dataset, on a real host (only lab clients exist so far), with a fleet, a
fault study, the OpenZFS release as a factor, an offered load, a declared L2ARC warm-up, a
workload run until steady, or a percentage fill (each client's file is written whole; a filler
sized against the pool's free space would be topped up once per client).
"""

from __future__ import annotations

from zbench_lib.sweeps.spec.values import fail

MAX_CLIENTS = 8         # client labs of 1 GiB each on the controller, beside the storage lab; TCG per client
_NOT_WITH = (("faults", "a fault study"), ("warmup", "a declared L2ARC warm-up"))
_NOT_FACTORS = (("zfs", "the OpenZFS release as a factor (one lab per release)"),
                ("load", "an offered load (open loop)"), ("fill", "a fill factor"))


def client_levels(factors: dict, target: dict) -> list[int]:
    """The client counts a spec's cells run with: the factor's levels, the target's one, or [] (no clients)."""
    if "clients" in factors:
        return list(factors["clients"])
    return [target["clients"]] if "clients" in target else []


def _check_host(d: dict, where: str) -> None:
    if d.get("host") != "lab" or d.get("hosts"):
        fail(where, "only lab clients are supported yet (client VMs beside the lab): use host: lab")
    if isinstance(d.get("lab"), dict) and d["lab"].get("count", 1) != 1:
        fail(where, "clients run beside one lab, not a fleet (lab.count above 1)")


# how clients reach each surface's datastore
ACCESS = {"dataset": "nfs", "zvol": "iscsi"}


def _check_access(surface: str, factors: dict, target: dict, clients: bool) -> None:
    """iSCSI serves a zvol to clients, NFS a dataset; a zvol has no other access."""
    levels = factors.get("access", [target["access"]] if "access" in target else [])
    where = "factors.access" if "access" in factors else "target.access"
    if surface == "dataset" and "iscsi" in levels:
        fail(where, "iscsi serves a zvol to clients: use surface: zvol with target.access: iscsi")
    if surface == "zvol" and levels and (levels != ["iscsi"] or not clients):
        fail(where, "a zvol's access is iscsi, with clients (client VMs logged in to it); "
                    "without access fio runs on the zvol itself")


def check_clients(d: dict, surface: str, factors: dict, target: dict, prefill: dict, workloads) -> None:
    """Refuse, in one line, what a spec with clients cannot run yet (see the module's text). `d` is the
    spec's mapping (its host, lab and the keys clients do not combine with yet)."""
    levels = client_levels(factors, target)
    _check_access(surface, factors, target, bool(levels))
    if not levels:
        return
    where = "factors.clients" if "clients" in factors else "target.clients"
    if "clients" in factors and "clients" in target:
        fail("target.clients", "is also a factor; a setting is either fixed (target) or varied (factors)")
    access = ACCESS.get(surface)
    if target.get("access") != access or factors.get("access", [access]) != [access]:
        fail(where, "clients reach a dataset over NFS (target.access: nfs) or a zvol over iSCSI "
                    "(surface: zvol, target.access: iscsi), every cell the same way")
    if "fs" in factors:
        fail(where, "clients log in to the zvol itself, not to a filesystem made on it (fs)")
    _check_host(d, where)
    for key, what in _NOT_WITH:
        if d.get(key):
            fail(where, f"clients are not supported with {what} yet")
    for key, what in _NOT_FACTORS:
        if key in factors:
            fail(where, f"clients are not supported with {what} yet")
    if prefill["fill"] != "whole" and prefill["policy"] != "none":
        fail("prefill.fill", "with clients each client's file is written whole: use fill: whole")
    # a workload run until steady extends a run window by window; a clients run is one window
    for w in workloads:
        if w.until_steady is not None:
            fail(where, f"clients are not supported with until_steady ({w.name}) yet")
