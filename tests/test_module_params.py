"""ZFS module parameters as a settings object: validation, apply, read back, restore.

A unit test of the object's logic: the host is a fake that keeps /sys/module/zfs/parameters
in memory (with the ARC's c_max as arc_tuning_update treats zfs_arc_max) and records argvs.
"""

from __future__ import annotations

import math
import re
import signal

import pytest

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.hosts.base import Host, Result
from zbench_lib.zfs.module_params import (ARCSTATS, MEMINFO, PARAM_DIR, PARAMS, ModuleParams, check_value,
                                          parse_param_value, result_columns)

MiB, GiB = 1024 ** 2, 1024 ** 3


class FakeZfsHost(Host):
    """Reads with `cat`, writes with `tee` (value on stdin); nothing else is allowed."""

    name = "fake"

    def __init__(self, mem_bytes=8 * GiB):
        self.params = {"zfs_txg_timeout": "5", "zfs_dirty_data_max": str(800 * MiB),
                       "zfs_vdev_async_write_min_active": "2", "zfs_vdev_async_write_max_active": "10",
                       "zfs_prefetch_disable": "0", "zfs_arc_max": "0", "zil_slog_bulk": "67108864"}
        self.mem = mem_bytes
        self.c_max = 6 * GiB                # ZFS's default ARC limit on this host
        self.clamp = {}                     # name -> function applied to a written value
        self.refuse_after = None            # fail every tee after this many
        self.interrupt_on_tee = None        # raise KeyboardInterrupt on this (1-based) tee
        self.calls, self.handlers = [], []

    def run(self, argv, *, timeout=600, check=True, input=None):
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), argv
        self.calls.append(argv)
        self.handlers.append(signal.getsignal(signal.SIGINT))
        path = argv[1]
        if argv[0] == "cat" and len(argv) == 2:
            return self._cat(argv, path)
        assert argv[0] == "tee" and len(argv) == 2 and path.startswith(PARAM_DIR + "/"), argv
        tees = sum(c[0] == "tee" for c in self.calls)
        if self.interrupt_on_tee == tees:
            self.params[path.rsplit("/", 1)[1]] = input.strip()     # it did write
            raise KeyboardInterrupt
        if self.refuse_after is not None and tees > self.refuse_after:
            raise CommandError(self.name, argv, 1, "tee: Permission denied")
        name, value = path.rsplit("/", 1)[1], input.strip()
        assert input.endswith("\n")
        value = self.clamp.get(name, str)(value)
        self.params[name] = value
        if name == "zfs_arc_max" and 256 * MiB < int(value) < self.mem:
            self.c_max = int(value)         # arc_tuning_update: 0, or at most c_min, changes nothing
        return Result(tuple(argv), 0, input, "", 0.0)

    def _cat(self, argv, path):
        if path == ARCSTATS:
            text = f"13 1 0x01 1 2 3 4\nname type data\nc_min 4 {256 * MiB}\nc_max 4 {self.c_max}\n"
        elif path == MEMINFO:
            text = f"MemTotal: {self.mem // 1024} kB\nMemFree: 1000 kB\n"
        elif path.startswith(PARAM_DIR + "/") and path.rsplit("/", 1)[1] in self.params:
            text = self.params[path.rsplit("/", 1)[1]] + "\n"
        else:
            raise CommandError(self.name, argv, 1, f"cat: {path}: No such file or directory")
        return Result(tuple(argv), 0, text, "", 0.0)

    def ops(self):
        """(verb, parameter) for every sysfs parameter command, in order."""
        return [(c[0], c[1].rsplit("/", 1)[1]) for c in self.calls if c[1].startswith(PARAM_DIR)]


# --- validation --------------------------------------------------------------------------

@pytest.mark.parametrize("name, value, canonical", [
    ("zfs_txg_timeout", 5, "5"), ("zfs_txg_timeout", " 30 ", "30"), ("zfs_txg_timeout", 3600, "3600"),
    ("zfs_dirty_data_max", "256M", str(256 * MiB)), ("zfs_dirty_data_max", 1 << 30, str(1 << 30)),
    ("zfs_prefetch_disable", True, "1"), ("zfs_prefetch_disable", "false", "0"), ("zfs_prefetch_disable", 1, "1"),
    ("zfs_arc_max", 0, "0"), ("zfs_arc_max", "64M", str(64 * MiB)), ("zfs_arc_max", "2G", str(2 * GiB)),
    ("zfs_vdev_max_active", 1000, "1000"), ("l2arc_headroom", 0, "0"), ("zil_slog_bulk", "768K", "786432"),
    ("zfs_immediate_write_sz", "32k", "32768"), ("l2arc_noprefetch", "TRUE", "1"),
])
def test_values_become_the_string_written_to_sysfs(name, value, canonical):
    assert check_value(name, value, "p") == canonical
    assert check_value(name, canonical, "p") == canonical      # a spec's checked value passes again


