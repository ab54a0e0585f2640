"""What fio runs on, beyond the ZFS target itself.

- ``fs: ext4`` (zvol sweeps, or ``surface: fs-on-zvol``): the zvol is formatted and mounted
  (zfs/filesystems) and fio runs on a file inside; prefill writes that file;
- ``access: nfs`` (dataset sweeps): the dataset is exported over NFS to the lab itself and
  mounted with stable writes, as an ESXi datastore is (zfs/nfs_share); prefill writes the file
  locally first (a datastore's disks are written before they are measured), fio then runs
  through the mount.

``on_surface(...)`` records what was made, read back, and yields (target info for fio, what the
``prefill`` callback returned: the prefill's record and the L2ARC warm-up's, which read where the
prefill wrote); it unmounts (and unexports) before the pool goes. Otherwise it prefills and
yields the target unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath

from zbench_lib.core.events import Event
from zbench_lib.zfs.filesystems import FsOnZvol


@contextlib.contextmanager
def on_surface(host, tinfo, target: dict, store, prefill):
    """Yield (TargetInfo fio uses, what ``prefill(tinfo)`` returned); ``prefill`` writes the target."""
    if target.get("fs") not in (None, "none"):
        with FsOnZvol(host, tinfo.path, fs=target["fs"], size_bytes=target["file_bytes"]) as fs:
            store.record(Event.FILESYSTEM_MADE, target_id=target["target_id"], **fs.readback())
            mounted = dataclasses.replace(tinfo, path=fs.file_path)
            yield mounted, prefill(mounted)
    elif target.get("access") == "nfs":
        from zbench_lib.zfs.nfs_share import NfsDatastore
        filled = prefill(tinfo)
        with NfsDatastore(host, posixpath.dirname(tinfo.path), size_bytes=target["size_bytes"]) as nfs:
            store.record(Event.NFS_DATASTORE_MOUNTED, target_id=target["target_id"], **nfs.readback())
            yield dataclasses.replace(tinfo, path=nfs.file_path), filled
    else:
        yield tinfo, prefill(tinfo)
