"""One decision rule for every comparison a page, notebook, export or `r.compare()` prints (methods §3.1).

A comparison is its log-ratio estimate ln(mA/mB), the standard error of that estimate, its Welch df
(`ratio.log_ratio_test`), the level α' Holm's step assigns it in its family (`ratio.holm`; α for a
family of one), and the practical margin m (default ±5%, the bounds [1/(1+m), 1+m] of
`ratio.equivalence_bounds`). `decide` reads all of it and returns a `Decision`: the verdict, the
interval that decided it and that interval's level.

    higher / lower                 the (1 − α') interval excludes 1 AND lies wholly beyond the margin
                                   (low > 1+m, or high < 1/(1+m)): different, by more than the margin
    different, within margin       the (1 − α') interval excludes 1 and lies wholly inside the margin:
                                   a difference is shown, and it is smaller than one that matters
    higher / lower, margin unclear the (1 − α') interval excludes 1 but reaches across the margin: the
                                   direction is shown, a difference that matters is not
    equivalent                     TOST at the same α': the (1 − 2α') interval lies inside the margin
    inconclusive                   none of these
    not judged                     no interval (fewer than 2 units a side, no SE)

Why: (1) "higher/lower" from the Holm-adjusted interval keeps the family-wise error of difference
claims at α (Holm's step-down); asking it also to clear the margin only removes claims, so it keeps
that bound, and a difference of 3% that the design resolves is not sold as a finding. (2) The TOST of
a comparison runs at its own Holm level α', so "no difference" is never easier to claim than
"different" in the same family: at α' ≤ α/(m − k* + 1) for each of the at most m − k* comparisons Holm
did not reject, the family-wise error of equivalence claims is at most α by Bonferroni's inequality.
(3) The interval printed beside a verdict is the one that decided it, with its level, so a reader who
checks the interval against 1 and the margin reaches the verdict on the page.
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

    `level` is that interval's confidence level (0.983 for a Holm step at α' = 0.0167; 0.90 for the
    TOST of a lone comparison); `family_size` the comparisons in its Holm family; `margin` the
    practical margin; `reason` the verdict in one clause."""
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


def difference(lo: float, hi: float, level: float, margin: float = DEFAULT_MARGIN, family_size: int = 1) -> Decision:
    """The verdict of an interval (lo, hi) at `level` that excludes 1: higher/lower when it clears the
    margin, "different, within margin" inside it, "margin unclear" across it; inconclusive when it
    does not exclude 1 (equivalence needs the estimate and its SE: `decide`)."""
    lo_b, hi_b = equivalence_bounds(margin)
    if not (lo > 1 or hi < 1):
        return Decision(INCONCLUSIVE, lo, hi, level, family_size, margin, "the interval includes 1")
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
    """The verdict of one comparison under the rule of this module's docstring.

    `step_alpha` is α', the level Holm's step assigns the comparison in its family (`ratio.holm`;
    the family's α for a family of one).

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
    lo_b, hi_b = equivalence_bounds(margin)
    if not (_finite(log_ratio, se, df, step_alpha) and df > 0 and se >= 0 and 0 < step_alpha < 0.5):
        return Decision(NOT_JUDGED, math.nan, math.nan, math.nan, family_size, margin,
                        "no interval: fewer than 2 units a side")
    t1 = float(sps.t.ppf(1 - step_alpha / 2, df))
    lo, hi = math.exp(log_ratio - t1 * se), math.exp(log_ratio + t1 * se)
    if lo > 1 or hi < 1:
        return difference(lo, hi, 1 - step_alpha, margin, family_size)
    t2 = float(sps.t.ppf(1 - step_alpha, df))
    elo, ehi = math.exp(log_ratio - t2 * se), math.exp(log_ratio + t2 * se)
    if elo > lo_b and ehi < hi_b:
        return Decision(EQUIVALENT, elo, ehi, 1 - 2 * step_alpha, family_size, margin,
                        f"TOST at the same level: the interval lies inside ±{margin:.0%}")
    return Decision(INCONCLUSIVE, lo, hi, 1 - step_alpha, family_size, margin,
                    f"the interval includes 1 and reaches past ±{margin:.0%}")
