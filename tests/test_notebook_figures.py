"""Committed notebooks read on a code host: every plotly figure carries a static PNG beside it.

A code host's notebook preview (GitHub's) runs no JavaScript, so it cannot draw plotly's
JSON; `show` therefore puts the figure's static redraw (image/png) in the same output, and
scripts/store_notebook_outputs.py keeps it. nbval never compares image bytes (it skips
image/png unless run with --nbdime), which the last test confirms with a real run.
"""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import plotly.graph_objects as go
import pytest

from zbench_lib.analysis.figures import plots
from zbench_lib.analysis.figures.figures_static import PLOTLY_MIME, static_png

ROOT = Path(__file__).resolve().parents[1]
ANALYSIS = sorted((ROOT / "notebooks").glob("analysis-*.ipynb"))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MOST_PNG_BYTES = 80_000          # a palette PNG of one chart; a notebook stays well under 1 MB


def _png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image
    return Image.open(io.BytesIO(data)).size


@pytest.mark.parametrize("path", ANALYSIS, ids=lambda p: p.stem)
def test_every_committed_figure_carries_a_static_png(path):
    nb = nbformat.read(str(path), as_version=4)
    figures = [o["data"] for c in nb.cells for o in c.get("outputs", []) if PLOTLY_MIME in o.get("data", {})]
    assert figures, f"{path.name}: no stored figure (run scripts/store_notebook_outputs.py)"
    for i, data in enumerate(figures, start=1):
        assert "image/png" in data, f"{path.name}: figure {i} has plotly JSON but no image/png beside it"
        png = base64.b64decode(data["image/png"])
        assert png.startswith(PNG_SIGNATURE), f"{path.name}: figure {i}: image/png is not a PNG"
        assert len(png) <= MOST_PNG_BYTES, f"{path.name}: figure {i}: PNG of {len(png)} bytes"
        width, height = _png_size(png)
        assert 300 <= width <= 1600 and 200 <= height <= 1200, (width, height)
        assert "text/html" not in data          # needs plotly.js, which a stored notebook does not load
    # A cap against bloat: the full scaling example stores 14 figures (4 workloads x 3 + headline +
    # timeline), ~40 KB each with their PNG, and its tables: 1.1 MB.
    assert path.stat().st_size < 1_500_000, f"{path.name}: {path.stat().st_size} bytes"


def test_show_puts_plotly_html_and_png_in_one_output(monkeypatch):
    from zbench_lib.analysis.report.notebook_display import show
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append((obj, raw)))
    df = pd.DataFrame([dict(layout=lay, volblocksize_bytes=v, rep=r, iops=100.0 * (i + 1) + v / 4096 + r)
                       for i, lay in enumerate(("raidz2", "mirror")) for v in (4096, 16384) for r in range(3)])
    fig = plots.plot_volblocksize_map_interactive(df, "iops", title="a map")
    show(fig, caption="Sweep x.")
    (bundle, raw), = shown
    assert raw and set(bundle) == {PLOTLY_MIME, "text/html", "image/png"}
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(PNG_SIGNATURE) and png == static_png(fig)      # the static redraw, same bytes
    shown.clear()
    show(go.Figure(), caption="nothing drawn")         # nothing a static redraw can draw: no image
    assert set(shown[0][0]) == {PLOTLY_MIME, "text/html"}


def test_nbval_skips_image_bytes_but_still_compares_text(tmp_path):
    """A real nbval run: a cell whose PNG differs at every run passes, a changed text fails."""
    v4 = nbformat.v4
    stale_png = base64.b64encode(PNG_SIGNATURE + b"stored").decode()
    nb = v4.new_notebook(cells=[
        v4.new_code_cell(
            "import base64, os\nfrom IPython.display import display\n"
            "display({'image/png': base64.b64encode(b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(32)).decode(),"
            " 'text/plain': 'a figure'}, raw=True)",
            outputs=[v4.new_output("display_data", data={"image/png": stale_png, "text/plain": "a figure"})],
            execution_count=1),
        v4.new_code_cell("print('fresh')", outputs=[v4.new_output("stream", name="stdout", text="stale\n")],
                         execution_count=2),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(tmp_path / "figure.ipynb"))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--nbval",
                          "--nbval-current-env", "figure.ipynb"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert "PASSED figure.ipynb::Cell 0" in res.stdout, res.stdout[-3000:]
    assert "FAILED figure.ipynb::Cell 1" in res.stdout, res.stdout[-3000:]
