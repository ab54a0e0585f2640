"""faults: in a spec, and the device_lost / slow_device checks, without a lab."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.core.errors import ConfigError
from zbench_lib.measure.device_health import device_lost, per_device_service, slow_device
from zbench_lib.sweeps.plan import expand
from zbench_lib.sweeps.spec import parse_spec
from zbench_lib.zfs.zfs_text import parse_pool_health_text

SPECS = Path(__file__).parent / "specs"
FAULT = (SPECS / "fault.yaml").read_text()
LOAD = "resilver_load: {name: randread, overrides: {bs: 16k, iodepth: 4, numjobs: 1}}"
assert LOAD in FAULT


@pytest.mark.parametrize("old,new,message", [
    ("kind: remove", "kind: melt", "faults.kind: expected one of remove, slow"),
    ("disk: 2,", "disk: 0,", "faults.disk: must be at least 1"),
    ("after_s: 3", "after_s: .inf", "faults.after_s: must be a finite number"),
    ("after_s: 3", "after_s: -1", "faults.after_s: expected seconds"),
    ("resilver: true", "resilver: yes please", "faults.resilver"),
    ("resilver: true", "when: now", "faults: unknown key(s) 'when'"),
    ("host: lab", "host: ssh://root@bench1", "faults: faults are injected only in the lab"),
    (LOAD, "resilver_load: melt", "faults.resilver_load.name: unknown workload 'melt'"),
    ("resilver: true,", "resilver: false,", "faults.resilver_load: a load during the resilver needs resilver: true"),
    (LOAD, "resilver_load: {name: randread, overrides: {runtime_s: 5}}",
     "faults.resilver_load.overrides.runtime_s: is set by the resilver"),
    (LOAD, "resilver_load: {name: randread, overrides: {bs: 3k}}",
     "faults.resilver_load.overrides"),
    (LOAD, "resilver_load: {name: randread, overrides: {iodepth: .nan}}",
     "faults.resilver_load.overrides.iodepth: must be a finite number"),
    (LOAD, "resilver_load: {name: randread, when: later}",
     "faults.resilver_load: unknown key(s) 'when'"),
])
def test_malformed_faults_are_refused_at_load(old, new, message):
    text = FAULT.replace(old, new)
    if "ssh://" in new:
        text = text.replace("lab: {disks: 4, disk_size: 1G, model: \"custom:iops=400,bw=100M\", extra_disks: 0}",
                            "devices: [/dev/disk/by-id/a, /dev/disk/by-id/b, /dev/disk/by-id/c]")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_spec(text)


def test_a_layout_that_cannot_lose_a_disk_is_refused_at_plan_time():
    with pytest.raises(ConfigError, match=r"faults.kind: pool 2-disk stripe.*cannot lose a disk|"
                                          r"faults.kind: pool .*stripe.* cannot lose a disk"):
        expand(parse_spec(FAULT.replace("layout: [mirror, raidz1]", "layout: [stripe, mirror]")))
    with pytest.raises(ConfigError, match="faults.disk: pool .* has 2 data disks, not 3"):
        expand(parse_spec(FAULT.replace("disk: 2,", "disk: 3,")))
    with pytest.raises(ConfigError, match=r"faults.resilver: pool 1x raidz1\(3\) leaves no lab data disk .*disks: 4"):
        expand(parse_spec(FAULT.replace("disks: 4,", "disks: 3,")))
    with pytest.raises(ConfigError, match="faults.after_s: 9 s is not inside the shortest run"):
        expand(parse_spec(FAULT.replace("after_s: 3", "after_s: 9")))
    # slow works on any layout, a stripe included
    plan = expand(parse_spec(FAULT.replace("layout: [mirror, raidz1]", "layout: [stripe, mirror]")
                             .replace("kind: remove, disk: 2, after_s: 3, resilver: true,",
                                      "kind: slow, disk: 2, after_s: 3,").replace(LOAD, "")))
    assert plan.spec.faults == {"kind": "slow", "disk": 2, "after_s": 3.0, "resilver": False,
                                "resilver_load": None}


DEGRADED = """  pool: zbench-p01-abc123
 state: DEGRADED
