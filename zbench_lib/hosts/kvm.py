"""Decide between KVM and TCG by probing, never by assuming.

On some hosts /dev/kvm exists but is a nested-virtualisation flavour that hangs
a stock Debian kernel right after "Probing EDD". The probe boots the lab kernel
without a root disk under KVM: a working KVM reaches the "unable to mount root"
panic within seconds; a broken one never does. The answer is cached per host
boot (keyed by the kernel's boot_id).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from zbench_lib.core import paths

PROBE_TIMEOUT_S = 25


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def kvm_usable(kernel: Path, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """(usable, reason). Boots `kernel` under KVM until it panics for lack of root."""
    if not os.path.exists("/dev/kvm"):
        return False, "/dev/kvm does not exist"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm is not accessible (add yourself to the kvm group)"
    cache = paths.cache_dir() / "kvm-probe.json"
    try:
        cached = json.loads(cache.read_text())
        if cached.get("boot_id") == _boot_id() and cached.get("kernel") == str(kernel):
            return cached["usable"], cached["reason"] + " (cached)"
    except (OSError, ValueError, KeyError):
        pass
    argv = ["qemu-system-x86_64", "-accel", "kvm", "-m", "256", "-display", "none",
            "-vga", "none", "-monitor", "none", "-serial", "stdio", "-no-reboot",
            "-kernel", str(kernel), "-append", "console=ttyS0 panic=-1"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
        out = proc.stdout + proc.stderr
        usable = "Kernel panic" in out or "VFS:" in out
        reason = "kernel reached the root-mount panic under KVM" if usable else \
            f"KVM boot ended without reaching root mount (exit {proc.returncode})"
    except subprocess.TimeoutExpired:
        usable, reason = False, f"kernel hung under KVM for {timeout_s:.0f} s (nested KVM)"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"boot_id": _boot_id(), "kernel": str(kernel),
                                 "usable": usable, "reason": reason}))
    return usable, reason


def choose_accel(requested: str, kernel: Path) -> str:
    """'kvm' or 'tcg' for a lab that asked for `requested` (auto | kvm | tcg)."""
    if requested == "tcg":
        return "tcg"
    usable, reason = kvm_usable(kernel)
    if requested == "kvm" and not usable:
        from zbench_lib.core.errors import ConfigError
        raise ConfigError(f"KVM was requested but is not usable: {reason}")
    return "kvm" if usable else "tcg"


def planned_accel(requested: str, zfs: str) -> str:
    """The accelerator a lab asking for `requested` would get, for planning before it boots, without a
    probe (that boots a kernel, up to 25 s): this boot's cached answer when there is one, else TCG, the
    accelerator that costs the controller's CPU (the conservative count)."""
    if requested in ("tcg", "kvm"):
        return requested
    from zbench_lib.hosts.lab_image import cached_image
    image = cached_image(zfs)
    try:
        cached = json.loads((paths.cache_dir() / "kvm-probe.json").read_text())
    except (OSError, ValueError):
        return "tcg"
    usable = cached.get("boot_id") == _boot_id() and image is not None and \
        cached.get("kernel") == str(image / "vmlinuz") and cached.get("usable") is True
    return "kvm" if usable else "tcg"
