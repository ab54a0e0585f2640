"""The environment of a sweep as a person reads it: about a dozen lines, units included.

`environment_summary(provenance, results)` turns the provenance record (provenance.json
and the host-provenance-*.json the executor writes, merged by `load_sweep`) and the
results' configuration columns into (item, value) lines: OpenZFS, kernel, fio, host,
CPU, RAM, disks and their model, pool layouts, ashift, target properties, when. The
full record stays available (`sweep_data.environment_table`) behind a disclosure
element on the report's index page.

Disk models: every model the sweep's runs had, each once with the roles it served (data,
log, cache, special) and its recorded parameters: a pool's models as the store's "disk
models set" events read them back from QEMU (`events`), else the lab's own record (its
configuration, each disk's model at boot; a mechanism model's parameters are only there).
"""

from __future__ import annotations

import re
from collections import Counter

import pandas as pd

from zbench_lib.analysis.data.columns import MECH_PREFIX
from zbench_lib.analysis.figures.plot_base import LAYOUT_ORDER, ordered
from zbench_lib.core.events import Event
from zbench_lib.core.sizes import format_size

_TARGET_PROPS = (("volblocksize_bytes", "volblocksize"), ("recordsize_bytes", "recordsize"),
                 ("compression", "compression"), ("primarycache", "primarycache"), ("sync", "sync"),
                 ("logbias", "logbias"), ("volsize_bytes", "volsize"))
# Each role with its model column (sweeps/spec/pool.ROLE_OF_MODEL); the devices of a role but data are
# counted in the column of its name (log, cache, special)
ROLES = (("data", "model"), ("log", "log_model"), ("cache", "cache_model"), ("special", "special_model"))
# QEMU's throttle keys, as the "disk models set" event records the read-back (lab_faults.throttle_of), to
# the model record's fields (hosts/disk_models.DiskModel)
_THROTTLE_FIELDS = {"iops": "iops", "iops_rd": "iops_read", "iops_wr": "iops_write", "bps": "bw", "bps_rd": "bw_read",
                    "bps_wr": "bw_write"}


def _gib(n) -> str:
    n = float(n)
    return f"{n / 2 ** 30:.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.0f} MiB"


def _bytes(n) -> str:
    n = int(n)
    exact = format_size(n)
    return (exact[:-1] + " " + exact[-1] + "iB") if exact[-1] in "KMGT" else _gib(n)


def _version(text: str) -> str:
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", text or "")
    return m.group(1) if m else (text or "")


def _openzfs(p: dict) -> str:
    """The OpenZFS release; each one when sessions ran different releases (factor zfs)."""
    sessions = [_one_openzfs(s) for s in p.get("session_openzfs") or []]
    distinct = list(dict.fromkeys(s for s in sessions if s))
    if len(distinct) > 1:
        return "; ".join(sorted(distinct)) + " (one lab per release)"
    return _one_openzfs(p)


def _one_openzfs(p: dict) -> str:
    user, kmod = p.get("zfs_userland") or p.get("zfs_version", ""), p.get("zfs_kmod") or p.get("zfs_kmod_version", "")
    if not user and not kmod:
        return ""
    v = _version(user or kmod)
    if not re.search(r"\d", v):
        return v
    if _version(kmod) not in ("", v):
        return f"{v} userland, {_version(kmod)} kernel module (mismatch)"
    return f"{v} ({user}{', ' + kmod if kmod else ''})"


def _model(m: dict | str | None) -> str:
    """The data disks' model as provenance recorded it: a throttle's limits, a mechanism model's parameters."""
    if not m:
        return ""
    if isinstance(m, str):
        return _unrecorded(m) if m.startswith(MECH_PREFIX) else m
    if m.get("mech"):
        return _mech(m)
    parts = [f"{m[k]} IOPS" + (f" {k[5:]}" if k != "iops" else "") for k in ("iops", "iops_read", "iops_write")
             if m.get(k)]
    parts += [f"{m[k] / 2 ** 20:g} MiB/s" + (f" {k[3:]}" if k != "bw" else "") for k in ("bw", "bw_read", "bw_write")
              if m.get(k)]
    if not parts:       # the preset of that name says it already: never "unthrottled: unthrottled"
        return "unthrottled" if m.get("name") in ("", "unthrottled", None) else f"{m['name']}: unthrottled"
    return f"{m.get('name', '')}: " + ", ".join(parts) + " per disk"


