"""fio's latency histogram (``--output-format=json+``) and what an I/O count supports.

fio counts every latency into a log-linear histogram (stat.h): values below
128 ns have a bin of their own (1 ns wide); above, each power of two [2^m, 2^(m+1)) is cut
into 64 bins of 2^(m-6) ns, so a bin is at most 1/64 (1.6%) of its lower edge wide and at
least 1/128 (0.8%), and fio's own value for a bin, its midpoint, is within 0.8% of any
latency in it. 29 groups reach 2^34 ns (17.2 s); a longer latency is counted in the last
bin, whose upper edge is then unknown (``inf`` here). json+ prints each non-empty bin as
``"<midpoint ns>": count`` under ``clat_ns.bins`` and, with ``lat_percentiles=1`` (every zbench
job), under ``lat_ns.bins``: the issue-to-completion latency, the one zbench reports and merges
(fio_parse says why clat is not: on a ZFS file libaio's submission holds most of the wait).
Plain json has no bins.

fio reads a percentile from its bins as the midpoint of the first bin whose cumulative count
reaches q x N (stat.c ``calc_clat_percentiles``): ``percentile_of`` does the same, so from one
run's bins it gives fio's own percentile list, and from summed bins the percentile of the
merged I/Os (docs/methods.md §18).

A q-quantile is judged only when at least ``BEYOND`` (10) I/Os are expected beyond it, i.e.
N >= 10 / (1 - q) (``min_ios``): p99 1,000, p99.9 10,000, p99.99 100,000 I/Os. Below that the
"percentile" is one of the few largest latencies, in the limit the maximum. ``judge_run_tails``
applies the rule to a run's fio rows: a percentile column that its I/O count cannot support
is blanked (NaN) and ``tail_not_judged`` says why.

Pure: fio's JSON (a dict) or an attempt directory in, records out; never a host.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np

from zbench_lib.measure.fio_parse import ALL_CLIENTS, DIRECTIONS, PERCENTILES, load_fio_json

if TYPE_CHECKING:  # imported where used: spec validation reaches this module and needs no pandas
    import pandas as pd

PLAT_BITS = 6                       # fio stat.h FIO_IO_U_PLAT_BITS
PLAT_VAL = 1 << PLAT_BITS           # FIO_IO_U_PLAT_VAL: bins per power of two
PLAT_GROUP_NR = 29                  # FIO_IO_U_PLAT_GROUP_NR
PLAT_NR = PLAT_GROUP_NR * PLAT_VAL  # FIO_IO_U_PLAT_NR: 1856 bins
MAX_REL_WIDTH = 1 / PLAT_VAL        # widest bin over its lower edge, above 128 ns
BEYOND = 10                         # I/Os expected beyond a quantile for it to be judged
HIST_COLUMNS = ["run_id", "attempt", "direction", "bin_ns", "count"]
NO_HISTOGRAM = "no histogram in raw (run before json+)"

# Percentile columns of the fio rows, their quantile and the I/O count that supports them.
_LAT = {f"lat_{name}_ns": Fraction(key) / 100 for key, name in PERCENTILES.items()}
_CLAT = {"clat_p99_ns": Fraction(99, 100)}     # the completion half, kept beside lat to show the split
_SYNC = {"sync_lat_p99_ns": Fraction(99, 100)}
PERCENTILE_COLUMNS = {**_LAT, **_CLAT}         # the percentile columns of a direction's I/Os, and their quantile


@cache
def min_ios(q) -> int:
    """I/Os a q-quantile needs: BEYOND / (1 - q), so that 10 I/Os are expected beyond it.

    >>> [min_ios(q) for q in (0.5, 0.99, 0.999, 0.9999)]
    [20, 1000, 10000, 100000]
    """
    q = _fraction(q)
    if not 0 < q < 1:
        raise ValueError(f"a quantile is between 0 and 1, got {q}")
    return math.ceil(BEYOND / (1 - q))


def percentile_name(q) -> str:
    """'p99', 'p99.9', 'p99.99', 'p50' for a quantile."""
    pct = _fraction(q) * 100
    text = f"{float(pct):.4f}".rstrip("0").rstrip(".")
    return f"p{text}"


def _fraction(q) -> Fraction:
    return q if isinstance(q, Fraction) else Fraction(str(q)) if isinstance(q, str) else \
        Fraction(q).limit_denominator(10 ** 9)


def bin_index(value_ns):
    """fio's ``plat_val_to_idx``: the bin index of latencies (ns), vectorised."""
    v = np.asarray(value_ns, dtype=np.int64)
    msb = np.vectorize(lambda x: max(int(x).bit_length() - 1, 0), otypes=[np.int64])(v) if v.size else v
    error_bits = np.maximum(msb - PLAT_BITS, 0)
    idx = (error_bits + 1) * PLAT_VAL + ((v >> error_bits) & (PLAT_VAL - 1))
    return np.minimum(np.where(msb <= PLAT_BITS, v, idx), PLAT_NR - 1)


