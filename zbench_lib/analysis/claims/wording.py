"""How a number, an interval, a p-value or a reason is written in a sentence, once for every page.

The conclusions, the classic claims and the report's answer all print numbers; a reader who
finds "175–175" or "p < 0.001 from 3 against 3 pools" stops trusting the rest, so the rules
live here (issue 31):

    num(v)                   three significant figures, separators, never 1.2e-02
    ci_text(lo, hi)          an interval whose ends never print alike ("174.6–175.4", not "175–175"),
                             and whose low end never prints as 0 when it is not ("0.0012–0.094")
    interval_text(lo, hi, n) a table cell's interval: its ends in the cell's format, "one value (n = 3)"
                             where it has zero width
    p_text(p, n_a, n_b)      a p-value to what the design supports (`stats.p_values`, methods §2): below
                             the first of 0.05, 0.01, 0.001 at or above the smallest p the exact
                             permutation test reaches with those units, a bound ("< 0.05" from 3
                             against 3 pools: a Welch t tail below 0.1 there is the model's, not the data's)
    effect_size_ok(...)      whether Hedges' g means something: not from a spread below 1% of
                             the mean, where g runs to hundreds and says only that the SD is tiny
    say_once(text)           a "; "-joined list of reasons with each fragment said once (and
                             how many cells it covers)
"""

from __future__ import annotations

import math
from collections import Counter

from zbench_lib.analysis.stats.p_values import p_text as p_text   # the one rule, for every page's sentences

G_MIN_SPREAD = 0.01     # pooled SD over the mean below which Hedges' g is not reported


def num(v, sig: int = 3) -> str:
    """A number as people write it: 1,234 / 12.3 / 0.0123, never 1.2e-02.

    Examples
    --------
    >>> num(1234.5), num(12.345), num(0.012345), num(0)
    ('1,234', '12.3', '0.0123', '0')
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 10 ** (sig - 1):
        return f"{v:,.0f}"
    return f"{v:.{max(0, sig - 1 - int(math.floor(math.log10(abs(v)))))}f}"


def _decimals(lo: float, hi: float, digits: int) -> int:
    """The fewest decimals from `digits` up at which the ends differ and neither rounds to zero."""
    for d in range(digits, digits + 5):
        a, b = f"{lo:.{d}f}", f"{hi:.{d}f}"
        zero = lambda s, v: float(s) == 0 and v != 0  # noqa: E731
        if a != b and not zero(a, lo) and not zero(b, hi):
            return d
    return digits + 4


def ci_text(lo, hi, digits: int | None = None, level: str = "95%", sep: str = "–",
            n: int | None = None) -> str:
    """'95% CI 0.91–0.95' with enough decimals that the ends differ and a nonzero end is not 0.

    `digits` None: three significant figures on the larger end. Units whose values are all
    equal (three pools' p99 in one fio bin) give no spread to make an interval from: "one value",
    with their count `n` where the caller knows it, never "175–175".

    Examples
    --------
    >>> ci_text(0.912, 0.953, digits=2), ci_text(174.6, 175.4, digits=0), ci_text(0.0012, 0.094, digits=2)
    ('95% CI 0.91–0.95', '95% CI 174.6–175.4', '95% CI 0.001–0.094')
    >>> ci_text(144.28, 210.84), ci_text(81.26, 81.26), ci_text(175.0, 175.0, level="", n=3)
    ('95% CI 144–211', 'one value, 81.3 (no spread between the units)', 'one value (n = 3)')
    """
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{level} CI n/a" if level else "n/a"
    if lo == hi:
        count = f"n = {int(n)}" if n is not None and n == n else "no spread between the units"
        return f"one value, {num(lo)} ({count})" if level else f"one value ({count})" if n is not None else "one value"
    if digits is None:
        top = max(abs(float(lo)), abs(float(hi)))
        digits = max(0, 2 - int(math.floor(math.log10(top)))) if top > 0 else 2
    d = _decimals(float(lo), float(hi), digits)
    text = f"{lo:,.{d}f}{sep}{hi:,.{d}f}"
    return f"{level} CI {text}" if level else text


def interval_text(lo, hi, n: int | None = None, end=None) -> str:
    """An interval's ends as a table cell writes them, '1,204–1,310', each end by `end` (default `num`); ends
    that would print alike get the decimals that tell them apart, and an interval of zero width (every unit
    gave the same value) reads "one value (n = 3)" (`ci_text`), never "175–175". The one rule for every
    page and export.

    Examples
    --------
    >>> interval_text(1204.4, 1310.2), interval_text(174.6, 175.4), interval_text(175.0, 175.0, n=3)
    ('1,204–1,310', '174.6–175.4', 'one value (n = 3)')
    """
    end = end or num
    a, b = end(lo), end(hi)
    if a != b:
        return f"{a}–{b}"
    return ci_text(float(lo), float(hi), level="", n=None if n is None or n != n else int(n))


def effect_size_ok(g, mean_a, mean_b) -> bool:
    """Whether Hedges' g is worth printing: finite, and from a spread of at least 1% of the mean.

    g = (mean_a - mean_b) / pooled SD (times J, about 1): the pooled SD is read back from it.

    Examples
    --------
    >>> effect_size_ok(-326.6, 100.0, 130.0), effect_size_ok(-2.1, 100.0, 130.0)
    (False, True)
    """
    if g is None or not all(math.isfinite(float(v)) for v in (g, mean_a, mean_b)) or g == 0:
        return g == 0
    spread = abs(mean_a - mean_b) / abs(g)
    scale = (abs(mean_a) + abs(mean_b)) / 2
    return scale > 0 and spread / scale >= G_MIN_SPREAD


def say_once(text, sep: str = "; ") -> str:
    """A list of reasons with each fragment said once, a repeated one with the cells it covers.

    Examples
    --------
    >>> say_once("pools several; level raidz1: 1 run; level raidz1: 1 run; level raidz1: 1 run")
    'pools several; level raidz1: 1 run (3 cells)'
    """
    if not isinstance(text, str) or not text:
        return ""
    counts = Counter(p.strip() for p in text.split(sep) if p.strip())
    return sep.join(f"{p} ({n} cells)" if n > 1 else p for p, n in counts.items())
