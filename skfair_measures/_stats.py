"""Groupwise sufficient statistics: validated inputs, confusion counts, error sums.

Raw inputs enter the library once, through :func:`check_inputs`, which rejects bad
input naming the argument, factorises the labels of every sensitive column once and
folds several columns into one intersectional code. From there on only integer
codes and a small table of group labels travel.

The statistics are additive: the counts of two chunks of data sum to the counts of
the whole (:meth:`ConfusionStats.__add__` aligns the groups by label), which is what
lets cross-validation folds, bootstrap replicates and distributed partitions share
one code path.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import _reuse

__all__ = [
    "ConfusionStats",
    "ErrorStats",
    "GroupedSample",
    "MulticlassStats",
    "SingleGroupError",
    "SmallGroupPlan",
    "SmallGroupWarning",
    "check_inputs",
    "check_scores",
    "check_small_groups",
    "encode_groups",
    "resolve_sensitive",
    "restrict_small_group_stats",
    "restrict_small_groups",
    "small_group_plan",
]


class SingleGroupError(ValueError):
    """The sensitive features hold fewer than two groups, so nothing can be compared.

    Scorers catch it to report NaN for one cross-validation fold instead of
    aborting the whole search.
    """

_NOT_BINARY = (
    "{name} holds {n} distinct labels ({labels}); "
    "this binary rate compares one class with the rest. Pass "
    "pos_label= (that class against the others), or average='macro' or 'weighted' "
    "(e.g. msr('fairness.tpr', average='macro')) for the mean over classes."
)
#: Largest confusion tensor (groups x K x K cells) built for multiclass labels.
_MAX_CELLS = 50_000_000
_NEED_POS_LABEL = (
    "the labels are {labels}; pass pos_label= to say which one is the positive class (e.g. pos_label={example!r})."
)


def _to_1d(values: Any, name: str) -> np.ndarray:
    """Return ``values`` as a 1-D array, rejecting other shapes with ``name``."""
    if isinstance(values, pd.DataFrame):
        if values.shape[1] != 1:
            raise ValueError(f"{name} must be one-dimensional; got a DataFrame with {values.shape[1]} columns.")
        values = values.iloc[:, 0]
    if isinstance(values, pd.Series):
        values = values.array
    if _encoded_labels(values):
        return pd.Categorical(values)  # codes and labels, without a Python string per row
    if isinstance(values, pd.api.extensions.ExtensionArray):
        arr = values.to_numpy()
    else:
        arr = np.asarray(values)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}.")
    return arr


def _encoded_labels(values: Any) -> bool:
    """Arrow-backed strings (pandas' default ``str``) and categoricals: kept as a Categorical.

    Converting them to a NumPy object array makes one Python string per row (the
    slowest step for a million rows); a Categorical holds the same labels as codes,
    so the distinct labels and ``labels == pos_label`` cost a pass over small integers.
    """
    if isinstance(values, pd.Categorical):
        return values.categories.dtype.kind not in "biuf"  # numeric categories stay numbers (regression)
    return (
        isinstance(values, pd.api.extensions.ExtensionArray)
        and hasattr(values, "__arrow_array__")
        and pd.api.types.is_string_dtype(values.dtype)
    )


def _check_no_missing(arr: np.ndarray, name: str) -> None:
    missing = pd.isna(arr)
    if missing.any():
        idx = np.flatnonzero(missing)
        raise ValueError(
            f"{name} has {idx.size} missing value(s) (NaN/None), first at position "
            f"{idx[0]}; drop or impute those rows before computing a measure."
        )


def resolve_sensitive(
    sensitive_features: Any = None,
    *,
    X: Any = None,
    columns: str | list[str] | tuple[str, ...] | None = None,
    argument: str = "sensitive_features",
) -> Any:
    """The sensitive attribute, from columns of ``X`` or given as values.

    The one place where "a column of X or an array" is decided: scorers, the
    audit, the CLI, the benchmark and the MLflow plugin all call it.

    Parameters
    ----------
    sensitive_features : array-like, Series or DataFrame, optional
        The group of each sample, given directly.
    X : pandas.DataFrame, optional
        The features, when ``columns`` names the sensitive column(s) in it.
    columns : str or list of str, optional
        Sensitive column(s) of ``X``; several give intersectional groups.
    argument : str, default="sensitive_features"
        How the caller names the values in error messages (e.g. a CLI flag).

    Returns
    -------
    Series, DataFrame or array-like
        What :func:`encode_groups` takes.

    Examples
    --------
    >>> X = pd.DataFrame({"x": [1, 2], "sex": ["F", "M"]})
    >>> resolve_sensitive(X=X, columns="sex").tolist()
    ['F', 'M']
    >>> resolve_sensitive(["F", "M"])
    ['F', 'M']
    """
    if columns is None:
        if sensitive_features is None:
            raise ValueError(
                f"{argument} is required: pass the group of each sample (array-like of "
                "shape (n_samples,) or a DataFrame of several columns), or name the "
                "sensitive column(s) of X."
            )
        return sensitive_features
    if sensitive_features is not None:
        raise ValueError(
            f"both {argument} and sensitive column(s) {columns!r} of X were given; pass one of them."
        )
    cols = [columns] if isinstance(columns, str) else list(columns)
    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            f"the sensitive column(s) {cols} are read from X, but X is a {type(X).__name__}; "
            "pass X as a pandas DataFrame, or pass the groups as sensitive_features=."
        )
    missing = [c for c in cols if c not in X.columns]
    if missing:
        raise KeyError(f"sensitive column(s) {missing} are not among X's columns {list(X.columns)}.")
    return X[cols[0]] if len(cols) == 1 else X[cols]


def _sensitive_columns(
    sensitive_features: Any,
) -> list[tuple[str, np.ndarray | pd.api.extensions.ExtensionArray]]:
    """Split sensitive features into named 1-D columns without converting values.

    Missing values are checked on the original objects, before any conversion, so
    that ``None``/``NaN`` can never become a group literally named ``'nan'``.
    """
    if sensitive_features is None:
        raise ValueError(
            "sensitive_features is required: pass the group of each sample "
            "(array-like of shape (n_samples,) or a DataFrame of several columns)."
        )
    cols = _named_columns(sensitive_features)
    if not cols:
        raise ValueError("sensitive_features has no columns.")
    out = []
    for name, col in cols:
        values = _column_values(col)
        _refuse_missing_groups(name, values)
        out.append((name, values))
    return out


def _named_columns(sensitive_features: Any) -> list[tuple[str, Any]]:
    """(name, column) pairs of a DataFrame, Series, dict, Categorical, list or array."""
    default = "sensitive_feature_0"
    if isinstance(sensitive_features, pd.DataFrame):
        return [(str(c), sensitive_features[c]) for c in sensitive_features.columns]
    if isinstance(sensitive_features, pd.Series):
        name = sensitive_features.name
        return [(str(name) if name is not None else default, sensitive_features)]
    if isinstance(sensitive_features, dict):
        return [(str(k), v) for k, v in sensitive_features.items()]
    if isinstance(sensitive_features, pd.Categorical):
        return [(default, sensitive_features)]
    if _is_flat_sequence(sensitive_features):
        # through pandas, not np.asarray: a list mixing 1 and "1" must stay two groups
        return [(default, pd.Series(list(sensitive_features)))]
    arr = np.asarray(sensitive_features, dtype=object if _is_ragged_or_str(sensitive_features) else None)
    if arr.ndim == 1:
        return [(default, arr)]
    if arr.ndim == 2:
        return [(f"sensitive_feature_{j}", arr[:, j]) for j in range(arr.shape[1])]
    raise ValueError(f"sensitive_features must be 1-D or 2-D; got shape {arr.shape}.")


def _column_values(col: Any) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """A column's values; extension arrays (categoricals, Arrow/pandas strings) as they are."""
    if isinstance(col, pd.Series) and isinstance(col.dtype, pd.api.extensions.ExtensionDtype):
        return col.array  # factorised without object conversion
    if isinstance(col, pd.Series):
        return col.to_numpy()
    if isinstance(col, pd.Categorical):
        return col
    return np.asarray(col)


def _refuse_missing_groups(name: str, values: Any) -> None:
    if isinstance(values, pd.Categorical):
        missing = values.codes < 0
    elif isinstance(values, np.ndarray) and values.dtype.kind in "iub":
        return  # integer and boolean arrays cannot hold missing values
    else:
        missing = pd.isna(values)
    if missing.any():
        raise ValueError(
            f"sensitive feature {name!r} has {int(missing.sum())} missing value(s); a "
            "missing group cannot be compared. Drop those rows, or encode them "
            "as an explicit group such as 'unknown'."
        )


def _is_flat_sequence(values: Any) -> bool:
    """A list or tuple of scalars (not of rows)."""
    if not isinstance(values, list | tuple) or not values:
        return False
    return not isinstance(values[0], list | tuple | np.ndarray | pd.Series)


def _is_ragged_or_str(values: Any) -> bool:
    if isinstance(values, (list, tuple)) and values and isinstance(values[0], str):
        return True
    return False


def _factorize(values: np.ndarray | pd.Categorical) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and sorted labels of one column; categoricals keep all categories."""
    if isinstance(values, pd.Categorical) or isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(values)
        return np.asarray(cat.codes, dtype=np.intp), pd.Index(cat.categories)
    small = _small_int_levels(values)
    if small is not None:  # fast path: a lookup table instead of hashing
        levels, lo = small
        if lo == 0 and levels.size == levels[-1] + 1 and values.dtype == np.intp:
            return values, pd.Index(levels)  # already the codes 0..k-1
        lut = np.zeros(int(levels[-1]) - lo + 1, dtype=np.intp)
        lut[_shifted(levels, lo)] = np.arange(levels.size)
        return lut[_shifted(values, lo)], pd.Index(levels)
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.intp, copy=False), pd.Index(uniques)


def _small_int_levels(values: Any) -> tuple[np.ndarray, int] | None:
    """Sorted distinct values of an integer array with a small range, else None."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iub" or values.size == 0:
        return None
    lo, hi = _min_max(values)
    if hi - lo <= 1:  # one or two values: min and max say which
        return _levels(np.unique([0, hi - lo]), lo, values.dtype), lo
    if hi - lo > _range_limit(values.size):
        return None
    present = np.bincount(_shifted(values, lo), minlength=hi - lo + 1)
    return _levels(np.flatnonzero(present), lo, values.dtype), lo


def _min_max(values: np.ndarray) -> tuple[int, int]:
    """Smallest and largest value of an integer or boolean array, as Python ints."""
    if values.dtype.kind == "b":
        values = values.view(np.uint8)
    return int(values.min()), int(values.max())


def _range_limit(n: int) -> int:
    """Largest value range counted by a ``np.bincount`` (its table stays of the order of the rows)."""
    return 4 * n + 1024


def _levels(offsets: np.ndarray, lo: int, dtype: np.dtype) -> np.ndarray:
    """The values ``lo + offsets`` in ``dtype``, exact also where ``lo + offset`` leaves ``intp``.

    The sum is taken in ``dtype`` itself: it may wrap on the way (``int8``, ``uint64``), but
    the true values fit in ``dtype``, so modular arithmetic gives them exactly.
    """
    if dtype.kind == "b":
        return (offsets + lo).astype(bool)
    with np.errstate(over="ignore"):
        return offsets.astype(dtype) + dtype.type(lo)


def _shifted(values: np.ndarray, lo: int) -> np.ndarray:
    """``values - lo`` as non-negative indices, without wrapping narrow or unsigned 64-bit types.

    ``values`` lie in ``[lo, lo + small range]``: narrow types are widened before the
    subtraction (``int8`` minus ``-128`` would wrap), while ``uint64`` values beyond the
    ``intp`` range are shifted in their own type first (their difference is small).
    """
    if lo == 0 and values.dtype == np.intp:
        return values
    if values.dtype.kind == "b":
        values = values.view(np.uint8)
    if values.dtype.kind == "u" and values.dtype.itemsize >= np.dtype(np.intp).itemsize and lo > 0:
        return (values - values.dtype.type(lo)).astype(np.intp)
    shifted = values.astype(np.intp)
    if lo:
        shifted -= lo
    return shifted


def encode_groups(
    sensitive_features: Any,
    n_samples: int | None = None,
    *,
    groups: pd.Index | None = None,
    name: str = "sensitive_features",
) -> tuple[np.ndarray, pd.Index]:
    """Encode sensitive features as one integer code per sample.

    Several columns are folded into one intersectional code; the groups are the
    combinations that occur in the data (declare ``groups=`` to keep absent ones,
    with zero counts and hence an undefined rate).

    Parameters
    ----------
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_features)
        Group membership; a DataFrame or dict of columns gives intersectional groups.
    n_samples : int, optional
        Expected number of samples, checked against the features.
    groups : pandas.Index, optional
        The complete set of groups to expect (e.g. all groups of the full data set
        when scoring one cross-validation fold). A group absent from the sample then
        keeps its place with zero counts; a value outside ``groups`` is an error.
    name : str, default="sensitive_features"
        Argument name used in error messages.

    Returns
    -------
    codes : ndarray of shape (n_samples,)
        Group code of each sample.
    groups : pandas.Index
        Group labels; a MultiIndex for several columns.

    Examples
    --------
    >>> codes, groups = encode_groups(["b", "a", "b"])
    >>> codes.tolist(), groups.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    return _encoded(_checked_columns(sensitive_features, n_samples, name), groups, name)


def _checked_columns(sensitive_features: Any, n_samples: int | None, name: str) -> list[tuple[str, Any]]:
    """The named sensitive columns, each of ``n_samples`` values and none missing."""
    cols = _sensitive_columns(sensitive_features)
    for _, values in cols:
        if n_samples is not None and len(values) != n_samples:
            raise ValueError(f"{name} has {len(values)} samples but y_true has {n_samples}; pass one group per sample.")
    return cols


def _encoded(cols: list[tuple[str, Any]], groups: pd.Index | None, name: str) -> tuple[np.ndarray, pd.Index]:
    """Group codes and labels of checked columns: the declared groups, or those observed (at least two)."""
    if groups is not None:
        return _encode_to_known_groups(cols, groups, name)
    codes, index = _observed_groups(cols)
    _check_two_groups(codes, index, name)
    return codes, index


def _observed_groups(cols: list[tuple[str, Any]]) -> tuple[np.ndarray, pd.Index]:
    """Codes and labels of the groups that occur: one column's levels, or observed intersections.

    Several columns are folded pairwise and re-factorised after each fold, so the
    codes stay below the number of rows: the product of all levels (2 columns x
    20,000 levels is 4e8 cells) is never allocated.
    """
    codes, levels = _factorize(cols[0][1])
    if len(cols) == 1:
        return codes, levels.rename(cols[0][0])
    level_codes = [np.arange(len(levels))]
    level_tables = [levels]
    for _, values in cols[1:]:
        col_codes, col_levels = _factorize(values)
        pair = codes.astype(np.int64) * len(col_levels) + col_codes
        uniq, codes = np.unique(pair, return_inverse=True)  # sorted, so groups come in label order
        level_codes = [lc[uniq // len(col_levels)] for lc in level_codes] + [uniq % len(col_levels)]
        level_tables.append(col_levels)
    index = pd.MultiIndex(levels=level_tables, codes=level_codes, names=[c for c, _ in cols])
    return codes.astype(np.intp, copy=False), index


def _check_two_groups(codes: np.ndarray, index: pd.Index, name: str) -> None:
    if codes.size and codes.min() != codes.max():
        return  # two distinct codes: two observed groups (min and max cost less than a bincount)
    n_observed = int(np.count_nonzero(np.bincount(codes, minlength=len(index)))) if codes.size else 0
    if n_observed < 2:
        seen = index[codes[0]] if codes.size else None
        raise SingleGroupError(
            f"{name} holds a single group ({seen!r}) in these {codes.size} samples; "
            "a fairness measure compares at least two groups. Pass a feature with "
            "two or more values (in cross-validation, stratify the folds by group "
            "so that no fold misses a group, or declare all groups with groups=)."
        )


def _encode_to_known_groups(cols: list[tuple[str, Any]], groups: pd.Index, name: str) -> tuple[np.ndarray, pd.Index]:
    if len(cols) == 1:
        values = pd.Index(np.asarray(cols[0][1], dtype=object))
        key = values
    else:
        key = pd.MultiIndex.from_arrays([np.asarray(v, dtype=object) for _, v in cols])
    codes = pd.Index(groups).get_indexer(key)
    if (codes < 0).any():
        bad = key[np.flatnonzero(codes < 0)[0]]
        raise ValueError(
            f"{name} holds the value {bad!r}, which is not one of the declared groups "
            f"{list(groups)}; add it to groups= or fix the data."
        )
    return codes.astype(np.intp), pd.Index(groups)


def check_scores(y_score: Any, name: str = "y_score") -> np.ndarray:
    """Validate predicted probabilities of the positive class.

    Examples
    --------
    >>> check_scores([0.1, 0.9]).tolist()
    [0.1, 0.9]
    """
    s = _to_1d(y_score, name)
    if s.dtype.kind not in "fiub":
        raise ValueError(f"{name} must be numeric probabilities; got dtype {s.dtype}.")
    s = s.astype(float, copy=False)
    _check_no_missing(s, name)
    lo, hi = float(s.min(initial=0.0)), float(s.max(initial=1.0))
    if lo < 0.0 or hi > 1.0:
        raise ValueError(
            f"{name} has values outside [0, 1] (min {lo:.4g}, max {hi:.4g}); pass "
            "probabilities of the positive class, e.g. predict_proba(X)[:, 1], not "
            "decision_function scores."
        )
    return s


def _check_weight(sample_weight: Any, n: int) -> np.ndarray | None:
    if sample_weight is None:
        return None
    w = _to_1d(sample_weight, "sample_weight").astype(float, copy=False)
    if w.size != n:
        raise ValueError(f"sample_weight has {w.size} samples but y_true has {n}; pass one weight per sample.")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight must be finite and non-negative.")
    return w


_BINARY_DEFAULTS = ({0, 1}, {-1, 1})


def _resolve_pos_label(labels: list[Any], pos_label: Any) -> Any:
    """Return the positive label: explicit, or 1 for {0, 1}, {-1, 1} and booleans."""
    if pos_label is not None:
        return pos_label
    label_set = set(labels)
    if any(label_set <= default for default in _BINARY_DEFAULTS):
        return 1
    example = sorted(labels, key=str)[-1]
    raise ValueError(_NEED_POS_LABEL.format(labels=sorted(labels, key=str), example=example))


def _distinct(arr: np.ndarray) -> np.ndarray:
    """Distinct values as an object array (bincount for small integer ranges)."""
    small = _small_int_levels(arr)
    if small is not None:
        levels = small[0]
        return (levels.astype(bool) if arr.dtype.kind == "b" else levels).astype(object)
    return pd.unique(arr).astype(object)


def _check_label_values(y_true: np.ndarray, y_pred: np.ndarray) -> None:
    """Refuse missing labels and floats that are not whole numbers (scores, regression values)."""
    for arr, nm in ((y_true, "y_true"), (y_pred, "y_pred")):
        if arr.dtype.kind in "iub":
            continue  # integer and boolean arrays hold neither missing values nor fractions
        _check_no_missing(arr, nm)
        if arr.dtype.kind == "f":
            frac = arr[(arr != np.round(arr))]
            if frac.size:
                raise ValueError(
                    f"{nm} holds non-label values such as {frac[0]:.4g}; pass predicted "
                    "labels (e.g. estimator.predict(X)), or probabilities to a "
                    "measure built with threshold=."
                )


def _sorted_labels(labels: Any) -> list[Any]:
    """Labels in sorted order (as np.unique), by their text when types do not compare."""
    try:
        return sorted(labels)
    except TypeError:
        return sorted(labels, key=str)


def class_codes(y_true: np.ndarray, y_pred: np.ndarray, classes: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``0..K-1`` of both label arrays in ``classes`` (a lookup table for small integers).

    Examples
    --------
    >>> t, p = class_codes(np.array([2, 0, 1]), np.array([2, 2, 0]), pd.Index([0, 1, 2]))
    >>> t.tolist(), p.tolist()
    ([2, 0, 1], [2, 2, 0])
    """
    values = classes.to_numpy()
    ints = values.dtype.kind in "iu" and y_true.dtype.kind in "iu" and y_pred.dtype.kind in "iu"
    if ints and values[0] == 0 and values[-1] == values.size - 1 and y_true.dtype == y_pred.dtype == np.intp:
        return y_true, y_pred  # labels 0..K-1 (all present): already the codes
    if ints and int(values[-1]) - int(values[0]) <= _range_limit(values.size):
        lo = int(values[0])
        lut = np.full(int(values[-1]) - lo + 1, -1, dtype=np.intp)
        lut[_shifted(values, lo)] = np.arange(values.size)
        return lut[_shifted(y_true, lo)], lut[_shifted(y_pred, lo)]
    return classes.get_indexer(y_true).astype(np.intp), classes.get_indexer(y_pred).astype(np.intp)


def binarize_labels(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    pos_label: Any = None,
    distinct: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, Any]:
    """Map binary labels to 0/1 codes, validating both label arrays.

    Examples
    --------
    >>> t, p, pos = binarize_labels(np.array(["a", "b"]), np.array(["b", "b"]), "b")
    >>> t.tolist(), p.tolist(), pos
    ([0, 1], [1, 1], 'b')
    """
    _check_label_values(y_true, y_pred)
    uniq_t, uniq_p = distinct if distinct is not None else (_distinct(y_true), _distinct(y_pred))
    pos = _positive_label(pos_label, uniq_t, uniq_p)
    zero_one = pos == 1 and set(uniq_t.tolist()) | set(uniq_p.tolist()) <= {0, 1}

    def codes(arr: np.ndarray) -> np.ndarray:
        if zero_one and arr.dtype == np.intp:
            return arr  # already 0/1 codes
        return np.asarray(arr == pos, dtype=np.intp)

    return codes(y_true), codes(y_pred), pos


def _positive_label(pos_label: Any, uniq_t: np.ndarray, uniq_p: np.ndarray) -> Any:
    """The positive class given the distinct labels of y_true and y_pred, refusing what is not binary."""
    labels = list(pd.unique(np.concatenate([uniq_t, uniq_p])))
    if len(labels) > 2:
        declared = sorted(set(uniq_t.tolist()), key=str)
        outside = sorted(set(uniq_p.tolist()) - set(declared), key=str)
        if len(declared) <= 2 and outside:
            raise ValueError(
                f"y_pred holds label(s) {outside} outside the classes {declared} of y_true; "
                "predictions must use the same (binary) labels as y_true."
            )
        if pos_label is None or pos_label not in labels:
            raise ValueError(_NOT_BINARY.format(name="y_true", n=len(labels), labels=sorted(labels, key=str)))
        # pos_label among several classes: that class against the rest (one-vs-rest)
    pos = _resolve_pos_label(labels, pos_label)
    if pos_label is not None and pos not in labels and len(labels) == 2:
        raise ValueError(f"pos_label={pos!r} is not one of the labels {sorted(labels, key=str)}; pass one of them.")
    return pos


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
        cls,
        group_codes: Any,
        y_true: Any,
        y_pred: Any,
        groups: pd.Index,
        sample_weight: np.ndarray | None = None,
    ) -> ConfusionStats:
        """One weighted ``np.bincount`` over the flat (group, y_true, y_pred) cell."""
        g = np.asarray(group_codes, dtype=np.intp)
        cell = (g * 2 + np.asarray(y_true, dtype=np.intp)) * 2 + np.asarray(y_pred, dtype=np.intp)
        n_groups = len(groups)
        counts = np.bincount(cell, weights=sample_weight, minlength=4 * n_groups)
        return cls(counts.astype(float, copy=False).reshape(n_groups, 2, 2), groups)

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
        cls,
        group_codes: Any,
        y_true: Any,
        y_pred: Any,
        groups: pd.Index,
        classes: pd.Index,
        sample_weight: np.ndarray | None = None,
    ) -> MulticlassStats:
        """One weighted ``np.bincount`` over the flat (group, true class, predicted class) cell."""
        t, p = class_codes(np.asarray(y_true), np.asarray(y_pred), pd.Index(classes))
        return cls.from_class_codes(group_codes, t, p, groups, classes, sample_weight)

    @classmethod
    def from_class_codes(
        cls,
        group_codes: Any,
        t: np.ndarray,
        p: np.ndarray,
        groups: pd.Index,
        classes: pd.Index,
        sample_weight: np.ndarray | None = None,
    ) -> MulticlassStats:
        """The bincount on class codes ``0..K-1`` already computed."""
        k, n_groups = len(classes), len(groups)
        cell = (np.asarray(group_codes, dtype=np.intp) * k + t) * k + p
        counts = np.bincount(cell, weights=sample_weight, minlength=n_groups * k * k)
        return cls(counts.astype(float, copy=False).reshape(n_groups, k, k), groups, pd.Index(classes))

    def __add__(self, other: ConfusionStats) -> MulticlassStats:
        if not isinstance(other, MulticlassStats):
            return NotImplemented
        classes = self.classes.union(other.classes, sort=False)
        a, b = _widen_classes(self.counts, self.classes, classes), _widen_classes(other.counts, other.classes, classes)
        return MulticlassStats(*_merge(a, self.groups, b, other.groups, 3), classes)


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
        cls,
        group_codes: Any,
        y_true: Any,
        y_pred: Any,
        groups: pd.Index,
        sample_weight: np.ndarray | None = None,
    ) -> ErrorStats:
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


