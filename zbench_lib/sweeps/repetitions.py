"""How many times a cell is measured: the repetition rule of a sweep."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


def relative_ci_halfwidth(values, conf: float = 0.95) -> float:
    """Half-width of the t-based CI of the mean, divided by |mean|.

    Returns inf with fewer than 2 values or a zero mean: the precision is not yet
    known, so an adaptive loop keeps running.

    Examples
    --------
    >>> round(relative_ci_halfwidth([100, 110, 90]), 4)
    0.2484
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2 or v.mean() == 0:
        return math.inf
    half = sps.t.ppf((1 + conf) / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(half / abs(v.mean()))


@dataclass(frozen=True)
class AdaptiveRule:
    """Stop repeating a cell once the relative 95% CI half-width reaches the target."""
    min: int = 3
    max: int = 10
    target_rel_ci: float = 0.05

    @classmethod
    def from_spec(cls, spec) -> "AdaptiveRule":
        r = spec.repetitions
        return cls(r["min"], r["max"], r["target_rel_ci"])

    def decide(self, values) -> tuple[bool, str]:
        """(run another repetition?, why) from the primary metric of the runs so far."""
        n, target = len(values), f"{self.target_rel_ci * 100:g}%"
        if n < self.min:
            return True, f"min runs not reached ({n} of {self.min})"
        rel = relative_ci_halfwidth(values)
        shown = f"{rel * 100:.1f}%" if math.isfinite(rel) else "undefined"
        if rel <= self.target_rel_ci:
            return False, f"reached target: rel CI half-width {shown} <= {target} after {n} runs"
        if n >= self.max:
            return False, f"hit max {self.max} runs (rel CI {shown})"
        return True, f"rel CI half-width {shown} > {target} after {n} runs"
