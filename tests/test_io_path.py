"""The I/O path as a declared choice (issue 44): recorded per row, a factor, chosen in every sync
template, stated on the pages, and a dataset release comparison over two paths refused or said."""

from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.analysis.claims.caveats import caveats, io_path_line
from zbench_lib.analysis.report.stamp import caveat_line
from zbench_lib.core.errors import ConfigError
from zbench_lib.measure.fio_parse import parse_fio_json
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec import io_path
from zbench_lib.sweeps.spec.sweep_spec import load_spec, parse_spec

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted((ROOT / "templates" / "sweeps").glob("*.yaml"))
FIX = Path(__file__).parent / "fixtures" / "fio"

DATASET = """
name: t
question: does the release change dataset writes
surface: dataset
host: lab
factors: {layout: [mirror], disks: [2], zfs: ['2.1', '2.3']}
target: {size: 256M, recordsize: 16k}
workloads: [WORKLOADS]
"""


@pytest.mark.parametrize("path", [p for p in TEMPLATES if io_path.is_sync_study(load_spec(p))], ids=lambda p: p.stem)
def test_every_sync_template_declares_the_io_path_of_every_workload(path):
    spec = load_spec(path)
    undeclared = [w.name for w in spec.workloads if not io_path.declared(w, spec.factors)]
    assert undeclared == [], f"{path.name}: state ioengine and direct for {undeclared} (and say what they model)"
    text = path.read_text()
    assert "I/O path" in text or "I/O paths" in text, f"{path.name}: its comments do not say what its path models"


def test_the_sync_templates_are_the_ones_expected():
    # a template that studies durable writes is caught by the rule above (sync factor, O_SYNC or fsync)
    found = {p.stem for p in TEMPLATES if io_path.is_sync_study(load_spec(p))}
    assert {"sync-slog", "slog-l2arc-special", "nfs-datastore", "nfs-clients", "iscsi-clients"} <= found, found


def test_a_spec_without_a_declared_path_is_seen_as_such():
    text = DATASET.replace("WORKLOADS", "{name: randwrite-sync}").replace("zfs: ['2.1', '2.3']", "zfs: ['2.3']")
    spec = parse_spec(text, name="t")
    [w] = spec.workloads
    assert io_path.is_sync_study(spec) and not io_path.declared(w, spec.factors)
    assert io_path.describe(spec) == ["I/O path: randwrite-sync psync, buffered, O_SYNC (default)"]


def test_a_dataset_sweep_across_releases_with_o_direct_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"factors.zfs: .*direct=1 \(randwrite\) compares two I/O paths") as e:
        parse_spec(DATASET.replace("WORKLOADS", "{name: randwrite}"), name="t")
    assert "\n" not in str(e.value)
    # buffered on both releases: one path, accepted
    parse_spec(DATASET.replace("WORKLOADS", "{name: randwrite, overrides: {direct: 0}}"), name="t")
    # a direct factor with a 1 level is refused too
    with pytest.raises(ConfigError, match="compares two I/O paths"):
        text = DATASET.replace("WORKLOADS", "{name: randwrite}").replace("disks: [2],", "disks: [2], direct: [0, 1],")
        parse_spec(text, name="t")


def test_a_zvol_or_nfs_release_comparison_with_o_direct_is_one_path():
    zvol = DATASET.replace("surface: dataset", "surface: zvol").replace("size: 256M, recordsize: 16k",
                                                                          "volsize: 256M, volblocksize: 16k")
    parse_spec(zvol.replace("WORKLOADS", "{name: randwrite}"), name="t")


def test_engine_and_direct_are_factors_that_reach_the_job_and_the_cell():
    spec = parse_spec(DATASET.replace("WORKLOADS", "{name: randwrite-sync}").replace(
        "zfs: ['2.1', '2.3']", "ioengine: [libaio, psync], direct: [0]"), name="t")
    plan = expand(spec)
    assert sorted(c.factors["ioengine"] for c in plan.cells if c.pool_replicate == 1) == ["libaio", "psync"]
    assert {c.fio["ioengine"] for c in plan.cells} == {"libaio", "psync"}
    assert {c.fio["direct"] for c in plan.cells} == {0}
    with pytest.raises(ConfigError, match=r"factors.ioengine\[0\]: expected"):
        parse_spec(DATASET.replace("WORKLOADS", "{name: randwrite}").replace("zfs: ['2.1', '2.3']", "ioengine: [mmap]"),
                   name="t")


def test_every_row_records_its_io_path_from_the_jobs_options():
    sync = parse_fio_json((FIX / "host-randwrite-sync.json").read_text())
    fsync = parse_fio_json((FIX / "host-fsync-heavy.json").read_text())
    job = (FIX / "host-randwrite-sync.fio").read_text()
    engine = next(line.split("=", 1)[1] for line in job.splitlines() if line.startswith("ioengine="))
    assert {(r["ioengine"], r["o_sync"]) for r in sync} == {(engine, "sync")}
    assert {(r["ioengine"], r["direct"], r["o_sync"]) for r in fsync} == {("psync", 0, "none")}


def _rows(**cols) -> pd.DataFrame:
    base = dict(workload=["randwrite-sync", "randread"], ioengine=["psync", "libaio"], direct=[0, 1],
                o_sync=["sync", "none"], disk_model=["hdd", "hdd"])
    return pd.DataFrame({**base, **cols})


def test_every_page_and_export_states_the_io_path():
    df = _rows()
    assert io_path_line(df) == "I/O path: randwrite-sync psync, buffered, O_SYNC; randread libaio, O_DIRECT."
    assert caveat_line(df).endswith(io_path_line(df))
    # results from before the path was recorded say nothing rather than guess
    assert io_path_line(df.drop(columns=["ioengine"])) == ""


def test_rows_comparing_releases_on_two_dataset_paths_carry_a_caveat():
    df = _rows(zfs=["2.1", "2.3"], surface=["dataset", "dataset"], direct=[1, 1], access=["local", "local"])
    assert any("compare two I/O paths" in c for c in caveats(df))
    assert not any("compare two I/O paths" in c for c in caveats(df.assign(direct=0)))
    assert not any("compare two I/O paths" in c for c in caveats(df.assign(surface="zvol")))
    assert not any("compare two I/O paths" in c for c in caveats(df.assign(zfs="2.3")))
