"""What is set around one pool besides its layout: disk models by role and module parameters.

``pool_setup(...)`` is entered before ``zpool create`` and left after the pool is gone:
- each device whose role has a model factor (``model`` for the data disks, ``log_model``,
  ``cache_model``, ``special_model``) gets that envelope through the node's device control (the
  lab's QEMU throttle, through QMP; on a disk the lab serves through nbdkit, also the model nbdkit
  serves: a mech: level, or passthrough under a throttle level), read back and recorded; on exit it
  gets back exactly the throttle, and the served model, it had before;
- ZFS module parameters are applied by ``zfs.module_params.ModuleParams`` (read, set, read
  back, restored afterwards even on failure) and recorded.

It yields the data disks' model name (None when not a factor) and the read-back as result
columns (``param_<name>``, ``<role>_model_readback``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from zbench_lib.hosts.disk_models import DiskModel, parse_model
from zbench_lib.hosts.nbd_model import PASSTHROUGH, expected
from zbench_lib.hosts.node import DEVICE_CONTROL, Node
from zbench_lib.core.errors import ZbenchError
from zbench_lib.core.events import Event
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.spec.pool import ROLE_OF_MODEL, module_params
from zbench_lib.zfs.module_params import ModuleParams, param_path, result_columns


def device_roles(layout, devices: list[str]) -> dict:
    """device -> role for the devices ordered data, log, cache, special (as zpool_create_argv takes them)."""
    roles = ["data"] * layout.total_disks + ["log"] * layout.log + ["cache"] * layout.cache \
        + ["special"] * layout.special
    return dict(zip(devices, roles))


@dataclass(frozen=True)
class Envelope:
    """What shapes a disk's service before a pool sets its model, put back after it."""
    throttle: dict                  # QEMU's, as read_throttle reads it
    served: str | None              # the model its nbdkit serves (None: a file QEMU opens)


def _apply(control, device: str, model: DiskModel, nbd: bool) -> tuple[dict, dict | None]:
    """Give one disk `model`: on a disk nbdkit serves, a mech: level served (a fresh drive) and a throttle
    level over passthrough. Read back and checked, both, as set: QEMU's throttle, nbdkit's status."""
    disk = control.disk_id(device)
    if nbd and model.mech is None:
        control.serve(device, PASSTHROUGH)       # no delay beneath the throttle
    control.set_model(device, model)
    throttle = control.read_throttle(device)
    want = model.qmp_throttle_arguments()
    if {k: throttle.get(k) for k in want} != want:
        raise ZbenchError(f"lab disk {disk}: throttle read back {throttle}, set {want} ({model.name})")
    if not nbd:
        return throttle, None
    served = control.read_served(device) or {}
    want = expected(model.mech or PASSTHROUGH)
    if {k: served.get(k) for k in want} != want:
        raise ZbenchError(f"lab disk {disk}: nbdkit serves {served.get('model')} {served.get('params')}, "
                          f"set {want['model']} {want['params']} ({model.name})")
    return throttle, served


def _set_models(request, layout, devices, store, node: Node, before: dict) -> dict:
    """Give each device of a role with a model factor its level; fills `before`; returns read-back columns."""
    settings = request.settings or {}
    wanted = {role: settings[key] for key, role in ROLE_OF_MODEL.items() if key in settings}
    targets = {d: wanted[role] for d, role in device_roles(layout, devices).items() if role in wanted}
    if not targets:
        return {}
    control = node.require(DEVICE_CONTROL, "disk models as factors")
    got, served = {}, {}
    for device, model in targets.items():
        now = control.read_served(device)
        before[device] = Envelope(control.read_throttle(device), now["model"] if now else None)
        disk = control.disk_id(device)
        got[disk], status = _apply(control, device, parse_model(model), now is not None)
        if status is not None:
            served[disk] = status
    store.record(Event.DISK_MODELS_SET, pool_id=request.pool_id,
                 models={control.disk_id(d): m for d, m in targets.items()}, throttles=got,
                 **({"served": served} if served else {}))
    return {f"{role}_model_readback": model for role, model in wanted.items()}


def _put_back(control, device: str, envelope: Envelope) -> None:
    if envelope.served is not None:
        control.serve(device, envelope.served)
    control.set_throttle(device, envelope.throttle)


@contextlib.contextmanager
def pool_setup(request: PoolRequest, layout, devices: list[str], node: Node, store):
    """Apply a pool request's settings; yields (data disk model name or None, read-back columns)."""
    settings = request.settings or {}
    before: dict = {}
    try:
        readback = _set_models(request, layout, devices, store, node, before)
        with ModuleParams(node.host, module_params(settings)) as params:
            if params.record:
                store.record(Event.MODULE_PARAMETERS_SET, pool_id=request.pool_id, params=params.record)
                readback.update(result_columns(params.record))
            yield settings.get("model"), readback
        if params.record:
            store.record(Event.MODULE_PARAMETERS_RESTORED, pool_id=request.pool_id,
                         params={k: v["before"] for k, v in params.record.items()})
    finally:
        for device, envelope in before.items():     # exactly the envelope it had, whatever happened
            try:
                _put_back(node.control, device, envelope)
            except ZbenchError as exc:
                store.record(Event.DISK_MODEL_RESTORE_FAILED, device=device, error=str(exc))


def restore_unfinished(store, host, log) -> None:
    """Module parameters an interrupted session set and never put back (killed mid-pool):
    write back the values they had before, from the store's events."""
    pending: dict = {}
    for e in store.events():
        if e.get("event") == Event.MODULE_PARAMETERS_SET:
            pending[e["pool_id"]] = e["params"]
        elif e.get("event") == Event.MODULE_PARAMETERS_RESTORED:
            pending.pop(e["pool_id"], None)
    for pool_id, params in pending.items():
        before = {name: rec["before"] for name, rec in params.items()}
        log(f"restoring module parameters an interrupted run of pool {pool_id} left set: {before}")
        for name, value in before.items():
            host.run(["tee", param_path(name)], input=value)
        store.record(Event.MODULE_PARAMETERS_RESTORED, pool_id=pool_id, params=before, after_interruption=True)
