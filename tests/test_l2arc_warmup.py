"""The L2ARC warm-up's logic: arcstats readings, what "warm" is, the stop rule, the record, the columns.

A unit test of the logic only: the host is a fake that answers arcstats from a scripted sequence
of l2_size values (one per fio chunk), the cache devices' sizes and l2arc_write_max, and keeps a
clock that fio advances. Nothing here stands in for a result: the lab test reads real OpenZFS.
"""

from __future__ import annotations

import json

import pytest

from zbench_lib.core.errors import CommandError, ZbenchError
from zbench_lib.hosts.base import Host, Result
from zbench_lib.zfs.l2arc_warmup import (ARCSTATS, LABEL_BYTES, WRITE_MAX, WarmupRule, cache_capacity, l2_reading,
                                         result_columns, stop_reason, warm_bytes, warm_l2arc, warmup_argv)

MiB, GiB = 1024 ** 2, 1024 ** 3


def arcstats(l2_size, l2_asize=None, hits=0, misses=0, drop=()):
    values = {"hits": 5, "l2_hits": hits, "l2_misses": misses, "l2_size": l2_size,
              "l2_asize": l2_size if l2_asize is None else l2_asize, "size": 200 * MiB}
    rows = "".join(f"{k} 4 {v}\n" for k, v in values.items() if k not in drop)
    return "13 1 0x01 123 33456 8106259547 1391248426567\nname type data\n" + rows


class FakeArcHost(Host):
    """arcstats from `sizes` (the n-th reading after n fio chunks); fio advances `now` by its runtime."""

    name = "fake"

    def __init__(self, sizes, device_bytes=GiB, write_max=64 * MiB, read_per_chunk=100 * MiB):
        self.sizes, self.device_bytes, self.write_max = list(sizes), device_bytes, write_max
        self.read_per_chunk, self.chunks, self.now, self.calls = read_per_chunk, 0, 1000.0, []

    def clock(self):
        return self.now

    def run(self, argv, *, timeout=600, check=True, input=None, stop_with=None):
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), argv   # never a shell string
        self.calls.append(argv)
        if argv[0] == "cat":
            return Result(tuple(argv), 0, self._cat(argv[1]), "", 0.0)
        if argv[:2] == ["blockdev", "--getsize64"] or argv[:2] == ["stat", "-L"]:
            return Result(tuple(argv), 0, f"{self.device_bytes}\n", "", 0.0)
        if argv[:4] == ["env", "-C", "/var/tmp/zbench/zb", "fio"]:
            runtime = int(next(a for a in argv if a.startswith("--runtime=")).split("=")[1])
            assert timeout > runtime
            self.now += runtime + 0.3           # fio's start and stop
            self.chunks += 1
            out = {"jobs": [{"jobname": "l2arc-warmup", "read": {"io_bytes": self.read_per_chunk}}]}
            return Result(tuple(argv), 0, "note: a line fio printed first\n" + json.dumps(out), "", runtime)
        raise CommandError(self.name, argv, 127, "not faked")

    def _cat(self, path):
        if path == ARCSTATS:
            i = min(self.chunks, len(self.sizes) - 1)
            return arcstats(self.sizes[i], hits=10 * i, misses=100 * i)
        assert path == WRITE_MAX, path
        return f"{self.write_max}\n"

    def fio_runtimes(self):
        return [int(next(a for a in c if a.startswith("--runtime=")).split("=")[1]) for c in self.calls
                if "fio" in c]


def warm(host, rule, size=512 * MiB, direct=False, compressratio=1.0):
    return warm_l2arc(host, "/zb/t/fio.data", size_bytes=size, cache_devices=["/dev/vdf"], rule=rule,
                      direct=direct, work_dir="/var/tmp/zbench/zb", compressratio=compressratio, clock=host.clock)


# --- readings and what "warm" is ---------------------------------------------------------------

def test_a_reading_takes_the_l2_fields_and_refuses_arcstats_without_them():
    assert l2_reading(arcstats(7 * MiB, 3 * MiB, 4, 9)) == {"l2_size": 7 * MiB, "l2_asize": 3 * MiB,
                                                            "l2_hits": 4, "l2_misses": 9}
    with pytest.raises(ZbenchError, match=r"arcstats has no l2_asize: cannot follow an L2ARC warm-up"):
        l2_reading(arcstats(1, drop=("l2_asize",)))


def test_warm_bytes_is_the_smaller_of_target_and_cache_in_logical_bytes():
    assert warm_bytes(1 * GiB, 900 * MiB) == 900 * MiB                  # the cache binds
    assert warm_bytes(256 * MiB, 900 * MiB) == 256 * MiB                # the target binds
    # compressed data: the physical cache holds compressratio logical bytes per byte
    assert warm_bytes(1 * GiB, 400 * MiB, compressratio=2.0) == 800 * MiB
    for ratio in (None, 0.9, "1.00x"):                                  # never fewer than one
        assert warm_bytes(1 * GiB, 400 * MiB, compressratio=ratio) == 400 * MiB


