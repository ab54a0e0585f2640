"""What some results give up or cannot say, stated on the report's index page beside them.

``caveats(results)`` returns sentences for settings a reader could otherwise take for free
tuning (sync=disabled) and for surfaces whose numbers mean something narrower than their
name suggests (a loopback NFS mount, ext4 on a zvol). Only what the results contain.
"""

from __future__ import annotations

import pandas as pd


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
    if _has(df, "access", "nfs"):
        out.append("access=nfs is an NFSv3 mount of the dataset inside the lab VM itself (loopback, client and "
                   "server on the same virtual CPUs), with stable writes as an ESXi datastore issues them: it "
                   "measures the sync path ZFS takes for such a client (ZIL, log device), not a network or a "
                   "separate NFS client's CPU.")
    if _has(df, "fs", "ext4"):
        out.append("fs=ext4 rows ran on a file in ext4 (4K blocks, noatime) made on a zvol of the same pool: "
                   "they include ext4's journal and allocation on top of the zvol, and compare with the fs=none "
                   "rows of the same pool.")
    return out
