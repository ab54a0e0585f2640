"""What some results give up or cannot say, stated on the report's index page beside them.

``caveats(results)`` returns sentences for settings a reader could otherwise take for free
tuning (sync=disabled), for surfaces whose numbers mean something narrower than their
name suggests (a loopback NFS mount, ext4 on a zvol, client VMs over QEMU's user networking),
for rows whose declared L2ARC warm-up fell short (their reads met a partly cold cache), and for
dataset rows that compare two I/O paths across OpenZFS releases (O_DIRECT honoured on 2.3, buffered
on 2.1). ``io_path_line(results)`` is the one sentence every page and export carries on the I/O path
each workload took (issue 44). ``import_line(results)`` is what an imported sweep's rows cannot say
(issue 49: no counters, so no truth check beyond fio's own figures, the environment as given, one run per
cell), carried by every page and export in the same caveat line. Only what the results contain.
"""

from __future__ import annotations

import pandas as pd

from zbench_lib.sweeps.spec.io_path import DIRECT_IO_RELEASE, release


# What a client-side number includes (issue 30; hosts/lab_clients.py says why the path is so), by
# how the clients reached the datastore (the rows' `access`).
_CLIENTS_PATH = {
    "nfs": "each mounting the dataset over NFS 4.2 with stable writes and running fio on a file of its own",
    "iscsi": "each logged in over iSCSI to one LUN (the zvol, served by LIO) and running fio on a region of its "
             "own; LIO shows the clients the zvol's write cache, so a write a client neither flushes nor marks "
             "FUA is an asynchronous write on the zvol unless its sync is always (as with ESXi's iSCSI writes; "
             "each client's view is in the 'iscsi datastore logged in' event)",
}
_CLIENTS_STACK = {"nfs": "NFS stack", "iscsi": "iSCSI initiator and block layer"}
CLIENTS_CAVEAT = ("clients rows were driven by client VMs, {path}: every latency and rate is what the clients saw, "
                  "so it includes the network between them and the storage lab and each client's own {stack}, "
                  "kernel and CPU. In the lab that network is QEMU's user-mode networking on the controller's CPUs: "
                  "every byte crosses two user-mode network stacks (the client's QEMU and the storage lab's), which "
                  "bounds the rates and adds latency no switch would; the storage lab's counters count what "
                  "reached it. Compare clients levels with each other, not with a loopback or local run.")


def clients_caveat(access: str) -> str:
    return CLIENTS_CAVEAT.format(path=_CLIENTS_PATH[access], stack=_CLIENTS_STACK[access])


def _has(df: pd.DataFrame, column: str, value) -> bool:
    return column in df.columns and (df[column].astype(str) == str(value)).any()


_O_SYNC = {"sync": "O_SYNC", "dsync": "O_DSYNC"}


def _path(row) -> str:
    direct = "O_DIRECT" if str(row["direct"]) in ("1", "1.0", "True") else "buffered"
    return ", ".join(p for p in (str(row["ioengine"]), direct, _O_SYNC.get(str(row.get("o_sync")), "")) if p)


def io_path_line(df: pd.DataFrame) -> str:
    """'I/O path: randwrite-sync psync, buffered, O_SYNC; randread libaio, O_DIRECT.' ("" for rows
    recorded before the path was: rebuild them from raw)."""
    if not {"ioengine", "direct", "workload"} <= set(df.columns) or df["ioengine"].isna().all():
        return ""
    cols = [c for c in ("workload", "ioengine", "direct", "o_sync") if c in df.columns]
    paths = df[cols].dropna(subset=["ioengine"]).drop_duplicates()
    by_workload: dict[str, list[str]] = {}
    for _, row in paths.iterrows():
        by_workload.setdefault(str(row["workload"]), []).append(_path(row))
    return "I/O path: " + "; ".join(f"{w} {' or '.join(dict.fromkeys(p))}" for w, p in by_workload.items()) + "."


def _imported(df: pd.DataFrame) -> pd.DataFrame:
    if "imported" not in df.columns:
        return df.iloc[0:0]
    return df[df["imported"].astype("boolean").fillna(False).to_numpy(bool)]


def _runs_with(rows: pd.DataFrame, column: str) -> int:
    return int(rows.loc[rows[column].notna(), "run_id"].nunique()) if column in rows.columns else 0