def test_cache_capacity_leaves_out_labels_and_the_feeds_eviction_room():
    host = FakeArcHost([0], device_bytes=GiB, write_max=64 * MiB)
    assert cache_capacity(host, ["/dev/vdf"]) == GiB - LABEL_BYTES - 64 * MiB
    small = FakeArcHost([0], device_bytes=128 * MiB, write_max=64 * MiB)     # at most a quarter of the device
    usable = 128 * MiB - LABEL_BYTES
    assert cache_capacity(small, ["/dev/vdf", "/var/tmp/cache.img"]) == 2 * (usable - usable // 4)
    assert ["stat", "-L", "-c", "%s", "/var/tmp/cache.img"] in small.calls      # a file vdev: its size


# --- the stop rule -----------------------------------------------------------------------------

@pytest.mark.parametrize("sizes, elapsed, expected", [
    ([0], 0, None),                                 # nothing read yet, not warm
    ([100], 0, "reached"),                          # the prefill already fed it
    ([0, 40], 10, None),
    ([0, 40, 90], 20, None),
    ([0, 40, 90, 100], 30, "reached"),
    ([0, 40, 90, 99], 30, None),                    # 59 over the last two chunks: growing
    ([0, 40, 80, 80.5], 30, None),                  # flat for one chunk only: 40.5 over two
    ([0, 40, 80, 80.5, 80.9], 40, "plateau"),       # 0.9 over two chunks < 1% of 100
    ([0, 40, 80, 79, 78], 40, "plateau"),           # shrinking counts as flat
    ([0, 0, 0], 20, "plateau"),                     # nothing feeds it at all
    ([0, 10, 20], 300, "time limit"),
    ([0, 50, 100], 300, "reached"),                 # reached wins over the clock
    ([0, 95, 95.2, 95.5], 300, "plateau"),          # ... and a plateau over it too
    ([0, 10, 20], 299.5, "time limit"),             # less than fio's whole second left
])
def test_stop_rule(sizes, elapsed, expected):
    assert stop_reason(sizes, 100, elapsed, 300) == expected


# --- the warm-up against a scripted arcstats ---------------------------------------------------

def test_warms_chunk_by_chunk_until_reached_and_records_what_happened():
    host = FakeArcHost([10 * MiB, 150 * MiB, 330 * MiB, 470 * MiB])
    rec = warm(host, WarmupRule(until=0.9, max_s=300, chunk_s=10))
    assert rec["stopped"] == "reached" and rec["reached"] is True and rec["chunks"] == 3
    assert host.fio_runtimes() == [10, 10, 10]
    assert rec["target_bytes"] == 512 * MiB and rec["warm_bytes"] == 512 * MiB      # cache: 1G less 68.5M
    assert rec["goal_bytes"] == int(0.9 * 512 * MiB)
    assert (rec["l2_size_before"], rec["l2_size_after"]) == (10 * MiB, 470 * MiB)
    assert rec["l2_sizes"] == [10 * MiB, 150 * MiB, 330 * MiB, 470 * MiB]
    assert (rec["l2_hits"], rec["l2_misses"]) == (30, 300)                          # during the warm-up
    assert rec["warm_fraction"] == round(470 / 512, 4) and rec["read_bytes"] == 300 * MiB
    assert rec["seconds"] == pytest.approx(30.9) and rec["direct"] is False
    assert result_columns(rec) == {"l2arc_warmup_s": rec["seconds"], "l2arc_warm_fraction": round(470 / 512, 4),
                                   "l2arc_warm_until": 0.9, "l2arc_warm_reached": True,
                                   "l2arc_warmup_stop": "reached"}


def test_fio_reads_randomly_through_the_arc_in_argument_lists():
    argv = warmup_argv("/dev/zvol/zb/t", 512 * MiB, True, 10, "/var/tmp/zbench/zb")
    assert argv[:4] == ["env", "-C", "/var/tmp/zbench/zb", "fio"]        # in the pool's work dir: teardown stops it
    assert "--rw=randread" in argv and "--direct=1" in argv and "--bs=1048576" in argv
    assert "--time_based" in argv and "--runtime=10" in argv and f"--size={512 * MiB}" in argv
    assert "--bs=65536" in warmup_argv("/zb/t/fio.data", 64 * 1024, False, 5, "/w")      # a target under 1 MiB
    host = FakeArcHost([0, 10 * MiB, 600 * MiB])
    warm(host, WarmupRule(until=0.5, max_s=60, chunk_s=5), direct=True)
    fio = [c for c in host.calls if "fio" in c]
    assert len(fio) == 2 and all("--direct=1" in c and "--filename=/zb/t/fio.data" in c for c in fio)


def test_an_l2arc_already_warm_is_not_read_at_all():
    host = FakeArcHost([500 * MiB])
    rec = warm(host, WarmupRule(until=0.9, max_s=300))
    assert rec["stopped"] == "reached" and rec["chunks"] == 0 and host.fio_runtimes() == []
    assert rec["seconds"] == 0 and rec["read_bytes"] == 0


def test_a_cache_that_stops_growing_is_a_plateau_not_reached():
    host = FakeArcHost([0, 100 * MiB, 200 * MiB, 201 * MiB, 202 * MiB, 203 * MiB])
    rec = warm(host, WarmupRule(until=0.9, max_s=300, chunk_s=10))
    assert rec["stopped"] == "plateau" and rec["reached"] is False and rec["chunks"] == 4
    assert rec["warm_fraction"] == round(202 / 512, 4)
    cols = result_columns(rec)
    assert cols["l2arc_warm_reached"] is False and cols["l2arc_warmup_stop"] == "plateau"


def test_the_time_limit_cuts_the_last_chunk_to_fit():
    host = FakeArcHost([i * 30 * MiB for i in range(20)])     # steady growth, never 90%
    rec = warm(host, WarmupRule(until=0.9, max_s=25, chunk_s=10))
    assert rec["stopped"] == "time limit" and rec["reached"] is False
    assert host.fio_runtimes() == [10, 10, 4]                 # then 0.1 s left: less than fio's whole second
    assert 24 < rec["seconds"] <= 25


def test_nothing_to_warm_is_an_error_not_reached():
    host = FakeArcHost([0], device_bytes=LABEL_BYTES)
    with pytest.raises(ZbenchError, match=r"nothing can be warm"):
        warm(host, WarmupRule(until=0.9, max_s=30))


def test_no_warm_up_no_columns():
    assert result_columns(None) == {} and result_columns({}) == {}
