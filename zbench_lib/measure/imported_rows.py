"""An imported fio report's rows (`zbench import`, issue 49): one tidy row per group x direction, from its
raw file only.

An imported run is one group of one fio report: a file of fio's JSON or json+ from any release, a job's
output or a controller's (`fio --client`, with its "All clients" entry), copied unchanged into the
attempt's ``import/``; meta.json's ``import`` names the file and the group. The store derives its rows
and its latency bins from that copy, as it derives a measured run's from its raw files, so `zbench
verify` rebuilds an imported sweep like any other.

- **The report** is read into fio 3.18's key layout (`fio_layout`: fio 2.x's µs, the counts older
  releases did not print) and each job's rows come from `fio_parse.parse_fio_json`, as every run's.
  Where fio recorded no submission latency (a sync engine) and printed no lat percentiles, clat's are
  its lat's (`fio_layout.lat_from_clat`; `lat_pct_source` says which a row has).
- **Jobs of one group ran together** (fio starts a new group only at ``stonewall`` or ``new_group``):
  numjobs without group_reporting, or several job sections, are one measurement, merged per direction
  as group_reporting merges them: I/O counts, bytes and rates summed (each job's rate over its own
  runtime), the longest runtime, means weighted by the I/O counts, the standard deviation of the union
  (fio's own S / (N - 1)), the extremes of all; the lat percentiles read from the jobs' summed json+
  bins (`fio_hist`), never averaged: without bins, several jobs' percentiles are left empty and
  ``tail_not_judged`` says why. Jobs of a group that differ in what they ran (rw, block size, depth,
  engine) are refused: one row would mix two workloads.
- **A controller's report**: each client's entry is a job of its group (``clients`` counts them); fio's
  "All clients" entry is not summed in but checked against the sum
  (`client_aggregate.check_all_clients`: ``client_fio_sum_agrees``, what fio's own figures allow).
- **Truth checks** run as on any run (`truth.truth_checks`), with no counters and no context: every
  check that needs the pool's, the devices' or the lab's layers is not judged, with its reason;
  not_steady is judged where fio's own ``steadystate`` ran.

Pure: a report's text or an attempt directory in, records out; never a host.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from zbench_lib.core.errors import ZbenchError
from zbench_lib.core.sizes import format_size, parse_size
from zbench_lib.measure.client_aggregate import check_all_clients, sum_bins
from zbench_lib.measure.fio_client_json import parse_client_json
from zbench_lib.measure.fio_hist import judge_run_tails, percentile_of, run_histograms
from zbench_lib.measure.fio_layout import current_layout, entries, lat_from_clat
from zbench_lib.measure.fio_parse import ALL_CLIENTS, DIRECTIONS, PERCENTILES, job_options, load_fio_json, \
    parse_fio_json
from zbench_lib.measure.run_context import RunFacts
from zbench_lib.measure.truth import flag_columns, truth_checks

IMPORT_DIR = "import"               # an imported attempt's copy of the fio file, unchanged
# What one group of jobs ran, the same in every job of it; the configuration fio states (with the workload)
RAN = ("rw", "bs_bytes", "iodepth", "numjobs", "ioengine", "direct", "o_sync", "fio_size_bytes", "fio_runtime_s")
CONFIG = ("workload", "template", *RAN, "clients")
# fio's rw to the registry's workload of that kind (measure/workloads): what the analysis judges it by
_KIND = {"read": "seqread", "write": "seqwrite", "randread": "randread", "randwrite": "randwrite",
         "randrw": "mixed", "rw": "mixed", "readwrite": "mixed"}
# fio's options that say what a group ran (RAN's columns), and those that name or log a run rather than
# configure it; any other option (rate_iops, rwmixread, thinktime...) must agree between repetitions
RAN_OPTIONS = frozenset({"rw", "readwrite", "bs", "blocksize", "iodepth", "numjobs", "ioengine", "direct", "sync",
                         "size", "runtime"})
NAMING_OPTIONS = frozenset({"name", "description", "filename", "directory", "filename_format", "output", "randseed",
                            "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log", "log_avg_msec",
                            "log_hist_msec", "log_unix_epoch", "per_job_logs", "group_reporting", "stonewall",
                            "wait_for_previous", "new_group", "clat_percentiles", "lat_percentiles",
                            "slat_percentiles", "percentile_list", "status-interval"})
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "ms": 1e-3, "us": 1e-6}
NOT_MERGED = "{n} jobs without json+ bins: their percentiles are not merged (never averaged)"
NO_LAT = ("no lat percentiles in the file: fio ran without lat_percentiles=1 and recorded a submission latency, so "
          "clat is only the completion half (clat_p99_ns)")
NO_OPTIONS = "fio's options are not in the report (fio before 2.3): the configuration is what the path gives"


@dataclass(frozen=True)
class FioReport:
    """A fio report read for import: its jobs in fio 3.18's layout, what was translated, its groups."""
    data: dict                      # {"fio version", "global options", "jobs"}: a controller's entries as jobs
    version: str                    # fio's "fio version" ("fio-3.33"), "" if it does not say
    notes: tuple[str, ...]          # fio_layout's translations
    clients: dict | None            # a controller's report in that layout (client_stats), else None

    @property
    def jobs(self) -> list[dict]:
        return self.data["jobs"]

    def groups(self) -> tuple[int, ...]:
        """The groups whose jobs did I/O, in order."""
        return tuple(sorted({int(j.get("groupid", 0)) for j in self.jobs if _did_io(j)}))

    def group_jobs(self, group: int) -> list[dict]:
        return [j for j in self.jobs if int(j.get("groupid", 0)) == group and _did_io(j)]

    def options_recorded(self) -> bool:
        return bool(self.data.get("global options")) or any(j.get("job options") for j in self.jobs)