def _one_run_cells(rows: pd.DataFrame) -> str:
    """'One run per cell: no interval.', 'k of n cells have one run: no interval there.' or ''."""
    cell = "config_id" if "config_id" in rows.columns else "cell_id"
    runs = rows.groupby(cell)["run_id"].nunique()
    one = int((runs == 1).sum())
    if not one:
        return ""
    return " One run per cell: no interval." if one == len(runs) else \
        f" {one} of {len(runs)} cells have one run: no interval there."


def import_line(df: pd.DataFrame) -> str:
    """What imported rows cannot say (see the module's text); "" when no row was imported.

    >>> rows = pd.DataFrame({"imported": [True, True], "run_id": ["a", "b"], "config_id": ["c1", "c2"],
    ...                      "import_environment": ["not recorded"] * 2})
    >>> import_line(rows)[:60]
    'Imported fio results (2 runs read from fio JSON measured else'
    """
    rows = _imported(df)
    if rows.empty:
        return ""
    runs = rows["run_id"].nunique()
    steady, clients = _runs_with(rows, "flag_not_steady"), _runs_with(rows, "client_fio_sum_agrees")
    judged = [f"not_steady from fio's own steadystate in {steady} runs" if steady else "",
              f"the clients' sum against fio's 'All clients' in {clients} runs" if clients else ""]
    judged_text = "; ".join(j for j in judged if j)
    judged_text = f", but where fio's own figures allow: {judged_text}" if judged_text else \
        " (fio's own figures allow none here)"
    env = sorted(set(rows["import_environment"].dropna().astype(str))) if "import_environment" in rows else []
    env_text = "; ".join(env) if env else "not recorded"
    of = f" ({runs} of {df['run_id'].nunique()} runs)" if len(rows) < len(df) else ""
    return (f"Imported fio results ({runs} runs read from fio JSON measured elsewhere{of}): no counters were recorded, "
            f"so the truth checks are not judged{judged_text}; whether repetitions ran on one pool or on re-created "
            f"ones is not recorded; environment: {env_text}." + _one_run_cells(rows))


def _configurations(df: pd.DataFrame) -> pd.Series:
    """Each row's configuration across pool replicates: its config id without the replicate's suffix."""
    return df["config_id"].astype(str).str.replace(r"-pr\d+$", "", regex=True)


def unit_line(df: pd.DataFrame) -> str:
    """What the intervals speak for (issue 45): 'Units: 3 pools per configuration, ...' or the caveat that
    they speak for one pool each; and whether reruns replayed one random sequence. "" without the columns."""
    if not {"config_id", "pool_replicate"} <= set(df.columns) or df.empty:
        return ""
    d = df.assign(_config=_configurations(df))
    pools = d.groupby("_config")["pool_replicate"].nunique()
    if pools.min() >= 2:
        lo, hi = int(pools.min()), int(pools.max())
        line = (f"Units: {lo if lo == hi else f'{lo}-{hi}'} independently created pools per configuration; "
                "intervals and comparisons speak for the configurations.")
    else:
        one = int((pools < 2).sum())
        which = "Every configuration was" if one == len(pools) else f"{one} of {len(pools)} configurations were"
        line = (f"{which} measured on one pool: their intervals are the spread of reruns on that pool, and a "
                "comparison with them speaks for those pools, not for the configurations "
                "(repetitions.pool_replicates re-creates them).")
    return line + _replayed(d)


def _replayed(d: pd.DataFrame) -> str:
    """' Runs ... replay one random sequence' where every configuration with several runs had one randseed."""
    if "randseed" not in d.columns or d["randseed"].isna().all():
        return ""
    runs = d.dropna(subset=["randseed"]).groupby("_config").agg(n=("run_id", "nunique"), seeds=("randseed", "nunique"))
    several = runs[runs["n"] > 1]
    if several.empty or (several["seeds"] > 1).any():
        return ""
    return (" Runs of each configuration replay one random sequence (one randseed): their spread leaves out "
            "the variation of the disks' positional service times a new sequence would meet.")


