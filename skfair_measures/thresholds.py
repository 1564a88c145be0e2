"""A measure over a grid of decision thresholds, in one pass over the scores.

Fairness Indicators shows every metric at several thresholds; here any count measure
(a base metric and an operation, a composite, a constraint) is evaluated at many
thresholds at once. Each score is placed among the sorted thresholds once
(``np.searchsorted``: which thresholds predict it positive), one weighted bincount
counts (threshold segment, group, true label), and a cumulative sum from the top gives
the confusion counts of every group at every threshold: a ``ConfusionStats`` with a
leading threshold axis, which the measure evaluates vectorised. The cost is one
``O(n log T)`` pass, less than sorting the scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._arrays import check_scores
from ._counts import ConfusionStats
from ._labels import binarize_labels
from ._optional import require
from .measures import Measure, MeasureBase
from .registry import as_measures

__all__ = ["ThresholdCurve", "disparity_at_thresholds", "plot_disparity_at_thresholds", "threshold_counts"]


@dataclass(frozen=True, eq=False)
class ThresholdCurve:
    """A measure and its base metrics per group, at every threshold.

    Attributes
    ----------
    key : str
        The measure's key.
    values : pandas.Series
        The measure at each threshold (index ``threshold``); NaN where undefined.
    by_group : dict of str to pandas.DataFrame
        For each base metric, its value per group (columns) at each threshold (rows).
    stats : ConfusionStats
        The counts, shape ``(n_thresholds, n_groups, 2, 2)``: every other count
        measure can be evaluated on them (``measure.from_stats(curve.stats)``).
    """

    key: str
    values: pd.Series
    by_group: dict[str, pd.DataFrame]
    stats: ConfusionStats


def _check_thresholds(thresholds: Any) -> np.ndarray:
    if thresholds is None:
        return np.linspace(0.0, 1.0, 101)
    thr = np.asarray(thresholds, dtype=float)
    if thr.ndim != 1 or thr.size == 0 or not np.isfinite(thr).all():
        raise ValueError("thresholds must be a non-empty 1-D array of finite numbers, e.g. np.linspace(0, 1, 101).")
    return np.unique(thr)


def _count_measure(measure: MeasureBase | str) -> Measure:
    (m,) = as_measures([measure])
    kinds = {b.statistic for b in m.bases} if isinstance(m, Measure) else {"no groupwise base metrics"}
    if not isinstance(m, Measure) or kinds != {"confusion"}:
        raise ValueError(
            f"{m.key} does not read confusion counts only (its bases read {sorted(map(str, kinds))}); "
            "thresholds apply to count measures such as fairness.tpr, fairness.eod or fairness.cv."
        )
    return m


def _segments(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many of the sorted thresholds each score passes (``searchsorted(..., side="right")``).

    Hand-written because ``np.searchsorted`` of a million unsorted scores into a short
    grid costs about three sorts (a branchy binary search per score). Here a table of
    64 buckets per threshold gives each score a first guess from its bucket, and a
    vectorised correction, repeated only on the scores still off, makes every answer
    exact: ``thresholds[s - 1] <= score < thresholds[s]``.
    """
    lo, hi = float(thresholds[0]), float(thresholds[-1])
    n_buckets = 64 * thresholds.size
    width = (hi - lo) / n_buckets
    if thresholds.size < 4 or not width >= np.finfo(float).tiny or not np.isfinite(1.0 / width):
        return np.searchsorted(thresholds, scores, side="right")  # few thresholds, or a span too small to bucket
    first = np.searchsorted(thresholds, lo + width * np.arange(n_buckets + 1), side="right")
    pos = (scores - lo) * (1.0 / width)
    np.clip(pos, 0, n_buckets, out=pos)
    seg = first[pos.astype(np.intp)]
    above = np.append(thresholds, np.inf)  # above[s]: the next threshold a score at s would pass
    below = np.insert(thresholds, 0, -np.inf)  # below[s]: the last threshold it passed
    todo = None  # None: all scores; then the indices of those still off
    while todo is None or todo.size:
        s = scores if todo is None else scores[todo]
        g = seg if todo is None else seg[todo]
        up, down = s >= above[g], s < below[g]
        moved = np.flatnonzero(up | down)
        todo = moved if todo is None else todo[moved]
        seg[todo] += up[moved].astype(np.intp) - down[moved].astype(np.intp)
    return seg


