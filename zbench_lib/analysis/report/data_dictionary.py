"""What every column of results.parquet means: name, unit, meaning and the layer it comes from.

The dictionary itself is `docs/results-columns.csv` (readable on its own, one row per
column); tests check it against the real columns of the example sweeps. Layers: store
(ids the store assigns), plan (the configuration the spec expanded to), target (ZFS
properties and space of the zvol or dataset), fio, device (/proc/diskstats), pool
(`zpool iostat`), ARC (arcstats), CPU (/proc/stat), TXG, truth (the truth checks),
lab (the disk model) and analysis (added when loading).

    data_dictionary()          the table (name, unit, layer, meaning)
    describe(columns)          the rows for the given columns, in their order, undocumented ones
                               marked as such
    undocumented(columns)      the columns the dictionary lacks
    unit_of(column)            the unit of one column ('' when it has none or is unknown)
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from zbench_lib.analysis.data.columns import LABEL_PREFIX
from zbench_lib.core.paths import REPO_ROOT

DICTIONARY_CSV = REPO_ROOT / "docs" / "results-columns.csv"
LAYERS = ("store", "plan", "target", "fio", "device", "pool", "ARC", "CPU", "TXG", "truth", "lab", "analysis")


@lru_cache(maxsize=1)
def _table() -> pd.DataFrame:
    return pd.read_csv(DICTIONARY_CSV, dtype=str, keep_default_na=False)


def data_dictionary() -> pd.DataFrame:
    """Every documented column of results.parquet: name, unit, layer, meaning."""
    return _table().copy()


LABEL_ROW = f"{LABEL_PREFIX}<name>"        # one row documents every user label of an imported sweep


def _entry(column) -> str:
    return LABEL_ROW if str(column).startswith(LABEL_PREFIX) else column


def undocumented(columns) -> list[str]:
    known = set(_table()["name"])
    return [c for c in columns if _entry(c) not in known]


def describe(columns) -> pd.DataFrame:
    """Dictionary rows for `columns` (e.g. a results table's), in that order."""
    t = _table().set_index("name")
    rows = [dict(name=c, **(t.loc[_entry(c)].to_dict() if _entry(c) in t.index else
                            dict(unit="", layer="", meaning="(not documented)"))) for c in columns]
    return pd.DataFrame(rows, columns=["name", "unit", "layer", "meaning"])


def unit_of(column: str) -> str:
    t = _table()
    hit = t.loc[t["name"] == column, "unit"]
    return str(hit.iloc[0]) if len(hit) else ""
