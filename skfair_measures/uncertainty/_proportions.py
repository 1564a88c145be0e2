"""Score intervals and exact tests for proportions: one, two independent, two paired.

scipy gives Wilson's score interval (``binomtest(...).proportion_ci``), the exact
binomial test (McNemar's exact test is one, on the discordant pairs), Katz's interval
of a ratio of proportions (``contingency.relative_risk``) and Student's t intervals.
It has no interval for a difference of two proportions, independent or paired, so
these two are written here:

- Newcombe's hybrid score interval (Newcombe 1998, Stat Med 17:873, method 10) for
  ``p_a - p_b`` of independent samples, from the two Wilson intervals;
- Tango's score interval (Tango 1998, Stat Med 17:891) for ``p_1. - p_.1`` of paired
  binary outcomes, the roots of the score statistic under the constrained maximum
  likelihood of the discordant cells (its value at 0 is McNemar's statistic).

Both keep close to their level with small and lopsided counts, where Wald's interval
of a difference falls far below it.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats

__all__ = ["mcnemar_exact", "newcombe", "tango", "wilson"]


def wilson(k: int, n: int, prob: float) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``k / n`` (NaN bounds for ``n = 0``).

    Examples
    --------
    >>> [round(b, 4) for b in wilson(56, 70, 0.95)]
    [0.6918, 0.877]
    """
    if n <= 0:
        return np.nan, np.nan
    ci = stats.binomtest(int(k), int(n)).proportion_ci(prob, method="wilson")
    return float(ci.low), float(ci.high)


def newcombe(k_a: int, n_a: int, k_b: int, n_b: int, prob: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``k_a / n_a - k_b / n_b`` (independent samples).

    Examples
    --------
    Newcombe (1998), Table II, example (a): 56/70 - 48/80 gives 0.0524 to 0.3339.

    >>> [round(b, 4) for b in newcombe(56, 70, 48, 80, 0.95)]
    [0.0524, 0.3339]
    """
    if n_a <= 0 or n_b <= 0:
        return np.nan, np.nan
    p_a, p_b = k_a / n_a, k_b / n_b
    (l_a, u_a), (l_b, u_b) = wilson(k_a, n_a, prob), wilson(k_b, n_b, prob)
    d = p_a - p_b
    return float(d - np.hypot(p_a - l_a, u_b - p_b)), float(d + np.hypot(u_a - p_a, p_b - l_b))


def _tango_z(delta: float, b: int, c: int, n: int) -> float:
    """Tango's score statistic for ``H0: p_1. - p_.1 = delta`` (``b``, ``c``: the discordant cells)."""
    a_, b_, c_ = 2.0 * n, -b - c + (2.0 * n - b + c) * delta, -c * delta * (1.0 - delta)
    q21 = (np.sqrt(max(b_ * b_ - 4.0 * a_ * c_, 0.0)) - b_) / (2.0 * a_)
    num, var = b - c - n * delta, n * (2.0 * q21 + delta * (1.0 - delta))
    return 0.0 if num == 0 else float(num / np.sqrt(var)) if var > 0 else float(np.sign(num) * np.inf)


def tango(b: int, c: int, n: int, prob: float) -> tuple[float, float]:
    """Tango's score interval of ``(b - c) / n``, the difference of two paired proportions.

    ``b`` pairs have the outcome in the first member only, ``c`` in the second only, of
    ``n`` pairs. The bounds are the roots of ``Z(delta) = -+z``; a bound that the score
    never reaches is the end of the range (-1 or 1).

    Examples
    --------
    >>> lo, hi = tango(12, 4, 60, 0.95)
    >>> round(lo, 4) < 8 / 60 < round(hi, 4)
    True
    >>> round(abs(_tango_z(0.0, 12, 4, 60)), 6)  # at 0: McNemar's (12 - 4) / sqrt(12 + 4)
    2.0
    """
    if n <= 0:
        return np.nan, np.nan
    z = float(stats.norm.ppf(0.5 + prob / 2.0))
    d, edge = (b - c) / n, 1.0 - 1e-12

    def root(end: float, target: float) -> float:
        if (_tango_z(end, b, c, n) - target) * -target > 0:  # Z(d) = 0
            return float(np.sign(end))
        return float(optimize.brentq(lambda x: _tango_z(x, b, c, n) - target, min(d, end), max(d, end), xtol=1e-10))

    return root(-edge, z), root(edge, -z)


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p-value: the binomial test of ``b`` in ``b + c`` discordant pairs at 1/2.

    Examples
    --------
    >>> round(mcnemar_exact(12, 4), 4)
    0.0768
    >>> mcnemar_exact(0, 0)
    1.0
    """
    return 1.0 if b + c == 0 else float(stats.binomtest(int(b), int(b + c), 0.5).pvalue)
