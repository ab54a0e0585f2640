"""One plotly.js per report, notebook outputs made ready for HTML, and the single-file report.

    write_plotlyjs(out_dir)          report/plotly.min.js, the one copy every page references
    strip_embedded_plotlyjs(html)    drop a bundle a figure embedded itself (fig.show(), old outputs)
    prepare_notebook(nb)             outputs the report pages need: figures calling the shared
                                     plotly.js, the conclusions cell as an HTML list, no hint
                                     that the figures are static (a page's are interactive)
    conclusions_text(outputs)        the conclusions cell's "- " lines (its Markdown's plain text)
    single_file(out_dir, pages)      report.html: the index and every page in one self-contained file
    dir_size(path)                   bytes under a directory
"""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

from zbench_lib.analysis.report.notebook_display import TRUST_HINT_TAG

PLOTLY_JS = "plotly.min.js"
_EMBEDDED = re.compile(r"(<script[^>]*>\s*window\.PlotlyConfig\s*=[^<]*</script>\s*)?"
                       r"<script[^>]*>\s*/\*\*\s*\*\s*plotly\.js v[\d.]+[\s\S]*?</script>")
_SHARED_TAG = f'<script src="{PLOTLY_JS}"></script>'
PLOTLY_MIME = "application/vnd.plotly.v1+json"


def plotlyjs_source() -> str:
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def write_plotlyjs(out_dir) -> Path:
    """Write plotly.min.js into `out_dir` once (rewritten only when plotly's bundle changed)."""
    path = Path(out_dir) / PLOTLY_JS
    src = plotlyjs_source()
    if not path.exists() or path.stat().st_size != len(src.encode()):
        path.write_text(src, encoding="utf-8")
    return path


def strip_embedded_plotlyjs(text: str) -> str:
    return _EMBEDDED.sub("", text)


def _conclusions_html(text: str) -> str:
    items, current = [], None
    for line in text.splitlines():
        if line.startswith("- "):
            current = [line[2:].strip()]
            items.append(current)
        elif line.strip() and current is not None:
            current.append(line.strip())          # a wrapped continuation line
        elif line.strip():
            items.append([line.strip()])
    lis = "".join(f"<li>{html.escape(' '.join(i))}</li>" for i in items)
    return f'<ul class="zbench-conclusions">{lis}</ul>'


def prepare_notebook(nb):
    """A copy of an executed notebook whose outputs suit the report pages (see the module doc)."""
    import plotly.io as pio
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        outputs = cell.get("outputs", [])
        for out in outputs:
            data = out.get("data", {})
            if "text/html" in data:
                text = data["text/html"]
                data["text/html"] = strip_embedded_plotlyjs("".join(text) if isinstance(text, list) else text)
            elif PLOTLY_MIME in data:             # a figure shown without text/html: draw it from its JSON
                fig = pio.from_json(json.dumps(data[PLOTLY_MIME]), skip_invalid=True)
                data["text/html"] = fig.to_html(full_html=False, include_plotlyjs=False)
        if "outputs" in cell:
            outputs = cell["outputs"] = [o for o in outputs if o.get("metadata", {}).get("zbench") != TRUST_HINT_TAG]
        if "conclusions" in cell.get("metadata", {}).get("tags", []):
            text = conclusions_text(outputs)
            if text.strip():
                rest = [o for o in outputs if o.get("output_type") != "stream" and not _is_markdown(o)]
                cell["outputs"] = [dict(output_type="display_data", metadata={},
                                        data={"text/html": _conclusions_html(text), "text/plain": text})] + rest
    return nb


def _is_markdown(out) -> bool:
    """A Markdown output (with its plain text): what the conclusions cell displays."""
    return "text/markdown" in out.get("data", {})


def conclusions_text(outputs) -> str:
    """The conclusions cell's sentences as "- " lines: the plain text of its Markdown, or (a notebook executed
    before they were Markdown) what it printed."""
    printed = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    plain = ["".join(o["data"].get("text/plain", "")) for o in outputs if _is_markdown(o)]
    return "\n".join(plain) if plain else printed


def dir_size(path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def _body(page: str) -> str:
    m = re.search(r"<body[^>]*>([\s\S]*)</body>", page)
    return m.group(1) if m else page


def _styles(page: str) -> list[str]:
    head = page.split("<body", 1)[0]
    return re.findall(r"<style[^>]*>[\s\S]*?</style>", head)


def single_file(out_dir, pages) -> Path:
    """report.html: index plus each page (`pages`: file names) as sections, plotly.js inline once."""
    out_dir = Path(out_dir)
    index = (out_dir / "index.html").read_text(encoding="utf-8")
    styles, sections = _styles(index), []
    for name in pages:
        page = (out_dir / name).read_text(encoding="utf-8")
        anchor = Path(name).stem
        styles += [s for s in _styles(page) if s not in styles]
        body = _body(page).replace("zbench-figure-", f"{anchor}-figure-").replace('href="index.html"', 'href="#top"')
        sections.append(f'<section id="{anchor}" class="zbench-section">{body}</section>')
        index = index.replace(f'href="{name}"', f'href="#{anchor}"')
    body = _body(index).replace(_SHARED_TAG, "")
    doc = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           + "\n".join(styles) + f"\n<script>{plotlyjs_source()}</script>\n</head>\n"
           + f'<body><div id="top"></div>{body}' + "".join(s.replace(_SHARED_TAG, "") for s in sections)
           + "</body>\n</html>\n")
    path = out_dir / "report.html"
    path.write_text(doc, encoding="utf-8")
    return path
