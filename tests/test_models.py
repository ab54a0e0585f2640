"""raidz allocation (OpenZFS vdev_raidz_asize) and the random-read IOPS model."""

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.zfs.models import (predicted_random_read_iops, raidz_asize, space_efficiency,
                               space_table, zfs_charged_bytes)

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
    # raidz2 of 6: a 16K block = 4 data sectors + 2 parity touches all 6 disks → one disk
    assert predicted_random_read_iops("raidz2", 6, 1, 200, 16 * K) == 200
    assert predicted_random_read_iops("raidz2", 6, 2, 200, 128 * K) == 400
    # 4K block: 1 data + 2 parity = 3 disks touched → 200 · 6 / 3
    assert predicted_random_read_iops("raidz2", 6, 1, 200, 4 * K) == 400
    # skipping parity on healthy reads: 128K touches the 4 data disks → 200 · 6 / 4
    assert predicted_random_read_iops("raidz2", 6, 1, 200, 128 * K, count_parity=False) == 300
    assert predicted_random_read_iops("mirror", 2, 3, 200, 16 * K) == 1200
    assert predicted_random_read_iops("stripe", 4, 1, 200, 128 * K) == 800
    assert predicted_random_read_iops("stripe", 1, 4, 200, 128 * K) == 800


def test_docstring_examples_run():
    import doctest

    from zbench_lib.zfs import models
    result = doctest.testmod(models)
    assert result.attempted > 0 and result.failed == 0
