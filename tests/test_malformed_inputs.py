"""Malformed sweep specs: each is refused at load or plan time with one ConfigError line that
names its key path, quickly, with nothing created (issue 15, "every input checked at load").

The cases are specs as text (parse_spec + expand, in process) and a handful of
``zbench sweep SPEC --dry-run`` invocations in a subprocess (exit 2, one ``zbench:`` line,
no traceback, no sweep directory, bounded time and memory).
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from zbench_lib.core.errors import ConfigError
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import load_spec, parse_spec

ROOT = Path(__file__).resolve().parent.parent
DELETE = object()
BOUND_S = 5.0                   # a bound, not a benchmark: every refusal takes well under this
# Counted in this process's CPU seconds, not wall time: what a pathological input blows up is the
# parser's work, and a busy machine (the busy CI, load 10 on 2 cores) stretches wall time, not work.

BASE = {
    "name": "malformed",
    "question": "Does every bad input get a clean refusal?",
    "surface": "zvol",
    "host": "lab",
    "lab": {"disks": 3, "disk_size": "1G", "model": "hdd", "extra_disks": 0},
    "factors": {"layout": ["stripe", "raidz1"], "disks": [3], "volblocksize": ["16k"]},
    "target": {"volsize": "128M", "compression": "off"},
    "workloads": [{"name": "randread", "overrides": {"runtime_s": 4, "ramp_time_s": 1}}],
    "repetitions": {"fixed": 2, "pool_replicates": 1},
    "prefill": {"fill": "whole", "policy": "once-per-target"},
    "seed": 1,
}
REAL = {"host": "ssh://root@bench1", "lab": DELETE, "devices": ["/dev/sdb", "/dev/sdc", "/dev/sdd"]}


def variant(changes: dict) -> str:
    """BASE with dotted-path changes (DELETE removes a key), as YAML text."""
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
    return yaml.safe_dump(d, sort_keys=False)


def real(**changes) -> str:
    return variant({**REAL, **changes})


BOX = {"host": "ssh://root@bench1", "devices": ["/dev/sdb", "/dev/sdc", "/dev/sdd"]}


def fleet(*boxes) -> str:
    """BASE on a fleet of boxes (a hosts: list instead of host:)."""
    return variant({"host": DELETE, "lab": DELETE, "hosts": [copy.deepcopy(b) for b in boxes]})   # no YAML aliases


def over(key: str, value) -> str:
    """BASE with one workload override."""
    return variant({"workloads": [{"name": "w", "template": "randread",
                                   "overrides": {"runtime_s": 4, "ramp_time_s": 1, key: value}}]})


def warm(changes: dict | None = None, **l2arc) -> str:
    """BASE with a cache factor and a declared L2ARC warm-up (its l2arc keys replaced by `l2arc`)."""
    decl = {"until": "90%", "max_s": 300, **l2arc}
    return variant({"lab.extra_disks": 1, "factors.cache": [0, 1], "warmup": {"l2arc": decl}, **(changes or {})})


DATASET = {"surface": "dataset", "target": {"size": "64M"}, "factors.volblocksize": DELETE}
BOMB = "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']\n" + "".join(
    f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
HUGE_GRID = {"factors": {"layout": ["stripe", "mirror", "raidz1", "raidz2", "raidz3"], "disks": [3],
                         "volblocksize": ["4k", "8k", "16k", "32k", "64k"], "iodepth": list(range(1, 41)),
                         "numjobs": list(range(1, 21))}}
NESTED = "name: x\nquestion: " + "[" * 5000 + "]" * 5000 + "\n"

# (id, spec text, the message's start as a regex)
CASES = [
    # -- the YAML itself ------------------------------------------------------------------------
    ("alias-bomb", BOMB, r"spec: YAML anchors and aliases"),
    ("alias", variant({}) + "extra: &x 1\nmore: *x\n", r"spec: YAML anchors and aliases .*\(at line \d+, column 8\)"),
    ("merge-key", "base: &b {surface: zvol}\nspec:\n  <<: *b\n", r"spec: YAML anchors and aliases"),
    ("anchor-only", variant({}).replace("name: malformed", "name: &n malformed"), r"spec: YAML anchors"),
    ("deep-lists", NESTED, r"spec: nested more than 32 levels"),
    ("deep-maps", "a: " + "{a: " * 100 + "1" + "}" * 100 + "\n", r"spec: nested more than 32 levels"),
    ("over-1MiB", variant({}) + "# " + "x" * (1024 * 1024) + "\n", r"spec: larger than 1024 KiB"),
    ("duplicate-key", variant({}) + "seed: 2\n", r"spec: duplicate key 'seed' \(at line \d+, column 1\)"),
    ("duplicate-nested-key", variant({}).replace("  disks:\n", "  disks: [2]\n  disks:\n"),
     r"spec: duplicate key 'disks'"),
    ("unhashable-key", "? [a, b]\n: 1\n", r"spec: a mapping key must be a plain value"),
    ("unclosed-bracket", "question: [unclosed\n", r"spec is not valid YAML: .* \(at line \d+, column \d+\)$"),
    ("bad-indent", "name: x\n  question: y\n bad: z\n", r"spec is not valid YAML: .*line \d+, column \d+"),
    ("tab-indent", "factors:\n\tlayout: [stripe]\n", r"spec is not valid YAML: .*line 2"),
    ("nul-byte", "name: a\x00b\n", r"spec is not valid YAML: .*unacceptable character #x0000"),
    ("bell-char", "name: a\x07\n", r"spec is not valid YAML: .*unacceptable character #x0007"),
    ("two-documents", "name: a\n---\nname: b\n", r"spec is not valid YAML: .*expected a single document"),
    ("python-tag", "name: !!python/object/apply:os.system ['true']\n", r"spec is not valid YAML: .*constructor"),
    ("empty", "", r"spec: expected a mapping, got NoneType"),
    ("scalar", "just words\n", r"spec: expected a mapping, got str"),
    ("list", "- a\n- b\n", r"spec: expected a mapping, got list"),
    ("binary-name", variant({}).replace("name: malformed", "name: !!binary aGVsbG8="), r"name: must be a plain"),
    ("date-seed", variant({"seed": DELETE}) + "seed: 2024-01-01\n", r"seed: expected an integer"),
    # -- numbers: finite and bounded --------------------------------------------------------------
    ("runtime-inf", over("runtime_s", float("inf")), r"workloads\[0\]\.overrides\.runtime_s: must be a finite"),
    ("runtime-nan", over("runtime_s", float("nan")), r"workloads\[0\]\.overrides\.runtime_s: must be a finite"),
    ("ramp-minus-inf", over("ramp_time_s", float("-inf")), r"workloads\[0\]\.overrides\.ramp_time_s: must be a fin"),
    ("runtime-huge", over("runtime_s", 10 ** 30), r"workloads\[0\]\.overrides\.runtime_s: must be between 0 and"),
    ("runtime-negative", over("runtime_s", -5), r"workloads\[0\]\.overrides\.runtime_s: must be between"),
    ("iodepth-override-huge", over("iodepth", 10 ** 9), r"workloads\[0\]\.overrides\.iodepth: must be between"),
    ("randseed-huge", over("randseed", 2 ** 70), r"workloads\[0\]\.overrides\.randseed: must be between"),
    ("bs-override-400-digits", over("bs", "9" * 400), r"workloads\[0\]\.overrides\.bs: .* is too long for a size"),
    ("bs-override-inf", over("bs", float("inf")), r"workloads\[0\]\.overrides\.bs: must be a finite"),
    ("log-prefix-newline", over("log_prefix", "x\n"), r"workloads\[0\]\.overrides\.log_prefix: must be a short one"),
    ("steadystate-newline", over("steadystate", "iops:10%\n"), r"workloads\[0\]\.overrides\.steadystate: must be"),
    ("ioengine-list", over("ioengine", ["libaio"]), r"workloads\[0\]\.overrides\.ioengine: expected a single value"),
    ("sync-mapping", over("sync", {"a": 1}), r"workloads\[0\]\.overrides\.sync: expected a single value"),
    ("volsize-400-digit-string", variant({"target.volsize": "9" * 400 + "G"}), r"target\.volsize: .* is too long"),
    ("volsize-400-digit-int", variant({"target.volsize": 10 ** 400}),
     r"target\.volsize: must be at most 1024T \(1 PiB\), got 1000.* \(401 characters\)"),
    ("volsize-inf", variant({"target.volsize": float("inf")}), r"target\.volsize: must be a finite number"),
    ("volsize-nan", variant({"target.volsize": float("nan")}), r"target\.volsize: must be a finite number"),
    ("volsize-over-1PiB", variant({"target.volsize": "2048T"}),
     r"target\.volsize: must be at most 1024T \(1 PiB\), got '2048T'"),
    ("volsize-exponent", variant({"target.volsize": "1e400"}), r"target\.volsize: cannot parse '1e400'"),
    ("disk-size-nan", variant({"lab.disk_size": float("nan")}), r"lab\.disk_size: must be a finite number"),
    ("disk-size-400-digits", variant({"lab.disk_size": "9" * 400 + "G"}), r"lab\.disk_size: .* is too long"),
    ("volblocksize-inf", variant({"factors.volblocksize": [float("inf")]}),
     r"factors\.volblocksize\[0\]: must be a fin"),
    ("bs-factor-400-digits", variant({"factors.bs": ["9" * 400]}), r"factors\.bs\[0\]: .* is too long"),
    ("rel-ci-nan", variant({"repetitions": {"pilot": 3, "max": 5, "target_rel_ci": float("nan")}}),
     r"repetitions\.target_rel_ci: expected a fraction"),
    ("rel-ci-inf", variant({"repetitions": {"pilot": 3, "max": 5, "target_rel_ci": float("inf")}}),
     r"repetitions\.target_rel_ci: expected a fraction"),
    ("rel-ci-nan-percent", variant({"repetitions": {"pilot": 3, "max": 5, "target_rel_ci": "nan%"}}),
     r"repetitions\.target_rel_ci: expected a fraction"),
    ("seed-400-digits", variant({"seed": 10 ** 400}), r"seed: must be at most 4294967295, got .*\(401 characters\)"),
    ("seed-negative", variant({"seed": -1}), r"seed: must be at least 0"),
    ("seed-inf", variant({"seed": float("inf")}), r"seed: expected an integer, got inf"),
    ("disks-huge", variant({"factors.disks": [10 ** 20]}), r"factors\.disks\[0\]: must be at most 1024"),
    ("iodepth-factor-inf", variant({"factors.iodepth": [float("inf")]}), r"factors\.iodepth\[0\]: expected an integer"),
    ("ashift-nan", variant({"factors.ashift": [float("nan")]}), r"factors\.ashift\[0\]: expected an integer"),
    ("fixed-huge", variant({"repetitions": {"fixed": 10 ** 30}}), r"repetitions\.fixed: must be at most 100"),
    ("fill-400-digits", variant({"prefill.fill": "9" * 400 + "%"}), r"prefill\.fill: expected 'whole' or a percent"),
    ("fill-factor-over-100", variant({"factors.fill": ["whole", "120%"]}),
     r"factors\.fill\[1\]: expected none, 'whole' or a percent"),
    ("fill-factor-empty-prefill", variant({"factors.fill": ["none", "50%"], "prefill.policy": "none"}),
     r"factors\.fill: a fill factor needs prefill\.policy once-per-target"),
    ("fill-none-not-a-prefill", variant({"prefill.fill": "none"}), r"prefill\.fill: expected 'whole' or a percent"),
    ("copies-inf", variant({"factors.copies": [float("inf")]}), r"factors\.copies\[0\]: expected an integer"),
    ("layout-width-inf", variant({"factors": {"layout": [{"family": "mirror", "width": float("inf")}]}}),
     r"factors\.layout\[0\]\.width: expected an integer"),
    ("lab-model-inf", variant({"lab.model": "custom:iops=1e400"}),
     r"lab\.model: disk model: iops must be positive \(and finite\)"),
    ("lab-model-400-digits", variant({"lab.model": "custom:bw=" + "9" * 400 + "M"}), r"lab\.model: "),
    # -- pool settings: auxiliary vdevs, disk models, module parameters (#14) ---------------------
    ("cache-negative", variant({"factors.cache": [-1]}), r"factors\.cache\[0\]: must be at least 0"),
    ("cache-string", variant({"factors.cache": ["one"]}), r"factors\.cache\[0\]: expected an integer"),
    ("special-huge", variant({"factors.special": [65]}), r"factors\.special\[0\]: must be at most 64"),
    ("log-mirror-string", variant({"factors.log_mirror": ["yes"]}),
     r"factors\.log_mirror\[0\]: expected true or false"),
    ("model-unknown", variant({"factors.model": ["floppy"]}), r"factors\.model\[0\]: unknown disk model 'floppy'"),
    ("model-int", variant({"factors.log_model": [5]}), r"factors\.log_model\[0\]: expected a disk model name"),
    ("model-custom-nan", variant({"factors.cache_model": ["custom:iops=nan"]}), r"factors\.cache_model\[0\]: "),
    ("model-on-real-host", real(**{"factors.model": ["hdd"]}),
     r"factors\.model: needs device_control, which host 'ssh://[^']*' lacks: a disk model is the lab's throttle"),
    ("model-with-faults", variant({"factors.model": ["hdd"], "faults": {"disk": 1, "after_s": 1, "action": "remove"}}),
     r"factors\.model: disk models as factors cannot be combined with faults"),
    ("param-unknown", variant({"factors.zfs_no_such_knob": [1]}), r"factors: unknown key\(s\) 'zfs_no_such_knob'"),
    ("param-txg-zero", variant({"factors.zfs_txg_timeout": [0]}),
     r"factors\.zfs_txg_timeout\[0\]: expected an integer"),
    ("param-txg-bool", variant({"factors.zfs_txg_timeout": [True]}), r"factors\.zfs_txg_timeout\[0\]: "),
    ("param-txg-nan", variant({"factors.zfs_txg_timeout": [float("nan")]}), r"factors\.zfs_txg_timeout\[0\]: "),
    ("param-dirty-garbage", variant({"factors.zfs_dirty_data_max": ["lots"]}), r"factors\.zfs_dirty_data_max\[0\]: "),
    ("param-dirty-400-digits", variant({"factors.zfs_dirty_data_max": ["9" * 400 + "M"]}),
     r"factors\.zfs_dirty_data_max\[0\]: "),
    ("param-arc-tiny", variant({"factors.zfs_arc_max": ["1M"]}), r"factors\.zfs_arc_max\[0\]: "),
    ("param-prefetch-2", variant({"factors.zfs_prefetch_disable": [2]}), r"factors\.zfs_prefetch_disable\[0\]: "),
    ("param-duplicate", variant({"factors.zfs_txg_timeout": [5, 5]}),
     r"factors\.zfs_txg_timeout\[1\]: duplicate value"),
    ("small-blocks-zvol", variant({"factors.special_small_blocks": ["16k"]}),
     r"factors\.special_small_blocks: special_small_blocks applies only to datasets"),
    ("small-blocks-odd", variant({"surface": "dataset", "target": {"size": "64M"}, "factors.volblocksize": DELETE,
                                  "factors.special_small_blocks": ["12k"]}),
     r"factors\.special_small_blocks\[0\]: '12k' is not a power of two"),
    ("small-blocks-too-big", variant({"surface": "dataset", "target": {"size": "64M"}, "factors.volblocksize": DELETE,
                                      "factors.special_small_blocks": ["2M"]}),
     r"factors\.special_small_blocks\[0\]: '2M' is outside"),
    ("draid-data-on-raidz", variant({"factors.layout": [{"family": "raidz1", "data": 2}]}),
     r"factors\.layout\[0\]\.data: applies only to dRAID"),
    ("draid-spares-on-mirror", variant({"factors.layout": [{"family": "mirror", "spares": 1}]}),
     r"factors\.layout\[0\]\.spares: applies only to dRAID"),
    ("draid-data-zero", variant({"factors.layout": [{"family": "draid1", "data": 0}]}),
     r"factors\.layout\[0\]\.data: must be at least 1"),
    ("draid-spares-negative", variant({"factors.layout": [{"family": "draid2", "spares": -1}]}),
     r"factors\.layout\[0\]\.spares: must be at least 0"),
    ("draid-data-string", variant({"factors.layout": [{"family": "draid2", "data": "4d"}]}),
     r"factors\.layout\[0\]\.data: expected an integer"),
    ("draid-unknown-key", variant({"factors.layout": [{"family": "draid2", "children": 8}]}),
     r"factors\.layout\[0\]: unknown key\(s\) 'children'"),
    ("fs-xfs", variant({"factors.fs": ["none", "xfs"]}),
     r"factors\.fs\[1\]: expected none or ext4 \(xfs needs xfsprogs"),
    ("fs-on-dataset", variant({"surface": "dataset", "target": {"size": "64M"}, "factors.volblocksize": DELETE,
                               "factors.fs": ["ext4"]}),
     r"factors\.fs: fs \(none or ext4 on the zvol\) is a factor of a zvol"),
    ("fs-with-faults", variant({"factors.fs": ["ext4"], "faults": {"disk": 1, "after_s": 1, "action": "remove"}}),
     r"faults: faults run on zvols and datasets, not under a filesystem"),
    ("fs-on-zvol-target-xfs", variant({"surface": "fs-on-zvol", "target.fs": "xfs"}), r"target\.fs: expected ext4"),
    ("surface-unknown", variant({"surface": "raw-ish"}), r"surface: expected 'zvol', 'dataset', 'fs-on-zvol' or 'raw'"),
    ("access-on-zvol", variant({"factors.access": ["nfs"]}),
     r"factors\.access: access \(local or nfs\) is a factor of a dataset"),
    ("access-smb", variant({"surface": "dataset", "target": {"size": "64M"}, "factors.volblocksize": DELETE,
                            "factors.access": ["smb"]}),
     r"factors\.access\[0\]: expected local or nfs or iscsi, got 'smb'"),
    ("access-target-iscsi", variant({"surface": "dataset", "target": {"size": "64M", "access": "iscsi"},
                                     "factors.volblocksize": DELETE}),
     r"target\.access: iscsi serves a zvol to clients: use surface: zvol"),
    ("access-zvol-nfs", variant({"target": {"volsize": "64M", "access": "nfs", "clients": 2}}),
     r"target\.access: a zvol's access is iscsi, with clients"),
    ("access-zvol-iscsi-alone", variant({"target": {"volsize": "64M", "access": "iscsi"}}),
     r"target\.access: a zvol's access is iscsi, with clients"),
    # -- clients on one NFS or iSCSI datastore (issue 30) ---------------------------------------------
    ("clients-on-zvol-without-iscsi", variant({"factors.clients": [1, 2]}),
     r"factors\.clients: clients reach a dataset over NFS \(target\.access: nfs\) or a zvol over iSCSI"),
    ("clients-on-fs-on-zvol", variant({"surface": "fs-on-zvol", "factors.clients": [1, 2]}),
     r"factors\.clients: clients \(client VMs on a datastore\) is a factor of a dataset sweep with access: nfs "
     r"or a zvol sweep"),
    ("clients-iscsi-with-fs", variant({"target": {"volsize": "64M", "access": "iscsi"}, "factors.clients": [1, 2],
                                       "factors.fs": ["none", "ext4"]}),
     r"factors\.clients: clients log in to the zvol itself, not to a filesystem made on it"),
    ("clients-without-nfs", variant({"surface": "dataset", "target": {"size": "64M"}, "factors.volblocksize": DELETE,
                                     "factors.clients": [1, 2]}),
     r"factors\.clients: clients reach a dataset over NFS \(target\.access: nfs\)"),
    ("clients-with-local-access", variant({"surface": "dataset", "target": {"size": "64M", "clients": 2},
                                           "factors.volblocksize": DELETE, "factors.access": ["local", "nfs"]}),
     r"target\.clients: clients reach a dataset over NFS"),
    ("clients-zero", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs"},
                              "factors.volblocksize": DELETE, "factors.clients": [0, 2]}),
     r"factors\.clients\[0\]: must be at least 1, got 0"),
    ("clients-too-many", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs", "clients": 64},
                                  "factors.volblocksize": DELETE}), r"target\.clients: must be at most 8, got 64"),
    ("clients-not-integer", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs"},
                                     "factors.volblocksize": DELETE, "factors.clients": ["two"]}),
     r"factors\.clients\[0\]: expected an integer"),
    ("clients-twice", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs", "clients": 2},
                               "factors.volblocksize": DELETE, "factors.clients": [1, 2]}),
     r"target\.clients: is also a factor"),
    ("clients-real-host", variant({**REAL, "surface": "dataset", "factors.volblocksize": DELETE,
                                   "target": {"size": "64M", "access": "nfs", "clients": 2}}),
     r"target\.clients: only lab clients are supported yet"),
    ("clients-fleet", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs", "clients": 2},
                               "factors.volblocksize": DELETE, "lab.count": 2}),
     r"target\.clients: clients run beside one lab, not a fleet"),
    ("clients-with-load", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs", "clients": 2},
                                   "factors.volblocksize": DELETE, "factors.load": [0.5]}),
     r"target\.clients: clients are not supported with an offered load"),
    ("clients-with-zfs-factor", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs", "clients": 2},
                                         "factors.volblocksize": DELETE, "factors.zfs": ["2.1", "2.3"]}),
     r"target\.clients: clients are not supported with the OpenZFS release"),
    ("clients-fill-percent", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs", "clients": 2},
                                      "factors.volblocksize": DELETE, "prefill.fill": "60%"}),
     r"prefill\.fill: with clients each client's file is written whole"),
    ("clients-until-steady", variant({"surface": "dataset", "target": {"size": "64M", "access": "nfs", "clients": 2},
                                      "factors.volblocksize": DELETE,
                                      "workloads": [{"name": "randwrite", "until_steady": {"max_windows": 3}}]}),
     r"target\.clients: clients are not supported with until_steady \(randwrite\)"),
    # -- the load factor (open loop, issue 33) -------------------------------------------------------
    ("load-negative", variant({"factors.load": [-0.5]}),
     r"factors\.load\[0\]: a fraction of saturation must be in \(0, 1\]"),
    ("load-zero", variant({"factors.load": [0]}), r"factors\.load\[0\]: a fraction of saturation must be in \(0, 1\]"),
    ("load-over-1", variant({"factors.load": [0.5, 1.5]}), r"factors\.load\[1\]: a fraction of saturation must be"),
    ("load-percent-over-100", variant({"factors.load": ["120%"]}), r"factors\.load\[0\]: a fraction of saturation"),
    ("load-nan", variant({"factors.load": [float("nan")]}), r"factors\.load\[0\]: a fraction of saturation must be"),
    ("load-inf", variant({"factors.load": [float("inf")]}), r"factors\.load\[0\]: a fraction of saturation must be"),
    ("load-unit-unknown", variant({"factors.load": ["2000mbps"]}),
     r"factors\.load\[0\]: expected 'saturation', a fraction of saturation .* got '2000mbps'"),
    ("load-iops-zero", variant({"factors.load": ["0iops"]}), r"factors\.load\[0\]: expected 'saturation'"),
    ("load-bool", variant({"factors.load": [True]}), r"factors\.load\[0\]: expected 'saturation'"),
    ("load-duplicate-level", variant({"factors.load": [0.5, "50%"]}),
     r"^factors\.load\[1\]: duplicate value '50%': the same level as factors\.load\[0\] \(0\.5\)$"),
    ("load-duplicate-iops", variant({"factors.load": ["2000iops", "2000 IOPS"]}),
     r"^factors\.load\[1\]: duplicate value '2000 IOPS': the same level as factors\.load\[0\]"),
    ("load-iops-huge", variant({"factors.load": ["9" * 400 + "iops"]}), r"factors\.load\[0\]: expected 'saturation'"),
    # -- the L2ARC warm-up ---------------------------------------------------------------------------
    ("warmup-until-over-100", warm(until="120%"),
     r"warmup\.l2arc\.until: expected a percentage like '90%' in \(0, 100\], got '120%'"),
    ("warmup-until-zero", warm(until="0%"), r"warmup\.l2arc\.until: expected a percentage .* got '0%'"),
    ("warmup-until-fraction", warm(until=0.9), r"warmup\.l2arc\.until: expected a percentage .* got 0\.9"),
    ("warmup-until-nan", warm(until="nan%"), r"warmup\.l2arc\.until: expected a percentage"),
    ("warmup-max-s-zero", warm(max_s=0), r"warmup\.l2arc\.max_s: must be at least 1, got 0"),
    ("warmup-max-s-negative", warm(max_s=-30), r"warmup\.l2arc\.max_s: must be at least 1"),
    ("warmup-max-s-huge", warm(max_s=10 ** 9), r"warmup\.l2arc\.max_s: must be at most 3600"),
    ("warmup-max-s-inf", warm(max_s=float("inf")), r"warmup\.l2arc\.max_s: expected an integer"),
    ("warmup-max-s-string", warm(max_s="5m"), r"warmup\.l2arc\.max_s: expected an integer, got '5m'"),
    ("warmup-chunk-zero", warm(chunk_s=0), r"warmup\.l2arc\.chunk_s: must be at least 1"),
    ("warmup-chunk-over-max", warm(max_s=20, chunk_s=30), r"warmup\.l2arc\.chunk_s: 30 s is longer than max_s"),
    ("warmup-unknown-key", warm({"warmup": {"l2arc": {"until": "90%", "max_s": 60}, "arc": {}}}),
     r"warmup: unknown key\(s\) 'arc' \(allowed: l2arc\)"),
    ("warmup-l2arc-unknown-key", warm(plateau="1%"), r"warmup\.l2arc: unknown key\(s\) 'plateau'"),
    ("warmup-no-max-s", warm({"warmup": {"l2arc": {"until": "90%"}}}), r"warmup\.l2arc: missing required key 'max_s'"),
    ("warmup-not-a-mapping", warm({"warmup": "yes"}), r"warmup: expected a mapping, got str"),
    ("warmup-empty", warm({"warmup": {}}), r"warmup: missing required key 'l2arc'"),
    ("warmup-no-cache-value", warm({"factors.cache": [0]}), r"warmup\.l2arc: no cell has a cache device"),
    ("warmup-no-cache-factor", variant({"lab.extra_disks": 1, "warmup": {"l2arc": {"until": "90%", "max_s": 300}}}),
     r"warmup\.l2arc: no cell has a cache device"),
    ("warmup-primarycache-metadata", warm({"target.primarycache": "metadata"}),
     r"target\.primarycache: 'metadata' keeps data out of the ARC, and the L2ARC is fed only from the ARC"),
    ("warmup-primarycache-factor", warm({"factors.primarycache": ["all", "none"]}),
     r"factors\.primarycache\[1\]: 'none' keeps data out of the ARC"),
    ("warmup-secondarycache-none", warm({"target.secondarycache": "none"}),
     r"target\.secondarycache: 'none' keeps data out of the L2ARC: the declared warmup\.l2arc cannot warm it"),
    ("warmup-secondarycache-metadata", warm({"factors.secondarycache": ["metadata"]}),
     r"factors\.secondarycache\[0\]: 'metadata' keeps data out of the L2ARC"),
    ("warmup-no-prefill", warm({"prefill.policy": "none"}), r"warmup\.l2arc: needs a prefill"),
    ("warmup-fill-none-level", warm({"factors.fill": ["none", "whole"]}), r"warmup\.l2arc: needs a prefill"),
    ("warmup-no-reads", warm({"workloads": [{"name": "randwrite", "overrides": {"runtime_s": 4, "ramp_time_s": 1}}]}),
     r"warmup\.l2arc: no workload reads"),
    ("warmup-dataset-odirect-reads", warm(DATASET),
     r"workloads\[0\]\.overrides\.direct: randread reads a dataset with O_DIRECT: from OpenZFS 2\.3"),
    ("warmup-writes-before-reads", warm({"reads_first": False, "workloads": [
        "randread", {"name": "randwrite", "overrides": {"runtime_s": 4, "ramp_time_s": 1}}]}),
     r"reads_first: a declared warmup\.l2arc needs reads first"),
    # -- raw disks (layout raw beside zvols, surface raw): what cannot apply to bare disks --------
    ("raw-sweep-volblocksize", variant({"surface": "raw", "factors": {"disks": [2], "volblocksize": ["16k"]},
                                        "target": {"size": "64M"}}),
     r"factors\.volblocksize: does not apply to a raw sweep: a ZFS property"),
    ("raw-sweep-compression", variant({"surface": "raw", "factors": {"compression": ["off", "lz4"]},
                                       "target": {"size": "64M"}}),
     r"factors\.compression: does not apply to a raw sweep"),
    ("raw-sweep-log", variant({"surface": "raw", "factors": {"log": [1]}, "target": {"size": "64M"}}),
     r"factors\.log: does not apply to a raw sweep: it shapes a pool"),
    ("raw-sweep-ashift", variant({"surface": "raw", "factors": {"ashift": [12]}, "target": {"size": "64M"}}),
     r"factors\.ashift: does not apply to a raw sweep: it shapes a pool"),
    ("raw-sweep-cache", variant({"surface": "raw", "factors": {"cache": [1]}, "target": {"size": "64M"}}),
     r"factors\.cache: does not apply to a raw sweep: it shapes a pool"),
    ("raw-sweep-module-param", variant({"surface": "raw", "factors": {"zfs_txg_timeout": [5]},
                                        "target": {"size": "64M"}}),
     r"factors\.zfs_txg_timeout: does not apply to a raw sweep: a ZFS setting"),
    ("raw-sweep-release", variant({"surface": "raw", "factors": {"zfs": ["2.2"]}, "target": {"size": "64M"}}),
     r"factors\.zfs: does not apply to a raw sweep: a ZFS setting"),
    ("raw-sweep-fs", variant({"surface": "raw", "factors": {"fs": ["none"]}, "target": {"size": "64M"}}),
     r"factors\.fs: does not apply to a raw sweep: fio runs on the bare disks"),
    ("raw-sweep-zfs-layout", variant({"surface": "raw", "factors": {"layout": ["raw", "stripe"]},
                                      "target": {"size": "64M"}}),
     r"factors\.layout\[1\]: a raw sweep measures the bare disks: its layout is raw \(or absent\), got stripe"),
    ("raw-layout-width", variant({"factors": {"layout": ["stripe", {"family": "raw", "width": 2}]}}),
     r"factors\.layout\[1\]\.width: does not apply to raw \(the bare disks\)"),
    ("raw-layout-duplicate", variant({"factors": {"layout": ["raw", "stripe", "raw"]}}),
     r"factors\.layout\[2\]: duplicate value 'raw'"),
    ("raw-layout-alone-in-zvol-sweep", variant({"factors": {"layout": ["raw"], "disks": [3]}}),
     r"factors\.layout: every level is raw: that is a surface: raw sweep"),
    ("raw-layout-in-dataset-sweep", variant({"surface": "dataset", "target": {"size": "64M"},
                                             "factors": {"layout": ["stripe", "raw"], "disks": [3]}}),
     r"factors\.layout\[1\]: raw \(the bare disks\) is a layout of zvol sweeps"),
    ("raw-layout-in-fs-on-zvol-sweep", variant({"surface": "fs-on-zvol", "factors": {"layout": ["raw", "stripe"]}}),
     r"factors\.layout\[0\]: raw \(the bare disks\) is a layout of zvol sweeps"),
    ("raw-target-volblocksize", variant({"surface": "raw", "factors": {"disks": [2]},
                                         "target": {"size": "64M", "volblocksize": "16k"}}),
     r"target\.volblocksize: does not apply to raw disks \(no zvol, no ZFS property\)"),
    ("raw-target-volsize", variant({"surface": "raw", "factors": {"disks": [2]}, "target": {"volsize": "64M"}}),
     r"target\.volsize: does not apply to raw disks"),
    ("raw-target-missing-size", variant({"surface": "raw", "factors": {"disks": [2]}, "target": {}}),
     r"target: missing required key 'size'"),
    ("raw-region-over-the-disk", variant({"surface": "raw", "factors": {"disks": [2]}, "target": {"size": "2G"}}),
     r"target\.size: 2G is larger than a lab disk \(1G\): a raw cell writes that much"),
    ("raw-beside-zvol-region-over-the-disk", variant({"factors.layout": ["raw", "stripe"], "target.volsize": "1536M"}),
     r"target\.volsize: 1536M is larger than a lab disk \(1G\)"),
    ("raw-with-faults", variant({"factors.layout": ["raw", "raidz1"],
                                 "faults": {"disk": 1, "after_s": 1, "action": "remove"}}),
     r"faults: faults pull or slow a disk of a pool; raw disks have no pool"),
    ("raw-with-pool-fill", variant({"factors.layout": ["raw", "stripe"], "prefill.fill": "60%"}),
     r"prefill\.fill: 60% fills a pool; raw disks have none"),
    ("raw-sweep-fill-percent", variant({"surface": "raw", "factors": {"fill": ["whole", "50%"]},
                                        "target": {"size": "64M"}}),
     r"factors\.fill\[1\]: 50% fills a pool; raw disks take none or whole"),
    ("raw-beside-only-fill-percents", variant({"factors.layout": ["raw", "stripe"], "factors.fill": ["50%", "90%"]}),
     r"factors\.fill\[0\]: 50% fills a pool; raw disks take none or whole"),
    ("raw-beside-only-ext4", variant({"factors.layout": ["raw", "stripe"], "factors.fs": ["ext4"]}),
     r"factors\.fs: raw disks carry no filesystem: give fs none beside ext4"),
    ("raw-sweep-unknown-factor", variant({"surface": "raw", "factors": {"disk": [2]}, "target": {"size": "64M"}}),
     r"factors: unknown key\(s\) 'disk' \(allowed: layout, disks"),
    ("raw-model-on-real-host", real(surface="raw", factors={"model": ["hdd"]}, target={"size": "64M"}),
     r"factors\.model: needs device_control, which host 'ssh://[^']*' lacks: a disk model is the lab's throttle"),
    # -- names, matched in full -------------------------------------------------------------------
    ("name-trailing-newline", variant({"name": "demo\n"}), r"name: must be a plain name"),
    ("name-too-long", variant({"name": "a" * 65}), r"name: must be a plain name .*at most 64"),
    ("name-leading-dash", variant({"name": "-rf"}), r"name: must be a plain name"),
    ("name-dotdot", variant({"name": "../escape"}), r"name: must be a plain name"),
    ("name-slash", variant({"name": "a/b"}), r"name: must be a plain name"),
    ("name-int", variant({"name": 123}), r"name: must be a plain name .*got 123"),
    ("name-empty", variant({"name": ""}), r"name: must be a plain name"),
    ("name-unicode", variant({"name": "naïve"}), r"name: must be a plain name"),
    ("workload-name-newline", variant({"workloads": [{"name": "randread\n", "template": "randread"}]}),
     r"workloads\[0\]\.name: must be a plain name"),
    ("workload-name-space", variant({"workloads": [{"name": "rand read", "template": "randread"}]}),
     r"workloads\[0\]\.name: must be a plain name"),
    ("workload-template-list", variant({"workloads": [{"name": "r", "template": ["randread"]}]}),
     r"workloads\[0\]\.template: unknown workload template"),
    ("surface-list", variant({"surface": ["zvol"]}), r"surface: expected 'zvol', 'dataset', 'fs-on-zvol' or 'raw'"),
    ("layout-family-list", variant({"factors.layout": [{"family": ["raidz1"]}]}),
     r"factors\.layout\[0\]: unknown layout family"),
    ("compression-list", variant({"target.compression": ["off"]}), r"target\.compression: \['off'\] is not a valid"),
    ("sync-factor-list", variant({"factors.sync": [["always"]]}), r"factors\.sync\[0\]: \['always'\] is not a valid"),
    ("order-list", variant({"order": ["as-written"]}), r"order: expected 'randomised' or 'as-written'"),
    ("lab-model-int", variant({"lab.model": 123}), r"lab\.model: expected a disk model name"),
    ("lab-zfs-list", variant({"lab.zfs": ["2.3"]}), r"lab\.zfs: the lab builds OpenZFS"),
    # -- hosts and devices, checked at load -------------------------------------------------------
    ("ssh-option-host", real(host="ssh://-oProxyCommand=touch"), r"host: expected 'ssh://\[user@\]host\[:port\]'"),
    ("ssh-option-user", real(host="ssh://-l@bench1"), r"host: expected 'ssh://\[user@\]host"),
    ("ssh-port-zero", real(host="ssh://root@bench1:0"), r"host: ssh port must be 1\.\.65535, got 0"),
    ("ssh-port-huge", real(host="ssh://root@bench1:70000"), r"host: ssh port must be 1\.\.65535, got 70000"),
    ("ssh-port-letters", real(host="ssh://root@bench1:ssh"), r"host: expected 'ssh://"),
    ("ssh-trailing-newline", real(host="ssh://root@bench1\n"), r"host: expected 'ssh://"),
    ("ssh-space", real(host="ssh://root@ben ch1"), r"host: expected 'ssh://"),
    ("ssh-empty", real(host="ssh://"), r"host: expected 'ssh://"),
    ("ssh-path", real(host="ssh://root@bench1/tmp"), r"host: expected 'ssh://"),
    ("ssh-password", real(host="ssh://root:pw@bench1"), r"host: expected 'ssh://"),
    ("host-list", real(host=["local"]), r"host: expected 'lab', 'local' or 'ssh://user@host'"),
    ("device-space", real(devices=["/dev/sd b"]), r"devices\[0\]: device path '/dev/sd b' contains spaces"),
    ("device-newline", real(devices=["/dev/sdb\n"]), r"devices\[0\]: device path .* contains spaces or control"),
    ("device-dotdot", real(devices=["/dev/../etc/passwd"]), r"devices\[0\]: device path .* is not normalised"),
    ("device-trailing-slash", real(devices=["/dev/sdb/"]), r"devices\[0\]: device path .* is not normalised"),
    ("device-bare-dev", real(devices=["/dev/"]), r"devices\[0\]: expected a /dev/ path"),
    ("device-relative", real(devices=["dev/sdb"]), r"devices\[0\]: expected a /dev/ path"),
    ("device-int", real(devices=[123]), r"devices\[0\]: expected a /dev/ path, got 123"),
    ("device-duplicate", real(devices=["/dev/sdb", "/dev/sdb"]), r"devices: a device is listed more than once"),
    ("extra-duplicate", real(extra_devices=["/dev/sdb"]), r"devices: a device is listed more than once"),
    ("extra-control", real(extra_devices=["/dev/nvme0n1\t"]), r"extra_devices\[0\]: device path"),
    ("signature-not-a-device", real(allow_signatures=["/dev/sdz"]),
     r"allow_signatures\[0\]: '/dev/sdz' is not one of the sweep's devices"),
    ("devices-string", real(devices="/dev/sdb"), r"devices: expected a non-empty list of device paths"),
    ("devices-too-many", real(devices=[f"/dev/d{i}" for i in range(1025)]), r"devices: at most 1024 devices"),
    ("local-with-lab", variant({"host": "local", "devices": ["/dev/sdb"]}), r"lab: applies only when host is 'lab'"),
    # -- the size of the study --------------------------------------------------------------------
    ("huge-grid", variant(HUGE_GRID), r"factors: the grid has up to 20,000 cells .* the limit is 2,000 cells"),
    ("too-many-runs", variant({"factors.iodepth": list(range(1, 51)), "factors.numjobs": list(range(1, 21)),
                               "repetitions": {"fixed": 20, "pool_replicates": 1}}),
     r"factors: the grid has up to 2,000 cells .* 40,000"),
    ("replicates-push-over", variant({"factors.iodepth": list(range(1, 101)), "factors.numjobs": list(range(1, 5)),
                                      "repetitions": {"fixed": 2, "pool_replicates": 10}}),
     r"factors: the grid has up to 8,000 cells"),
    ("factor-101-values", variant({"factors.iodepth": list(range(1, 102))}), r"factors\.iodepth: at most 100 values"),
    ("workloads-101", variant({"workloads": [{"name": f"w{i}", "template": "randread"} for i in range(101)]}),
     r"workloads: at most 100 workloads|factors: the grid has up to"),
    # -- targets that do not fit their pool (plan time) -------------------------------------------
    ("targets-overfill-raidz1", variant({"lab.disk_size": "512M", "factors": {"layout": ["raidz1"], "disks": [3],
                                                                               "volblocksize": ["16k"]},
                                         "target.volsize": "1G"}),
     r"target\.volsize: the 1 target\(s\) of pool p01 need 1\.02 GiB .* 1x raidz1\(3\) of 3 x 512M lab disks "
     r"holds about 0\.79 GiB usable"),
    ("targets-overfill-mirror", variant({"factors": {"layout": ["mirror"], "disks": [2],
                                                     "volblocksize": ["8k", "16k", "32k", "64k"]},
                                         "target.volsize": "300M"}),
     r"target\.volsize: the 4 target\(s\) of pool p01 need 1\.2\d GiB .* 1x mirror\(2\) of 2 x 1G"),
    ("targets-overfill-raidz-small-blocks", variant({"factors": {"layout": ["raidz1"], "disks": [3],
                                                                 "volblocksize": ["4k"]},
                                                     "target.volsize": "1400M"}),
     r"target\.volsize: .* need 1\.91 GiB \(thick zvols reserve volsize scaled by the raidz allocation"),
    ("dataset-overfill", variant({"surface": "dataset", "factors": {"layout": ["stripe"], "disks": [1],
                                                                    "recordsize": ["128k"]},
                                  "target": {"size": "1000M"}}),
     r"target\.size: the 1 target\(s\) of pool p01 need 0\.98 GiB \(files of the target size, plus metadata\)"),
] + [
    # A fleet (issue 29): what the text alone can tell is refused at load; what needs the machines
    # (unreachable, one machine under two names, fingerprints, memory) is in tests/test_fleet.py.
    ("fleet-host-twice", fleet(BOX, {**BOX, "host": "ssh://admin@Bench1"}),
     r"hosts\[1\]\.host: ssh://admin@Bench1 is listed twice \(hosts\[0\] is the same machine\)"),
    ("fleet-host-twice-port", fleet({**BOX, "host": "ssh://root@bench1:22"}, BOX),
     r"hosts\[1\]\.host: .* listed twice"),
    ("fleet-same-name", fleet({**BOX, "name": "b"}, {**BOX, "host": "ssh://root@bench2", "name": "b"}),
     r"hosts\[1\]\.name: two hosts are named 'b'"),
    ("fleet-overlapping-devices", fleet(BOX, {**BOX, "host": "ssh://root@bench2", "extra_devices": ["/dev/sdc"]}),
     r"hosts\[1\]\.devices: /dev/sdc listed more than once on bench2 .* overlap"),
    ("fleet-device-twice", fleet(BOX, {**BOX, "host": "ssh://root@bench2", "devices": ["/dev/sdb", "/dev/sdb",
                                                                                        "/dev/sdc"]}),
     r"hosts\[1\]\.devices: /dev/sdb listed more than once"),
    ("fleet-unequal-disks", fleet(BOX, {**BOX, "host": "ssh://root@bench2", "devices": ["/dev/sdb", "/dev/sdc"]}),
     r"hosts\[1\]\.devices: bench2 offers 2 data and 0 extra devices, bench1 3 and 0"),
    ("fleet-lab-host", fleet(BOX, {"host": "lab", "devices": ["/dev/sdb"]}),
     r"hosts\[1\]\.host: a fleet's hosts are ssh://"),
    ("fleet-bad-destination", fleet(BOX, {**BOX, "host": "ssh://-oProxyCommand=x"}), r"host: expected 'ssh://"),
    ("fleet-host-beside-list", variant({"hosts": [BOX], "lab": DELETE}), r"host: give each box's host"),
    ("fleet-empty", variant({"hosts": [], "host": DELETE, "lab": DELETE}), r"hosts: expected a non-empty list"),
    ("fleet-item-not-mapping", fleet("ssh://root@bench1"), r"hosts\[0\]: expected a mapping"),
    ("fleet-item-no-devices", fleet({"host": "ssh://root@bench1"}), r"hosts\[0\]: missing required key 'devices'"),
    ("fleet-item-unknown-key", fleet({**BOX, "disks": 3}), r"hosts\[0\]: unknown key\(s\) 'disks'"),
    ("fleet-bad-name", fleet({**BOX, "name": "a b"}), r"hosts\[0\]\.name: "),
    ("fleet-lab-count-zero", variant({"lab.count": 0}), r"lab\.count: must be at least 1"),
    ("fleet-lab-count-huge", variant({"lab.count": 99}), r"lab\.count: must be at most 16"),
    ("fleet-lab-count-text", variant({"lab.count": "two"}), r"lab\.count: expected an integer"),
    ("fleet-host-factor-alone", variant({"host_factor": True}), r"host_factor: applies to a fleet"),
    ("fleet-host-factor-text", variant({"host_factor": "yes"}), r"host_factor: expected true or false"),
    ("fleet-zfs-factor", variant({"lab.count": 2, "factors.zfs": ["2.1", "2.3"]}),
     r"factors\.zfs: a fleet of labs with the OpenZFS release as a factor is not supported"),
    ("fleet-faults", variant({"lab.count": 2, "lab.disks": 3, "factors": {"layout": ["mirror"], "disks": [3]},
                              "faults": {"kind": "remove", "disk": 1, "after_s": 1}}),
     r"faults: a fault study runs on one host"),
    ("no-host-at-all", variant({"host": DELETE, "lab": DELETE}), r"spec: missing required key 'host'"),
]


def _refused(text: str) -> str:
    start = time.process_time()
    with pytest.raises(ConfigError) as info:
        expand(parse_spec(text, name="malformed"))
    assert time.process_time() - start < BOUND_S
    message = str(info.value)
    assert "\n" not in message and len(message) < 1000, message
    return message


@pytest.mark.parametrize("text, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_spec_is_refused_in_one_line(text, message):
    import re
    got = _refused(text)
    assert re.match(message, got), got


def test_there_are_at_least_80_cases_and_the_base_is_valid():
    assert len(CASES) + len(CLI_CASES) + len(FILE_CASES) >= 80
    assert len({c[0] for c in CASES}) == len(CASES)
    assert expand(parse_spec(variant({}))).cells
    assert expand(parse_spec(real())).cells          # the real-host base is valid too


@pytest.mark.parametrize("text", [BOMB, variant(HUGE_GRID), NESTED], ids=["alias-bomb", "huge-grid", "nested"])
def test_expensive_inputs_are_refused_quickly(text):
    start = time.process_time()
    with pytest.raises(ConfigError):
        expand(parse_spec(text))
    assert time.process_time() - start < BOUND_S


# -- files: bytes that are not a spec -----------------------------------------------------------
FILE_CASES = [
    ("latin-1", "question: caf\xe9 au lait\n".encode("latin-1"), r"sweep spec .*: not UTF-8 text \(byte 0xe9"),
    ("utf-16", variant({}).encode("utf-16"), r"sweep spec .*: not UTF-8 text \(byte 0xff at offset 0"),
    ("over-1MiB-file", b"# " + b"x" * (1024 * 1024) + b"\n", r"sweep spec .*: larger than 1024 KiB"),
    ("binary", bytes(range(256)), r"sweep spec .*: not UTF-8 text"),
]


@pytest.mark.parametrize("data, message", [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_bad_spec_files(tmp_path, data, message):
    import re
    p = tmp_path / "bad.yaml"
    p.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_spec(p)
    assert re.match(message, str(info.value)) and "\n" not in str(info.value), str(info.value)


def test_unreadable_paths(tmp_path):
    for p, message in ((tmp_path, "Is a directory"), (tmp_path / "missing.yaml", "No such file"),
                       (Path("/dev/zero"), "larger than 1024 KiB")):
        start = time.process_time()
        with pytest.raises(ConfigError, match=message):
            load_spec(p)
        assert time.process_time() - start < BOUND_S


def test_a_crlf_spec_with_a_bom_still_loads(tmp_path):
    p = tmp_path / "dos.yaml"
    p.write_bytes(b"\xef\xbb\xbf" + variant({}).replace("\n", "\r\n").encode())
    assert load_spec(p).text == variant({})


# -- the command line: exit 2, one `zbench:` line, nothing created ---------------------------------
CLI_CASES = [
    ("alias-bomb", BOMB.encode(), "YAML anchors and aliases"),
    ("latin-1", variant({}).replace("Does", "D\xf6es").encode("latin-1"), "not UTF-8 text"),
    ("name-newline", variant({"name": "demo\n"}).encode(), "name: must be a plain name"),
    ("ssh-port", real(host="ssh://root@bench1:99999").encode(), "host: ssh port must be 1..65535"),
    ("device-space", real(devices=["/dev/sd b"]).encode(), "devices[0]: device path '/dev/sd b'"),
    ("runtime-inf", over("runtime_s", float("inf")).encode(), "runtime_s: must be a finite number"),
    ("huge-grid", variant(HUGE_GRID).encode(), "factors: the grid has up to 20,000 cells"),
    ("overfull-pool", next(c[1] for c in CASES if c[0] == "targets-overfill-raidz1").encode(),
     "holds about 0.79 GiB usable"),
]


# The CLI runs under a wrapper that writes the process's peak RSS (VmHWM of its own address
# space; rusage's maxrss would include the pytest process it was forked from) at exit.
_PEAK = ("import atexit, re, runpy, sys\n"
         "path = sys.argv.pop(1)\n"
         "def peak():\n"
         "    with open('/proc/self/status') as fh:\n"
         "        kib = re.search(r'VmHWM:\\s+(\\d+)', fh.read()).group(1)\n"
         "    open(path, 'w').write(kib)\n"
         "atexit.register(peak)\n"
         "runpy.run_module('zbench_lib.cli', run_name='__main__', alter_sys=True)\n")


@pytest.mark.parametrize("data, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_dry_run_refuses_cleanly(tmp_path, data, message):
    spec = tmp_path / "bad.yaml"
    spec.write_bytes(data)
    out, peak = tmp_path / "sweeps", tmp_path / "peak-kib"
    env = dict(os.environ, ZBENCH_CACHE=str(tmp_path / "cache"))
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-c", _PEAK, str(peak), "sweep", str(spec), "--dry-run", "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - start
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("zbench: ") and res.stderr.count("\n") == 1 and message in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and not res.stdout
    assert not out.exists() and not (tmp_path / "cache").exists()
    assert elapsed < 30 and int(peak.read_text()) < 200 * 1024, (elapsed, peak.read_text())


@pytest.mark.parametrize("key, value", [("host", "ssh://" + "h" * 100_000), ("name", "n" * 100_000),
                                        ("question", ["x"] * 10_000), ("surface", "z" * 100_000)])
def test_long_values_give_a_short_message(key, value):
    assert len(_refused(variant({key: value}))) < 700


@pytest.mark.parametrize("text", [
    "question: a b c\nfactors: {iodepth: [" + "1," * 500_000 + "1]}\n",
    "".join(f"k{i}: 1\n" for i in range(100_000)),
    "\n" * 1_000_000 + "a: 1\n",
], ids=["a-million-values", "many-keys", "blank-lines"])
def test_a_spec_near_the_byte_limit_is_refused_quickly(text):
    assert len(text.encode()) <= 1024 * 1024
    _refused(text)


# -- a fleet's refusals that need the machines (issue 29): probed before anything is created ---------
def _open(text: str, tmp_path):
    from zbench_lib.hosts.host_lock import LockOwner
    from zbench_lib.sweeps.running.fleet_open import open_fleet
    spec = parse_spec(text, name="malformed")
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        with open_fleet(spec, LockOwner("test", "0"), log=lambda m: None):
            pass
    assert time.monotonic() - start < 60
    message = str(info.value)
    assert "\n" not in message, message
    return message


def test_an_unreachable_host_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))                  # no ssh config of the user's in the way
    text = fleet({**BOX, "host": "ssh://root@127.0.0.1:1", "name": "gone"}, {**BOX, "host": "ssh://root@bench2"})
    assert re.match(r"host gone \(ssh://root@127\.0\.0\.1:1\) is unreachable: ", _open(text, tmp_path))


def test_one_machine_under_two_names_is_refused_from_its_probed_identity():
    from zbench_lib.hosts.base import LocalHost
    from zbench_lib.hosts.fleet import check_fleet, read_fingerprint
    probed = [(n, read_fingerprint(LocalHost(), ())) for n in ("bench1", "bench1-alias")]
    with pytest.raises(ConfigError, match=r"^hosts: bench1 and bench1-alias are the same machine \(machine-id "):
        check_fleet(probed)


def test_a_lab_count_the_memory_cannot_hold_is_refused_before_any_lab_boots(tmp_path, monkeypatch):
    monkeypatch.delenv("ZBENCH_LABS", raising=False)
    monkeypatch.setenv("ZBENCH_CACHE", str(tmp_path / "cache"))
    message = _open(variant({"lab.count": 16}), tmp_path)
    assert re.match(r"lab\.count: 16 labs need 43008 MiB \(16 x \(2048 MiB guest \+ 512 MiB QEMU\) \+ 2048 MiB for "
                    r"the controller\) but this machine has \d+ MiB available: at most \d+ fit", message), message
    assert not (tmp_path / "cache" / "labs").exists() or not any((tmp_path / "cache" / "labs").iterdir())
