"""Which pool a free host runs next: whole randomised blocks, a free host taking the next one.

Block k holds replicate k of every pool (``sweeps.blocks``). A host that takes a block runs all of
its pools, in the plan's order, before it takes another, so within a block every layout ran on
one machine: the host is a blocking factor, never confounded with a layout. With fewer blocks
than hosts some hosts idle (``idle_hosts`` says so before anything runs): splitting a block
over hosts would put its layouts on different machines.

A host lost mid-pool gives its pool and the rest of its block back; they go first to the next
free *other* host, as one block (``give_back``): the host that lost it takes other blocks meanwhile,
and takes it back only when no other host is left (``next_for(..., alone=True)``). A pool given back
``MAX_DISPATCHES`` times is lost.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

MAX_DISPATCHES = 3


@dataclass
class HostQueue:
    blocks: deque                                   # of lists of pool requests, in the plan's block order
    current: dict = field(default_factory=dict)     # host -> the rest of its block (a deque of requests)
    dispatches: dict = field(default_factory=dict)  # pool_id -> times dispatched
    avoid: dict = field(default_factory=dict)       # first pool_id of a block given back -> hosts that lost it

    @classmethod
    def of(cls, requests) -> HostQueue:
        """The requests with work left, grouped by block in the order given (the plan's)."""
        by_block: dict[int, list] = {}
        for r in requests:
            by_block.setdefault(r.block, []).append(r)
        return cls(deque(by_block[b] for b in by_block))

    def next_for(self, host: str, alone: bool = False):
        """The next request for `host`: the rest of its block, else the next block it did not lose (any
        block when it is `alone`, the only host left); None when there is none for it."""
        mine = self.current.get(host)
        if not mine:
            block = next((b for b in self.blocks if alone or host not in self.avoid.get(b[0].pool_id, ())), None)
            if block is None:
                return None
            self.blocks.remove(block)
            mine = self.current[host] = deque(block)
        request = mine.popleft()
        self.dispatches[request.pool_id] = self.dispatches.get(request.pool_id, 0) + 1
        return request

    def give_back(self, host: str, request) -> bool:
        """`host` was lost running `request`: it and the rest of the host's block go first to the next
        free host. False when the request has been dispatched MAX_DISPATCHES times (it is lost)."""
        rest = list(self.current.pop(host, ()))
        retry = self.dispatches.get(request.pool_id, 0) < MAX_DISPATCHES
        block = ([request] if retry else []) + rest
        if block:
            self.blocks.appendleft(block)
            self.avoid[block[0].pool_id] = self.avoid.get(block[0].pool_id, set()) | {host}
        return retry

    def pending(self) -> int:
        return sum(len(b) for b in self.blocks) + sum(len(q) for q in self.current.values())


def idle_hosts(n_blocks: int, n_hosts: int) -> str | None:
    """Why some hosts will idle, or None."""
    if n_blocks >= n_hosts:
        return None
    return (f"{n_blocks} block(s) of pools for {n_hosts} hosts: {n_hosts - n_blocks} host(s) will idle. Whole "
            "blocks go to hosts so the host never confounds a layout; raise repetitions.pool_replicates "
            f"to at least {n_hosts} to use every host")
