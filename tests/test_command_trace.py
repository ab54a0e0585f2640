"""The command trace (ZBENCH_TRACE_COMMANDS) and the profile benchmarks/command_profile.py reads from it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from zbench_lib.hosts.base import TRACE_ENV, LocalHost

_SPEC = importlib.util.spec_from_file_location(
    "command_profile", Path(__file__).parent.parent / "benchmarks" / "command_profile.py")
command_profile = importlib.util.module_from_spec(_SPEC)
sys.modules["command_profile"] = command_profile       # its dataclass looks its module up
_SPEC.loader.exec_module(command_profile)


def test_every_command_a_host_runs_is_one_line_of_the_trace(tmp_path, monkeypatch):
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    host = LocalHost()
    host.run(["true"])
    host.run(["sh", "-c", "exit 3"], check=False)
    lines = [json.loads(s) for s in trace.read_text().splitlines()]
    assert [ln["argv"] for ln in lines] == [["true"], ["sh", "-c", "exit 3"]]
    assert [ln["rc"] for ln in lines] == [0, 3]
    assert all(ln["host"] == "local" and ln["s"] >= 0 for ln in lines)


def test_no_trace_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(TRACE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    LocalHost().run(["true"])
    assert list(tmp_path.iterdir()) == []


def test_commands_are_grouped_by_program_and_subcommand():
    kind = command_profile.kind_of
    assert kind(["sudo", "-n", "--", "env", "ZB_TOKEN=ab", "zpool", "create", "-f", "p"]) == "zpool create"
    assert kind(["/usr/bin/fio", "--output-format=json", "job.fio"]) == "fio"
    assert kind(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"]) == "sh -c echo"
    assert kind(["cat", "/proc/loadavg"]) == "cat"


def test_the_profile_sums_each_kind_over_the_span_of_the_trace():
    lines = [{"argv": ["zpool", "create", "a"], "s": 2.0, "end": 102.0},
             {"argv": ["zpool", "create", "b"], "s": 1.0, "end": 110.0},
             {"argv": ["cat", "x"], "s": 0.5, "end": 111.0}]
    kinds, span = command_profile.profile(lines)
    assert (kinds["zpool create"].count, kinds["zpool create"].seconds, kinds["zpool create"].longest) == (2, 3.0, 2.0)
    assert kinds["cat"].count == 1
    assert span == 111.0 - 100.0          # the first started at 102 - 2
