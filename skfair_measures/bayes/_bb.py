"""Beta-Binomial posteriors of count-based rates, drawn through the confusion cells.

Seed 000 section 2.2 puts a Beta prior on every group rate ``theta_g`` and updates
it with the binomial likelihood of the labeled data: ``theta_g | D ~ Beta(alpha +
k, beta + n - k)``, with ``k`` the numerator and ``n`` the denominator count (for
the TPR, ``k`` = true positives and ``n`` = positives). We draw all rates of a
group through one vector of Gamma variates over the four confusion cells
``[y_true, y_pred]``: a rate is a ratio of sums of cells, and a ratio of sums of
independent Gamma variates with a common scale is Beta distributed. Setting the
cell concentrations so that the numerator cells sum to ``alpha`` and the other
denominator cells to ``beta`` gives *exactly* the paper's ``Beta(alpha + k, beta +
n - k)`` for every rate, while the rates of one group stay jointly consistent (the
TPR and FPR use disjoint cells and are independent, as they should be).

Only when a measure needs two rates that share cells with different roles (for
example accuracy and TPR in a constrained measure) do the per-rate priors
conflict; then a Dirichlet prior on the four cells is used (uniform: Dirichlet(1,
1, 1, 1); Jeffreys: Dirichlet(1/2, ...); scores: proportional to the expected cells
with total strength twice ``prior_strength``), and this is recorded in the
posterior's ``attrs["prior_cells"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..base import BaseMetric, ratio_roles
from ._method import Bases, EstimationMethod, FitData, GroupDraws, Rng, is_number, refuse_option, without_prior_only

__all__ = ["BetaBinomial", "bb_cell_draws", "cell_concentration", "expected_cells"]

_FLOOR = 1e-3  # smallest cell concentration (a Gamma shape must be > 0)


#: The Beta prior ``(alpha, beta)`` of the named priors other than ``"scores"`` (the model's self-assessment).
_NAMED = {"uniform": (1.0, 1.0), "jeffreys": (0.5, 0.5)}
#: The named Beta priors of ``prior=``.
NAMED_PRIORS = (*_NAMED, "scores")


def _prior_pair(prior: Any, strength: float, rate: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)`` per group for one rate (``prior`` is checked: :func:`check_beta_prior`)."""
    if isinstance(prior, str) and prior == "scores":
        r = np.clip(np.nan_to_num(rate, nan=0.5), _FLOOR, 1 - _FLOOR)
        return strength * r, strength * (1 - r)
    a, b = _NAMED[prior] if isinstance(prior, str) else prior
    return np.asarray(float(a)), np.asarray(float(b))


def check_beta_prior(prior: Any) -> None:
    """Refuse a ``prior`` that is neither a named prior nor a pair of positive numbers."""
    if isinstance(prior, str):
        if prior not in NAMED_PRIORS:
            refuse_option("prior", prior, "pass 'uniform', 'jeffreys', 'scores' or a pair (alpha, beta)")
        return
    pair = tuple(prior) if isinstance(prior, tuple | list) else ()
    if len(pair) != 2 or not all(is_number(v) and v > 0 for v in pair):
        refuse_option("prior", prior, "pass 'uniform', 'jeffreys', 'scores' or two positive numbers (alpha, beta)")


