"""Round trips of one measured run: each command on a lab host costs 0.3-0.6 s (a process started
in an emulated guest), so `runner.measure` sends as few as it can without changing what it records.

The run itself is real (fio on a file of this machine through LocalHost, no pool); a LocalHost
that counts its commands says how many went to the host and which.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess

import pytest

from zbench_lib.core.errors import CommandError, ConfigError
from zbench_lib.hosts.base import LocalHost, Result
from zbench_lib.measure import runner
from zbench_lib.measure.fio import fetch_tree
from zbench_lib.measure.run_context import RunContext
from zbench_lib.measure.runner import measure

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
MiB = 1024 ** 2


class CountingHost(LocalHost):
    """This machine, every command it is given kept (argv) in order; puts and popens too."""

    def __init__(self):
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv, **kwargs):
        self.calls.append(tuple(str(a) for a in argv))
        return super().run(argv, **kwargs)

    def popen(self, argv, **kwargs):
        self.calls.append(("popen", *map(str, argv)))
        return super().popen(argv, **kwargs)

    def put(self, local, remote):
        self.calls.append(("put", str(remote)))
        return super().put(local, remote)

    def get(self, remote, local):
        self.calls.append(("get", str(remote)))
        return super().get(remote, local)

    def programs(self) -> list[str]:
        return [c[0] for c in self.calls]


def _measure(tmp_path, host, devices=(), target_name=None):
    target = tmp_path / "target"
    with open(target, "wb") as fh:
        fh.truncate(8 * MiB)
    raw = tmp_path / "raw"
    res = measure(host, pool=None, target_path=str(target), devices=list(devices), workload="randread",
                  overrides={"runtime_s": 1, "ramp_time_s": 0, "size": 8 * MiB, "bs": "4k", "iodepth": 1,
                             "ioengine": "psync", "direct": 0},
                  remote_dir=str(tmp_path / "work"), raw_dir=raw,
                  context=RunContext.from_record({"surface": "raw"}), target_name=target_name)
    return res, json.loads((raw / "run.json").read_text())


@needs_fio
def test_the_run_ships_its_directories_scripts_and_job_in_one_command(tmp_path):
    host = CountingHost()
    _measure(tmp_path, host)
    progs = host.programs()
    assert "mkdir" not in progs and "put" not in progs
    assert [c for c in host.calls if c[0] == "tar" and "-x" in c] == [("tar", "-x", "--no-same-owner", "-C", "/",
                                                                        "-f", "-")]
    work = tmp_path / "work"
    assert sorted(p.name for p in work.iterdir()) >= ["counters", "fio", "sampler.sh", "snap_after.sh"]
    assert (work / "fio" / "job.fio").read_text() == (tmp_path / "raw" / "fio" / "job.fio").read_text()
    # fetched as before: fio's files and the counters, never the job file from the host
    assert (tmp_path / "raw" / "fio" / "fio.json").exists() and (tmp_path / "raw" / "counters" / "stat.txt").exists()


def test_write_files_makes_the_directory_and_its_files(tmp_path):
    dest = tmp_path / "a" / "b"
    LocalHost().write_files(str(dest), {"x.sh": "one\n", "sub/y.txt": "two\n"}, dirs=("empty",))
    assert (dest / "x.sh").read_text() == "one\n" and (dest / "sub" / "y.txt").read_text() == "two\n"
    assert (dest / "empty").is_dir() and oct((dest / "x.sh").stat().st_mode & 0o777) == "0o644"
    LocalHost().write_files(str(dest), {"x.sh": "again\n"})        # an existing file is replaced
    assert (dest / "x.sh").read_text() == "again\n"


@pytest.mark.parametrize("remote, files", [
    ("relative/dir", {"x": ""}),
    ("/", {"x": ""}),
    ("/tmp/../etc", {"x": ""}),
    ("/tmp//x", {"x": ""}),
    ("/tmp/ok", {"../x": ""}),
    ("/tmp/ok", {"/etc/x": ""}),
    ("/tmp/ok", {"a/./b": ""}),
])
def test_write_files_refuses_paths_outside_its_directory(remote, files):
    with pytest.raises(ConfigError):
        LocalHost().write_files(remote, files)


@needs_fio
def test_t1_is_the_hosts_clock_after_fio_exited_read_by_its_wrapper(tmp_path):
    """One `date` per run (t0, before fio): t1 comes from the wrapper fio runs in, read after fio
    exited, so it is past fio's own exit stamp, as a separate `date` after the command was."""
    host = CountingHost()
    _measure(tmp_path, host)
    assert host.programs().count("date") == 1
    rec = json.loads((tmp_path / "raw" / "run.json").read_text())
    fio_exit = json.loads((tmp_path / "raw" / "fio" / "fio.json").read_text())["timestamp_ms"] / 1000
    assert rec["t0"] < fio_exit <= rec["t1"] and rec["t_end"] <= rec["t1"]


