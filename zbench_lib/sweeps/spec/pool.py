"""Spec factors that shape the pool beyond its data vdevs (seed 003's questions).

- ``cache`` (L2ARC devices), ``special`` (a special allocation-class vdev, mirrored when it
  has 2 or more devices) and ``log_mirror`` (the log devices as one mirror): counts and a
  switch, drawn from the host's extra disks;
- ``model`` (the data disks' envelope) and ``log_model``/``cache_model``/``special_model``
  (the extra disks' envelope by role): lab only, set before the pool is made, a throttle through QMP, a
  mech: model by the disks' nbdkit (`nbd_disks`: the lab then serves the role's disks through it);
- ZFS module parameters by their own names (``zfs_txg_timeout: [5, 30]``): set before the
  pool is created, read back, restored after it is destroyed (zfs/module_params).

Each value is checked here, before anything runs, with the key path in the message.
"""

from __future__ import annotations

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.disk_models import MECH_PREFIX, parse_model
from zbench_lib.hosts.node import DEVICE_CONTROL
from zbench_lib.sweeps.spec.host import require_capability
from zbench_lib.sweeps.spec.values import fail, integer
from zbench_lib.zfs.module_params import PARAMS, check_value

EXTRA_DEVICE_FACTORS = ("cache", "special", "log_mirror")
MODEL_FACTORS = ("model", "log_model", "cache_model", "special_model")
ROLE_OF_MODEL = {"model": "data", "log_model": "log", "cache_model": "cache", "special_model": "special"}
POOL_SETTING_FACTORS = EXTRA_DEVICE_FACTORS + MODEL_FACTORS + tuple(PARAMS)


def _model(v, path: str) -> str:
    if not isinstance(v, str):
        fail(path, f"expected a disk model name (a preset or custom:iops=...,bw=...), got {v!r}")
    try:
        parse_model(v)
    except ConfigError as e:
        fail(path, str(e))
    return v


def check_pool_setting(key: str, v, path: str):
    """The canonical value of one pool-setting factor value, or a one-line ConfigError."""
    if key in ("cache", "special"):
        return integer(v, path, 0, 64)
    if key == "log_mirror":
        if not isinstance(v, bool):
            fail(path, f"expected true or false, got {v!r}")
        return v
    if key in MODEL_FACTORS:
        return _model(v, path)
    try:
        return check_value(key, v, path)
    except ConfigError as e:
        msg = str(e)
        raise ConfigError(msg if msg.startswith(path) else f"{path}: {msg}") from None


def check_pool_factors(factors: dict, host: str, faults) -> None:
    """Rules across factors and the host: models only in the lab, and not beside faults
    (a fault restores a disk to the lab's one model)."""
    models = [k for k in MODEL_FACTORS if k in factors]
    if models:
        require_capability(host, DEVICE_CONTROL, f"factors.{models[0]}",
                           "a disk model is the lab's throttle; a real host's disks are what they are")
    if models and faults:
        fail(f"factors.{models[0]}", "disk models as factors cannot be combined with faults "
                                     "(a pulled or slowed disk is restored to the lab's model)")


def nbd_disks(factors: dict) -> tuple[bool, bool]:
    """Whether the lab must serve its data disks, and its extra disks, through nbdkit from its boot: a mech:
    model is nbdkit's, never a QEMU throttle, so a model factor with a mech: level needs the disks of its
    role served by nbdkit, which switches the model between pools (a throttle level over passthrough)."""
    def mech(keys) -> bool:
        return any(str(level).startswith(MECH_PREFIX) for k in keys for level in factors.get(k, ()))
    return mech(("model",)), mech(MODEL_FACTORS[1:])


def pool_settings(f: dict) -> dict:
    """The pool-setting part of one factor combination, for the plan's pool record."""
    return {k: f[k] for k in POOL_SETTING_FACTORS if k in f}


def role_models(settings: dict, default_model: str) -> dict:
    """role -> model name for the data disks and each extra-device role (the lab's model by default)."""
    return {role: settings.get(key, default_model) for key, role in ROLE_OF_MODEL.items()}


def module_params(settings: dict) -> dict:
    return {k: v for k, v in settings.items() if k in PARAMS}
