"""Reports: run the analysis notebooks with papermill and write an HTML report directory.

`render_report(sweep_dir)` executes each chosen notebook into `<sweep_dir>/report/`
(the executed .ipynb is kept next to its HTML), renders it with nbconvert with the
code hidden, and writes an index page (`render_index`): the question, what runs were lost and how to
measure them again (`data_quality`: a banner, or one quiet line), the answer and the headline figure of
the study type (`headline.study_headline`), the classic claims the sweep can speak to with their verdicts
(`classic_claims.classic_claims`), the resilver study's section when the sweep timed resilvers
(`resilver.resilver_section`), latency at a stated load when it has the load factor
(`load_section.load_section`), the environment in a dozen lines (the full record behind a disclosure), the
summary table (folded; sorted and filtered in the page by the inline templates/report/table_tools.js; with
its Markdown, CSV and LaTeX exports), and each notebook's conclusions. A sweep no notebook applies to but
with resilver events or the load factor gets the index page alone. Nothing is fetched from the network: the
`zbench` nbconvert template drops require.js, MathJax and mermaid, and every page loads the report's one
`plotly.min.js`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from zbench_lib.analysis.claims.caveats import caveats
from zbench_lib.analysis.claims.classic_claims import classic_claims
from zbench_lib.analysis.data.flags import select_admissible
from zbench_lib.analysis.data.columns import LAYOUT_COLUMNS
from zbench_lib.analysis.data.sweep_data import (Sweep, data_disks_vary, environment_table, load_sweep, read_events,
                                                varying_columns)
from zbench_lib.analysis.figures.plot_base import add_caption
from zbench_lib.analysis.report.compare_factor import auto_factor
from zbench_lib.analysis.report.env_summary import environment_summary
from zbench_lib.analysis.report.headline import study_headline
from zbench_lib.analysis.report.client_section import client_section
from zbench_lib.analysis.report.data_quality import data_quality, quality_html
from zbench_lib.analysis.report.load_section import METHOD as LOAD_METHOD
from zbench_lib.analysis.report.load_section import LINE_NOTE, has_load, load_answers, load_details, load_section
from zbench_lib.analysis.report.methods_page import methods_links, write_methods
from zbench_lib.analysis.report.notebook_display import figure_caption, is_synthetic, sweep_id
from zbench_lib.analysis.report.pub_tables import export_table, summary_table, write_tables
from zbench_lib.analysis.report.notebook_params import check_parameters
from zbench_lib.analysis.report.report_assets import (PLOTLY_JS, conclusions_text, prepare_notebook, single_file,
                                                      write_plotlyjs)
from zbench_lib.analysis.report.resilver import resilver_section, resilver_table
from zbench_lib.analysis.report.stamp import caveat_line, zbench_stamp
from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.paths import REPO_ROOT

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
TEMPLATE_DIR = REPO_ROOT / "templates" / "report"
ALL_NOTEBOOKS = ("analysis-scaling", "analysis-volblocksize", "analysis-compare")
TITLES = {"analysis-scaling": "Scaling per data disk", "analysis-volblocksize": "volblocksize",
          "analysis-compare": "Comparisons along one factor"}
LOG_NAME = "report-errors.log"
# The fold under a load sweep's short answer lines: what it holds, by where its sentences come from.
DETAIL_STUDY = "Each load in detail: p99 and p99.9 with their 95% intervals, and the levels compared at saturation"
DETAIL_CURVES = "Each curve in detail: every p99 with its 95% interval and its load, and why a knee is not judged"


@dataclass
class ReportOptions:
    """What `zbench report` can ask for beyond the sweep directory."""
    notebooks: list[str] | None = None       # default: those the sweep supports
    include_flagged: bool = False
    parameters: dict = field(default_factory=dict)   # notebook -> {parameter: value}
    compare: str | None = None               # another sweep directory (analysis-compare)
    timeline: str | None = None              # run_id drawn layer by layer
    figures: tuple = ()                      # static formats: png, svg
    single_file: bool = False                # also report.html, self-contained
    show_code: bool = False
    kernel_name: str | None = None
    timeout: int = 1800


def applicable_notebooks(results: pd.DataFrame) -> list[str]:
    """The analyses a results table supports: scaling if disk counts vary within a layout, etc."""
    out = []
    if "load" in results and results["load"].nunique() > 1:
        # Loads are levels of one curve, not replicates: the scaling and volblocksize notebooks would pool
        # them as runs of one configuration. The compare notebook holds the load equal (compare_table), and
        # the index page's latency-at-load section, with its answers at each load, is the rest.
        return ["analysis-compare"] if auto_factor(results) is not None or _block_varies(results) else []
    if data_disks_vary(results):
        out.append("analysis-scaling")
    if _block_varies(results) and _block_maps_fit(results):
        out.append("analysis-volblocksize")
    if auto_factor(results) is not None:      # layout, release, sync, log, cache, model, fs, ...
        out.append("analysis-compare")
    return out


def _block_maps_fit(results: pd.DataFrame) -> bool:
    """Whether the block-size notebook's maps (a row per pool shape, a column per block size, a map per
    workload and direction) hold each configuration once: nothing else varies within a workload (an
    imported sweep's kernel label, a sync level beside the block sizes). The compare notebook holds such a
    factor equal instead."""
    within = [c for c in ("workload", "direction") if c in results]
    shape = (*LAYOUT_COLUMNS, "layout_label", "volblocksize_bytes", "recordsize_bytes", "workload", "direction",
             "sweep_id")
    extra = varying_columns(results, exclude=shape)
    if not within:
        return not extra
    return not any((results.groupby(within)[c].nunique(dropna=False) > 1).any() for c in extra)


def _block_varies(results: pd.DataFrame) -> bool:
    return any(c in results and results[c].nunique() > 1 for c in ("volblocksize_bytes", "recordsize_bytes"))


def notebook_name(text: str) -> str:
    """'scaling' or 'analysis-scaling' -> 'analysis-scaling'."""
    name = text if text.startswith("analysis-") else f"analysis-{text}"
    if name not in ALL_NOTEBOOKS:
        raise ConfigError(f"no analysis notebook {text!r}; have {', '.join(ALL_NOTEBOOKS)}")
    return name


def parse_param(text: str) -> tuple[str, str, object]:
    """'scaling:metric=bw_bytes_s' -> ('analysis-scaling', 'metric', 'bw_bytes_s'); values as YAML."""
    import yaml
    head, eq, value = text.partition("=")
    nb, colon, key = head.partition(":")
    if not (eq and colon and nb.strip() and key.strip()):
        raise ConfigError(f"--param {text!r}: write notebook:key=value, e.g. scaling:metric=bw_bytes_s")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value
    return notebook_name(nb.strip()), key.strip(), parsed


def _conclusions(nb) -> list[str]:
    for cell in nb.cells:
        if "conclusions" in cell.get("metadata", {}).get("tags", []):
            text = conclusions_text(cell.get("outputs", []))
            return [line[2:] if line.startswith("- ") else line for line in text.splitlines() if line.strip()]
    return []


def notebook_to_html(nb_path, html_path, meta: dict | None = None, show_code: bool = False) -> Path:
    """Render an executed notebook as an HTML page of the report (code hidden by default)."""
    import nbformat
    from nbconvert import HTMLExporter
    nb = prepare_notebook(nbformat.read(str(nb_path), as_version=4))
    nb.metadata["zbench"] = dict(meta or {})
    exporter = HTMLExporter(template_name="zbench", extra_template_basedirs=[str(TEMPLATE_DIR)],
                            exclude_input=not show_code, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    Path(html_path).write_text(body, encoding="utf-8")
    return Path(html_path)


def _parameters(sweep: Sweep, names, opts: ReportOptions) -> dict:
    """Papermill parameters per notebook; unknown notebooks, parameters or runs are refused."""
    import papermill as pm
    params = {}
    for n, extra in opts.parameters.items():
        if n not in names:
            raise ConfigError(f"--param for {n}, which this report does not run (it runs {', '.join(names)})")
    if opts.timeline and "run_id" in sweep.results and opts.timeline not in set(sweep.results["run_id"]):
        some = ", ".join(sorted(sweep.results["run_id"].unique())[:3])
        raise ConfigError(f"--timeline {opts.timeline!r} is not a run of {sweep.path.name} (runs look like {some})")
    for name in names:
        declared = pm.inspect_notebook(str(NOTEBOOK_DIR / f"{name}.ipynb"))
        base = {"sweep_dir": str(sweep.path), "include_flagged": bool(opts.include_flagged)}
        if opts.timeline:
            base["timeline_run"] = opts.timeline
        if opts.compare and name == "analysis-compare":
            base["other_sweep_dir"] = str(Path(opts.compare).resolve())
        params[name] = {k: v for k, v in base.items() if k in declared}
        unknown = [k for k in opts.parameters.get(name, {}) if k not in declared]
        if unknown:
            raise ConfigError(f"{name} has no parameter {', '.join(unknown)}; it has {', '.join(declared)}")
        params[name].update(opts.parameters.get(name, {}))
    return params


def _index_extras(sweep: Sweep, out: Path, opts: ReportOptions, sid: str) -> dict:
    """The index page's parts: the answer and its headline figure (`headline.study_headline`), the
    classic claims, the environment, the summary table and its exports, the resilver section.

    `static` lists the (file stem, figure) pairs that `--figures` saves.
    """
    df = sweep.results
    note = (f"Sweep {sid}. Mean over n admissible runs; 95% CI of the mean in the metric each "
            "workload is judged in (MiB/s sequential, IOPS random; methods §9); "
            + ("flagged runs included." if opts.include_flagged else "runs flagged by a truth check excluded.")
            + f" {caveat_line(df)} {zbench_stamp()}.")
    table = summary_table(df, opts.include_flagged, hist=sweep.histograms)
    write_tables(table, out, title=f"zbench summary: {sid}", source_note=note)
    adm = select_admissible(df, opts.include_flagged)
    study = study_headline(sweep, adm, opts.include_flagged)
    extras = dict(environment_lines=environment_summary(sweep.provenance, df, sweep.spec.get("surface", ""),
                                                        read_events(sweep.path) if sweep.path else []),
                  summary_html=export_table(table, "html", title="Summary per configuration", source_note=note),
                  headline_html="", static=[], caveats=caveats(df), answers=study["answers"],
                  quality_html=quality_html(data_quality(sweep, opts.include_flagged)),
                  answers_note=study["note"], study_kind=study["kind"],
                  classic_claims=classic_claims(df, opts.include_flagged, sweep.histograms))
    fig = study["figure"]
    if fig is not None:
        add_caption(fig, figure_caption(fig.layout.title.text or "", [sweep]))
        extras["headline_html"] = fig.to_html(full_html=False, include_plotlyjs=False, div_id="zbench-headline",
                                              config={"displaylogo": False, "responsive": True})
        extras["static"].append((f"index-01-{study['kind']}-headline", fig))
    extras["resilver_html"], fig = resilver_section(resilver_table(sweep.path), f"Sweep {sid}.")
    if fig is not None:
        extras["static"].append(("index-02-resilver", fig))
    extras["clients_html"] = client_section(adm, sweep.clients, sweep.histograms, f"Sweep {sid}.",
                                            sweep.client_histograms)
    extras["load_html"], fig = load_section(adm, sweep.histograms, f"Sweep {sid}.")
    if fig is not None:
        extras["static"].append(("index-03-latency-vs-load", fig))
        if not extras["answers"] or adm["load"].nunique() > 1:
            extras.update(_load_first(extras, adm, sweep.histograms))
    return extras


def _load_first(extras: dict, adm: pd.DataFrame, hist) -> dict:
    """The first screen of a sweep whose question is the load (its only study, or several load levels): a short
    line per curve answers it, and the per-load answers the study gave (else each curve's sentence) are its
    details, folded, with every interval and reason; the latency-vs-load section comes before the study's
    headline figure (`load_first`), as the lines read off it."""
    detail = (extras["answers"], extras["answers_note"], DETAIL_STUDY) if extras["answers"] else \
        (load_details(adm, hist), LOAD_METHOD, DETAIL_CURVES)
    return dict(answers=load_answers(adm, hist), answers_note=LINE_NOTE, answers_detail=detail[0],
                detail_note=detail[1], detail_summary=detail[2], load_first=True)


def check_notebook_values(name: str, params: dict) -> None:
    """Check a notebook's parameters (its own defaults, overridden by `params`) as its validation cell does,
    in this process: `notebook_params.check_parameters`, the one call that cell makes.

    A bad --param value was found by the kernel after minutes of work, once the good report was gone
    (issue 31); the same call refuses it before anything runs, with the kernel's one-line message.
    """
    import nbformat
    nb = nbformat.read(str(NOTEBOOK_DIR / f"{name}.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    scope: dict = {}
    exec(compile(cell.source, f"{name}:parameters", "exec"), scope)   # noqa: S102 (the repository's own notebook)
    check_parameters(name, {**scope, **params})


def _check_compare(path) -> None:
    if path is not None and not (Path(path) / "results.parquet").is_file() \
            and not (Path(path) / "results.csv").is_file():
        raise ConfigError(f"--compare {path}: not a sweep directory (no results.parquet or results.csv)")


def _replace_dir(new: Path, final: Path) -> None:
    """Put the complete report `new` in place of `final`: the old one is moved aside first, removed last."""
    import shutil
    old = final.with_name(f".{final.name}-old-{os.getpid()}")
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def render_report(sweep_dir, notebooks=None, include_flagged: bool = False, parameters=None,  # noqa: PLR0913 (the keyword shorthand of ReportOptions)
                  show_code: bool = False, kernel_name: str | None = None, timeout: int = 1800,
                  options: ReportOptions | None = None, progress=None) -> Path:
    """Execute the analysis notebooks on a sweep and write `<sweep_dir>/report/index.html`.

    `options` (a ReportOptions) carries everything; the keyword arguments are its
    shorthand. Every argument is checked before any work (the notebooks, --compare, each
    --param against the notebook's own validation cell); the report is built in a hidden
    directory beside it and replaces the old one only once complete. `progress(text)`, if
    given, hears each step. A notebook that fails still gets its page (with the traceback, which also
    goes to report/report-errors.log); a ZbenchError names the failures in one line.
    """
    import shutil
    import tempfile
    opts = options or ReportOptions(notebooks=notebooks, include_flagged=include_flagged,
                                    parameters=parameters or {}, show_code=show_code,
                                    kernel_name=kernel_name, timeout=timeout)
    say = progress or (lambda text: None)
    sweep = load_sweep(sweep_dir)
    # What the admissible runs support: a notebook over runs that are all flagged has nothing to say.
    admissible = select_admissible(sweep.results, opts.include_flagged)
    names = [notebook_name(n) for n in opts.notebooks] if opts.notebooks else applicable_notebooks(admissible)
    if opts.compare and "analysis-compare" not in names:
        names.append("analysis-compare")
    if not names and resilver_table(sweep.path).empty and not has_load(admissible):
        if applicable_notebooks(sweep.results):
            raise ZbenchError(f"{sweep.path}: every run that would be analysed was flagged by a truth check "
                              "(see results' truth_flags); --include-flagged analyses them anyway")
        raise ZbenchError(f"{sweep.path}: no analysis applies (one layout, one disk count, one block size?)")
    _check_compare(opts.compare)
    params = _parameters(sweep, names, opts)
    for name in names:
        check_notebook_values(name, params[name])
    final = sweep.path / "report"
    work = Path(tempfile.mkdtemp(prefix=".report-new-", dir=sweep.path))
    try:
        failed = _build(sweep, names, params, opts, work, say)
        _replace_dir(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    index = final / "index.html"
    if failed:
        raise ZbenchError(f"report written to {index}, but {len(failed)} notebook(s) failed: "
                          + "; ".join(failed) + f" (tracebacks: {final / LOG_NAME})")
    return index


def render_index(**context) -> str:
    """The index page from templates/report/index.html.j2 (its script, table_tools.js, inline)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape
    env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), autoescape=select_autoescape(["html"]))
    env.filters["methods_links"] = methods_links
    return env.get_template("index.html.j2").render(**context)


def _build(sweep: Sweep, names: list[str], params: dict, opts: ReportOptions, out: Path, say) -> list[str]:
    """Every page of the report into `out`; the notebooks that failed, as 'name: error'."""
    import nbformat

    from zbench_lib import __version__
    from zbench_lib.analysis.figures.figures_static import export_notebook_figures, save_static
    from zbench_lib.sweeps.watching.notebook import NotebookFailed, execute_notebook
    write_plotlyjs(out)
    sid = sweep_id(sweep)
    meta = dict(sweep_id=sid, synthetic=is_synthetic(sweep), version=__version__, plotlyjs=PLOTLY_JS)
    entries, failed, figures = [], [], []
    for i, name in enumerate(names, start=1):
        executed, start = out / f"{name}.ipynb", time.monotonic()
        say(f"[{i}/{len(names)}] {name}: running")
        try:
            execute_notebook(NOTEBOOK_DIR / f"{name}.ipynb", executed, params[name], log=out / LOG_NAME,
                             name=name, cwd=REPO_ROOT, kernel_name=opts.kernel_name, timeout=opts.timeout)
            ok = True
        except NotebookFailed as exc:
            failed.append(f"{name}: {exc.error}")
            ok = False
        say(f"[{i}/{len(names)}] {name}: {'done' if ok else 'FAILED'} in {time.monotonic() - start:.0f} s")
        if not executed.exists():
            continue
        notebook_to_html(executed, out / f"{name}.html", meta, opts.show_code)
        nb = nbformat.read(str(executed), 4)
        if opts.figures:
            figures += export_notebook_figures(nb, out / "figures", opts.figures, prefix=name.replace("analysis-", ""))
        entries.append(dict(title=TITLES.get(name, name), html=f"{name}.html", ipynb=f"{name}.ipynb",
                            failed=not ok, conclusions=_conclusions(nb)))
    say("index page: the answer, the headline figure, the tables and their exports")
    extras = _index_extras(sweep, out, opts, sid)
    if opts.figures:
        figures = [p for stem, fig in extras["static"]
                   for p in save_static(fig, out / "figures" / stem, opts.figures)] + figures
    write_methods(out)
    page = render_index(
        sweep_id=sid, synthetic=meta["synthetic"], question=str(sweep.spec.get("question", "")).strip(),
        surface=sweep.spec.get("surface", "(not declared)"), include_flagged=opts.include_flagged,
        n_rows=len(sweep.results), n_flagged=int(sweep.results["flagged"].sum()),
        n_runs=sweep.results["run_id"].nunique() if "run_id" in sweep.results else len(sweep.results),
        entries=entries, fault_sweep=bool(sweep.spec.get("faults")),
        environment=environment_table(sweep.provenance).itertuples(index=False),
        figures=[p.relative_to(out).as_posix() for p in figures], plotlyjs=PLOTLY_JS, compare=opts.compare,
        caveat=caveat_line(sweep.results), stamp=zbench_stamp(),
        **{k: v for k, v in extras.items() if k != "static"})
    (out / "index.html").write_text(page, encoding="utf-8")
    if opts.single_file:
        single_file(out, [e["html"] for e in entries])
    return failed
