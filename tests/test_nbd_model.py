"""The model a running nbdkit disk serves, switched between pools (issue 33 item 2): the control-file
protocol (`hosts.nbd_model`) with the plugin's side played here, then the real nbdkit and plugin on a
small sparse file, driven by fio's nbd engine (no QEMU, no lab), switched from passthrough to the
7200 rpm model and back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts import nbd_model
from zbench_lib.hosts.mech_models import parse_mech
from zbench_lib.hosts.nbd_disk import nbd_uri, start_nbd_disk, stop_nbd_disk
from zbench_lib.hosts.nbd_model import PASSTHROUGH, Requests, control_path, read_status, status_path, switch

# hosts/mech_models.py's hdd-7200 as published, worked out by hand: 8.5 ms average seek + half a turn
# (60,000 / 7,200 / 2 = 4.17 ms) = 12.7 ms mean for a 4k random read at depth 1.
HDD_7200_MEAN_MS = 8.5 + 60_000 / 7200 / 2


class FakePlugin:
    """The plugin's side of the protocol in a thread: each request taken, a status written, as
    nbd_disk_plugin does while its disk is idle (`refuse`: a model it answers with an error)."""

    def __init__(self, disk: Path, model: str = PASSTHROUGH, refuse: str | None = None):
        self.disk, self.refuse, self.seen = disk, refuse, []
        self.model = parse_mech(model)
        nbd_model.write_status(disk, nbd_model.served(self.model, 0, self.model.params))
        self.requests = Requests(disk)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self._stop.wait(nbd_model.POLL_S):
            asked = self.requests.pending()
            if asked is None:
                continue
            seq, name = asked
            self.seen.append(asked)
            if name == self.refuse:
                nbd_model.write_status(self.disk, {**nbd_model.served(self.model, seq, self.model.params),
                                                   "error": "no such drive here"})
                continue
            self.model = parse_mech(name)
            nbd_model.write_status(self.disk, nbd_model.served(self.model, seq, self.model.params))

    def stop(self):
        self._stop.set()
        self.thread.join(5)


@pytest.fixture
def disk(tmp_path) -> Path:
    d = tmp_path / "zbdata00.raw"
    d.write_bytes(b"")
    return d


def test_the_files_lie_beside_the_disk(tmp_path):
    assert control_path(tmp_path / "zbdata03.raw") == tmp_path / "zbdata03.model"
    assert status_path(tmp_path / "zbdata03.raw") == tmp_path / "zbdata03.status"


def test_a_request_is_seen_once_even_two_within_one_clock_tick(disk):
    requests = Requests(disk)
    assert requests.pending() is None                       # no control file yet
    control_path(disk).write_text('{"seq": 1, "model": "mech:nvme"}')
    assert requests.pending() == (1, "mech:nvme") and requests.pending() is None
    mtime = os.stat(control_path(disk)).st_mtime_ns
    nbd_model._write(control_path(disk), {"seq": 2, "model": "mech:nvme"})     # the same bytes but the seq
    os.utime(control_path(disk), ns=(mtime, mtime))         # as if within one tick of the file system's clock
    assert requests.pending() == (2, "mech:nvme")           # a new inode: still seen


def test_a_request_left_before_the_plugin_started_is_not_taken(disk):
    control_path(disk).write_text('{"seq": 4, "model": "mech:hdd-5400"}')
    assert Requests(disk).pending() is None


def test_a_switch_is_asked_answered_and_read_back(disk):
    plugin = FakePlugin(disk)
    try:
        status = switch(disk, "mech:hdd-7200", timeout_s=10)
        assert status["seq"] == 1 and status["model"] == "mech:hdd-7200" and status["kind"] == "hdd"
        assert status["params"]["rpm"] == 7200 and status["params"]["avg_seek_ms"] == 8.5
        assert json.loads(control_path(disk).read_text()) == {"seq": 1, "model": "mech:hdd-7200"}
        back = switch(disk, PASSTHROUGH, timeout_s=10)
        assert (back["seq"], back["model"], back["kind"], back["params"]) == (2, "mech:null", "null", {})
        assert plugin.seen == [(1, "mech:hdd-7200"), (2, "mech:null")] and read_status(disk) == back
    finally:
        plugin.stop()


def test_what_a_status_must_say_is_the_models_own_record():
    assert nbd_model.expected("mech:hdd-5400,write_cache=off")["params"]["write_cache"] is False
    assert nbd_model.expected(PASSTHROUGH) == {"model": "mech:null", "kind": "null", "params": {}}


def test_a_disk_without_a_status_is_not_served_and_a_bad_model_never_reaches_the_plugin(disk):
    with pytest.raises(ConfigError, match=r"^disk zbdata00 is not served through nbdkit, so it cannot take "
                                          r"mech:hdd-7200"):
        switch(disk, "mech:hdd-7200")
    with pytest.raises(ConfigError, match="unknown disk model 'mech:floppy'"):
        switch(disk, "mech:floppy")
    assert not control_path(disk).exists()


def test_a_refused_model_and_a_plugin_that_never_answers_are_errors(disk):
    plugin = FakePlugin(disk, refuse="mech:nvme")
    try:
        with pytest.raises(ZbenchError, match=r"^disk zbdata00: nbdkit refused mech:nvme: no such drive here$"):
            switch(disk, "mech:nvme", timeout_s=10)
    finally:
        plugin.stop()
    with pytest.raises(ZbenchError, match=r"^disk zbdata00: nbdkit did not take mech:sata-ssd within 0 s"):
        switch(disk, "mech:sata-ssd", timeout_s=0.2)        # nobody reads the control file now


# --- the real nbdkit and plugin ------------------------------------------------------------------

def _p50_ms(uri: str, runtime_s: int) -> tuple[float, int]:
    """p50 of 4k random reads at depth 1 over the NBD export, and how many were done."""
    argv = ["fio", "--name=switch", "--ioengine=nbd", f"--uri={uri}", "--rw=randread", "--bs=4k", "--iodepth=1",
            "--time_based", f"--runtime={runtime_s}", "--randrepeat=0", "--output-format=json"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=runtime_s + 60).stdout
    read = json.loads(out[out.index("{"):])["jobs"][0]["read"]      # fio's nbd engine prints a line first
    return read["clat_ns"]["percentile"]["50.000000"] / 1e6, read["total_ios"]


@pytest.mark.skipif(not shutil.which("nbdkit") or not shutil.which("fio"), reason="needs nbdkit and fio")
def test_the_real_plugin_switches_between_passthrough_and_the_7200_rpm_model():
    work = Path(tempfile.mkdtemp(prefix="zbnbd", dir="/tmp"))         # a unix socket path stays short
    disk = work / "zbdata00.raw"
    with open(disk, "wb") as fh:
        fh.truncate(256 * 2**20)
    proc = start_nbd_disk(work / "d.sock", disk, PASSTHROUGH, log=work / "nbdkit.log")
    try:
        deadline = time.monotonic() + 10        # nbdkit binds its socket before the plugin's after_fork
        while read_status(disk) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert read_status(disk) == {"seq": 0, "model": "mech:null", "kind": "null", "params": {}}
        uri = nbd_uri(work / "d.sock")
        before, _ = _p50_ms(uri, 2)
        hdd = switch(disk, "mech:hdd-7200", timeout_s=20)
        assert (hdd["seq"], hdd["model"], hdd["params"]["rpm"]) == (1, "mech:hdd-7200", 7200)
        modelled, ios = _p50_ms(uri, 4)
        after = switch(disk, PASSTHROUGH, timeout_s=20)
        again, _ = _p50_ms(uri, 2)
    finally:
        stop_nbd_disk(proc)
        shutil.rmtree(work, ignore_errors=True)
    assert after["seq"] == 2 and after["model"] == "mech:null"
    # Passthrough: a socket hop and a Python call, well under a millisecond even on a busy machine.
    assert before < 1.0 and again < 1.0, (before, again)
    # The model: seek and rotation, a p50 near the 12.7 ms mean; half and three times it bound a busy machine.
    assert 0.5 * HDD_7200_MEAN_MS < modelled < 3 * HDD_7200_MEAN_MS, (modelled, ios)
    assert ios >= 4 * 1000 / (3 * HDD_7200_MEAN_MS) / 2, ios       # it ran at a disk's pace, not stalled
