"""Score intervals and exact tests for proportions: two paired, a ratio of two independent.

scipy has the exact binomial test (McNemar's exact test is one, on the discordant pairs)
but no interval for a difference of paired proportions nor a score interval of a ratio, so
these are written here:

- Tango's score interval (Tango 1998, Stat Med 17:891) for ``p_1. - p_.1`` of paired
  binary outcomes, the roots of the score statistic under the constrained maximum
  likelihood of the discordant cells (its value at 0 is McNemar's statistic);
- Koopman's score interval of ``p_1 / p_2`` (independent samples, Koopman 1984),
  vectorised over arrays of counts (the bias audit's impact ratios need many pairs at
  once): Katz's interval undercovers at small counts and fails at zero counts.

Both keep close to their level with small and lopsided counts, where Wald's intervals
fall far below it. Wilson's interval and Newcombe's difference of independent
proportions (continuity-corrected) are ``skfair_measures._small_sample``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import optimize, stats

__all__ = ["koopman", "koopman_bound", "mcnemar_exact", "tango"]

_STEPS = 45  # Koopman's bisection steps on log(ratio) in [-40, 40]: a bracket of 80 halved 45 times, ~2e-12


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


def _pearson(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        term = (observed - expected) ** 2 / expected
    return np.where(observed == expected, 0.0, np.where(expected > 0, term, np.inf))


def _koopman_stat(phi: np.ndarray, x1: np.ndarray, n1: np.ndarray, x2: np.ndarray, n2: np.ndarray) -> np.ndarray:
    """Pearson's chi-square of the 2x2 table at the maximum likelihood under ``p1 = phi * p2`` (Koopman 1984)."""
    s, big = x1 + x2, n1 + n2
    a = phi * (n1 + x2) + x1 + n2
    p2 = 2 * s / (a + np.sqrt(np.maximum(a * a - 4 * phi * big * s, 0.0)))  # the smaller root, without cancellation
    p1 = np.minimum(phi * p2, 1.0)
    cells = ((x1, n1 * p1), (n1 - x1, n1 * (1 - p1)), (x2, n2 * p2), (n2 - x2, n2 * (1 - p2)))
    return sum(_pearson(observed, expected) for observed, expected in cells)


def koopman(x1: Any, n1: Any, x2: Any, n2: Any, prob: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Koopman's score interval for the ratio of two independent proportions ``(x1/n1) / (x2/n2)``.

    The ratios ``phi`` whose score test (Pearson's chi-square of the 2x2 table at the maximum
    likelihood under ``p1 = phi * p2``) does not reject at level ``1 - prob``. Vectorised over
    arrays of counts by bisection on ``log(phi)``; ``statsmodels``' ``confint_proportions_2indep``
    (``method="score", compare="ratio", correction=False``) gives the same bounds one pair at a
    time, too slow for the bias audit's many pairs; at ``x1 = n1`` statsmodels stops where ``p1``
    reaches 1, while the score statistic (checked against a brute-force maximum likelihood)
    goes on.

    Parameters
    ----------
    x1, n1, x2, n2 : array-like of int
        Successes and trials of the two samples.
    prob : float, default=0.95
        The two-sided level.

    Returns
    -------
    tuple of ndarray
        ``(low, high)``: 0 when ``x1 = 0``, inf when ``x2 = 0``, ``(0, inf)`` when both are 0.

    Examples
    --------
    >>> lo, hi = koopman(10, 40, 20, 40)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.2657, 0.9046)
    """
    return koopman_bound(x1, n1, x2, n2, prob, upper=False), koopman_bound(x1, n1, x2, n2, prob, upper=True)


def koopman_bound(x1: Any, n1: Any, x2: Any, n2: Any, prob: float, *, upper: bool) -> np.ndarray:
    """One side of :func:`koopman`, by bisection on ``log(phi)`` between the estimate and -40 or 40."""
    x1, n1, x2, n2 = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x1, n1, x2, n2)))
    crit = stats.chi2.ppf(prob, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.clip(np.log(x1 * n2) - np.log(x2 * n1), -40.0, 40.0)
    inside = np.where(np.isnan(est), 0.0, est)
    outside = np.full_like(inside, 40.0 if upper else -40.0)
    for _ in range(_STEPS):
        mid = (inside + outside) / 2
        out = _koopman_stat(np.exp(mid), x1, n1, x2, n2) > crit
        inside, outside = np.where(out, inside, mid), np.where(out, mid, outside)
    bound = np.exp((inside + outside) / 2)
    return np.where(x2 == 0, np.inf, bound) if upper else np.where(x1 == 0, 0.0, bound)
