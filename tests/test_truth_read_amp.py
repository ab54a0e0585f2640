"""read_amplification: the expected factor by hand, and the check on the scaling example's raw runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.measure import truth
from zbench_lib.measure.read_amp import READ_AMP_MARGIN, expected_device_reads
from zbench_lib.measure.rows import parse_results
from zbench_lib.measure.truth import flag_columns, truth_checks
from zbench_lib.sweeps.publish import unpack_raw

MiB = 1024 * 1024
KiB = 1024
SCALING = Path(__file__).resolve().parent.parent / "data" / "examples" / "scaling"


def row(direction="read", rw="randread", bs=4 * KiB, nbytes=400 * MiB):
    return dict(direction=direction, rw=rw, bs_bytes=bs, io_bytes=nbytes, total_ios=nbytes // bs if bs else 0)


def check(rows, dev_read, block=16 * KiB, **ctx):
    return truth_checks(rows, {"dev_read_bytes": dev_read}, {"block_bytes": block, **ctx})["read_amplification"]


@pytest.mark.parametrize("rw, bs, block, factor", [
    ("randread", 4 * KiB, 16 * KiB, 4.0),          # a 4k read fetches its whole 16K block
    ("randread", 4 * KiB, 128 * KiB, 32.0),
    ("randread", 16 * KiB, 16 * KiB, 1.0),
    ("randread", 1 * MiB, 16 * KiB, 1.0),          # aligned whole blocks
    ("randread", 24 * KiB, 16 * KiB, 32 / 24),     # two blocks for 24K
    ("randrw:8", 4 * KiB, 16 * KiB, 4.0),          # fio's rw modifiers are ignored
    ("read", 1 * MiB, 16 * KiB, 1.0),              # sequential: each block once
    ("read", 4 * KiB, 128 * KiB, 32.0),            # ... at most once per small read when not cached
])
def test_expected_factor_from_block_size(rw, bs, block, factor):
    assert expected_device_reads([row(rw=rw, bs=bs)], block) / (400 * MiB) == pytest.approx(factor)


def test_partial_block_writes_add_their_reads():
    # 70/30 random 4k on 16K blocks: every write of 4k reads its 16K block first (when not cached)
    rows = [row(rw="randrw", nbytes=70 * MiB), row("write", rw="randrw", nbytes=30 * MiB)]
    expected = expected_device_reads(rows, 16 * KiB)
    assert expected == pytest.approx(70 * MiB * 4 + (30 * MiB // (4 * KiB)) * 16 * KiB)
    # sequential partial writes read each block once at most; whole-block writes read nothing
    assert expected_device_reads([row("write", rw="write", nbytes=30 * MiB)], 16 * KiB) == 30 * MiB
    assert expected_device_reads([row("write", rw="randwrite", bs=16 * KiB)], 16 * KiB) == 0
    assert math.isnan(expected_device_reads([row(bs=None)], 16 * KiB))


def test_flagged_beyond_the_margin_and_not_judged_without_what_it_needs():
    ok = check([row()], 400 * MiB * 4.2)
    assert ok["flag"] is False and ok["value"] == pytest.approx(4.2) and ok["expected"] == pytest.approx(4)
    high = check([row(rw="read", bs=MiB)], 400 * MiB * 1.9)
    assert high["flag"] is True and "1.90 x fio's bytes, 1.00 expected" in high["reason"]
    assert check([row(rw="read", bs=MiB)], 400 * MiB * (READ_AMP_MARGIN - 0.01))["flag"] is False
    # below expectation is not this check's matter (cache_served judges reads that missed the disks)
    assert check([row()], 10 * MiB)["flag"] is False
    for rows, dev, ctx, reason in [
        ([row()], math.nan, {}, "no device counters"),
        ([row()], 400 * MiB, {"block_bytes": None}, "block size (volblocksize / recordsize) was not recorded"),
        ([row(bs=None)], 400 * MiB, {}, "fio's block size is unknown"),
        ([row(nbytes=4 * MiB)], 16 * MiB, {}, "too few reads to judge"),
        ([row("write", rw="randwrite")], 400 * MiB, {}, "no reads to judge: does not apply"),
    ]:
        got = check(rows, dev, **ctx)
        assert got["flag"] is None and reason in got["reason"], got
    cols = flag_columns({"read_amplification": high})
    assert cols["flag_read_amplification"] is True and cols["read_amplification"] == pytest.approx(1.9)
    assert cols["read_amplification_expected"] == 1.0 and cols["truth_flags"] == "read_amplification"


# --- the scaling example: bimodal sequential reads that nothing flagged ---------------------------

CELLS = {"c62159e": "stripe(4) seqread", "ca850d6": "mirror(4) seqread", "c2a4bae": "stripe(4) randread-4k"}


@pytest.fixture(scope="module")
def scaling_runs(tmp_path_factory):
    raw = unpack_raw(SCALING, tmp_path_factory.mktemp("scaling"))
    out = {}
    for attempt in sorted(raw.glob("*/attempt-*")):
        if attempt.parent.name[:7] in CELLS and (attempt / "COMPLETE").exists():
            meta = json.loads((attempt / "meta.json").read_text())
            res = parse_results(attempt, meta)[0]       # derive_rows' row and the store's extras
            out[attempt.parent.name] = (res, res)
    return out


def test_scaling_example_sequential_reads_that_read_twice_are_flagged(scaling_runs):
    seq = {run: r for run, (r, _) in scaling_runs.items() if run[:7] in ("c62159e", "ca850d6")}
    assert len(seq) == 10 and {r["read_amplification_expected"] for r in seq.values()} == {1.0}
    flagged = {run for run, r in seq.items() if r["flag_read_amplification"]}
    # stripe(4): disks read 1.83x and 1.91x fio's bytes at 26 IOPS; 1.04-1.14x at 51-58 IOPS
    # mirror(4): 1.89x, 1.34x, 1.69x at 22-26 IOPS; 1.02x and 0.94x at 59-64 IOPS
    assert flagged == {"c62159e-r01", "c62159e-r04", "ca850d6-r01", "ca850d6-r03", "ca850d6-r04"}
    for cell in ("c62159e", "ca850d6"):    # in each cell the flagged runs are the slow mode
        slow = max(seq[r]["iops"] for r in flagged if r.startswith(cell))
        assert slow < 0.6 * min(seq[r]["iops"] for r in set(seq) - flagged if r.startswith(cell))
    assert all(seq[r]["read_amplification"] > 1.3 for r in flagged)
    assert all(seq[r]["read_amplification"] < 1.15 for r in set(seq) - flagged)
    assert all(seq[r]["truth_flags"] == "read_amplification" for r in flagged)


def test_scaling_example_random_reads_match_the_block_model(scaling_runs):
    rnd = [r for run, (r, _) in scaling_runs.items() if run.startswith("c2a4bae")]
    assert len(rnd) == 3
    for r in rnd:   # 4k reads of 16K blocks: 3.76-3.84x against 4x expected
        assert r["flag_read_amplification"] is False and r["read_amplification_expected"] == 4.0
        assert 3.5 < r["read_amplification"] < 4.0


def test_rows_of_a_real_run_carry_three_valued_flags(scaling_runs, tmp_path):
    r, res = scaling_runs["c62159e-r01"]
    flags = {c: r[c] for c in r if c.startswith("flag_")}
    assert set(flags) == {f"flag_{k}" for k in truth.CHECKS}
    assert set(flags.values()) <= {True, False, None}
    unjudged = [c[5:] for c, v in flags.items() if v is None]
    assert r["checks_not_judged"] == len(unjudged) and r["checks_judged"] == len(flags) - len(unjudged)
    assert [part.split(":")[0] for part in r["not_judged"].split("; ")] == unjudged
    # recorded before the controller's load was: no QEMU pid, not judged; 12 s at 26 IOPS: not judged
    assert r["flag_host_contention"] is None and r["flag_not_steady"] is None
    assert r["flagged"] is True and r["truth_flags"] == "read_amplification"
    # parse_results: the pool the run ran on, and its replicate (1 before replicates existed)
    assert (res["pool_id"], res["pool_replicate"]) == ("p04", 1)
    df = pd.DataFrame([res for _, res in scaling_runs.values()])
    df.to_parquet(tmp_path / "r.parquet", index=False)
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert back["flag_host_contention"].isna().all() and back["flag_read_amplification"].notna().all()