def _did_io(job: dict) -> bool:
    return any((job.get(d) or {}).get("io_bytes") for d in DIRECTIONS)


def _decode(text: str) -> dict:
    key = "client_stats" if '"client_stats"' in text and '"jobs"' not in text else "jobs"
    data = load_fio_json(text, key=key)
    if not isinstance(data[key], list) or not all(isinstance(j, dict) for j in data[key]):
        raise ZbenchError(f"fio JSON's {key!r} is not a list of jobs")
    return data


def _check_jobs(data: dict) -> None:
    """A report must hold a job that did I/O, in sections zbench reads, and no job fio saw fail."""
    jobs = [j for j in entries(data) if j.get("jobname") != ALL_CLIENTS]
    if not jobs:
        raise ZbenchError("fio JSON holds no job (an empty jobs list)")
    if any("mixed" in j for j in jobs):
        raise ZbenchError("fio JSON has a 'mixed' section (unified_rw_reporting): zbench reads read, write and "
                          "trim sections apart")
    failed = [j for j in jobs if int(j.get("error") or 0)]
    if failed:
        raise ZbenchError(f"job {failed[0].get('jobname')!r} ended with fio error {failed[0].get('error')}: "
                          "the run did not complete")
    if not any(_did_io(j) for j in jobs):
        raise ZbenchError("no job did I/O (every read, write and trim section is empty)")


def read_report(text: str) -> FioReport:
    """A fio report's text (warning lines before the JSON are skipped) read for import; ZbenchError in one
    line when it is not one: no JSON, invalid or truncated JSON, no job, no I/O, a job fio saw fail."""
    data = _decode(text)
    _check_jobs(data)
    data, notes = current_layout(data)
    # fio's "All clients" entry is checked against the clients' own lat figures, not clat's stand-ins
    clients = data if "client_stats" in data else None
    data, clat = lat_from_clat(data)
    jobs = [j for j in entries(data) if j.get("jobname") != ALL_CLIENTS]
    shaped = {"fio version": data.get("fio version"), "global options": data.get("global options") or {},
              "jobs": jobs}
    return FioReport(shaped, str(data.get("fio version") or ""), tuple(sorted(set(notes + clat))), clients)


