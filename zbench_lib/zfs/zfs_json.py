"""OpenZFS 2.3 `-j` output: pick the one named object out of a JSON document."""

from __future__ import annotations

import json

from zbench_lib.core.errors import ZbenchError


def pick(text: str, top: str, name: str | None, what: str) -> tuple[str, dict]:
    """(name, object) from `doc[top]`; with no name there must be exactly one object."""
    try:
        objects = json.loads(text)[top]
    except (ValueError, KeyError, TypeError) as e:
        raise ZbenchError(f"not {what} JSON: {e}") from None
    if name is None:
        if len(objects) != 1:
            raise ZbenchError(f"{what} JSON has {top} {sorted(objects)}; say which one")
        name = next(iter(objects))
    if name not in objects:
        raise ZbenchError(f"{name!r} not in {what} JSON (has {sorted(objects)})")
    return name, objects[name]
