"""A zvol served over iSCSI to several clients: LIO (targetcli) on the storage node, open-iscsi on each client.

A VM store on zvols (seed 001) is reached by hypervisors over iSCSI. `IscsiDatastore` exports
one zvol of a zbench pool as LUN 0 of a target of its own (an IQN derived from the zvol's
name) and logs each client in to it, through the address and port the clients reach the
storage node at (hosts.lab_clients: a forward of port 3260). One LUN shared by every client,
as a VMFS datastore is: each client's fio works in a region of its own (`region`), so no two
clients write the same blocks.

LIO keeps no state on disk here: targetcli's autosave is turned off for each command, so a
target never outlives a reboot of the storage node, and the target is deleted on the way out.
Authentication is off and the target serves any initiator (a lab's private path); each client
logs in with an initiator name of its own (`initiator_iqn`). On the way out, also on an error,
Ctrl-C or SIGTERM: every client is logged out and its node record deleted (each tried whatever
the one before did), then the target and the backstore go; a client logged in to a target that
is gone would retry for minutes.

A sweep reaches it through the iscsi-clients surface (sweeps/running/client_surface.py).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred
from zbench_lib.hosts.base import Host
from zbench_lib.zfs.safety import POOL_PREFIX

IQN_PREFIX = "iqn.2026-11.org.zbench"
ISCSI_PORT = 3260
_ZVOL_RE = re.compile(rf"^/dev/zvol/({re.escape(POOL_PREFIX)}[A-Za-z0-9_.:-]+)/([A-Za-z0-9_.:-]+)$")
_LABEL_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
LOGIN_TIMEOUT_S = 120


def target_iqn(zvol_device: str) -> str:
    """The target's IQN for a zbench zvol (ConfigError for anything else: only those are served)."""
    m = _ZVOL_RE.match(zvol_device or "")
    if not m:
        raise ConfigError(f"iscsi: {zvol_device!r} is not a zvol of a zbench pool "
                          f"(/dev/zvol/{POOL_PREFIX}<pool>/<name>); only those are served")
    return f"{IQN_PREFIX}:{m.group(1)}.{m.group(2)}".lower().replace("_", "-")


def initiator_iqn(label: str) -> str:
    if not _LABEL_RE.match(label):
        raise ConfigError(f"iscsi: a client label is lower-case letters, digits and -, got {label!r}")
    return f"{IQN_PREFIX}:client.{label}"


def backstore_name(iqn: str) -> str:
    return "zb-" + re.sub(r"[^A-Za-z0-9_-]", "-", iqn.rsplit(":", 1)[1])[:60]


def server_argvs(zvol_device: str) -> list[list[str]]:
    """The storage node's commands that serve `zvol_device` as LUN 0 of its own target."""
    iqn, bs = target_iqn(zvol_device), backstore_name(target_iqn(zvol_device))
    tpg = f"/iscsi/{iqn}/tpg1"
    return [["targetcli", "set", "global", "auto_save_on_exit=false"],
            ["targetcli", "/backstores/block", "create", f"name={bs}", f"dev={zvol_device}"],
            ["targetcli", "/iscsi", "create", iqn],
            ["targetcli", f"{tpg}/luns", "create", f"/backstores/block/{bs}"],
            # any initiator, no CHAP, writable: a lab's private path (the module's docstring)
            ["targetcli", tpg, "set", "attribute", "authentication=0", "generate_node_acls=1",
             "demo_mode_write_protect=0", "cache_dynamic_acls=1"]]


def server_teardown_argvs(zvol_device: str) -> list[list[str]]:
    iqn = target_iqn(zvol_device)
    return [["targetcli", "/iscsi", "delete", iqn],
            ["targetcli", "/backstores/block", "delete", backstore_name(iqn)]]


def portal(address: str, port: int) -> str:
    return f"{address}:{port}"


def client_login_argvs(iqn: str, address: str, port: int) -> list[list[str]]:
    """A client's node record made by hand (discovery would answer with the storage node's own
    address, which a client behind a forward cannot reach), then its login."""
    p = portal(address, port)
    return [["iscsiadm", "-m", "node", "-o", "new", "-T", iqn, "-p", p],
            ["iscsiadm", "-m", "node", "-T", iqn, "-p", p, "--login"]]


def client_logout_argvs(iqn: str, address: str, port: int) -> list[list[str]]:
    p = portal(address, port)
    return [["iscsiadm", "-m", "node", "-T", iqn, "-p", p, "--logout"],
            ["iscsiadm", "-m", "node", "-o", "delete", "-T", iqn, "-p", p]]


