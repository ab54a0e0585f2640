"""Which metric each row is judged in (docs/methods.md §9): the workload registry's, in one place.

A workload is judged in its own metric: bandwidth (`bw_bytes_s`) for the bandwidth questions
(sequential), IOPS for the others (`measure/workloads/`, each record's `metric`). A row names its
workload's template (`template`) where the store has the column, else only its workload's name;
`metric="auto"` asks the registry for each row, any other value is the metric a caller chose for
every row. Every reader (tables, summaries, figures, exports, notebooks) resolves "auto" here, so no
page judges a sequential workload in IOPS beside another in bandwidth.

    workload_metric(workload, template=None)   the metric one workload is judged in
    judged_metrics(df, metric="auto")          per row: `metric`, or with "auto" its workload's
    metric_parts(df, metric="auto")            [(metric, the rows judged in it)], sorted by metric
    metric_of(rows, metric="auto")             the one metric of a workload's rows (a row, or a frame)
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.measure.workloads import judged_metric

AUTO = "auto"


def workload_metric(workload, template=None) -> str:
    """The metric a workload is judged in, its template's (measure/workloads/): bw_bytes_s for the
    bandwidth questions, else iops.

    Examples
    --------
    >>> workload_metric("seqread"), workload_metric("randread-4k"), workload_metric("big", "seqwrite")
    ('bw_bytes_s', 'iops', 'bw_bytes_s')
    """
    name = str(template if template is not None and template == template else workload)
    return judged_metric(name)


def judged_metrics(df: pd.DataFrame, metric: str = AUTO) -> pd.Series:
    """Per row, the metric it is judged in: `metric`, or with "auto" its template's (its workload's name
    where the template is missing)."""
    if metric != AUTO:
        return pd.Series(metric, index=df.index, dtype=object)
    wl = df["workload"].astype(str) if "workload" in df else pd.Series("", index=df.index)
    name = df["template"].astype(object).where(df["template"].notna(), wl) if "template" in df else wl
    return name.astype(str).map(judged_metric)


def metric_parts(df: pd.DataFrame, metric: str = AUTO) -> list[tuple[str, pd.DataFrame]]:
    """The rows of `df` by the metric each is judged in (`judged_metrics`), sorted by metric."""
    m = judged_metrics(df, metric)
    return [(k, df[m == k]) for k in sorted(m.unique())]


def metric_of(rows, metric: str = AUTO) -> str:
    """The metric the rows of one workload are judged in (a row, or a frame: its first row's);
    `metric` itself unless "auto"."""
    if metric != AUTO:
        return metric
    frame = rows.to_frame().T if isinstance(rows, pd.Series) else rows
    return str(judged_metrics(frame.head(1)).iloc[0]) if len(frame) else judged_metric("")
