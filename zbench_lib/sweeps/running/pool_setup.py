"""What is set around one pool besides its layout: disk models by role and module parameters.

``pool_setup(...)`` is entered before ``zpool create`` and left after the pool is gone:
- each device whose role has a model factor (``model`` for the data disks, ``log_model``,
  ``cache_model``, ``special_model``) gets that envelope through the node's device control (the
  lab's QEMU throttle, through QMP), read back and recorded; on exit it gets back exactly the
  throttle it had before;
- ZFS module parameters are applied by ``zfs.module_params.ModuleParams`` (read, set, read
  back, restored afterwards even on failure) and recorded.

It yields the data disks' model name (None when not a factor) and the read-back as result
columns (``param_<name>``, ``<role>_model_readback``).
"""

from __future__ import annotations

import contextlib

from zbench_lib.hosts.disk_models import parse_model
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


def _set_models(request, layout, devices, store, node: Node, before: dict) -> dict:
    """Throttle each device of a role with a model factor; fills `before`; returns read-back columns."""
    settings = request.settings or {}
    wanted = {role: settings[key] for key, role in ROLE_OF_MODEL.items() if key in settings}
    targets = {d: wanted[role] for d, role in device_roles(layout, devices).items() if role in wanted}
    if not targets:
        return {}
    control = node.require(DEVICE_CONTROL, "disk models as factors")
    got = {}
    for device, model in targets.items():
        disk = control.disk_id(device)
        before[device] = control.read_throttle(device)
        control.set_model(device, model)
        got[disk] = control.read_throttle(device)
        want = parse_model(model).qmp_throttle_arguments()
        if {k: got[disk].get(k) for k in want} != want:
            raise ZbenchError(f"lab disk {disk}: throttle read back {got[disk]}, set {want} ({model})")
    store.record(Event.DISK_MODELS_SET, pool_id=request.pool_id,
                 models={control.disk_id(d): m for d, m in targets.items()}, throttles=got)
    return {f"{role}_model_readback": model for role, model in wanted.items()}


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
        for device, throttle in before.items():     # exactly the envelope it had, whatever happened
            try:
                node.control.set_throttle(device, throttle)
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
