"""`model` as a factor with both kinds (issue 33 item 2), through the real executor: a 2-disk mirror
whose pools take `hdd` (a QEMU throttle, over nbdkit's passthrough) and `mech:hdd-7200` (the model
nbdkit serves, switched in between the pools through the control file beside each disk).

Its own small lab ("pytest-mechf"), booted once for this module: the lab mech-factor.yaml would boot
itself (two 1 GiB data disks on `hdd`, served through nbdkit from the boot), found by the sweep through
ZBENCH_LAB. About a boot and two short pools.

The same lab serves issue 44's I/O path tests (one boot for both): 8k O_SYNC random writes at depth 1
issued by libaio and by psync on one `mech:hdd-7200` disk, on a dataset (buffered: a database's
writes) and on a zvol (O_DIRECT: a VM disk's). On a ZFS file libaio's io_submit blocks, so fio puts
the wait into slat and its clat is a sliver of it; the reported latency must be fio's lat (issue to
completion), the same whichever engine issued the writes. The figures compared are read from the raw
fio.json here, not from the code that builds the rows. Run alone:

    .venv/bin/python -m pytest -q -m lab tests/test_mech_factor_lab.py
"""

import dataclasses
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import own_lab, sweep_child
from zbench_lib.analysis.data.flags import select_admissible
from zbench_lib.analysis.stats.tails import cell_tails
from zbench_lib.hosts import lab_faults
from zbench_lib.hosts.lab import LabConfig
from zbench_lib.sweeps.running.sweep_host import lab_config
from zbench_lib.sweeps.spec.sweep_spec import load_spec
from zbench_lib.zfs.pools import find_leftovers

GiB = 1024 ** 3
SPEC = Path(__file__).parent / "specs" / "mech-factor.yaml"
MECHF_LAB = LabConfig(disks=2, disk_bytes=1 * GiB, model="hdd", nbd_data=True, name="pytest-mechf")
pytestmark = [pytest.mark.lab, pytest.mark.boots(MECHF_LAB)]
SERIALS = ("zbdata00", "zbdata01")
HDD = {"iops": 150, "bps": 180 * 2**20}            # hosts/disk_models.py's hdd preset, per disk
UNLIMITED = {k: 0 for k in ("iops", "iops_rd", "iops_wr", "bps", "bps_rd", "bps_wr")}
# mech:hdd-7200 (hosts/mech_models.py), by hand: a read at depth 1 waits at least a single-track seek
# (1.0 ms) and, at the median, half a turn (60,000 / 7,200 / 2 = 4.17 ms); at most a full stroke (15 ms)
# and a full turn (8.33 ms). The p50 sits between 5 ms and twice the worst, on a busy machine.
MECH_P50_MS = (1.0 + 60_000 / 7200 / 2, 2 * (15.0 + 60_000 / 7200))


@pytest.fixture(scope="module")
def mech_lab():
    # the lab the spec would boot, but for its name: the test measures what a user's sweep gets
    assert dataclasses.replace(lab_config(load_spec(SPEC)), name=MECHF_LAB.name) == MECHF_LAB
    with own_lab(MECHF_LAB) as lab:
        yield lab