def expected_cells(scores: np.ndarray, y_pred: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Confusion cells expected if the scores were calibrated, shape ``(group, 2, 2)``.

    A sample with score ``s`` and prediction ``p`` adds ``s`` to cell ``[1, p]`` and
    ``1 - s`` to cell ``[0, p]`` of its group (the model's self-assessment, seed 002
    section 2.4.2).

    Examples
    --------
    >>> expected_cells(np.array([0.8, 0.3]), np.array([1, 0]), np.array([0, 0]), 1).tolist()
    [[[0.7, 0.2], [0.3, 0.8]]]
    """
    cell = codes * 2 + y_pred
    pos = np.bincount(cell, weights=scores, minlength=2 * n_groups).reshape(n_groups, 2)
    tot = np.bincount(cell, minlength=2 * n_groups).reshape(n_groups, 2).astype(float)
    return np.stack([tot - pos, pos], axis=1)


def cell_concentration(
    bases: Sequence[BaseMetric],
    n_groups: int,
    prior: Any = "uniform",
    prior_strength: float = 2.0,
    expected: np.ndarray | None = None,
) -> tuple[np.ndarray, str]:
    """Gamma shapes of the four confusion cells per group, shape ``(group, 2, 2)``.

    Parameters
    ----------
    bases : sequence of BaseMetric
        The rates the measure needs.
    n_groups : int
    prior : {"uniform", "jeffreys", "scores"} or tuple of float
        Beta prior of every group rate: Beta(1, 1), Beta(1/2, 1/2), the model's
        self-assessment ``Beta(N0 r, N0 (1 - r))`` (seed 002 section 2.4.2, ``r``
        the rate computed on :func:`expected_cells`), or ``(alpha, beta)``.
    prior_strength : float, default=2.0
        ``N0`` of the ``"scores"`` prior.
    expected : ndarray of shape (group, 2, 2), optional
        Expected cells from the model's scores; required for ``"scores"``.

    Returns
    -------
    alpha : ndarray of shape (group, 2, 2)
    kind : {"per-rate", "dirichlet"}
        ``"per-rate"`` if every rate gets exactly its Beta prior, ``"dirichlet"`` if
        the rates share cells in conflicting roles and a Dirichlet prior on the
        cells is used instead.

    Examples
    --------
    >>> from skfair_measures.base import BASE_METRICS
    >>> alpha, kind = cell_concentration([BASE_METRICS["acc"]], 1)
    >>> alpha[0].tolist(), kind
    ([[0.5, 0.5], [0.5, 0.5]], 'per-rate')
    """
    check_beta_prior(prior)
    scores = isinstance(prior, str) and prior == "scores"
    if scores and expected is None:
        raise ValueError("prior='scores' needs the model's scores to form the expected cells.")
    e = np.maximum(expected, _FLOOR) if scores else np.ones((n_groups, 2, 2))  # how each part splits over its cells
    alpha = np.full((n_groups, 2, 2), np.nan)
    for base in bases:
        roles = ratio_roles(base)
        if not roles.simple:
            break
        rate = None
        if expected is not None:
            num, den = ((expected * cells).sum((-2, -1)) for cells in (roles.num, roles.den))
            rate = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        a, b = (np.broadcast_to(x, (n_groups,))[:, None, None] for x in _prior_pair(prior, prior_strength, rate))
        num, rest = e * roles.num, e * (roles.den & ~roles.num)
        rest_total = np.maximum(rest.sum((-2, -1), keepdims=True), _FLOOR)
        new = a * num / num.sum((-2, -1), keepdims=True) + b * rest / rest_total
        new = np.where(roles.den, np.maximum(new, _FLOOR), np.nan)
        both = ~np.isnan(alpha) & ~np.isnan(new)
        if both.any() and not np.allclose(alpha[both], new[both]):
            break
        alpha = np.where(np.isnan(alpha), new, alpha)
    else:
        return np.where(np.isnan(alpha), 1.0, alpha), "per-rate"
    # the rates share cells in conflicting roles: a Dirichlet prior on the four cells
    if scores:
        alpha = 2.0 * prior_strength * e / e.sum((-2, -1), keepdims=True)
    else:
        alpha = np.full((n_groups, 2, 2), float(np.mean(_prior_pair(prior, prior_strength, None))))
    return np.maximum(alpha, _FLOOR), "dirichlet"


def bb_cell_draws(counts: np.ndarray, alpha: np.ndarray, chains: int, draws: int, rng: Rng) -> np.ndarray:
    """Posterior draws of the cell probabilities per group, shape ``(chain, draw, group, 2, 2)``.

    Each group's cells are Dirichlet(``alpha + counts``), drawn as normalised Gamma
    variates; any rate, a ratio of sums of cells, then has its conjugate Beta
    posterior.

    Examples
    --------
    >>> p = bb_cell_draws(np.ones((2, 2, 2)), np.ones((2, 2, 2)), 2, 5, np.random.default_rng(0))
    >>> p.shape, bool(np.allclose(p.sum((-2, -1)), 1.0))
    ((2, 5, 2, 2, 2), True)
    """
    shape = (chains, draws) + counts.shape
    g = rng.standard_gamma(alpha + counts, size=shape)
    return g / g.sum(axis=(-2, -1), keepdims=True)


@dataclass(frozen=True)
class BetaBinomial(EstimationMethod):
    """``method="bb"``: conjugate Beta posteriors of every group rate (labeled data only).

    Parameters
    ----------
    prior : {"uniform", "jeffreys", "scores"} or (alpha, beta), default="uniform"
        See :func:`cell_concentration`.
    prior_strength : float, default=2.0
        ``N0`` of ``prior="scores"``.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> post = sfm.bayes.posterior(sfm.msr("fairness.tpr"), [1, 1, 0, 1], [0.9, 0.2, 0.3, 0.8],
    ...     sensitive_features=list("aabb"), method="bb", random_state=0)
    >>> post.method, post.chain_draws.shape
    ('bb', (4, 1000))
    """

    prior: Any = "uniform"
    prior_strength: float = 2.0

    name: ClassVar[str] = "bb"

    def __post_init__(self) -> None:
        check_beta_prior(self.prior)
        if not (is_number(self.prior_strength) and self.prior_strength > 0):
            refuse_option("prior_strength", self.prior_strength, "pass a positive number (default 2.0)")

    def group_draws(self, data: FitData, bases: Bases, *, chains: int, draws: int, rng: Rng, seed: int) -> GroupDraws:
        counts, expected, rows = data.counts, None, (data.labeled, data.unlabeled)
        if isinstance(self.prior, str) and self.prior == "scores":  # the expected cells add up over rows
            expected = sum(expected_cells(r.scores, r.y_pred, r.codes, data.n_groups) for r in rows)
        alpha, kind = cell_concentration(bases, data.n_groups, self.prior, self.prior_strength, expected)
        cells = bb_cell_draws(counts, alpha, chains, draws, rng)
        # pooled cells: every group's cell probabilities weighted by its labeled size
        overall_cells = np.einsum("cdgtp,g->cdtp", cells, counts.sum((-2, -1)))
        values, overall, reasons = {}, {}, []
        with np.errstate(invalid="ignore", divide="ignore"):
            for b in bases:  # a rate no labeled row informs is undefined, not its prior (_method)
                values[b.name], why = without_prior_only(b, b.from_counts(cells), b.from_counts(counts), data.groups)
                pooled = b.from_counts(overall_cells)
                overall[b.name], _ = without_prior_only(b, pooled, b.from_counts(counts.sum(0)), data.groups)
                reasons += why
        attrs = {"prior": str(self.prior), "prior_cells": kind, "sampler": "monte carlo"}
        return GroupDraws(values=values, overall=overall, attrs=attrs, reasons=reasons)