def lun_path(iqn: str, address: str, port: int, lun: int = 0) -> str:
    """Where udev puts a logged-in LUN on the client."""
    return f"/dev/disk/by-path/ip-{portal(address, port)}-iscsi-{iqn}-lun-{lun}"


def region(index: int, clients: int, size_bytes: int, align: int = 1024 ** 2) -> tuple[int, int]:
    """(offset, size) of client `index`'s share of a shared LUN of `size_bytes`, aligned."""
    if not 0 <= index < clients:
        raise ConfigError(f"iscsi: client {index} of {clients}")
    share = size_bytes // clients // align * align
    if share <= 0:
        raise ConfigError(f"iscsi: a LUN of {size_bytes} bytes cannot be shared by {clients} clients")
    return index * share, share


@dataclass
class _Login:
    host: Host
    label: str
    logged_in: bool = False


class IscsiDatastore:
    """`zvol_device` on `server` as one shared LUN, logged in on each of `clients` ({label: host})."""

    def __init__(self, server: Host, zvol_device: str, clients: dict[str, Host], *, reach: tuple[str, int]):
        if not clients:
            raise ConfigError("iscsi: at least one client is needed")
        self.iqn = target_iqn(zvol_device)
        for label in clients:
            initiator_iqn(label)
        self.server, self.zvol, self.reach = server, zvol_device, reach
        self.logins = {label: _Login(host, label) for label, host in clients.items()}
        self.served = False

    def device(self) -> str:
        return lun_path(self.iqn, *self.reach)

    def __enter__(self) -> "IscsiDatastore":
        try:
            self.served = True              # marked first: an interrupted create is still undone
            for argv in server_argvs(self.zvol):
                self.server.run(argv, timeout=120)
            for login in self.logins.values():
                self._login(login)
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc) -> bool:
        self.teardown()
        return False

    def readback(self) -> dict:
        """What the target serves and what each client sees of it: the LUN's size and write cache as
        the client's kernel has them ('write back': a write the client neither flushes nor marks FUA
        reaches the zvol as an asynchronous write) and LIO's own emulate_write_cache attribute."""
        cache = self.server.run(["targetcli", f"/backstores/block/{backstore_name(self.iqn)}", "get", "attribute",
                                 "emulate_write_cache"], timeout=60).stdout.strip()
        seen = {label: self._client_view(login) for label, login in self.logins.items()}
        return {"iqn": self.iqn, "portal": portal(*self.reach), "zvol": self.zvol, "lio_write_cache": cache,
                "lun_bytes": {k: v[0] for k, v in seen.items()},
                "client_write_cache": {k: v[1] for k, v in seen.items()}}

    def _client_view(self, login: _Login) -> tuple[int, str]:
        disk = posixpath.basename(login.host.run(["readlink", "-f", self.device()], timeout=30).stdout.strip())
        size = int(login.host.run(["blockdev", "--getsize64", self.device()], timeout=60).stdout)
        return size, login.host.run(["cat", f"/sys/block/{disk}/queue/write_cache"], timeout=30).stdout.strip()

    def _login(self, login: _Login) -> None:
        name = initiator_iqn(login.label)
        login.host.run(["sh", "-c", 'printf "InitiatorName=%s\\n" "$1" > /etc/iscsi/initiatorname.iscsi',
                        "initiator", name], timeout=30)
        login.host.run(["systemctl", "restart", "iscsid"], timeout=120)
        login.logged_in = True
        for argv in client_login_argvs(self.iqn, *self.reach):
            login.host.run(argv, timeout=LOGIN_TIMEOUT_S)
        login.host.run(["udevadm", "settle"], timeout=60)
        if not login.host.run(["test", "-b", self.device()], check=False).ok:
            raise ZbenchError(f"iscsi: {login.label} ({login.host.name}) logged in but has no {self.device()}")

    def teardown(self) -> None:
        with signals_deferred():
            errors = []
            for login in self.logins.values():
                if login.logged_in:
                    for argv in client_logout_argvs(self.iqn, *self.reach):
                        res = login.host.run(argv, check=False, timeout=LOGIN_TIMEOUT_S)
                        if not res.ok and "no matching" not in (res.stderr + res.stdout).lower():
                            errors.append(f"{login.label}: {' '.join(argv[:6])}: {res.stderr.strip()[:200]}")
                    login.logged_in = False
            if self.served:
                for argv in server_teardown_argvs(self.zvol):
                    res = self.server.run(argv, check=False, timeout=120)
                    if not res.ok and "no such" not in (res.stderr + res.stdout).lower():
                        errors.append(f"{self.server.name}: {' '.join(argv)}: {res.stderr.strip()[:200]}")
                self.served = False
            if errors:
                raise ZbenchError("iscsi teardown: " + "; ".join(errors))
