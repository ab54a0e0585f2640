"""How fairly several clients shared a datastore, with an interval (issue 46, item 5; methods §20).

Hand-made aggregate rows of a clients sweep (what `measure.client_rows` writes per run): Jain's index of
each run's window IOPS, the share of I/O outside the shared window, the window p99's bounds and the clocks'
check. Every expected number is worked out in the comments, intervals with scipy's t quantile.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats as sps

BY = ["workload", "direction", "clients"]
WINDOW_OK = "each start placed within ±5 ms by the clocks: the shared window (40000 ms) is longer than its uncertainty"
NARROW = ("not judged: the shared window (900 ms) is no longer than its uncertainty, each start placed within "
          "±600 ms by the clocks; the start skew (300 ms) is within it: the clients may have started together")


def _rows() -> pd.DataFrame:
    """Cell A, 2 clients: 3 pools x 2 runs, Jain's index per run (0.90, 0.92), (0.95, 0.97), (0.99, 0.97).
    Cell B, 4 clients: 2 pools x 1 run, J 0.998 and 1.000, and a third run on pool 3 whose window the clocks
    could not place (no IOPS, no J)."""
    a = [dict(clients=2, pool_replicate=p, run_id=f"a{p}{k}", client_jain=j, iops=100.0 * j,
              client_outside_share=f, client_p99_window_low_ns=lo, client_p99_window_high_ns=hi,
              client_clock_check=True, client_clock_note=WINDOW_OK)
         for (p, k, j, f, lo, hi) in [(1, 1, 0.90, 0.01, 2.0e6, 2.2e6), (1, 2, 0.92, 0.02, 2.1e6, 2.4e6),
                                      (2, 1, 0.95, 0.05, 1.9e6, 2.6e6), (2, 2, 0.97, 0.01, 2.0e6, 2.1e6),
                                      (3, 1, 0.99, 0.00, 2.2e6, 2.2e6), (3, 2, 0.97, 0.03, 2.0e6, 2.3e6)]]
    b = [dict(clients=4, pool_replicate=p, run_id=f"b{p}", client_jain=j, iops=i, client_outside_share=0.0,
              client_p99_window_low_ns=3e6, client_p99_window_high_ns=3e6, client_clock_check=ok,
              client_clock_note=note)
         for (p, j, i, ok, note) in [(1, 0.998, 400.0, True, WINDOW_OK), (2, 1.000, 410.0, True, WINDOW_OK),
                                     (3, math.nan, math.nan, False, NARROW)]]
    return pd.DataFrame(a + b).assign(workload="randwrite", direction="write", attempt=1, total_ios=3000,
                                      client_iops_min_share=0.45, client_iops_max_share=0.55)


def test_jains_index_has_a_t_interval_over_the_pools():
    from zbench_lib.analysis.stats.fairness import fairness_table

    t = fairness_table(_rows(), None, None, BY).set_index("clients")
    a, b = t.loc[2], t.loc[4]
    # cell A: the pools' means 0.91, 0.96, 0.98; mean 0.95, sd 0.036056; t(0.975, 2) = 4.302653:
    # 0.95 -/+ 4.302653 x 0.036056 / sqrt 3 = 0.95 -/+ 0.089567 -> 0.860433 .. 1.039567, cut at 1 (J <= 1)
    m, sd = 0.95, math.sqrt(((0.91 - 0.95) ** 2 + (0.96 - 0.95) ** 2 + (0.98 - 0.95) ** 2) / 2)
    half = sps.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert a["jain_n"] == 3 and a["jain_mean"] == pytest.approx(m)
    assert a["jain_ci_low"] == pytest.approx(m - half) and a["jain_ci_high"] == 1.0
    # cell B: two pools with a J (the third run's window was not judged), 0.998 and 1.000: mean 0.999, sd
    # 0.0014142, t(0.975, 1) = 12.706205: -/+ 0.012706 -> 0.986294 .. 1 (cut)
    half_b = sps.t.ppf(0.975, 1) * math.sqrt(2e-6) / math.sqrt(2)
    assert b["jain_n"] == 2 and b["jain_ci_low"] == pytest.approx(0.999 - half_b) and b["jain_ci_high"] == 1.0


def test_a_jain_interval_never_reaches_below_one_over_the_client_count():
    from zbench_lib.analysis.stats.fairness import fairness_table

    # two pools of 2 clients, J 0.5 (one client did everything) and 0.9: mean 0.7, t half-width 12.7062 x
    # 0.28284 / sqrt 2 = 2.5412: the interval is 0.5 .. 1, its floor 1/2, the least J two clients can have
    rows = _rows().query("clients == 2 and pool_replicate < 3").drop_duplicates("pool_replicate")
    rows = rows.assign(client_jain=[0.5, 0.9])
    [r] = fairness_table(rows, None, None, BY).to_dict("records")
    assert (r["jain_mean"], r["jain_ci_low"], r["jain_ci_high"]) == (pytest.approx(0.7), 0.5, 1.0)


def test_the_share_outside_the_window_the_windows_p99_and_the_clock_check_per_cell():
    from zbench_lib.analysis.stats.fairness import fairness_table

    t = fairness_table(_rows(), None, None, BY).set_index("clients")
    a, b = t.loc[2], t.loc[4]
    # the largest share of a run's I/O outside its window, and the window p99's bounds over every run
    assert a["outside_share_max"] == pytest.approx(0.05)
    assert (a["p99_window_low_ns"], a["p99_window_high_ns"]) == (1.9e6, 2.6e6)
    # cell B: one of its 3 runs has no window IOPS, and says why; its IOPS is over the other 2
    assert (b["window_not_judged"], b["n"], a["window_not_judged"]) == (1, 2, 0)
    assert b["window_reason"] == NARROW.removeprefix("not judged: ")


def test_the_section_and_the_first_screen_give_jains_index_with_its_interval():
    from zbench_lib.analysis.claims.client_answer import answer_fairness
    from zbench_lib.analysis.report.client_section import client_section
    from zbench_lib.analysis.stats.fairness import fairness_table

    rows = _rows()
    page = client_section(rows, None, None, "Sweep s.")
    assert "Jain" in page and "0.950 (0.860–1.00)" in page
    # the run whose window was not judged is counted beside the runs, its reason under the table
    assert "2 (+1 not judged <sup>" in page and "is no longer than its uncertainty" in page
    [line] = answer_fairness(fairness_table(rows, None, None, BY), BY)
    # the largest client count, 4: J 0.999 (95% CI 0.986–1.000) over 2 pools
    assert "Jain's index 0.999 (95% CI 0.986–1.000, 2 pools)" in line["text"]
