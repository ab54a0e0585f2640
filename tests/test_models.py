"""raidz allocation (OpenZFS vdev_raidz_asize) and the random-read IOPS model."""

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.families.raidz import raidz_asize, raidz_data_columns
from zbench_lib.zfs.models import (predicted_random_read_iops,
                                   space_efficiency, space_table, zfs_charged_bytes)

K = 1024


@pytest.mark.parametrize("vbs_k,expected", [(4, 1 / 3), (8, 1 / 3), (16, 2 / 3), (32, 2 / 3),
                                            (64, 2 / 3), (128, 2 / 3)])
def test_raidz2_of_6_at_ashift_12(vbs_k, expected):
    assert space_efficiency("raidz2", 6, vbs_k * K, 12) == pytest.approx(expected)


@pytest.mark.parametrize("vbs_k,expected", [(4, 0.5), (8, 0.5), (16, 2 / 3), (32, 0.8),
                                            (64, 0.8), (128, 0.8)])
def test_raidz1_of_5_at_ashift_12(vbs_k, expected):
    assert space_efficiency("raidz1", 5, vbs_k * K, 12) == pytest.approx(expected)


def test_raidz_asize_by_hand():
    # raidz1 of 5, 32K: s = 8; s += 1·ceil(8/4) = 10; roundup(10, 2) = 10 sectors
    assert raidz_asize(32 * K, 12, 5, 1) == 10 * 4 * K
    # raidz2 of 6, 8K: s = 2; s += 2·ceil(2/4) = 4; roundup(4, 3) = 6 sectors (= triple mirror)
    assert raidz_asize(8 * K, 12, 6, 2) == 6 * 4 * K
    # raidz3 of 8, 128K: s = 32; s += 3·ceil(32/5) = 53; roundup(53, 4) = 56
    assert raidz_asize(128 * K, 12, 8, 3) == 56 * 4 * K
    # ashift 9, 4K on raidz1 of 3: s = 8; s += ceil(8/2) = 12; roundup(12, 2) = 12
    assert raidz_asize(4 * K, 9, 3, 1) == 12 * 512
    # a partial sector still takes a whole sector
    assert raidz_asize(1, 12, 5, 1) == raidz_asize(4 * K, 12, 5, 1) == 2 * 4 * K


def test_stripe_and_mirror_efficiency():
    assert space_efficiency("stripe", 4, 8 * K) == 1.0
    assert space_efficiency("mirror", 2, 8 * K) == 0.5
    assert space_efficiency("mirror", 3, 128 * K) == pytest.approx(1 / 3)
    assert space_efficiency("stripe", 1, 2 * K, 12) == 0.5      # half a 4K sector


def test_invalid_layouts():
    with pytest.raises(ConfigError):
        raidz_asize(8 * K, 12, 2, 2)
    with pytest.raises(ConfigError):
        space_efficiency("raid6", 6, 8 * K)
    with pytest.raises(ConfigError):
        raidz_asize(8 * K, 20, 6, 2)


def test_zfs_charged_bytes_deflates_by_128k_ratio():
    # raidz2 of 6: asize(128K) = 48 sectors = 384 × 512 B; ratio = 131072 // 384 = 341
    assert zfs_charged_bytes(128 * K, "raidz2", 6) == 384 * 341
    assert zfs_charged_bytes(8 * K, "raidz2", 6) == 48 * 341       # ≈ 16K, not the 24K allocated
    assert zfs_charged_bytes(8 * K, "mirror", 2) == 8 * K


def test_space_table():
    t = space_table([("raidz2", 6), ("mirror", 2)])
    assert len(t) == 12
    assert {"layout", "width", "ashift", "volblocksize_bytes", "allocated_bytes", "efficiency",
            "charged_bytes"} <= set(t.columns)
    r = t.query("layout == 'raidz2' and volblocksize_bytes == 8192").iloc[0]
    assert r.allocated_bytes == 24 * K and r.efficiency == pytest.approx(1 / 3)
    assert t.query("layout == 'mirror'").allocated_bytes.tolist() == \
        [2 * v for v in t.query("layout == 'mirror'").volblocksize_bytes]
    single = space_table(("raidz1", 5), volblocksizes=[32 * K])
    assert single.efficiency.item() == pytest.approx(0.8)


def test_random_read_iops_model():
    # raidz2 of 6, 16K: 4 data sectors fill the 4 data columns; a healthy read skips parity:
    # 4 of 6 disks busy per read → 200 · 6/4 (the parity-counting model said 200)
    assert predicted_random_read_iops("raidz2", 6, 1, 200, 16 * K) == 300
    assert predicted_random_read_iops("raidz2", 6, 2, 200, 128 * K) == 600
    # 4K block: one sector, one disk → the vdev serves reads on all 6 disks
    assert predicted_random_read_iops("raidz2", 6, 1, 200, 4 * K) == 1200
    # reads that must reconstruct also touch the parity columns: min(6, 4 + 2) = 6 → one disk
    assert predicted_random_read_iops("raidz2", 6, 1, 200, 16 * K, count_parity=True) == 200
    assert predicted_random_read_iops("mirror", 2, 3, 200, 16 * K) == 1200
    assert predicted_random_read_iops("stripe", 4, 1, 200, 128 * K) == 800
    assert predicted_random_read_iops("stripe", 1, 4, 200, 128 * K) == 800


def test_raidz_model_matches_the_volblocksize_example():
    # data/examples/volblocksize: raidz1 of 6 HDD-shaped disks of 100 IOPS, 4k random reads.
    # Measured 563 IOPS at volblocksize 4K (the parity-counting model predicted 300) and 120 at
    # 128K; 4K touches one sector-column, 128K all 5 data columns (~one disk per vdev: 6/5).
    four_k = predicted_random_read_iops("raidz1", 6, 1, 100, 4 * K)
    large = predicted_random_read_iops("raidz1", 6, 1, 100, 128 * K)
    assert four_k == 600 and abs(563 / four_k - 1) < 0.10
    assert large == 120 and abs(120 / large - 1) < 0.05
    assert predicted_random_read_iops("raidz1", 6, 1, 100, 4 * K, count_parity=True) == 300


@pytest.mark.parametrize("psize_k,width,parity,ashift,expected", [
    (4, 6, 1, 12, 1), (8, 6, 1, 12, 2), (16, 6, 1, 12, 4), (32, 6, 1, 12, 5), (128, 6, 2, 12, 4),
    (4, 6, 2, 9, 4),     # ashift 9: 8 sectors over 4 data columns
    (2, 5, 1, 12, 1),    # part of a sector still takes one
])
def test_raidz_data_columns_from_the_allocation(psize_k, width, parity, ashift, expected):
    # ceil(psize / 2^ashift) data sectors over width − p data columns
    assert raidz_data_columns(psize_k * K, ashift, width, parity) == expected
    sectors = -(-psize_k * K // (1 << ashift))
    assert expected == min(width - parity, sectors)


def test_docstring_examples_run():
    import doctest

    from zbench_lib.zfs import models
    from zbench_lib.zfs.families import raidz
    for module in (models, raidz):          # raidz's allocation moved to its family's module
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0
