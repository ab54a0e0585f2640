"""Reports: run the analysis notebooks with papermill and render self-contained HTML.

`render_report(sweep_dir)` executes each chosen notebook into `<sweep_dir>/report/`
(the executed .ipynb is kept next to its HTML), renders it with nbconvert with the
code hidden, and writes an index page linking them. Nothing is fetched from the
network when the pages are opened: the `zbench` nbconvert template drops require.js,
MathJax and mermaid, and `show` embeds plotly.js once per notebook.

Also here: the few display helpers the notebooks share (`show`, `header_markdown`,
`overlay_model`, `space_figure`, `ratio_figure`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from zbench_lib.analysis.sweep_data import Sweep, environment_table, load_sweep
from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.core.errors import ZbenchError
from zbench_lib.analysis.plots import LAYOUT_ORDER
from zbench_lib.core.sizes import format_size

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
TEMPLATE_DIR = REPO_ROOT / "templates" / "report"
ALL_NOTEBOOKS = ("analysis-scaling", "analysis-volblocksize", "analysis-compare")
TITLES = {"analysis-scaling": "Scaling per data disk", "analysis-volblocksize": "volblocksize",
          "analysis-compare": "Comparisons along one factor"}
_figure_ids = itertools.count()


# -- display helpers for the notebooks ----------------------------------------------------------

def show(fig: go.Figure) -> None:
    """Display a plotly figure for JupyterLab *and* for the HTML report.

    The bundle carries the plotly mimetype (JupyterLab renders it natively) and
    text/html (what nbconvert keeps). The first figure of a kernel embeds plotly.js
    so the report works offline; div ids are a counter, so outputs are reproducible.
    """
    from IPython.display import display
    n = next(_figure_ids)
    html = fig.to_html(full_html=False, include_plotlyjs=n == 0, div_id=f"zbench-figure-{n}",
                       config={"displaylogo": False, "responsive": True})
    display({"application/vnd.plotly.v1+json": json.loads(fig.to_json()), "text/html": html}, raw=True)


def header_markdown(sweep: Sweep) -> str:
    """The question, the surface and the size of the sweep, as Markdown."""
    df, spec = sweep.results, sweep.spec
    sid = df["sweep_id"].iloc[0] if "sweep_id" in df and len(df) else spec.get("name", sweep.path.name)
    runs = df["run_id"].nunique() if "run_id" in df else len(df)
    text = (f"**Sweep** `{sid}`  \n**Question:** {str(spec.get('question', '(no question written)')).strip()}  \n"
            f"**Surface:** {spec.get('surface', '(not declared)')} · {runs} runs, {len(df)} result rows")
    if is_synthetic(sweep):
        text = ("**SYNTHETIC DATA: made up to test the analysis mechanics, not measured. "
                "Nothing below is a result.**\n\n" + text)
    return text


def is_synthetic(sweep: Sweep) -> bool:
    df = sweep.results
    return bool(sweep.spec.get("synthetic") or ("synthetic" in df and df["synthetic"].fillna(False).any()))


def overlay_model(fig: go.Figure, scaling_df: pd.DataFrame, family: str = "layout") -> go.Figure:
    """Add the first-order random-read model per data disk (dotted) to a per-disk scaling figure."""
    if "model_per_disk" not in scaling_df or scaling_df["model_per_disk"].isna().all():
        return fig
    for i, (name, g) in enumerate(sorted(scaling_df.groupby(family), key=lambda kv: _layout_rank(kv[0]))):
        g = g.sort_values("data_disks")
        fig.add_trace(go.Scatter(x=g["data_disks"], y=g["model_per_disk"], mode="lines",
                                 name="IOPS model" if i == 0 else f"model {name}", legendgroup="model",
                                 showlegend=i == 0, hovertext=f"model: {name}",
                                 line=dict(dash="dot", width=1.5, color="grey")))
    return fig


def _layout_rank(name):
    return (LAYOUT_ORDER.index(name), "") if name in LAYOUT_ORDER else (len(LAYOUT_ORDER), str(name))


def space_figure(space_df: pd.DataFrame) -> go.Figure:
    """Measured referenced/logicalused against the allocation model, per layout × block size."""
    bcol = "volblocksize_bytes" if "volblocksize_bytes" in space_df else "recordsize_bytes"
    fig = go.Figure()
    for name, g in sorted(space_df.groupby(["layout", "width"]), key=lambda kv: _layout_rank(kv[0][0])):
        g = g.sort_values(bcol)
        x = [format_size(int(v)) for v in g[bcol]]
        label = f"{name[0]} of {name[1]}"
        fig.add_trace(go.Bar(x=x, y=g["measured_used_ratio"], name=f"{label}: measured"))
        fig.add_trace(go.Scatter(x=x, y=g["predicted_used_ratio"], name=f"{label}: model",
                                 mode="markers", marker=dict(symbol="line-ew-open", size=18)))
    fig.update_layout(barmode="group", title="referenced / logicalused: measured (bars) vs allocation model",
                      xaxis_title="block size", yaxis_title="referenced / logicalused")
    return fig


def ratio_figure(cmp: pd.DataFrame, metric: str, margin: float | None = None) -> go.Figure:
    """Forest plot: ratio of means to the baseline with its 95% CI, one row per comparison."""
    by = [c for c in cmp.columns if c not in ("factor", "level", "baseline") and c in
          ("workload", "direction", "layout", "volblocksize_bytes", "iodepth", "total_disks", "sweep_id")]
    fmt = (lambda v: format_size(int(v))) if str(cmp["factor"].iloc[0]).endswith("_bytes") else str
    labels = [" ".join([fmt(r["level"])] + [format_size(int(r[c])) if c.endswith("_bytes") else str(r[c])
                                           for c in by]) for _, r in cmp.iterrows()]
    fig = go.Figure(go.Scatter(x=cmp["ratio"], y=labels, mode="markers", name="ratio (95% CI)",
                               error_x=dict(type="data", array=cmp["ratio_ci_high"] - cmp["ratio"],
                                            arrayminus=cmp["ratio"] - cmp["ratio_ci_low"])))
    fig.add_vline(x=1.0, line_color="black", line_dash="dash")
    if margin:
        fig.add_vrect(x0=1 / (1 + margin), x1=1 + margin, fillcolor="green", opacity=0.12, line_width=0)
    fig.update_layout(title=f"{metric}: ratio to baseline {fmt(cmp['baseline'].iloc[0])} (95% CI"
                            + (f"; shaded: ±{margin:.0%} equivalence margin)" if margin else ")"),
                      xaxis_title="ratio of means", xaxis_type="log",
                      height=max(300, 28 * len(cmp) + 150))
    return fig


# -- rendering ----------------------------------------------------------------------------------

def applicable_notebooks(results: pd.DataFrame) -> list[str]:
    """The analyses a results table supports: scaling if disk counts vary within a layout, etc."""
    out = []
    if {"layout", "data_disks"} <= set(results) and (results.groupby("layout")["data_disks"].nunique() > 1).any():
        out.append("analysis-scaling")
    if any(c in results and results[c].nunique() > 1 for c in ("volblocksize_bytes", "recordsize_bytes")):
        out.append("analysis-volblocksize")
    if "layout" in results and results["layout"].nunique() > 1:
        out.append("analysis-compare")
    return out


def _conclusions(nb) -> list[str]:
    for cell in nb.cells:
        if "conclusions" in cell.get("metadata", {}).get("tags", []):
            text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")
            return [line[2:] if line.startswith("- ") else line for line in text.splitlines() if line.strip()]
    return []


def notebook_to_html(nb_path, html_path, meta: dict | None = None, show_code: bool = False) -> Path:
    """Render an executed notebook as one self-contained HTML page (code hidden by default)."""
    import nbformat
    from nbconvert import HTMLExporter
    nb = nbformat.read(str(nb_path), as_version=4)
    nb.metadata["zbench"] = dict(meta or {})
    exporter = HTMLExporter(template_name="zbench", extra_template_basedirs=[str(TEMPLATE_DIR)],
                            exclude_input=not show_code, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    Path(html_path).write_text(body, encoding="utf-8")
    return Path(html_path)


def render_report(sweep_dir, notebooks=None, include_flagged: bool = False, parameters=None,
                  show_code: bool = False, kernel_name: str | None = None, timeout: int = 1800) -> Path:
    """Execute the analysis notebooks on a sweep and write `<sweep_dir>/report/index.html`.

    `notebooks` defaults to those the sweep supports (`applicable_notebooks`).
    `parameters` maps a notebook name to extra papermill parameters. A notebook that
    fails still gets its page (with the traceback); a ZbenchError names the failures.
    """
    import nbformat
    import papermill as pm
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from zbench_lib import __version__
    sweep = load_sweep(sweep_dir)
    names = list(notebooks) if notebooks else applicable_notebooks(sweep.results)
    unknown = [n for n in names if not (NOTEBOOK_DIR / f"{n}.ipynb").exists()]
    if unknown or not names:
        raise ZbenchError(f"no such analysis notebook(s) {unknown} (have {list(ALL_NOTEBOOKS)})" if unknown
                          else f"{sweep.path}: no analysis applies (one layout, one disk count, one block size?)")
    out = sweep.path / "report"
    out.mkdir(exist_ok=True)
    sid = str(sweep.results["sweep_id"].iloc[0]) if "sweep_id" in sweep.results else sweep.path.name
    meta = dict(sweep_id=sid, synthetic=is_synthetic(sweep), version=__version__)
    entries, failed = [], []
    for name in names:
        src, executed = NOTEBOOK_DIR / f"{name}.ipynb", out / f"{name}.ipynb"
        declared = pm.inspect_notebook(str(src))
        params = {"sweep_dir": str(sweep.path), "include_flagged": bool(include_flagged),
                  **(parameters or {}).get(name, {})}
        params = {k: v for k, v in params.items() if k in declared}
        try:
            pm.execute_notebook(str(src), str(executed), parameters=params, kernel_name=kernel_name,
                                cwd=str(REPO_ROOT), progress_bar=False, execution_timeout=timeout)
            ok = True
        except pm.PapermillExecutionError as exc:
            failed.append(f"{name}: {exc.ename}: {exc.evalue}")
            ok = False
        notebook_to_html(executed, out / f"{name}.html", meta, show_code)
        entries.append(dict(title=TITLES.get(name, name), html=f"{name}.html", ipynb=f"{name}.ipynb",
                            failed=not ok, conclusions=_conclusions(nbformat.read(str(executed), 4))))
    env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), autoescape=select_autoescape(["html"]))
    page = env.get_template("index.html.j2").render(
        sweep_id=sid, synthetic=meta["synthetic"], question=str(sweep.spec.get("question", "")).strip(),
        surface=sweep.spec.get("surface", "(not declared)"), include_flagged=include_flagged,
        n_rows=len(sweep.results), n_flagged=int(sweep.results["flagged"].sum()),
        n_runs=sweep.results["run_id"].nunique() if "run_id" in sweep.results else len(sweep.results),
        entries=entries, environment=environment_table(sweep.provenance).itertuples(index=False))
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    if failed:
        raise ZbenchError(f"report written to {index}, but notebooks failed:\n  " + "\n  ".join(failed))
    return index


def main_report(argv=None) -> int:
    """`zbench report SWEEP_DIR [--notebooks a,b] [--include-flagged] [--show-code]`."""
    p = argparse.ArgumentParser(prog="zbench report",
                                description="Run the analysis notebooks on a sweep and write an HTML report.")
    p.add_argument("sweep_dir", help="sweep directory (spec.yaml, provenance.json, results.parquet)")
    p.add_argument("--notebooks", default="",
                   help=f"comma-separated subset of {','.join(ALL_NOTEBOOKS)} (default: those that apply)")
    p.add_argument("--include-flagged", action="store_true", help="analyse flagged runs too")
    p.add_argument("--show-code", action="store_true", help="keep the code cells in the HTML")
    args = p.parse_args(argv)
    try:
        index = render_report(args.sweep_dir, [n for n in args.notebooks.split(",") if n] or None,
                              include_flagged=args.include_flagged, show_code=args.show_code)
    except ZbenchError as exc:
        print(f"zbench report: {exc}", file=sys.stderr)
        return 2
    print(index)
    return 0


if __name__ == "__main__":
    sys.exit(main_report())
