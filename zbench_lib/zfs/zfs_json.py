"""OpenZFS 2.3 `-j` output: pick the one named object out of a JSON document
(`pick_name` serves the text outputs of older releases too)."""

from __future__ import annotations

import json

from zbench_lib.core.errors import ZbenchError


def pick(text: str, top: str, name: str | None, what: str) -> tuple[str, dict]:
    """(name, object) from `doc[top]`; with no name there must be exactly one object."""
    try:
        objects = json.loads(text)[top]
    except (ValueError, KeyError, TypeError) as e:
        raise ZbenchError(f"not {what} JSON: {e}") from None
    name = pick_name(objects, name, f"{what} JSON")
    return name, objects[name]


def pick_name(names, name: str | None, what: str) -> str:
    """`name` if `names` holds it; with no name, the only one there is."""
    if name is None:
        if len(names) != 1:
            raise ZbenchError(f"{what} has {sorted(names)}; say which one")
        return next(iter(names))
    if name not in names:
        raise ZbenchError(f"{name!r} not in {what} (has {sorted(names)})")
    return name
