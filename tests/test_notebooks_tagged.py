"""Every analysis notebook documents its parameters for papermill and validates them.

Without a cell tagged `parameters`, papermill injects at the top and the notebook's
own defaults silently win (docs/style.md, Notebooks).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
ANALYSIS = [p for p in NOTEBOOKS if p.stem.startswith("analysis-")]
PARAM_LINE = re.compile(r"^(?P<name>[a-z_][a-z0-9_]*): (?P<type>str|int|float|bool) = (?P<default>.+?)"
                        r"  # (?P<help>\S.*)$")


def _tagged(nb, tag):
    return [i for i, c in enumerate(nb.cells) if tag in c.get("metadata", {}).get("tags", [])]


def _params(nb):
    cell = nb.cells[_tagged(nb, "parameters")[0]]
    return [PARAM_LINE.match(line) for line in cell.source.splitlines() if line.strip()]


def test_there_are_analysis_notebooks():
    names = {p.stem for p in NOTEBOOKS}
    assert {"analysis-scaling", "analysis-volblocksize", "analysis-compare"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_exactly_one_parameters_cell_with_documented_lines(path):
    nb = nbformat.read(str(path), as_version=4)
    tagged = _tagged(nb, "parameters")
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'parameters'"
    assert nb.cells[tagged[0]].cell_type == "code"
    bad = [line for line, m in zip(nb.cells[tagged[0]].source.splitlines(), _params(nb)) if m is None]
    assert not bad, f"{path.name}: lines not of the form `name: type = default  # meaning`: {bad}"
    names = [m["name"] for m in _params(nb)]
    if path in ANALYSIS:
        assert "sweep_dir" in names and "include_flagged" in names and "static_figures" in names
    elif path.stem == "sweep":
        assert "spec" in names and "resume_dir" in names and "measure" in names
    else:                                   # explore: the widgets' starting values and the headless button
        assert "layout" in names and "run" in names


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p not in ANALYSIS], ids=lambda p: p.stem)
def test_next_cell_validates(path):
    nb = nbformat.read(str(path), as_version=4)
    nxt = nb.cells[_tagged(nb, "parameters")[0] + 1]
    assert nxt.cell_type == "code" and "raise ValueError" in nxt.source
    for m in _params(nb):
        if m["type"] == "bool" or m["name"] in ("sweep_dir", "metric", "margin"):
            assert m["name"] in nxt.source, f"{path.name}: {m['name']} is not validated"


@pytest.mark.parametrize("path", ANALYSIS, ids=lambda p: p.stem)
def test_an_analysis_notebook_validates_its_parameters_in_one_library_call(path):
    """Issue 32, item 3: the cell after `parameters` is one call, the check `zbench report --param` runs too,
    and that check knows every parameter the notebook declares."""
    from zbench_lib.analysis.report.notebook_params import NOTEBOOK_PARAMETERS
    nb = nbformat.read(str(path), as_version=4)
    nxt = nb.cells[_tagged(nb, "parameters")[0] + 1]
    assert _tagged(nb, "validate") == [_tagged(nb, "parameters")[0] + 1]
    code = [ln for ln in nxt.source.splitlines() if ln.strip() and not ln.startswith(("from ", "import ", "#"))]
    assert len(code) == 1 and code[0].startswith(f'P = A.check_parameters("{path.stem}", globals())'), code
    assert NOTEBOOK_PARAMETERS[path.stem] == tuple(m["name"] for m in _params(nb))


@pytest.mark.parametrize("path", ANALYSIS, ids=lambda p: p.stem)
def test_ends_with_generated_conclusions(path):
    nb = nbformat.read(str(path), as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert _tagged(nb, "conclusions") == [code[-1]], "the last code cell prints the conclusions"
    assert nb.cells[code[-1] - 1].cell_type == "markdown" and "Conclusions" in nb.cells[code[-1] - 1].source
    assert "conclusions_" in nb.cells[code[-1]].source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_help_lists_every_parameter_with_its_comment(path):
    out = subprocess.run([sys.executable, "-m", "papermill", "--help-notebook", str(path)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    flat = " ".join(out.split())                    # papermill wraps long help text
    for m in _params(nb := nbformat.read(str(path), as_version=4)):
        assert re.search(rf"\b{m['name']}: {m['type']} \(default ", flat), f"{m['name']} missing:\n{out}"
        assert " ".join(m["help"].split()) in flat, f"help of {m['name']} missing:\n{out}"
    assert len(_params(nb)) == len(re.findall(r"^\s+\w+: \w+ \(default", out, re.M))
