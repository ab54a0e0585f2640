"""Crash points: where the resume tests kill a sweep on purpose.

`ZBENCH_CRASH_AT=<name>` makes the process SIGKILL itself at the point of that
name (after an optional delay, so a write can get going first). Unset, every
crash point is a no-op. They live here, below every layer, so that any layer
can declare one without importing the executor.
"""

from __future__ import annotations

import os
import signal
import time


def crash_point(name: str, after_s: float = 0.0) -> None:
    """Kill this process with SIGKILL here if ZBENCH_CRASH_AT names this point."""
    if os.environ.get("ZBENCH_CRASH_AT") == name:
        time.sleep(after_s)
        os.kill(os.getpid(), signal.SIGKILL)
