"""Signals around work that must not be cut short.

`terminate_as_exit` turns SIGTERM and SIGHUP into SystemExit, so `with` blocks and
atexit handlers clean up as they do on Ctrl-C; `exit_on_termination` does so for the
rest of a command-line process, from its first line. `signals_deferred` holds SIGINT,
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


def exit_on_termination() -> None:
    """From now on SIGTERM/SIGHUP end the process with SystemExit(128 + n), and SIGINT
    raises KeyboardInterrupt even if the process was started with it ignored (a background
    job of a script), as the sweep's own forwarding does later.

    The CLI calls it first: a signal that lands while a command is still importing and
    validating (seconds on a busy machine) exits 143 or 129 like one that lands later,
    instead of killing the process by the default action (a shell sees 128 + n, but its
    parent's wait status is "killed by signal", and nothing ran any `finally`)."""
    if _main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _raise_system_exit)
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def signals_deferred():
    """Hold SIGINT/SIGTERM/SIGHUP back inside the block; replay them at its end.

    Python runs signal handlers in the main thread whichever thread the kernel picked,
    so swapping the handlers (not the thread's signal mask, which other threads of the
    process would bypass) catches every one. At the end the previous handlers are put
    back and each signal that arrived is raised again, once, in arrival order: Ctrl-C
    still interrupts and SIGTERM still ends the process, just after the teardown.
    Outside the main thread handlers cannot be set, so the block runs as it is.
    """
    if not _main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum, frame):
        if signum not in pending:
            pending.append(signum)

    previous = {sig: signal.signal(sig, hold) for sig in _DEFERRED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in pending:
            signal.raise_signal(sig)
