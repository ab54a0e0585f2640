"""The results' configuration columns: what a sweep can vary, the one list the analysis keeps of them.

Every factor of the spec's registry (`sweeps/spec/factors.py`) shows in one of these columns
(tests/test_factors.py checks it); the analysis may not import the registry (its validators import
the hosts), so it keeps this list, at the bottom of its `data` room: `sweep_data` groups
configurations by it and `coverage` identifies a cell by it, neither importing the other for it.
"""

from __future__ import annotations

# ZFS module parameters a sweep may vary (zfs.module_params.PARAMS; a test keeps the two equal:
# analysis may not import the module, which talks to hosts)
MODULE_PARAM_COLUMNS = ("zfs_txg_timeout", "zfs_dirty_data_max", "zfs_vdev_async_write_max_active",
                        "zfs_vdev_async_write_min_active", "zfs_vdev_sync_write_max_active",
                        "zfs_vdev_sync_read_max_active", "zfs_vdev_async_read_max_active", "zfs_vdev_max_active",
                        "zfs_prefetch_disable", "zfs_arc_max", "l2arc_write_max", "l2arc_write_boost",
                        "l2arc_noprefetch", "l2arc_headroom", "zil_slog_bulk", "zfs_immediate_write_sz")
# Every column a sweep can vary: grouping by all that vary keeps configurations apart (a raw
# row has no ZFS columns: NaN there, which nunique and groupby(dropna=False) keep apart)
# A mechanism disk model's name starts with it (hosts.mech_models.PREFIX, a test keeps them equal): analysis may
# not import hosts, and a caveat or the environment summary tells it from a QEMU throttle by its name.
MECH_PREFIX = "mech:"
CONFIG_COLUMNS = ("workload", "direction", "layout", "width", "vdevs", "data_disks", "total_disks",
                  "draid_data", "draid_spares", "ashift", "log", "log_mirror", "cache", "special", "zfs", "fill",
                  "model", "log_model", "cache_model", "special_model", "fs", "access", "surface",
                  "volblocksize_bytes", "recordsize_bytes", "compression", "compressible_percent", "sync", "logbias",
                  "primarycache", "secondarycache", "checksum", "copies", "atime", "special_small_blocks",
                  *MODULE_PARAM_COLUMNS, "iodepth", "numjobs", "bs_bytes", "ioengine", "direct", "o_sync", "load",
                  "clients", "sweep_id")
LAYOUT_COLUMNS = ("layout", "width", "vdevs", "data_disks", "total_disks")
