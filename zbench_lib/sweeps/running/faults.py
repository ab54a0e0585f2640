"""The executor's side of `faults:` (spec.faults): inject, record, undo, time the resilver.

One `FaultInjector` per sweep. `during(pool_id, run)` wraps a run: for the pool's first
run it arms a timer that pulls (or slows) the chosen data disk `after_s` into fio, and
afterwards puts a slowed disk's speed back. `before_teardown(pool)` plugs a pulled disk
back in and, with `resilver`, replaces it by an unused lab data disk (a new drive) and times
the full resilver of `zpool replace`, idle or as an idle/loaded pair (resilver_timing). Every
step is an event in the store, so the report and a reader can see what was done when.
`reattach_missing()` puts back any disk an interrupted sweep left unplugged. The disks are
acted on through the node's `DeviceControl` (the lab's QMP), which a fault study requires.
"""

from __future__ import annotations

import contextlib
import threading
import time

from zbench_lib.core.events import Event
from zbench_lib.hosts.node import DEVICE_CONTROL, Node
from zbench_lib.sweeps.running.resilver_timing import resilver_pool

# measure() samples counters for 1.5 s before fio starts (runner.measure).
SAMPLING_LEAD_S = 1.5
CRAWL = "custom:iops=5,bw=1M"        # a slowed disk: a drive that still answers, far too slowly


class FaultInjector:
    def __init__(self, faults: dict | None, store, node: Node, seed=0):
        # a fault study on a node without device control stops here, as the node opens, before any pool
        self.control = node.require(DEVICE_CONTROL, "faults") if faults else None
        self.faults, self.store, self.host, self.seed = faults, store, node.host, seed
        self.model, self.spares = node.disk_model, list(node.data_devices)
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
                self.control.set_model(device, self.model)
                self.store.record(Event.FAULT_UNDONE, pool_id=pool_id, run_id=run_id, device=device,
                                  kind="slow")

    def _inject(self, pool_id, pool_name, run_id, device) -> None:
        kind, t = self.faults["kind"], time.time()
        try:
            if kind == "remove":
                secs = self.control.remove(device)
                self.removed[pool_name] = device
            else:
                self.control.set_model(device, CRAWL)
                secs = 0.0
            self.store.record(Event.FAULT_INJECTED, pool_id=pool_id, pool=pool_name, run_id=run_id,
                              device=device, kind=kind, at_epoch=round(t, 3), took_s=round(secs, 2))
        except Exception as exc:                     # recorded; the run is then judged as it went
            self.store.record(Event.FAULT_FAILED, pool_id=pool_id, run_id=run_id, device=device, kind=kind,
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
            self.store.record(Event.RESILVER_FAILED, pool_id=pool_id, pool=pool.name, device=device,
                              error=" ".join(str(exc).split())[:400])

    def _reattach(self, device: str) -> None:
        self.control.reattach(device, self.model)
        self.host.run(["sh", "-c", 'for i in $(seq 300); do [ -e "$1" ] && exit 0; sleep 0.1; done; exit 1',
                       "wait-disk", device], timeout=60)
        self.host.run(["udevadm", "settle"], check=False, timeout=60)
        self.store.record(Event.FAULT_UNDONE, device=device, kind="remove")

    def reattach_missing(self, devices: list[str]) -> None:
        """Plug back every lab data disk an interrupted sweep left unplugged."""
        if not self.faults:
            return
        for device in self.control.missing(devices):
            self._reattach(device)

    def cleanup(self) -> None:
        """Put back disks still pulled (the pool's block ended early): never leave the lab short."""
        for device in list(self.removed.values()):
            with contextlib.suppress(Exception):
                self._reattach(device)
        self.removed.clear()
