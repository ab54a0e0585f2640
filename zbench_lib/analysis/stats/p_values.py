"""How finely a p-value may be printed: no finer than the design's units support (docs/methods.md §2).

Every verdict rests on Welch's t on the log scale (§1–§3.1), a model of normal units. With nA and nB units
the data alone, without that model, can show no p below the exact permutation test's smallest,
2 / C(nA + nB, nA) (`compare.mannwhitney_min_p`): 0.1 from 3 against 3 pools, 0.0022 from 6 against 6. A
t-test p below it is the model's tail, not the data's ("Holm p 1.14e-06" from 3–4 pools a side). So a p
is printed as a bound below a floor: the first of 0.05, 0.01 and 0.001 at or above that smallest p, never
coarser than α = 0.05 (a Holm p below α still reads as below it, and the verdict beside it is the
model's, with its interval) and never finer than 0.001, where the digits of a p say nothing a reader
can use (Boos & Stefanski, "P-value precision and reproducibility", Am. Stat. 65 (2011) 213–221).

    p_floor(n_a, n_b)      0.05, 0.01 or 0.001
    p_text(p, n_a, n_b)    '< 0.05', '0.062', '< 0.001'; 'n/a' for no p
"""

from __future__ import annotations

import math

from zbench_lib.analysis.stats.compare import mannwhitney_min_p

FLOORS = (0.001, 0.01, 0.05)      # the bounds a p is printed as, finest first


def p_floor(n_a: int | None = None, n_b: int | None = None) -> float:
    """The smallest p printed as a number from nA and nB units a side; unknown sizes: 0.001.

    Examples
    --------
    >>> p_floor(3, 3), p_floor(4, 4), p_floor(5, 5), p_floor(6, 6), p_floor(7, 7), p_floor()
    (0.05, 0.05, 0.01, 0.01, 0.001, 0.001)
    """
    if n_a is None or n_b is None or n_a != n_a or n_b != n_b:
        return FLOORS[0]
    smallest = mannwhitney_min_p(int(n_a), int(n_b))
    return next((f for f in FLOORS if f >= smallest), FLOORS[-1])


def p_text(p, n_a: int | None = None, n_b: int | None = None) -> str:
    """A p-value printed no finer than nA and nB units support (`p_floor`): a bound below the floor.

    Examples
    --------
    >>> p_text(0.0004, 3, 3), p_text(0.062, 3, 3), p_text(0.0004, 6, 6), p_text(0.0004), p_text(float("nan"))
    ('< 0.05', '0.062', '< 0.01', '< 0.001', 'n/a')
    """
    if p is None or not math.isfinite(p):
        return "n/a"
    floor = p_floor(n_a, n_b)
    if p < floor:
        return f"< {floor:g}"
    return f"{p:.2f}" if p >= 0.1 else f"{p:.3f}" if p >= 0.01 else f"{p:.4f}"
