"""A `host: ssh://` sweep end to end, against the lab treated purely as a remote box.

Nothing of the lab is used but what a user's ssh configuration would give: the spec names
`ssh://root@bench-box` and lists its disks by id; a project ssh config (ZBENCH_SSH_CONFIG)
resolves the alias. The CLI checks the host before anything is created (doctor's checks),
the sweep creates, measures and destroys its pools over SSH, and a listed disk that carries
a filesystem is refused before anything is written, the disk left as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from zbench_lib.zfs.pools import find_leftovers

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parent.parent

SPEC = """name: remote-box
question: >
  Test fixture: does a sweep on a plain SSH host create, measure and destroy its pool on the
  devices it lists, and nothing else?
surface: zvol
host: ssh://{user}@bench-box
devices: [{devices}]
factors:
  layout: [mirror]
  disks: [2]
  volblocksize: [16k]
target: {{volsize: 64M, compression: "off", primarycache: metadata}}
workloads:
  - {{name: randread, overrides: {{runtime_s: 3, ramp_time_s: 1, bs: 16k, numjobs: 1, iodepth: 4}}}}
repetitions: {{fixed: 2, pool_replicates: 1, max_attempts: 2, metric: iops}}
prefill: {{fill: whole, policy: once-per-target}}
order: randomised
seed: 11
"""


@pytest.fixture
def bench_box(lab, tmp_path):
    """A project ssh config naming the lab `bench-box`, as a user would write for a real box."""
    c = lab.connection()
    config = tmp_path / "ssh_config"
    config.write_text(f"Host bench-box\n  HostName 127.0.0.1\n  Port {c['port']}\n  User root\n"
                      f"  IdentityFile {c['identity']}\n  IdentitiesOnly yes\n"
                      f"  UserKnownHostsFile {c['known_hosts']}\n  HostKeyAlias {c['host_key_alias']}\n"
                      "  StrictHostKeyChecking yes\n")
    return dict(os.environ, ZBENCH_SSH_CONFIG=str(config), ZBENCH_LAB="")


def _zbench(*args, env, timeout=900):
    return subprocess.run([sys.executable, "-m", "zbench_lib.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)


def _spec(tmp_path, devices, user="root") -> Path:
    path = tmp_path / "remote-box.yaml"
    path.write_text(SPEC.format(devices=", ".join(devices), user=user))
    return path


@pytest.mark.parametrize("user", ["root", "bench"])
def test_a_sweep_on_a_remote_box_runs_end_to_end_over_ssh(lab, lab_host, bench_box, tmp_path, user):
    """As root (the pre-flight), and as `bench`, a user with passwordless sudo: the whole sweep, every
    command through sudo -n."""
    devices = lab.data_disks[-2:]
    for d in devices:
        lab_host.run(["wipefs", "-a", "-q", d])
    spec = _spec(tmp_path, devices, user)
    dry = _zbench("sweep", str(spec), "--dry-run", env=bench_box, timeout=120)
    assert dry.returncode == 0, dry.stderr
    print("\n" + dry.stdout)
    assert f"host ssh://{user}@bench-box:" in dry.stdout
    for d in devices:
        assert f"ok   device     {d}: free" in dry.stdout
    assert ("ok   privilege  root" if user == "root" else "passwordless sudo (commands run through sudo -n)") \
        in dry.stdout
    assert "ok   openzfs" in dry.stdout
    if user == "root":
        # Every other lab sweep already runs as root over ssh (the lab is reached as a box is):
        # root's own part here is the pre-flight above; the sweep itself runs through sudo.
        return

    out = tmp_path / "out"
    res = _zbench("sweep", str(spec), "--out", str(out), "--no-progress", env=bench_box)
    assert res.returncode == 0, res.stderr[-3000:]
    (sweep_dir,) = [p for p in out.iterdir() if p.is_dir()]
    df = pd.read_parquet(sweep_dir / "results.parquet")
    assert df["run_id"].nunique() == 2 and (df["iops"] > 0).all()
    assert set(df["layout"]) == {"mirror"} and set(df["total_disks"]) == {2}
    prov = json.loads(next(sweep_dir.glob("host-provenance-*.json")).read_text())
    assert f"{user}@bench-box" in json.dumps(prov)
    events = [json.loads(line) for line in (sweep_dir / "events.jsonl").read_text().splitlines()]
    names = [e["event"] for e in events]
    assert names.count("pool created") == 1 and names.count("pool teardown") == 1
    # The pool was made of exactly the listed disks, and is gone.
    run_meta = json.loads(next((sweep_dir / "raw").glob("*/attempt-*/run.json")).read_text())
    assert sorted(run_meta["devices"]) == sorted(devices)
    assert find_leftovers(lab_host) == []


def test_a_listed_disk_with_a_filesystem_is_refused_before_anything_is_written(lab, lab_host, bench_box,
                                                                             ext4_disk, tmp_path):
    free = lab.data_disks[-1]
    lab_host.run(["wipefs", "-a", "-q", free])
    spec = _spec(tmp_path, [free, ext4_disk])
    out = tmp_path / "out"
    for args in (["--dry-run"], ["--out", str(out), "--no-progress"]):
        res = _zbench("sweep", str(spec), *args, env=bench_box, timeout=120)
        assert res.returncode != 0
        last = res.stderr.strip().splitlines()[-1]
        assert last.startswith("zbench: ssh://root@bench-box cannot run this sweep: device ") and "ext4" in last, \
            res.stderr[-2000:]
        assert free not in last                        # the free disk is not among the refusals
    assert not out.exists() or not any(out.iterdir())  # no sweep directory, no notebook
    assert lab_host.run(["blkid", "-o", "value", "-s", "TYPE", ext4_disk]).stdout.strip() == "ext4"
    assert find_leftovers(lab_host) == []


def test_zbench_doctor_reports_on_the_remote_box(lab, lab_host, bench_box, ext4_disk):
    free = lab.data_disks[-1]
    lab_host.run(["wipefs", "-a", "-q", free])
    res = _zbench("doctor", "ssh://root@bench-box", "--device", free, "--device", ext4_disk, env=bench_box,
                  timeout=120)
    print("\n" + res.stdout)
    lines = res.stdout.splitlines()
    assert any(line.startswith("ok   connect") and "bench-box" in line for line in lines)
    assert any(line.startswith(f"ok   device     {free}: free") for line in lines)
    assert any(line.startswith(f"FAIL device     {ext4_disk}:") and "ext4" in line for line in lines)
    assert res.returncode != 0                          # a refused device is a failed check


def test_a_user_whose_sudo_would_prompt_is_refused_in_one_line(lab, lab_host, bench_box, tmp_path):
    free = lab.data_disks[-2:]
    res = _zbench("sweep", str(_spec(tmp_path, free, "guest")), "--out", str(tmp_path / "out"), "--no-progress",
                  env=bench_box, timeout=120)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("zbench: ssh://guest@bench-box cannot run this sweep: privilege ") and \
        "sudo would prompt" in last, res.stderr[-2000:]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