@pytest.mark.parametrize("name, value, message", [
    ("zfs_txg_timeout", "x",
     "factors.zfs_txg_timeout[1]: expected an integer number of seconds 1..3600, got 'x'"),
    ("zfs_txg_timeout", True, "expected an integer number of seconds 1..3600, got True"),
    ("zfs_txg_timeout", -1, "got -1"), ("zfs_txg_timeout", "-1", "got '-1'"),
    ("zfs_txg_timeout", 0, "got 0"), ("zfs_txg_timeout", 3601, "got 3601"),
    ("zfs_txg_timeout", 5.0, "got 5.0"), ("zfs_txg_timeout", math.nan, "got nan"),
    ("zfs_vdev_async_write_max_active", 1001, "expected an integer 1..1000, got 1001"),
    ("zfs_vdev_max_active", False, "got False"),
    ("zfs_dirty_data_max", "256Q", "expected a size 1M..1T (bytes, or like 256M), got '256Q'"),
    ("zfs_dirty_data_max", "2T", "got '2T'"), ("zfs_dirty_data_max", -5, "got -5"),
    ("zfs_dirty_data_max", math.nan, "got nan"), ("zfs_dirty_data_max", True, "got True"),
    ("zfs_dirty_data_max", "1.5", "got '1.5'"),
    ("zfs_arc_max", "32M", "expected 0 (ZFS's default) or a size 64M..64T"),
    ("zfs_prefetch_disable", 2, "expected 0 or 1 (or true/false), got 2"),
    ("zfs_prefetch_disable", "yes please", "got 'yes please'"),
    ("zfs_prefetch_disable", math.nan, "got nan"),
    ("l2arc_write_max", 0, "got 0"),
    ("zfs_txg_timout", 5, "'zfs_txg_timout' is not a ZFS module parameter zbench sets (allowed: zfs_txg_timeout, "),
    ("zfs_arc_min", "1G", "allowed: .*zfs_arc_max"),
])
def test_bad_values_are_refused_with_one_line_naming_the_spec_path(name, value, message):
    with pytest.raises(ConfigError) as err:
        check_value(name, value, f"factors.{name}[1]")
    text = str(err.value)
    assert text.startswith(f"factors.{name}[1]: ") and "\n" not in text
    if ".*" in message:
        assert re.search(message, text), text
    else:
        assert message in text, text


def test_every_parameter_has_a_meaning_and_sane_bounds():
    assert len(PARAMS) == 16
    for name, p in PARAMS.items():
        assert p.kind in ("int", "bytes", "bool") and p.meaning and 0 <= p.lo <= p.hi, name
        check_value(name, p.lo if p.kind != "bool" else 0, name)
        check_value(name, p.hi, name)


def test_bad_values_are_refused_before_the_host_is_touched():
    host = FakeZfsHost()
    with pytest.raises(ConfigError, match=r"^module_params\.zfs_txg_timeout: "):
        ModuleParams(host, {"zfs_arc_max": "1G", "zfs_txg_timeout": "soon"})
    assert host.calls == []


def test_pure_helpers():
    assert parse_param_value(" 5\n") == "5"
    rec = {"zfs_txg_timeout": {"before": "5", "set": "10", "readback": "10"},
           "zfs_dirty_data_max": {"before": "1", "set": "2", "readback": "2"}}
    assert result_columns(rec) == {"param_zfs_txg_timeout": "10", "param_zfs_dirty_data_max": "2"}
    assert result_columns({}) == {}


# --- apply and restore -------------------------------------------------------------------

def test_an_empty_setting_touches_nothing():
    host = FakeZfsHost()
    for wanted in ({}, None):
        with ModuleParams(host, wanted) as mp:
            assert mp.record == {}
    assert host.calls == []


