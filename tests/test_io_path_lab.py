"""The latency the I/O waited (issue 44), on real OpenZFS: libaio and psync report the same latency.

8k O_SYNC random writes at depth 1, once with libaio and once with psync, on a dataset (buffered:
a database's writes) and on a zvol (O_DIRECT: a VM disk's). On a ZFS file libaio's io_submit blocks,
so fio puts the wait into slat and its clat is a sliver of it; the reported p99 must be fio's lat
(issue to completion), equal across the engines. The figures compared come from the raw fio.json,
read here, not from the code that builds the rows.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from zbench_lib.analysis.stats.tails import cell_tails

pytestmark = pytest.mark.lab
SPECS = Path(__file__).parent / "specs"


def _fio_write(run_json: Path) -> dict:
    text = (run_json.parent / "fio" / "fio.json").read_text()
    return json.loads(text[text.find("{"):])["jobs"][0]["write"]


@pytest.fixture(scope="module", params=["dataset", "zvol"])
def sweep(request, shared_sweep_on_lab, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"io-path-{request.param}")
    res = shared_sweep_on_lab(SPECS / f"io-path-{request.param}.yaml", out, f"io-path-{request.param}")
    assert res.returncode == 0, res.stderr[-3000:]
    return request.param, out / f"io-path-{request.param}"


def _raw_by_run(sweep_dir: Path) -> dict:
    return {p.parent.parent.name: _fio_write(p) for p in (sweep_dir / "raw").glob("*/attempt-1/run.json")}


def test_each_run_reports_fios_issue_to_completion_latency_and_its_path(sweep):
    surface, sweep_dir = sweep
    df = pd.read_parquet(sweep_dir / "results.parquet")
    raw = _raw_by_run(sweep_dir)
    assert len(df) == 4 and set(df["ioengine"]) == {"libaio", "psync"}
    assert set(df["direct"]) == {0 if surface == "dataset" else 1} and set(df["o_sync"]) == {"sync"}
    for _, row in df.iterrows():
        w = raw[row["run_id"]]
        lat = w["lat_ns"]["percentile"]["99.000000"]
        assert row["total_ios"] >= 1000, row["total_ios"]         # enough for a p99 to be judged
        assert row["lat_p99_ns"] == pytest.approx(lat, rel=0.2), (row["run_id"], row["lat_p99_ns"], lat)
        assert row["lat_mean_ns"] == pytest.approx(w["lat_ns"]["mean"], rel=1e-9)
        if surface == "dataset" and row["ioengine"] == "libaio":
            # the wait sits in submission: clat (what zbench reported before) is a fraction of it
            assert w["slat_ns"]["mean"] > w["clat_ns"]["mean"], (w["slat_ns"]["mean"], w["clat_ns"]["mean"])
            assert w["clat_ns"]["percentile"]["99.000000"] < 0.5 * lat


def _merged_p99(hist: pd.DataFrame) -> float:
    """The 0.99 quantile of summed bins as fio reads one: the first bin whose cumulative count reaches 0.99 N."""
    h = hist.groupby("bin_ns")["count"].sum().sort_index()
    cum = np.cumsum(h.to_numpy())
    return float(h.index[np.flatnonzero(cum >= 0.99 * cum[-1])[0]])


def test_libaio_and_psync_report_the_same_latency_for_the_same_writes(sweep):
    surface, sweep_dir = sweep
    df = pd.read_parquet(sweep_dir / "results.parquet")
    hist = pd.read_parquet(sweep_dir / "latency_hist.parquet")
    raw = _raw_by_run(sweep_dir)
    # the store's bins are fio's lat_ns bins, summed over the run's jobs
    for run_id, w in raw.items():
        mine = hist[hist["run_id"] == run_id].set_index("bin_ns")["count"].to_dict()
        assert mine == {int(k): v for k, v in w["lat_ns"]["bins"].items() if v}, run_id
    tails = cell_tails(df, hist, by=["ioengine"]).set_index(["ioengine", "percentile"])
    p99 = {e: tails.loc[(e, "p99"), "value_ns"] for e in ("libaio", "psync")}
    assert all(tails.loc[(e, "p99"), "status"] == "judged" for e in p99), tails
    assert p99["libaio"] == pytest.approx(p99["psync"], rel=0.2), (surface, p99)
    for engine, value in p99.items():
        runs = df[df["ioengine"] == engine]["run_id"]
        merged_raw = _merged_p99(hist[hist["run_id"].isin(runs)])
        assert value == merged_raw, (engine, value, merged_raw)
        fio_p99s = [raw[r]["lat_ns"]["percentile"]["99.000000"] for r in runs]
        assert value == pytest.approx(float(np.median(fio_p99s)), rel=0.2), (engine, value, fio_p99s)
