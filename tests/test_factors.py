"""The factor registry (issue 28, item 4): one record per factor, read by the spec and the raw sweeps.

The spec's messages and the results' columns are pinned elsewhere (test_malformed_inputs,
test_sweep_spec, test_raw_cells); here: the registry keeps the order the spec always listed its
factors in, the surfaces each factor always had, and columns the analysis knows.
"""

from __future__ import annotations

from zbench_lib.analysis.data.columns import CONFIG_COLUMNS
from zbench_lib.sweeps.spec import factors
from zbench_lib.sweeps.spec.raw_cells import RAW_FACTORS
from zbench_lib.zfs.module_params import PARAMS

# The tuples the factors lived in before the registry (sweep_spec, spec/pool, raw_cells), by hand.
BEFORE = (("layout", "disks", "width", "vdevs", "mirror_width", "log", "ashift", "fill", "zfs")
          + ("cache", "special", "log_mirror", "model", "log_model", "cache_model", "special_model", *PARAMS)
          + ("volblocksize", "recordsize")
          + ("compression", "sync", "logbias", "primarycache", "secondarycache", "checksum", "copies", "atime",
             "special_small_blocks")
          + ("iodepth", "numjobs", "bs", "compressible_percent") + ("fs", "access"))
# factors added since, at the end of the spec's list (issue 33: open loop; issue 30; issue 44: the I/O path)
ADDED = ("load", "clients", "ioengine", "direct")


def test_the_registry_lists_the_factors_in_the_order_the_spec_always_gave():
    assert factors.NAMES == BEFORE + ADDED
    # the bare disks take the I/O path too (fio's engine and O_DIRECT on the device itself)
    assert set(RAW_FACTORS) == {"layout", "disks", "model", "fill", "iodepth", "numjobs", "bs", "load", "ioengine",
                                "direct"}
    assert factors.PROPERTIES == BEFORE[-15:-6]


def test_which_sweeps_take_which_factor():
    take = {s: {f.name for f in factors.FACTORS if f.refuses(s) is None} for s in factors.ALL}
    assert set(BEFORE) - take["zvol"] == {"recordsize", "access", "atime", "special_small_blocks"}
    assert set(BEFORE) - take["fs-on-zvol"] == {"recordsize", "access", "atime", "special_small_blocks", "fs"}
    assert set(BEFORE) - take["dataset"] == {"volblocksize", "fs"}
    assert {"load"} <= take["zvol"] & take["dataset"] & take["fs-on-zvol"]     # the load: every surface
    # clients: a dataset's over NFS, a zvol's over iSCSI (spec/clients.py refuses the wrong access)
    assert "clients" in take["dataset"] & take["zvol"] and "clients" not in take["fs-on-zvol"] | take["raw"]
    assert take["raw"] == set(RAW_FACTORS)
    refused = factors.BY_NAME["recordsize"].refuses("zvol")
    assert refused == "recordsize does not apply to a zvol sweep (use volblocksize)"


def test_every_factor_shows_in_a_column_the_analysis_groups_by():
    assert {f.column for f in factors.FACTORS} <= set(CONFIG_COLUMNS)
