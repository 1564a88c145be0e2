"""Frequentist bootstrap intervals for any measure, resampling counts rather than rows.

Groups are resampled separately (a stratified bootstrap: each replicate keeps the
observed group sizes, so every replicate compares the same groups). For unweighted
classification data the confusion counts of group ``g`` are sufficient: a replicate
is one multinomial draw of ``n_g`` samples over the group's four cells, so all
replicates come from one vectorised call, whatever the number of rows. Weighted
data, regression measures and wrapped scikit-learn metrics resample row
multiplicities instead (one ``np.bincount`` per replicate).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._stats import ConfusionStats, ErrorStats, GroupedSample
from .base import CountMetric, ErrorMetric
from .measures import Measure, _check_sample

__all__ = ["BootstrapResult", "bootstrap"]


@dataclass
class BootstrapResult:
    """Bootstrap distribution of a measure.

    Attributes
    ----------
    key : str
        Measure key.
    estimate : float
        The measure on the observed data.
    draws : ndarray of shape (n_boot,)
        The measure on each replicate (NaN where a replicate left a rate undefined).
    prob : float
        Default interval probability.
    """

    key: str
    estimate: float
    draws: np.ndarray
    prob: float = 0.95

    def interval(self, prob: float | None = None) -> tuple[float, float]:
        """Percentile interval, ignoring undefined replicates (with a warning)."""
        prob = self.prob if prob is None else prob
        ok = self.draws[~np.isnan(self.draws)]
        if ok.size < self.draws.size:
            warnings.warn(
                f"{self.draws.size - ok.size} of {self.draws.size} bootstrap replicates of "
                f"{self.key} are undefined (a group rate with zero denominator); the "
                "interval uses the others.",
                stacklevel=2,
            )
        if ok.size == 0:
            return (float("nan"), float("nan"))
        lo, hi = np.quantile(ok, [(1 - prob) / 2, (1 + prob) / 2])
        return float(lo), float(hi)

    @property
    def se(self) -> float:
        """Bootstrap standard error."""
        return float(np.nanstd(self.draws, ddof=1))

    def summary(self) -> pd.Series:
        """Estimate, standard error and interval bounds."""
        lo, hi = self.interval()
        return pd.Series(
            {"estimate": self.estimate, "se": self.se, "lower": lo, "upper": hi, "prob": self.prob},
            name=self.key,
        )


def _leaves_are(measure: Measure, kind: type) -> bool:
    return all(isinstance(b, kind) for b in measure.bases)


def _multinomial_counts(stats: ConfusionStats, n_boot: int, rng: np.random.Generator) -> ConfusionStats:
    counts = stats.counts.reshape(len(stats.groups), 4)
    n = counts.sum(axis=1)
    p = np.divide(counts, n[:, None], out=np.zeros_like(counts), where=n[:, None] > 0)
    draws = rng.multinomial(n.astype(np.int64), p, size=(n_boot, len(n)))
    return ConfusionStats(draws.reshape(n_boot, len(n), 2, 2).astype(float), stats.groups)


def _row_multiplicities(sample: GroupedSample, rng: np.random.Generator) -> np.ndarray:
    """How often each row appears in one stratified (by group) bootstrap replicate."""
    order = np.argsort(sample.group_codes, kind="stable")
    sizes = np.bincount(sample.group_codes, minlength=sample.n_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # uniform draws within each group's block of the sorted rows
    u = rng.random(order.size)
    picks = starts[sample.group_codes[order]] + np.floor(u * sizes[sample.group_codes[order]]).astype(np.intp)
    mult = np.zeros(order.size)
    np.add.at(mult, order[picks], 1.0)
    return mult


def bootstrap(
    measure: Measure,
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any = None,
    sample_weight: Any = None,
    n_boot: int = 1000,
    prob: float = 0.95,
    random_state: Any = None,
) -> BootstrapResult:
    """Bootstrap distribution and percentile interval of a measure.

    Parameters
    ----------
    measure : Measure
        Any measure: count-based, regression, composite, constraint or wrapped.
    y_true, y_pred, sensitive_features, sample_weight
        As for calling the measure.
    n_boot : int, default=1000
        Number of replicates.
    prob : float, default=0.95
        Interval probability.
    random_state : int or numpy Generator, optional

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> from skfair_measures import msr
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 2000); yhat = rng.integers(0, 2, 2000); a = rng.integers(0, 2, 2000)
    >>> res = msr("fairness.tpr").bootstrap(y, yhat, sensitive_features=a, n_boot=500, random_state=0)
    >>> lo, hi = res.interval()
    >>> bool(lo <= res.estimate <= hi)
    True
    """
    if n_boot < 2:
        raise ValueError(f"n_boot={n_boot}; pass at least 2 replicates (typically 1000).")
    if not 0 < prob < 1:
        raise ValueError(f"prob={prob}; pass a probability in (0, 1).")
    rng = np.random.default_rng(random_state)
    sample = _check_sample(measure, y_true, y_pred, sensitive_features, sample_weight)
    estimate = measure._evaluate(sample).value
    data, pos = measure._prepared(sample)
    from .scoring import _leaves

    uniform_inputs = len({(leaf.threshold, leaf.pos_label) for leaf in _leaves(measure)}) == 1
    if not uniform_inputs:
        counts_path = rows_path = False
    else:
        counts_path = _leaves_are(measure, CountMetric) and sample.sample_weight is None
        rows_path = _leaves_are(measure, CountMetric) or _leaves_are(measure, ErrorMetric)
    if counts_path:
        stats = _multinomial_counts(data.confusion(pos), n_boot, rng)
        draws = measure.from_stats(stats)
    elif rows_path:
        draws = np.empty(n_boot)
        w0 = np.ones(data.group_codes.size) if data.sample_weight is None else data.sample_weight
        for b in range(n_boot):
            w = w0 * _row_multiplicities(data, rng)
            if _leaves_are(measure, CountMetric):
                t, p = data.labels01(pos)
                stats: ConfusionStats | ErrorStats = ConfusionStats.from_codes(data.group_codes, t, p, data.groups, w)
            else:
                stats = ErrorStats.from_codes(data.group_codes, data.y_true, data.y_pred, data.groups, w)
            draws[b] = measure.from_stats(stats)
    else:  # wrapped scikit-learn metrics or mixed inputs: resample rows and recompute
        draws = np.empty(n_boot)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for b in range(n_boot):
                mult = _row_multiplicities(sample, rng).astype(np.intp)
                rows = np.repeat(np.arange(mult.size), mult)
                draws[b] = measure._evaluate(sample.subset(rows)).value
    return BootstrapResult(measure.key, float(estimate), np.asarray(draws, dtype=float), prob)
