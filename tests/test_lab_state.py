"""Labs owned safely: names are never paths, PIDs are acted on only if they are the lab's QEMU."""

import json
import os
import subprocess

import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.hosts.lab_config import LabConfig, check_lab_name
from zbench_lib.hosts.lab_state import is_lab_qemu, read_state, stop_lab, take_lock


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZBENCH_CACHE", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name", ["/some/dir", "../default", "lab\n", "", "-x", "a" * 33, "a b", "ü"])
def test_names_that_are_not_plain_names_are_refused(name, cache):
    with pytest.raises(ConfigError, match="lab: name"):
        check_lab_name(name)
    with pytest.raises(ConfigError, match="lab: name"):
        read_state(name)
    with pytest.raises(ConfigError, match="lab: name"):
        stop_lab(name)
    with pytest.raises(ConfigError, match="lab: name"):
        LabConfig(name=name)


def _state(cache, name, pid, **extra):
    d = cache / "labs" / name
    d.mkdir(parents=True)
    (d / "state.json").write_text(json.dumps({"pid": pid, "port": 1, "image": "/nonexistent", **extra}))
    return d


def test_a_recorded_pid_that_is_not_the_labs_qemu_is_never_signalled(cache):
    # A PID reused by an unrelated process (here: sleep) must survive `lab down`.
    other = subprocess.Popen(["sleep", "30"])
    try:
        d = _state(cache, "default", other.pid)
        assert not is_lab_qemu(json.loads((d / "state.json").read_text()), "default")
        assert stop_lab("default") is False
        assert other.poll() is None, "lab down signalled a process that was not the lab"
        assert not d.exists()            # the dead lab's files are removed
    finally:
        other.kill()
        other.wait()


def test_status_of_a_lab_whose_process_is_this_python_is_not_running(cache):
    d = _state(cache, "mine", os.getpid())
    assert read_state("mine") is None
    assert not d.exists()


def test_a_second_lab_with_the_same_name_is_refused_while_the_lock_is_held(cache):
    fd = take_lock("twin")
    try:
        with pytest.raises(ConfigError, match="already running or starting"):
            take_lock("twin")
        other = take_lock("other")           # another name is independent
        os.close(other)
    finally:
        os.close(fd)
    os.close(take_lock("twin"))              # released with its fd
