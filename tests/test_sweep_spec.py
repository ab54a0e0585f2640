"""Sweep specs: the shipped specs load; malformed specs are refused by key path."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from zbench_lib.core.errors import ConfigError
from zbench_lib.sweeps.spec.sweep_spec import load_spec, parse_spec

SWEEPS = Path(__file__).resolve().parent.parent / "templates" / "sweeps"
K = 1024
DELETE = object()

BASE = {
    "question": "Which volblocksize suits VM disks on raidz?",
    "surface": "zvol",
    "host": "lab",
    "lab": {"disks": 4, "disk_size": "1G", "model": "hdd-slow", "extra_disks": 1},
    "factors": {"layout": ["stripe", "mirror", "raidz1"], "disks": [4], "volblocksize": ["8k", "64k"]},
    "target": {"volsize": "256M", "compression": "off"},
    "workloads": ["randread", {"name": "rw", "template": "randwrite", "overrides": {"runtime_s": 8, "ramp_time_s": 2}}],
    "repetitions": {"min": 2, "max": 3, "target_rel_ci": 0.05, "metric": "iops"},
    "prefill": {"fill": "whole", "policy": "once-per-target"},
    "order": "randomised",
    "seed": 7,
}


def variant(changes: dict) -> str:
    """BASE with dotted-path changes applied (DELETE removes a key), as YAML text."""
    d = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = d
        for p in parents:
            node = node[p]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return yaml.safe_dump(d)


def test_base_spec_is_valid():
    s = parse_spec(variant({}), name="base")
    assert s.name == "base" and s.surface == "zvol" and s.seed == 7
    assert s.factors["volblocksize"] == [8 * K, 64 * K]
    assert s.factors["layout"] == [{"family": "stripe"}, {"family": "mirror"}, {"family": "raidz1"}]
    assert s.target == {"kind": "zvol", "size_bytes": 256 * K * K, "compression": "off"}
    assert [(w.name, w.template, w.reads_only) for w in s.workloads] == [
        ("randread", "randread", True), ("rw", "randwrite", False)]
    assert s.lab["disk_bytes"] == 1024 ** 3 and s.available_disks == (4, 1)
    assert s.repetitions == {"design": "stein", "pilot": 2, "max": 3, "target_rel_ci": 0.05, "metric": "iops",
                             "max_attempts": 5, "pool_replicates": 1}
    assert s.reads_first is True and s.order == "randomised"


def test_defaults_and_yaml_booleans():
    s = parse_spec(variant({"repetitions": {"target_rel_ci": "3%"}, "prefill": DELETE, "order": DELETE,
                            "seed": DELETE, "target.compression": False, "factors.sync": ["always", "disabled"]}))
    assert s.repetitions == {"design": "stein", "pilot": 3, "max": 10, "target_rel_ci": 0.03, "metric": "iops",
                             "max_attempts": 13, "pool_replicates": 1}
    assert s.prefill == {"fill": "whole", "policy": "once-per-target"}
    assert s.order == "randomised" and s.seed == 0
    assert s.target["compression"] == "off"       # YAML `off` unquoted is False


def test_non_lab_host_and_dataset_surface():
    text = variant({"host": "ssh://root@bench1", "lab": DELETE, "surface": "dataset",
                    "devices": ["/dev/sdb", "/dev/sdc"], "extra_devices": ["/dev/nvme0n1"],
                    "allow_signatures": ["/dev/sdc"], "factors.volblocksize": DELETE,
                    "factors.recordsize": ["16k", "1M"], "factors.atime": [True, False],
                    "target": {"size": "1G"}})
    s = parse_spec(text)
    assert s.available_disks == (2, 1) and s.disk_bytes is None
    assert s.factors["recordsize"] == [16 * K, 1024 * K] and s.factors["atime"] == ["on", "off"]
    assert s.target == {"kind": "dataset", "size_bytes": 1024 ** 3}


@pytest.mark.parametrize("changes, message", [
    ({"question": DELETE}, "spec: missing required key 'question'"),
    ({"question": "why"}, "question: state the question in words"),
    ({"questions": "x"}, r"spec: unknown key\(s\) 'questions' \(allowed: name, question, surface"),
    ({"surface": "file"}, "surface: expected 'zvol', 'dataset', 'fs-on-zvol' or 'raw', got 'file'"),
    ({"host": "bench1"}, "host: expected 'lab', 'local' or 'ssh://user@host', got 'bench1'"),
    ({"host": "local", "lab": DELETE}, "devices: required for host 'local'"),
    ({"host": "local"}, "lab: applies only when host is 'lab', not 'local'"),
    ({"devices": ["/dev/sdb"]}, "devices: applies only to local or ssh:// hosts"),
    ({"host": "ssh://root@b", "lab": DELETE, "devices": ["sdb"]}, r"devices\[0\]: expected a /dev/ path"),
    ({"host": "ssh://root@b", "lab": DELETE, "devices": ["/dev/sdb", "/dev/sdb"]},
     "devices: a device is listed more than once"),
    ({"lab.disk": 4}, r"lab: unknown key\(s\) 'disk' \(allowed: disks, disk_size, model, extra_disks, zfs\)"),
    ({"lab.disks": 0}, "lab.disks: must be at least 1, got 0"),
    ({"lab.model": "floppy"}, "lab.model: unknown disk model 'floppy'"),
    ({"lab.disk_size": "lots"}, "lab.disk_size: cannot parse 'lots' as a size"),
    ({"factors.layout": DELETE}, "factors: missing required key 'layout'"),
    ({"factors.layout": ["raidz5"]}, r"factors.layout\[0\]: unknown layout family 'raidz5'"),
    ({"factors.layout": [{"family": "mirror", "width": 2, "disks": 4}]},
     r"factors.layout\[0\]: unknown key\(s\) 'disks' \(allowed: family, width, vdevs, data, spares\)"),
    ({"factors.layout": [{"family": "mirror", "width": 2}]},
     r"factors.layout\[0\]: a layout with its own width cannot be combined with factors.disks"),
    ({"factors.volblocksize": ["8k", "16k", "12k"]}, r"factors.volblocksize\[2\]: '12k' is not a power of two"),
    ({"factors.volblocksize": ["8k", "1M"]}, r"factors.volblocksize\[1\]: '1M' is outside 512..128K"),
    ({"factors.volblocksize": ["8k", "8K"]}, r"factors.volblocksize\[1\]: duplicate value '8K'"),
    ({"factors.recordsize": ["128k"]}, "factors.recordsize: recordsize does not apply to a zvol sweep"),
    ({"factors.atime": ["on"]}, "factors.atime: atime applies only to datasets"),
    ({"factors.ashift": [12, 20]}, r"factors.ashift\[1\]: must be at most 16, got 20"),
    ({"factors.ashift": 12}, "factors.ashift: expected a non-empty list of values, got 12"),
    ({"factors.disks": [4, "four"]}, r"factors.disks\[1\]: expected an integer, got 'four'"),
    ({"factors.width": [4]}, "factors.disks: give either disks .* or explicit width/vdevs, not both"),
    ({"factors.sync": ["sometimes"]}, r"factors.sync\[0\]: 'sometimes' is not a valid sync"),
    ({"factors.copies": [1, 4]}, r"factors.copies\[1\]: must be at most 3, got 4"),
    ({"factors.dedup": ["on"]}, r"factors: unknown key\(s\) 'dedup' \(allowed: layout, disks"),
    ({"factors.mirror_width": [1]}, r"factors.mirror_width\[0\]: must be at least 2, got 1"),
    ({"factors.bs": ["3k"]}, r"factors.bs\[0\]: '3k' is not a power of two"),
    ({"target.volsize": DELETE}, "target: missing required key 'volsize'"),
    ({"target.size": "1G"}, r"target: unknown key\(s\) 'size' \(allowed: volsize, volblocksize"),
    ({"target.volblocksize": "16k"}, "target.volblocksize: is also a factor"),
    ({"target.logbias": "fast"}, "target.logbias: 'fast' is not a valid logbias"),
    ({"workloads": []}, "workloads: expected a non-empty list of workloads"),
    ({"workloads": ["randomread"]}, r"workloads\[0\].name: unknown workload template 'randomread'"),
    ({"workloads": ["randread", "randread"]}, r"workloads\[1\].name: duplicate workload name 'randread'"),
    ({"workloads": [{"name": "r", "template": "randread", "overides": {}}]},
     r"workloads\[0\]: unknown key\(s\) 'overides' \(allowed: name, template, overrides, until_steady\)"),
    ({"workloads": [{"name": "r", "template": "randread", "overrides": {"depth": 4}}]},
     r"workloads\[0\].overrides: unknown key\(s\) 'depth'"),
    ({"workloads": [{"name": "r", "template": "randread", "overrides": {"runtime_s": 5, "ramp_time_s": 10}}]},
     r"workloads\[0\].overrides: ramp_time_s \(10\) must be shorter than runtime_s \(5\)"),
    ({"workloads": [{"name": "r", "template": "randread", "overrides": {"filename": "/dev/sda"}}]},
     r"workloads\[0\].overrides.filename: is set by the sweep"),
    ({"factors.iodepth": [1, 32], "workloads": [{"name": "r", "template": "randread",
                                                 "overrides": {"iodepth": 4}}]},
     r"workloads\[0\].overrides.iodepth: iodepth is also a factor"),
    ({"repetitions.min": 0}, "repetitions.min: must be at least 1, got 0"),
    ({"repetitions.max": 1}, "repetitions.max: 1 is smaller than min 2"),
    ({"repetitions": {"pilot": 4, "max": 3}}, "repetitions.max: 3 is smaller than pilot 4"),
    ({"repetitions.pilot": 3}, "repetitions.min: is the old name of pilot; give one of them"),
    ({"repetitions": {"pilot": 1, "max": 5}}, "repetitions.pilot: Stein's two-stage rule needs a pilot of at least 2"),
    ({"repetitions.min": 1}, "repetitions.min: Stein's two-stage rule needs a pilot of at least 2"),
    ({"repetitions": {"pilot": "3"}}, "repetitions.pilot: expected an integer, got '3'"),
    ({"repetitions.fixed": 5}, "repetitions.fixed: a fixed design takes no min, max, target_rel_ci"),
    ({"repetitions": {"fixed": 0}}, "repetitions.fixed: must be at least 1, got 0"),
    ({"repetitions": {"fixed": True}}, "repetitions.fixed: expected an integer, got True"),
    ({"repetitions": {"pilot": 3, "max": 10, "max_attempts": 8}},
     "repetitions.max_attempts: must be at least 10, got 8"),
    ({"repetitions.pool_replicates": 0}, "repetitions.pool_replicates: must be at least 1, got 0"),
    ({"repetitions.pool_replicates": 11}, "repetitions.pool_replicates: must be at most 10, got 11"),
    ({"repetitions.pool_replicates": 1.5}, "repetitions.pool_replicates: expected an integer, got 1.5"),
    ({"repetitions": [3, 10]}, "repetitions: expected a mapping, got list"),
    ({"repetitions.target_rel_ci": 5}, "repetitions.target_rel_ci: expected a fraction in \\(0, 1\\)"),
    ({"repetitions.metric": "speed"}, "repetitions.metric: 'speed' is not a result column"),
    ({"repetitions.reps": 5}, r"repetitions: unknown key\(s\) 'reps' \(allowed: pilot, min, max, fixed"),
    ({"prefill.fill": "120%"}, "prefill.fill: expected 'whole' or a percentage"),
    ({"prefill.policy": "always"}, "prefill.policy: expected 'once-per-target' or 'none'"),
    ({"order": "random"}, "order: expected 'randomised' or 'as-written', got 'random'"),
    ({"reads_first": "yes please"}, "reads_first: expected true or false"),
    ({"seed": "abc"}, "seed: expected an integer, got 'abc'"),
    ({"name": "my sweep"}, "name: must be a plain name"),
])
def test_malformed_specs_are_refused_by_path(changes, message):
    with pytest.raises(ConfigError, match=message):
        parse_spec(variant(changes))


@pytest.mark.parametrize("text, message", [
    ("question: [unclosed", "spec is not valid YAML"),
    ("- just\n- a list\n", "spec: expected a mapping, got list"),
])
def test_not_a_mapping(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_spec(text)


def test_dataset_refuses_volblocksize():
    text = variant({"surface": "dataset", "target": {"size": "1G"}})
    with pytest.raises(ConfigError, match="factors.volblocksize: volblocksize does not apply to a dataset "
                                          r"sweep \(use recordsize\)"):
        parse_spec(text)


def test_load_spec_names_by_file_stem(tmp_path):
    p = tmp_path / "my-study.yaml"
    p.write_text(variant({}))
    assert load_spec(p).name == "my-study"
    with pytest.raises(ConfigError, match="cannot read sweep spec"):
        load_spec(tmp_path / "missing.yaml")


@pytest.mark.parametrize("path", sorted(SWEEPS.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_specs_load(path):
    s = load_spec(path)
    assert s.name == path.stem and s.text == path.read_text()


def test_all_four_shipped_specs_exist():
    assert {p.stem for p in SWEEPS.glob("*.yaml")} >= {"demo", "scaling", "volblocksize", "sync-slog"}


@pytest.mark.parametrize("block, expected", [
    ({"pilot": 3, "max": 10, "target_rel_ci": "5%", "metric": "lat_p99_ns"},
     {"design": "stein", "pilot": 3, "max": 10, "target_rel_ci": 0.05, "metric": "lat_p99_ns",
      "max_attempts": 13, "pool_replicates": 1}),
    # a fixed design re-creates each pool three times unless told (issue 45): pools are the units
    ({"fixed": 5}, {"design": "fixed", "pilot": 5, "max": 5, "target_rel_ci": None, "metric": "iops",
                    "max_attempts": 10, "pool_replicates": 3}),
    (None, {"design": "fixed", "pilot": 2, "max": 2, "target_rel_ci": None, "metric": "iops",
            "max_attempts": 4, "pool_replicates": 3}),
    ({"min": 2, "max": 2, "target_rel_ci": 0.05}, {"design": "fixed", "pilot": 2, "max": 2, "target_rel_ci": None,
                                                   "metric": "iops", "max_attempts": 4, "pool_replicates": 1}),
    ({"fixed": 1, "max_attempts": 3, "pool_replicates": 2},
     {"design": "fixed", "pilot": 1, "max": 1, "target_rel_ci": None, "metric": "iops", "max_attempts": 3,
      "pool_replicates": 2}),
])
def test_repetition_designs(block, expected):
    assert parse_spec(variant({"repetitions": block})).repetitions == expected


@pytest.mark.parametrize("path", sorted(SWEEPS.glob("*.yaml")) + sorted(
    (Path(__file__).resolve().parent.parent / "data" / "examples").glob("*/spec.yaml")),
    ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_old_min_max_blocks_still_load(path):
    """Example datasets keep their spec.yaml as run (``min``); the shipped templates say ``pilot``.
    Every spec gives a cell at least two units: runs, or pools re-created (one run per pool)."""
    r = parse_spec(path.read_text()).repetitions
    assert r["pilot"] * r["pool_replicates"] >= 2 and r["design"] in ("stein", "fixed")


# -- every spec in the repository loads and plans as it did before load-time checking ------------
ROOT = SWEEPS.parent.parent
ALL_SPECS = sorted(SWEEPS.glob("*.yaml")) + sorted((ROOT / "tests" / "specs").glob("*.yaml")) + sorted(
    (ROOT / "data" / "examples").glob("*/spec.yaml"))
# (cells, skipped, pools, targets, runs, sha256 of the run ids in order) as planned at 5dc9837,
# before the load-time checks: update a row only when that spec is changed on purpose.
# Issue 45 changed 17 template rows on purpose (they state three pool replicates; cells, pools and targets
# x3, runs by their new fixed n) and data/examples/iodepth-curve's (its spec states no pool_replicates:
# the new default of three); those rows are pinned from that change's planner, their factor grids and
# skips as before (test_plan_golden checks the plans against c138938's with the replicates stated).
PLANNED = {
    "tests/specs/dataset.yaml": (2, 0, 1, 2, 4, "562c51cf5e7899c4"),
    "tests/specs/fill.yaml": (3, 0, 3, 3, 3, "8173b9714ebebcd8"),
    "tests/specs/kill.yaml": (2, 0, 2, 2, 4, "89d3306219b19bd0"),
    "tests/specs/load.yaml": (2, 0, 1, 1, 4, "9d6838dfcd1bbd33"),
    # a mech: level as a model factor (issue 33 item 2), pinned from the planner at 8196f23, before the
    # lab could serve it (the plan is the same: what changed is how a pool's disks get the level)
    "tests/specs/mech-factor.yaml": (2, 0, 2, 2, 2, "c789ad6a51219cac"),
    # issue 44: libaio and psync as an ioengine factor, on a dataset and a zvol (pinned from the planner of
    # the change that added the factor: no earlier code plans it)
    "tests/specs/io-path-dataset.yaml": (2, 0, 1, 1, 6, "1043292f007facec"),
    "tests/specs/io-path-zvol.yaml": (2, 0, 1, 1, 6, "87e82075085bddb7"),
    # two pools (make test budget): the mirror(2) and raidz1(3) cells of before (ids unchanged), raidz1(2) and
    # the skipped mirror(3) gone; the hash of the old run ids less raidz1(2)'s
    "tests/specs/fault.yaml": (2, 0, 2, 2, 4, "920cb4e0fa5da918"),
    # zfs_dirty_data_max 4M (the faulted run's drain through the crawl, bounded; 32M outran fio's
    # timeout once): the old cell's factors and that parameter, new ids
    "tests/specs/fault-slow.yaml": (1, 0, 1, 1, 2, "c4342d39065ea552"),
    "templates/sweeps/demo.yaml": (36, 0, 9, 18, 36, "d6487b80c679fe5b"),
    # compression off, lz4, zstd on 50% compressible data: a target each, prefilled with that data
    "templates/sweeps/compression.yaml": (18, 0, 3, 9, 18, "2fdf92a2457bc80e"),
    "templates/sweeps/disk-models.yaml": (24, 0, 12, 12, 24, "046fbdc74711db1b"),
    "templates/sweeps/draid.yaml": (12, 0, 6, 6, 36, "b8dcf702ceb2ae8f"),
    # the bare disks beside the zvol and the ext4 file (raw cells at fs none only), 40 s windows
    "templates/sweeps/baselines.yaml": (18, 3, 4, 6, 54, "a9d4c1dfe232c4f8"),
    "tests/specs/fs-on-zvol.yaml": (2, 0, 1, 2, 2, "eda76ed93d410257"),
    "tests/specs/raw.yaml": (2, 0, 2, 2, 2, "7f596a6009105513"),
    # draid.yaml x fs-on-zvol.yaml (make test budget): each layout with fs none and ext4, 64M zvols; the
    # ids are sha1s of those cells' factors as before, with fs, the ext4 file and the volsize added
    "tests/specs/pool-factors-zvol.yaml": (4, 0, 2, 4, 4, "667f20ccfe90ebc2"),
    # pool-settings.yaml x nfs.yaml: each pool (special 0, 1) with access local and nfs, sync standard
    "tests/specs/pool-factors-dataset.yaml": (4, 0, 2, 4, 4, "feb8804853474070"),
    "templates/sweeps/nfs-datastore.yaml": (18, 0, 6, 18, 18, "83fe34f49a579e64"),
    # issue 30: 1, 2 and 4 client VMs x sync standard and always; a target per sync level, mounted by all four
    # iSCSI clients (issue 30): pinned from the planner of the change that added it (no earlier code plans it)
    "templates/sweeps/iscsi-clients.yaml": (18, 0, 3, 6, 18, "325c1746514f842c"),
    "templates/sweeps/nfs-clients.yaml": (18, 0, 3, 6, 18, "8d618419af56ec84"),
    "tests/specs/nfs.yaml": (2, 0, 1, 2, 2, "7f084f50ba4345e2"),
    "templates/sweeps/fill.yaml": (12, 0, 6, 6, 36, "8cb3565fdd1c8ed1"),
    # randread at iodepth 1 (buffered reads, for the declared L2ARC warm-up): new cell ids for it
    "templates/sweeps/slog-l2arc-special.yaml": (48, 0, 24, 24, 48, "d1dcd1f71a8e0886"),
    "templates/sweeps/tunables.yaml": (18, 0, 18, 18, 18, "45a54324c82f1d15"),
    "tests/specs/l2arc-warmup.yaml": (2, 0, 2, 2, 2, "24641ca8e144f42e"),
    "templates/sweeps/iodepth-curve.yaml": (21, 0, 3, 3, 42, "9d1158c8479f6cd6"),
    # issue 46: five pools, not three (the knee rule's power; the first three pools' cells as before)
    "templates/sweeps/latency-vs-load.yaml": (100, 0, 5, 10, 100, "b25c5654091642e1"),
    # issue 33 item 5, added at 8196f23 (pinned from that planner): the volblocksize and iodepth examples'
    # latency questions on the 7200 rpm mechanism model
    "templates/sweeps/volblocksize-hdd.yaml": (18, 0, 3, 9, 18, "92bbead2783ee0c4"),
    "templates/sweeps/iodepth-hdd.yaml": (12, 0, 3, 3, 12, "34f48a9082666a65"),
    "templates/sweeps/recordsize.yaml": (72, 0, 6, 18, 72, "7c530ca2180a68fd"),
    "templates/sweeps/resilver.yaml": (18, 0, 18, 18, 36, "ce3d9ec8cc1b53de"),
    "templates/sweeps/scaling-example.yaml": (300, 44, 75, 75, 300, "e7d25a7b4c01a88e"),
    "templates/sweeps/scaling.yaml": (144, 8, 72, 72, 144, "1a6ab916c5f0c09b"),
    "templates/sweeps/sync-slog.yaml": (72, 0, 6, 36, 72, "d3667c4afdb9e667"),
    "templates/sweeps/volblocksize-example.yaml": (54, 0, 9, 27, 54, "2ff439e77cf8f0be"),
    "templates/sweeps/volblocksize.yaml": (162, 0, 9, 54, 162, "10c814d6fcb576db"),
    "tests/specs/replicates.yaml": (4, 0, 4, 4, 8, "d0d1a850e9720b9a"),
    "tests/specs/resume.yaml": (2, 0, 1, 1, 4, "7f5934bac2ed493b"),
    "tests/specs/tiny.yaml": (2, 0, 2, 2, 4, "bde0b59468b13503"),
    # a write workload extended until steady (methods §12.1): not a factor, its runs planned as any
    "tests/specs/until-steady.yaml": (1, 0, 1, 1, 1, "d9fafe8a08c6e30f"),
    "tests/specs/zfs-versions.yaml": (4, 0, 2, 2, 8, "b98272f06783dede"),
    "data/examples/scaling/spec.yaml": (300, 44, 75, 75, 300, "e7d25a7b4c01a88e"),
    "data/examples/iodepth-curve/spec.yaml": (21, 0, 3, 3, 105, "0fc66d1971c2cc0b"),
    "data/examples/volblocksize/spec.yaml": (54, 0, 9, 27, 54, "2ff439e77cf8f0be"),
}
# Shipped specs whose targets cannot all exist in their pool on the lab disks they ask for
# (six 1G zvols side by side in a 2x mirror(2) of 2G disks; six 1G zvols, 4k and 8k ones
# reserving 2G each, in a raidz2(6) of 2G disks): the plan refuses them, as `zfs create`
# would after hours of earlier pools. With lab.disk_size 4G they plan exactly as before.
OVERFULL: dict = {}    # specs whose targets did not fit their pools (fixed: none left)


def _planned(plan) -> tuple:
    import hashlib
    import json
    ids = hashlib.sha256(json.dumps([r.run_id for r in plan.runs]).encode()).hexdigest()[:16]
    return (len(plan.cells), len(plan.skipped), len(plan.pools), len(plan.targets), len(plan.runs), ids)


@pytest.mark.parametrize("path", ALL_SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_spec_in_the_repository_loads_and_plans_as_before(path):
    from zbench_lib.sweeps.planning.plan import expand
    key = str(path.relative_to(ROOT))
    spec = load_spec(path)
    assert spec.text == path.read_text()
    if key in OVERFULL:
        with pytest.raises(ConfigError, match=r"^target\.volsize: the 6 target\(s\) of pool p0\d need .* GiB"):
            expand(spec)
        old, new = OVERFULL[key]
        text = spec.text.replace(f"disk_size: {old}", f"disk_size: {new}")
        assert text != spec.text
        spec = parse_spec(text, name=path.stem)
    assert _planned(expand(spec)) == PLANNED[key]


def test_every_spec_in_the_repository_is_pinned():
    assert {str(p.relative_to(ROOT)) for p in ALL_SPECS} == set(PLANNED)


@pytest.mark.parametrize("host", ["local", "ssh://bench1", "ssh://root@bench1", "ssh://root@bench1:2222",
                                  "ssh://zb_user@10.0.0.7:22", "ssh://bench-1.lab.example.org"])
def test_good_hosts_pass(host):
    text = variant({"host": host, "lab": DELETE, "devices": ["/dev/disk/by-id/ata-X_1", "/dev/sdc"],
                    "extra_devices": ["/dev/nvme0n1"], "allow_signatures": ["/dev/sdc"]})
    assert parse_spec(text).host == host


def test_capacity_model_matches_what_openzfs_reserved():
    """The volblocksize example's read-back `used` of its prefilled 512M zvols on raidz2(6)."""
    from zbench_lib.sweeps.planning.capacity import target_need, usable_bytes
    from zbench_lib.sweeps.planning.records import Target
    from zbench_lib.zfs.layouts import Layout
    M = 1024 ** 2
    raidz2 = Layout("raidz2", 6)
    assert target_need(Target("t", "p", "zvol", 512 * M, volblocksize_bytes=4096), raidz2) == 1109393408
    assert target_need(Target("t", "p", "zvol", 512 * M, volblocksize_bytes=16384), raidz2) == 547356672
    # mirrors and stripes reserve volsize plus metadata; copies multiply the data
    two = target_need(Target("t", "p", "zvol", 64 * M, volblocksize_bytes=16384, copies=2),
                      Layout("mirror", 2))
    assert two == 2 * 64 * M + 12 * 3 * 128 * 1024      # 4096 blocks: 4 + 1 indirects + 7, three copies
    # usable: whole metaslabs, raidz deflation, 128 MiB minimum slop on a small pool
    assert 0.78 < usable_bytes(Layout("raidz1", 3), 512 * M) / 1024 ** 3 < 0.80
    assert usable_bytes(Layout("stripe", 1), 1024 * M) < 1024 * M - 128 * M


