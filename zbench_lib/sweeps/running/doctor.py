"""`zbench doctor HOST`: can this host run a sweep, and would its numbers be trusted?

Connects and reports, one line per fact, without writing anything: OpenZFS and fio
versions (with the oldest supported release), root or passwordless sudo, each listed
device's safety verdict, space for file vdevs, zbench pools left from earlier sweeps,
and whether the host is idle enough to measure. A failed check says why; a check
that could not be made says "not checked" and why, never "ok".
"""

from __future__ import annotations

from typing import NamedTuple

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.base import Host
from zbench_lib.hosts.host_lock import LOCK_PATH, check_free
from zbench_lib.zfs.pools import REMOTE_WORK, find_leftovers
from zbench_lib.zfs.safety import device_checks
from zbench_lib.zfs.version import OLDEST_SUPPORTED, openzfs_version

# What a sweep cannot start without; scratch space, leftovers and load are said, not enforced.
BLOCKING = ("connect", "privilege", "openzfs", "fio", "devices", "device")
IDLE_LOAD_PER_CORE = 0.25       # 1-minute load per core above this: someone else is working
MIN_SCRATCH_BYTES = 2 * 1024 ** 3


class Finding(NamedTuple):
    check: str
    ok: bool | None          # None: not checked (the reason is in detail)
    detail: str

    def line(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}[self.ok]
        return f"{mark} {self.check:<10} {self.detail}"


def _try(check: str, func) -> Finding:
    try:
        return func()
    except ZbenchError as exc:
        return Finding(check, None, f"not checked: {str(exc).splitlines()[0][:160]}")


def _privilege(host: Host) -> Finding:
    uid = host.run(["id", "-u"], timeout=30).stdout.strip()
    if uid == "0":
        return Finding("privilege", True, "root")
    res = host.run(["sudo", "-n", "true"], check=False, timeout=30)
    if res.ok:
        if hasattr(host, "sudo"):
            host.sudo = True            # checked just now: the checks after this one run as root, as the sweep will
        return Finding("privilege", True, f"uid {uid}, passwordless sudo (commands run through sudo -n)")
    return Finding("privilege", False, f"uid {uid} and sudo would prompt: zpool/zfs need root "
                                       "(configure NOPASSWD for them, or connect as root)")


def _openzfs(host: Host) -> Finding:
    v = openzfs_version(host)
    oldest = f"{OLDEST_SUPPORTED[0]}.{OLDEST_SUPPORTED[1]}"
    ok = (v.major, v.minor) >= OLDEST_SUPPORTED
    how = "JSON output" if v.has_json else "text outputs (no -j before 2.3)"
    return Finding("openzfs", ok, f"{v} ({v.kmod or v.userland}); read through {how}; oldest supported {oldest}")


def _fio(host: Host) -> Finding:
    res = host.run(["fio", "--version"], check=False, timeout=30)
    if not res.ok:
        return Finding("fio", False, "fio not found: install it (apt-get install fio)")
    return Finding("fio", True, res.stdout.strip())


def _devices(host: Host, devices: list[str], overrides=()) -> list[Finding]:
    if not devices:
        return [Finding("devices", None, "not checked: no devices listed (give --device, by id)")]
    out = []
    for chk in device_checks(host, devices):
        refused = chk.refused(overrides)
        out.append(Finding("device", not refused,
                           f"{chk.device}: " + ("; ".join(refused) if refused else f"free ({chk.resolved})")))
    return out


def _scratch(host: Host) -> Finding:
    res = host.run(["df", "-B1", "--output=avail", "/var/tmp"], check=False, timeout=30)
    lines = res.stdout.split()
    if not res.ok or len(lines) < 2 or not lines[-1].isdigit():
        return Finding("scratch", None, f"not checked: df failed ({res.stderr.strip()[:100]})")
    free = int(lines[-1])
    return Finding("scratch", free >= MIN_SCRATCH_BYTES,
                   f"{free / 1024 ** 3:.1f} GiB free in /var/tmp (job files, logs; {REMOTE_WORK})")


def _leftovers(host: Host) -> Finding:
    pools = find_leftovers(host)
    if pools:
        return Finding("leftovers", False, f"zbench pools from earlier sweeps: {', '.join(pools)} "
                                           "(`zbench pools cleanup --host ... --yes` removes them)")
    return Finding("leftovers", True, "no zbench pools left from earlier sweeps")


def _idle(host: Host) -> Finding:
    load = float(host.read_text("/proc/loadavg").split()[0])
    cores = int(host.run(["nproc"], timeout=30).stdout.strip() or 1)
    ok = load <= IDLE_LOAD_PER_CORE * cores
    return Finding("idle", ok, f"1-minute load {load:.2f} on {cores} cores"
                               + ("" if ok else ": busy, measurements would be disturbed"))


def doctor(host: Host, devices=(), overrides=()) -> list[Finding]:
    """Every finding about `host` (and its listed devices), in report order."""
    res = host.run(["true"], check=False, timeout=30)
    if not res.ok:
        return [Finding("connect", False, f"{host.name}: {res.stderr.strip()[:200] or res.returncode}")]
    findings = [Finding("connect", True, host.name)]
    for check, func in (("privilege", _privilege), ("openzfs", _openzfs), ("fio", _fio)):
        findings.append(_try(check, lambda f=func: f(host)))
    try:
        findings += _devices(host, list(devices), overrides)
    except ZbenchError as exc:
        findings.append(Finding("devices", None, f"not checked: {exc}"))
    for check, func in (("scratch", _scratch), ("leftovers", _leftovers), ("idle", _idle)):
        findings.append(_try(check, lambda f=func: f(host)))
    return findings


def preflight(host: Host, devices, overrides=()) -> list[Finding]:
    """doctor(), and one ConfigError naming every blocking check that failed or could not be
    made (a device not checked is not a device found free)."""
    findings = doctor(host, devices, overrides)
    bad = [f for f in findings if f.check in BLOCKING and f.ok is not True]
    if bad:
        raise ConfigError(f"{host.name} cannot run this sweep: "
                          + "; ".join(f"{f.check} {f.detail}" for f in bad))
    return findings


def preflight_spec(spec) -> list[Finding]:
    """Connect to a spec's real host (ssh:// or local) and check it before anything is created: what
    `preflight` checks, then its lock (HostBusy, one line naming the sweep that holds it)."""
    from zbench_lib.hosts.resolve import parse_host
    host = parse_host(spec.host)
    try:
        findings = preflight(host, list(spec.devices or []) + list(spec.extra_devices or []),
                             tuple(spec.allow_signatures or ()))
        check_free(host)
        return [*findings, Finding("lock", True, f"{LOCK_PATH} free: no other sweep holds this host")]
    finally:
        host.close()