def _seconds(value) -> float | None:
    """fio's time option ('60', '1m', '500ms') in seconds; None when absent or unreadable."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|us|[smhd]?)\s*", str(value)) if value is not None else None
    return float(m.group(1)) * _SECONDS[m.group(2)] if m else None


def _size(value) -> int | None:
    try:
        return parse_size(str(value)) if value is not None else None
    except ZbenchError:
        return None                 # fio's '10%' of a device: not a size of its own


def _ran(report: FioReport, job: dict, row: dict) -> dict:
    """What one job ran: its row's rw, block size, depth, jobs and path, its size and runtime options."""
    opts = job_options(report.data, job)
    if not report.options_recorded():
        return dict.fromkeys(RAN)
    return {**{k: row[k] for k in RAN[:7]}, "fio_size_bytes": _size(opts.get("size")),
            "fio_runtime_s": _seconds(opts.get("runtime"))}


def _job_rows(report: FioReport, jobs: list[dict]) -> list[tuple[dict, list[dict], dict]]:
    """(job, its rows, what it ran) of each job, through fio_parse as every run's rows."""
    meta = {k: v for k, v in report.data.items() if k != "jobs"}
    out = []
    for job in jobs:
        rows = parse_fio_json({**meta, "jobs": [job]})
        out.append((job, rows, _ran(report, job, rows[0])))
    return out


def _same_run(group: int, per_job: list) -> dict:
    """What every job of the group ran; ZbenchError naming the first setting two jobs differ in."""
    first = per_job[0][2]
    for _, _, ran in per_job[1:]:
        differ = [k for k in RAN if ran[k] != first[k]]
        if differ:
            k = differ[0]
            raise ZbenchError(f"jobs of group {group} differ in {k} ({first[k]}, {ran[k]}): one row would mix two "
                              "workloads; give each its own group (stonewall) or its own file")
    return first


def _weighted(values, weights) -> float:
    pairs = [(v, w) for v, w in zip(values, weights) if w and not math.isnan(v)]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else math.nan


def _pooled_sd(means, sds, counts, mean: float) -> float:
    """The standard deviation of the jobs' latencies together, as fio computes one (S / (N - 1))."""
    parts = [(m, s, n) for m, s, n in zip(means, sds, counts) if n and not (math.isnan(m) or math.isnan(s))]
    total = sum(n for _, _, n in parts)
    if total < 2:
        return math.nan
    spread = sum((n - 1) * s * s + n * (m - mean) ** 2 for m, s, n in parts)
    return math.sqrt(spread / (total - 1))


def _latency(rows: list[dict], bins: list[tuple[int, int]]) -> dict:
    """The merged latency columns of one direction's job rows (see the module's text)."""
    ios = [r["total_ios"] for r in rows]
    mean = _weighted([r["lat_mean_ns"] for r in rows], ios)
    out = dict(lat_mean_ns=mean, lat_stddev_ns=_pooled_sd([r["lat_mean_ns"] for r in rows],
                                                          [r["lat_stddev_ns"] for r in rows], ios, mean),
               lat_min_ns=min(r["lat_min_ns"] for r in rows), lat_max_ns=max(r["lat_max_ns"] for r in rows),
               clat_mean_ns=_weighted([r["clat_mean_ns"] for r in rows], ios),
               slat_mean_ns=_weighted([r["slat_mean_ns"] for r in rows], ios),
               clat_p99_ns=math.nan, sync_lat_p99_ns=math.nan)
    for key, name in PERCENTILES.items():
        out[f"lat_{name}_ns"] = percentile_of([k for k, _ in bins], [c for _, c in bins], Fraction(key) / 100) \
            if bins else math.nan
    return out


