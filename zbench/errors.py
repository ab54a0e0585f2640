"""The API's one error type for bad input (its own module: `zbench` and `zbench.result` both raise it)."""

from __future__ import annotations

from zbench_lib.core.errors import ConfigError


class InvalidInput(ConfigError):
    """Bad input to the API or the explorer: the spec validator's one-line message, shown as one line
    in a notebook too (no traceback: the message says what to change)."""

    def _render_traceback_(self):
        return [f"InvalidInput: {self}"]
