"""The compressible_data check: the target's compressratio judged against the declared data.

A spec declares the data its workloads write and its prefill lays down (`compressible_percent`,
fio's buffer_compress_percentage: 0 = incompressible; docs/methods.md §7). A run's context
carries the declaration (`compressible_percent_declared`; runs recorded before it carry only
`incompressible_intended`, always True then), the target's `compression` as read back, its
`compressratio` read right after the run, the ZFS block (`block_bytes`) and the pool's `ashift`.

The check only says whether the ratio is *possible* for the declaration: what ratio a given
compressor reaches on fio's buffers is a finding of the study, never a fault. Declared
incompressible, any compression is data the spec did not declare. Declared p% compressible on a
compressing target, the ratio must show compression where ZFS would surely keep the blocks
compressed, and cannot exceed what the random share allows.

`logical_per_physical` gives the other checks that compare the disks' bytes with fio's the
factor by which declared compressible data legitimately shrinks on the disks.
"""

from __future__ import annotations

import math

from zbench_lib.measure.judging import not_judged, num

# Incompressible data gives compressratio 1.00x; 1.05 leaves room for metadata (indirect blocks
# are compressed whatever the property says) and the rounding of the displayed ratio.
COMPRESS_RATIO_MAX = 1.05
# What a compressor stores of fio's random share at worst: its bytes plus 10%. LZ-family
# compressors and zstd keep incompressible bytes as literals at well under 1% overhead, and
# fio lays each 512-byte chunk out as random bytes then zeros (measured: zlib level 1 gave
# 1.97x on every 128K record of 50% buffers).
COMPRESSOR_SLACK = 1.10
# ZFS keeps a block compressed only when it saves at least an eighth (zio_compress_data) and,
# rounded up to the allocation unit (2^ashift), is still smaller than the block: 50% data in
# 4K blocks on 4K sectors is stored uncompressed, and 1.00x is then what the declaration allows.
ZFS_MIN_SAVING = 1 / 8
DEFAULT_ASHIFT = 12          # when the pool's ashift was not recorded: the 4K sectors of today's disks
# The high side: fio's random share does not compress, so p% compressible data cannot exceed
# 100 / (100 - p); 1.25 x that ceiling leaves room for metadata and rounding. Beyond it the
# buffers repeated more than declared (e.g. one 4K buffer reused in every 128K record).
CEILING_SLACK = 1.25


def declared_percent(ctx) -> int | None:
    """The declared compressible share of the run's data; None when only 'compressible' is known."""
    pct = ctx.compressible_percent_declared
    if pct is not None:
        return int(pct)
    return 0 if ctx.incompressible_intended else None


def compresses(compression) -> bool | None:
    """Whether a `compression` property value compresses (None: not recorded)."""
    return None if compression in (None, "") else str(compression) != "off"


def stored_compressed(pct: int, block: int, ashift: int) -> bool:
    """Whether ZFS surely keeps a block of pct% compressible fio data compressed: its worst
    compressed size, rounded up to the allocation unit, saves ZFS's eighth and a whole unit."""
    unit = 1 << ashift
    worst = block * (100 - pct) / 100 * COMPRESSOR_SLACK
    return math.ceil(worst / unit) * unit <= block - max(block * ZFS_MIN_SAVING, unit)


def ratio_ceiling(pct: int) -> float:
    """The highest compressratio pct% compressible data allows, with CEILING_SLACK (inf at 100)."""
    return math.inf if pct >= 100 else CEILING_SLACK * 100 / (100 - pct)


def logical_per_physical(ctx) -> float:
    """Logical bytes per byte on disk of the run's data: the target's compressratio where the spec
    declared compressible data on a compressing target, else 1. Compression nobody declared
    excuses no quiet disk: compressible_data flags it."""
    cr = num(ctx.compressratio)
    if ctx.no_pool or not declared_percent(ctx) or compresses(ctx.compression) is not True \
            or math.isnan(cr) or cr <= 1:
        return 1.0
    return cr


def compressible_data(fio_rows, c, ctx) -> dict:
    cr, pct, comp = num(ctx.compressratio), declared_percent(ctx), ctx.compression
    out = dict(compressratio=cr, compressible_percent_declared=pct, compression=comp,
               incompressible_intended=pct == 0, threshold=COMPRESS_RATIO_MAX,
               ceiling=ratio_ceiling(pct) if pct else COMPRESS_RATIO_MAX)
    if ctx.no_pool:
        return not_judged("raw disks: nothing compresses what fio writes: does not apply", **out)
    if pct is None:
        return not_judged("compressible data intended, but its percentage was not declared", **out)
    if math.isnan(cr):
        return not_judged("compressratio not recorded", **out)
    if pct == 0 or compresses(comp) is False:
        what = "the spec declared incompressible data" if pct == 0 else "compression is off"
        return {**out, "flag": bool(cr > COMPRESS_RATIO_MAX), "reason": f"compressratio {cr:.2f}x; {what}"}
    if compresses(comp) is None:
        return not_judged("the target's compression property not recorded", **out)
    return _declared_compressible(cr, pct, comp, ctx, out)


def _declared_compressible(cr: float, pct: int, comp: str, ctx, out: dict) -> dict:
    """pct% compressible data on a target compressed with `comp`."""
    if pct >= 100:
        return not_judged("all-zero buffers: a compressing target stores holes, no ratio to judge", **out)
    if cr > out["ceiling"]:
        return {**out, "flag": True, "reason": f"compressratio {cr:.2f}x on {comp}: beyond the {out['ceiling']:.2f}x "
                                               f"{pct}% compressible data allows (the buffers repeated)"}
    if cr > COMPRESS_RATIO_MAX:
        return {**out, "flag": False, "reason": f"compressratio {cr:.2f}x on {comp}, possible for {pct}% compressible"}
    block, ashift = ctx.block_bytes, ctx.ashift or DEFAULT_ASHIFT
    if not block:
        return not_judged(f"compressratio {cr:.2f}x on {comp}; block size not recorded", **out)
    if not stored_compressed(pct, int(block), int(ashift)):
        return {**out, "flag": False, "reason": f"compressratio {cr:.2f}x: {pct}% compressible data in {block}-byte "
                                                f"blocks on 2^{ashift} sectors is stored uncompressed"}
    return {**out, "flag": True, "reason": f"compressratio {cr:.2f}x on {comp}: {pct}% compressible data should "
                                           f"have compressed; fio's buffers were not what was declared"}
