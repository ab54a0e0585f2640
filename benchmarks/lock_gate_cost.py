"""What the on-host lock costs a sweep: one command's round trip with and without the lock's gate.

Every command of a sweep's session passes the gate (hosts.host_lock.Gate: the marker opened, the
tag exported, the command exec'd, all in the shell ssh starts on the host anyway). This boots one
small lab, runs `true` (the cheapest command: the round trip is all there is) `--n` times plain and
`--n` times inside a lock session, interleaved so that a drift of the machine hits both alike, and
prints the medians, their difference and the time to take and let go of the lock. Nothing here is
a test: it prints figures to read.

    python benchmarks/lock_gate_cost.py [--n 60]
"""

from __future__ import annotations

import argparse
import statistics
import time

from zbench_lib.hosts.host_lock import HostLock, gate, sweep_owner
from zbench_lib.hosts.lab import Lab, LabConfig


def _timed(host, argv) -> float:
    start = time.perf_counter()
    host.run(argv)
    return time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="commands of each kind (default 60)")
    args = ap.parse_args(argv)
    with Lab(LabConfig(disks=1, disk_bytes=1024 ** 3, model="unthrottled", name="bench-gate")) as lab:
        host, owner = lab.host, sweep_owner("bench-gate")
        t0 = time.perf_counter()
        lock = HostLock(host, owner)
        lock.acquire()
        taken = time.perf_counter() - t0
        plain, gated = [], []
        try:
            for _ in range(args.n):              # interleaved: plain, then gated, n times
                host.gate = None
                plain.append(_timed(host, ["true"]))
                host.gate = gate(owner)
                gated.append(_timed(host, ["true"]))
        finally:
            host.gate = None
            t1 = time.perf_counter()
            lock.release()
            let_go = time.perf_counter() - t1
    p, g = statistics.median(plain), statistics.median(gated)
    print(f"`true` over ssh on the lab, {args.n} each, interleaved (ms):")
    print(f"  plain  median {p * 1e3:7.1f}   p90 {sorted(plain)[int(0.9 * args.n)] * 1e3:7.1f}")
    print(f"  gated  median {g * 1e3:7.1f}   p90 {sorted(gated)[int(0.9 * args.n)] * 1e3:7.1f}")
    print(f"  gate's cost per command: {(g - p) * 1e3:+.1f} ms ({g / p:.2f}x)")
    print(f"  lock taken in {taken * 1e3:.0f} ms, let go in {let_go * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