def _unrecorded(name: str) -> str:
    # Every mech sweep so far records its parameters (DiskModel.to_dict); a bare name can only be
    # looked up in the presets, which live in the hosts layer analysis may not import: say so, show none.
    return (f"{name} (mechanism model, served through nbdkit; its parameters are not recorded with this "
            "sweep: the preset of that name, docs/methods.md §19)")


def _mech(m: dict) -> str:
    """'mech:hdd-7200 (mechanism model, served through nbdkit): 7200 rpm; seek ...; source: ...'."""
    rec = m.get("mech_model") or {}
    kind, params = rec.get("kind"), rec.get("params") or {}
    if kind not in ("hdd", "ssd", "null") or (kind != "null" and not params):
        return _unrecorded(m.get("mech") or m.get("name", ""))
    figures = {"hdd": _hdd, "ssd": _ssd, "null": lambda _: ["no delay"]}[kind](params)
    return (f"{rec.get('name') or m['mech']} (mechanism model, served through nbdkit): " + "; ".join(figures)
            + (f"; source: {rec['source']}" if rec.get("source") else ""))


def _hdd(p: dict) -> list[str]:
    cache = (f"write cache on ({_bytes(p['cache_bytes'])})" if p.get("cache_bytes") else "write cache on") \
        if p.get("write_cache") else "write cache off"
    depth = p.get("queue_depth")
    return [f"{p['rpm']:g} rpm",
            f"seek {p['track_ms']:g} ms single-track, {p['avg_seek_ms']:g} ms average, "
            f"{p['full_seek_ms']:g} ms full stroke",
            f"media rate {p['outer_mb_s']:g} MB/s outer to {p['inner_mb_s']:g} MB/s inner",
            *([f"command overhead {p['overhead_ms']:g} ms"] if p.get("overhead_ms") else []),
            f"NCQ depth {depth}" if depth and depth > 1 else "no command queueing (depth 1)", cache]


def _ssd(p: dict) -> list[str]:
    return [f"{p['channels']} parallel units",
            f"page read {p['read_us']:g} µs, program {p['write_us']:g} µs (medians), "
            f"overhead {p['overhead_us']:g} µs",
            f"{p['read_mb_s']:g}/{p['write_mb_s']:g} MB/s read/write",
            f"writes at {p['cliff_write_mb_s']:g} MB/s past a {p['spare_fraction']:.1%} spare area",
            *([f"flush {p['flush_us']:g} µs"] if p.get("flush_us") else [])]


def _name(m: dict | str | None) -> str | None:
    return (m.get("name") or None) if isinstance(m, dict) else (m or None)


def _role_models(results: pd.DataFrame | None, boot: str | None, extra: str | None) -> dict[str, list[str]]:
    """role -> the model names its devices had in the runs (a role no run's pool had is left out).

    A run's data disks: its `model` level, else the model its run context recorded (`disk_model`), else the
    lab's; an extra role's devices, where its count is above 0: its `<role>_model` level, else the lab's
    extra disks' model.
    """
    if results is None or results.empty:
        return {"data": [boot]} if boot else {}
    out = {}
    for role, col in ROLES:
        if role == "data":
            used, default = results.index, _filled(results, "disk_model", boot)
        elif role in results:
            used, default = results.index[pd.to_numeric(results[role], errors="coerce").fillna(0) > 0], extra
        else:
            continue
        names = _filled(results, col, default).loc[used].dropna()
        if len(names):
            out[role] = sorted(set(map(str, names)))
    return out


def _filled(results: pd.DataFrame, col: str, default) -> pd.Series:
    """`results[col]` with `default` (a value or a Series) where it is missing."""
    values = results[col] if col in results else pd.Series(None, index=results.index, dtype=object)
    return values.astype(object).where(values.notna(), default)


def _records(p: dict, events: list[dict] | None) -> dict[str, dict]:
    """model name -> its recorded parameters: the throttle QEMU read back when a pool's disks were set to it,
    else the lab's record of that name (its configuration, each disk's model at boot)."""
    lab = p.get("lab_config") or {}
    booted = [lab.get("model"), lab.get("extra_model"), *(p.get("lab_disk_models") or {}).values()]
    out = {}
    for m in booted:
        if isinstance(m, dict) and m.get("name"):
            out.setdefault(m["name"], m)
    for e in events or []:
        if e.get("event") != Event.DISK_MODELS_SET:
            continue
        throttles = e.get("throttles") or {}
        for disk, name in (e.get("models") or {}).items():
            # a mechanism model is no throttle (its read-back is all zeros): its parameters are the lab's record
            if isinstance(throttles.get(disk), dict) and not str(name).startswith(MECH_PREFIX):
                out[name] = {"name": name, **{f: int(throttles[disk][k]) for k, f in _THROTTLE_FIELDS.items()
                                              if throttles[disk].get(k)}}      # 0: no limit
    return out


