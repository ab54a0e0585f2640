"""What some results give up or cannot say, stated on the report's index page beside them.

``caveats(results)`` returns sentences for settings a reader could otherwise take for free
tuning (sync=disabled), for surfaces whose numbers mean something narrower than their
name suggests (a loopback NFS mount, ext4 on a zvol, client VMs over QEMU's user networking),
and for rows whose declared L2ARC warm-up fell short (their reads met a partly cold cache).
Only what the results contain.
"""

from __future__ import annotations

import pandas as pd


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


def caveats(df: pd.DataFrame) -> list[str]:
    out = []
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
