"""read_amplification: did the disks read more than fio's reads and the block size explain?

The measured factor is the whole disks' read bytes (summed) over fio's read bytes. The
expected factor comes from the block B (volblocksize of a zvol, recordsize of a
dataset; `block_bytes` in the run's context) and fio's block size bs:

- random reads fetch every block they touch: B x ceil(bs / B) / bs (B/bs below the
  block, 1 for aligned whole blocks);
- sequential reads fetch each block once: 1 when bs >= B; below the block at most
  B/bs (a block not kept in the cache, primarycache=metadata, is read again for each
  small read);
- writes smaller than the block make ZFS read the rest of the block first unless it is
  cached: at most B per random write, one block per block written sequentially; these
  reads count in the expected device bytes.

A mirror reads one side per block and a stripe the block. A healthy raidz reads the
data columns of a random block only (parity is not read), but sequential reads are
aggregated by the vdev queue across the small gaps between neighbouring blocks
(zfs_vdev_read_gap_limit, 32K), so they may read the parity and padding sectors
lying in between: up to the allocation ratio asize/psize of the block
(zfs.families.raidz.raidz_asize), e.g. 9/4 for 16K blocks on raidz2 of 4 at ashift 12. The scaling example bears
this out: 4k random reads of 16K blocks read 3.5-3.9x fio's bytes on every layout, and
its 1M sequential reads 0.93-1.17x when nothing went wrong, against 1.3-2.9x in the
slower runs of the same cells (prefetched blocks read again by the demand reads).
The flag is raised beyond READ_AMP_MARGIN x the expected factor; reads far below it
are the cache_served check's matter.
"""

from __future__ import annotations

import math

from zbench_lib.zfs import families
from zbench_lib.measure.judging import MIN_FIO_BYTES, div, fio_bytes, not_judged, num

READ_AMP_MARGIN = 1.25   # clean runs of the example stay below 1.17x expected


def _random(rw) -> bool:
    return str(rw or "").split(":")[0].startswith("rand")


def expected_device_reads(fio_rows: list[dict], block: int) -> float:
    """Device read bytes that fio's I/O explains on blocks of `block` bytes; NaN if a bs is unknown."""
    total = 0.0
    for r in fio_rows:
        bs, n = num(r.get("bs_bytes")), float(r.get("io_bytes") or 0)
        if not n:
            continue
        if math.isnan(bs) or bs <= 0:
            return math.nan
        if r.get("direction") == "read":
            total += n * (block * math.ceil(bs / block) / bs if _random(r.get("rw")) or bs >= block else block / bs)
        elif r.get("direction") == "write" and bs < block:
            ios = num(r.get("total_ios"))
            total += (ios if not math.isnan(ios) and ios > 0 else n / bs) * block if _random(r.get("rw")) else n
    return total


def _sequential_read_allowance(fio_rows, ctx, block: int) -> float:
    """Allowance for sequential reads: the family's (on raidz the allocation ratio of one block), else 1."""
    fam = families.find(str(ctx.layout or ""))          # raw disks have no family: 1
    sequential = any(r.get("direction") == "read" and not _random(r.get("rw")) for r in fio_rows)
    width, ashift = ctx.layout_width, ctx.ashift or 12
    if fam is None or not sequential or not isinstance(width, int):
        return 1.0
    return fam.seq_read_allowance(block, int(ashift), width)


def read_amplification(fio_rows, c, ctx) -> dict:
    f, dev, block = fio_bytes(fio_rows, "read"), num(c.get("dev_read_bytes")), num(ctx.block_bytes)
    out = dict(value=div(dev, f) if f >= MIN_FIO_BYTES else math.nan, expected=math.nan, fio_read_bytes=f,
               dev_read_bytes=dev, block_bytes=block, margin=READ_AMP_MARGIN)
    if f < MIN_FIO_BYTES:
        return not_judged("no reads to judge: does not apply" if f == 0 else "too few reads to judge", **out)
    if math.isnan(dev):
        return not_judged("no device counters", **out)
    if math.isnan(block) or block <= 0:
        return not_judged("the target's block size (volblocksize / recordsize) was not recorded", **out)
    expected = expected_device_reads(fio_rows, int(block)) / f
    expected *= _sequential_read_allowance(fio_rows, ctx, int(block))
    if math.isnan(expected):
        return not_judged("fio's block size is unknown (bs per direction or bssplit)", **out)
    out["expected"] = expected
    high = out["value"] > READ_AMP_MARGIN * expected
    return {**out, "flag": bool(high),
            "reason": f"disks read {out['value']:.2f} x fio's bytes, {expected:.2f} expected from the block size"
                      + (f" (beyond {READ_AMP_MARGIN:g} x)" if high else "")}
