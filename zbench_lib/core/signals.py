"""Turn SIGTERM and SIGHUP into SystemExit so `with` blocks and atexit clean up."""

from __future__ import annotations

import contextlib
import signal
import threading


def _raise_system_exit(signum, frame):
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def terminate_as_exit():
    """Within the block, SIGTERM/SIGHUP unwind the stack like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
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
