"""data/examples/README.md states only figures its packs give (issue 46 item 6): the blocks that
scripts/example_readme.py writes must be what it writes now, and the prose around them must hold no
figure of its own. Each test runs the script itself, as a maintainer would."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from zbench_lib.core.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "example_readme.py"
EXAMPLES = REPO_ROOT / "data" / "examples"
README = EXAMPLES / "README.md"


def _check(readme: Path, examples: Path = EXAMPLES) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--readme", str(readme),
                           "--examples", str(examples)], capture_output=True, text=True, timeout=300)


def test_the_shipped_readme_is_what_the_packs_give():
    done = _check(README)
    assert done.returncode == 0, done.stdout + done.stderr
    blocks = re.findall(r"<!-- zbench:figures ([\w.-]+) -->", README.read_text())
    packs = sorted(p.parent.name for p in EXAMPLES.glob("*/results.parquet"))
    assert sorted(blocks) == packs          # every pack has its block, and no block names a missing pack


def test_a_figure_written_by_hand_fails(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Examples\n\nraidz2 reads 175 IOPS at every depth (95% CI 175-175), 16 of 18 judged.\n"
                      "Run on 2026-11-24 with OpenZFS 2.3.2, volblocksize 16K, a raidz1 2x4.\n")
    done = _check(readme, tmp_path)
    assert done.returncode == 1
    named = re.findall(r"line (\d+): '([^']+)'", done.stdout)
    # the IOPS, the percentage, the interval and the count on line 3; the date, version and levels are not figures
    assert named == [("3", "175 IOPS"), ("3", "95%"), ("3", "175-175"), ("3", "16 of 18")], done.stdout


def test_a_stale_figure_in_a_block_fails(tmp_path):
    text = README.read_text()
    block = re.search(r"<!-- zbench:figures iodepth-curve -->\n.*?<!-- zbench:end -->\n", text, re.S).group(0)
    # one figure of the block changed by hand: the first ratio or latency in its answer, 'x' or ' ms'
    figure = re.search(r"\d+\.\d+(?=x| ms)", block).group(0)
    edited = block.replace(figure, f"{float(figure) * 1.5:.3g}", 1)
    assert edited != block
    readme = tmp_path / "README.md"
    readme.write_text(edited)
    done = _check(readme)
    assert done.returncode == 1
    assert "the block of iodepth-curve is not what its pack gives" in done.stdout
    assert readme.read_text() == edited      # --check writes nothing
