"""fio's JSON key layouts across releases, read into the one `fio_parse` reads (fio 3.18 and later).

zbench's own runs use one fio (3.33); results brought from elsewhere (`zbench import`) come from any
release. What changed in a direction's section (`read`, `write`, `trim`), from fio's stat.c at each tag:

- fio 2.x names the latencies ``slat``, ``clat``, ``lat``, in **µs**: min and max integers, mean and
  stddev floats, clat's ``percentile`` list integers in µs (padded with ``"0.00": 0`` entries). fio 3.0
  renamed them ``slat_ns``, ``clat_ns``, ``lat_ns``, in ns.
- ``io_bytes`` is **KiB** before fio 2.21 (``ts->io_bytes >> 10``); 2.21 made it bytes and added
  ``io_kbytes``. ``bw`` is KiB/s in every release; ``bw_bytes`` arrived in fio 3.2.
- The sample count ``N`` of each latency arrived in fio 3.18; before, a statistic without samples
  prints as zeros (``calc_lat`` false). ``total_ios`` arrived in fio 2.1.14, ``job options`` and
  ``global options`` in 2.3.
- json+ bins: fio 2.15-2.19 print every clat bin by index beside the ``FIO_IO_U_PLAT_*`` constants,
  2.20-2.21 the non-empty ones keyed by their value in µs, fio 3.x by their value in ns. fio 2.x
  bins are dropped, not rescaled: fio_hist computes a bin's edges from its ns key, and a µs bin is up
  to 1000 times wider than the ns bin its key x 1000 would name.

`current_layout` translates a report (a ``jobs`` or a ``client_stats`` list) into the newest layout,
with a note per translation, so every row still comes from `fio_parse.parse_fio_json`.

`lat_from_clat` fills a direction's missing issue-to-completion percentiles from clat's where fio
recorded no submission latency (slat N = 0): a sync engine submits and completes in one call, so its
clat is its lat (docs/methods.md §18.1); fio prints lat percentiles only with ``lat_percentiles=1``,
which most users' jobs leave out. Where slat was recorded (libaio, io_uring) clat is only the completion
half, and the lat percentiles stay missing.

Pure: dicts in, dicts out (the input is never changed).
"""

from __future__ import annotations

import re

from zbench_lib.measure.fio_parse import DIRECTIONS

LATENCIES = (("slat", "slat_ns"), ("clat", "clat_ns"), ("lat", "lat_ns"))
_PADDING = "0.00"              # fio 2.x pads its percentile list with this key
FIO2 = "fio 2.x layout: latencies in µs read as ns (x 1000), bw in KiB/s"
FIO2_KIB = "io_bytes in KiB (fio before 2.21) read as bytes (x 1024)"
FIO2_BINS = "fio 2.x json+ bins (µs) not kept: no latency histogram"
NO_N = "latency sample counts N absent (fio before 3.18): N taken as total_ios where fio recorded the latency"
NO_BW_BYTES = "bw_bytes absent (fio before 3.2): io_bytes x 1000 / runtime"
LAT_FROM_CLAT = ("lat percentiles read from clat: no submission latency recorded (a sync engine, whose clat is "
                 "its lat, methods §18.1)")


def entries(data: dict) -> list[dict]:
    """The job entries of a report: ``jobs``, or a controller's ``client_stats``."""
    return list(data.get("jobs") or data.get("client_stats") or [])


def is_fio2(data: dict) -> bool:
    """True when the report's latencies carry fio 2.x's µs keys (``clat``, not ``clat_ns``)."""
    return any("clat" in d and "clat_ns" not in d for d in _directions(data))


def major_version(data: dict) -> int | None:
    """fio's major release from ``fio version`` ("fio-3.33" -> 3), None if it does not say."""
    m = re.search(r"(\d+)\.\d+", str(data.get("fio version", "")))
    return int(m.group(1)) if m else None


def _directions(data: dict):
    for job in entries(data):
        for name in DIRECTIONS:
            d = job.get(name)
            if isinstance(d, dict):
                yield d


_SECTIONS = (*DIRECTIONS, "sync")


