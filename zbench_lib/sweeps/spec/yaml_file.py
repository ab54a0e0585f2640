"""Reading a spec's YAML safely: bounded bytes, UTF-8, no anchors or aliases, one-line errors.

A spec is small, hand-written data, so the loader refuses what such a file never needs
and what makes a parser expensive: anchors and aliases (a 1.2 KB "billion laughs" of
nested aliases expands to gigabytes), nesting deeper than ``MAX_DEPTH``, more than
``MAX_NODES`` values, duplicate keys (YAML keeps the last one silently) and files over
``MAX_SPEC_BYTES``. Every failure is a
ConfigError of one line, with the line and column where the parser stopped.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from zbench_lib.core.errors import ConfigError

MAX_SPEC_BYTES = 1024 * 1024        # 1 MiB; the shipped specs are under 2 KB
MAX_DEPTH = 32                      # nesting of mappings and lists
MAX_NODES = 20_000                  # scalars, lists and mappings (the shipped specs have < 200)


def _where(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "an unknown place"


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader without anchors, aliases, deep nesting or duplicate keys."""

    _depth = _nodes = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ConfigError(f"spec: YAML anchors and aliases (&name, *name, <<: *name) are not allowed "
                              f"(at {_where(event.start_mark)}); write the values out")
        self._depth += 1
        self._nodes += 1
        try:
            if self._nodes > MAX_NODES:
                raise ConfigError(f"spec: more than {MAX_NODES:,} values (at {_where(event.start_mark)}); "
                                  "a sweep spec is a few lines")
            if self._depth > MAX_DEPTH:
                raise ConfigError(f"spec: nested more than {MAX_DEPTH} levels deep (at {_where(event.start_mark)})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                raise ConfigError(f"spec: a mapping key must be a plain value, not {type(key).__name__} "
                                  f"(at {_where(key_node.start_mark)})") from None
            if duplicate:
                raise ConfigError(f"spec: duplicate key {key!r} (at {_where(key_node.start_mark)})")
        return super().construct_mapping(node, deep=deep)


def _one_line(e: yaml.YAMLError) -> str:
    problem = getattr(e, "problem", None)
    mark = getattr(e, "problem_mark", None)
    if problem:
        context = getattr(e, "context", None)
        text = f"{context + ': ' if context else ''}{problem} (at {_where(mark)})"
    else:
        text = str(e)
    return " ".join(text.split())[:300]


def load_yaml(text: str):
    """The document in ``text``, or a one-line ConfigError."""
    if not isinstance(text, str):
        raise ConfigError(f"spec: expected YAML text, got {type(text).__name__}")
    if len(text) > MAX_SPEC_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_SPEC_BYTES:
        raise ConfigError(f"spec: larger than {MAX_SPEC_BYTES // 1024} KiB; a sweep spec is a few lines")
    try:
        return yaml.load(text, Loader=_SpecLoader)     # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as e:
        raise ConfigError(f"spec is not valid YAML: {_one_line(e)}") from None
    except RecursionError:
        raise ConfigError(f"spec: nested too deeply (more than {MAX_DEPTH} levels)") from None


def read_spec_text(path: Path) -> str:
    """A spec file's text: at most MAX_SPEC_BYTES, strict UTF-8 (a BOM is allowed)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SPEC_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read sweep spec {path}: {e.strerror or e}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise ConfigError(f"sweep spec {path}: larger than {MAX_SPEC_BYTES // 1024} KiB; a sweep spec is a few lines")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError(f"sweep spec {path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}, "
                          f"line {line})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")     # as Path.read_text gives it