def test_values_are_set_read_back_recorded_and_restored_in_reverse():
    host = FakeZfsHost()
    with ModuleParams(host, {"zfs_txg_timeout": 10, "zfs_dirty_data_max": "256M",
                             "zfs_prefetch_disable": True}) as mp:
        assert host.params["zfs_txg_timeout"] == "10" and host.params["zfs_prefetch_disable"] == "1"
        assert host.params["zfs_dirty_data_max"] == str(256 * MiB)
        assert mp.record["zfs_txg_timeout"] == {"before": "5", "set": "10", "readback": "10"}
        assert mp.record["zfs_dirty_data_max"] == {"before": str(800 * MiB), "set": str(256 * MiB),
                                                   "readback": str(256 * MiB)}
        assert result_columns(mp.record)["param_zfs_prefetch_disable"] == "1"
        applied = len(host.calls)
    assert host.params["zfs_txg_timeout"] == "5" and host.params["zfs_prefetch_disable"] == "0"
    assert host.params["zfs_dirty_data_max"] == str(800 * MiB)
    assert mp.record["zfs_txg_timeout"]["restored"] == "5"
    names = ["zfs_txg_timeout", "zfs_dirty_data_max", "zfs_prefetch_disable"]
    ops = host.ops()
    assert ops[:3] == [("cat", n) for n in names]          # every read before any write
    assert ops[3:6] == [("tee", n) for n in names]
    assert ops[6:9] == [("cat", n) for n in names]          # read back
    restore = [op for op in host.ops()[9:] if op[0] == "tee"]
    assert restore == [("tee", n) for n in reversed(names)]
    assert len(host.calls) > applied


def test_writes_go_through_tee_with_the_value_on_stdin():
    host = FakeZfsHost()
    with ModuleParams(host, {"zfs_txg_timeout": 7}):
        pass
    tees = [c for c in host.calls if c[0] == "tee"]
    assert tees == [["tee", f"{PARAM_DIR}/zfs_txg_timeout"]] * 2
    assert all(c[0] in ("cat", "tee") for c in host.calls)    # no shell anywhere


def test_restore_runs_with_signals_held():
    host = FakeZfsHost()
    with ModuleParams(host, {"zfs_txg_timeout": 7}):
        pass
    restore_at = [i for i, c in enumerate(host.calls) if c[0] == "tee"][1]
    assert host.handlers[restore_at] is not signal.getsignal(signal.SIGINT)     # held
    assert getattr(host.handlers[restore_at], "__name__", "") == "hold"
    assert getattr(host.handlers[0], "__name__", "") != "hold"                  # not while applying


def test_an_exception_inside_the_block_still_restores():
    host = FakeZfsHost()
    with pytest.raises(RuntimeError, match="boom"):
        with ModuleParams(host, {"zfs_txg_timeout": 30, "zil_slog_bulk": "1M"}):
            raise RuntimeError("boom")
    assert host.params["zfs_txg_timeout"] == "5" and host.params["zil_slog_bulk"] == "67108864"


def test_ctrl_c_inside_the_block_still_restores():
    host = FakeZfsHost()
    with pytest.raises(KeyboardInterrupt):
        with ModuleParams(host, {"zfs_txg_timeout": 30}):
            raise KeyboardInterrupt
    assert host.params["zfs_txg_timeout"] == "5"


def test_ctrl_c_during_the_writes_restores_what_was_written():
    host = FakeZfsHost()
    host.interrupt_on_tee = 2
    with pytest.raises(KeyboardInterrupt):
        with ModuleParams(host, {"zfs_txg_timeout": 30, "zfs_prefetch_disable": 1, "zil_slog_bulk": 0}):
            pytest.fail("the block must not run")
    assert host.params["zfs_txg_timeout"] == "5" and host.params["zfs_prefetch_disable"] == "0"
    assert host.params["zil_slog_bulk"] == "67108864"
    assert ("tee", "zil_slog_bulk") not in host.ops()      # never written, so not "restored" either


def test_a_value_zfs_clamps_is_refused_after_restoring():
    host = FakeZfsHost()
    host.clamp["zfs_dirty_data_max"] = lambda v: str(min(int(v), 900 * MiB))
    with pytest.raises(ZbenchError) as err:
        with ModuleParams(host, {"zfs_txg_timeout": 9, "zfs_dirty_data_max": "1G"}):
            pytest.fail("the block must not run")
    assert f"zfs_dirty_data_max: wanted {GiB}, read back {900 * MiB}" in str(err.value)
    assert "zfs_txg_timeout" not in str(err.value) and "previous values restored" in str(err.value)
    assert host.params["zfs_txg_timeout"] == "5" and host.params["zfs_dirty_data_max"] == str(800 * MiB)


def test_a_restore_that_fails_after_a_clamp_is_raised_with_the_clamp_as_context():
    host = FakeZfsHost()
    host.clamp["zfs_dirty_data_max"] = lambda v: str(min(int(v), 512 * MiB))    # clamps the restore too
    with pytest.raises(ZbenchError, match="could not restore .*wanted 838860800 back, read 536870912") as err:
        with ModuleParams(host, {"zfs_dirty_data_max": "1G"}):
            pass
    assert "did not take module parameter" in str(err.value.__context__)


