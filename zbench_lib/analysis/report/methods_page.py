"""The methods shipped with a report as a page of their own, and "methods §N" linked to it.

A report read away from the repository (a reviewer's copy, a published bundle) cannot follow
"docs/methods.md §17" (issue 31): the report carries methods.html, each section with an anchor
(`#s17`, `#s7.1`), and every "methods §N" or "docs/methods.md §N" on its pages links there.

    write_methods(out_dir)     report/methods.html from docs/methods.md
    methods_links(text)        escaped text with each "§N" reference a link (a Jinja filter)
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from markupsafe import Markup

from zbench_lib.core.paths import REPO_ROOT

METHODS_MD = REPO_ROOT / "docs" / "methods.md"
METHODS_HTML = "methods.html"
_REF = re.compile(r"(?:docs/methods\.md\s*|methods\s+)?§(\d+(?:\.\d+)?)")
_HEADING = re.compile(r"<h([23])>§(\d+(?:\.\d+)?)")


def methods_links(text) -> Markup:
    """`text` escaped, with "methods §17", "docs/methods.md §17" or a bare "§17" linked to methods.html#s17.

    Examples
    --------
    >>> str(methods_links("a verdict (docs/methods.md §17) & more"))
    'a verdict (<a href="methods.html#s17">methods §17</a>) &amp; more'
    """
    escaped = html.escape(str(text or ""), quote=False)
    return Markup(_REF.sub(lambda m: f'<a href="{METHODS_HTML}#s{m.group(1)}">methods §{m.group(1)}</a>', escaped))


def write_methods(out_dir, source: Path = METHODS_MD) -> Path:
    """methods.html in `out_dir`: docs/methods.md rendered, each § heading with its anchor."""
    import mistune
    body = mistune.html(Path(source).read_text(encoding="utf-8"))
    body = _HEADING.sub(lambda m: f'<h{m.group(1)} id="s{m.group(2)}">§{m.group(2)}', body)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>zbench methods</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.5}"
            "pre,code{background:#f4f4f4}table{border-collapse:collapse}td,th{border:1px solid #ddd;"
            "padding:0.2em 0.5em}</style></head><body>\n<p><a href=\"index.html\">back to the report</a></p>\n"
            + body + "\n</body></html>\n")
    path = Path(out_dir) / METHODS_HTML
    path.write_text(page, encoding="utf-8")
    return path
