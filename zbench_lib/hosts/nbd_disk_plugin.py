"""nbdkit plugin: a sparse file served with the delays of a mechanism model (issue 33).

Loaded by nbdkit's own Python, never imported by zbench (the `nbdkit` module exists only
there); `nbd_disk.build_nbdkit_argv` spells the command:

    nbdkit -f -U SOCKET --threads 64 python nbd_disk_plugin.py file=DISK.raw model=mech:hdd-7200

Glue only: the timing is `disk_mech`'s. nbdkit's parallel thread model lets many requests
be in flight; each request thread does its data I/O on the file, submits to the drive and
sleeps until the drive says it is done. One mechanism thread dispatches the queued work
whenever the mechanism is free, so the drive reorders what is waiting (NCQ).

The model can change while nbdkit runs (`nbd_model`): while the disk is idle, the mechanism thread
looks at the control file beside the disk every `nbd_model.POLL_S`, and a new request gets a fresh
drive of the model asked for (`mech:null`, passthrough, under a QEMU throttle) and a status file
saying what it now serves; a model it cannot take leaves the old one and says why.
"""

import os
import sys
import threading
import time
from pathlib import Path

import nbdkit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # the zbench checkout

from zbench_lib.core.errors import ConfigError  # noqa: E402
from zbench_lib.hosts import nbd_model  # noqa: E402
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
    _drive.update(fd=fd, size=os.fstat(fd).st_size, busy_until=0.0, settled=0.0,
                  requests=nbd_model.Requests(Path(_conf["file"])))
    _serve(parse_mech(_conf["model"]), 0)
    threading.Thread(target=_mechanism, name="mechanism", daemon=True).start()


def _serve(model, seq):
    """A fresh drive of `model` from now on, and the status saying so (the drive's own parameters)."""
    drive = model.drive(_drive["size"], time.monotonic())
    _drive.update(drive=drive, model=model, busy_until=0.0)
    nbd_model.write_status(Path(_conf["file"]), nbd_model.served(model, seq, drive.p))


def _switch_if_asked(now):
    """Take a request of the control file, only while the disk is idle. Caller holds _cond."""
    if _drive["busy_until"] > now or _drive["settled"] > now or _drive["drive"].has_work():
        return
    asked = _drive["requests"].pending()
    if asked is None:
        return
    seq, name = asked
    try:
        _serve(parse_mech(name), seq)
    except (ConfigError, ValueError, TypeError) as exc:     # the old model stays; the status says why
        nbd_model.write_status(Path(_conf["file"]), {**nbd_model.served(_drive["model"], seq, _drive["drive"].p),
                                                     "error": str(exc)})


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
            _switch_if_asked(now)
            busy_until = _drive["busy_until"]
            _cond.wait(min(busy_until - now, nbd_model.POLL_S) if busy_until > now else nbd_model.POLL_S)


def _hold(kind, offset=0, length=0, fua=False):
    req = Request(kind, offset, length, fua)
    with _cond:
        now = time.monotonic()
        if _drive["drive"].submit(req, now) is None and not _dispatch(now):
            _cond.notify_all()          # wake the mechanism
        while req.finish is None:
            _cond.wait()
        _drive["settled"] = max(_drive["settled"], req.finish)    # in flight until then: no switch before
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
