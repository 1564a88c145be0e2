"""Which group to label next: Thompson sampling rewards of seed 002, sections 3.5-3.7, and the Beta summaries they read.

Every function takes one Thompson draw of the cell rates ``theta`` (groups x bins)
and returns one score per group; the caller masks groups whose pool is empty and
takes the argmax (or the top m). Nothing here touches rows. :func:`beta_var` and
:func:`rope_masses` are closed-form summaries of independent Beta posteriors.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

__all__ = ["beta_var", "estimation_reward", "rope_gain", "rope_masses", "top_two"]

_GRID = 2048  # quadrature cells over [0, 1]; the masses are accurate to about 1e-4


def beta_var(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Variance of ``Beta(a, b)``.

    Examples
    --------
    >>> float(beta_var(np.array(1.0), np.array(1.0)))
    0.08333333333333333
    """
    n = a + b
    return a * b / (n * n * (n + 1.0))


@functools.lru_cache(maxsize=256)
def rope_masses(a1: float, b1: float, a2: float, b2: float, eps: float) -> tuple[float, float, float]:
    """``P(D < -eps), P(|D| <= eps), P(D > eps)`` for ``D = X1 - X2``, ``Xi ~ Beta(ai, bi)`` independent.

    Deterministic quadrature over the CDF of ``X2`` (no Monte Carlo noise, so a
    decision does not flicker between two calls): ``P(X1 < X2 - eps)`` is the
    integral of ``F1(x - eps) dF2(x)``. Written by hand because scipy has no
    distribution for a difference of Betas. The recent answers are kept: the rows
    of one ``ask(n)`` batch are scored on the same posteriors.

    Examples
    --------
    >>> below, within, above = rope_masses(1, 1, 1, 1, 0.0)
    >>> round(below, 3), round(above, 3)
    (0.5, 0.5)
    """
    edges = np.linspace(0.0, 1.0, _GRID + 1)
    d_f2 = np.diff(special.betainc(a2, b2, edges))
    # cells where X2 has no mass in double precision add exactly 0: skip them (most cells, once a
    # group has many labels)
    mass = d_f2 > 0.0
    d_f2, mid = d_f2[mass], (0.5 * (edges[1:] + edges[:-1]))[mass]
    below = float(d_f2 @ special.betainc(a1, b1, np.clip(mid - eps, 0.0, 1.0)))
    # the survival function through the reflection 1 - I_x(a, b) = I_{1-x}(b, a): the same value to
    # rounding, and scipy's betainc is some 50 times faster than its betaincc (or beta.sf)
    above = float(d_f2 @ special.betainc(b1, a1, 1.0 - np.clip(mid + eps, 0.0, 1.0)))
    below, above = min(max(below, 0.0), 1.0), min(max(above, 0.0), 1.0)
    return below, max(1.0 - below - above, 0.0), above


def estimation_reward(
    theta: np.ndarray, a: np.ndarray, b: np.ndarray, cell_weight: np.ndarray, counts_prob: np.ndarray
) -> np.ndarray:
    """Expected drop of the weighted posterior variance from one more label (Table 3.1, estimation).

    ``p_g (Var(theta_g | L) - E_z Var(theta_g | L, z))`` with ``z ~ Bern(theta~_g)``,
    summed over the group's score bins in proportion to how often a random row of
    the group falls in each, and times the probability that the row enters the rate
    at all (a TPR label counts only when the row is a true positive).
    """
    now = beta_var(a, b)
    after = theta * beta_var(a + 1.0, b) + (1.0 - theta) * beta_var(a, b + 1.0)
    return counts_prob * (cell_weight * (now - after)).sum(axis=-1)


def top_two(bad: np.ndarray, redraw, rng: np.random.Generator, beta: float, *, tries: int = 20) -> int:
    """Top-two Thompson sampling (Russo 2016; seed 002 Algorithm 3).

    With probability ``beta`` play the arm that looks worst in this draw; otherwise
    draw again until another arm looks worst (at most ``tries`` batches of 50
    draws; if the first arm always wins, play it).
    """
    first = int(np.argmax(bad))
    if rng.random() < beta:
        return first
    for _ in range(tries):
        worst = np.argmax(redraw(50), axis=-1)
        other = worst[worst != first]
        if other.size:
            return int(other[0])
    return first


def rope_gain(
    theta: np.ndarray, a: np.ndarray, b: np.ndarray, pair: tuple[int, int], eps: float, counts_prob: np.ndarray
) -> np.ndarray:
    """Expected ROPE confidence after one more label in each group of the pair (section 3.7.1).

    ``lambda = max(P(D < -eps), P(|D| <= eps), P(D > eps))`` for ``D = theta_g1 -
    theta_g2``; the expected value after a label of group g averages the two
    outcomes with the Thompson draw ``theta~_g`` (and keeps lambda when the row does
    not enter the rate). Groups outside the pair score -inf.
    """
    g1, g2 = pair

    def confidence(a: np.ndarray, b: np.ndarray) -> float:
        return max(rope_masses(a[g1], b[g1], a[g2], b[g2], eps))

    now, gain = confidence(a, b), np.full(a.shape[0], -np.inf)
    for g in pair:
        one = np.eye(a.shape[0])[g]  # one more label in group g: a success (a + one) or a failure (b + one)
        expected = theta[g] * confidence(a + one, b) + (1.0 - theta[g]) * confidence(a, b + one)
        gain[g] = counts_prob[g] * expected + (1.0 - counts_prob[g]) * now
    return gain
