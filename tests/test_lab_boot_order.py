"""Which module labs boot beside the unit tests, and in what order (tests/conftest.py), without a VM.

A lab that waits idle beside a measuring one counts against it (host_load's OTHER_QEMUS_MAX): a
module's lab boots early only if every module running before it is marked idle_labs_ok, and the
early boots after the first go one by one (a boot is a core of TCG).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

import conftest
from conftest import _early_module_labs, _phase, lab_in_thread


class _Item:
    """What the conftest hooks read of a collected test: its markers."""

    def __init__(self, lab=False, boots=None, idle_labs_ok=None):
        self.markers = {}
        if lab:
            self.markers["lab"] = pytest.mark.lab.mark
        if boots is not None:
            kw = {} if idle_labs_ok is None else {"idle_labs_ok": idle_labs_ok}
            self.markers["boots"] = pytest.mark.boots(boots, **kw).mark

    def get_closest_marker(self, name):
        return self.markers.get(name)


def _items(unit=True):
    return ([_Item()] if unit else []) + [
        _Item(lab=True),                                           # on the session's lab
        _Item(lab=True, boots="mech"), _Item(lab=True, boots="mech"),
        _Item(lab=True, boots="fleet", idle_labs_ok=True),
        _Item(lab=True, boots="zfs21", idle_labs_ok=True),
        _Item(lab=True, boots="other")]


def test_modules_whose_checks_hold_beside_idle_labs_run_first():
    items = sorted(_items(), key=_phase)
    order = [i.get_closest_marker("boots").args[0] if i.get_closest_marker("boots") else
             ("lab" if i.get_closest_marker("lab") else "unit") for i in items]
    assert order == ["unit", "fleet", "zfs21", "mech", "mech", "other", "lab"]


def test_early_labs_are_those_of_idle_labs_ok_modules_and_the_first_other():
    assert _early_module_labs(sorted(_items(), key=_phase)) == ["fleet", "zfs21", "mech"]


def test_without_unit_tests_only_the_first_module_lab_boots_early():
    # nothing to boot beside: a lab booting during a module's tests would be a busy neighbour
    assert _early_module_labs(sorted(_items(unit=False), key=_phase)) == ["fleet"]


def test_a_first_module_not_marked_idle_labs_ok_boots_alone():
    items = [_Item(), _Item(lab=True, boots="mech"), _Item(lab=True, boots="zfs21", idle_labs_ok=True)]
    assert _early_module_labs(items) == ["mech"]


class _FakeLab:
    """Lab's context manager, each boot a short sleep, the boots seen by the test."""
    booted: list = []
    running = 0
    most = 0
    lock = threading.Lock()

    def __init__(self, cfg):
        self.cfg = cfg

    def __enter__(self):
        with self.lock:
            _FakeLab.running += 1
            _FakeLab.most = max(_FakeLab.most, _FakeLab.running)
        time.sleep(0.2)
        with self.lock:
            _FakeLab.running -= 1
            _FakeLab.booted.append(self.cfg)
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def fake_lab(monkeypatch):
    monkeypatch.setattr(conftest, "Lab", _FakeLab)
    _FakeLab.booted, _FakeLab.running, _FakeLab.most = [], 0, 0
    return _FakeLab


def _cfg(name):
    return SimpleNamespace(name=name, boot_timeout_s=5)


def test_a_chained_lab_boots_once_the_one_before_it_is_up(fake_lab):
    first_cfg, second_cfg = _cfg("first"), _cfg("second")
    with lab_in_thread(first_cfg) as first, lab_in_thread(second_cfg, after=first.up) as second:
        assert second().cfg is second_cfg and first().cfg is first_cfg
    assert fake_lab.booted == [first_cfg, second_cfg] and fake_lab.most == 1


def test_a_chained_lab_released_before_its_turn_boots_nothing(fake_lab):
    never = threading.Event()
    with lab_in_thread(_cfg("waiting"), after=never) as waiting:
        pass
    assert waiting.up.is_set() and fake_lab.booted == []