status: One or more devices has been removed by the administrator.
config:

\tNAME                               STATE     READ WRITE CKSUM
\tzbench-p01-abc123                  DEGRADED     0     0     0
\t  mirror-0                         DEGRADED     0     0     0
\t    /dev/disk/by-id/virtio-zbd00-part1  ONLINE       0     0     0
\t    /dev/disk/by-id/virtio-zbd01-part1  REMOVED      0     0     0

errors: No known data errors
"""


def test_pool_health_from_status_text():
    assert parse_pool_health_text(DEGRADED) == {
        "state": "DEGRADED", "not_online": [("/dev/disk/by-id/virtio-zbd01-part1", "REMOVED")]}
    online = DEGRADED.replace("DEGRADED", "ONLINE").replace("REMOVED", "ONLINE ")
    assert parse_pool_health_text(online) == {"state": "ONLINE", "not_online": []}
    with pytest.raises(Exception, match="no state line"):
        parse_pool_health_text("no pools available\n")


def test_device_lost_is_three_valued():
    assert device_lost([], {}, {})["flag"] is None                                  # not recorded
    ok = device_lost([], {}, {"pool_health_after": {"state": "ONLINE", "not_online": []}})
    assert ok["flag"] is False
    lost = device_lost([], {}, {"pool_health_after": parse_pool_health_text(DEGRADED)})
    assert lost["flag"] is True and "virtio-zbd01-part1 REMOVED" in lost["reason"]


def _disk_samples(service_ms: dict, ios_per_s: float = 20.0) -> pd.DataFrame:
    """Three 1-s diskstats samples per device: each request keeps the disk busy `ms`, and
    queueing (await) is made the opposite, to show it is not what is compared."""
    rows = []
    for t in (101.0, 102.0, 103.0):
        for dev, ms in service_ms.items():
            rows += [(t, "disk", dev, "util_pct", ms * ios_per_s / 10.0), (t, "disk", dev, "w_s", ios_per_s),
                     (t, "disk", dev, "r_s", 0.0), (t, "disk", dev, "await_ms", 1000.0 / ms)]
    return pd.DataFrame(rows, columns=["t_s", "layer", "device", "metric", "value"])


def test_slow_device_compares_a_disk_with_its_peers():
    each = per_device_service(_disk_samples({"vdb": 8.0, "vdc": 160.0, "vdd": 10.0}, ios_per_s=6.0),
                              ["vdb", "vdc", "vdd"], 100, 103)
    assert each["vdc"] == (pytest.approx(160.0), 18.0)
    assert slow_device([], {}, {"dev_service_each": each})["flag"] is None          # < 20 requests each
    each = {d: (ms, 60.0) for d, (ms, _) in each.items()}
    slow = slow_device([], {}, {"dev_service_each": each})
    assert slow["flag"] is True and slow["slowest_device"] == "vdc" and slow["ratio"] == pytest.approx(16.0)
    # in the lab the floor follows the model: at 20 IOPS a request may take 50 ms, 4x is 200 ms
    assert slow_device([], {}, {"dev_service_each": each, "disk_model_iops": 20})["flag"] is False
    # a healthy raidz member at its throttle beside bursty peers (the example sweeps): not slow
    seen = {"vdb": (9.2, 900.0), "vdc": (1.2, 700.0), "vdd": (1.1, 650.0)}
    assert slow_device([], {}, {"dev_service_each": seen, "disk_model_iops": 100})["flag"] is False
    even = per_device_service(_disk_samples({"vdb": 2.0, "vdc": 2.4, "vdd": 2.5}), ["vdb", "vdc", "vdd"], 100, 103)
    assert slow_device([], {}, {"dev_service_each": even})["flag"] is False
    # one data disk, or disks that did almost nothing: no peer to compare, not judged
    assert slow_device([], {}, {"dev_service_each": {"vdb": (50.0, 300.0)}})["flag"] is None
    idle = per_device_service(_disk_samples({"vdb": 2.0, "vdc": 40.0}, ios_per_s=1.0), ["vdb", "vdc"], 100, 103)
    assert slow_device([], {}, {"dev_service_each": idle})["flag"] is None
    assert slow_device([], {}, {})["flag"] is None
    # high ratio but a tiny absolute service time: not a failing disk
    tiny = {"vdb": (0.2, 300.0), "vdc": (1.5, 300.0)}
    assert slow_device([], {}, {"dev_service_each": tiny})["flag"] is False
    assert math.isfinite(slow_device([], {}, {"dev_service_each": tiny})["ratio"])


def test_a_resilver_load_is_parsed_into_a_job_that_runs_until_stopped():
    from zbench_lib.sweeps.spec_faults import load_job, load_label
    spec = parse_spec(FAULT)
    load = spec.faults["resilver_load"]
    assert load == {"name": "randread", "overrides": {"bs": "16k", "iodepth": 4, "numjobs": 1}}
    assert load_label(load) == "randread 16k qd4x1"
    job = load_job(load, "/dev/zvol/zbench-p01/t1")
    for line in ("runtime=3600", "time_based=1", "ramp_time=0", "bs=16384", "iodepth=4", "numjobs=1",
                 "filename=/dev/zvol/zbench-p01/t1", "rw=randread"):
        assert line in job.splitlines(), line
    assert parse_spec(FAULT.replace(LOAD, "resilver_load: none")).faults["resilver_load"] is None
    assert load_label(None) is None


def test_each_pool_draws_its_own_resilver_order_and_keeps_it():
    from zbench_lib.sweeps.resilver_timing import resilver_order
    assert resilver_order(5, "p01", with_load=False) == [False]
    orders = [tuple(resilver_order(5, f"p{i:02d}", with_load=True)) for i in range(1, 21)]
    assert set(orders) == {(False, True), (True, False)}           # both orders occur over 20 pools
    assert orders == [tuple(resilver_order(5, f"p{i:02d}", with_load=True)) for i in range(1, 21)]  # stable


@pytest.mark.parametrize("status,text,nbytes", [
    ("  scan: resilvered 98.9M in 00:00:06 with 0 errors on Sun Nov 22 06:10:01 2026", "98.9M", 103704166),
    ("  scan: resilvered 1.50G in 00:01:02 with 0 errors", "1.50G", 1610612736),
    ("  scan: resilvered 512K in 00:00:01 with 0 errors", "512K", 524288),
    ("  scan: resilvered 4096 in 00:00:01 with 0 errors", "4096", 4096),
    ("  scan: resilvered 9,1M in 00:00:01 with 0 errors", "9,1M", None),
    ("  scan: none requested", None, None),
])
def test_resilvered_bytes_are_read_from_zpool_status(status, text, nbytes):
    from zbench_lib.sweeps.resilver_timing import resilvered_bytes
    assert resilvered_bytes(status) == (text, nbytes)


def test_a_stopped_load_reports_iops_summed_over_its_jobs():
    from zbench_lib.measure.fio_background import load_figures
    data = {"jobs": [{"read": {"iops": 100.5, "io_bytes": 4096 * 1000}, "write": {"iops": 0, "io_bytes": 0},
                      "job_runtime": 9950},
                     {"read": {"iops": 99.5, "io_bytes": 4096 * 990}, "write": {"iops": 2.0, "io_bytes": 8192},
                      "job_runtime": 10010}]}
    assert load_figures(data) == {"read_iops": 200.0, "read_bytes": 4096 * 1990, "write_iops": 2.0,
                                  "write_bytes": 8192, "runtime_s": 10.01}
