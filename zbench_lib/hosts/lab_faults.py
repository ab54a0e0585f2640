"""A lab's disks through QMP: pulled, plugged back, throttled to a model, read back.

`remove_disk` unplugs a disk's virtio device (the guest sees the drive vanish, as when a
drive dies or is pulled); `restore_disk` plugs the same backing file back in, with the
same serial (so the same /dev/disk/by-id path) and the same envelope; `plugged` lists the
disks plugged in. `restore_speed` gives a disk a model's QEMU throttle (a crawl slows it), or the
mech: model its nbdkit serves, `throttle_of` reads the throttle back and `set_throttle` puts one back
exactly; `serve` switches the model a disk's nbdkit serves (`nbd_model`'s control file) and `served`
reads its status back. They act on
a lab's directory (its QMP socket and disk files), so a sweep on a lab booted by another
process can use them too; the sweeps reach them through `lab_node.QmpDeviceControl`. Only
lab disks are ever touched: never a real host's.
"""

from __future__ import annotations

import time
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts import nbd_model
from zbench_lib.hosts.disk_models import DiskModel, parse_model
from zbench_lib.hosts.qmp import QMPClient

_CACHE = {"none": (True, "on"), "writeback": (False, "on"),        # -drive cache= -> (direct, write-cache)
          "writethrough": (False, "off"), "directsync": (True, "off")}


def _device_id(serial: str) -> str:
    return f"dev-{serial}"


def _check(lab_dir: Path, serial: str) -> Path:
    lab_dir = Path(lab_dir)
    if not (lab_dir / f"{serial}.raw").is_file():
        raise ConfigError(f"lab {lab_dir.name} has no disk {serial!r}")
    return lab_dir


def remove_disk(lab_dir, serial: str, timeout: float = 60.0) -> float:
    """Unplug `serial`; returns the seconds the guest took to let it go."""
    lab_dir = _check(lab_dir, serial)
    t0 = time.monotonic()
    with QMPClient(lab_dir / "qmp.sock", timeout=timeout) as q:
        q.command("device_del", id=_device_id(serial))
        q.wait_event("DEVICE_DELETED", lambda d: d.get("device") == _device_id(serial), timeout)
    return time.monotonic() - t0


def restore_disk(lab_dir, serial: str, model: DiskModel | str, cache: str = "none") -> None:
    """Plug `serial`'s backing file back in as it was booted: same serial, cache mode and envelope."""
    lab_dir = _check(lab_dir, serial)
    direct, write_cache = _CACHE[cache]
    with QMPClient(lab_dir / "qmp.sock") as q:
        # QEMU deletes a -drive backend with its device; an existing one is reused.
        names = {n.get("node-name") for n in q.command("query-named-block-nodes") or []}
        if serial not in names:
            q.command("blockdev-add", driver="raw", **{"node-name": serial}, discard="unmap",
                      file={"driver": "file", "filename": str(lab_dir / f"{serial}.raw"), "aio": "threads",
                            "cache": {"direct": direct, "no-flush": False}})
        q.command("device_add", driver="virtio-blk-pci", drive=serial, serial=serial,
                  id=_device_id(serial), **{"write-cache": write_cache})
        _throttle(q, serial, parse_model(model))


def plugged(lab_dir) -> set[str]:
    """The serials of the disks plugged in now (QEMU's peripherals)."""
    with QMPClient(Path(lab_dir) / "qmp.sock") as q:
        names = {p["name"] for p in q.command("qom-list", path="/machine/peripheral") or []}
    return {n[len("dev-"):] for n in names if n.startswith("dev-")}


def restore_speed(lab_dir, serial: str, model: DiskModel | str) -> None:
    """Give `serial` a model's envelope: a throttle model's QEMU throttle (on top of what nbdkit serves,
    if it serves the disk), or a mech: model served by the disk's nbdkit, unthrottled. A mech: model is
    never a QEMU throttle (its all-zero one would run the disk unthrottled under its name): a disk QEMU
    opens as a file refuses it."""
    lab_dir = _check(lab_dir, serial)
    model = parse_model(model)
    if model.mech is not None:
        serve(lab_dir, serial, model.mech)
    with QMPClient(lab_dir / "qmp.sock") as q:
        _throttle(q, serial, model)


def served(lab_dir, serial: str) -> dict | None:
    """The model nbdkit serves `serial` with now (its status: seq, model, kind, params), None for a file QEMU opens."""
    return nbd_model.read_status(_check(lab_dir, serial) / f"{serial}.raw")


def serve(lab_dir, serial: str, mech: str) -> dict:
    """Have `serial`'s nbdkit serve `mech` (a fresh drive) once the disk is idle; its status. ConfigError,
    before anything changes, for a disk QEMU opens as a file."""
    lab_dir = _check(lab_dir, serial)
    if served(lab_dir, serial) is None:
        raise ConfigError(f"lab disk {serial}: {mech} is a mechanism model, served by nbdkit, never a QEMU "
                          "throttle; this disk is a file QEMU opens and throttles (a lab serves its disks "
                          "through nbdkit when it boots with a mech: model or a model factor with one)")
    return nbd_model.switch(lab_dir / f"{serial}.raw", mech)


def _throttle(q: QMPClient, serial: str, model: DiskModel) -> None:
    try:
        q.command("block_set_io_throttle", id=f"/machine/peripheral/{_device_id(serial)}/virtio-backend",
                  **model.qmp_throttle_arguments())
    except ZbenchError as exc:
        raise ZbenchError(f"lab disk {serial}: cannot set its envelope ({exc})") from None


def throttle_of(lab_dir, serial: str) -> dict:
    """The throttle QEMU applies to `serial` now (query-block), in block_set_io_throttle's keys."""
    lab_dir = _check(lab_dir, serial)
    with QMPClient(lab_dir / "qmp.sock") as q:
        blocks = q.command("query-block") or []
    for b in blocks:
        if b.get("qdev", "").startswith(f"/machine/peripheral/{_device_id(serial)}") or b.get("device") == serial:
            inserted = b.get("inserted") or {}
            return {k: inserted.get(k, 0) for k in ("iops", "iops_rd", "iops_wr", "bps", "bps_rd", "bps_wr")}
    raise ZbenchError(f"lab {lab_dir.name}: QEMU reports no block device for disk {serial!r}")


def set_throttle(lab_dir, serial: str, arguments: dict) -> None:
    """Put back a throttle read by throttle_of (block_set_io_throttle's keys, 0 = unlimited)."""
    lab_dir = _check(lab_dir, serial)
    with QMPClient(lab_dir / "qmp.sock") as q:
        q.command("block_set_io_throttle", id=f"/machine/peripheral/{_device_id(serial)}/virtio-backend",
                  **{k: int(arguments.get(k, 0)) for k in ("iops", "iops_rd", "iops_wr", "bps", "bps_rd", "bps_wr")})
