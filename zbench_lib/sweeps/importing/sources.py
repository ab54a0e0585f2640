"""The files an import reads and what their paths say: the source walked, a path pattern, a map.

The source is one file, or a directory whose ``*.json`` files are read (hidden files and directories
left out; fio writes JSON with ``--output-format=json`` whatever the name, so a map may name any file).

A **path pattern** is the files' path below the source with ``{name}`` where a field's value stands:
``{layout}/{disks}-disks/vbs-{volblocksize}/run-{rep}/fio.json``. A field matches one path segment's
text (no ``/``) and, used twice, the same text twice; ``*`` matches within a segment and ``**/`` any
directories. A file the pattern does not match is one line naming it; a pattern that matches no file
refuses the import.

A **map** gives the fields of each file by its path below the source: a CSV whose ``file`` column names
it and whose other columns are fields (an empty cell gives none), or a YAML mapping of file to fields (or
a list of mappings, each with its ``file``). A file both name gets both; a field both give differently is
one line naming the file. A file the map names must exist.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from zbench_lib.core.errors import ConfigError

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class SourceFile:
    """One file to import: where it is, its path below the source, and the fields its path or the map give."""
    path: Path
    rel: str
    fields: dict = field(default_factory=dict)      # name -> text (a path's) or value (a map's)


@dataclass(frozen=True)
class Problem:
    """A file left out, and why, in one line."""
    rel: str
    reason: str

    def line(self) -> str:
        return f"{self.rel}: {self.reason}"


def compile_pattern(pattern: str) -> re.Pattern:
    """The regular expression of a path pattern (see the module's text); ConfigError for a malformed one."""
    parts, seen, pos = [], set(), 0
    for m in _FIELD.finditer(pattern):
        parts.append(_literal(pattern[pos:m.start()]))
        name = m.group(1)
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>[^/]+?)")
        seen.add(name)
        pos = m.end()
    parts.append(_literal(pattern[pos:]))
    if "{" in "".join(_FIELD.sub("", pattern)) or "}" in _FIELD.sub("", pattern):
        raise ConfigError(f"path pattern {pattern!r}: a field is {{name}} (letters, digits, '_')")
    return re.compile("".join(parts))


def _literal(text: str) -> str:
    out = re.escape(text)
    return out.replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")


def candidates(src: Path) -> list[tuple[Path, str]]:
    """(path, path below the source) of every ``*.json`` file under `src`, sorted; `src` itself if a file."""
    if src.is_file():
        return [(src, src.name)]
    if not src.is_dir():
        raise ConfigError(f"import source {src}: no such file or directory")
    found = []
    for p in src.rglob("*"):
        rel = p.relative_to(src)
        if p.is_file() and p.suffix.lower() == ".json" and not any(s.startswith(".") for s in rel.parts):
            found.append((p, rel.as_posix()))
    return sorted(found, key=lambda item: item[1])


def _map_rows(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        if rows and "file" not in rows[0]:
            raise ConfigError(f"map {path}: a CSV map needs a 'file' column (the file's path below the source)")
        return [{k: v for k, v in r.items() if k and v not in (None, "")} for r in rows]
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"map {path} is not valid YAML: {' '.join(str(e).split())[:200]}") from None
    if isinstance(doc, dict):
        doc = [{"file": k, **(v or {})} for k, v in doc.items()]
    if not isinstance(doc, list) or not all(isinstance(r, dict) and "file" in r for r in doc):
        raise ConfigError(f"map {path}: expected a mapping of file to fields, or a list of mappings with 'file'")
    return doc


def read_map(path) -> dict[str, dict]:
    """{file below the source: its fields} of a CSV or YAML map; ConfigError in one line."""
    out: dict[str, dict] = {}
    for row in _map_rows(Path(path)):
        rel = str(row.pop("file")).strip().removeprefix("./")
        if rel in out:
            raise ConfigError(f"map {path}: {rel} is listed twice")
        out[rel] = row
    return out


def _fields(rel: str, regex: re.Pattern | None, mapped: dict | None) -> dict | str:
    """A file's fields from the pattern and the map, or why it has none."""
    given: dict = {}
    if regex is not None:
        m = regex.fullmatch(rel)
        if m is None:
            return "does not match the path pattern"
        given = dict(m.groupdict())
    for k, v in (mapped or {}).items():
        if k in given and str(given[k]) != str(v):
            return f"{k} is {given[k]!r} in its path but {v!r} in the map"
        given[k] = v
    return given


def sources(src, pattern: str | None = None, map_path=None) -> tuple[list[SourceFile], list[Problem]]:
    """The files to import under `src` with their fields, and the files left out (each with its reason)."""
    src = Path(src)
    regex = compile_pattern(pattern) if pattern else None
    mapped = read_map(map_path) if map_path else None
    found = dict((rel, p) for p, rel in candidates(src))
    for rel in mapped or {}:
        if rel not in found:
            if not (src / rel).is_file():
                raise ConfigError(f"map: {rel} is not a file under {src}")
            found[rel] = src / rel
    files, problems = [], []
    for rel in sorted(found):
        got = _fields(rel, regex, (mapped or {}).get(rel)) if mapped is None or rel in mapped else \
            "not in the map"
        if isinstance(got, str):
            problems.append(Problem(rel, got))
        else:
            files.append(SourceFile(found[rel], rel, got))
    if (regex is not None or mapped is not None) and not files:
        raise ConfigError(f"import source {src}: no file matches "
                          + (f"the path pattern {pattern!r}" if regex is not None else "the map"))
    return files, problems
