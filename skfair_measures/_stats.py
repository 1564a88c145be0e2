"""The validated sample of a measure call, and its counting.

Raw inputs enter the library once, through :func:`check_inputs`: the arrays are checked
(:mod:`._arrays`), the groups encoded (:mod:`._groups`), and the labels read by the
rules of :mod:`._labels`. From there on only integer codes and a small table of group
labels travel, in a :class:`GroupedSample` that counts its statistics (:mod:`._counts`)
on demand, with one ``np.bincount``, or, for integer inputs, one pass over the raw value
ranges (the integer fast path below).

Import the names of the modules split out of this one from those modules: this one
re-exports only the three the report still reads from here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import _reuse
from ._arrays import _check_no_missing, _check_weight, _levels, _range_limit, _shifted, _to_1d, check_scores
from ._counts import ConfusionStats, ErrorStats, MulticlassStats, _widen_classes, weightless
from ._groups import _check_two_groups, _checked_columns, _encoded, resolve_sensitive
from ._labels import (
    Factorized,
    _check_label_values,
    _distinct,
    _positive_label,
    binarize_labels,
    check_labels,
    class_codes,
    class_index,
    factorized_labels,
    implied_positive,
)
from ._small_groups import small_group_plan

__all__ = [
    "GroupedSample",
    "binarize_labels",
    "check_inputs",
    "check_scores",
    "resolve_sensitive",
    "restrict_small_groups",
]

#: Largest confusion tensor (groups x K x K cells) built for multiclass labels.
_MAX_CELLS = 50_000_000
#: Most cells whose three weighted moments (rows, w, w**2) are kept: beyond, weighted counts take one bincount.
_MOMENT_CELLS = 1 << 20


@dataclass(eq=False)
class GroupedSample:
    """Validated inputs of one measure call: raw labels plus integer group codes.

    Built by :func:`check_inputs`; statistics are computed on demand and cached, so
    that several measures evaluated on the same sample share one ``np.bincount``.
    ``labels`` are the declared classes (``labels=``), None for those seen
    (:func:`skfair_measures._labels.class_index` decides).
    """

    y_true: np.ndarray
    y_pred: np.ndarray
    group_codes: np.ndarray
    groups: pd.Index
    sample_weight: np.ndarray | None = None
    labels: pd.Index | None = None
    #: The sample these rows were left from (small groups dropped): its labels are the ones seen, read when asked.
    classes_of: GroupedSample | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    def _cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``self._cache[key]``, computed once."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def labels01(self, pos_label: Any = None) -> tuple[np.ndarray, np.ndarray]:
        def binary() -> tuple[np.ndarray, np.ndarray]:
            distinct, factorized = self._distinct_labels(), self._factorized()
            t, p, _ = binarize_labels(self.y_true, self.y_pred, pos_label, distinct, self.labels, factorized=factorized)
            return t, p

        return self._cached(("labels", pos_label), binary)

    def confusion(self, pos_label: Any = None) -> ConfusionStats:
        """Confusion counts per group (cached per ``pos_label``).

        Binary labels give :class:`ConfusionStats`; labels of more than two classes
        give :class:`MulticlassStats` (K x K), or, with ``pos_label``, the binary
        counts of that class against the rest.
        """
        if self.reads_classes(pos_label):
            return self.multiclass()

        def binary() -> ConfusionStats:
            if "class_counts" in self._cache:
                return self._binary_from_class_counts(pos_label)
            if self.sample_weight is not None:
                counts, rows = self._weighted_counts(False, pos_label)
                return ConfusionStats(counts, self.groups, rows=rows)
            t, p = self.labels01(pos_label)
            return ConfusionStats.from_codes(self.group_codes, t, p, self.groups, self.sample_weight)

        return self._cached(("confusion", pos_label), binary)

    def cell_moments(self, pos_label: Any = None) -> np.ndarray:
        """Per confusion cell: rows, summed weight, summed squared weight, rows unlike its first weight (cached).

        Shape ``(n_groups * K * K, 4)``, cells in the C order of the counts
        :meth:`confusion` gives for ``pos_label`` (K = 2, or the number of classes when
        :meth:`reads_classes`). Weighted counts are read from it (its second column), and
        the weighted bootstrap draws from the others (a cell whose weights all
        match draws exactly): one pass over the rows gives both.
        """
        return self._moments(self.reads_classes(pos_label), pos_label)

    def _moments(self, multi: bool, pos_label: Any) -> np.ndarray:
        key = ("moments", "classes") if multi else ("moments", pos_label)
        if key not in self._cache and not multi and ("moments", "classes") in self._cache:
            binary = self._binary_from_class_moments(pos_label)
            if binary is not None:
                self._cache[key] = binary
        if key not in self._cache:
            t, p = self.class_codes() if multi else self.labels01(pos_label)
            k = len(self.classes()) if multi else 2
            w = np.ones(t.size) if self.sample_weight is None else self.sample_weight
            self._cache[key] = _weighted_cells(self.group_codes, t, p, self.n_groups, k, w)
        return self._cache[key]

    def _binary_from_class_moments(self, pos_label: Any) -> np.ndarray | None:
        """The binary cell moments read from those of two classes (the integer path), else None.

        With two classes the positive one against the rest is the class axis itself, or
        both axes reversed: the same cells, so the same sums.
        """
        classes = self.classes()
        if len(classes) != 2:
            return None
        pos = _positive_label(pos_label, *self._distinct_labels(), self.labels)  # the checks labels01 makes
        cells = self._cache["moments", "classes"].reshape(self.n_groups, 2, 2, 4)
        return (cells if pos == classes[1] else cells[:, ::-1, ::-1]).reshape(-1, 4)

    def _weighted_counts(self, multi: bool, pos_label: Any) -> tuple[np.ndarray, np.ndarray]:
        """Weighted counts ``(n_groups, K, K)`` and rows per group, read from the cell moments."""
        moments = self._moments(multi, pos_label)
        k = len(self.classes()) if multi else 2
        return moments[:, 1].reshape(self.n_groups, k, k), moments[:, 0].reshape(self.n_groups, -1).sum(axis=1)

    def _binary_from_class_counts(self, pos_label: Any) -> ConfusionStats:
        """The 2 x 2 counts of ``pos_label`` against the rest, summed from the K x K counts."""
        _check_label_values(self.y_true, self.y_pred)
        pos = _positive_label(pos_label, *self._distinct_labels(), self.labels)
        values = self._seen_classes().to_numpy()  # the axes of the counts of the integer path
        is_pos = np.broadcast_to(np.asarray(values == pos, dtype=bool), values.shape)
        onehot = np.stack([~is_pos, is_pos], axis=1).astype(float)
        counts = np.einsum("gij,ia,jb->gab", self._cache["class_counts"], onehot, onehot)
        return ConfusionStats(counts, self.groups)

    def reads_classes(self, pos_label: Any = None) -> bool:
        """Whether the confusion counts are per class (K x K) rather than positive against the rest.

        Without ``pos_label``: more than two classes, or classes that imply no positive
        one (``["no", "yes"]``), where only metrics defined on the classes themselves
        (accuracy, error rate, balanced accuracy, class averages) have a value.
        """
        classes = self.classes()
        return pos_label is None and (len(classes) > 2 or not implied_positive(classes))

    def classes(self) -> pd.Index:
        """The declared classes (``labels=``), or else the sorted union of the labels of y_true and y_pred (cached)."""
        return self._cached("classes", lambda: class_index(*self._distinct_labels(), self.labels))

    def _seen_classes(self) -> pd.Index:
        """The sorted union of the labels of y_true and y_pred."""
        return self.classes() if self.labels is None else class_index(*self._distinct_labels())

    def class_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Codes ``0..K-1`` of y_true and y_pred in :meth:`classes` (validated, cached)."""
        if "class_codes" not in self._cache:
            factorized = self._factorized()
            _check_label_values(self.y_true, self.y_pred, factorized)
            self._check_cells()
            self._cache["class_codes"] = class_codes(self.y_true, self.y_pred, self.classes(), factorized)
        return self._cache["class_codes"]

    def _check_cells(self) -> None:
        """Refuse a confusion tensor too large to be one of class labels."""
        k = len(self.classes())
        cells = self.n_groups * k**2
        if cells > _MAX_CELLS:
            raise ValueError(
                f"y_true and y_pred hold {k} distinct labels, {cells:,} confusion cells over "
                f"{self.n_groups} groups; if these are regression values, use a regression measure "
                "(fairness.mse, fairness.dp_mean, ...); otherwise merge classes."
            )

    def multiclass(self, sample_weight: np.ndarray | None = None) -> MulticlassStats:
        """The (groups, K, K) confusion tensor over :meth:`classes` (cached unless reweighted)."""
        if sample_weight is not None:
            t, p = self.class_codes()
            return MulticlassStats.from_class_codes(self.group_codes, t, p, self.groups, self.classes(), sample_weight)
        return self._cached("multiclass", self._multiclass)

    def _multiclass(self) -> MulticlassStats:
        if "class_counts" in self._cache:  # counted with the groups (integer fast path)
            self._check_cells()
            counts = _widen_classes(self._cache["class_counts"].astype(float), self._seen_classes(), self.classes())
            return MulticlassStats(counts, self.groups, self.classes())
        if self.sample_weight is not None and self.n_groups * len(self.classes()) ** 2 <= _MOMENT_CELLS:
            counts, rows = self._weighted_counts(True, None)
            return MulticlassStats(counts, self.groups, self.classes(), rows=rows)
        t, p = self.class_codes()
        return MulticlassStats.from_class_codes(self.group_codes, t, p, self.groups, self.classes(), self.sample_weight)

    def errors(self) -> ErrorStats:
        """Regression error sums per group (cached)."""
        return self._cached("errors", self._errors)

    def _errors(self) -> ErrorStats:
        for arr, nm in ((self.y_true, "y_true"), (self.y_pred, "y_pred")):
            if arr.dtype.kind not in "fiub":
                raise ValueError(f"{nm} must be numeric for a regression measure; got dtype {arr.dtype}.")
            if arr.dtype.kind == "f":
                _check_no_missing(arr, nm)
        if self._binary01():
            # 0/1 labels: every error is 0 or 1, so |e| = e**2 = misclassified and the
            # sums follow from the confusion counts already computed.
            c = self.confusion().counts
            wrong = c[:, 0, 1] + c[:, 1, 0]
            sums = np.stack([c.sum(axis=(1, 2)), wrong, wrong], axis=-1)
            return ErrorStats(sums, self.groups, rows=self.confusion().rows)
        return ErrorStats.from_codes(self.group_codes, self.y_true, self.y_pred, self.groups, self.sample_weight)

    def _distinct_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct values of y_true and y_pred (cached; object arrays: from their one factorisation)."""
        if self.classes_of is not None:  # rows left out with their groups: the labels seen are still every row's
            return self.classes_of._distinct_labels()

        def distinct() -> tuple[np.ndarray, np.ndarray]:
            ft, fp = self._factorized()  # only when not counted with the groups (the integer path sets it)
            return _distinct(self.y_true) if ft is None else ft[1], _distinct(self.y_pred) if fp is None else fp[1]

        return self._cached("distinct", distinct)

    def _factorized(self) -> tuple[Factorized, Factorized]:
        """:func:`factorized_labels` of y_true and y_pred (cached): codes and distinct labels of object arrays."""
        named = ((self.y_true, "y_true"), (self.y_pred, "y_pred"))
        return self._cached("factorized", lambda: tuple(factorized_labels(y, name) for y, name in named))

    def _binary01(self) -> bool:
        """Whether both label arrays are integer or boolean with values in {0, 1}."""
        if self.y_true.dtype.kind not in "iub" or self.y_pred.dtype.kind not in "iub":
            return False
        return all(set(u.tolist()) <= {0, 1} for u in self._distinct_labels())

    def counts_per_group(self) -> pd.Series:
        """Number of samples (weighted, if weights were given) in each group (cached)."""

        def counts() -> pd.Series:
            w = self.sample_weight
            n = self.group_sizes() if w is None else np.bincount(self.group_codes, weights=w, minlength=self.n_groups)
            return pd.Series(n, index=self.groups, name="count")

        return self._cached("counts", counts).copy()

    def weightless(self) -> np.ndarray:
        """Which groups have rows whose sample weights are all 0 (their counts are those of an absent group)."""
        if self.sample_weight is None:
            return np.zeros(self.n_groups, dtype=bool)
        return weightless(self.group_sizes(), self.counts_per_group().to_numpy())

    def group_sizes(self) -> np.ndarray:
        """Number of rows (not weights) in each group (cached)."""
        return self._cached("sizes", lambda: np.bincount(self.group_codes, minlength=self.n_groups))

    def subset(self, mask: np.ndarray, *, keep_classes: bool = False) -> GroupedSample:
        """The rows selected by ``mask``, keeping the full group table.

        ``keep_classes=True`` (a bootstrap replicate) also keeps the sample's classes, as if
        declared with ``labels=``: a replicate that happens to draw no row of a class reads
        the same classes and ``pos_label`` as the sample it was drawn from.
        """
        labels = self.labels
        if keep_classes and labels is None:
            labels = class_index(*self._distinct_labels())
        weight = None if self.sample_weight is None else self.sample_weight[mask]
        return GroupedSample(self.y_true[mask], self.y_pred[mask], self.group_codes[mask], self.groups, weight, labels)


def check_inputs(
    y_true: Any,
    y_pred: Any,
    sensitive_features: Any,
    sample_weight: Any = None,
    *,
    groups: pd.Index | None = None,
    labels: pd.Index | None = None,
    y_pred_name: str = "y_pred",
    compare_groups: bool = True,
) -> GroupedSample:
    """Validate the inputs of a measure once and encode the groups.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Ground truth labels (or values, for regression measures).
    y_pred : array-like of shape (n_samples,)
        Predicted labels, values or scores.
    sensitive_features : array-like of shape (n_samples,) or DataFrame
        Group of each sample; several columns give intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    groups : pandas.Index, optional
        The complete set of groups to expect, see :func:`encode_groups`.
    labels : array-like, optional
        The classes to expect (scikit-learn's ``labels=``), e.g. every class of a
        multiclass model when scoring a fold whose y_true misses one; by default the
        classes are those seen in y_true and y_pred together. A label outside
        ``labels`` is an error naming it.
    y_pred_name : str, default="y_pred"
        Name of the prediction argument in error messages.
    compare_groups : bool, default=True
        Whether the groups are compared: then fewer than two observed groups (none
        declared) raise :class:`SingleGroupError`; a measure that compares no groups
        (``inputs.needs_sensitive`` False) takes a single group.

    Returns
    -------
    GroupedSample

    Examples
    --------
    >>> s = check_inputs([1, 0, 1, 1], [1, 1, 0, 1], ["a", "a", "b", "b"])
    >>> s.confusion().counts.tolist()
    [[[0.0, 1.0], [0.0, 1.0]], [[0.0, 0.0], [1.0, 1.0]]]

    Repeated calls on the very same, unchanged arrays reuse the validated sample
    (and the counts it holds); :mod:`skfair_measures._reuse` says exactly when.
    """
    labels = check_labels(labels)
    inputs = (y_true, y_pred, sensitive_features, sample_weight)
    extra = (y_pred_name, None if labels is None else tuple(labels.tolist()), bool(compare_groups))
    sample = _reuse.lookup(inputs, extra, groups)
    if sample is not None:
        return sample
    return _reuse.store(inputs, extra, groups, lambda: _validated(inputs, groups, labels, y_pred_name, compare_groups))


def _validated(inputs: tuple, groups: Any, labels: Any, y_pred_name: str, compare_groups: bool) -> GroupedSample:
    """The validation behind :func:`check_inputs`, without reuse.

    ``inputs`` are ``(y_true, y_pred, sensitive_features, sample_weight)``.
    """
    y_true, y_pred, sensitive_features, sample_weight = inputs
    t, p = _to_1d(y_true, "y_true"), _to_1d(y_pred, y_pred_name)
    if t.size != p.size:
        raise ValueError(
            f"{y_pred_name} has {p.size} samples but y_true has {t.size}; both must describe the same samples."
        )
    if t.size == 0:
        raise ValueError("y_true is empty; a measure needs at least one sample per group.")
    cols, w = _checked_columns(sensitive_features, t.size, "sensitive_features"), _check_weight(sample_weight, t.size)
    if groups is None and (w is None or labels is None):
        sample = _integer_sample(cols, t, p, compare_groups, w)
        if sample is not None:
            sample.labels = labels  # the counts over the classes seen widen to the declared ones
            return sample
    codes, index = _encoded(cols, groups, "sensitive_features", compare=compare_groups)
    return GroupedSample(t, p, codes, index, w, labels)


# --- integer fast path: one bincount finds the groups and labels and counts them -----------


def _integer_sample(
    cols: list[tuple[str, Any]], t: np.ndarray, p: np.ndarray, compare_groups: bool = True, w: np.ndarray | None = None
) -> GroupedSample | None:
    """The validated sample of integer (or boolean) groups and labels, from one ``np.bincount``.

    When one sensitive column and both label arrays are integer (or boolean) NumPy
    arrays over small value ranges, the counts over the raw ranges of (group, y_true,
    y_pred) tell at once which groups and labels occur and how many rows each
    (group, true, predicted) cell holds: no separate pass per array to find its
    levels. The sample it returns holds the same codes, groups and statistics as the
    general path (factorise, then count), which ``tests/test_speed_paths.py`` checks;
    None when the inputs do not qualify. Weighted samples take it only through the
    compiled kernel (large inputs, numba installed): the same pass then also sums
    ``w`` and ``w**2`` per cell (:meth:`GroupedSample.cell_moments`).
    """
    if len(cols) != 1 or not (_is_integer(cols[0][1]) and _same_label_kind(t, p)):
        return None
    name, g = cols[0]
    raw = _RawCounts.of(g, t, p, w)
    if raw is None:
        return None
    counts, g_lo, lo = raw.counts, raw.g_lo, raw.lo
    sizes, t_rows, p_rows = counts.sum(axis=(1, 2)), counts.sum(axis=(0, 2)), counts.sum(axis=(0, 1))
    g_idx, c_idx = np.flatnonzero(sizes), np.flatnonzero(t_rows + p_rows)
    index = pd.Index(_levels(g_idx, g_lo, g.dtype), name=name)
    codes = _codes_from_offsets(g, g_lo, counts.shape[0], g_idx)
    if g_idx.size < 2 and compare_groups:
        _check_two_groups(codes, index, "sensitive_features")
    sample = GroupedSample(t, p, codes, index, w)
    if raw.moments is not None:  # per (group, class, class) cell of the classes seen
        cells = raw.moments.reshape(*counts.shape, 4)[np.ix_(g_idx, c_idx, c_idx)]
        sample._cache["moments", "classes"] = cells.reshape(-1, 4)
    sample._cache["distinct"] = (
        _present_levels(np.flatnonzero(t_rows), lo, t.dtype),
        _present_levels(np.flatnonzero(p_rows), lo, p.dtype),
    )
    sample._cache["sizes"] = sizes[g_idx]
    if w is None:
        sample._cache["class_counts"] = counts[np.ix_(g_idx, c_idx, c_idx)]
    return sample


def _present_levels(offsets: np.ndarray, lo: int, dtype: np.dtype) -> np.ndarray:
    """Distinct labels (object array, as :func:`_distinct`) at ``offsets`` from ``lo``, in the array's dtype.

    Counted from the array's own smallest label, which its dtype holds (``lo`` is shared
    by y_true and y_pred and may lie outside a narrow dtype).
    """
    first = int(offsets[0])
    return _levels(offsets - first, lo + first, dtype).astype(object)


def _is_integer(values: Any) -> bool:
    return isinstance(values, np.ndarray) and values.ndim == 1 and values.size > 0 and values.dtype.kind in "iub"


def _same_label_kind(t: np.ndarray, p: np.ndarray) -> bool:
    """Both label arrays integer, or both boolean (a mix compares True with 1: the general path decides)."""
    return _is_integer(t) and _is_integer(p) and (t.dtype.kind == "b") == (p.dtype.kind == "b")


#: Rows per block of the integer fast path: a block's arrays stay in the CPU cache between passes.
_BLOCK = 1 << 17
#: Fewest rows counted by the compiled kernel. It is faster at every size (half the time of the NumPy
#: blocks), but importing numba costs about 0.4 s once per process: small inputs do not import it.
_COMPILED_ROWS = 200_000


@functools.cache
def _compiled_kernel() -> Any:
    """The compiled counting kernels (:mod:`._count_kernel`), or None when numba is not installed.

    Imported on first use only, so that ``import skfair_measures`` does not load numba.
    Also None when numba finds no writable place for its disk cache (a RuntimeError at
    import): counting then stays with NumPy rather than failing.
    """
    try:
        from . import _count_kernel
    except (ImportError, RuntimeError):
        return None
    return _count_kernel


def _weighted_cells(g: np.ndarray, t: np.ndarray, p: np.ndarray, n_groups: int, k: int, w: np.ndarray) -> np.ndarray:
    """Per (group, true, predicted) cell: rows, summed ``w``, summed ``w**2``, rows unlike its first weight.

    Shape ``(n_groups * k * k, 4)``. One compiled pass over the codes when numba is
    there and the input is large (:func:`._count_kernel.weighted_cells`); otherwise a
    flat cell index and four ``np.bincount``. Both add the weights in row order: the
    same sums.

    Examples
    --------
    >>> m = _weighted_cells(np.array([0, 1, 1]), np.array([1, 0, 0]), np.array([1, 1, 1]), 2, 2,
    ...                     np.array([2.0, 3.0, 4.0]))
    >>> m[:, 1].tolist(), m[:, 3].tolist()
    ([0.0, 0.0, 0.0, 2.0, 0.0, 7.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    """
    n_cells, w = n_groups * k * k, np.asarray(w, dtype=float)
    kernel = _compiled_kernel() if g.size >= _COMPILED_ROWS and _compilable(g, t, p) else None
    if kernel is not None:
        out = np.zeros((n_cells, 4))
        kernel.weighted_cells(_as_integer(g), 0, _as_integer(t), _as_integer(p), 0, k, w, out)
        return out
    cell = (np.asarray(g, dtype=np.intp) * k + t) * k + p
    first = np.zeros(n_cells)
    first[cell[::-1]] = w[::-1]  # the first row's weight of each cell (the last assignment wins)
    sums = [np.bincount(cell, weights=x, minlength=n_cells) for x in (None, w, w * w, w != first[cell])]
    return np.stack(sums, axis=1).astype(float, copy=False)


def _compilable(*arrays: np.ndarray) -> bool:
    """Integer or boolean arrays the kernel takes: native byte order, not ``uint64``.

    (numba would take a ``uint64`` value minus a signed bound as a float.)
    """
    return all(v.dtype.isnative and v.dtype != np.uint64 for v in arrays)


def _as_integer(values: np.ndarray) -> np.ndarray:
    """Booleans as ``uint8`` (a view), other integer arrays as they are."""
    return values.view(np.uint8) if values.dtype.kind == "b" else values


@dataclass
class _RawCounts:
    """Row counts ``counts[g - g_lo, t - lo, p - lo]`` over the value ranges of groups and labels."""

    counts: np.ndarray
    g_lo: int
    lo: int
    #: Weighted: rows, ``w``, ``w**2`` and rows unlike the first weight per raw cell, shape ``(cells, 4)``.
    moments: np.ndarray | None = None

    @classmethod
    def of(cls, g: np.ndarray, t: np.ndarray, p: np.ndarray, w: np.ndarray | None = None) -> _RawCounts | None:
        """The counts over the value ranges; None if even the exact ranges are too wide to count.

        Large inputs are counted by the compiled kernel when numba is installed (exact
        ranges, two passes); otherwise NumPy counts over ranges from 0 to a bit mask if no
        value is negative, else from minimum to maximum.
        """
        kernel = _compiled_kernel() if t.size >= _COMPILED_ROWS and _compilable(g, t, p) else None
        if kernel is not None:
            return cls._compiled(kernel, *(_as_integer(v) for v in (g, t, p)), w)
        if w is not None:
            return None  # weighted without the kernel: the general path (codes, then one bincount per sum)
        raw = cls._count(g, t, p, exact=False)
        return raw if raw is not None else cls._count(g, t, p, exact=True)

    @classmethod
    def _compiled(
        cls, kernel: Any, g: np.ndarray, t: np.ndarray, p: np.ndarray, w: np.ndarray | None = None
    ) -> _RawCounts | None:
        """Exact ranges from one compiled pass, then every row counted in a second (no cell index array)."""
        g_lo, g_hi, t_lo, t_hi, p_lo, p_hi = (int(v) for v in kernel.bounds(g, t, p))
        lo, hi = min(t_lo, p_lo), max(t_hi, p_hi)
        n_g, n_c = g_hi - g_lo + 1, hi - lo + 1
        if n_g * n_c * n_c > _range_limit(t.size):
            return None
        if w is not None:
            moments = np.zeros((n_g * n_c * n_c, 4))
            kernel.weighted_cells(g, g_lo, t, p, lo, n_c, w, moments)
            return cls(moments[:, 0].astype(np.intp).reshape(n_g, n_c, n_c), g_lo, lo, moments)
        counts = np.zeros((n_g, n_c, n_c), dtype=np.intp)
        kernel.count(g, g_lo, t, p, lo, n_c, counts.reshape(-1))
        return cls(counts, g_lo, lo)

    @classmethod
    def _count(cls, g: np.ndarray, t: np.ndarray, p: np.ndarray, exact: bool) -> _RawCounts | None:
        """Count block by block, widening the ranges when a block leaves them; None if they grow too wide.

        Each block is read once from memory: its bounds, flat cell index and bincount
        all work on data already in the CPU cache, which a whole-array pass per step
        (three reductions, four arithmetic passes, a bincount) would not.
        """
        raw, limit = None, _range_limit(t.size)
        buffer = np.empty(min(_BLOCK, t.size), dtype=np.intp)  # one cell index buffer for every block
        for start in range(0, t.size, _BLOCK):
            block = slice(start, start + _BLOCK)
            gb, tb, pb = g[block], t[block], p[block]
            (g_lo, g_hi), (t_lo, t_hi), (p_lo, p_hi) = _bounds(gb, exact), _bounds(tb, exact), _bounds(pb, exact)
            lo, hi = min(t_lo, p_lo), max(t_hi, p_hi)
            if raw is not None:
                g_lo, g_hi = min(g_lo, raw.g_lo), max(g_hi, raw.g_lo + raw.counts.shape[0] - 1)
                lo, hi = min(lo, raw.lo), max(hi, raw.lo + raw.counts.shape[1] - 1)
            n_g, n_c = g_hi - g_lo + 1, hi - lo + 1
            if n_g * n_c * n_c > limit:
                return None
            raw = cls._widened(raw, g_lo, n_g, lo, n_c)
            raw.counts += _block_counts(gb, g_lo, n_g, tb, pb, lo, n_c, buffer[: gb.size])
        return raw

    @classmethod
    def _widened(cls, raw: _RawCounts | None, g_lo: int, n_g: int, lo: int, n_c: int) -> _RawCounts:
        if raw is not None and (raw.g_lo, raw.lo, raw.counts.shape[:2]) == (g_lo, lo, (n_g, n_c)):
            return raw
        counts = np.zeros((n_g, n_c, n_c), dtype=np.intp)
        if raw is not None:
            dg, dc = raw.g_lo - g_lo, raw.lo - lo
            og, oc = raw.counts.shape[:2]
            counts[dg : dg + og, dc : dc + oc, dc : dc + oc] = raw.counts
        return cls(counts, g_lo, lo)


def _bounds(values: np.ndarray, exact: bool) -> tuple[int, int]:
    """A range ``[lo, hi]`` holding every value of an integer or boolean array.

    Not ``exact``: if no value is negative, ``[0, mask]`` from one OR-reduction (the
    mask is at least the maximum and below twice it; values absent from the range
    simply count zero), else, as when ``exact``, the minimum and the maximum (two
    reductions).
    """
    if values.dtype.kind == "b":
        values = values.view(np.uint8)
    if not exact:
        mask = int(np.bitwise_or.reduce(values))
        if mask >= 0:
            return 0, mask
    return int(values.min()), int(values.max())


def _block_counts(
    g: np.ndarray, g_lo: int, n_g: int, t: np.ndarray, p: np.ndarray, lo: int, n_c: int, cell: np.ndarray
) -> np.ndarray:
    """Row counts of shape ``(n_g, n_c, n_c)`` of one block (four in-place passes into ``cell``, one bincount)."""
    np.multiply(_shifted(g, g_lo), n_c, out=cell)
    cell += _shifted(t, lo)
    cell *= n_c
    cell += _shifted(p, lo)
    return np.bincount(cell, minlength=n_g * n_c * n_c).reshape(n_g, n_c, n_c)


def _codes_from_offsets(values: np.ndarray, lo: int, n_range: int, present: np.ndarray) -> np.ndarray:
    """Codes ``0..k-1`` of ``values`` whose offsets ``values - lo`` in use are ``present`` (sorted)."""
    if lo == 0 and present[-1] == present.size - 1 and values.dtype == np.intp:
        return values  # already the codes 0..k-1
    lut = np.full(n_range, -1, dtype=np.intp)
    lut[present] = np.arange(present.size)
    return lut[_shifted(values, lo)]


def restrict_small_groups(
    sample: GroupedSample, min_group_size: int | None, small_groups: str = "drop", key: str = "the measure"
) -> GroupedSample:
    """The sample without its groups of fewer than ``min_group_size`` rows, or with them pooled.

    Sizes count rows, not weights. Small groups (also declared groups absent from the
    data) are left out with their rows (``"drop"``) or pooled into one group labeled
    ``"other"`` (``("other", ...)`` for intersectional groups) placed last
    (``"merge"``); a :class:`SmallGroupWarning` names them and their sizes. The
    decision is :func:`small_group_plan`'s. The classes stay those of every row (as
    the engines, which count before they drop): leaving a group out never changes
    which class is positive.

    Examples
    --------
    >>> import warnings
    >>> s = check_inputs([1] * 7, [1] * 7, ["a", "a", "a", "b", "b", "b", "c"])
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     list(restrict_small_groups(s, 2).groups), list(restrict_small_groups(s, 3, "merge").groups)
    (['a', 'b'], ['a', 'b', 'other'])
    """
    if min_group_size is None:
        return sample
    plan = small_group_plan(sample.group_sizes(), sample.groups, min_group_size, small_groups, key)
    if plan is None:
        return sample
    codes = plan.codes(sample.group_codes)
    whole = sample
    if small_groups != "merge":  # their rows left out with them
        sample, codes = sample.subset(codes >= 0), codes[codes >= 0]
    out = GroupedSample(sample.y_true, sample.y_pred, codes, plan.groups, sample.sample_weight, sample.labels, whole)
    plan.warn(stacklevel=4)  # the user's call, through the measure's validation
    return out
