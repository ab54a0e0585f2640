"""The five-line what-if of the README, run in a notebook against the session's lab under papermill,
and explore.ipynb's button pressed headlessly on it (issue 32). Short windows: 4 s, 2 runs."""

import json
import os
import re
import subprocess
import sys

import nbformat
import pandas as pd
import pytest

from zbench_lib import analysis as A
from zbench_lib.core.paths import REPO_ROOT

from conftest import LAB_TEST_CONFIG

pytestmark = pytest.mark.lab


def readme_what_if() -> str:
    """The five lines as the README shows them (the test runs what a reader copies)."""
    text = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"```python\n(import zbench as zb\n.*?)```", text, re.S).group(1)
    assert len(block.strip().splitlines()) == 5, block
    return block


def _papermill(nb_path, out, params=(), timeout=1200):
    args = [sys.executable, "-m", "papermill", str(nb_path), str(out), "--cwd", str(REPO_ROOT / "notebooks")]
    for k, v in params:
        args += ["-p", k, str(v)]
    env = dict(os.environ, ZBENCH_LAB=LAB_TEST_CONFIG["name"])
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def _texts(nb) -> tuple[str, str]:
    plain = "".join("".join(o.get("text", "")) + o.get("data", {}).get("text/plain", "")
                    for c in nb.cells for o in c.get("outputs", []))
    rich = json.dumps([o.get("data", {}) for c in nb.cells for o in c.get("outputs", [])])
    return plain, rich


def test_the_five_line_what_if_runs_in_a_notebook_on_the_lab(lab, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f'out: str = "{tmp_path / "sweeps"}"  # where the store goes',
                                          metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import zbench as zb\n"
                                          "zb.set_defaults(pools=2, repetitions=1, runtime_s=4, ramp_s=1, "
                                          "volsize='128M', out=out)"),
                nbformat.v4.new_code_cell(readme_what_if()),
                nbformat.v4.new_code_cell("print(repr(r))\nprint('STORE', r.path)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = tmp_path / "whatif.ipynb"
    nbformat.write(nb, str(src))
    res = _papermill(src, tmp_path / "out.ipynb")
    assert res.returncode == 0, res.stderr[-3000:]
    plain, rich = _texts(nbformat.read(str(tmp_path / "out.ipynb"), as_version=4))
    assert "1x raidz2(6), 16K volblocksize, randwrite 4K" in plain and "on hdd" in plain
    assert "<details><summary>truth checks" in rich and "Beside the models" in rich       # folded in JupyterLab
    assert "application/vnd.plotly.v1+json" in rich                                      # r.plot()
    store = plain.split("STORE ")[1].split()[0]
    df = pd.read_parquet(f"{store}/results.parquet")
    runs, admitted = df["run_id"].nunique(), A.select_admissible(df)["run_id"].nunique()
    assert f"truth checks: {runs} runs, {runs - admitted} excluded" in plain, plain
    if admitted >= 2:
        # pools as units; the interval's ends as every page writes them (wording.interval_text)
        assert re.search(r"IOPS: [\d,.]+ \(95% CI ([\d,.]+–[\d,.]+|one value \(n = 2\)), n = 2 pools\)", plain), plain
    else:
        # A busy machine (host contention) may exclude runs until the cell's attempts are spent:
        # the summary then gives no interval, and says why, instead of a number it cannot support.
        assert re.search(r"IOPS: (n/a|[\d,.]+) \(95% CI n/a, ", plain) and "raised: " in plain, plain
    # rows: at least the 2 planned runs, more only where a check excluded one and it was replaced
    assert df["run_id"].nunique() >= 2 and set(df["layout"]) == {"raidz2"} and set(df["width"]) == {6}
    assert set(df["volblocksize_bytes"]) == {16384} and set(df["bs_bytes"]) == {4096}
    assert set(df["disk_model"]) == {"hdd"} and (df["iops"] > 0).all()
    assert {"flag_cache_served", "flag_not_steady", "flag_emulation_bound"} <= set(df)   # the truth checks ran
    # the statistics the summary printed are the analysis's own
    s = A.truth_summary(df).set_index("flag")
    assert s.loc["flagged", "runs"] == df["run_id"].nunique()
    # and the fresh sweep is in the catalogue beside the examples
    cat = A.catalog([REPO_ROOT / "data" / "examples", tmp_path / "sweeps"])
    fresh = cat[cat["path"].str.contains("whatif-raidz2-6-16k-randwrite")]
    assert len(fresh) == 1 and fresh["disk_model"].iloc[0] == "hdd" and fresh["cells"].iloc[0] == 1
    assert len(cat) == 4


def test_explore_notebook_presses_its_button_on_the_lab(lab, tmp_path):
    out = tmp_path / "explore.ipynb"
    res = _papermill(REPO_ROOT / "notebooks" / "explore.ipynb", out,
                     [("layout", "mirror"), ("disks", 2), ("workload", "randread"), ("repetitions", 1),
                      ("runtime_s", 4), ("run", True), ("out", tmp_path / "sweeps")])
    assert res.returncode == 0, res.stderr[-3000:]
    plain, rich = _texts(nbformat.read(str(out), as_version=4))
    assert "1x mirror(2), 16K volblocksize, randread 4K" in plain
    assert "random-read IOPS" in plain                       # beside the IOPS model
    state = json.dumps(nbformat.read(str(out), as_version=4).metadata.get("widgets", {}))
    assert "this run" in state and "Nearest configurations of the shipped examples" in state
    assert "Done." in state
    assert len(list((tmp_path / "sweeps").glob("whatif-mirror-2-16k-randread-*/results.parquet"))) == 1