def test_a_restore_that_does_not_take_is_raised_after_trying_every_one():
    host = FakeZfsHost()
    host.refuse_after = 2
    with pytest.raises(ZbenchError, match="could not restore ZFS module parameter") as err:
        with ModuleParams(host, {"zfs_txg_timeout": 9, "zfs_prefetch_disable": 1}):
            pass
    assert "zfs_txg_timeout" in str(err.value) and "zfs_prefetch_disable" in str(err.value)
    assert [op for op in host.ops() if op[0] == "tee"][2:] == [("tee", "zfs_prefetch_disable"),
                                                             ("tee", "zfs_txg_timeout")]


def test_a_missing_parameter_file_is_named_and_nothing_is_written():
    host = FakeZfsHost()
    with pytest.raises(ZbenchError, match=r"cannot read .*/l2arc_write_boost .*OpenZFS release"):
        with ModuleParams(host, {"zfs_txg_timeout": 9, "l2arc_write_boost": "8M"}):
            pass
    assert not any(c[0] == "tee" for c in host.calls)


def test_async_write_min_may_not_exceed_max_including_the_current_value():
    host = FakeZfsHost()
    with pytest.raises(ConfigError, match=r"zfs_vdev_async_write_min_active \(20\) must not exceed "
                                          r"zfs_vdev_async_write_max_active \(10"):
        with ModuleParams(host, {"zfs_vdev_async_write_min_active": 20}):
            pass
    assert not any(c[0] == "tee" for c in host.calls)
    with ModuleParams(host, {"zfs_vdev_async_write_min_active": 20, "zfs_vdev_async_write_max_active": 40}) as mp:
        assert set(mp.record) == {"zfs_vdev_async_write_min_active", "zfs_vdev_async_write_max_active"}
    assert host.params["zfs_vdev_async_write_max_active"] == "10"


def test_sizes_at_or_above_the_hosts_memory_are_refused_before_writing():
    host = FakeZfsHost(mem_bytes=2 * GiB)
    for name in ("zfs_arc_max", "zfs_dirty_data_max"):
        with pytest.raises(ConfigError, match=rf"module_params\.{name}: 2G is not below fake's memory \(2G\)"):
            with ModuleParams(host, {name: "2G"}):
                pass
    assert not any(c[0] == "tee" for c in host.calls)


def test_arc_max_back_to_0_brings_the_previous_arc_limit_back():
    host = FakeZfsHost()
    with ModuleParams(host, {"zfs_arc_max": "1G"}) as mp:
        assert host.c_max == GiB and mp.record["zfs_arc_max"]["readback"] == str(GiB)
    # Writing 0 alone would leave c_max at 1G: the previous limit is written first, then 0.
    assert host.params["zfs_arc_max"] == "0" and host.c_max == 6 * GiB
    assert [op for op in host.ops() if op[0] == "tee"] == [("tee", "zfs_arc_max")] * 3


def test_an_arc_max_zfs_ignores_is_refused():
    host = FakeZfsHost()
    with pytest.raises(ZbenchError, match=rf"zfs_arc_max: wanted {128 * MiB}, ARC c_max is {6 * GiB}"):
        with ModuleParams(host, {"zfs_arc_max": "128M"}):       # not above c_min (256M): ignored
            pass
    assert host.params["zfs_arc_max"] == "0" and host.c_max == 6 * GiB


def test_a_real_host_writes_through_tee_and_reads_through_cat(tmp_path, monkeypatch):
    """LocalHost's own run/read_text against a directory standing in for sysfs."""
    from zbench_lib.hosts.base import LocalHost
    from zbench_lib.zfs import module_params
    monkeypatch.setattr(module_params, "PARAM_DIR", str(tmp_path))
    (tmp_path / "zfs_txg_timeout").write_text("5\n")
    with ModuleParams(LocalHost(), {"zfs_txg_timeout": 12}) as mp:
        assert (tmp_path / "zfs_txg_timeout").read_text() == "12\n"
    assert mp.record["zfs_txg_timeout"] == {"before": "5", "set": "12", "readback": "12", "restored": "5"}
    assert (tmp_path / "zfs_txg_timeout").read_text() == "5\n"


def test_analysis_groups_by_every_module_parameter_a_sweep_can_vary():
    from zbench_lib.analysis.data.columns import CONFIG_COLUMNS, MODULE_PARAM_COLUMNS
    assert MODULE_PARAM_COLUMNS == tuple(PARAMS) and set(PARAMS) <= set(CONFIG_COLUMNS)
