"""Which surface a target is on and which ground a pool request stands on (``surface``).

``SURFACES`` holds one implementation per ``Target.surface`` name; ``GROUNDS`` one per kind of
pool request (pooled: a zpool; not: raw disks, no pool). Adding a surface is a class with
``name`` and ``prepare`` and its line here.
"""

from __future__ import annotations

from zbench_lib.sweeps.planning.records import Target
from zbench_lib.sweeps.running.client_surface import IscsiClientsSurface, NfsClientsSurface
from zbench_lib.sweeps.running.pool_request import PoolRequest
from zbench_lib.sweeps.running.raw_surface import NoPool, RawSurface
from zbench_lib.sweeps.running.surface import Ground, Surface
from zbench_lib.sweeps.running.zfs_surfaces import DatasetSurface, FsOnZvolSurface, NfsSurface, ZfsPool, ZvolSurface

SURFACES: dict[str, Surface] = {s.name: s for s in (ZvolSurface(), DatasetSurface(), FsOnZvolSurface(),
                                                    NfsSurface(), NfsClientsSurface(), IscsiClientsSurface(),
                                                    RawSurface())}
GROUNDS: dict[bool, Ground] = {True: ZfsPool(), False: NoPool()}


def surface_of(target: Target) -> Surface:
    return SURFACES[target.surface]


def ground_of(request: PoolRequest) -> Ground:
    return GROUNDS[request.pooled]
