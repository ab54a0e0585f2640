"""No tracked text file keeps a merge's conflict markers (ARCHITECTURE.md once did, unnoticed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(<<<<<<< |=======$|>>>>>>> )", re.M)
TEXT = (".py", ".md", ".yaml", ".yml", ".toml", ".cfg", ".txt", ".ipynb")


def test_no_tracked_text_file_holds_conflict_markers():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    hits = [f for f in files if f.endswith(TEXT) and (ROOT / f).is_file()
            and MARKER.search((ROOT / f).read_text(errors="replace"))]
    assert hits == []
