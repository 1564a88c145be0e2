"""Bayesian reliability diagrams and ECE posteriors per group (seed 002 chapter 2).

Scores are binned; in every (group, bin) the frequency of the outcome is a Beta-
Binomial parameter ``theta_b`` (seed 002 eqs. 2.9-2.11). The expected calibration
error ``ECE = sum_b p_b |theta_b - s_b|`` (eq. 2.12), with ``p_b`` the share of the
group's scores in bin ``b`` and ``s_b`` their mean, then has a posterior obtained
by Monte Carlo over the ``theta_b`` draws. ``p_b`` and ``s_b`` need no labels, so
unlabeled scores may be added to estimate them.

Two readings of "calibrated" are offered: ``kind="positive"`` compares the score of
the positive class with the frequency of ``y = 1`` (the binary reliability diagram
of seed 002 figure 4.3), ``kind="confidence"`` compares the confidence
``max(s, 1 - s)`` with the accuracy of the prediction (seed 002 section 2.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._arrays import check_scores
from .._labels import binarize_labels
from .._stats import check_inputs
from ..results import check_prob
from ._api import _rng, _unlabeled_rows
from ._method import Call
from ._posterior import group_labels

__all__ = ["ReliabilityPosterior", "reliability_posterior"]


@dataclass(eq=False)
class ReliabilityPosterior:
    """Posterior of the reliability diagram and of the ECE in every group.

    Attributes
    ----------
    groups : pandas.Index
    edges : ndarray of shape (n_bins + 1,)
        Bin edges of the (confidence or positive-class) score.
    kind : {"positive", "confidence"}
    mean_score : ndarray of shape (group, bin)
        ``s_b``: mean score per bin (labeled and unlabeled scores); NaN for empty bins.
    weight : ndarray of shape (group, bin)
        ``p_b``: share of the group's scores in each bin.
    n, k : ndarray of shape (group, bin)
        Labeled samples per bin and how many of them had the outcome.
    theta : ndarray of shape (draw, group, bin)
        Posterior draws of the outcome frequency per bin.
    ece : ndarray of shape (draw, group)
        Posterior draws of the ECE per group.
    ece_freq : ndarray of shape (group,)
        Frequentist ECE (labeled data only, empty bins skipped).
    """

    groups: pd.Index
    edges: np.ndarray
    kind: str
    mean_score: np.ndarray
    weight: np.ndarray
    n: np.ndarray
    k: np.ndarray
    theta: np.ndarray
    ece: np.ndarray
    ece_freq: np.ndarray

    def ece_summary(self, prob: float = 0.95) -> pd.DataFrame:
        """Posterior mean and equal-tailed interval of the ECE per group.

        Returns
        -------
        pandas.DataFrame
            Indexed by group: ``mean, lower, upper, frequentist, n_labeled``.
        """
        prob = check_prob(prob)
        lo, hi = np.quantile(self.ece, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
        posterior = {"mean": self.ece.mean(0), "lower": lo, "upper": hi, "frequentist": self.ece_freq}
        return pd.DataFrame(posterior | {"n_labeled": self.n.sum(1).astype(int)}, self.groups)

    def table(self, prob: float = 0.95) -> pd.DataFrame:
        """The reliability diagram as a long table: one row per (group, bin)."""
        prob = check_prob(prob)
        lo, hi = np.quantile(self.theta, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
        labels, n_bins = group_labels(self.groups), self.edges.size - 1
        bins = {"group": np.repeat(labels, n_bins), "bin_lower": np.tile(self.edges[:-1], len(labels))}
        bins |= {"bin_upper": np.tile(self.edges[1:], len(labels)), "mean_score": self.mean_score.ravel()}
        data = {"weight": self.weight.ravel(), "n": self.n.ravel().astype(int), "k": self.k.ravel().astype(int)}
        posterior = {"mean": self.theta.mean(0).ravel(), "lower": lo.ravel(), "upper": hi.ravel()}
        return pd.DataFrame(bins | data | posterior)

    def ece_difference(self, reference: Any) -> np.ndarray:
        """Draws of ``ECE(other) - ECE(reference)`` (two groups) or of the largest-magnitude one."""
        r = self.groups.get_loc(reference)
        d = np.delete(self.ece, r, axis=1) - self.ece[:, r : r + 1]
        return np.take_along_axis(d, np.abs(d).argmax(1)[:, None], 1)[:, 0]

    def plot(self, ax: Any = None, prob: float = 0.95) -> Any:
        """Draw the diagram; see :func:`skfair_measures.bayes.plot_reliability`."""
        from ._plots import plot_reliability

        return plot_reliability(self, ax=ax, prob=prob)


def reliability_posterior(
    y_true: Any,
    y_score: Any,
    *,
    sensitive_features: Any = None,
    n_bins: int = 10,
    kind: Literal["positive", "confidence"] = "positive",
    prior: Literal["diagonal", "uniform"] = "diagonal",
    prior_strength: float = 2.0,
    unlabeled_scores: Any = None,
    unlabeled_sensitive: Any = None,
    threshold: float = 0.5,
    pos_label: Any = None,
    n_draws: int = 4000,
    random_state: Any = None,
) -> ReliabilityPosterior:
    """Bayesian reliability diagram and ECE posterior per group (seed 002 section 2.3).

    Parameters
    ----------
    y_true : array-like of shape (n_labeled,)
    y_score : array-like of shape (n_labeled,)
        Predicted probability of the positive class.
    sensitive_features : array-like, optional
        Groups; None gives one group ``"all"``.
    n_bins : int, default=10
        Equal-width bins on ``[0, 1]`` (``kind="positive"``) or ``[0.5, 1]``
        (``kind="confidence"``).
    kind : {"positive", "confidence"}, default="positive"
    prior : {"diagonal", "uniform"}, default="diagonal"
        ``Beta(N0 s_b, N0 (1 - s_b))``, centred on the diagonal (seed 002's choice,
        ``N0 = prior_strength``), or ``Beta(1, 1)``.
    prior_strength : float, default=2.0
    unlabeled_scores, unlabeled_sensitive : array-like, optional
        Extra scores (without labels) for the bin weights ``p_b`` and means ``s_b``.
    threshold : float, default=0.5
        Decision threshold for ``kind="confidence"``.
    pos_label : object, optional
    n_draws : int, default=4000
    random_state : int, Generator or None

    Returns
    -------
    ReliabilityPosterior

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=2000)
    >>> y = (rng.uniform(size=2000) < s).astype(int)  # calibrated scores
    >>> rel = reliability_posterior(y, s, sensitive_features=np.repeat(["a", "b"], 1000),
    ...                             random_state=0)
    >>> bool((rel.ece_summary()["mean"] < 0.06).all())
    True
    """
    if n_bins < 1:
        raise ValueError(f"n_bins={n_bins!r} must be >= 1.")
    for name, value, valid in (("kind", kind, ("positive", "confidence")), ("prior", prior, ("diagonal", "uniform"))):
        if value not in valid:
            raise ValueError(f"{name}={value!r}; pass {' or '.join(map(repr, valid))}.")
    one_group = sensitive_features is None
    if one_group:
        sensitive_features = pd.Series(np.full(int(np.shape(y_true)[0]), "all"), name="group")
    groups_arg = pd.Index(["all"], name="group") if one_group else None
    sample = check_inputs(y_true, y_score, sensitive_features, groups=groups_arg, y_pred_name="y_score")
    s = check_scores(sample.y_pred, "y_score")
    t, _, _ = binarize_labels(sample.y_true, sample.y_true, pos_label)
    groups, codes = sample.groups, sample.group_codes
    if one_group and unlabeled_scores is not None and unlabeled_sensitive is None:
        unlabeled_sensitive = np.full(np.shape(unlabeled_scores)[0], "all")
    call = Call(
        y_true, y_score, sensitive_features, unlabeled_scores=unlabeled_scores, unlabeled_sensitive=unlabeled_sensitive
    )
    unl = _unlabeled_rows(call, groups, threshold)
    s_all, c_all = np.concatenate([s, unl.scores]), np.concatenate([codes, unl.codes])
    edges = np.linspace(0.5 if kind == "confidence" else 0.0, 1.0, n_bins + 1)
    shape = (len(groups), n_bins)

    def transform(scores: np.ndarray) -> np.ndarray:
        return np.maximum(scores, 1 - scores) if kind == "confidence" else scores

    def per_bin(scores: np.ndarray, group: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Per (group, bin) of the transformed scores: rows, or the sum of ``weights``."""
        cell = group * n_bins + np.clip(np.searchsorted(edges, transform(scores), side="right") - 1, 0, n_bins - 1)
        return np.bincount(cell, weights=weights, minlength=shape[0] * n_bins).reshape(shape).astype(float)

    tot, sums = per_bin(s_all, c_all), per_bin(s_all, c_all, transform(s_all))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score, weight = np.where(tot > 0, sums / tot, np.nan), tot / tot.sum(1, keepdims=True)
    z = (t == (s >= threshold)).astype(float) if kind == "confidence" else t.astype(float)
    nb, kb = per_bin(s, codes), per_bin(s, codes, z)
    centre = np.where(np.isnan(mean_score), (edges[:-1] + edges[1:]) / 2, mean_score)
    m = np.clip(centre, 1e-3, 1 - 1e-3)
    a0, b0 = (prior_strength * m, prior_strength * (1 - m)) if prior == "diagonal" else (1.0, 1.0)
    theta = _rng(random_state).beta(a0 + kb, b0 + nb - kb, size=(n_draws, *shape))
    ece = (np.nan_to_num(weight) * np.abs(theta - np.nan_to_num(mean_score))).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        freq = np.where(nb > 0, kb / np.where(nb > 0, nb, 1), 0.0)
        s_l = np.where(nb > 0, per_bin(s, codes, transform(s)) / np.where(nb > 0, nb, 1), 0.0)
        ece_freq = (np.nan_to_num(nb / nb.sum(1, keepdims=True)) * np.abs(freq - s_l)).sum(1)
    return ReliabilityPosterior(groups, edges, kind, mean_score, weight, nb, kb, theta, ece, ece_freq)
