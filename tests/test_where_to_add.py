"""ARCHITECTURE.md kept true: its "Where to add" names enough files, and it names every module.

A toy workload, a toy layout family and a toy truth check are added to a copy of the package by
writing only the files the "Where to add" section names for them; the copy must then take them
everywhere a sweep is described before anything runs: the spec loader accepts them, the planner
plans them (and the CLI's --dry-run prints the plan), the job renders, `zpool create` gets its
vdevs, the models predict, the analysis knows the workload's metric, and the check judges a run,
gives the results table its flag and columns and the analysis its kind and meaning. No lab is
needed.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCH = (ROOT / "ARCHITECTURE.md").read_text()

TOY_WORKLOAD = '''"""A toy: 16k random reads, one job of two."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("toyread", direction="read", sequential=False, metric="iops",
                    defaults=dict(bs="16k", iodepth=2, numjobs=1))
'''
TOY_TEMPLATE = '''{% extends "_base.fio.j2" %}
{%- block job %}
rw=randread
{%- endblock %}
'''
TOY_FAMILY = '''"""A toy: three-way mirrors only, each vdev one disk's worth of data."""

from dataclasses import dataclass

from zbench_lib.zfs.families import Family, sector_round


@dataclass(frozen=True)
class Triple(Family):
    def count_data(self, width, vdevs):
        return vdevs

    def redundancy(self, lay):
        return lay.width - 1

    def keyword(self, lay):
        return "mirror"

    def data_topology(self, lay):
        return [("mirror", lay.width)] * lay.vdevs      # what zpool status reads back

    def width_rules(self, lay):
        return [] if lay.width == 3 else [f"triple takes 3 disks per vdev, got {lay.width}"]

    def shape(self, disks, factors, lay):
        return 3, disks // 3

    def space_efficiency(self, width, volblocksize, ashift):
        return volblocksize / sector_round(volblocksize, ashift) / width

    def charged_bytes(self, psize, width, ashift):
        return sector_round(psize, ashift)

    def random_read_iops(self, width, vdevs, disk_iops, volblocksize, ashift, count_parity):
        return float(disk_iops * width * vdevs)


FAMILIES = (Triple("triple", min_width=3),)
'''
TOY_CHECK = '''"""A toy: a run that read nothing is described as such."""

from zbench_lib.measure.judging import DESCRIBES, Column, TruthCheck, fio_bytes


def read_nothing(fio_rows, c, ctx):
    n = fio_bytes(fio_rows, "read")
    return {"flag": n == 0, "reason": "no reads" if n == 0 else "reads", "read_bytes": n}


CHECK = TruthCheck("read_nothing", read_nothing, DESCRIBES, "the run read nothing", rank=1000,
                   columns=(Column("toy_read_bytes", "read_bytes"),))
'''
TOY_SPEC = '''name: toy
question: does a toy workload on a toy layout family plan?
surface: zvol
host: lab
lab: {disks: 6, disk_size: 1G, model: "custom:iops=300,bw=50M", extra_disks: 0}
factors:
  layout: [triple, stripe]
  disks: [6]
  volblocksize: [16k]
target: {volsize: 64M, compression: "off"}
workloads:
  - {name: toyread, overrides: {runtime_s: 4, ramp_time_s: 1}}
  - {name: randwrite, overrides: {runtime_s: 4, ramp_time_s: 1}}
repetitions: {pilot: 2, max: 3, target_rel_ci: 0.5, metric: iops}
seed: 7
'''
# What the copy is asked once the toys are in: everything that reads a workload's or a family's record.
CHECK = '''
import json, sys
from zbench_lib.sweeps.spec.sweep_spec import load_spec
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.measure import fio
from zbench_lib.zfs import models
from zbench_lib.zfs.layouts import Layout, expected_topology, zpool_create_argv
from zbench_lib import analysis as A
from zbench_lib.analysis.data.flags import kind_label
from zbench_lib.measure import truth
from zbench_lib.measure.run_context import RunFacts

