"""The sections an analysis notebook reads in, like a paper (issue 32, item 3).

The question, what runs were lost (`data_quality`) and the answer come first, in the report's own words and
figure (`headline.study_headline`: one builder, so the notebook and the report's index cannot disagree); the
truth checks follow as counts in one paragraph, the checks, the excluded runs and the planned cells folded
under it; wide tables show a few one-line columns (`table_format.Compact`); the classic claims and the
conclusions are Markdown, so they wrap between words like prose (printed, JupyterLab broke them anywhere:
"mir|ror").

    answer_first(sweep, adm, include_flagged, focus)   the question, the runs lost and the answer (Markdown);
                                                       the headline
    headline_figure(head)                              its figure, after the one-line hint of an untrusted notebook
    truth_checks(results, cells, include_flagged)      the counts, and each check, excluded run and cell folded
    compact(df, how, title)                            a wide table in short rows (folded when long)
    comparison_table(cmp)                              how a comparison table reads (a `Compact`)
    claims(found, sweep)                               the classic claims' verdicts, as Markdown
    conclusions(sentences, sweep)                      the conclusions, as Markdown (text/plain: "- " lines,
                                                       which the report lifts onto its index)
"""

from __future__ import annotations

import html
import re

import pandas as pd

from zbench_lib.analysis.data.flags import flagged_runs, raised_by_kind, truth_summary
from zbench_lib.analysis.data.columns import CONFIG_COLUMNS
from zbench_lib.analysis.data.sweep_data import Sweep, varying_columns
from zbench_lib.analysis.report.data_quality import data_quality, quality_markdown, quality_text
from zbench_lib.analysis.report.headline import Focus, study_headline
from zbench_lib.analysis.report.notebook_display import is_synthetic, remember, show, sweep_id, trust_hint
from zbench_lib.analysis.report.stamp import caveat_line
from zbench_lib.analysis.report.table_format import Compact, compact_html
from zbench_lib.measure.judging import DESCRIBES, INVALIDATES

FOLD_ROWS = 24          # a table longer than this is folded under a line that says what it holds
SYNTHETIC = "SYNTHETIC DATA: made up to test the analysis mechanics, not measured. Nothing below is a result."
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|#])")


def md_escape(text: str) -> str:
    """`text` as literal Markdown: 'p < 0.01', 'not_steady' and '2*n' stay as written."""
    return _MARKDOWN.sub(r"\\\1", str(text))


def _display(markdown: str, plain: str) -> None:
    from IPython.display import display
    display({"text/markdown": markdown, "text/plain": plain}, raw=True)


def answer_markdown(sweep: Sweep, head: dict, include_flagged: bool) -> tuple[str, str]:
    """The question, what runs were lost (`data_quality`: a banner, or one quiet line) and the answer as
    (Markdown, plain text): the report's sentences, then how to read them."""
    df = sweep.results
    question = str(sweep.spec.get("question", "(no question written)")).strip()
    quality = data_quality(sweep, include_flagged)
    answers = [(a["subject"], a["text"]) for a in head["answers"]] or \
        [("No answer", "these runs make no study this notebook answers (see the tables below).")]
    about = f"Sweep {sweep_id(sweep)} · surface {sweep.spec.get('surface', '(not declared)')}. {caveat_line(df)}"
    lead = [SYNTHETIC] if is_synthetic(sweep) else []
    markdown = "\n\n".join([f"**{md_escape(t)}**" for t in lead] + [
        f"**Question:** {md_escape(question)}", quality_markdown(quality, md_escape), "**Answer:**\n\n" + "\n".join(
            f"- **{md_escape(s)}:** {md_escape(t)}" for s, t in answers),
        f"<small>{md_escape(head['note'])} {md_escape(about)}</small>"])
    plain = "\n".join(lead + [f"Question: {question}", quality_text(quality), "Answer:"]
                      + [f"- {s}: {t}" for s, t in answers] + [f"{head['note']} {about}"])
    return markdown, plain


