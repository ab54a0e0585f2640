"""Signals around work that must not be cut short.

`terminate_as_exit` turns SIGTERM and SIGHUP into SystemExit, so `with` blocks and
atexit handlers clean up as they do on Ctrl-C. `signals_deferred` holds SIGINT,
SIGTERM and SIGHUP back for the length of a teardown (destroying a pool, stopping a
lab) and delivers them once it is done: a second Ctrl-C, or the SIGTERM that
nbclient sends 2.5 s after an interrupt, can no longer abort a teardown half-way.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_DEFERRED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _raise_system_exit(signum, frame):
    raise SystemExit(128 + signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def terminate_as_exit():
    """Within the block, SIGTERM/SIGHUP unwind the stack like Ctrl-C does."""
    if not _main_thread():
        yield
        return
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, _raise_system_exit)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_deferred():
    """Block SIGINT/SIGTERM/SIGHUP inside the block; pending ones arrive at its end.

    The previous mask is restored exactly (nesting is safe). Outside the main thread
    the mask is per-thread and signals go to the main thread anyway, so it is a no-op.
    """
    if not _main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
