"""Provenance: small independent collectors, each tolerating failure.

Every collector returns a flat dict; a collector that fails records its error
under `<name>_error` instead of stopping the others (pyperf's collect_metadata).
"""

from __future__ import annotations

import json
import platform
import time

from zbench_lib.hosts.base import Host


def _run(host: Host, argv, timeout=60) -> str:
    return host.run(argv, timeout=timeout).stdout.strip()


def kernel(host: Host) -> dict:
    return {"kernel": _run(host, ["uname", "-r"]), "arch": _run(host, ["uname", "-m"])}


def zfs_versions(host: Host) -> dict:
    lines = _run(host, ["zfs", "version"]).splitlines()
    return {"zfs_userland": lines[0] if lines else "", "zfs_kmod": lines[1] if len(lines) > 1 else ""}


def fio_version(host: Host) -> dict:
    return {"fio_version": _run(host, ["fio", "--version"])}


def cpu(host: Host) -> dict:
    text = host.read_text("/proc/cpuinfo")
    models = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")]
    return {"cpu_model": models[0] if models else "", "cpu_count": len(models)}


def memory(host: Host) -> dict:
    for line in host.read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return {"mem_total_bytes": int(line.split()[1]) * 1024}
    return {}


def devices(host: Host, paths: list[str]) -> dict:
    out = {}
    info = json.loads(_run(host, ["lsblk", "-J", "-d", "-p", "-o", "PATH,MODEL,SERIAL,REV,SIZE,ROTA"]))
    by_path = {d["path"]: d for d in info.get("blockdevices", [])}
    for p, real in zip(paths, _resolved(host, paths)):
        d = by_path.get(real, {})
        out[f"device[{p}]"] = " ".join(str(d.get(k) or "") for k in ("model", "serial", "rev", "size")).strip()
    return out


def _resolved(host: Host, paths: list[str]) -> list[str]:
    """Every path's target, in one command (each command on a lab costs 0.3-0.6 s; a lab has a
    dozen disks): readlink prints one line a path, in order, and fails the collector, as one
    readlink a path did, when it cannot resolve one."""
    if not paths:
        return []
    reals = host.run(["readlink", "-f", *paths]).stdout.splitlines()
    if len(reals) != len(paths):
        raise ValueError(f"readlink gave {len(reals)} lines for {len(paths)} paths")
    return reals


def zfs_module_parameters(host: Host) -> dict:
    # One remote command reads every parameter (hundreds of files).
    return parse_module_parameters(_run(host, ["grep", "-r", "", "/sys/module/zfs/parameters/"]))


def parse_module_parameters(text: str) -> dict:
    """`grep -r "" /sys/module/zfs/parameters/` -> {'zfs_param.<name>': value}, whatever the
    release names them (2.1 to 2.3 differ in dozens)."""
    params = {}
    for line in text.splitlines():
        path, _, value = line.partition(":")
        params[f"zfs_param.{path.rsplit('/', 1)[1]}"] = value
    return params


def pool_properties(host: Host, pool: str) -> dict:
    return {f"zpool.{pool}.{k}": v for k, v in _props(host, ["zpool", "get", "-Hp", "-o",
                                                            "property,value", "all", pool])}


def dataset_properties(host: Host, name: str) -> dict:
    return {f"zfs.{name}.{k}": v for k, v in _props(host, ["zfs", "get", "-Hp", "-o",
                                                          "property,value", "all", name])}


def _props(host, argv):
    for line in _run(host, argv).splitlines():
        k, _, v = line.partition("\t")
        yield k, v


def collect(host: Host, *, devices_list=(), extra: dict | None = None) -> dict:
    """Run every collector; failures are recorded, never raised."""
    out = {"collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "controller_python": platform.python_version(), "host": host.name}
    collectors = [("kernel", kernel), ("zfs", zfs_versions), ("fio", fio_version), ("cpu", cpu),
                  ("memory", memory), ("zfs_params", zfs_module_parameters)]
    if devices_list:
        collectors.append(("devices", lambda h: devices(h, list(devices_list))))
    for name, fn in collectors:
        try:
            out.update(fn(host))
        except Exception as exc:          # a collector must never stop the others
            out[f"{name}_error"] = str(exc)[:300]
    out.update(extra or {})
    return out
