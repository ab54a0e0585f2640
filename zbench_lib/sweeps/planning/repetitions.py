"""How many times a cell is measured: Stein's two-stage rule, or a fixed design.

Only admissible runs count (a run whose primary row is flagged, i.e. a truth check that
invalidates it raised its flag, is excluded, and replaced while the cell's attempts allow;
a flag that only describes the run keeps it). Stein's rule (Stein 1945;
see docs "Spending repetitions well"): a pilot of n0 admissible runs gives the mean m0
and SD s0; the cell gets

    n = max(n0, ceil((t_{1-a/2, n0-1} * s0 / (target_rel_ci * m0))^2)), at most max,

and its interval keeps the pilot's quantile and SD: mean_n +- t_{1-a/2, n0-1} * s0 / sqrt(n)
(``stein_interval``). Because n depends only on the pilot, that interval has its nominal
coverage, unlike stopping as soon as the interval looks narrow (optional stopping).

``RepetitionRule.decide`` is pure: the executor and benchmarks/adaptive_repetitions.py
call it with the cell's completed runs and the reps still queued.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as sps

CONF = 0.95


def relative_ci_halfwidth(values, conf: float = CONF) -> float:
    """Half-width of the t-based CI of the mean, divided by |mean| (inf when undefined).

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


@lru_cache(maxsize=None)
def t_quantile(df: int, conf: float = CONF) -> float:
    """The two-sided ``conf`` quantile of Student's t with ``df`` degrees of freedom."""
    return float(sps.t.ppf((1 + conf) / 2, df))


def _mean_sd(values) -> tuple[float, float]:
    n = len(values)
    m = math.fsum(values) / n
    return m, math.sqrt(math.fsum((x - m) ** 2 for x in values) / (n - 1)) if n > 1 else math.nan


def stein_total(pilot, target_rel_ci: float, max_n: int, conf: float = CONF) -> dict:
    """Stein's total n from the pilot values, with everything an analysis must cite.

    >>> d = stein_total([100.0, 104.0, 96.0], 0.05, 10)
    >>> d["n0"], round(d["s0"], 3), round(d["t_quantile"], 3), d["n_required"], d["n"]
    (3, 4.0, 4.303, 12, 10)
    """
    n0 = len(pilot)
    m0, s0 = _mean_sd(pilot)
    t = t_quantile(n0 - 1, conf)
    if m0 > 0 and math.isfinite(s0):
        required = max(n0, math.ceil((t * s0 / (target_rel_ci * m0)) ** 2 - 1e-9))
    else:
        required = None             # relative precision undefined: spend the maximum
    n = max_n if required is None else min(required, max_n)
    return {"n0": n0, "mean0": m0, "s0": s0, "cov0": s0 / m0 if m0 else math.nan, "conf": conf,
            "t_df": n0 - 1, "t_quantile": t, "target_rel_ci": target_rel_ci, "n_required": required,
            "n": n, "capped": required is None or required > max_n}


def stein_interval(values, n0: int, conf: float = CONF) -> tuple[float, float, float]:
    """(mean, low, high): the mean of all values +- t_{n0-1} * s0 / sqrt(n), s0 from the first n0.

    >>> [round(x, 2) for x in stein_interval([100.0, 104.0, 96.0, 101.0], 3)]
    [100.25, 91.64, 108.86]
    """
    m, _ = _mean_sd(values)
    _, s0 = _mean_sd(list(values)[:n0])
    half = t_quantile(n0 - 1, conf) * s0 / math.sqrt(len(values))
    return m, m - half, m + half


def stein_log_ratio(a, b, n0: int, conf: float = CONF) -> tuple[float, float, float]:
    """(ratio, low, high) of mean(a)/mean(b) for two cells sized by Stein's rule with pilot n0.

    ln(mA/mB) +- t_{n0-1} * sqrt(s0A^2/(nA mA^2) + s0B^2/(nB mB^2)), with the pilot SDs; the
    pilot quantile keeps the type I error at or below nominal (the plain Welch test on all
    runs does not: benchmarks/adaptive_repetitions.py).
    """
    (ma, _), (mb, _) = _mean_sd(a), _mean_sd(b)
    sa, sb = _mean_sd(list(a)[:n0])[1], _mean_sd(list(b)[:n0])[1]
    half = t_quantile(n0 - 1, conf) * math.sqrt(sa ** 2 / (len(a) * ma ** 2) + sb ** 2 / (len(b) * mb ** 2))
    est = math.log(ma / mb)
    return math.exp(est), math.exp(est - half), math.exp(est + half)


