"""Issue 31, item 7: the scaling notebook's "Summary per configuration" averaged different pool shapes
with the same data disks (raidz1 1x3 at 133 IOPS with 2x2 at 392 as "n 6, mean 263, CoV 0.54")."""

from types import SimpleNamespace

import nbformat
import pandas as pd

from zbench_lib import analysis as A


def test_the_summary_cell_never_pools_two_pool_shapes():
    nb = nbformat.read("notebooks/analysis-scaling.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "summ = summary(" in c.source)
    df = A.select_admissible(A.load_sweep("data/examples/scaling").results)
    shown = []
    scope = {"A": A, "df": df, "P": SimpleNamespace(metric="iops"), "compact": lambda t, how, title: shown.append(t)}
    exec(cell.source, scope)                          # noqa: S102 (the repository's own notebook cell)
    summ = scope["summ"]
    assert {"vdevs", "width"} <= set(summ.columns)
    r = summ[(summ["workload"] == "randread-4k") & (summ["layout"] == "raidz1") & (summ["data_disks"] == 2)]
    assert sorted(zip(r["vdevs"], r["width"])) == [(1, 3), (2, 2)] and (r["n"] == 3).all()
    assert isinstance(shown[0], pd.DataFrame)
