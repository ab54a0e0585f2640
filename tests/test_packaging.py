"""environment.yml (conda users) and pyproject.toml (pip users) list the same dependencies."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=!~ ]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_and_pyproject_list_the_same_dependencies():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pip_deps = {_name(d): d.replace(" ", "") for d in pyproject["project"]["dependencies"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {_name(d): d.replace(" ", "") for d in env["dependencies"]
             if isinstance(d, str) and _name(d) not in ("python", "pip")}
    assert pip_deps == conda


def test_console_script_and_ci_call_the_readme_test_command():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["zbench"] == "zbench_lib.cli:main"
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make demo" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