def bin_edges(value_ns) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) edges in ns of the bins holding `value_ns` (a bin key or any latency).

    A bin holds latencies lower <= x < upper; the last bin also holds everything longer
    than fio's range, so its upper edge is inf.
    """
    idx = bin_index(value_ns)
    error_bits = np.maximum((idx >> PLAT_BITS) - 1, 0)
    low = np.where(idx < 2 * PLAT_VAL, idx,
                   (np.int64(1) << (error_bits + PLAT_BITS)) + (idx % PLAT_VAL) * (np.int64(1) << error_bits))
    width = np.where(idx < 2 * PLAT_VAL, 1, np.int64(1) << error_bits)
    high = np.where(idx == PLAT_NR - 1, np.inf, (low + width).astype(float))
    return low.astype(float), high


def _sorted_cum(bin_ns, counts) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty bins in ascending order and their cumulative counts."""
    b, c = np.asarray(bin_ns, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    keep = c > 0
    b, c = b[keep], c[keep]
    order = np.argsort(b)
    return b[order], np.cumsum(c[order])


def rank_of(q, n: int) -> int:
    """The 1-based rank fio reads the q-quantile of `n` I/Os at: ceil(q x n), in exact integers.

    >>> rank_of(0.99, 2000), rank_of(0.99, 2001), rank_of(0.5, 3)
    (1980, 1981, 2)
    """
    q = _fraction(q)
    return -(-q.numerator * int(n) // q.denominator)


def rank_bins(bin_ns, counts, ranks) -> np.ndarray:
    """The keys of the bins holding the I/Os of 1-based `ranks` (1 the fastest), in a histogram's order.

    A rank below 1 or past the last I/O has no bin: NaN.

    >>> rank_bins([100, 200, 300], [50, 45, 5], [1, 50, 51, 100, 101]).tolist()
    [100.0, 100.0, 200.0, 300.0, nan]
    """
    b, cum = _sorted_cum(bin_ns, counts)
    r = np.asarray(ranks, dtype=np.int64)
    idx = np.searchsorted(cum, r, side="left")       # the first bin whose cumulative count reaches the rank
    ok = (r >= 1) & (idx < len(b))
    return np.where(ok, b[np.minimum(idx, max(len(b) - 1, 0))] if len(b) else 0, np.nan).astype(float)


def percentile_of(bin_ns, counts, q) -> float:
    """The q-quantile of a histogram as fio reads it: the key of the first bin whose cumulative
    count reaches q x N (exact integer arithmetic; NaN for an empty histogram).

    >>> percentile_of([100, 200, 300], [50, 45, 5], 0.95)
    200.0
    """
    _, cum = _sorted_cum(bin_ns, counts)
    if not len(cum):
        return math.nan
    return float(rank_bins(bin_ns, counts, [rank_of(q, int(cum[-1]))])[0])


def run_histograms(data) -> list[dict]:
    """``{direction, bin_ns, count}`` of a run's latencies (issue to completion: ``lat_ns``), its
    jobs' bins summed.

    `data` is fio's JSON (dict or text). A direction that did I/O without lat bins (plain json)
    gives no records, so an old run has none.
    """
    if isinstance(data, (str, bytes)):
        data = load_fio_json(data.decode() if isinstance(data, bytes) else data)
    merged: dict[str, dict[int, int]] = {}
    for job in data.get("jobs", []):
        for direction in DIRECTIONS:
            d = job.get(direction) or {}
            bins = (d.get("lat_ns") or {}).get("bins") if d.get("io_bytes") else None
            if not bins:
                continue
            into = merged.setdefault(direction, {})
            for key, count in bins.items():
                if int(count):
                    into[int(key)] = into.get(int(key), 0) + int(count)
    return [dict(direction=d, bin_ns=k, count=n) for d in DIRECTIONS if d in merged
            for k, n in sorted(merged[d].items())]


def attempt_histograms(attempt_dir) -> list[dict]:
    """`run_histograms` of an attempt directory's ``fio/fio.json`` (none if it has no fio.json); of a
    clients run (issue 30), every client's bins summed, as its aggregate's percentiles are read."""
    path = Path(attempt_dir) / "fio" / "fio.json"
    clients = Path(attempt_dir) / "clients" / "fio.json"
    if not path.is_file() and clients.is_file():
        data = load_fio_json(clients.read_text(), key="client_stats")
        return run_histograms({"jobs": [e for e in data["client_stats"] if e.get("jobname") != ALL_CLIENTS]})
    return run_histograms(path.read_text()) if path.is_file() else []


def _sync_counts(data) -> dict:
    """{(jobname, groupid): sync I/O count} of fio's JSON: the count a sync latency percentile has."""
    out = {}
    for job in data.get("jobs", []):
        sync = job.get("sync") or {}
        out[(job.get("jobname"), job.get("groupid"))] = int(sync.get("total_ios") or 0)
    return out


def judge_run_tails(rows: list[dict], data: dict | None = None) -> list[dict]:
    """fio rows with each percentile its I/O count cannot support blanked, and ``tail_not_judged``.

    lat and clat percentiles count the direction's I/Os (``total_ios``); the sync latency p99
    counts the job's fsync/fdatasync calls (from `data`, fio's JSON; unknown without it, then
    judged on total_ios). ``tail_not_judged`` is "" when every percentile is judged, else e.g.
    "3000 I/Os: p99.9 needs 10000, p99.99 needs 100000".
    """
    syncs = _sync_counts(data) if data else {}
    out = []
    for row in rows:
        row, ios = dict(row), int(row.get("total_ios") or 0)
        short = {}
        for col, q in {**_LAT, **_CLAT}.items():
            if col in row and ios < min_ios(q):
                row[col] = math.nan
                short[percentile_name(q)] = min_ios(q)
        text = f"{ios} I/Os: " + ", ".join(f"{p} needs {n}" for p, n in short.items()) if short else ""
        if "sync_lat_p99_ns" in row and not _isnan(row["sync_lat_p99_ns"]):
            n_sync = syncs.get((row.get("jobname"), row.get("groupid")), ios)
            if n_sync < min_ios(_SYNC["sync_lat_p99_ns"]):
                row["sync_lat_p99_ns"] = math.nan
                text += ("; " if text else "") + f"{n_sync} syncs: sync p99 needs {min_ios(_SYNC['sync_lat_p99_ns'])}"
        row["tail_not_judged"] = text
        out.append(row)
    return out


def judge_tail_frame(df: pd.DataFrame) -> pd.DataFrame:
    """`judge_run_tails` on a results table (one built before the rule): a copy with the
    percentiles blanked and `tail_not_judged`. Sync percentiles are judged on total_ios there."""
    import pandas as pd

    cols = [c for c in (*_CLAT, *_LAT, *_SYNC, "total_ios", "jobname", "groupid") if c in df]
    judged = pd.DataFrame(judge_run_tails(df[cols].to_dict("records")), index=df.index)
    out = df.copy()
    for c in (c for c in (*_CLAT, *_LAT, *_SYNC) if c in df):
        out[c] = judged[c].astype(float)
    out["tail_not_judged"] = judged["tail_not_judged"]
    return out


def _isnan(v) -> bool:
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return v is None