def _merge(direction: str, per_job: list, bins: list[tuple[int, int]]) -> tuple[dict, str]:
    """One direction's row of a group's jobs, and why its percentiles are empty ("" when they are not)."""
    rows = [r for _, job_rows, _ in per_job for r in job_rows if r["direction"] == direction]
    if len(rows) == 1:
        return dict(rows[0]), ""
    syncs = [int((job.get("sync") or {}).get("total_ios") or 0) for job, job_rows, _ in per_job
             if any(r["direction"] == direction for r in job_rows)]
    head = rows[0]
    attained = [r["ss_attained"] for r in rows if r["ss_attained"] is not None]
    row = {**head, "iops": sum(r["iops"] for r in rows), "bw_bytes_s": sum(r["bw_bytes_s"] for r in rows),
           "io_bytes": sum(r["io_bytes"] for r in rows), "total_ios": sum(r["total_ios"] for r in rows),
           "runtime_ms": max(r["runtime_ms"] for r in rows), **_latency(rows, bins),
           "sync_lat_mean_ns": _weighted([r["sync_lat_mean_ns"] for r in rows], syncs),
           "usr_cpu_pct": _weighted([r["usr_cpu_pct"] for r in rows], [1] * len(rows)),
           "sys_cpu_pct": _weighted([r["sys_cpu_pct"] for r in rows], [1] * len(rows)),
           "ss_attained": all(attained) if attained else None, "error": max(r["error"] for r in rows)}
    return row, "" if bins else NOT_MERGED.format(n=len(rows))


def workload_of(ran: dict, jobname, fsync: bool = False) -> tuple[str, str | None]:
    """(workload, template) of what a group ran: the registry's kind of its rw (with its O_SYNC mode, or an
    fsync per write) and the block size, "randread-4k" as the shipped specs name theirs; fio's rw, or its
    job's name, otherwise."""
    rw, sync = ran.get("rw"), ran.get("o_sync") not in (None, "none")
    kind = _KIND.get(str(rw))
    if kind == "randwrite" and (sync or fsync):
        kind = "randwrite-sync"
    elif kind == "seqwrite" and fsync:
        kind = "fsync-heavy"
    name = kind or (str(rw) if rw else str(jobname))
    return (f"{name}-{format_size(ran['bs_bytes']).lower()}" if ran.get("bs_bytes") else name), kind


def _lat_source(jobs: list[dict], direction: str) -> str:
    lats = [(j.get(direction) or {}).get("lat_ns") or {} for j in jobs]
    if any("zbench_from" in lat for lat in lats):
        return "clat"
    return "lat" if any("percentile" in lat for lat in lats) else ""


def _client_check(report: FioReport, group: int, direction: str) -> bool | None:
    """fio's "All clients" entry against the clients' sum (True, False, or None: not judged)."""
    stats = parse_client_json(report.clients)
    dirs = [d for j in stats.jobs if j.groupid == group and (d := j.direction(direction)) is not None]
    return check_all_clients(stats, direction, dirs, sum_bins(d.bins for d in dirs)).agree


def _endpoints(jobs: list[dict]) -> int:
    return len({(j.get("hostname"), j.get("port")) for j in jobs})


def group_rows(report: FioReport, group: int) -> list[dict]:
    """The rows of one group of a report: one per direction that did I/O, with what it ran, the import's
    columns (workload, template, fio_jobs, lat_pct_source, import_notes; clients for a controller's) and
    the percentiles its I/O count cannot support blanked (`fio_hist.judge_run_tails`)."""
    jobs = report.group_jobs(group)
    if not jobs:
        raise ZbenchError(f"group {group} has no job that did I/O")
    per_job = _job_rows(report, jobs)
    ran = _same_run(group, per_job)
    fsync = str(job_options(report.data, jobs[0]).get("fsync", "0")).strip() not in ("0", "")
    workload, template = workload_of(ran, jobs[0].get("jobname"), fsync)
    hist = run_histograms({"jobs": jobs}) if len(jobs) > 1 else []     # one job's row keeps fio's own figures
    notes = "; ".join([*report.notes, *([] if report.options_recorded() else [NO_OPTIONS])])
    out, why = [], []
    for direction in (d for d in DIRECTIONS if any(r["direction"] == d for _, rows, _ in per_job for r in rows)):
        bins = [(h["bin_ns"], h["count"]) for h in hist if h["direction"] == direction]
        row, short = _merge(direction, per_job, bins)
        source = _lat_source(jobs, direction)
        row.update(ran, workload=workload, template=template, fio_jobs=len(per_job), groupid=group,
                   lat_pct_source=source, import_notes=notes)
        if report.clients is not None:
            row.update(clients=_endpoints(jobs), client_fio_sum_agrees=_client_check(report, group, direction))
        out.append(row)
        why.append(short if source else NO_LAT)
    return _judged(out, why, jobs)