def _release_paths(df: pd.DataFrame) -> list[str]:
    """Local dataset rows with O_DIRECT on both sides of OpenZFS 2.3 (sweeps/spec/io_path.py refuses such a
    sweep; rows loaded together from several sweeps can still meet)."""
    need = {"zfs", "direct", "surface"}
    if not need <= set(df.columns):
        return []
    rows = df[(df["surface"].astype(str) == "dataset") & (df["direct"].astype(str).isin(["1", "1.0"]))]
    if "access" in rows.columns:
        rows = rows[rows["access"].fillna("local").astype(str) == "local"]
    releases = sorted(set(rows["zfs"].dropna().astype(str)), key=release)
    if not releases or not release(releases[0]) < DIRECT_IO_RELEASE <= release(releases[-1]):
        return []
    return [f"Dataset rows with direct=1 on OpenZFS {', '.join(releases)} compare two I/O paths: 2.3 honours "
            "O_DIRECT on a file (Direct I/O: data blocks straight to the pool, a sync write leaves only a pointer "
            "in the log, reads bypass the ARC), 2.1 buffers the same I/O. A difference between the releases "
            "there is partly the path, not only the release."]


def caveats(df: pd.DataFrame) -> list[str]:
    out = _release_paths(df)
    if _has(df, "sync", "disabled"):
        txg = df["txg_timeout_s"].dropna() if "txg_timeout_s" in df else pd.Series(dtype=float)
        window = f"{int(txg.max())} s, zfs_txg_timeout" if len(txg) else "zfs_txg_timeout"
        out.append("sync=disabled acknowledges every write, fsync and NFS COMMIT before it is on stable "
                   "storage: the ZIL is skipped and data waits for the next transaction group. After a crash "
                   f"or power loss, up to the last transaction groups of acknowledged writes (about {window}) "
                   "are lost while the client (a database, an ESXi datastore) believes them committed. Its "
                   "rows are a reference line for what durability costs, not a setting to deploy where "
                   "durability matters.")
    if "clients" in df.columns and df["clients"].notna().any():
        clients = df[df["clients"].notna()]
        out += [clients_caveat(a) for a in sorted(clients["access"].dropna().unique()) if a in _CLIENTS_PATH]
    elif _has(df, "access", "nfs"):
        out.append("access=nfs is an NFSv3 mount of the dataset inside the lab VM itself (loopback, client and "
                   "server on the same virtual CPUs), with stable writes as an ESXi datastore issues them: it "
                   "measures the sync path ZFS takes for such a client (ZIL, log device), not a network or a "
                   "separate NFS client's CPU.")
    out += _l2arc_warmup(df)
    if _has(df, "fs", "ext4"):
        out.append("fs=ext4 rows ran on a file in ext4 (4K blocks, noatime) made on a zvol of the same pool: "
                   "they include ext4's journal and allocation on top of the zvol, and compare with the fs=none "
                   "rows of the same pool.")
    return out


def _l2arc_warmup(df: pd.DataFrame) -> list[str]:
    """Rows whose L2ARC warm-up stopped short of its goal: kept, and named here with how far they got."""
    if "l2arc_warm_reached" not in df.columns:
        return []
    warmed = df[df["l2arc_warm_reached"].notna()]
    if "direction" in warmed.columns:           # a write row's numbers do not read the cache
        warmed = warmed[warmed["direction"] == "read"]
    short = warmed[~warmed["l2arc_warm_reached"].astype(bool)]
    if short.empty:
        return []
    frac = pd.to_numeric(short["l2arc_warm_fraction"], errors="coerce").dropna() * 100
    until = sorted({f"{u * 100:g}%" for u in pd.to_numeric(short["l2arc_warm_until"], errors="coerce").dropna()})
    lo, hi = (round(frac.min()), round(frac.max())) if len(frac) else (None, None)
    got = "an unrecorded share" if lo is None else f"{lo}%" if lo == hi else f"{lo}-{hi}%"
    goal = " or ".join(until) or "its declared share"
    stops = ", ".join(f"{k}: {v}" for k, v in short["l2arc_warmup_stop"].value_counts().items())
    return [f"The L2ARC warm-up did not reach its goal for {len(short)} of {len(warmed)} warmed read rows: the cache "
            f"held {got} of min(target, cache devices) where {goal} was declared (stopped by {stops}). Their "
            "reads met a partly cold L2ARC and show less of what a warm one gives; they are kept, "
            "not excluded. l2arc_warm_fraction and l2_hit_ratio say how far each got."]
