"""Disk models: the performance envelope QEMU's per-drive throttles impose.

A model caps IOPS and bandwidth, optionally separately for reads and writes.
`None` means "no limit". Presets describe typical devices; custom models are
built from keyword values, e.g. "custom:iops=500,bw=200M".

A mechanism model, "mech:hdd-7200[,key=value...]" (`mech_models`), is a different kind: no
throttle at all, the disk is served through nbdkit with the model's delays (`nbd_disk`).
It parses to a DiskModel whose `mech` holds that spelling, so `model` takes both kinds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.mech_models import PREFIX as MECH_PREFIX
from zbench_lib.hosts.mech_models import parse_mech

MiB = 1024 * 1024

_LIMIT_FIELDS = ("iops", "iops_read", "iops_write", "bw", "bw_read", "bw_write")


@dataclass(frozen=True)
class DiskModel:
    name: str
    iops: int | None = None         # total (read + write) operations per second
    iops_read: int | None = None
    iops_write: int | None = None
    bw: int | None = None           # total bytes per second
    bw_read: int | None = None
    bw_write: int | None = None
    mech: str | None = None         # "mech:<name>...": served through nbdkit, never throttled

    def __post_init__(self):
        for f in _LIMIT_FIELDS:
            v = getattr(self, f)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"disk model {self.name!r}: {f} must be an integer, got {v!r}")
            if v <= 0:
                raise ConfigError(f"disk model {self.name!r}: {f} must be positive, got {v}")
        if self.iops is not None and (self.iops_read or self.iops_write):
            raise ConfigError(f"disk model {self.name!r}: give iops or iops_read/iops_write, not both")
        if self.bw is not None and (self.bw_read or self.bw_write):
            raise ConfigError(f"disk model {self.name!r}: give bw or bw_read/bw_write, not both")
        if self.mech is not None and self.throttled:
            raise ConfigError(f"disk model {self.name!r}: a mechanism model takes no throttle")

    @property
    def throttled(self) -> bool:
        return any(getattr(self, f) is not None for f in _LIMIT_FIELDS)

    def read_iops_limit(self) -> int | None:
        return self.iops_read or self.iops

    def write_iops_limit(self) -> int | None:
        return self.iops_write or self.iops

    def qemu_throttle_options(self) -> list[str]:
        """`-drive` sub-options (throttling.*) for this model."""
        names = {"iops": "iops-total", "iops_read": "iops-read", "iops_write": "iops-write",
                 "bw": "bps-total", "bw_read": "bps-read", "bw_write": "bps-write"}
        return [f"throttling.{names[f]}={getattr(self, f)}"
                for f in _LIMIT_FIELDS if getattr(self, f) is not None]

    def qmp_throttle_arguments(self) -> dict:
        """Arguments for QMP block_set_io_throttle (0 means unlimited there)."""
        return {"iops": self.iops or 0, "iops_rd": self.iops_read or 0,
                "iops_wr": self.iops_write or 0, "bps": self.bw or 0,
                "bps_rd": self.bw_read or 0, "bps_wr": self.bw_write or 0}

    def to_dict(self) -> dict:
        d = asdict(self)
        if self.mech is None:           # throttle models keep the record they always had
            del d["mech"]
        else:
            d["mech_model"] = parse_mech(self.mech).to_dict()
        return d


PRESETS = {
    # 7200 rpm SATA disk: seek-bound random I/O, ~180 MiB/s on the outer tracks.
    "hdd": DiskModel("hdd", iops=150, bw=180 * MiB),
    # Slow HDDs make layout effects visible in seconds rather than minutes.
    "hdd-slow": DiskModel("hdd-slow", iops=100, bw=100 * MiB),
    # SATA SSD: the bandwidth cap binds first; the IOPS cap is above what TCG reaches.
    "sata-ssd": DiskModel("sata-ssd", iops_read=90_000, iops_write=80_000,
                          bw_read=550 * MiB, bw_write=520 * MiB),
    "nvme": DiskModel("nvme", iops_read=500_000, iops_write=400_000,
                      bw_read=3000 * MiB, bw_write=2000 * MiB),
    "unthrottled": DiskModel("unthrottled"),
}

_UNITS = {"": 1, "k": 1024, "m": MiB, "g": 1024 * MiB}


def _parse_number(field: str, text: str) -> int:
    t = text.strip().lower().removesuffix("ib").removesuffix("b").removesuffix("/s")
    unit = t[-1] if t and t[-1] in "kmg" else ""
    digits = t[:-1] if unit else t
    try:
        value = float(digits)
    except ValueError:
        raise ConfigError(f"disk model: {field}={text!r} is not a number") from None
    if not 0 < value < 1e18:            # also refuses nan and inf
        raise ConfigError(f"disk model: {field} must be positive (and finite), got {text!r}")
    return int(value * _UNITS[unit])


def parse_model(spec: str | dict | DiskModel) -> DiskModel:
    """Resolve a preset name, a dict, or "custom:iops=500,bw=200M" to a DiskModel."""
    if isinstance(spec, DiskModel):
        return spec
    if isinstance(spec, dict):
        unknown = set(spec) - set(_LIMIT_FIELDS) - {"name"}
        if unknown:
            raise ConfigError(f"disk model: unknown field(s) {sorted(unknown)}; "
                              f"allowed: {', '.join(_LIMIT_FIELDS)}")
        values = {k: (_parse_number(k, str(v)) if v is not None else None)
                  for k, v in spec.items() if k != "name"}
        return DiskModel(spec.get("name", "custom"), **values)
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"disk model must be a preset name or custom:..., got {spec!r}")
    if spec in PRESETS:
        return PRESETS[spec]
    if spec.startswith(MECH_PREFIX):
        return DiskModel(spec, mech=parse_mech(spec).name)
    if spec.startswith("custom:"):
        fields = {}
        for part in filter(None, spec[len("custom:"):].split(",")):
            if "=" not in part:
                raise ConfigError(f"disk model: expected key=value in {spec!r}, got {part!r}")
            k, v = part.split("=", 1)
            fields[k.strip()] = v
        if not fields:
            raise ConfigError("disk model: custom: needs at least one limit, e.g. custom:iops=500")
        return parse_model({"name": spec, **fields})
    raise ConfigError(f"unknown disk model {spec!r}; presets: {', '.join(PRESETS)}, "
                      "or custom:iops=N,bw=SIZE (also iops_read, iops_write, bw_read, bw_write), "
                      "or a mechanism model mech:hdd-7200, mech:hdd-5400, mech:sata-ssd, mech:nvme, mech:null")
