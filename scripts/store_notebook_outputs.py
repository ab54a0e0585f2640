#!/usr/bin/env python3
"""Execute the analysis notebooks on the example datasets and store their outputs in place.

nbval (`make test`) re-executes each notebook and compares every output with the stored one,
so the stored outputs are the reference: rerun this after changing a notebook, the analysis
code or the example data, and review the diff like any other change.

Figures are stored as plotly JSON (JupyterLab renders it natively) beside the small PNG that
`show` adds (its static redraw, which a code host's notebook preview displays, since it runs
no JavaScript); the text/html copy, which needs (or embeds) plotly.js, is dropped. Figure cells carry
`# NBVAL_IGNORE_OUTPUT` because plotly's JSON changes with its version, and nbval never
compares image/png (it skips images unless run with --nbdime). The figures themselves are
checked in headless Chromium by tests/test_report.py.

    python3 scripts/store_notebook_outputs.py [notebooks/analysis-scaling.ipynb ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
PLOTLY = "application/vnd.plotly.v1+json"


def store_outputs(path: Path) -> None:
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if PLOTLY in data:
                data.pop("text/html", None)
                if "image/png" not in data:
                    raise SystemExit(f"{path.name}: a figure has no static PNG beside its plotly JSON (shown without "
                                     f"zbench_lib.analysis.report.notebook_display.show?):\n{cell.source[:200]}")
        if any(PLOTLY in o.get("data", {}) for o in cell.get("outputs", [])):
            if "# NBVAL_IGNORE_OUTPUT" not in cell.source.splitlines():
                raise SystemExit(f"{path.name}: a cell draws a figure but is not marked "
                                 f"'# NBVAL_IGNORE_OUTPUT':\n{cell.source[:200]}")
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, str(path))
    print(f"stored outputs of {path.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    paths = [Path(p).resolve() for p in argv] or sorted((ROOT / "notebooks").glob("analysis-*.ipynb"))
    for p in paths:
        store_outputs(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