@pytest.fixture(scope="module")
def sweep(mech_lab, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mechf")
    argv, env = sweep_child(SPEC, out, "mechf", ZBENCH_LAB=MECHF_LAB.name)
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    return out / "mechf"


def _events(sweep_dir: Path, name: str) -> list[dict]:
    lines = (sweep_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


def test_each_pool_serves_its_level_read_back(sweep):
    sets = {e["models"]["zbdata00"]: e for e in _events(sweep, "disk models set")}
    assert set(sets) == {"hdd", "mech:hdd-7200"}
    for serial in SERIALS:
        hdd, mech = sets["hdd"], sets["mech:hdd-7200"]
        assert hdd["throttles"][serial] == {**UNLIMITED, **HDD}
        assert (hdd["served"][serial]["model"], hdd["served"][serial]["params"]) == ("mech:null", {})
        assert mech["throttles"][serial] == UNLIMITED
        served = mech["served"][serial]
        assert (served["model"], served["kind"]) == ("mech:hdd-7200", "hdd")
        assert served["params"]["rpm"] == 7200 and served["params"]["avg_seek_ms"] == 8.5
    df = pd.read_parquet(sweep / "results.parquet")
    assert sorted(df["data_model_readback"]) == sorted(df["disk_model"]) == ["hdd", "mech:hdd-7200"]


def test_the_mech_level_reads_like_a_hard_disk_and_the_throttle_level_like_its_envelope(sweep):
    df = pd.read_parquet(sweep / "results.parquet").set_index("data_model_readback")
    mech_p50 = df.loc["mech:hdd-7200", "lat_p50_ns"] / 1e6
    assert MECH_P50_MS[0] < mech_p50 < MECH_P50_MS[1], mech_p50
    # hdd: 150 IOPS a disk, so a mirror's reads at most 300 a second (bursts are a tenth of a second's);
    # a throttled read waits at most 1.5 x 1/150 s at the median (README's envelope of a throttle).
    hdd_iops, hdd_p50 = df.loc["hdd", "iops"], df.loc["hdd", "lat_p50_ns"] / 1e6
    assert 0.5 * 150 < hdd_iops < 1.2 * 300, hdd_iops
    assert hdd_p50 < 1.5 * 1000 / 150, hdd_p50


def test_no_pool_is_left_and_the_disks_are_put_back_as_booted(mech_lab, sweep):
    assert find_leftovers(mech_lab.host) == []
    for serial in SERIALS:
        assert lab_faults.served(mech_lab.dir, serial)["model"] == "mech:null"       # passthrough, as booted
        assert lab_faults.throttle_of(mech_lab.dir, serial) == {**UNLIMITED, **HDD}


# --- issue 44: the latency the I/O waited, whichever engine issued it -------------------------------------


@pytest.fixture(scope="module", params=["dataset", "zvol"])
def io_path_sweep(request, mech_lab, tmp_path_factory):
    name = f"io-path-{request.param}"
    out = tmp_path_factory.mktemp(name)
    argv, env = sweep_child(SPEC.parent / f"{name}.yaml", out, name, ZBENCH_LAB=MECHF_LAB.name)
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    return request.param, out / name


def _raw_writes(sweep_dir: Path) -> dict:
    """Each run's fio write section, as fio wrote it."""
    out = {}
    for path in (sweep_dir / "raw").glob("*/attempt-1/fio/fio.json"):
        text = path.read_text()
        out[path.parent.parent.parent.name] = json.loads(text[text.find("{"):])["jobs"][0]["write"]
    return out


def test_each_run_reports_fios_issue_to_completion_latency_and_its_path(io_path_sweep):
    surface, sweep_dir = io_path_sweep
    df = pd.read_parquet(sweep_dir / "results.parquet")
    raw = _raw_writes(sweep_dir)
    assert len(df) == 6 and sorted(df["ioengine"]) == ["libaio"] * 3 + ["psync"] * 3
    assert set(df["direct"]) == {0 if surface == "dataset" else 1} and set(df["o_sync"]) == {"sync"}
    for _, row in df.iterrows():
        w = raw[row["run_id"]]
        assert row["lat_mean_ns"] == pytest.approx(w["lat_ns"]["mean"], rel=1e-9)
        assert row["clat_mean_ns"] == pytest.approx(w["clat_ns"]["mean"], rel=1e-9)
        if surface == "dataset" and row["ioengine"] == "libaio":
            # the wait sits in submission: clat (what zbench reported before) is a fraction of it
            assert w["slat_ns"]["mean"] > 0.9 * w["lat_ns"]["mean"], (w["slat_ns"]["mean"], w["lat_ns"]["mean"])
            assert w["clat_ns"]["percentile"]["99.000000"] < 0.5 * w["lat_ns"]["percentile"]["99.000000"]


def _merged_p99(hist: pd.DataFrame) -> float:
    """The 0.99 quantile of summed bins as fio reads one: the first bin whose cumulative count reaches 0.99 N."""
    h = hist.groupby("bin_ns")["count"].sum().sort_index()
    cum = np.cumsum(h.to_numpy())
    return float(h.index[np.flatnonzero(cum >= 0.99 * cum[-1])[0]])


def test_libaio_and_psync_report_the_same_latency_for_the_same_writes(io_path_sweep):
    surface, sweep_dir = io_path_sweep
    df = pd.read_parquet(sweep_dir / "results.parquet")
    hist = pd.read_parquet(sweep_dir / "latency_hist.parquet")
    raw = _raw_writes(sweep_dir)
    for run_id, w in raw.items():         # the store's bins are fio's lat_ns bins
        mine = hist[hist["run_id"] == run_id].set_index("bin_ns")["count"].to_dict()
        assert mine == {int(k): v for k, v in w["lat_ns"]["bins"].items() if v}, run_id
    # Only runs that measured the disks: a controller busy beside the lab slows nbdkit's model, and the
    # check that measured it excludes the run (on an idle machine none is; see the module's text).
    adm = select_admissible(df)
    if adm.groupby("ioengine")["run_id"].nunique().reindex(["libaio", "psync"]).fillna(0).min() < 2:
        lost = df[~df["run_id"].isin(adm["run_id"])]
        assert lost["truth_flags"].str.contains("host_contention|emulation_bound").all(), lost["truth_flags"]
        print(surface, "not judged: runs excluded", lost["truth_flags"].tolist())
        return
    # all I/Os pooled: the estimand whose value is the summed bins' p99 checked below (methods §18)
    tails = cell_tails(adm, hist, by=["ioengine"], estimand="pooled").set_index(["ioengine", "percentile"])
    p99 = {e: tails.loc[(e, "p99"), "value_ns"] for e in ("libaio", "psync")}
    assert all(tails.loc[(e, "p99"), "status"] == "judged" for e in p99), tails
    print(surface, {e: v / 1e6 for e, v in p99.items()})
    assert p99["libaio"] == pytest.approx(p99["psync"], rel=0.2), (surface, p99)
    for engine, value in p99.items():
        runs = adm[adm["ioengine"] == engine]["run_id"]
        assert value == _merged_p99(hist[hist["run_id"].isin(runs)]), engine
        fio_p99s = [raw[r]["lat_ns"]["percentile"]["99.000000"] for r in runs]
        assert value == pytest.approx(float(np.median(fio_p99s)), rel=0.2), (engine, value, fio_p99s)