@needs_fio
def test_the_sampler_stops_at_the_end_of_its_input_without_a_pkill(tmp_path):
    host = CountingHost()
    _measure(tmp_path, host)
    assert "pkill" not in host.programs()
    sampler = tmp_path / "work" / "sampler.sh"
    # stopped as on TERM (its cleanup ran: no fifo left) and no process of it is left
    assert not (tmp_path / "work" / "counters" / ".zpool.fifo").exists()
    assert subprocess.run(["pgrep", "-f", str(sampler)], capture_output=True).returncode == 1


class _Sampler:
    """A started sampler as measure holds it: its input, and whether it has ended (a test double of
    subprocess.Popen: only the calls are counted)."""

    def __init__(self, ends_on_input: bool, ended: bool = False):
        self.stdin = io.StringIO()
        self.ends_on_input, self.ended, self.waits = ends_on_input, ended, []

    def poll(self):
        return 0 if self.ended else None

    def wait(self, timeout):
        self.waits.append(timeout)
        if self.stdin.closed and self.ends_on_input or self.ended:
            self.ended = True
            return 0
        raise subprocess.TimeoutExpired("sampler", timeout)

    def kill(self):
        self.ended = True


class _PkillHost(CountingHost):
    name = "pkill-test"

    def run(self, argv, **kwargs):
        self.calls.append(tuple(argv))
        if argv[0] == "pkill":
            self.pkilled.ended = True
        return Result(tuple(argv), 0, "", "", 0.0)


def test_a_sampler_that_outlives_its_input_is_pkilled_and_then_pkilled_first(monkeypatch):
    monkeypatch.setattr(runner, "_PKILL_FIRST", set())
    monkeypatch.setattr(runner, "INPUT_STOP_S", 0.01)
    host = _PkillHost()
    host.pkilled = stuck = _Sampler(ends_on_input=False)
    runner._stop_sampler(host, "/w/run", stuck)
    assert host.calls == [("pkill", "-TERM", "-f", "/w/run/sampler.sh")] and stuck.stdin.closed and stuck.ended
    # on that host from then on the pkill goes first, as before, and no time is spent on the input alone
    host.calls.clear()
    host.pkilled = later = _Sampler(ends_on_input=False)
    runner._stop_sampler(host, "/w/run2", later)
    assert host.calls == [("pkill", "-TERM", "-f", "/w/run2/sampler.sh")] and later.waits == [30]


def test_a_sampler_whose_local_end_is_gone_is_pkilled(monkeypatch):
    """Its ssh client ended early (a dropped connection): the host may still run it."""
    monkeypatch.setattr(runner, "_PKILL_FIRST", set())
    host = _PkillHost()
    host.pkilled = gone = _Sampler(ends_on_input=True, ended=True)
    runner._stop_sampler(host, "/w/run", gone)
    assert host.calls == [("pkill", "-TERM", "-f", "/w/run/sampler.sh")]
    host.calls.clear()
    host.pkilled = fine = _Sampler(ends_on_input=True)
    runner._stop_sampler(host, "/w/run", fine)                # ends on its input: no pkill
    assert host.calls == [] and fine.ended and runner._PKILL_FIRST == set()


@needs_fio
def test_the_raw_record_comes_back_in_one_command(tmp_path):
    """fio's files and the counters stream back as one archive on tar's output: no archive written
    on the host and copied after it."""
    host = CountingHost()
    _measure(tmp_path, host)
    assert "get" not in host.programs()
    assert [c[:5] for c in host.calls if c[0] == "tar" and "-x" not in c] == [
        ("tar", "-C", str(tmp_path / "work"), "-cf", "-")]
    assert not list(tmp_path.glob("*.fetch.tar")) and not list((tmp_path / "raw").rglob("*.tar"))