def answer_first(sweep: Sweep, adm: pd.DataFrame, include_flagged: bool = False, focus: Focus = Focus()) -> dict:
    """Show the sweep's question and the answer to it (`study_headline` of the admissible runs `adm`, for the
    study `focus` names) as Markdown; return the headline, whose figure `headline_figure` draws."""
    remember(sweep)
    head = study_headline(sweep, adm, include_flagged, focus)
    _display(*answer_markdown(sweep, head, include_flagged))
    return head


def headline_figure(head: dict) -> None:
    """The headline's figure (nothing if it has none), after the hint an untrusted notebook shows."""
    if head["figure"] is not None:
        trust_hint()
        show(head["figure"])


def _fold(summary: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{html.escape(summary)}</summary>{body}</details>"


def _raised(results: pd.DataFrame, kind: str) -> str:
    """'host_contention 2, not_steady 1': the checks raised as `kind` (a device lost in a fault study describes),
    each with its runs."""
    hits = raised_by_kind(results, kind)
    per_run = hits.groupby(results["run_id"] if "run_id" in results else results.index).any().sum()
    return ", ".join(f"{c.removeprefix('flag_')} {int(n)}" for c, n in per_run.items() if n > 0)


def truth_lead(results: pd.DataFrame, cells: pd.DataFrame, include_flagged: bool) -> str:
    """The truth checks' counts in two sentences (plain text)."""
    rows = truth_summary(results).set_index("flag")
    runs = int(rows["runs"].iloc[0]) if len(rows) else 0
    excluded = int(rows.loc["flagged", "raised"]) if "flagged" in rows.index else 0
    described = int(rows.loc["described", "raised"]) if "described" in rows.index else 0
    inv, desc = _raised(results, INVALIDATES), _raised(results, DESCRIBES)
    judged = int(cells["judged"].sum()) if "judged" in cells else len(cells)
    return (f"{runs} runs checked: {excluded} with a check that invalidates them" + (f" ({inv})" if inv else "")
            + f", {'included in' if include_flagged else 'excluded from'} the analysis; {described} kept with a "
            "check that describes them" + (f" ({desc})" if desc else "") + ". "
            + f"{judged} of {len(cells)} planned cells judged.")


CHECKS_TABLE = Compact(("flag", "kind", "raised", "passed", "not_judged", "runs"),
                       notes=("meaning", "not_judged_reasons"))
EXCLUDED_TABLE = Compact(("run_id", "workload", "direction", "rep", "flags", "described"), notes=("not_judged",))


def cells_table(cells: pd.DataFrame) -> Compact:
    """The planned cells by what varies between them, their run counts, and each one's status as a note."""
    config = varying_columns(cells, exclude=("cell_id",))
    return Compact((*config, "runs_planned", "runs", "admissible", "excluded"), notes=("status",))


def comparison_table(cmp: pd.DataFrame) -> Compact:
    """A comparison (`compare_table`) in short rows: per held-equal group, each level against the baseline (n,
    means, the ratio with the interval that decided its verdict and that interval's level (methods §3.1),
    Holm's p, Hedges' g, the verdict); why not judged, the describing flags,
    the sensitivity lines, why no effect size and Mann-Whitney's note as numbered notes."""
    groups = tuple(c for c in cmp.columns if c in CONFIG_COLUMNS)
    # one baseline for every row is said once, in the table's title, not on each row
    base = ("baseline",) if "baseline" in cmp and cmp["baseline"].nunique() > 1 else ()
    decided = "decided_low" in cmp
    interval = ("ratio", "decided_low", "decided_high") if decided else ("ratio", "ratio_ci_low", "ratio_ci_high")
    return Compact((*groups, "level", *base, "n_level", "n_baseline", "mean_level", "mean_baseline", "ratio",
                    *(("decided_level",) if decided else ()), "holm_p", "hedges_g", "verdict"), intervals=(interval,),
                   notes=("note", "described", "sensitivity", "effect_size_note", "mannwhitney_note"))


def truth_checks_html(results: pd.DataFrame, cells: pd.DataFrame, include_flagged: bool = False) -> str:
    """The counts in a paragraph; each check, the excluded runs and the planned cells folded under it."""
    summ = truth_summary(results)
    excluded = flagged_runs(results)
    judged = int(cells["judged"].sum()) if "judged" in cells else len(cells)
    checks = summ[summ["flag"].str.startswith("flag_")]
    parts = [f"<p>{html.escape(truth_lead(results, cells, include_flagged))}</p>",
             _fold(f"Each check: runs raised, passed, not judged, and why ({len(checks)} checks)",
                   compact_html(summ, CHECKS_TABLE)),
             _fold(f"The {len(excluded)} excluded result rows", compact_html(excluded, EXCLUDED_TABLE))
             if len(excluded) else "",
             _fold(f"The planned cells: {judged} of {len(cells)} judged, each with its status",
                   compact_html(cells, cells_table(cells), max_rows=len(cells)))]
    return "".join(parts)


def truth_checks(results: pd.DataFrame, cells: pd.DataFrame, include_flagged: bool = False) -> None:
    """Show the truth checks: counts visible, reasons on demand (`truth_checks_html`)."""
    from IPython.display import display
    display({"text/html": truth_checks_html(results, cells, include_flagged),
             "text/plain": truth_lead(results, cells, include_flagged)}, raw=True)


def compact(df: pd.DataFrame, how: Compact, title: str) -> None:
    """Show `df` in short rows (`compact_html`) under its `title` (what a row is, what it is compared with),
    folded under "`title`: n rows" when longer than FOLD_ROWS."""
    from IPython.display import display
    body = compact_html(df, how, max_rows=max(len(df), 1))
    text = f"{title}: {len(df)} rows"
    page = _fold(text, body) if len(df) > FOLD_ROWS else f"<p><b>{html.escape(title)}</b></p>{body}"
    display({"text/html": page, "text/plain": text}, raw=True)


def claims_markdown(found: list[dict], synthetic: bool = False) -> tuple[str, str]:
    """The classic claims, each its verdict in bold and the reason, evidence and caveat beneath, as
    (Markdown, plain text)."""
    md, plain = [], []
    if synthetic:
        md.append("- **SYNTHETIC DATA:** the verdicts below test the mechanics; they are not findings.")
        plain.append("- SYNTHETIC DATA: the verdicts below test the mechanics; they are not findings.")
    for c in found:
        md.append(f"- **{md_escape(c['verdict'].capitalize())}:** {md_escape(c['claim'])}")
        plain.append(f"- {c['verdict'].upper()}: {c['claim']}")
        for key, label in (("reason", "Not judged:"), ("evidence", ""), ("caveat", "Caveat:")):
            if c.get(key):
                md.append(f"  - {f'*{label}* ' if label else ''}{md_escape(c[key])}")
                plain.append(f"  {f'{label} ' if label else ''}{c[key]}")
    if not found:
        md.append("No classic claim applies to this sweep.")
        plain.append(md[-1])
    return "\n".join(md), "\n".join(plain)


def claims(found: list[dict], sweep: Sweep) -> None:
    """Show the classic claims' verdicts on `sweep` as Markdown."""
    _display(*claims_markdown(found, is_synthetic(sweep)))


def conclusions(sentences: list[str], sweep: Sweep) -> None:
    """Show the conclusions on `sweep` as a Markdown list; the plain text is the same list, a "- " line per
    sentence (what the report lifts onto its index)."""
    lines = (["SYNTHETIC DATA: the sentences below test the mechanics; they are not findings."]
             if is_synthetic(sweep) else []) + list(sentences)
    _display("\n".join(f"- {md_escape(s)}" for s in lines), "\n".join(f"- {s}" for s in lines))