def _model_lines(p: dict, results: pd.DataFrame | None = None, events: list[dict] | None = None) -> list[tuple]:
    """('Disk model', ...) as it always read for one model on the data disks alone; else one line per model,
    each once, named by its roles: ('Disk model (data, log)', 'hdd: 150 IOPS, 180 MiB/s per disk')."""
    lab = p.get("lab_config") or {}
    by_role = _role_models(results, _name(lab.get("model") or p.get("lab_disk_model")), _name(lab.get("extra_model")))
    roles: dict[str, list[str]] = {}
    for role, names in by_role.items():
        for name in names:
            roles.setdefault(name, []).append(role)
    records = _records(p, events)
    if list(roles.values()) == [["data"]]:
        return [("Disk model", _model(records.get(next(iter(roles)), next(iter(roles)))))]
    items = [f"Disk model ({', '.join(r)})" for r in roles.values()]
    count, seen = Counter(items), Counter()
    lines = []
    for item, name in zip(items, roles):
        seen[item] += 1         # a role's several models (a factor's levels): numbered, each item its own
        label = f"{item[:-1]}, {seen[item]} of {count[item]})" if count[item] > 1 else item
        lines.append((label, _model(records.get(name, name))))
    return lines


def _disks(p: dict) -> str:
    devices = {k[7:-1]: v for k, v in p.items() if k.startswith("device[")}
    lab = p.get("lab_config") or {}
    if devices:
        kinds = Counter(re.sub(r"\s+", " ", str(v)).strip() or "unknown model" for v in devices.values())
        text = "; ".join(f"{n} × {k}" for k, n in kinds.items())
        if lab:
            text = f"{len(devices)} × {_bytes(lab.get('disk_bytes', 0))} virtual disks (QEMU, sparse files)"
        return text
    if lab:
        return f"{lab.get('disks')} × {_bytes(lab.get('disk_bytes', 0))} virtual disks (QEMU, sparse files)"
    return ""


def _host(p: dict) -> str:
    host = str(p.get("host") or p.get("hostname") or p.get("node") or "")
    if host.startswith("lab:") or p.get("lab_config"):
        bits = [f"lab VM {host[4:] or host}", "QEMU"]
        if p.get("lab_accel"):
            bits.append("KVM" if p["lab_accel"] == "kvm" else "TCG emulation (no KVM)")
        if p.get("lab_boot_s") is not None:
            bits.append(f"booted in {float(p['lab_boot_s']):.0f} s")
        return ", ".join(bits)
    return host


def pool_layouts(results: pd.DataFrame) -> str:
    """'stripe 1x1 … 6x1; raidz2 1x4, 1x6': layout, then vdevs x width per pool shape."""
    if results is None or not {"layout", "width", "vdevs"} <= set(results.columns):
        return ""
    shapes = results[["layout", "width", "vdevs"]].drop_duplicates().dropna()
    out = []
    for lay in ordered(shapes["layout"], LAYOUT_ORDER):
        g = shapes[shapes["layout"] == lay].assign(total=lambda d: d["width"] * d["vdevs"]).sort_values("total")
        out.append(f"{lay} " + ", ".join(f"{int(v)}x{int(w)}" for v, w in zip(g["vdevs"], g["width"])))
    return "; ".join(out) + " (vdevs x disks per vdev)"


def _values(results, col) -> str:
    vals = sorted(results[col].dropna().unique(), key=lambda v: (isinstance(v, str), v))
    show = [format_size(int(v)) if col.endswith("_bytes") else str(v) for v in vals]
    return show[0] if len(show) == 1 else ", ".join(show) + " (varied)"


def _ashift(results) -> str:
    if results is None or "ashift" not in results or results["ashift"].isna().all():
        return ""
    return ", ".join(f"{int(a)} ({_bytes(2 ** int(a))} sectors)" for a in sorted(results["ashift"].dropna().unique()))


