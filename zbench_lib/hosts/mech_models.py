"""Named mechanism models (`mech:<name>[,key=value...]`) and the figures of their sources.

Standard library only (nbdkit's interpreter loads it through the plugin). The parameters
come from data sheets cited in docs/methods.md §19; a value no source gives is marked
`assumed` beside it. `published` holds the source's own figures, which the calibration
benchmark prints beside what the model measured.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.disk_mech import HddDrive, HddParams, NullDrive, SsdDrive, SsdParams, fit_seek_curve

PREFIX = "mech:"


@dataclass(frozen=True)
class MechModel:
    name: str                  # the full spelling, overrides included: what the plugin is given
    kind: str                  # hdd | ssd | null
    params: HddParams | SsdParams | None
    source: str
    published: dict

    def drive(self, size: int, clock0: float = 0.0):
        cls = {"hdd": HddDrive, "ssd": SsdDrive, "null": NullDrive}[self.kind]
        return cls(self.params, size, clock0)

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "source": self.source,
                "params": dataclasses.asdict(self.params) if self.params else {}}


def _hdd_published(avg_seek_ms: float, full_seek_ms: float, rpm: float, **extra) -> dict:
    # What the data sheet implies for 4k random reads at depth 1: seek + half a turn
    # (transfer of 4k is ~0.03 ms); p99 cannot pass a full-stroke seek plus a full turn.
    rev_ms = 60_000 / rpm
    mean_ms = avg_seek_ms + rev_ms / 2
    return {"qd1_iops": round(1000 / mean_ms, 1), "qd1_mean_ms": round(mean_ms, 2),
            "p99_p50": (1.2, round((full_seek_ms + rev_ms) / mean_ms, 2)),
            "flush_ms": round(rev_ms, 2), **extra}


PRESETS: dict[str, MechModel] = {
    "hdd-7200": MechModel(
        "mech:hdd-7200", "hdd",
        HddParams(rpm=7200, track_ms=1.0, avg_seek_ms=8.5, full_seek_ms=15.0,
                  outer_mb_s=150, inner_mb_s=75, cache_bytes=16 * 2**20),
        "Hitachi Deskstar 7K1000.C spec (2-disk model): average seek read 8.5 ms, 7200 rpm, "
        "average latency 4.17 ms; single-track 1.0 ms, full stroke 15 ms, 150/75 MB/s assumed "
        "(Hitachi family values, 7K500 zone 0/29 ratio 0.48)",
        _hdd_published(8.5, 15.0, 7200, seq_mb_s=None)),
    "hdd-5400": MechModel(
        "mech:hdd-5400", "hdd",
        HddParams(rpm=5400, track_ms=1.0, avg_seek_ms=12.0, full_seek_ms=20.0,
                  outer_mb_s=90, inner_mb_s=45, cache_bytes=8 * 2**20),
        "Hitachi Travelstar 5K320 OEM spec rev 1.5: average seek read 12 ms, full stroke 20 ms, "
        "single track 1.0 ms, 5400 rpm (11.1 ms a turn); media rate 90/45 MB/s assumed",
        _hdd_published(12.0, 20.0, 5400, seq_mb_s=None)),
    "sata-ssd": MechModel(
        "mech:sata-ssd", "ssd",
        SsdParams(channels=8, read_us=82, write_us=7, overhead_us=10, read_mb_s=540, write_mb_s=520,
                  cliff_write_mb_s=300, spare_fraction=0.012),
        "Samsung 850 EVO 1 TB: 4k random read QD1 10,000 IOPS, QD32 98,000; write QD1 40,000, "
        "QD32 90,000; sequential 540/520 MB/s; TurboWrite buffer 12 GB (AnandTech); 8 channels; "
        "300 MB/s past the buffer assumed",
        {"qd1_iops": 10_000, "qd32_iops": 98_000, "qd1_write_iops": 40_000, "seq_mb_s": 540,
         "p99_p50": (1.1, 3.0)}),
    "nvme": MechModel(
        "mech:nvme", "ssd",
        SsdParams(channels=64, read_us=41, write_us=5, overhead_us=10, read_mb_s=3500, write_mb_s=3300,
                  cliff_write_mb_s=1700, spare_fraction=0.042),
        "Samsung 970 EVO Plus 1 TB: 4k random read QD1 19,000 IOPS, QD32 600,000; write QD1 60,000; "
        "sequential 3,500/3,300 MB/s, 1,700 MB/s past the 42 GB SLC cache",
        {"qd1_iops": 19_000, "qd32_iops": 600_000, "qd1_write_iops": 60_000, "seq_mb_s": 3500,
         "p99_p50": (1.1, 3.0)}),
    "null": MechModel("mech:null", "null", None, "no delay: the cost of the NBD path itself", {}),
}


_TYPES = {"int": int, "float": float, "bool": bool}


def _convert(model: str, key: str, text: str, kind: str):
    # `kind` is the field's declared type ("float", "int", "bool"), not the preset value's.
    try:
        if kind == "bool":
            if text not in ("on", "off", "true", "false", "1", "0"):
                raise ValueError
            return text in ("on", "true", "1")
        value = _TYPES[kind](text)
    except ValueError:
        raise ConfigError(f"disk model {model!r}: {key}={text!r} is not a {kind}") from None
    if not value > 0 or value != value or value in (float("inf"),):
        raise ConfigError(f"disk model {model!r}: {key} must be positive and finite, got {text!r}")
    return value


def _override(base: MechModel, spec: str, parts: list[str]) -> MechModel:
    if base.params is None and parts:
        raise ConfigError(f"disk model {spec!r}: the null model takes no parameters")
    fields = {f.name: f.type for f in dataclasses.fields(base.params)} if base.params else {}
    changes = {}
    for part in parts:
        key, sep, text = part.partition("=")
        if not sep or key.strip() not in fields:
            raise ConfigError(f"disk model {spec!r}: {part!r} is not key=value with a key among "
                              f"{', '.join(sorted(fields))}")
        key = key.strip()
        changes[key] = _convert(spec, key, text.strip(), fields[key])
    params = dataclasses.replace(base.params, **changes) if changes else base.params
    return dataclasses.replace(base, name=spec, params=params)


def _check(model: MechModel) -> MechModel:
    p = model.params
    if model.kind == "hdd":
        if p.inner_mb_s >= p.outer_mb_s:
            raise ConfigError(f"disk model {model.name!r}: inner_mb_s must be below outer_mb_s")
        try:
            fit_seek_curve(p.track_ms, p.avg_seek_ms, p.full_seek_ms, p.cylinders)
        except ValueError as exc:
            raise ConfigError(f"disk model {model.name!r}: {exc}") from None
    if model.kind == "ssd" and not p.spare_fraction < 1:
        raise ConfigError(f"disk model {model.name!r}: spare_fraction must be below 1")
    return model


def parse_mech(spec: str) -> MechModel:
    """`mech:hdd-7200` or `mech:hdd-7200,write_cache=off,queue_depth=1` to a checked MechModel."""
    if not isinstance(spec, str) or not spec.startswith(PREFIX):
        raise ConfigError(f"a mechanism disk model starts with {PREFIX!r}, got {spec!r}")
    name, *parts = [s.strip() for s in spec[len(PREFIX):].split(",")]
    if name not in PRESETS:
        raise ConfigError(f"unknown disk model {spec!r}; mechanism models: "
                          + ", ".join(PREFIX + n for n in PRESETS))
    return _check(_override(PRESETS[name], spec, [p for p in parts if p]))
