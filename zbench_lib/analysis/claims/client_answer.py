"""The first screen's line on how several clients shared one datastore (issue 30): one per workload.

A sweep whose load came from client VMs asks how fairly they shared the datastore and what p99 each of
them saw; the answer's other lines say how the aggregate scales. This line reads `stats.fairness.fairness_table`
at the workload's largest client count (the most clients competing for the datastore), per configuration held
equal (sync standard, always): the lowest and highest share of the window's IOPS any client got in any run,
beside the fair share, Jain's index with its 95% interval over the runs or pools, and the lowest and highest of
the clients' own p99s (each a typical unit's, read from that client's own bins, with its 95% interval:
`fairness.client_tails`). No verdict ("fair", "one client is slower"): no margin of fairness is stated to judge
the index against, and no test compares the clients' p99s.

    answer_fairness(table, by)     [{subject, text}], one per workload and direction
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.analysis.claims.wording import ci_text, num
from zbench_lib.analysis.data.coverage import bare_reason
from zbench_lib.analysis.data.sweep_data import setting_text
from zbench_lib.analysis.stats.fairness import ClientP99, client_p99s

FAIRNESS_NOTE = ("Fairness, at each workload's largest client count: the lowest and highest share of the IOPS any "
                 "one client got in any run, over the window all of them shared (a fair share is 1 / clients), Jain's "
                 "index of the clients' IOPS (1 when equal, 1 / clients when one had it all) with its 95% CI, and "
                 "the lowest and highest of the clients' own p99s, each a typical unit's (each run's, or pool's, own "
                 "p99 from that client's latency bins, their geometric mean) with its 95% CI (methods §18, §20); "
                 "every client count and client is in the report's table \"Clients on one datastore\". With clients, "
                 "every IOPS and p99 above is their aggregate.")
PANEL = ("workload", "direction")


def _pct(share: float) -> str:
    """25, 33.3, 23.7 (percent): three significant figures, no trailing zero (a fair share of 25.0 reads as
    measured)."""
    return f"{100 * share:.3g}"


def _p99(p: ClientP99) -> str:
    """'c4 165 ms (75–327)': a judged client's p99 with its interval, in ms, as the answer's other p99s."""
    return f"{p.client} {num(p.value_ns / 1e6)} ms ({ci_text(p.ci_low_ns / 1e6, p.ci_high_ns / 1e6, level='')})"


def _p99s(row: pd.Series) -> str:
    """The clients' p99s of a cell, from the lowest to the highest where two or more are judged, and the clients
    whose p99 is not judged with the reason, said once for the clients that share it."""
    clients = client_p99s(row)
    judged = sorted((p for p in clients if p.judged), key=lambda p: p.value_ns)
    parts = [f"{_p99(judged[0])} to {_p99(judged[-1])}" if len(judged) > 1 else _p99(judged[0])] if judged else []
    unjudged: dict[str, list[str]] = {}
    for p in clients:
        if not p.judged:
            unjudged.setdefault(bare_reason(p.status), []).append(p.client)
    parts += [f"p99 of {', '.join(names)} not judged ({why})" for why, names in unjudged.items()]
    # " and ": a configuration's share and p99s are comma-separated
    return " and ".join(parts) or "p99 not judged (no client's own p99 in the results)"


def _shares(row: pd.Series) -> str:
    low, high = row.get("share_min"), row.get("share_max")
    if pd.isna(low) or pd.isna(high):
        return "share not judged (the results hold no client's share of the IOPS)"
    return f"{_pct(low)}–{_pct(high)}%"


def _jain(row: pd.Series) -> str:
    """"Jain's index 0.999 (95% CI 0.986–1.000, 2 pools)", or why there is none."""
    mean, n = row.get("jain_mean"), row.get("jain_n")
    if mean is None or pd.isna(mean):
        return "Jain's index not judged (the results hold no client's IOPS over a shared window)"
    unit = f"{int(n)} {row.get('unit') if isinstance(row.get('unit'), str) else 'run'}{'s' if n != 1 else ''}"
    ci = ci_text(row["jain_ci_low"], row["jain_ci_high"], digits=3) if n > 1 else "no interval"
    return f"Jain's index {mean:.3f} ({ci}, {unit})"


def _per_group(rows: pd.DataFrame, groups: list[str]) -> str:
    """'sync always 24.4–25.7%, c1 659 ms (50–3,959) to c3 709 ms (466–1,443); sync standard ...': each
    configuration's shares and p99s, named by its group; a text every configuration shares (a reason not
    judged) once, for all."""
    texts = [f"{_shares(r)}, {_jain(r)}, {_p99s(r)}" for _, r in rows.iterrows()]
    if len(set(texts)) == 1:
        return texts[0]
    names = [" ".join(setting_text(c, r[c]) for c in groups) for _, r in rows.iterrows()]
    return "; ".join(f"{n} {t}".strip() for n, t in zip(names, texts))


def _at_most(rows: pd.DataFrame, groups: list[str], most: int) -> str:
    """The line at the largest client count `most`: each configuration's shares, Jain's index and p99s."""
    return (f"at {most} clients (a fair share: {_pct(1 / most)}%), each client's share of the IOPS in every run, "
            f"Jain's index and each client's own p99, lowest to highest: {_per_group(rows, groups)}.")


def _subject(key: tuple, panel: list[str], several: bool) -> str:
    """'Fairness', or with several workloads (or directions) 'Fairness, randrw read'."""
    return "Fairness" + (", " + " ".join(str(v) for v in key) if several and panel else "")


def answer_fairness(table: pd.DataFrame, by: list[str]) -> list[dict]:
    """One line per workload and direction of the fairness table `table` (its cells: `by`, the client count among
    them), read at the largest client count: what each client's share and p99 were, or why it is not judged."""
    if table is None or table.empty or "clients" not in table:
        return []
    panel = [c for c in PANEL if c in by]
    groups = [c for c in by if c not in panel and c != "clients"]
    parts = list(table.groupby(panel, sort=True, dropna=False)) if panel else [((), table)]
    out = []
    for key, g in parts:
        key = key if isinstance(key, tuple) else (key,)
        most = int(g["clients"].max())
        rows = g[g["clients"] == most]
        rows = rows.sort_values(groups, kind="stable") if groups else rows
        text = _at_most(rows, groups, most) if most > 1 else "not judged: one client in every run, nothing shared."
        out.append(dict(subject=_subject(key, panel, len(parts) > 1), text=text))
    return out
