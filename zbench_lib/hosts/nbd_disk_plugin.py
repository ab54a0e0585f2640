"""nbdkit plugin: a sparse file served with the delays of a mechanism model (issue 33).

Loaded by nbdkit's own Python, never imported by zbench (the `nbdkit` module exists only
there); `nbd_disk.build_nbdkit_argv` spells the command:

    nbdkit -f -U SOCKET --threads 64 python nbd_disk_plugin.py file=DISK.raw model=mech:hdd-7200

Glue only: the timing is `disk_mech`'s. nbdkit's parallel thread model lets many requests
be in flight; each request thread does its data I/O on the file, submits to the drive and
sleeps until the drive says it is done. One mechanism thread dispatches the queued work
whenever the mechanism is free, so the drive reorders what is waiting (NCQ).
"""

import os
import sys
import threading
import time
from pathlib import Path

import nbdkit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # the zbench checkout

from zbench_lib.hosts.disk_mech import FLUSH, READ, WRITE, Request  # noqa: E402
from zbench_lib.hosts.mech_models import parse_mech  # noqa: E402

API_VERSION = 2
_conf = {}
_cond = threading.Condition()
_drive = {}


def config(key, value):
    if key not in ("file", "model"):
        raise RuntimeError(f"unknown parameter {key!r}: give file=PATH model=mech:NAME")
    _conf[key] = value


def config_complete():
    if set(_conf) != {"file", "model"}:
        raise RuntimeError("needs file=PATH and model=mech:NAME")
    parse_mech(_conf["model"])          # a bad model stops nbdkit before it listens


def thread_model():
    return nbdkit.THREAD_MODEL_PARALLEL


def after_fork():
    # Threads and descriptors are made after nbdkit daemonises (none of either survives a fork).
    fd = os.open(_conf["file"], os.O_RDWR)
    size = os.fstat(fd).st_size
    _drive.update(fd=fd, size=size, busy_until=0.0, drive=parse_mech(_conf["model"]).drive(size, time.monotonic()))
    threading.Thread(target=_mechanism, name="mechanism", daemon=True).start()


def _dispatch(now):
    """Start the next job if the mechanism is free; True when one started. Caller holds _cond."""
    drive = _drive["drive"]
    if _drive["busy_until"] > now or not drive.has_work():
        return False
    job = drive.dispatch(now)
    if job is None:
        return False
    _drive["busy_until"] = job.finish
    _cond.notify_all()                  # the requests it completes learn their finish time
    return True


def _mechanism():
    # Dispatches when the mechanism frees up with work queued; an idle mechanism is started
    # by the arriving request itself (one thread hop less at depth 1).
    with _cond:
        while True:
            now = time.monotonic()
            if _dispatch(now):
                continue
            busy_until = _drive["busy_until"]
            _cond.wait(busy_until - now if busy_until > now else None)


def _hold(kind, offset=0, length=0, fua=False):
    req = Request(kind, offset, length, fua)
    with _cond:
        now = time.monotonic()
        if _drive["drive"].submit(req, now) is None and not _dispatch(now):
            _cond.notify_all()          # wake the mechanism
        while req.finish is None:
            _cond.wait()
    delay = req.finish - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def open(readonly):
    return 1


def get_size(h):
    return _drive["size"]


def can_write(h):
    return True


def can_flush(h):
    return True


def can_fua(h):
    return nbdkit.FUA_NATIVE


def can_multi_conn(h):
    return True                         # one drive state behind every connection


def pread(h, buf, offset, flags):
    os.preadv(_drive["fd"], [buf], offset)
    _hold(READ, offset, len(buf))


def pwrite(h, buf, offset, flags):
    os.pwrite(_drive["fd"], buf, offset)
    _hold(WRITE, offset, len(buf), fua=bool(flags & nbdkit.FLAG_FUA))


def flush(h, flags):
    _hold(FLUSH)
