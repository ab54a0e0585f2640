"""Every sweep queryable (issue 32): `zbench catalog` and `A.load_sweeps` over DuckDB, and the refusal
of a comparison whose environments differ in something not chosen."""

import json
import shutil

import pytest

from zbench_lib import analysis as A
from zbench_lib.analysis.data.catalog import sweep_dirs
from zbench_lib.cli import main
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "data" / "examples"


def test_catalog_lists_the_three_examples_with_their_cells_and_environment():
    t = A.catalog(EXAMPLES).set_index("sweep")
    assert list(t.index) == ["iodepth-curve", "scaling-example", "volblocksize-example"]
    # cells are configurations (the README's 100 and 18), pool replicates a column of their own
    assert t.loc["scaling-example", "cells"] == 100 and t.loc["scaling-example", "pools_per_cell"] == 3
    assert t.loc["volblocksize-example", "cells"] == 18 and t.loc["volblocksize-example", "rows"] == 66
    assert set(t["zfs"]) == {"2.3"} and set(t["host"]) == {"lab (tcg)"}
    assert t.loc["iodepth-curve", "disk_model"] == "hdd"
    assert t.loc["iodepth-curve", "excluded_runs"] == 20
    assert "volblocksize" in t.loc["volblocksize-example", "question"]


def test_zbench_catalog_prints_the_list_and_runs_sql(capsys):
    assert main(["catalog"]) == 0                     # default roots: data/examples (and data/sweeps)
    out = capsys.readouterr().out
    assert all(s in out for s in ("iodepth-curve", "scaling-example", "volblocksize-example", "lab (tcg)"))
    assert main(["catalog", str(EXAMPLES), "--sql",
                 "SELECT sweep_id, count(*) AS n FROM results WHERE layout = 'raidz2' GROUP BY ALL ORDER BY 1"]) == 0
    out = capsys.readouterr().out
    assert "scaling-example" in out and "volblocksize-example" in out
    assert main(["catalog", "/nonexistent-zbench-dir"]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main(["catalog", str(EXAMPLES), "--sql", "SELECT nope FROM results"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zbench: catalog query failed") and err.count("\n") == 1


def test_load_sweeps_puts_cells_of_two_sweeps_side_by_side():
    s = A.load_sweeps([EXAMPLES / "scaling", EXAMPLES / "volblocksize"],
                      where="layout = 'raidz2' AND template = 'randwrite'")
    assert set(s.environments["sweep_id"]) == {"scaling-example", "volblocksize-example"}
    side = s.side_by_side()
    both = side.dropna()          # raidz2 of 6 at 16K: measured by both sweeps
    assert len(both) == 1 and both.index[0][1:3] == (6, 16384)
    a, b = both.iloc[0]
    assert 0.5 < a / b < 2      # the same configuration in two sweeps of one lab: close
    assert (s.cells["n"] >= 3).all() and (s.cells["ci95_low"] < s.cells["mean"]).all()


def test_load_sweeps_refuses_environments_that_differ_unless_chosen():
    with pytest.raises(ConfigError) as e:
        A.load_sweeps(EXAMPLES)     # iodepth-curve ran on `hdd`, the others on a custom model
    msg = str(e.value)
    assert "differ in disk_model" in msg and "compare=['disk_model']" in msg and "\n" not in msg
    s = A.load_sweeps(EXAMPLES, compare=["disk_model"])
    assert "disk_model" in s.by and len(s.environments) == 3
    assert len(A.load_sweeps(EXAMPLES, allow_mixed=True).environments) == 3
    with pytest.raises(ConfigError, match="not an environment"):
        A.load_sweeps(EXAMPLES, compare=["colour"])


def test_a_sweep_on_another_release_is_refused_then_compared_along_zfs(tmp_path):
    old = tmp_path / "volblocksize-zfs21"
    shutil.copytree(EXAMPLES / "volblocksize", old, ignore=shutil.ignore_patterns("raw.tar.xz", "*.ipynb"))
    for f in old.glob("host-provenance-*.json"):
        prov = json.loads(f.read_text())
        prov.update(zfs_kmod="zfs-kmod-2.1.11-1", zfs_userland="zfs-2.1.11-1")
        f.write_text(json.dumps(prov))
    dirs = [EXAMPLES / "volblocksize", old]
    assert sweep_dirs(tmp_path) == [old]
    with pytest.raises(ConfigError, match=r"differ in zfs \(volblocksize-zfs21: 2.1; volblocksize: 2.3\)"):
        A.load_sweeps(dirs)
    # The same line whichever path sorts first (the clone's place on disk decides it in CI).
    first = tmp_path / "a-first" / "volblocksize"
    shutil.copytree(EXAMPLES / "volblocksize", first, ignore=shutil.ignore_patterns("raw.tar.xz", "*.ipynb"))
    with pytest.raises(ConfigError, match=r"differ in zfs \(volblocksize-zfs21: 2.1; volblocksize: 2.3\)"):
        A.load_sweeps([first, old])
    s = A.load_sweeps(dirs, compare="zfs")
    assert set(s.cells["zfs"]) == {"2.1", "2.3"} and "zfs" in s.by
    assert set(s.environments["zfs"]) == {"2.1", "2.3"}


def test_the_admissible_view_leaves_out_excluded_runs_and_replacements():
    import pandas as pd
    from zbench_lib.analysis.data.catalog import query
    d = EXAMPLES / "scaling"
    got = query("SELECT run_id, direction FROM admissible ORDER BY ALL", [d])
    # by hand from the pack: no invalidating flag, and not a run the events say was added to replace one
    events = [json.loads(line) for line in (d / "events.jsonl").read_text().splitlines() if line.strip()]
    added = {r for e in events if e["event"] == "runs added" and e["why"].startswith("replace") for r in e["run_ids"]}
    rows = pd.read_parquet(d / "results.parquet")
    want = rows[~rows["flagged"] & ~rows["run_id"].isin(added)][["run_id", "direction"]]
    assert len(added) == 28 and len(got) < len(rows)
    assert got.values.tolist() == want.sort_values(["run_id", "direction"]).values.tolist()
