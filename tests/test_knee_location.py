"""The knee's load between the measured loads, with a bootstrap interval over the units (issue 46, item 5).

Hand-made curves in fio's bins (tests/test_load.py's construction): each run has 1,000 I/Os, 600 at 2^19 ns,
390 at its p99 key and 10 at 2^25 ns, so its p99 is the key; two runs summed (2,000 I/Os: 1,200 / 390 / 390 /
20) have the larger key as their p99 (0.99 x 2,000 = 1,980 is reached only at the second key). Every expected
number is worked out in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

MS = 2 ** 20
FRACTIONS = ("0.25", "0.5", "0.75")


def _runs(keys: dict[str, tuple[int, ...]], pools: bool = True):
    """Rows and histograms of one configuration: `keys` {unit: p99 key at 25%, 50%, 75%}; a unit is a pool
    replicate (one run at each load on it) or, with `pools` False, a run of its own on one pool."""
    rows, hist = [], []
    for u, (unit, ks) in enumerate(keys.items(), start=1):
        for load, key in zip(FRACTIONS, ks):
            run_id = f"{unit}-{load}"
            rows.append({"workload": "randwrite", "direction": "write", "load": load, "run_id": run_id,
                         "attempt": 1, "pool_id": "p01", "pool_replicate": u if pools else 1,
                         "offered_iops": 400 * float(load), "load_fraction": float(load), "load_achieved": 0.99,
                         "probe_iops": 400.0, "iops": 396 * float(load), "total_ios": 1000})
            hist += [{"run_id": run_id, "attempt": 1, "direction": "write", "bin_ns": b, "count": n}
                     for b, n in ((2 ** 19, 600), (key, 390), (2 ** 25, 10))]
    return pd.DataFrame(rows), pd.DataFrame(hist)


def test_the_crossing_is_read_between_the_loads_on_a_log_linear_line():
    from zbench_lib.analysis.stats.knee_location import crossing

    x = np.array([0.25, 0.5, 0.75])
    # p99 1, 1.5, 4 ms: twice the first (2 ms) is passed between 50% and 75%: ln 2 lies (ln 2 - ln 1.5) /
    # (ln 4 - ln 1.5) = 0.287682 / 0.980829 = 0.293305 of the way from ln 1.5 to ln 4: 0.5 + 0.293305 x 0.25
    got = crossing(x, np.array([[1.0, 1.5, 4.0], [1.0, 1.5, 1.9]]), 2.0)
    assert got[0] == pytest.approx(0.5 + 0.25 * (math.log(2) - math.log(1.5)) / (math.log(4) - math.log(1.5)))
    assert got[1] == math.inf                          # never past twice the first: beyond the highest load


def test_pools_are_drawn_together_at_every_load_and_the_interval_spans_their_outcomes():
    from zbench_lib.analysis.stats.load_curves import load_curves

    # pool 1: p99 2, 2, 8 ms; pool 2: 1, 3, 4 ms. Both pools ran every load, so a replicate draws two pools and
    # uses them at every load: {1, 1} (a quarter of the draws), {1, 2} (a half), {2, 2} (a quarter).
    # {1, 1}: bound 4; 8 > 4 at 75%: (ln 4 - ln 2) / (ln 8 - ln 2) = 1/2 of the way: 0.625.
    # {2, 2}: bound 2; 3 > 2 at 50%: ln 2 / ln 3 = 0.630930 of the way from 25%: 0.25 + 0.157732 = 0.407732.
    # {1, 2} (the data themselves): each load's p99 a typical pool's, the geometric mean of the two pools' own,
    # sqrt 2, sqrt 6, sqrt 32 ms (as the curve's points); bound 2 sqrt 2, first passed at 75%:
    # (ln 2 sqrt 2 - ln sqrt 6) / (ln sqrt 32 - ln sqrt 6) = ln(2 / sqrt 3) / ln(4 / sqrt 3) = 0.171856 of the
    # way from 50%: 0.542964.
    # Each outcome has at least a quarter of the draws: the 2.5% and 97.5% points are the smallest and largest.
    df, hist = _runs({"pool1": (2 * MS, 2 * MS, 8 * MS), "pool2": (MS, 3 * MS, 4 * MS)})
    [c] = load_curves(df, hist)
    k = c.knee_load
    assert k.status == "judged" and k.scale == "fraction" and k.together and k.units == "2 pools"
    assert k.load == pytest.approx(0.5 + 0.25 * math.log(2 / math.sqrt(3)) / math.log(4 / math.sqrt(3)))
    assert k.low == pytest.approx(0.25 + 0.25 * math.log(2) / math.log(3))
    assert k.high == pytest.approx(0.625)
    assert k.resamples == 2000 and k.beyond == 0 and k.highest == 0.75
    # seeded: the same store gives the same interval, page after page
    again = load_curves(df, hist)[0].knee_load
    assert (again.low, again.high) == (k.low, k.high)


def test_runs_on_one_pool_are_drawn_within_each_load():
    from zbench_lib.analysis.stats.load_curves import load_curves

    # the same keys as runs on one pool: each load's two runs are its own units, drawn on their own
    df, hist = _runs({"a": (2 * MS, 2 * MS, 8 * MS), "b": (MS, 3 * MS, 4 * MS)}, pools=False)
    k = load_curves(df, hist)[0].knee_load
    assert k.status == "judged" and not k.together and k.units == "2 runs"
    # Each load's p99 is drawn on its own, a typical run's of the draw: at 25% 2 ms ({a, a}, a quarter), sqrt 2
    # ({a, b}, a half) or 1 ({b, b}); at 50% 2, sqrt 6 or 3; at 75% 8, sqrt 32 or 4. The earliest knee, 1 -> 3 ms
    # at 50%, is 0.407732 as {2, 2} above (1/4 x 1/4 = 1/16 of the draws, more than 2.5%); a base of 2 with 4 ms
    # at 75% never passes 4 ms (1/4 x 1/4 = 1/16; a base of sqrt 2 or 1 is passed at 75% by every draw):
    # beyond the highest load, more than the 2.5% the upper end may leave out.
    # Mixing the units across loads, which the pools above could not, makes the interval open.
    assert k.low == pytest.approx(0.25 + 0.25 * math.log(2) / math.log(3)) and k.high == math.inf
    assert k.beyond == pytest.approx(1 / 16, abs=0.02)


def test_a_curve_that_stays_under_the_bound_has_its_knee_beyond_the_highest_load():
    from zbench_lib.analysis.claims.load_claims import knee_load_text
    from zbench_lib.analysis.stats.load_curves import load_curves

    df, hist = _runs({"pool1": (MS, MS, MS), "pool2": (MS, MS, 3 * MS // 2)})
    [c] = load_curves(df, hist)
    assert c.knee_load.load == math.inf and c.knee_load.high == math.inf and c.knee_load.beyond == 1.0
    assert knee_load_text(c) == ("the p99 does not reach 2x the lowest load's by 75% of saturation (in every one of "
                                 "2,000 bootstrap resamples of the 2 pools)")


def test_too_few_units_or_no_histogram_leave_the_knees_load_not_judged():
    from zbench_lib.analysis.claims.load_claims import knee_load_text
    from zbench_lib.analysis.stats.load_curves import load_curves

    df, hist = _runs({"pool1": (MS, 2 * MS, 8 * MS)})
    [c] = load_curves(df, hist)
    assert c.knee_load.status == "not judged: a load has fewer than 2 units to resample"
    assert knee_load_text(c) == "the knee's load not judged (a load has fewer than 2 units to resample)"
    [c] = load_curves(df, None)
    assert c.knee_load.status.startswith("not judged: no histogram")


def test_the_page_states_the_knees_load_and_its_interval():
    from zbench_lib.analysis.claims.load_claims import curve_sentence
    from zbench_lib.analysis.stats.load_curves import curves_table, load_curves

    df, hist = _runs({"pool1": (2 * MS, 2 * MS, 8 * MS), "pool2": (MS, 3 * MS, 4 * MS)})
    [c] = load_curves(df, hist)
    # 0.542964, 0.407732 and 0.625 as whole percentages of saturation
    assert curve_sentence(c).endswith(
        "; the p99 reaches 2x the lowest load's at 54% of saturation (95% bootstrap interval 41–62%, 2,000 "
        "resamples of the 2 pools, drawn together at every load; read between the loads on a log-linear line).")
    t = curves_table([c])
    assert t["knee_load"].tolist() == [pytest.approx(0.542964, abs=1e-6)] * 3
    assert set(t["knee_load_scale"]) == {"fraction"} and set(t["knee_load_status"]) == {"judged"}