@dataclass(eq=False)
class GroupedSample:
    """Validated inputs of one measure call: raw labels plus integer group codes.

    Built by :func:`check_inputs`; statistics are computed on demand and cached, so
    that several measures evaluated on the same sample share one ``np.bincount``.
    """

    y_true: np.ndarray
    y_pred: np.ndarray
    group_codes: np.ndarray
    groups: pd.Index
    sample_weight: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    def labels01(self, pos_label: Any = None) -> tuple[np.ndarray, np.ndarray]:
        key = ("labels", pos_label)
        if key not in self._cache:
            t, p, _ = binarize_labels(self.y_true, self.y_pred, pos_label, self._distinct_labels())
            self._cache[key] = (t, p)
        return self._cache[key]

    def confusion(self, pos_label: Any = None) -> ConfusionStats:
        """Confusion counts per group (cached per ``pos_label``).

        Binary labels give :class:`ConfusionStats`; labels of more than two classes
        give :class:`MulticlassStats` (K x K), or, with ``pos_label``, the binary
        counts of that class against the rest.
        """
        if pos_label is None and self.is_multiclass():
            return self.multiclass()
        key = ("confusion", pos_label)
        if key not in self._cache:
            if "class_counts" in self._cache:
                self._cache[key] = self._binary_from_class_counts(pos_label)
            else:
                t, p = self.labels01(pos_label)
                self._cache[key] = ConfusionStats.from_codes(self.group_codes, t, p, self.groups, self.sample_weight)
        return self._cache[key]

    def _binary_from_class_counts(self, pos_label: Any) -> ConfusionStats:
        """The 2 x 2 counts of ``pos_label`` against the rest, summed from the K x K counts."""
        _check_label_values(self.y_true, self.y_pred)
        pos = _positive_label(pos_label, *self._distinct_labels())
        values = self.classes().to_numpy()
        is_pos = np.broadcast_to(np.asarray(values == pos, dtype=bool), values.shape)
        onehot = np.stack([~is_pos, is_pos], axis=1).astype(float)
        counts = np.einsum("gij,ia,jb->gab", self._cache["class_counts"], onehot, onehot)
        return ConfusionStats(counts, self.groups)

    def is_multiclass(self) -> bool:
        """Whether y_true holds more than two classes."""
        return len(self._distinct_labels()[0]) > 2

    def classes(self) -> pd.Index:
        """The sorted union of the labels of y_true and y_pred (cached)."""
        if "classes" not in self._cache:
            uniq_t, uniq_p = self._distinct_labels()
            self._cache["classes"] = pd.Index(_sorted_labels(pd.unique(np.concatenate([uniq_t, uniq_p]))))
        return self._cache["classes"]

    def class_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Codes ``0..K-1`` of y_true and y_pred in :meth:`classes` (validated, cached)."""
        if "class_codes" not in self._cache:
            _check_label_values(self.y_true, self.y_pred)
            self._check_cells()
            self._cache["class_codes"] = class_codes(self.y_true, self.y_pred, self.classes())
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
        if "multiclass" not in self._cache:
            if "class_counts" in self._cache:  # counted with the groups (integer fast path)
                self._check_cells()
                counts = self._cache["class_counts"].astype(float)
                self._cache["multiclass"] = MulticlassStats(counts, self.groups, self.classes())
            else:
                t, p = self.class_codes()
                self._cache["multiclass"] = MulticlassStats.from_class_codes(
                    self.group_codes, t, p, self.groups, self.classes(), self.sample_weight
                )
        return self._cache["multiclass"]

    def errors(self) -> ErrorStats:
        """Regression error sums per group (cached)."""
        if "errors" not in self._cache:
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
                self._cache["errors"] = ErrorStats(np.stack([c.sum(axis=(1, 2)), wrong, wrong], axis=-1), self.groups)
            else:
                self._cache["errors"] = ErrorStats.from_codes(
                    self.group_codes, self.y_true, self.y_pred, self.groups, self.sample_weight
                )
        return self._cache["errors"]

    def _distinct_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct values of y_true and y_pred (cached)."""
        if "distinct" not in self._cache:
            self._cache["distinct"] = (_distinct(self.y_true), _distinct(self.y_pred))
        return self._cache["distinct"]

    def _binary01(self) -> bool:
        """Whether both label arrays are integer or boolean with values in {0, 1}."""
        if self.y_true.dtype.kind not in "iub" or self.y_pred.dtype.kind not in "iub":
            return False
        return all(set(u.tolist()) <= {0, 1} for u in self._distinct_labels())

    def counts_per_group(self) -> pd.Series:
        """Number of samples (weighted, if weights were given) in each group (cached)."""
        if "counts" not in self._cache:
            if self.sample_weight is None:
                n = self.group_sizes()
            else:
                n = np.bincount(self.group_codes, weights=self.sample_weight, minlength=self.n_groups)
            self._cache["counts"] = pd.Series(n, index=self.groups, name="count")
        return self._cache["counts"].copy()

    def group_sizes(self) -> np.ndarray:
        """Number of rows (not weights) in each group (cached)."""
        if "sizes" not in self._cache:
            self._cache["sizes"] = np.bincount(self.group_codes, minlength=self.n_groups)
        return self._cache["sizes"]

    def subset(self, mask: np.ndarray) -> GroupedSample:
        """The rows selected by ``mask``, keeping the full group table."""
        return GroupedSample(
            self.y_true[mask],
            self.y_pred[mask],
            self.group_codes[mask],
            self.groups,
            None if self.sample_weight is None else self.sample_weight[mask],
        )


