"""dRAID (OpenZFS distributed RAID) for layouts.Layout: its rules, keyword, space and names.

``Layout("draidP", width=C, vdevs=V, draid_data=D, draid_spares=S)``: V dRAID vdevs of C
children each. A vdev stores redundancy groups of D data + P parity sectors spread over
all its disks, and keeps S disks' worth of distributed spare space. D = 0 means
OpenZFS's default, min(8, C - P - S).

Sources, the same from OpenZFS 2.1.0 to 2.3.x (checked in the openzfs/zfs sources):

- cmd/zpool/zpool_vdev.c ``draid_config_by_type()`` and ``is_grouping()``: the keyword
  ``draid[P][:Dd][:Cc][:Ss]`` (parts in any order, each with its suffix), the default D
  and the limits enforced below; zpoolconcepts(7), "draid";
- module/zfs/vdev_draid.c ``vdev_draid_init()`` (the kernel repeats the checks),
  ``vdev_draid_asize()``, ``vdev_draid_open()`` and ``vdev_draid_spare_create()``;
- lib/libzfs/libzfs_pool.c ``zpool_draid_name()``: `zpool status` names a dRAID vdev
  ``draid2:4d:8c:1s-0`` (P, D, C, S, then "-<vdev id>") and its distributed spares
  ``draid2-0-0`` (P, vdev id, spare id), listed under the pool's ``spares``.
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_CHILDREN = 255              # VDEV_DRAID_MAX_CHILDREN (UINT8_MAX); zpool's is_grouping(): 255
MAX_SPARES = 100                # "an arbitrary limit of 100 distributed spares" (zpool and kernel)
DEFAULT_DATA = 8                # D when not given: min(8, C - P - S)
ROW_HEIGHT = 1 << 24            # VDEV_DRAID_ROWHEIGHT = 1 << SPA_MAXBLOCKSHIFT
REFLOW_RESERVE = 2 * ROW_HEIGHT  # VDEV_DRAID_REFLOW_RESERVE, kept free at the end of each child

_VDEV_NAME = re.compile(r"^draid([123]):(\d+)d:(\d+)c:(\d+)s-\d+$")
_SPARE_NAME = re.compile(r"^draid([123])-\d+-\d+$")


def ndata(children: int, parity: int, data: int, spares: int) -> int:
    """D in effect: ``data`` when set, else OpenZFS's default min(8, C - P - S)."""
    return data if data else min(DEFAULT_DATA, children - parity - spares)


def problems(children: int, parity: int, data: int, spares: int) -> list[str]:
    """Every rule of draid_config_by_type()/vdev_draid_init() the configuration breaks."""
    fam, out = f"draid{parity}", []
    if children > MAX_CHILDREN:
        out.append(f"{fam} width {children} exceeds the maximum of {MAX_CHILDREN} children in a dRAID vdev")
    if data < 0:
        out.append(f"draid_data must be at least 1 (or 0 for OpenZFS's default), got {data}")
    if spares < 0:
        out.append(f"draid_spares cannot be negative, got {spares}")
    elif spares > MAX_SPARES:
        out.append(f"draid_spares {spares} exceeds OpenZFS's limit of {MAX_SPARES} distributed spares")
    if data < 0 or spares < 0:
        return out
    d = ndata(children, parity, data, spares)
    if d < 1:       # "leaves no disks available for data"
        out.append(f"{fam} of {children} disks with {spares} distributed spare(s) leaves no disk for data "
                   f"(width must be at least parity + spares + 1 = {parity + spares + 1})")
    elif d + parity > children - spares:    # a group must fit in the non-spare disks
        out.append(f"{fam} groups of {d} data + {parity} parity with {spares} distributed spare(s) need "
                   f"width >= {d + parity + spares}, got {children}")
    # ngroups = (C - S) / gcd(D + P, C - S) <= 255 always holds once the group fits.
    return out


def keyword(children: int, parity: int, data: int, spares: int) -> str:
    """The vdev keyword with every part explicit, as zpool status names it: 'draid2:4d:8c:1s'."""
    return f"draid{parity}:{ndata(children, parity, data, spares)}d:{children}c:{spares}s"


def data_disks(vdevs: int, children: int, parity: int, data: int, spares: int) -> int | float:
    """Effective data disks V x (C - S) x D / (D + P): an int when whole, else rounded to 2 places.

    >>> data_disks(1, 8, 2, 4, 2), data_disks(1, 7, 1, 4, 0)
    (4, 5.6)
    """
    d = ndata(children, parity, data, spares)
    x = Fraction(vdevs * (children - spares) * d, d + parity)
    return int(x) if x.denominator == 1 else round(float(x), 2)


def usable_bytes(vdevs: int, children: int, parity: int, data: int, spares: int, disk_bytes: int) -> int:
    """V x (C - S) x D / (D + P) x disk_bytes, exactly (zpoolconcepts(7)'s approximation)."""
    d = ndata(children, parity, data, spares)
    return vdevs * (children - spares) * d * disk_bytes // (d + parity)


def asize(psize: int, ashift: int, data: int, parity: int) -> int:
    """Bytes a dRAID vdev allocates for a block (vdev_draid_asize): whole groups only.

    Unlike raidz, a block is padded to full rows of D data sectors, each row plus its P
    parity sectors: rows = ceil(psize / (D x 2^ashift)), allocated = rows x (D + P) x 2^ashift.

    >>> asize(4096, 12, 4, 2), asize(20480, 12, 4, 2)   # 1 row of 6 sectors, then 2 rows
    (24576, 49152)
    """
    rows = (psize - 1) // (data << ashift) + 1
    return rows * (data + parity) << ashift


def vdev_asize(child_bytes: int, children: int, parity: int, data: int, spares: int) -> int:
    """Allocatable bytes of one dRAID vdev from its smallest child's (vdev_draid_open)."""
    child = (child_bytes - REFLOW_RESERVE) // ROW_HEIGHT * ROW_HEIGHT
    group = (ndata(children, parity, data, spares) + parity) * ROW_HEIGHT
    return max(child, 0) * (children - spares) // group * group


def status_kind(name: str) -> str | None:
    """'draidP' for a dRAID vdev's status name ('draid2:4d:8c:1s-0'), 'dspare' for one of
    its distributed spares ('draid2-0-0'), None for any other name."""
    m = _VDEV_NAME.match(name)
    if m:
        return f"draid{m.group(1)}"
    return "dspare" if _SPARE_NAME.match(name) else None
