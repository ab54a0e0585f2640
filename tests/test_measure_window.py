"""The measurement window of a write whose fio exited long after its last write (measure/window.py).

Checked on a real run of the volblocksize example: 4k random writes on a 4K zvol on raidz2 of six,
15 s ramp and 150 s window, after which fio took about 98 s to exit while the zvol's own
counters (the device fio wrote to, sampled on the same clock) were already quiet.
"""

import json
import re
from pathlib import Path

import pytest

from zbench_lib.analysis.figures.timeline import run_files
from zbench_lib.measure.rows import derive_rows, run_record
from zbench_lib.measure.window import fio_start, measurement_window, wrote

VBS = Path(__file__).resolve().parents[1] / "data" / "examples" / "volblocksize"
LATE = "c8680ae-pr1-r02"        # raidz2 1x6, 4K, randwrite


def _zvol_writes(attempt: Path):
    """(sample time, writes completed on zd* since the previous sample) from the raw diskstats."""
    out, t, total, prev = [], None, 0, None
    for line in (attempt / "counters" / "diskstats.txt").read_text().splitlines() + ["@@ end"]:
        if line.startswith("@@"):
            if t is not None:
                out.append((t, 0 if prev is None else total - prev))
                prev = total
            t, total = (float(line.split()[1]) if line != "@@ end" else None), 0
            continue
        p = line.split()
        if len(p) > 10 and re.fullmatch(r"zd\d+", p[2]):
            total += int(p[7])
    return out


def test_a_late_exit_leaves_the_window_on_the_writes():
    with run_files(VBS, LATE) as attempt:
        old = json.loads((attempt / "run.json").read_text())
        fio = json.loads((attempt / "fio" / "fio.json").read_text())
        rec, rows = run_record(attempt)
        busy = [t for t, n in _zvol_writes(attempt) if n > 0]
        derived, _ = derive_rows(attempt)
    assert wrote(rows) and rec["ramp_s"] == 15
    stamp = fio["timestamp_ms"] / 1000
    # fio exited ~98 s after its window: the zvol took its last write ~98 s before the stamp
    assert rec["fio_exit_lag_s"] == pytest.approx(stamp - rec["t_end"], abs=0.05) and rec["fio_exit_lag_s"] > 90
    assert stamp - busy[-1] > 90
    # the window opens a ramp after fio's start and ends with the writes (within a sample or two)
    assert old["t0"] <= fio_start(old["t0"], fio) < old["t0"] + 1
    assert rec["t_start"] == pytest.approx(fio_start(old["t0"], fio) + 15)
    assert abs(rec["t_end"] - busy[-1]) < 3
    # the exit-stamp window had more than half of its 150 s after the last write
    assert old["t_end"] - busy[-1] > 90
    # counted over the writes, the disks wrote 3x fio's bytes, what a 4K block takes on raidz2 of
    # six (one data sector and two parity); the exit-stamp window had said 1.50x
    assert derived[0]["write_amplification"] == pytest.approx(3.0, rel=0.03)


def test_reads_keep_the_exit_stamp_and_a_missing_stamp_falls_back():
    fio = {"timestamp_ms": 100_000, "jobs": [{"elapsed": 19}]}
    assert measurement_window(81.2, fio, 3, 15, writes=False, fallback_end=0) == (85.0, 100.0)
    assert measurement_window(81.2, fio, 3, 15, writes=True, fallback_end=0) == pytest.approx((84.2, 99.2))
    assert fio_start(80.0, fio) == 81.0                        # the stamp's bound is the later one
    assert measurement_window(None, {"jobs": []}, 3, 15, writes=True, fallback_end=50) == (35, 50)