def _sections_copied(data: dict) -> dict:
    """`data` with every dict these translations change copied (the report, its jobs, their sections and
    latencies), the rest shared: bins and option maps are never changed, and a json+ report's bins are most
    of it (a deep copy took 13 ms a report)."""
    def job(j: dict) -> dict:
        out = dict(j)
        for name in _SECTIONS:
            if isinstance(j.get(name), dict):
                out[name] = {k: dict(v) if isinstance(v, dict) else v for k, v in j[name].items()}
        return out
    return {k: [job(j) if isinstance(j, dict) else j for j in v] if k in ("jobs", "client_stats") and
            isinstance(v, list) else v for k, v in data.items()}


def _us_to_ns(stats: dict) -> dict:
    out = {k: v * 1000 for k, v in stats.items() if k in ("min", "max", "mean", "stddev")}
    pct = {k: v * 1000 for k, v in (stats.get("percentile") or {}).items() if k != _PADDING}
    return {**out, **({"percentile": pct} if pct else {})}


def _fio2_direction(d: dict, notes: set) -> None:
    """One direction of a fio 2.x report rewritten in place into fio 3's keys."""
    if "io_kbytes" not in d:
        d["io_bytes"] = int(d.get("io_bytes", 0)) * 1024
        notes.add(FIO2_KIB)
    for old, new in LATENCIES:
        stats = d.pop(old, None)
        if isinstance(stats, dict):
            if "bins" in stats:
                notes.add(FIO2_BINS)
            d[new] = _us_to_ns(stats)


def _fill_counts(d: dict, notes: set) -> None:
    """N of each latency and bw_bytes where the release did not print them (see the module's text)."""
    runtime, nbytes = int(d.get("runtime") or 0), int(d.get("io_bytes") or 0)
    if "total_ios" not in d:                        # fio before 2.1.14: iops is total_ios x 1000 / runtime
        d["total_ios"] = round(float(d.get("iops") or 0) * runtime / 1000)
    if "bw_bytes" not in d:
        d["bw_bytes"] = nbytes * 1000 // runtime if runtime else 0
        notes.add(NO_BW_BYTES)
    for _, key in LATENCIES:
        stats = d.get(key)
        if isinstance(stats, dict) and "N" not in stats:
            recorded = any(stats.get(k) for k in ("min", "max", "mean"))
            stats["N"] = int(d["total_ios"]) if recorded else 0
            notes.add(NO_N)


def current_layout(data: dict) -> tuple[dict, tuple[str, ...]]:
    """`data` (a decoded report) in fio 3.18's key layout, and the translations made (sorted notes)."""
    out, notes = _sections_copied(data), set()
    fio2 = is_fio2(out)
    if fio2:
        notes.add(FIO2)
    for d in _directions(out):
        if fio2:
            _fio2_direction(d, notes)
        if d.get("io_bytes") or d.get("total_ios"):
            _fill_counts(d, notes)
    for job in entries(out):            # the fsync/fdatasync calls (fio 3.4 on): their count is their own
        sync = job.get("sync")
        if isinstance(sync, dict) and isinstance(sync.get("lat_ns"), dict) and "N" not in sync["lat_ns"]:
            sync["lat_ns"]["N"] = int(sync.get("total_ios") or 0)
    return out, tuple(sorted(notes))


def _slat_recorded(d: dict) -> bool:
    return bool((d.get("slat_ns") or {}).get("N"))


def lat_from_clat(data: dict) -> tuple[dict, tuple[str, ...]]:
    """`data` (fio 3.18's layout) with each direction's missing lat percentiles and bins taken from clat's
    where no submission latency was recorded; the note when any was (see the module's text)."""
    out, used = _sections_copied(data), False
    for d in _directions(out):
        lat, clat = d.get("lat_ns"), d.get("clat_ns") or {}
        if not d.get("io_bytes") or not isinstance(lat, dict) or "percentile" in lat or "percentile" not in clat \
                or _slat_recorded(d):
            continue
        lat["percentile"] = clat["percentile"]
        lat["zbench_from"] = "clat_ns"          # what the rows' lat_pct_source reports
        if "bins" in clat:
            lat["bins"] = clat["bins"]
        used = True
    return out, (LAT_FROM_CLAT,) if used else ()
