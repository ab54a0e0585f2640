"""The model a running nbdkit disk serves, changed between pools: a control file and a status file.

Beside a disk's backing file `<serial>.raw` (`nbd_disk_plugin` serves it) lie two small JSON files:

- `<serial>.model`, written by the controller: `{"seq": n, "model": "mech:hdd-7200"}`, the model the
  disk is to serve from its next idle moment. Written whole (a temporary file renamed over it), so the
  plugin never reads half of one, and every write is a new inode: the plugin sees a request by the
  file's (inode, mtime, size), even two written within one tick of the file system's clock.
- `<serial>.status`, written by the plugin: the request it answered (`seq`) and the model it serves now,
  as the drive holds it (`model`, `kind`, `params`), or `error` (the old model kept) for a model it
  could not take. The controller reads it back and checks it, as it checks QEMU's throttle.

The plugin's mechanism thread looks for a request only while the disk is idle (nothing queued, nothing
in flight, the mechanism free), so no request is served under two models; the controller switches
only between pools. `PASSTHROUGH` (the null model: no delay, the data I/O only) is what a disk serves
under a QEMU throttle. Standard library only: nbdkit's own Python loads it through the plugin.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.mech_models import MechModel, parse_mech

PASSTHROUGH = "mech:null"      # no delay: a throttle level's QEMU throttle is the whole envelope
POLL_S = 0.05                  # how often an idle plugin looks at its control file
SWITCH_TIMEOUT_S = 30.0        # an idle disk answers within a poll; a busy one is a leftover load


def control_path(disk: Path) -> Path:
    return Path(disk).with_suffix(".model")


def status_path(disk: Path) -> Path:
    return Path(disk).with_suffix(".status")


def _write(path: Path, doc: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True))
    os.replace(tmp, path)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def served(model: MechModel, seq: int, params) -> dict:
    """The status of a disk serving `model` (with `params`, the drive's own) since request `seq`."""
    return {"seq": seq, "model": model.name, "kind": model.kind,
            "params": dataclasses.asdict(params) if params is not None else {}}


def expected(model: str) -> dict:
    """What a status must say (model, kind, params) once the disk serves `model`."""
    m = parse_mech(model)
    return {k: v for k, v in served(m, 0, m.params).items() if k != "seq"}


def write_status(disk: Path, status: dict) -> None:
    _write(status_path(disk), status)


def read_status(disk: Path) -> dict | None:
    """The model the disk's nbdkit serves now; None when no nbdkit serves it (QEMU opens the file)."""
    return _read(status_path(disk))


def _file_key(path: Path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class Requests:
    """The plugin's side: each request written to the control file, seen once."""

    def __init__(self, disk: Path):
        self.path = control_path(disk)
        self.key = _file_key(self.path)        # one left from before this nbdkit started is not a request

    def pending(self) -> tuple[int, str] | None:
        """(seq, model) of a request not yet taken, or None."""
        key = _file_key(self.path)
        if key is None or key == self.key:
            return None
        self.key = key
        doc = _read(self.path) or {}
        return int(doc.get("seq", -1)), str(doc.get("model", ""))


def switch(disk: Path, model: str, timeout_s: float = SWITCH_TIMEOUT_S) -> dict:
    """Ask the nbdkit serving `disk` to serve `model` (a fresh drive) and wait for its status."""
    parse_mech(model)                                # a bad name stops here, not in the plugin
    now = read_status(disk)
    if now is None:
        raise ConfigError(f"disk {Path(disk).stem} is not served through nbdkit, so it cannot take {model} "
                          "(a lab serves its disks through nbdkit when it boots with a mech: model or factor)")
    seq = max(int(now.get("seq", 0)), int((_read(control_path(disk)) or {}).get("seq", 0))) + 1
    _write(control_path(disk), {"seq": seq, "model": model})
    deadline = time.monotonic() + timeout_s
    while (status := read_status(disk) or {}).get("seq") != seq:
        if time.monotonic() > deadline:
            raise ZbenchError(f"disk {Path(disk).stem}: nbdkit did not take {model} within {timeout_s:.0f} s "
                              "(it switches only while the disk is idle)")
        time.sleep(POLL_S / 2)
    if "error" in status:
        raise ZbenchError(f"disk {Path(disk).stem}: nbdkit refused {model}: {status['error']}")
    return status
