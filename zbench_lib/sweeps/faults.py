"""The executor's side of `faults:` (spec_faults): inject, record, undo, time the resilver.

One `FaultInjector` per sweep. `during(pool_id, run)` wraps a run: for the pool's first
run it arms a timer that pulls (or slows) the chosen data disk `after_s` into fio, and
afterwards puts a slowed disk's speed back. `before_teardown(pool)` plugs a pulled disk
back in and, with `resilver`, replaces it by an unused lab data disk (a new drive) and times
the full resilver of `zpool replace`, idle or as an idle/loaded pair (resilver_timing). Every
step is an event in the store, so the report and a reader can see what was done when.
`reattach_missing()` puts back any disk an interrupted sweep left unplugged.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

from zbench_lib.core import paths
from zbench_lib.hosts import lab_faults
from zbench_lib.hosts.qmp import QMPClient
from zbench_lib.sweeps.resilver_timing import resilver_pool

# measure() samples counters for 1.5 s before fio starts (runner.measure).
SAMPLING_LEAD_S = 1.5


def serial_of(device: str) -> str:
    """/dev/disk/by-id/virtio-<serial> -> <serial> (lab disks only)."""
    name = Path(device).name
    if not name.startswith("virtio-"):
        raise ValueError(f"not a lab disk: {device}")
    return name[len("virtio-"):]


def lab_dir_of(lab, host) -> Path:
    if lab is not None:
        return Path(lab.dir)
    return paths.labs_dir() / str(getattr(host, "name", "")).split(":", 1)[-1]


class FaultInjector:
    def __init__(self, faults: dict | None, store, host, lab_dir: Path, model, cache: str = "none",
                 spares: list[str] = (), seed=0):
        self.faults, self.store, self.host, self.lab_dir = faults, store, host, Path(lab_dir)
        self.seed = seed
        self.model, self.cache, self.spares = model, cache, list(spares)
        self._done_pools: set[str] = set()
        self.removed: dict[str, str] = {}          # pool name -> device pulled from it

    @contextlib.contextmanager
    def during(self, pool_id: str, pool_name: str, run_id: str, devices: list[str]):
        if not self.faults or pool_id in self._done_pools:
            yield
            return
        self._done_pools.add(pool_id)
        device = devices[self.faults["disk"] - 1]
        timer = threading.Timer(SAMPLING_LEAD_S + self.faults["after_s"], self._inject,
                                (pool_id, pool_name, run_id, device))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            timer.join(60)
            if self.faults["kind"] == "slow":
                lab_faults.restore_speed(self.lab_dir, serial_of(device), self.model)
                self.store.record("fault undone", pool_id=pool_id, run_id=run_id, device=device,
                                  kind="slow")

    def _inject(self, pool_id, pool_name, run_id, device) -> None:
        kind, t = self.faults["kind"], time.time()
        try:
            if kind == "remove":
                secs = lab_faults.remove_disk(self.lab_dir, serial_of(device))
                self.removed[pool_name] = device
            else:
                lab_faults.slow_disk(self.lab_dir, serial_of(device))
                secs = 0.0
            self.store.record("fault injected", pool_id=pool_id, pool=pool_name, run_id=run_id,
                              device=device, kind=kind, at_epoch=round(t, 3), took_s=round(secs, 2))
        except Exception as exc:                     # recorded; the run is then judged as it went
            self.store.record("fault failed", pool_id=pool_id, run_id=run_id, device=device, kind=kind,
                              error=" ".join(str(exc).split())[:300])

    def before_teardown(self, pool, pool_id: str, label: str, fill: str | None = None,
                        target: dict | None = None) -> None:
        """Plug a pulled disk back in; with `resilver`, time the resilver (or the idle/loaded
        pair) of its replacement. `target` ({path, size_bytes}) is where a load runs."""
        device = self.removed.pop(pool.name, None)
        if device is None:
            return
        self._reattach(device)
        if not self.faults.get("resilver"):
            return
        try:
            resilver_pool(self.host, self.store, pool, seed=self.seed, pool_id=pool_id, label=label,
                          device=device, spares=self.spares, load=self.faults.get("resilver_load"),
                          target=target, fill=fill)
        except Exception as exc:                     # recorded; the measured runs stay as they are
            self.store.record("resilver failed", pool_id=pool_id, pool=pool.name, device=device,
                              error=" ".join(str(exc).split())[:400])

    def _reattach(self, device: str) -> None:
        lab_faults.restore_disk(self.lab_dir, serial_of(device), self.model, self.cache)
        self.host.run(["sh", "-c", 'for i in $(seq 300); do [ -e "$1" ] && exit 0; sleep 0.1; done; exit 1',
                       "wait-disk", device], timeout=60)
        self.host.run(["udevadm", "settle"], check=False, timeout=60)
        self.store.record("fault undone", device=device, kind="remove")

    def reattach_missing(self, devices: list[str]) -> None:
        """Plug back every lab data disk an interrupted sweep left unplugged."""
        if not self.faults:
            return
        with QMPClient(self.lab_dir / "qmp.sock") as q:
            present = {p["name"] for p in q.command("qom-list", path="/machine/peripheral") or []}
        for device in devices:
            if f"dev-{serial_of(device)}" not in present:
                self._reattach(device)

    def cleanup(self) -> None:
        """Put back disks still pulled (the pool's block ended early): never leave the lab short."""
        for device in list(self.removed.values()):
            with contextlib.suppress(Exception):
                self._reattach(device)
        self.removed.clear()
