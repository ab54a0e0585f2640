"""What fio runs on, beyond the ZFS target itself: a filesystem made on a zvol (``fs-on-zvol``).

``on_surface(...)`` takes the zvol the pool made and, for ``fs-on-zvol``, formats and mounts
it (zfs/filesystems), records what was made (fs, block size, mount options) and yields the
target with fio's file in place of the block device; it unmounts before the pool goes. For
``zvol`` and ``dataset`` it yields the target unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses

from zbench_lib.zfs.filesystems import FsOnZvol


@contextlib.contextmanager
def on_surface(host, tinfo, target: dict, store):
    """Yield the TargetInfo fio and prefill use for this target."""
    if target.get("fs") in (None, "none"):
        yield tinfo
        return
    with FsOnZvol(host, tinfo.path, fs=target["fs"], size_bytes=target["file_bytes"]) as fs:
        store.record("filesystem made", target_id=target["target_id"], **fs.readback())
        yield dataclasses.replace(tinfo, path=fs.file_path)
