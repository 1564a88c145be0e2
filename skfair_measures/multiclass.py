"""The multiclass confusion tensor: counting it, and its Dirichlet-multinomial posterior.

Labels of K > 2 classes are counted by one weighted ``np.bincount`` into a
``(groups, K, K)`` tensor (:class:`~skfair_measures._stats.MulticlassStats`); every
count measure reads it (accuracy, error rate and balanced accuracy on K classes,
rates with ``pos_label=`` for one class against the rest, or ``average=``). This
module is the public door to that tensor and to its posterior: per group, the K x K
cell probabilities get a Dirichlet posterior (a multinomial likelihood with a
symmetric Dirichlet prior), the multiclass form of the Beta-Binomial model.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ._counts import MulticlassStats
from ._stats import check_inputs

__all__ = ["confusion_tensor", "dirichlet_draws"]


def confusion_tensor(
    y_true: Any, y_pred: Any, *, sensitive_features: Any, sample_weight: Any = None
) -> MulticlassStats:
    """The (weighted) confusion counts of every group, shape ``(n_groups, K, K)``.

    Also for two classes, so that binary labels can be treated as K = 2 classes.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        True and predicted class labels.
    sensitive_features : array-like of shape (n_samples,) or DataFrame
        Group of each sample.
    sample_weight : array-like of shape (n_samples,), optional

    Returns
    -------
    MulticlassStats
        ``counts[g, t, p]`` over ``groups`` and ``classes`` (the sorted union of labels).

    Examples
    --------
    >>> s = confusion_tensor(["a", "b", "c", "c"], ["a", "c", "c", "c"], sensitive_features=[0, 0, 1, 1])
    >>> list(s.classes), s.counts[1].tolist()
    (['a', 'b', 'c'], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    """
    sample = check_inputs(y_true, y_pred, sensitive_features, sample_weight)
    return sample.multiclass()


def dirichlet_draws(
    stats: MulticlassStats, n_draws: int = 4000, *, prior: float = 1.0, random_state: Any = None
) -> MulticlassStats:
    """Posterior draws of every group's K x K cell probabilities (Dirichlet-multinomial).

    Per group ``g``, the cells of the confusion tensor are multinomial with
    probabilities ``pi_g``; with a symmetric ``Dirichlet(prior)`` prior the posterior is
    ``Dirichlet(counts_g + prior)``. Draws are returned as counts scaled to the group
    size (``n_g * pi_g``), so any count measure evaluates them with
    ``measure.from_stats(draws)`` (rates are ratios of cells, so the scale is
    immaterial). For K = 2 this is the Beta-Binomial model of each rate.

    Parameters
    ----------
    stats : MulticlassStats or ConfusionStats
        Counts of one sample, shape ``(n_groups, K, K)``. Weighted counts are used as
        they are (pseudo-counts).
    n_draws : int, default=4000
    prior : float, default=1.0
        Concentration of the symmetric Dirichlet prior on each cell (1: uniform).
    random_state : int or numpy Generator, optional

    Returns
    -------
    MulticlassStats
        Counts of shape ``(n_draws, n_groups, K, K)``.

    Examples
    --------
    >>> from skfair_measures import msr
    >>> s = confusion_tensor([0, 1, 2] * 20, [0, 1, 1] * 20, sensitive_features=[0, 1] * 30)
    >>> d = dirichlet_draws(s, 500, random_state=0)
    >>> d.counts.shape
    (500, 2, 3, 3)
    >>> bool(msr("fairness.acc").from_stats(d).mean() < 0.2)
    True
    """
    if not isinstance(n_draws, int | np.integer) or n_draws < 1:
        raise ValueError(f"n_draws={n_draws!r}; pass a positive number of draws.")
    if not np.isfinite(prior) or prior <= 0:
        raise ValueError(f"prior={prior!r}; pass a positive Dirichlet concentration (1 is uniform).")
    counts = np.asarray(stats.counts, dtype=float)
    if counts.ndim != 3:
        raise ValueError(f"stats must hold one sample, shape (n_groups, K, K); got {counts.shape}.")
    rng = np.random.default_rng(random_state)
    n_groups, k = counts.shape[0], counts.shape[-1]
    alpha = counts.reshape(n_groups, k * k) + prior
    # Dirichlet draws as normalised Gamma variates: one vectorised call for all groups
    gamma = rng.standard_gamma(alpha, size=(n_draws, n_groups, k * k))
    probs = gamma / gamma.sum(axis=-1, keepdims=True)
    n = counts.sum(axis=(-2, -1))
    scaled = (probs * n[:, None]).reshape(n_draws, n_groups, k, k)
    if isinstance(stats, MulticlassStats):
        return dataclasses.replace(stats, counts=scaled)
    return MulticlassStats(scaled, stats.groups, np.arange(k))
