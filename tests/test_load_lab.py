"""The load factor on the lab (issue 33 item 6): one pool, one workload, loads 0.5 and saturation,
3 s windows. The cell's probe is measured once and recorded, the loaded runs offer half of it
open loop (rate_iops, Poisson) and sustain it within fio's rate accuracy, the saturation runs stay
closed loop as before, and the probe is never a result row. The unit half is tests/test_load.py."""

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.analysis.stats.load_curves import load_curves
from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "load.yaml"
RATE_TOLERANCE = 0.10       # fio's Poisson rate over a 3 s window of ~900 I/Os: within 10% of the offer


def _job(sweep_dir: Path, run_id: str) -> str:
    (job,) = (sweep_dir / "raw" / run_id).glob("attempt-*/fio/job.fio")
    return job.read_text()


def test_half_of_saturation_is_offered_open_loop_from_the_cells_probe(lab_host, sweep_on_lab, tmp_path):
    res = sweep_on_lab(SPEC, tmp_path, "load")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "load"
    df = pd.read_parquet(sweep_dir / "results.parquet")
    assert len(df) == 2 * 2 and set(df["load"]) == {"0.5", "saturation"}     # the probe is no row
    events = [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]
    (probe,) = [e for e in events if e["event"] == "load probed"]             # once for the cell
    assert probe["iops"] > 0 and (sweep_dir / probe["path"] / "fio.json").is_file()
    assert "rate_iops" not in (sweep_dir / probe["path"] / "job.fio").read_text()

    loaded, closed = df[df["load"] == "0.5"], df[df["load"] == "saturation"]
    assert loaded["probe_iops"].eq(probe["iops"]).all()
    assert loaded["offered_iops"].to_numpy() == pytest.approx(0.5 * probe["iops"])
    for _, r in loaded.iterrows():
        job = _job(sweep_dir, r["run_id"])
        assert re.search(rf"^rate_iops={max(1, round(r['offered_iops']))}$", job, re.M), job
        assert "rate_process=poisson" in job and re.search(r"^iodepth=64$", job, re.M)
        assert abs(r["load_achieved"] - 1) <= RATE_TOLERANCE, (r["iops"], r["offered_iops"])
    # saturation: closed loop exactly as before (no rate, the declared depth, no load columns)
    for _, r in closed.iterrows():
        job = _job(sweep_dir, r["run_id"])
        assert "rate_iops" not in job and "rate_process" not in job and re.search(r"^iodepth=8$", job, re.M)
        assert math.isnan(r["offered_iops"]) and math.isnan(r["load_achieved"])
    # the probe is the same closed-loop job, shorter: the saturation runs reach about its IOPS
    assert 0.5 < closed["iops"].median() / probe["iops"] < 2
    hist = pd.read_parquet(sweep_dir / "latency_hist.parquet")
    (curve,) = load_curves(df, hist)
    assert [p.load for p in curve.points] == ["0.5", "saturation"]
    assert all(p.p50.judged and p.p50_ns > 0 for p in curve.points)      # from the merged json+ bins
    assert find_leftovers(lab_host) == []
