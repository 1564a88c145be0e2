"""Sufficient statistics per group: binary and K-class confusion counts, regression error sums.

Each record is additive: the statistics of two chunks of data sum to those of the whole
(``+`` aligns the groups by label), which lets cross-validation folds, bootstrap
replicates and distributed partitions share one code path.

A weighted record also carries each group's number of rows (``rows``), so that a group
whose rows all weigh 0 is told apart from a group without rows: both have zero counts,
but only the first is undefined because of its weights (:meth:`ConfusionStats.weightless`).
Without ``rows`` (unweighted data) a group has as many rows as its counts say.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ._labels import class_codes

__all__ = ["ConfusionStats", "ErrorStats", "MulticlassStats", "weightless"]


def weightless(rows: Any, weight: Any) -> np.ndarray:
    """Which groups have rows but a total weight of 0 (the one test of an all-zero-weight group).

    Examples
    --------
    >>> weightless([2, 0, 3], [0.0, 0.0, 1.5]).tolist()
    [True, False, False]
    """
    return (np.asarray(rows) > 0) & (np.asarray(weight) == 0)


def _rows_of(g: Any, n_groups: int, sample_weight: Any) -> np.ndarray | None:
    """Rows per group of a weighted sample (None unweighted: the counts are the rows)."""
    return None if sample_weight is None else np.bincount(np.asarray(g, np.intp), minlength=n_groups).astype(float)


def _merged_rows(a: Any, b: Any) -> np.ndarray | None:
    """The rows of ``a + b``: None if neither knows its rows, else each side's rows (or its counts)."""
    if a.rows is None and b.rows is None:
        return None
    ra, rb = (np.asarray(s.n if s.rows is None else s.rows, dtype=float) for s in (a, b))
    return _merge(ra, a.groups, rb, b.groups, 1)[0]


class _Additive:
    """What every record of statistics per group shares: ``+`` aligns the groups by label, and ``weightless``.

    ``_values`` names the field of the statistics and how many axes follow the groups' axis.
    """

    _values: ClassVar[tuple[str, int]]

    def weightless(self: Any) -> np.ndarray:
        """Which groups have rows whose sample weights are all 0 (so their counts are 0)."""
        return np.zeros(np.shape(self.n), dtype=bool) if self.rows is None else weightless(self.rows, self.n)

    def __add__(self: Any, other: Any) -> Any:
        if not isinstance(other, type(self)):
            return NotImplemented
        name, tail = self._values
        values, groups = _merge(getattr(self, name), self.groups, getattr(other, name), other.groups, tail)
        return dataclasses.replace(self, groups=groups, rows=_merged_rows(self, other), **{name: values})


@dataclass(frozen=True, eq=False)
class ConfusionStats(_Additive):
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
    #: Rows per group ``(n_groups,)`` of weighted data; None when the counts are the rows (unweighted).
    rows: np.ndarray | None = field(default=None, kw_only=True)

    @classmethod
    def from_codes(
        cls, group_codes: Any, y_true: Any, y_pred: Any, groups: pd.Index, sample_weight: np.ndarray | None = None
    ) -> ConfusionStats:
        """One weighted ``np.bincount`` over the flat (group, y_true, y_pred) cell."""
        counts = _cell_counts(group_codes, y_true, y_pred, len(groups), 2, sample_weight)
        return cls(counts, groups, rows=_rows_of(group_codes, len(groups), sample_weight))

    @property
    def overall(self) -> np.ndarray:
        """Counts pooled over all groups, shape ``(..., 2, 2)``."""
        return self.counts.sum(axis=-3)

    @property
    def n(self) -> np.ndarray:
        """(Weighted) number of samples per group."""
        return self.counts.sum(axis=(-2, -1))

    _values = ("counts", 3)


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
        return cls(counts, groups, pd.Index(classes), rows=_rows_of(group_codes, len(groups), sample_weight))

    def __add__(self, other: ConfusionStats) -> MulticlassStats:
        if not isinstance(other, MulticlassStats):
            return NotImplemented
        classes = self.classes.union(other.classes, sort=False)
        a, b = _widen_classes(self.counts, self.classes, classes), _widen_classes(other.counts, other.classes, classes)
        rows = _merged_rows(self, other)
        return MulticlassStats(*_merge(a, self.groups, b, other.groups, 3), classes, rows=rows)


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
class ErrorStats(_Additive):
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
    #: Rows per group ``(n_groups,)`` of weighted data; None when the weighted count is the rows (unweighted).
    rows: np.ndarray | None = field(default=None, kw_only=True)

    @classmethod
    def from_codes(
        cls, group_codes: Any, y_true: Any, y_pred: Any, groups: pd.Index, sample_weight: np.ndarray | None = None
    ) -> ErrorStats:
        """Three weighted ``np.bincount`` over the groups: the count, the absolute and the squared errors."""
        g = np.asarray(group_codes, dtype=np.intp)
        err = np.asarray(y_pred, dtype=float) - np.asarray(y_true, dtype=float)
        w = np.ones_like(err) if sample_weight is None else sample_weight
        n = len(groups)
        sums = np.stack([np.bincount(g, weights=v, minlength=n) for v in (w, w * np.abs(err), w * err * err)], axis=-1)
        return cls(sums, groups, rows=_rows_of(g, n, sample_weight))

    @property
    def overall(self) -> np.ndarray:
        return self.sums.sum(axis=-2)

    @property
    def n(self) -> np.ndarray:
        return self.sums[..., 0]

    _values = ("sums", 2)


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