# -- compressible data declared (issue 27, item 6) -------------------------------------------------

@pytest.mark.parametrize("values, message", [
    ([0, 150], r"^factors.compressible_percent\[1\]: must be at most 100, got 150$"),
    ([-5], r"^factors.compressible_percent\[0\]: must be at least 0, got -5$"),
    (["50%"], r"^factors.compressible_percent\[0\]: expected an integer, got '50%'$"),
    ([50, 50], r"^factors.compressible_percent\[1\]: duplicate value 50$"),
])
def test_compressible_percent_as_a_factor_is_checked_at_load(values, message):
    with pytest.raises(ConfigError, match=message):
        parse_spec(variant({"factors.compressible_percent": values}))
    assert parse_spec(variant({"factors.compressible_percent": [0, 50, 100]})).factors["compressible_percent"] \
        == [0, 50, 100]


def test_compressible_percent_in_overrides_is_checked_at_load():
    bad = {"workloads": [{"name": "w", "template": "seqwrite", "overrides": {"compressible_percent": 101}}]}
    with pytest.raises(ConfigError, match=r"^workloads\[0\].overrides.compressible_percent: must be between 0 and 100"):
        parse_spec(variant(bad))
    both = {"factors.compressible_percent": [50],
            "workloads": [{"name": "w", "template": "seqwrite", "overrides": {"compressible_percent": 50}}]}
    with pytest.raises(ConfigError, match="compressible_percent is also a factor; give it in one place"):
        parse_spec(variant(both))


