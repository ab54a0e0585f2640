"""The OpenZFS release as a factor: one small sweep on a 2.1 lab and a 2.3 lab, compared.

The 2.3 pools run on the session's lab, the 2.1 pools on a lab the sweep boots from the 2.1
image (`make image-zfs21`) and tears down. Both yield the same columns; the comparison
notebook puts the releases side by side.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core import paths
from zbench_lib.hosts.lab_image import cached_image
from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
SPEC = Path(__file__).parent / "specs" / "zfs-versions.yaml"


def test_one_sweep_runs_on_openzfs_2_1_and_2_3_with_the_same_columns(lab, lab_host, sweep_on_lab, tmp_path):
    if cached_image("2.1") is None:
        pytest.fail("the OpenZFS 2.1 lab image is not built: run `make image-zfs21` (make test does)")
    res = sweep_on_lab(SPEC, tmp_path, "zfs-versions-test", timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = Path(res.stdout.strip().splitlines()[-1])
    df = pd.read_parquet(sweep_dir / "results.parquet")
    assert sorted(df["zfs"].unique()) == ["2.1", "2.3"]
    assert df.groupby("zfs")["run_id"].nunique().to_dict() == {"2.1": 4, "2.3": 4}
    # The same columns from both releases: none filled on one and empty on the other, except a
    # latency tail its runs' I/O count could not support, blanked by rule and said so in every
    # row's tail_not_judged (methods §18): a busy machine's slower runs may fall under p99.9's
    # 10,000 I/Os on one release only.
    filled = {z: set(g.columns[g.notna().any()]) for z, g in df.groupby("zfs")}
    for z, g in df.groupby("zfs"):
        for col in set().union(*filled.values()) - filled[z]:
            tail = re.fullmatch(r"c?lat_(p\d+(?:_\d+)?)_ns", col)
            assert tail, f"{col} is filled on one release only ({z} has none)"
            said = f"{tail.group(1).replace('_', '.')} needs"
            assert g["tail_not_judged"].str.contains(said, regex=False).all(), (z, col, list(g["tail_not_judged"]))
    assert (df["iops"] > 0).all()
    events = [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]
    releases = {e["release"]: e["version"] for e in events if e["event"] == "openzfs release"}
    assert set(releases) == {"2.1", "2.3"}
    assert all(v.startswith(r + ".") or v.startswith("zfs-" + r + ".") for r, v in releases.items()), releases
    assert len(list(sweep_dir.glob("host-provenance-*.json"))) == 2          # one environment per lab
    assert find_leftovers(lab_host) == []
    assert not (paths.labs_dir() / "sweep-zfs-versions-zfs21").exists()     # its lab is gone

    from zbench_lib.analysis.report.report import render_report
    # The report's shape, whatever a busy machine flagged: host contention may exclude every
    # run of one release, and the comparison needs both (include_flagged, as --include-flagged).
    index = render_report(sweep_dir, notebooks=["compare"], include_flagged=True)
    page = (index.parent / "analysis-compare.html").read_text()
    assert "along &#39;zfs&#39;" in page or "along 'zfs'" in page
    nb = json.loads((index.parent / "analysis-compare.ipynb").read_text())
    text = "".join("".join(o["text"]) if isinstance(o["text"], list) else o["text"]
                   for c in nb["cells"] for o in c.get("outputs", []) if o.get("name") == "stdout")
    assert "comparing auto along 'zfs' against '2.1'" in text
    print("\n" + text[:4000])