def _target(results: pd.DataFrame | None, surface: str = "") -> str:
    if results is None:
        return surface
    props = [f"{label} {_values(results, col)}" for col, label in _TARGET_PROPS
             if col in results and results[col].notna().any()]
    return "; ".join(([surface] if surface else []) + props)


_NOT_RECORDED = "not recorded"
# The environment an imported sweep's user may give (zbench import --env), in the summary's words
_GIVEN = (("zfs", "OpenZFS"), ("kernel", "Kernel"), ("host", "Host"), ("cpu", "CPU"), ("ram", "RAM"),
          ("disk_model", "Disks"))


def _imported_lines(p: dict, results: pd.DataFrame | None, surface: str) -> list[tuple[str, str]]:
    """An imported sweep's lines (sweeps/importing): what its user gave, "not recorded" for the rest; the
    machine that imported the files is not the one that measured them."""
    env = p.get("environment") or {}
    versions = sorted(set(results["fio_version"].dropna().astype(str))) if results is not None and \
        "fio_version" in results else []
    lines = [("Data", f"fio results imported from {p.get('source', '?')} (zbench import): measured elsewhere, "
                      "read from fio's JSON")]
    lines += [(label, str(env.get(key) or _NOT_RECORDED) + (" (as given)" if env.get(key) else ""))
              for key, label in _GIVEN]
    lines += [(k, f"{v} (as given)") for k, v in env.items() if k not in dict(_GIVEN)]
    lines += [("fio", ", ".join(_version(v) or v for v in versions)), ("Pool layouts", pool_layouts(results)),
              ("Target", _target(results, surface)),
              ("Counters", "not recorded: no truth check beyond what fio's own figures allow"),
              ("Imported", f"{p.get('created', '')} on {p.get('node', '?')}")]
    return [(k, v) for k, v in lines if v]


def environment_summary(provenance: dict, results: pd.DataFrame | None = None,
                        surface: str = "", events: list[dict] | None = None) -> list[tuple[str, str]]:
    """About a dozen (item, value) lines describing where and on what the sweep ran; `events` (the store's
    events.jsonl, `sweep_data.read_events`) give the disk models set around each pool. An imported sweep
    says what its user gave and "not recorded" for the rest."""
    p = provenance or {}
    if p.get("origin") == "fio import":
        return _imported_lines(p, results, surface)
    ram = p.get("mem_total_bytes") or p.get("ram_bytes")
    cpu = p.get("cpu_model") or p.get("cpu") or ""
    lines = [
        ("OpenZFS", _openzfs(p)),
        ("Kernel", " ".join(x for x in (p.get("kernel", ""), f"({p['arch']})" if p.get("arch") else "") if x)),
        ("fio", _version(p.get("fio_version", "")) or ""),
        ("Host", _host(p)),
        ("CPU", f"{p['cpu_count']} × {cpu}" if p.get("cpu_count") else cpu),
        ("RAM", _gib(ram) if ram else ""),
        ("Disks", _disks(p)),
        *_model_lines(p, results, events),
        ("Pool layouts", pool_layouts(results)),
        ("ashift", _ashift(results)),
        ("Target", _target(results, surface)),
        ("Recorded", " ".join(x for x in (p.get("collected_at") or p.get("created", ""),
                                          f"(controller Python {p.get('controller_python') or p.get('python')})"
                                          if p.get("controller_python") or p.get("python") else "") if x)),
    ]
    if p.get("synthetic"):
        lines.insert(0, ("Data", "SYNTHETIC: made up to test the analysis, not measured"))
    return [(k, v) for k, v in lines if v]


def environment_html(sweep, full: bool = True) -> str:
    """The summary lines as an HTML table, the full record behind a <details> element (notebooks:
    `display(HTML(environment_html(sweep)))`)."""
    from html import escape

    from zbench_lib.analysis.data.sweep_data import environment_table, read_events
    lines = environment_summary(sweep.provenance, sweep.results, sweep.spec.get("surface", ""),
                                read_events(sweep.path) if sweep.path else [])
    rows = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>{escape(v)}</td></tr>"
                   for k, v in lines)
    out = f"<table class='zbench-env'>{rows}</table>"
    if full:
        rec = "".join(f"<tr><td style='text-align:left'>{escape(str(k))}</td><td style='text-align:left'>"
                      f"{escape(str(v))}</td></tr>"
                      for k, v in environment_table(sweep.provenance).itertuples(index=False))
        out += f"<details><summary>Full environment record</summary><table>{rec}</table></details>"
    return out