def check_inputs(
    y_true: Any,
    y_pred: Any,
    sensitive_features: Any,
    sample_weight: Any = None,
    *,
    groups: pd.Index | None = None,
    y_pred_name: str = "y_pred",
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
    y_pred_name : str, default="y_pred"
        Name of the prediction argument in error messages.

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
    inputs = (y_true, y_pred, sensitive_features, sample_weight)
    sample = _reuse.lookup(inputs, (y_pred_name,), groups)
    if sample is not None:
        return sample
    return _reuse.store(
        inputs,
        (y_pred_name,),
        groups,
        lambda: _validated(y_true, y_pred, sensitive_features, sample_weight, groups, y_pred_name),
    )


def _validated(
    y_true: Any, y_pred: Any, sensitive_features: Any, sample_weight: Any, groups: pd.Index | None, y_pred_name: str
) -> GroupedSample:
    """The validation behind :func:`check_inputs`, without reuse."""
    t = _to_1d(y_true, "y_true")
    p = _to_1d(y_pred, y_pred_name)
    if t.size != p.size:
        raise ValueError(
            f"{y_pred_name} has {p.size} samples but y_true has {t.size}; both must describe the same samples."
        )
    if t.size == 0:
        raise ValueError("y_true is empty; a measure needs at least one sample per group.")
    cols = _checked_columns(sensitive_features, t.size, "sensitive_features")
    w = _check_weight(sample_weight, t.size)
    if groups is None and w is None:
        sample = _integer_sample(cols, t, p)
        if sample is not None:
            return sample
    codes, index = _encoded(cols, groups, "sensitive_features")
    return GroupedSample(t, p, codes, index, w)


# --- integer fast path: one bincount finds the groups and labels and counts them -----------


def _integer_sample(cols: list[tuple[str, Any]], t: np.ndarray, p: np.ndarray) -> GroupedSample | None:
    """The validated sample of integer (or boolean) groups and labels, from one ``np.bincount``.

    When one sensitive column and both label arrays are integer (or boolean) NumPy
    arrays over small value ranges, the counts over the raw ranges of (group, y_true,
    y_pred) tell at once which groups and labels occur and how many rows each
    (group, true, predicted) cell holds: no separate pass per array to find its
    levels. The sample it returns holds the same codes, groups and statistics as the
    general path (factorise, then count), which ``tests/test_speed_paths.py`` checks;
    None when the inputs do not qualify.
    """
    if len(cols) != 1 or not (_is_integer(cols[0][1]) and _same_label_kind(t, p)):
        return None
    name, g = cols[0]
    raw = _RawCounts.of(g, t, p)
    if raw is None:
        return None
    counts, g_lo, lo = raw.counts, raw.g_lo, raw.lo
    sizes, t_rows, p_rows = counts.sum(axis=(1, 2)), counts.sum(axis=(0, 2)), counts.sum(axis=(0, 1))
    g_idx, c_idx = np.flatnonzero(sizes), np.flatnonzero(t_rows + p_rows)
    index = pd.Index(_levels(g_idx, g_lo, g.dtype), name=name)
    codes = _codes_from_offsets(g, g_lo, counts.shape[0], g_idx)
    if g_idx.size < 2:
        _check_two_groups(codes, index, "sensitive_features")
    sample = GroupedSample(t, p, codes, index)
    sample._cache["distinct"] = (
        _present_levels(np.flatnonzero(t_rows), lo, t.dtype),
        _present_levels(np.flatnonzero(p_rows), lo, p.dtype),
    )
    sample._cache["sizes"] = sizes[g_idx]
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
    if not (_is_integer(t) and _is_integer(p)):
        return False
    return (t.dtype.kind == "b") == (p.dtype.kind == "b")


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

    @classmethod
    def of(cls, g: np.ndarray, t: np.ndarray, p: np.ndarray) -> _RawCounts | None:
        """The counts over the value ranges; None if even the exact ranges are too wide to count.

        Large inputs are counted by the compiled kernel when numba is installed (exact
        ranges, two passes); otherwise NumPy counts over ranges from 0 to a bit mask if no
        value is negative, else from minimum to maximum.
        """
        kernel = _compiled_kernel() if t.size >= _COMPILED_ROWS and _compilable(g, t, p) else None
        if kernel is not None:
            return cls._compiled(kernel, *(_as_integer(v) for v in (g, t, p)))
        raw = cls._count(g, t, p, exact=False)
        return raw if raw is not None else cls._count(g, t, p, exact=True)

    @classmethod
    def _compiled(cls, kernel: Any, g: np.ndarray, t: np.ndarray, p: np.ndarray) -> _RawCounts | None:
        """Exact ranges from one compiled pass, then every row counted in a second (no cell index array)."""
        g_lo, g_hi, t_lo, t_hi, p_lo, p_hi = (int(v) for v in kernel.bounds(g, t, p))
        lo, hi = min(t_lo, p_lo), max(t_hi, p_hi)
        n_g, n_c = g_hi - g_lo + 1, hi - lo + 1
        if n_g * n_c * n_c > _range_limit(t.size):
            return None
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


# --- small groups ----------------------------------------------------------------------


class SmallGroupWarning(UserWarning):
    """Groups smaller than ``min_group_size`` were left out of a measure, or merged."""


def check_small_groups(min_group_size: Any, small_groups: Any) -> None:
    """Validate ``min_group_size`` (None or a positive integer) and ``small_groups``."""
    if small_groups not in ("drop", "merge"):
        raise ValueError(f"small_groups={small_groups!r}; pass 'drop' (leave them out) or 'merge' (pool into 'other').")
    if min_group_size is None:
        return
    if isinstance(min_group_size, bool) or not isinstance(min_group_size, int | np.integer) or min_group_size < 1:
        raise ValueError(f"min_group_size={min_group_size!r}; pass a positive number of rows (or None).")


def _other_label(groups: pd.Index) -> Any:
    label = "other" if groups.nlevels == 1 else ("other",) * groups.nlevels
    if label in groups:
        raise ValueError(
            f"a group is already named {label!r}, so small groups cannot be merged into it; rename that group, "
            "or pass small_groups='drop'."
        )
    return label


@dataclass(frozen=True, eq=False)
class SmallGroupPlan:
    """Which groups a ``min_group_size`` leaves out or pools, decided once on their row counts.

    Built by :func:`small_group_plan`; applied to rows (:func:`restrict_small_groups`),
    to statistics (:func:`restrict_small_group_stats`, e.g. from a dataframe engine) or
    to group codes (the Bayesian posteriors), so that every path drops or merges the
    same groups with the same warning.

    Attributes
    ----------
    lut : ndarray of shape (n_groups_before,)
        New code of each old group; -1 for a group left out.
    groups : pandas.Index
        The groups after (the kept ones in their order, then ``"other"`` when merging).
    message : str
        The :class:`SmallGroupWarning` text naming the small groups and their sizes.
    """

    lut: np.ndarray
    groups: pd.Index
    message: str

    def codes(self, codes: np.ndarray) -> np.ndarray:
        """Codes after the plan (-1 for rows of a group left out)."""
        return self.lut[codes]

    def stats(self, stats: ConfusionStats | ErrorStats) -> ConfusionStats | ErrorStats:
        """Statistics (any leading axes) with the small groups' cells left out or summed into ``"other"``."""
        if isinstance(stats, ErrorStats):
            return dataclasses.replace(stats, sums=self._pooled(stats.sums, 2), groups=self.groups)
        return dataclasses.replace(stats, counts=self._pooled(stats.counts, 3), groups=self.groups)

    def warn(self, stacklevel: int = 1) -> None:
        """Emit the :class:`SmallGroupWarning`, attributed ``stacklevel`` frames above the caller."""
        warnings.warn(self.message, SmallGroupWarning, stacklevel=stacklevel + 1)

    def _pooled(self, values: np.ndarray, tail: int) -> np.ndarray:
        moved = np.moveaxis(np.asarray(values, dtype=float), values.ndim - tail, 0)
        out = np.zeros((len(self.groups), *moved.shape[1:]))
        kept = self.lut >= 0
        np.add.at(out, self.lut[kept], moved[kept])
        return np.moveaxis(out, 0, values.ndim - tail)


def small_group_plan(
    sizes: Any, groups: pd.Index, min_group_size: int | None, small_groups: str = "drop", key: str = "the measure"
) -> SmallGroupPlan | None:
    """Decide which groups of fewer than ``min_group_size`` rows to leave out or pool (None: none).

    Parameters
    ----------
    sizes : array-like of shape (n_groups,)
        Number of rows (not weights) of each group.
    groups : pandas.Index
        The groups, in the order of ``sizes``.
    min_group_size : int or None
        Groups with fewer rows are small (declared groups absent from the data too).
    small_groups : {"drop", "merge"}, default="drop"
        Leave the small groups out, or pool them into one group ``"other"``
        (``("other", ...)`` for intersectional groups) placed last.
    key : str, default="the measure"
        Who asks, for the warning and error messages.

    Returns
    -------
    SmallGroupPlan or None

    Raises
    ------
    SingleGroupError
        If fewer than two groups with rows remain.

    Examples
    --------
    >>> plan = small_group_plan([50, 3, 40, 2], pd.Index(list("abcd")), 10, "merge")
    >>> plan.lut.tolist(), list(plan.groups)
    ([0, 2, 1, 2], ['a', 'c', 'other'])
    """
    if min_group_size is None:
        return None
    sizes = np.asarray(sizes, dtype=np.int64)
    small = sizes < min_group_size
    if not small.any():
        return None
    keep = np.flatnonzero(~small)
    lut = np.full(len(groups), -1, dtype=np.intp)
    lut[keep] = np.arange(keep.size)
    labels = groups.tolist()  # Python scalars: the message reads 7, not np.int64(7)
    named = ", ".join(f"{labels[i]!r} ({sizes[i]})" for i in np.flatnonzero(small))
    index = groups[keep]
    what = "are left out, with their rows"
    if small_groups == "merge":
        label = _other_label(groups)
        lut[small] = keep.size
        if groups.nlevels > 1:
            other = pd.MultiIndex.from_tuples([label], names=groups.names)
        else:
            other = pd.Index([label], name=groups.name)
        index = index.append(other)
        what = f"are merged into {label!r} ({int(sizes[small].sum())} rows)"
    kept = lut >= 0
    if np.count_nonzero(np.bincount(lut[kept], weights=sizes[kept], minlength=len(index))) < 2:
        raise SingleGroupError(
            f"{key}: fewer than two groups have at least min_group_size={min_group_size} rows (small: {named}); "
            "lower min_group_size, or merge rare levels first (skfair_measures.groups.merge_rare_levels)."
        )
    message = f"{key}: group(s) with fewer than min_group_size={min_group_size} rows {what}: {named}."
    return SmallGroupPlan(lut, index, message)


def restrict_small_groups(
    sample: GroupedSample, min_group_size: int | None, small_groups: str = "drop", key: str = "the measure"
) -> GroupedSample:
    """The sample without its groups of fewer than ``min_group_size`` rows, or with them pooled.

    Sizes count rows, not weights. Small groups (also declared groups absent from the
    data) are left out with their rows (``"drop"``) or pooled into one group labelled
    ``"other"`` (``("other", ...)`` for intersectional groups) placed last
    (``"merge"``); a :class:`SmallGroupWarning` names them and their sizes. The
    decision is :func:`small_group_plan`'s.

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
    if small_groups == "merge":
        out = GroupedSample(sample.y_true, sample.y_pred, codes, plan.groups, sample.sample_weight)
    else:
        rows = codes >= 0
        w = None if sample.sample_weight is None else sample.sample_weight[rows]
        out = GroupedSample(sample.y_true[rows], sample.y_pred[rows], codes[rows], plan.groups, w)
    plan.warn(stacklevel=4)  # the user's call, through the measure's validation
    return out


def restrict_small_group_stats(
    stats: ConfusionStats | ErrorStats,
    sizes: Any,
    min_group_size: int | None,
    small_groups: str = "drop",
    key: str = "the measure",
    *,
    warn: bool = True,
) -> ConfusionStats | ErrorStats:
    """:func:`restrict_small_groups` on statistics: the same groups left out or pooled, from counts.

    For statistics computed without the rows (a dataframe engine's grouped pass):
    counts are additive, so leaving a group out drops its cells and merging sums
    them, exactly as the same rule applied to the rows would.

    Parameters
    ----------
    stats : ConfusionStats, MulticlassStats or ErrorStats
        Statistics per group (any leading axes, e.g. bootstrap replicates).
    sizes : array-like of shape (n_groups,)
        Number of rows (not weights) of each group of ``stats``.
    min_group_size, small_groups, key
        As for :func:`restrict_small_groups`.
    warn : bool, default=True
        Emit the :class:`SmallGroupWarning` (off for replicates of statistics
        already restricted once).

    Examples
    --------
    >>> import warnings
    >>> s = ConfusionStats.from_codes([0, 0, 0, 1, 1, 1, 2], [1] * 7, [1] * 7, pd.Index(list("abc")))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     r = restrict_small_group_stats(s, [3, 3, 1], 2, "merge")
    >>> list(r.groups), r.n.tolist()
    (['a', 'b', 'other'], [3.0, 3.0, 1.0])
    """
    plan = small_group_plan(sizes, stats.groups, min_group_size, small_groups, key)
    if plan is None:
        return stats
    if warn:
        plan.warn(stacklevel=2)  # attributed to whoever called this function
    return plan.stats(stats)