def _judged(rows: list[dict], why: list[str], jobs: list[dict]) -> list[dict]:
    """`judge_run_tails` on a group's merged rows (their sync calls counted over the group's jobs), each
    row's `tail_not_judged` led by why its percentiles are empty beyond its I/O count (`why`)."""
    syncs = sum(int((j.get("sync") or {}).get("total_ios") or 0) for j in jobs)
    data = {"jobs": [{"jobname": r["jobname"], "groupid": r["groupid"], "sync": {"total_ios": syncs}} for r in rows]}
    out = []
    for row, short in zip(judge_run_tails(rows, data), why):
        row["tail_not_judged"] = "; ".join(t for t in (short, row["tail_not_judged"]) if t)
        out.append(row)
    return out


def has_lat_bins(report: FioReport, group: int) -> bool:
    """Whether a group's jobs hold json+ lat bins (after `fio_layout.lat_from_clat`): a latency histogram."""
    return any(((j.get(d) or {}).get("lat_ns") or {}).get("bins") for j in report.group_jobs(group) for d in DIRECTIONS)


def other_options(report: FioReport, group: int) -> dict:
    """The options of a group's first job beyond what it ran and how it was named (RAN_OPTIONS,
    NAMING_OPTIONS): repetitions of one configuration must agree in them."""
    jobs = report.group_jobs(group)
    opts = job_options(report.data, jobs[0]) if jobs else {}
    return {k: v for k, v in sorted(opts.items()) if k not in RAN_OPTIONS | NAMING_OPTIONS}


def group_config(report: FioReport, group: int) -> dict:
    """The configuration fio states for a group (CONFIG: its workload and what it ran; None where the
    report does not say), the same in each of its rows."""
    row = group_rows(report, group)[0]
    return {k: row.get(k) for k in CONFIG}


# -- an imported attempt in the store --------------------------------------------------------------------

def is_imported_run(attempt_dir) -> bool:
    return (Path(attempt_dir) / IMPORT_DIR).is_dir()


def _attempt_report(attempt_dir: Path, meta: dict) -> tuple[FioReport, int]:
    record = meta["import"]
    return read_report((Path(attempt_dir) / record["file"]).read_bytes().decode(errors="replace")), int(record["group"])


def imported_rows(attempt_dir, meta: dict) -> list[dict]:
    """Rows of an imported run, rebuilt from its copy of the fio file (used by `rows.parse_results`):
    `group_rows`, the truth checks' columns (no counters: not judged but where fio's figures allow) and
    the run's ids."""
    report, group = _attempt_report(Path(attempt_dir), meta)
    return run_rows(group_rows(report, group), meta)


def run_rows(rows: list[dict], meta: dict) -> list[dict]:
    """A group's rows (`group_rows`) as an imported run's: the truth checks' columns and the run's ids."""
    flags = flag_columns(truth_checks(rows, {}, RunFacts.of()))
    env = meta["import"].get("environment") or {}
    ids = {"sweep_id": meta.get("sweep"), "config_id": meta.get("cell_id"), "imported": True,
           "import_source": meta["import"]["source"],
           "import_environment": ", ".join(f"{k} {v}" for k, v in env.items()) + " (as given)" if env else
           "not recorded"}
    return [{**r, **flags, **ids} for r in rows]


def imported_histograms(attempt_dir) -> list[dict]:
    """``{direction, bin_ns, count}`` of an imported run: its group's json+ lat bins summed (none without)."""
    meta = json.loads((Path(attempt_dir) / "meta.json").read_text())
    report, group = _attempt_report(Path(attempt_dir), meta)
    return run_histograms({"jobs": report.group_jobs(group)})
