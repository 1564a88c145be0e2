"""Sufficient statistics per group: binary and K-class confusion counts, regression error sums.

Each record is additive: the statistics of two chunks of data sum to those of the whole
(``+`` aligns the groups by label), which lets cross-validation folds, bootstrap
replicates and distributed partitions share one code path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._labels import class_codes

__all__ = ["ConfusionStats", "ErrorStats", "MulticlassStats"]


@dataclass(frozen=True, eq=False)
class ConfusionStats:
    """Weighted confusion counts per group, shape ``(..., n_groups, 2, 2)``.

    ``counts[..., g, t, p]`` is the (weighted) number of samples of group ``g``
    with true label ``t`` and predicted label ``p`` (0 = negative, 1 = positive).
    Leading axes hold folds, bootstrap replicates or posterior draws.

    Examples
    --------
    >>> s = ConfusionStats.from_codes([0, 0, 1], [1, 0, 1], [1, 1, 0], pd.Index(["a", "b"]))
    >>> s.counts[0].tolist()
    [[0.0, 1.0], [0.0, 1.0]]
    >>> float((s + s).counts.sum())
    6.0
    """

    counts: np.ndarray
    groups: pd.Index

    @classmethod
    def from_codes(
        cls, group_codes: Any, y_true: Any, y_pred: Any, groups: pd.Index, sample_weight: np.ndarray | None = None
    ) -> ConfusionStats:
        """One weighted ``np.bincount`` over the flat (group, y_true, y_pred) cell."""
        return cls(_cell_counts(group_codes, y_true, y_pred, len(groups), 2, sample_weight), groups)

    @property
    def overall(self) -> np.ndarray:
        """Counts pooled over all groups, shape ``(..., 2, 2)``."""
        return self.counts.sum(axis=-3)

    @property
    def n(self) -> np.ndarray:
        """(Weighted) number of samples per group."""
        return self.counts.sum(axis=(-2, -1))

    def __add__(self, other: ConfusionStats) -> ConfusionStats:
        if not isinstance(other, ConfusionStats):
            return NotImplemented
        return ConfusionStats(*_merge(self.counts, self.groups, other.counts, other.groups, 3))


@dataclass(frozen=True, eq=False)
class MulticlassStats(ConfusionStats):
    """Weighted confusion counts per group of K classes, shape ``(..., n_groups, K, K)``.

    ``counts[..., g, t, p]`` is the (weighted) number of samples of group ``g`` with
    true class ``classes[t]`` and predicted class ``classes[p]``. The binary
    :class:`ConfusionStats` is the case K = 2; count metrics read either (accuracy,
    error rate and balanced accuracy on K classes, rates averaged over classes, or
    one class against the rest through ``pos_label``).

    Examples
    --------
    >>> s = MulticlassStats.from_labels([0, 0, 1], [0, 1, 2], [0, 2, 2], pd.Index(["a", "b"]), pd.Index([0, 1, 2]))
    >>> s.counts.shape, float(s.counts[0].trace())
    ((2, 3, 3), 1.0)
    >>> (s + s).counts.sum()
    np.float64(6.0)
    """

    classes: pd.Index = field(default_factory=lambda: pd.RangeIndex(2))

    @classmethod
    def from_labels(
        cls, group_codes: Any, y_true: Any, y_pred: Any, groups: pd.Index, classes: pd.Index, sample_weight: Any = None
    ) -> MulticlassStats:
        """One weighted ``np.bincount`` over the flat (group, true class, predicted class) cell."""
        t, p = class_codes(np.asarray(y_true), np.asarray(y_pred), pd.Index(classes))
        return cls.from_class_codes(group_codes, t, p, groups, classes, sample_weight)

    @classmethod
    def from_class_codes(
        cls, group_codes: Any, t: Any, p: Any, groups: pd.Index, classes: pd.Index, sample_weight: Any = None
    ) -> MulticlassStats:
        """The bincount on class codes ``0..K-1`` already computed."""
        counts = _cell_counts(group_codes, t, p, len(groups), len(classes), sample_weight)
        return cls(counts, groups, pd.Index(classes))

    def __add__(self, other: ConfusionStats) -> MulticlassStats:
        if not isinstance(other, MulticlassStats):
            return NotImplemented
        classes = self.classes.union(other.classes, sort=False)
        a, b = _widen_classes(self.counts, self.classes, classes), _widen_classes(other.counts, other.classes, classes)
        return MulticlassStats(*_merge(a, self.groups, b, other.groups, 3), classes)


def _cell_counts(group_codes: Any, t: Any, p: Any, n_groups: int, k: int, sample_weight: Any) -> np.ndarray:
    """Counts ``(n_groups, k, k)`` from one weighted ``np.bincount`` over the flat (group, true, predicted) cell."""
    g, t, p = (np.asarray(a, dtype=np.intp) for a in (group_codes, t, p))
    cell = (g * k + t) * k + p
    counts = np.bincount(cell, weights=sample_weight, minlength=n_groups * k * k)
    return counts.astype(float, copy=False).reshape(n_groups, k, k)


def _widen_classes(counts: np.ndarray, have: pd.Index, want: pd.Index) -> np.ndarray:
    """Counts on the classes ``want`` (zeros for classes absent from ``have``)."""
    if have.equals(want):
        return counts
    out = np.zeros(counts.shape[:-2] + (len(want), len(want)))
    idx = want.get_indexer(have)
    out[..., idx[:, None], idx[None, :]] = counts
    return out


@dataclass(frozen=True, eq=False)
class ErrorStats:
    """Regression sufficient statistics per group, shape ``(..., n_groups, 3)``.

    The last axis holds the (weighted) sample count, the sum of absolute errors and
    the sum of squared errors; errors are ``y_pred - y_true``.

    Examples
    --------
    >>> s = ErrorStats.from_codes([0, 1], [1.0, 2.0], [2.0, 2.0], pd.Index(["a", "b"]))
    >>> s.sums.tolist()
    [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
    """

    sums: np.ndarray
    groups: pd.Index

    @classmethod
    def from_codes(
        cls, group_codes: Any, y_true: Any, y_pred: Any, groups: pd.Index, sample_weight: np.ndarray | None = None
    ) -> ErrorStats:
        """Three weighted ``np.bincount`` over the groups: the count, the absolute and the squared errors."""
        g = np.asarray(group_codes, dtype=np.intp)
        err = np.asarray(y_pred, dtype=float) - np.asarray(y_true, dtype=float)
        w = np.ones_like(err) if sample_weight is None else sample_weight
        n_groups = len(groups)
        sums = np.stack(
            [
                np.bincount(g, weights=w, minlength=n_groups),
                np.bincount(g, weights=w * np.abs(err), minlength=n_groups),
                np.bincount(g, weights=w * err * err, minlength=n_groups),
            ],
            axis=-1,
        )
        return cls(sums, groups)

    @property
    def overall(self) -> np.ndarray:
        return self.sums.sum(axis=-2)

    @property
    def n(self) -> np.ndarray:
        return self.sums[..., 0]

    def __add__(self, other: ErrorStats) -> ErrorStats:
        if not isinstance(other, ErrorStats):
            return NotImplemented
        return ErrorStats(*_merge(self.sums, self.groups, other.sums, other.groups, 2))


def _merge(a: np.ndarray, ga: pd.Index, b: np.ndarray, gb: pd.Index, tail: int) -> tuple[np.ndarray, pd.Index]:
    """Add two group-indexed statistics arrays, aligning their groups by label."""
    if ga.equals(gb):
        return a + b, ga
    union = ga.union(gb, sort=False)
    g_axis = a.ndim - tail

    def widen(arr: np.ndarray, g: pd.Index) -> np.ndarray:
        shape = list(arr.shape)
        shape[g_axis] = len(union)
        out = np.zeros(shape, dtype=float)
        idx = [slice(None)] * arr.ndim
        idx[g_axis] = union.get_indexer(g)
        out[tuple(idx)] = arr
        return out

    return widen(a, ga) + widen(b, gb), union
