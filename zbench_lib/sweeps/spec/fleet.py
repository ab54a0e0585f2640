"""The hosts of a spec: one host as before (`host:`), or a fleet, checked at load.

A fleet is either a `hosts:` list of boxes, each with its own disks,

    hosts:
      - {host: ssh://root@bench1, devices: [/dev/sdb, /dev/sdc]}
      - {host: ssh://root@bench2, name: b2, devices: [/dev/sdb, /dev/sdc], extra_devices: [/dev/nvme0n1]}

or N labs on the controller, `host: lab` with `lab: {count: N, ...}`. A one-item list or
`count: 1` is one host, run exactly as `host:` is. `host_factor: true` declares that the
hosts may differ (their fingerprints are then compared for the record, not refused).

What the text alone can tell is refused here, before anything exists: a box listed twice (the
same destination, whatever the user), two boxes with one name, a device listed twice on one box,
boxes offering different numbers of disks (any block may land on any box), a lab count out of
range. What needs the machines (unreachable, one machine under two names, fingerprints that
differ, mixed OpenZFS releases, the labs' memory) is checked by `running.fleet_open` before
the store is created.
"""

from __future__ import annotations

import re

from zbench_lib.hosts.fleet import SSH, HostEntry
from zbench_lib.sweeps.spec.host import _device_list, parse_host, ssh_destination
from zbench_lib.sweeps.spec.values import fail, integer, mapping, name as plain_name

MAX_HOSTS = 64
MAX_LABS = 16
ENTRY_KEYS = ("host", "name", "devices", "extra_devices")


def parse_hosts(d: dict) -> tuple:
    """(host, lab, devices, extra_devices, allow_signatures, hosts, lab_count, host_factor) of a spec
    mapping: the first five as `spec.host.parse_host` gives them for one host (a fleet of boxes:
    its first box's, which the plan is sized on), `hosts` the boxes of a `hosts:` list."""
    host_factor = d.get("host_factor", False)
    if not isinstance(host_factor, bool):
        fail("host_factor", f"expected true or false, got {host_factor!r}")
    if "hosts" in d:
        return (*_boxes(d), 1, host_factor)
    if "host" not in d:
        fail("spec", "missing required key 'host'")
    lab_count = 1
    if d["host"] == "lab" and isinstance(d.get("lab"), dict) and "count" in d["lab"]:
        lab_count = integer(d["lab"]["count"], "lab.count", 1, MAX_LABS)
        d = {**d, "lab": {k: v for k, v in d["lab"].items() if k != "count"}}
    if host_factor and lab_count == 1:
        fail("host_factor", "applies to a fleet (a hosts: list, or lab.count above 1)")
    return (*parse_host(d), (), lab_count, host_factor)


def _machine(destination: str) -> tuple[str, str]:
    """The machine an ssh:// destination names, as text can tell: host and port, not the user."""
    m = re.fullmatch(r"ssh://(?:[^@]+@)?([^:]+)(?::(\d+))?", destination)
    return m[1].lower(), m[2] or "22"


def _boxes(d: dict) -> tuple:
    for k in ("host", "lab", "devices", "extra_devices", "allow_signatures"):
        if k in d:
            fail(k, "give each box's host and devices in its hosts: item, not beside the list")
    items = d["hosts"]
    if not isinstance(items, list) or not items:
        fail("hosts", f"expected a non-empty list of hosts, got {items!r}")
    if len(items) > MAX_HOSTS:
        fail("hosts", f"at most {MAX_HOSTS} hosts, got {len(items)}")
    entries, parsed, machines, names = [], [], {}, {}
    for i, item in enumerate(items):
        p = f"hosts[{i}]"
        mapping(item, p, ENTRY_KEYS, ("host", "devices"))
        host = item["host"]
        if not isinstance(host, str) or not host.startswith("ssh://"):
            fail(f"{p}.host", f"a fleet's hosts are ssh://[user@]host[:port] boxes, got {host!r} "
                              "(several labs: host: lab with lab.count)")
        ssh_destination(host)
        machine = _machine(host)
        if machine in machines:
            fail(f"{p}.host", f"{host} is listed twice (hosts[{machines[machine]}] is the same machine)")
        machines[machine] = i
        name = plain_name(item.get("name", machine[0].split(".")[0]), f"{p}.name")
        if name in names:
            fail(f"{p}.name", f"two hosts are named {name!r} (hosts[{names[name]}] and {p}): name them apart")
        names[name] = i
        lists = [_device_list(item, k) for k in ("devices", "extra_devices")] + [()]
        _one_box(p, name, *lists[:2])
        parsed.append(lists)
        entries.append(HostEntry(name, SSH, host, lists[0], lists[1]))
    first = entries[0]
    for i, e in enumerate(entries[1:], 1):
        if (len(e.data_devices), len(e.extra_devices)) != (len(first.data_devices), len(first.extra_devices)):
            fail(f"hosts[{i}].devices", f"{e.name} offers {len(e.data_devices)} data and {len(e.extra_devices)} "
                                        f"extra devices, {first.name} {len(first.data_devices)} and "
                                        f"{len(first.extra_devices)}: a fleet's boxes offer the same disks")
    return (first.address, None, *parsed[0], tuple(entries))


def _one_box(p: str, name: str, devices: tuple, extra: tuple) -> None:
    both = devices + extra
    twice = sorted({dev for dev in both if both.count(dev) > 1})
    if twice:
        fail(f"{p}.devices", f"{', '.join(twice)} listed more than once on {name} (devices and extra_devices "
                             "together): the device lists of one box overlap")


def check_fleet_spec(spec) -> None:
    """What a fleet cannot run yet, refused in one line at load (after the rest of the spec is read)."""
    if spec.host_count < 2:
        return
    if spec.faults:
        fail("faults", "a fault study runs on one host (its resilver files are not yet copied back "
                       "from a fleet's workers)")
    if "zfs" in spec.factors:
        fail("factors.zfs", "a fleet of labs with the OpenZFS release as a factor is not supported: "
                            "use lab.count 1 (one lab per release, in turn)")
