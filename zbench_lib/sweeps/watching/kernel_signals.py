"""Signals to `zbench sweep` reach the sweep, and its teardown is waited for.

The sweep runs inside a papermill kernel, a separate process in its own session:
a Ctrl-C, SIGTERM or SIGHUP to the CLI never reaches it by itself. Left alone, the
CLI would die and the kernel exit with it (ipykernel polls its parent), leaving the
pool and fio behind; and nbclient's own interrupt is followed 2.5 s later by a
SIGTERM, which cut teardowns short.

`forward_to_kernel` takes these signals in the CLI for the length of the run: the
first one becomes a single SIGTERM to the kernel, and the CLI waits for the teardown
for at most `budget_s`, said on the terminal. SIGTERM, not SIGINT: an idle ipykernel
ignores SIGINT (between cells, and while it starts), so a Ctrl-C sent then was lost and
the sweep ran on. SIGTERM is never ignored: inside a pool or lab block zbench turns it
into SystemExit (core.signals.terminate_as_exit), which tears the pool down with
signals deferred; outside them nothing is held and the kernel just ends. Later signals
only say how long is left. When the budget is spent the kernel is killed and the
message names the cleanup command. The caller learns which signal arrived, to exit
with 128 + its number.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import weakref

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Pool teardown waits out a slow sync for up to DESTROY_BUDGET_S (zfs.pools); the
# CLI allows that plus a margin before giving up on the kernel.
TEARDOWN_BUDGET_S = 1260.0

_MANAGERS: "weakref.WeakSet" = weakref.WeakSet()


def register(manager) -> None:
    """Called by the kernel manager when it is made, so its kernel can be signalled."""
    _MANAGERS.add(manager)


def kernel_pids() -> list[int]:
    pids = []
    for km in list(_MANAGERS):
        proc = getattr(getattr(km, "provisioner", None), "process", None)
        if proc is not None and proc.poll() is None:
            pids.append(proc.pid)
    return pids


class Interrupted:
    """What the handler saw: the first signal's number (None if none came)."""

    def __init__(self):
        self.signum: int | None = None
        self.at: float | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""


def _kill_kernels(state: Interrupted, budget_s: float) -> None:
    pids = kernel_pids()
    if pids:
        print(f"zbench: the sweep's teardown did not end within {budget_s:.0f} s; stopping it "
              "(remove what it left with `zbench pools cleanup`)", file=sys.stderr, flush=True)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def forward_to_kernel(budget_s: float = TEARDOWN_BUDGET_S):
    """Within the block, SIGINT/SIGTERM/SIGHUP interrupt the kernel once, then wait."""
    state = Interrupted()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    timer: list[threading.Timer] = []

    def handler(signum, frame):
        now = time.monotonic()
        if state.signum is None:
            state.signum, state.at = signum, now
            pids = kernel_pids()
            if not pids:              # no kernel yet: nothing has run, stop here
                raise KeyboardInterrupt
            print(f"zbench: {signal.Signals(signum).name}: stopping the sweep; tearing its pool down "
                  f"(waiting up to {budget_s:.0f} s)", file=sys.stderr, flush=True)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            t = threading.Timer(budget_s, _kill_kernels, (state, budget_s))
            t.daemon = True
            t.start()
            timer.append(t)
        else:
            left = max(0.0, budget_s - (now - state.at))
            print(f"zbench: still tearing down ({left:.0f} s left at most)", file=sys.stderr, flush=True)

    previous = {sig: signal.signal(sig, handler) for sig in FORWARDED}
    try:
        yield state
    finally:
        for t in timer:
            t.cancel()
        for sig, h in previous.items():
            signal.signal(sig, h)