@dataclass(frozen=True)
class Outcome:
    """A completed run as the rule sees it: its rep, primary metric and admissibility."""
    rep: int
    value: float | None
    admissible: bool
    why: str = ""               # why it was excluded (truth flags raised, no row, ...)


@dataclass(frozen=True)
class Decision:
    add: int                    # runs to queue now (new reps)
    needed: int                 # admissible runs the cell must end with (the pilot's, until known)
    stage: str                  # "pilot", "second stage", "done" or "gave up"
    stein: dict | None          # Stein's numbers once the pilot is complete
    admissible: int
    excluded: int
    attempts: int               # completed runs, excluded ones included
    max_attempts: int

    @property
    def reason(self) -> str:
        counts = f"{self.admissible} of {self.needed} admissible runs" + \
            (f", {self.excluded} excluded" if self.excluded else "")
        if self.stage == "gave up":
            return (f"gave up: {self.excluded} of {self.attempts} runs excluded; {counts} "
                    f"after the cap of {self.max_attempts} attempts")
        text = {"done": "done: ", "pilot": "pilot: "}.get(self.stage, "") + counts
        if self.stein is not None:
            s = self.stein
            text += (f"; Stein: pilot CoV {s['cov0'] * 100:.1f}%, t({s['t_df']}) = {s['t_quantile']:.3f}, "
                     f"n = {s['n']}" + (f" (capped; {s['n_required']} needed)" if s["capped"] else ""))
        return text


@dataclass(frozen=True)
class RepetitionRule:
    design: str = "stein"       # "stein" or "fixed" (pilot == max)
    pilot: int = 3
    max: int = 10
    target_rel_ci: float | None = 0.05
    max_attempts: int = 13      # runs of a cell in all, excluded ones included
    conf: float = CONF

    @classmethod
    def from_config(cls, r: dict) -> "RepetitionRule":
        """From a normalised ``repetitions`` block (``spec.values.repetitions``)."""
        return cls(r["design"], r["pilot"], r["max"], r["target_rel_ci"], r["max_attempts"])

    @classmethod
    def from_spec(cls, spec) -> "RepetitionRule":
        return cls.from_config(spec.repetitions)

    def decide(self, outcomes, pending_reps=()) -> Decision:
        """What a cell needs next, from its completed runs and the reps still queued.

        The pilot is the first ``pilot`` admissible runs by rep; it is complete once no
        queued rep is lower than its last one. Excluded runs are replaced while the
        cell's attempts (completed + queued) stay within ``max_attempts``.
        """
        done = sorted(outcomes, key=lambda o: o.rep)
        adm = [o for o in done if o.admissible]
        pending = list(pending_reps)
        excluded = len(done) - len(adm)
        stein = None
        if self.design == "fixed":
            needed = self.max
        elif len(adm) >= self.pilot and all(p > adm[self.pilot - 1].rep for p in pending):
            stein = stein_total([o.value for o in adm[:self.pilot]], self.target_rel_ci, self.max, self.conf)
            stein["pilot_reps"] = [o.rep for o in adm[:self.pilot]]
            needed = stein["n"]
        else:
            needed = self.pilot
        short = needed - len(adm) - len(pending)
        add = max(0, min(short, self.max_attempts - len(done) - len(pending)))
        if short <= 0 and not pending and (stein or self.design == "fixed"):
            stage = "done"
        elif short > add and not pending and not add:
            stage = "gave up"
        elif stein is None and self.design == "stein":
            stage = "pilot"
        else:
            stage = "second stage"
        return Decision(add, needed, stage, stein, len(adm), excluded, len(done), self.max_attempts)
