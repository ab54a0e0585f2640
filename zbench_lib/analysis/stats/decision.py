"""One decision rule for every comparison a page, notebook, export or `r.compare()` prints (methods §3.1).

A comparison is its log-ratio estimate ln(mA/mB), the standard error of that estimate, its Welch df
(`ratio.log_ratio_test`), the one level α' Holm gives its family (`ratio.holm`: the level of Holm's last
step; α for a family of one), and the practical margin m (default ±5%, the bounds [1/(1+m), 1+m] of
`ratio.equivalence_bounds`). `decide` reads all of it and returns a `Decision`: the verdict, the one
interval that decided it, the (1 − α') interval, and that interval's level. Every verdict is where that
interval lies against 1 and the margin (`interval_verdict`):

    higher / lower                 it excludes 1 AND lies wholly beyond the margin
                                   (low > 1+m, or high < 1/(1+m)): different, by more than the margin
    different, within margin       it excludes 1 and lies wholly inside the margin:
                                   a difference is shown, and it is smaller than one that matters
    higher / lower, margin unclear it excludes 1 but reaches across the margin: the
                                   direction is shown, a difference that matters is not
    equivalent                     it includes 1 and lies wholly inside the margin (TOST at α'/2)
    inconclusive                   none of these
    not judged                     no interval (fewer than 2 units a side, no SE)

Why: (1) "higher/lower" from the Holm-consistent interval keeps the family-wise error of difference
claims at α (Holm's step-down: the interval excludes 1 exactly when Holm rejects); asking it also to
clear the margin only removes claims, so it keeps that bound, and a difference of 3% that the design
resolves is not sold as a finding. (2) "No difference" is read on the same interval, so it is never
easier to claim than "different" in the same family: an interval at 1 − α' inside the margin is TOST at
α'/2, and at α' = α/(m − k* + 1) for each of the at most m − k* + 1 comparisons Holm did not reject, the
family-wise error of equivalence claims is at most α/2 by Bonferroni's inequality. (3) The interval
printed beside a verdict is the one that decided it, one per comparison at one level per family, so a
reader who checks it against 1 and the margin reaches the verdict on the page, and a page states its
level once (issue 52 item 6: before, equivalence was read on a (1 − 2α') interval and each rejected
comparison had its own Holm step's level, ten levels on the scaling page).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as sps

from zbench_lib.analysis.stats.ratio import equivalence_bounds

HIGHER, LOWER, WITHIN, EQUIVALENT, INCONCLUSIVE, NOT_JUDGED = (
    "higher", "lower", "different, within margin", "equivalent", "inconclusive", "not judged")
HIGHER_UNCLEAR, LOWER_UNCLEAR = "higher, margin unclear", "lower, margin unclear"
VERDICTS = (HIGHER, LOWER, HIGHER_UNCLEAR, LOWER_UNCLEAR, WITHIN, EQUIVALENT, INCONCLUSIVE, NOT_JUDGED)
DEFAULT_MARGIN = 0.05


@dataclass(frozen=True)
class Decision:
    """A comparison's verdict and the interval that decided it.

    `level` is that interval's confidence level (0.983 for a family whose Holm level is α' = 0.0167; 0.95
    for a lone comparison); `family_size` the comparisons in its Holm family; `margin` the practical
    margin; `reason` the verdict in one clause."""
    verdict: str
    low: float
    high: float
    level: float
    family_size: int
    margin: float
    reason: str

    @property
    def level_text(self) -> str:
        """'Holm-adjusted 98.3%' in a family, '95%' alone; '' when not judged."""
        if not math.isfinite(self.level):
            return ""
        return f"Holm-adjusted {self.level:.1%}" if self.family_size > 1 else f"{self.level:.0%}"


def level_text(level: float, family_size: int) -> str:
    """The level of a deciding interval as a reader reads it (`Decision.level_text`)."""
    return Decision("", math.nan, math.nan, level, family_size, math.nan, "").level_text


def _finite(*xs) -> bool:
    return all(x is not None and math.isfinite(float(x)) for x in xs)


def interval_verdict(lo: float, hi: float, level: float, margin: float = DEFAULT_MARGIN,
                     family_size: int = 1) -> Decision:
    """The verdict of an interval (lo, hi) at `level` (the table of this module's docstring): against 1 and
    the margin, higher/lower when it excludes 1 and clears the margin, "different, within margin" inside it,
    "margin unclear" across it; equivalent when it includes 1 and lies inside the margin; else inconclusive.

    Examples
    --------
    >>> interval_verdict(1.10, 1.30, 0.95).verdict, interval_verdict(0.97, 1.03, 0.95).verdict
    ('higher', 'equivalent')
    >>> interval_verdict(0.90, 1.20, 0.95).verdict
    'inconclusive'
    """
    lo_b, hi_b = equivalence_bounds(margin)
    if not (lo > 1 or hi < 1):
        if lo_b < lo and hi < hi_b:
            return Decision(EQUIVALENT, lo, hi, level, family_size, margin,
                            f"the interval includes 1 and lies inside ±{margin:.0%}")
        return Decision(INCONCLUSIVE, lo, hi, level, family_size, margin,
                        f"the interval includes 1 and reaches past ±{margin:.0%}")
    if lo > hi_b:
        return Decision(HIGHER, lo, hi, level, family_size, margin,
                        f"the interval excludes 1 and lies above +{margin:.0%}")
    if hi < lo_b:
        return Decision(LOWER, lo, hi, level, family_size, margin,
                        f"the interval excludes 1 and lies below −{margin:.0%}")
    if lo_b < lo and hi < hi_b:
        return Decision(WITHIN, lo, hi, level, family_size, margin,
                        f"the interval excludes 1 and lies inside ±{margin:.0%}")
    return Decision(HIGHER_UNCLEAR if lo > 1 else LOWER_UNCLEAR, lo, hi, level, family_size, margin,
                    f"the interval excludes 1 but reaches across ±{margin:.0%}")


def decide(log_ratio: float, se: float, df: float, step_alpha: float, margin: float = DEFAULT_MARGIN,
           family_size: int = 1) -> Decision:
    """The verdict of one comparison under the rule of this module's docstring: its (1 − α') interval,
    exp(ln r ± t(1 − α'/2, df) · se), read by `interval_verdict`.

    `step_alpha` is α', the level Holm gives the comparison's family (`ratio.holm`; the family's α for a
    family of one).

    Examples
    --------
    >>> import math
    >>> d = decide(math.log(1.20), 0.03, 4.0, 0.05)
    >>> d.verdict, round(d.low, 3), round(d.high, 3), d.level_text
    ('higher', 1.104, 1.304, '95%')
    >>> decide(math.log(0.97), 0.004, 10.0, 0.05 / 12, family_size=12).verdict
    'different, within margin'
    >>> decide(math.log(1.11), 0.02, 6.0, 0.01, family_size=6).verdict
    'higher, margin unclear'
    """
    if not (_finite(log_ratio, se, df, step_alpha) and df > 0 and se >= 0 and 0 < step_alpha < 0.5):
        return Decision(NOT_JUDGED, math.nan, math.nan, math.nan, family_size, margin,
                        "no interval: fewer than 2 units a side")
    t = float(sps.t.ppf(1 - step_alpha / 2, df))
    lo, hi = math.exp(log_ratio - t * se), math.exp(log_ratio + t * se)
    return interval_verdict(lo, hi, 1 - step_alpha, margin, family_size)
