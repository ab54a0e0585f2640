"""Which host ran what, and whether the hosts agreed (a fleet's sweep, issue 29; methods §6).

A fleet gives whole randomised blocks to hosts, so the host is a blocking factor: each block's
layouts ran on one machine, and a configuration's pool replicates may have run on different ones.
`host_coverage` says what each host ran (rows carry `host`; a sweep on one host has none and
gets an empty table). `host_agreement` compares, for each configuration whose pools ran on more
than one host, the hosts' means of the metric over their admissible runs: the ratio of the
highest to the lowest host mean, and whether it stays within the equivalence margin. It is a
description, not a test: with one or two pools per host there is no within-host spread to test
against, so a ratio outside the margin is read as "the hosts differ here", to be looked at.
"""

from __future__ import annotations

import re

import pandas as pd

from zbench_lib.analysis.data.flags import admissible_mask

MARGIN = 0.10                 # hosts agree when their means are within 10% (docs/methods.md §6)
_REPLICATE = re.compile(r"-pr\d+$")


def host_coverage(df: pd.DataFrame) -> pd.DataFrame:
    """One row per host: its runs, pools, pool replicates (blocks) and configurations."""
    if "host" not in df or df["host"].isna().all():
        return pd.DataFrame(columns=["host", "runs", "pools", "blocks", "configurations"])
    d = df.dropna(subset=["host"])
    base = d["config_id"].astype(str).str.replace(_REPLICATE, "", regex=True)
    return (d.assign(base=base).groupby("host")
            .agg(runs=("run_id", "nunique"), pools=("pool_id", "nunique"), blocks=("pool_replicate", "nunique"),
                 configurations=("base", "nunique"))
            .reset_index())


def host_agreement(df: pd.DataFrame, metric: str = "iops", margin: float = MARGIN) -> pd.DataFrame:
    """Per configuration run on >= 2 hosts: each host's mean of `metric`, max/min ratio, within margin."""
    cols = ["configuration", "direction", "hosts", "host_means", "ratio", "agree"]
    if "host" not in df or metric not in df:
        return pd.DataFrame(columns=cols)
    d = df[admissible_mask(df)].dropna(subset=["host", metric]) if len(df) else df
    d = d.assign(configuration=d["config_id"].astype(str).str.replace(_REPLICATE, "", regex=True))
    rows = []
    for (conf, direction), g in d.groupby(["configuration", "direction"]):
        means = g.groupby("host")[metric].mean()
        if len(means) < 2 or means.min() <= 0:
            continue
        ratio = float(means.max() / means.min())
        rows.append({"configuration": conf, "direction": direction, "hosts": len(means),
                     "host_means": {h: round(float(v), 1) for h, v in means.items()},
                     "ratio": round(ratio, 3), "agree": ratio <= 1 + margin})
    return pd.DataFrame(rows, columns=cols)