def threshold_counts(
    y_true01: np.ndarray,
    scores: np.ndarray,
    group_codes: np.ndarray,
    groups: pd.Index,
    thresholds: np.ndarray,
    sample_weight: np.ndarray | None = None,
) -> ConfusionStats:
    """Confusion counts at every (sorted) threshold, shape ``(n_thresholds, n_groups, 2, 2)``.

    A sample is predicted positive at threshold ``t`` when its score is ``>= t``.

    Examples
    --------
    >>> s = threshold_counts(np.array([1, 0, 1]), np.array([0.9, 0.6, 0.3]), np.array([0, 0, 1]),
    ...                      pd.Index(["a", "b"]), np.array([0.5, 0.8]))
    >>> s.counts[:, 0].tolist()  # group a at 0.5, then at 0.8: [[tn, fp], [fn, tp]]
    [[[0.0, 1.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]
    """
    n_thr, n_groups = thresholds.size, len(groups)
    segment = _segments(scores, thresholds)
    cell = (segment * n_groups + group_codes) * 2 + y_true01
    counts = np.bincount(cell, weights=sample_weight, minlength=(n_thr + 1) * n_groups * 2)
    counts = counts.astype(float, copy=False).reshape(n_thr + 1, n_groups, 2)
    at_or_above = counts[::-1].cumsum(axis=0)[::-1]  # [s]: samples passing at least s thresholds
    positive = at_or_above[1:]  # predicted positive at threshold j: passes thresholds 0..j
    negative = at_or_above[0] - positive
    return ConfusionStats(np.stack([negative, positive], axis=-1), groups)


def disparity_at_thresholds(
    measure: MeasureBase | str,
    y_true: Any,
    y_score: Any,
    *,
    sensitive_features: Any,
    thresholds: Any = None,
    sample_weight: Any = None,
) -> ThresholdCurve:
    """A count measure at many thresholds in one pass over the scores.

    Parameters
    ----------
    measure : Measure or str
        A count measure or registry key (``"fairness.eod"``, ``"fairness.cv"``, ...);
        its own ``threshold`` is replaced by each threshold of the grid.
    y_true : array-like of shape (n_samples,)
        True labels (``pos_label`` of the measure says which is positive).
    y_score : array-like of shape (n_samples,)
        Predicted probabilities of the positive class.
    sensitive_features : array-like or DataFrame
    thresholds : array-like, optional
        Default: 101 points from 0 to 1. Sorted and deduplicated.
    sample_weight : array-like of shape (n_samples,), optional

    Returns
    -------
    ThresholdCurve

    Examples
    --------
    >>> curve = disparity_at_thresholds("fairness.tpr", [1, 1, 1, 1], [0.9, 0.4, 0.8, 0.7],
    ...                                 sensitive_features=list("aabb"), thresholds=[0.3, 0.5, 0.75])
    >>> curve.values.tolist()
    [0.0, 0.5, 0.0]
    >>> curve.by_group["tpr"].loc[0.75].tolist()
    [0.5, 0.5]
    """
    m = _count_measure(measure)
    thr = _check_thresholds(thresholds)
    sample = m.validate(y_true, y_score, sensitive_features=sensitive_features, sample_weight=sample_weight)
    scores = check_scores(sample.y_pred, "y_score")
    t01, _, _ = binarize_labels(sample.y_true, sample.y_true, m.inputs.pos_label)
    stats = threshold_counts(t01, scores, sample.group_codes, sample.groups, thr, sample.sample_weight)
    index = pd.Index(thr, name="threshold")
    with np.errstate(invalid="ignore", divide="ignore"):
        values = pd.Series(np.asarray(m.from_stats(stats), dtype=float), index=index, name=m.key)
        by_group = {b.name: pd.DataFrame(b.from_stats(stats)[0], index=index, columns=sample.groups) for b in m.bases}
    return ThresholdCurve(m.key, values, by_group, stats)


def plot_disparity_at_thresholds(curve: ThresholdCurve, *, ax: Any = None, by_group: bool = True) -> Any:
    """Plot a :class:`ThresholdCurve`: the measure (and each group's base metrics) per threshold.

    Parameters
    ----------
    curve : ThresholdCurve
    ax : matplotlib Axes, optional
    by_group : bool, default=True
        Also draw each group's base-metric values (thin lines, right axis label in legend).

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> curve = disparity_at_thresholds("fairness.tpr", [1, 1, 1, 1], [0.9, 0.4, 0.8, 0.7],
    ...                                 sensitive_features=list("aabb"))
    >>> plot_disparity_at_thresholds(curve).get_xlabel()
    'threshold'
    """
    plt = require("matplotlib.pyplot", "plots")  # on use: `import skfair_measures` never loads matplotlib

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    ax.plot(curve.values.index, curve.values.to_numpy(), color="black", linewidth=2.5, label=curve.key)
    if by_group:
        for base, frame in curve.by_group.items():
            for group in frame.columns:
                ax.plot(frame.index, frame[group].to_numpy(), linewidth=1, alpha=0.8, label=f"{base} ({group})")
    ax.set(xlabel="threshold", ylabel="value", title=f"{curve.key} by decision threshold")
    ax.legend(fontsize="small", ncol=2 if by_group and len(ax.lines) > 6 else 1)
    return ax
