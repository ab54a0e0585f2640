"""Runs, pool replicates and the order they are run in.

A pool re-created is a new experimental unit; reruns on one pool are subsamples. With
``repetitions.pool_replicates: R`` every pool (with its targets and cells) exists R
times, each its own ``pool_id`` / ``target_id`` / ``cell_id`` (suffix ``-pr<k>``; none
when R is 1, so ids stay what they were). Replicates run in randomised blocks: block k
holds replicate k of every pool, the pools of each block shuffled (seeded; the order
is ``Plan.blocks`` in plan.json). Within a pool, targets are shuffled, and within a
target reads come before writes, each phase shuffled.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace

from zbench_lib.sweeps.planning.records import Cell, PlanPool, Target


@dataclass(frozen=True)
class Run:
    run_id: str
    cell_id: str
    rep: int
    pool_id: str
    target_id: str
    order: int | None = None    # position in the planned sequence; None for runs the rule adds


def run_id(cell_id: str, rep: int) -> str:
    return f"{cell_id}-r{rep:02d}"


def run_seed(sweep_seed: int, run_id: str, attempt: int) -> int:
    """The fio randseed of one attempt of a run: a hash of the sweep's seed, the run id and the attempt,
    so every run (and every replacement) draws its own offsets and a resumed sweep draws the same ones.
    48 bits: fio takes an unsigned 64-bit seed, and the spec's own randseed overrides stop at 2**63 - 1.

    >>> run_seed(20240501, "c1a2b3c-r01", 1) == run_seed(20240501, "c1a2b3c-r01", 1)
    True
    >>> run_seed(20240501, "c1a2b3c-r01", 1) != run_seed(20240501, "c1a2b3c-r02", 1)
    True
    """
    digest = hashlib.sha256(f"{sweep_seed}:{run_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def attempt_seed(spec, cell: Cell, run_id: str, attempt: int) -> int | None:
    """The randseed an attempt draws (`run_seed`), or None where the job keeps its workload's: the spec
    replays one sequence (randseed: fixed) or the workload pins a seed in its overrides."""
    if spec.randseed == "fixed" or "randseed" in cell.fio:
        return None
    return run_seed(spec.seed, run_id, attempt)


def _suffix(k: int, replicates: int) -> str:
    return f"-pr{k}" if replicates > 1 else ""


def _renamed(target_id: str, pool_id: str, sfx: str) -> str:
    """A target id in pool replicate `sfx`: the pool's part suffixed (p01-t02 -> p01-pr2-t02)."""
    return pool_id + sfx + target_id[len(pool_id):]


def replicate(pools: list[PlanPool], targets: list[Target], cells: list[Cell],
              replicates: int) -> tuple[list[PlanPool], list[Target], list[Cell]]:
    """Pools, targets and cells of every pool replicate (1..R), replicate by replicate."""
    out_p, out_t, out_c = [], [], []
    for k in range(1, replicates + 1):
        sfx = _suffix(k, replicates)
        out_p += [replace(p, pool_id=p.pool_id + sfx, base_pool_id=p.pool_id, pool_replicate=k) for p in pools]
        out_t += [replace(t, target_id=_renamed(t.target_id, t.pool_id, sfx), pool_id=t.pool_id + sfx,
                          pool_replicate=k) for t in targets]
        out_c += [replace(c, cell_id=c.cell_id + sfx, base_cell_id=c.cell_id, pool_id=c.pool_id + sfx,
                          target_id=_renamed(c.target_id, c.pool_id, sfx), pool_replicate=k) for c in cells]
    return out_p, out_t, out_c


def order_runs(spec, pools: list[PlanPool], targets: list[Target], cells: list[Cell]) -> tuple[list, list]:
    """(blocks: pool ids per block in run order, runs in execution order)."""
    rng = random.Random(spec.seed)
    randomised = spec.order == "randomised"
    per_cell = spec.repetitions["pilot"]
    blocks = []
    for k in range(1, spec.repetitions["pool_replicates"] + 1):
        ids = [p.pool_id for p in pools if p.pool_replicate == k]
        if randomised:
            rng.shuffle(ids)
        blocks.append(ids)
    out = []
    for pool_id in (pid for block in blocks for pid in block):
        tids = [t.target_id for t in targets if t.pool_id == pool_id]
        if randomised:
            rng.shuffle(tids)
        for tid in tids:
            mine = [c for c in cells if c.target_id == tid]
            phases = [[c for c in mine if c.reads_only], [c for c in mine if not c.reads_only]] \
                if spec.reads_first else [mine]
            for phase in phases:
                runs = [(c, rep) for c in phase for rep in range(1, per_cell + 1)]
                if randomised:
                    rng.shuffle(runs)
                out += [Run(run_id(c.cell_id, rep), c.cell_id, rep, pool_id, tid, len(out) + i)
                        for i, (c, rep) in enumerate(runs)]
    return blocks, out
