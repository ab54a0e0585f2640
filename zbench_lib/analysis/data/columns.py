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
# A mechanism disk model's name starts with it (hosts.mech_models.PREFIX, a test keeps them equal): analysis may
# not import hosts, and a caveat or the environment summary tells it from a QEMU throttle by its name.
MECH_PREFIX = "mech:"
# An imported sweep's user labels (a kernel, a branch, a controller: sweeps/importing/fields.py, whose
# LABEL_PREFIX a test keeps equal) are configuration columns too, named `label_<name>`: a sweep has its own.
LABEL_PREFIX = "label_"


class _ConfigColumns(tuple):
    """The configuration columns every sweep can have, which also hold, by their prefix, the user labels an
    imported sweep has of its own: `column in CONFIG_COLUMNS` is true of them (the notebooks ask it so),
    iterating gives the fixed ones (`config_columns(df)` adds a table's labels)."""

    def __contains__(self, column) -> bool:
        return tuple.__contains__(self, column) or str(column).startswith(LABEL_PREFIX)


# Every column a sweep can vary: grouping by all that vary keeps configurations apart (a raw
# row has no ZFS columns: NaN there, which nunique and groupby(dropna=False) keep apart)
CONFIG_COLUMNS = _ConfigColumns(("workload", "direction", "layout", "width", "vdevs", "data_disks", "total_disks",
                  "draid_data", "draid_spares", "ashift", "log", "log_mirror", "cache", "special", "zfs", "fill",
                  "model", "log_model", "cache_model", "special_model", "fs", "access", "surface",
                  "volblocksize_bytes", "recordsize_bytes", "compression", "compressible_percent", "sync", "logbias",
                  "primarycache", "secondarycache", "checksum", "copies", "atime", "special_small_blocks",
                  *MODULE_PARAM_COLUMNS, "iodepth", "numjobs", "bs_bytes", "ioengine", "direct", "o_sync", "load",
                  "clients", "fio_size_bytes", "fio_runtime_s", "sweep_id"))
LAYOUT_COLUMNS = ("layout", "width", "vdevs", "data_disks", "total_disks")


def config_columns(df) -> tuple:
    """CONFIG_COLUMNS and, before sweep_id, the user labels `df` has (sorted): every column to group
    configurations by."""
    labels = tuple(sorted(c for c in df.columns if str(c).startswith(LABEL_PREFIX)))
    return (*CONFIG_COLUMNS[:-1], *labels, CONFIG_COLUMNS[-1])
