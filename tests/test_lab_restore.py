"""What a saved VM state is keyed by, and why labs started in threads keep their QEMU (issue 51).
The restore itself is checked on real labs in test_lab_restore_lab.py."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from zbench_lib.core.errors import ZbenchError
from zbench_lib.hosts import lab_restore
from zbench_lib.hosts.lab import _die_with_parent
from zbench_lib.hosts.lab_config import LabConfig
from zbench_lib.hosts.lab_group import lasting_popen


@pytest.fixture
def image(tmp_path):
    d = tmp_path / "a5677b707ef8a11e"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"built_at": "2026-12-02T19:00:00Z"}))
    return d


def test_a_state_is_keyed_by_the_image_build_qemu_and_the_machine_shape(image, monkeypatch):
    monkeypatch.setattr(lab_restore, "qemu_version", lambda: "QEMU emulator version 7.2.19")
    base = lab_restore.state_key(image, LabConfig(), "tcg")
    # the data disks are hot-plugged after a restore: they are not part of the key
    assert lab_restore.state_key(image, LabConfig(disks=8, model="mech:hdd-7200", name="x"), "tcg") == base
    assert lab_restore.state_key(image, LabConfig(memory_mib=1024), "tcg") != base
    assert lab_restore.state_key(image, LabConfig(cpus=1), "tcg") != base
    assert lab_restore.state_key(image, LabConfig(), "kvm") != base
    (image / "manifest.json").write_text(json.dumps({"built_at": "2026-12-03T08:00:00Z"}))     # rebuilt
    assert lab_restore.state_key(image, LabConfig(), "tcg") != base
    monkeypatch.setattr(lab_restore, "qemu_version", lambda: "QEMU emulator version 8.2.2")
    other_qemu = lab_restore.state_key(image, LabConfig(), "tcg")
    monkeypatch.setattr(lab_restore, "qemu_version", lambda: "QEMU emulator version 7.2.19")
    assert lab_restore.state_key(image, LabConfig(), "tcg") != other_qemu


def test_a_state_path_qemus_shell_would_split_is_refused(tmp_path):
    with pytest.raises(ZbenchError, match="ZBENCH_CACHE"):
        lab_restore.incoming_argv(lab_restore.SavedState(tmp_path / "my states"))


def _started_in_a_thread(start) -> subprocess.Popen:
    box = []
    thread = threading.Thread(target=lambda: box.append(start()))
    thread.start()
    thread.join()
    return box[0]


def _alive_after_its_thread_ended(proc: subprocess.Popen) -> bool:
    time.sleep(0.5)                   # PR_SET_PDEATHSIG's SIGTERM, if it is coming, has come
    alive = proc.poll() is None
    proc.kill()
    proc.wait()
    return alive


def test_a_process_forked_in_a_thread_that_ends_dies_with_it_unless_lasting_popen_forks_it():
    def start():
        return subprocess.Popen(["sleep", "30"], preexec_fn=_die_with_parent)
    assert not _alive_after_its_thread_ended(_started_in_a_thread(start))      # why lasting_popen exists
    assert _alive_after_its_thread_ended(_started_in_a_thread(lambda: lasting_popen(start)))