def test_a_raw_sweep_refuses_compressible_data():
    raw = {"surface": "raw", "factors": {"disks": [2], "compressible_percent": [50]}, "target": {"size": "64M"}}
    with pytest.raises(ConfigError, match=r"^factors.compressible_percent: does not apply to a raw sweep: "
                                          r"nothing compresses what fio writes to bare disks"):
        parse_spec(variant(raw))


def test_declared_data_is_a_target_setting_so_each_target_is_prefilled_with_it():
    """A target holds data of one declared compressibility: reads read what its prefill wrote,
    so 0 and 50 never share a target; the jobs get the percentage; a spec declaring none plans
    as before (no column, no key: the pinned plans above)."""
    from zbench_lib.sweeps.planning.plan import expand
    text = variant({"factors": {"layout": ["mirror"], "disks": [2], "compression": ["off", "lz4"],
                                "compressible_percent": [0, 50]}, "target": {"volsize": "128M"},
                    "workloads": [{"name": "seqread", "overrides": {"runtime_s": 8, "ramp_time_s": 2}}]})
    plan = expand(parse_spec(text))
    assert sorted((t.compression, t.compressible_percent) for t in plan.targets) == [
        ("lz4", 0), ("lz4", 50), ("off", 0), ("off", 50)]
    for c in plan.cells:
        target = next(t for t in plan.targets if t.target_id == c.target_id)
        pct = c.factors["compressible_percent"]
        assert pct == target.compressible_percent == c.fio["compressible_percent"]
    over = variant({"workloads": [{"name": "w", "template": "seqwrite", "overrides": {"compressible_percent": 30}},
                                  "randread"]})
    plan = expand(parse_spec(over))
    assert {(c.workload, c.factors["compressible_percent"]) for c in plan.cells} == {("w", 30), ("randread", 0)}
    assert len(plan.targets) == 2 * 6          # two data declarations on each of the six targets of before
    assert all("compressible_percent" not in t.to_dict() for t in expand(parse_spec(variant({}))).targets)


def test_a_model_factor_takes_the_mech_model_its_lab_boots_with():
    # zb.Config's one-cell spec: lab.model and factors.model the same mech: model (nbdkit from the boot)
    s = parse_spec(variant({"lab.model": "mech:hdd-7200", "factors.model": ["mech:hdd-7200"]}))
    assert s.factors["model"] == ["mech:hdd-7200"] and s.lab["model"] == "mech:hdd-7200"
