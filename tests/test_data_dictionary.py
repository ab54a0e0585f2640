"""Every column of results.parquet is documented: name, unit, meaning, source layer."""

from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.analysis.report.data_dictionary import (DICTIONARY_CSV, LAYERS, data_dictionary, describe, undocumented,
                                                        unit_of)
from zbench_lib.analysis.data.synthetic import synthetic_results

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "data" / "examples").glob("*/results.parquet"))
# Columns the truth-check rework adds; documented before the examples are re-run with them.
UPCOMING = ("flag_read_amplification", "flag_host_contention", "not_judged", "checks_judged",
            "checks_not_judged", "pool_id", "pool_replicate", "described_flags", "fault_study", "replacement",
            "tail_not_judged", "load", "offered_iops", "load_achieved", "probe_iops", "load_fraction",
            "open_loop_iodepth", "clients", "client_skew_ms", "client_iops_min_share", "client_iops_max_share",
            "client_p99_max_ns", "client_window_overlap", "client_clock_uncertainty_ms", "client_fio_sum_agrees",
            "client_jain", "client_outside_share", "client_p99_window_low_ns", "client_p99_window_high_ns",
            "client_clock_check", "client_clock_note")


def test_the_dictionary_is_well_formed():
    d = data_dictionary()
    assert list(d.columns) == ["name", "unit", "layer", "meaning"]
    assert d["name"].is_unique and (d["meaning"].str.len() > 10).all()
    assert set(d["layer"]) <= set(LAYERS), set(d["layer"]) - set(LAYERS)
    assert DICTIONARY_CSV.parent.name == "docs"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_every_column_of_the_example_results_is_documented(path):
    cols = list(pd.read_parquet(path).columns)
    assert len(cols) > 100
    assert undocumented(cols) == []


def test_synthetic_and_upcoming_columns_are_documented():
    assert undocumented(synthetic_results(50).columns) == []
    assert undocumented(UPCOMING) == []


def test_units_follow_the_column_names():
    d = data_dictionary().set_index("name")
    for name, unit in d["unit"].items():
        if name.endswith("_ns"):
            assert unit == "ns", name
        elif name.endswith("_bytes_s"):
            assert unit == "bytes/s", name
        elif name.endswith("_bytes"):
            assert unit == "bytes", name
        elif name.endswith("_pct"):
            assert unit == "%", name
        elif name.startswith("flag_"):
            assert unit == "bool", name
    assert unit_of("iops") == "IOPS" and unit_of("nope") == ""
    rows = describe(["iops", "made_up"])
    assert rows["layer"].tolist() == ["fio", ""] and rows["meaning"].iloc[1] == "(not documented)"