plan = expand(load_spec(sys.argv[1]))
cells = [c for c in plan.cells if c.factors["layout"] == "triple" and c.template == "toyread"]
lay = Layout("triple", 3, 2).validate()
cols = truth.flag_columns(truth.truth_checks([{"direction": "write", "io_bytes": 1}], {}, RunFacts()))
print(json.dumps({
    "cells": len(cells), "reads_only": [c.reads_only for c in cells],
    "data_disks": [c.factors["data_disks"] for c in cells], "label": lay.describe(),
    "argv": zpool_create_argv("tank", [f"/dev/vd{x}" for x in "bcdefg"], lay)[5:],
    "topology": expected_topology(lay)["data"], "usable": lay.usable_bytes(1000),
    "job": "rw=randread" in fio.build_job("toyread", filename="/dev/zvol/t/v", size="1G"),
    "iops": models.predicted_random_read_iops("triple", 3, 2, 100, 16384),
    "space": models.space_efficiency("triple", 3, 16384), "metric": A.workload_metric("w", "toyread"),
    "check": [truth.CHECKS[-1], cols["flag_read_nothing"], cols["toy_read_bytes"], cols["described_flags"],
              cols["flagged"], A.FLAG_MEANINGS["flag_read_nothing"], kind_label("flag_read_nothing")],
}))
'''


def _where_to_add(what: str) -> list[str]:
    """The path patterns ("<name>" for the new one's name) ARCHITECTURE.md's "Where to add" gives `what`."""
    section = ARCH.split("## Where to add", 1)[1]
    m = re.search(rf"^- \*\*{re.escape(what)}\*\*:(.*?)(?=^- \*\*|\Z)", section, re.S | re.M)
    assert m, f"ARCHITECTURE.md's Where to add has no bullet for {what}"
    return [p.replace("<name>", "*") for p in re.findall(r"`([^`]*<name>[^`]*)`", m.group(1))]


def _write(root: Path, rel: str, text: str, allowed: list[str]) -> None:
    """Write a toy's file, refusing one the documentation does not name."""
    named = [p for p in allowed if fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, "zbench_lib/" + p)]
    assert named, f"{rel} is not among the files Where to add names: {allowed}"
    (root / rel).write_text(text)


def test_a_toy_workload_layout_family_and_truth_check_need_only_the_files_named(tmp_path):
    for part in ("zbench_lib", "templates"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    workload, family = _where_to_add("A workload"), _where_to_add("A layout family")
    _write(tmp_path, "zbench_lib/measure/workloads/toyread.py", TOY_WORKLOAD, workload)
    _write(tmp_path, "templates/fio/toyread.fio.j2", TOY_TEMPLATE, workload)
    _write(tmp_path, "zbench_lib/zfs/families/triple.py", TOY_FAMILY, family)
    _write(tmp_path, "zbench_lib/measure/checks/read_nothing.py", TOY_CHECK, _where_to_add("A truth check"))
    (tmp_path / "toy.yaml").write_text(TOY_SPEC)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), ZBENCH_CACHE=str(tmp_path / "cache"))
    run = lambda *argv: subprocess.run([sys.executable, *argv], cwd=tmp_path, env=env, capture_output=True,  # noqa: E731
                                       text=True, timeout=300)
    proc = run("-c", CHECK, str(tmp_path / "toy.yaml"))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got == {"cells": 1, "reads_only": [True], "data_disks": [2], "label": "2x triple(3)",
                   "argv": ["mirror", "/dev/vdb", "/dev/vdc", "/dev/vdd", "mirror", "/dev/vde", "/dev/vdf",
                            "/dev/vdg"],
                   "topology": [["mirror", 3], ["mirror", 3]], "usable": 2000, "job": True, "iops": 600.0,
                   "space": 1 / 3, "metric": "iops",
                   "check": ["read_nothing", True, 0, "read_nothing", False, "the run read nothing", "describes"]}
    dry = run("-m", "zbench_lib.cli", "sweep", str(tmp_path / "toy.yaml"), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "cells: 4 (0 skipped)" in dry.stdout, dry.stdout


def test_the_real_package_does_not_have_the_toys():
    from zbench_lib.measure import truth, workloads
    from zbench_lib.zfs import families
    assert "toyread" not in workloads.names() and "triple" not in families.names()
    assert "read_nothing" not in truth.CHECKS


def _named_in_architecture() -> set[str]:
    """Every identifier inside a backticked span of ARCHITECTURE.md's prose (not its diagrams)."""
    prose = re.sub(r"```.*?```", "", ARCH, flags=re.S)
    return {word for span in re.findall(r"`([^`]+)`", prose) for word in re.findall(r"[A-Za-z_]\w*", span)}


REGISTRIES = ("measure/workloads", "measure/checks", "zfs/families")   # packages whose modules are its entries


def test_every_module_is_named_in_architecture():
    """A module is named by its own name, a room's (sweeps/spec/values.py) too; a registry's
    members (measure/workloads/randread.py) by their package's."""
    named, missing = _named_in_architecture(), []
    for path in sorted((ROOT / "zbench_lib").rglob("*.py")):
        rel = path.relative_to(ROOT / "zbench_lib")
        name = rel.parent.name if path.name == "__init__.py" else path.stem
        package = rel.parts[1] if str(rel.parent) in REGISTRIES else None
        if name not in named and package not in named and rel.parts != ("__init__.py",):
            missing.append(str(rel))
    assert not missing, f"modules ARCHITECTURE.md does not name: {missing}"
