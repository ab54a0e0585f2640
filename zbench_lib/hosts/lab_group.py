"""Labs started side by side: a fleet's hosts, a storage lab's client VMs.

A lab's QEMU and nbdkit die with their owner through PR_SET_PDEATHSIG, which Linux ties to the
*thread* that forked them, not the process: a lab started in a worker thread would lose its QEMU
the moment that thread ended. So a process started off the main thread is forked by one thread that
lasts as long as the process (`lasting_popen`), and a lab may then be started from any thread.
Signal handlers can only be installed by the main thread, so `up_together` installs each lab's once
all are up (in order: the last one's is put back first, as `down` runs in reverse).
"""

from __future__ import annotations

import concurrent.futures
import queue
import subprocess
import threading
from collections.abc import Callable

_REQUESTS: queue.Queue = queue.Queue()
_SPAWNER: list[threading.Thread] = []
_SPAWNER_LOCK = threading.Lock()


def _serve() -> None:
    while True:
        make, done = _REQUESTS.get()
        try:
            done.set_result(make())
        except BaseException as exc:      # the caller raises it
            done.set_exception(exc)


def lasting_popen(make: Callable[[], subprocess.Popen]) -> subprocess.Popen:
    """`make()` (a Popen) forked by a thread that outlives every lab: the calling thread itself if it
    is the main one, else the process's spawner thread (a daemon: it ends with the process)."""
    if threading.current_thread() is threading.main_thread():
        return make()
    with _SPAWNER_LOCK:
        if not _SPAWNER:
            _SPAWNER.append(threading.Thread(target=_serve, name="zbench-lab-spawner", daemon=True))
            _SPAWNER[0].start()
    done: concurrent.futures.Future = concurrent.futures.Future()
    _REQUESTS.put((make, done))
    return done.result()


def up_together(labs: list) -> list:
    """Start every lab at once (a restored lab is seconds; a cold boot is a core of TCG, so on a small
    machine they still overlap their waits). All up, or every one down again and the first failure
    raised. The main thread then installs their signal handlers, in order."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(labs)), thread_name_prefix="zbench-lab-up")
    futures = [pool.submit(lab.up) for lab in labs]
    try:
        concurrent.futures.wait(futures)
        failed = [f.exception() for f in futures if f.exception() is not None]
        if failed:
            raise failed[0]
    except BaseException:                  # a failed boot, or Ctrl-C while they booted
        pool.shutdown(wait=True)           # a lab is taken down only once its `up` returned
        for lab in reversed(labs):
            lab.down()
        raise
    pool.shutdown(wait=True)
    if threading.current_thread() is threading.main_thread():
        for lab in labs:
            lab.install_signal_handlers()
    return labs