def test_fetch_tree_brings_back_every_byte_and_leaves_out_the_excluded(tmp_path):
    remote = tmp_path / "remote"
    (remote / "fio").mkdir(parents=True)
    (remote / "counters").mkdir()
    blob = bytes(range(256)) * 4099
    (remote / "fio" / "fio.json").write_bytes(blob)
    (remote / "fio" / "job.fio").write_text("[x]\n")
    (remote / "counters" / "stat.txt").write_text("@@ 1 2\ncpu 1\n")
    (remote / "other").write_text("not asked for\n")
    fetch_tree(LocalHost(), str(remote), ["fio", "counters"], tmp_path / "local", exclude=("fio/job.fio",))
    local = tmp_path / "local"
    assert (local / "fio" / "fio.json").read_bytes() == blob
    assert sorted(str(p.relative_to(local)) for p in local.rglob("*")) == [
        "counters", "counters/stat.txt", "fio", "fio/fio.json"]
    with pytest.raises(CommandError):
        fetch_tree(LocalHost(), str(remote), ["missing"], tmp_path / "local2")


def _fake_zfs(tmp_path, monkeypatch, body: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "zfs").write_text("#!/bin/sh\n" + body)
    (bin_dir / "zfs").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def test_the_targets_ratio_and_the_kernel_names_are_read_in_one_command(tmp_path, monkeypatch):
    """compressratio/block and readlink of the devices, at the end of a run: one command, the same
    answers as each read alone."""
    _fake_zfs(tmp_path, monkeypatch, 'echo "$@" > "$0.args"; printf "compressratio\\t1.52x\\n'
                                     'volblocksize\\t16384\\nrecordsize\\t-\\n"\n')
    (tmp_path / "by-id").mkdir()
    devices = []
    for name, real in (("disk-a", "/dev/null"), ("disk-b", "/dev/zero")):
        (tmp_path / "by-id" / name).symlink_to(real)
        devices.append(str(tmp_path / "by-id" / name))
    host = CountingHost()
    fused = runner._readback_after(host, "tank/v", devices)
    assert fused == (1.52, 16384, ["null", "zero"]) and len(host.calls) == 1
    assert (tmp_path / "bin" / "zfs.args").read_text().split() == [
        "get", "-Hp", "-o", "property,value", "compressratio,volblocksize,recordsize", "tank/v"]
    assert fused == (*runner._ratio_and_block(host, "tank/v"), runner.kernel_names(host, devices))
    # no devices: the zfs get alone, and no kernel names read
    host.calls.clear()
    assert runner._readback_after(host, "tank/v", []) == (1.52, 16384, None) and len(host.calls) == 1


def test_a_failing_readback_fails_as_each_read_alone_did(tmp_path, monkeypatch):
    _fake_zfs(tmp_path, monkeypatch, 'echo "cannot open \'$6\': dataset does not exist" >&2; exit 1\n')
    host = CountingHost()
    with pytest.raises(CommandError) as exc:
        runner._readback_after(host, "tank/gone", ["/dev/null"])
    assert exc.value.argv[:2] == ["zfs", "get"] and "does not exist" in str(exc.value)
    assert [c[0] for c in host.calls] == ["sh", "zfs"]


@needs_fio
def test_a_runs_commands_on_its_host(tmp_path, monkeypatch):
    """Every command one measured run sends its host, the sampler's polls aside (they wait on it):
    its files out, the sampler started, t0, fio, the devices' health, the raw record back, and the
    target's read-back with the devices' kernel names: 6 besides the sampler's start. It was 14:
    two mkdirs and three copies, a second date, a pkill, an archive's copy and a readlink apart."""
    _fake_zfs(tmp_path, monkeypatch, 'printf "compressratio\\t1.00x\\nvolblocksize\\t-\\nrecordsize\\t131072\\n"\n')
    (tmp_path / "disk-a").symlink_to("/dev/null")
    host = CountingHost()
    _measure(tmp_path, host, devices=[str(tmp_path / "disk-a")], target_name="tank/ds")
    assert [p for p in host.programs() if p != "tail"] == ["tar", "popen", "date", "env", "stat", "tar", "sh"]
    rec = json.loads((tmp_path / "raw" / "run.json").read_text())
    assert rec["kernel_devices"] == ["null"] and rec["context"]["compressratio"] == 1.0
