"""Checked one-dimensional arrays: labels, scores and weights, and small-integer codes.

The array-level checks every input goes through once (shape, missing values, range),
and the lookup-table helpers that turn integer arrays of a small value range into codes
without hashing (shared by the group encoder, the class codes and the integer fast path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["check_scores", "mean_by"]


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
    arr = values.to_numpy() if isinstance(values, pd.api.extensions.ExtensionArray) else np.asarray(values)
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
    strings = isinstance(values, pd.api.extensions.ExtensionArray) and pd.api.types.is_string_dtype(values.dtype)
    return strings and hasattr(values, "__arrow_array__")


def _check_no_missing(arr: np.ndarray, name: str, missing: np.ndarray | None = None) -> None:
    """Refuse missing values (``missing``: where they are, if known already), naming ``name`` and the first."""
    missing = pd.isna(arr) if missing is None else missing
    if missing.any():
        idx = np.flatnonzero(missing)
        raise ValueError(
            f"{name} has {idx.size} missing value(s) (NaN/None), first at position "
            f"{idx[0]}; drop or impute those rows before computing a measure."
        )


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
            f"{name} has values outside [0, 1] (min {lo:.4g}, max {hi:.4g}); pass probabilities of the positive class, "
            "e.g. predict_proba(X)[:, 1], not decision_function scores."
        )
    return s


def mean_by(codes: np.ndarray, values: np.ndarray, n_groups: int, weights: Any = None) -> np.ndarray:
    """The (weighted) mean of ``values`` per code; NaN for a code without weight.

    Examples
    --------
    >>> mean_by(np.array([0, 0, 1]), np.array([1.0, 3.0, 5.0]), 3).tolist()
    [2.0, 5.0, nan]
    """
    w = np.ones(values.size) if weights is None else weights
    total = np.bincount(codes, weights=w * values, minlength=n_groups)
    n = np.bincount(codes, weights=w, minlength=n_groups)
    return np.divide(total, n, out=np.full(n_groups, np.nan), where=n > 0)


def _check_weight(sample_weight: Any, n: int) -> np.ndarray | None:
    if sample_weight is None:
        return None
    w = _to_1d(sample_weight, "sample_weight").astype(float, copy=False)
    if w.size != n:
        raise ValueError(f"sample_weight has {w.size} samples but y_true has {n}; pass one weight per sample.")
    # two reductions without temporaries decide the common case: the minimum is NaN if any weight is, and
    # the sum of non-negative weights is finite only if every weight is; the mask is built for an error only
    if w.size and w.min() >= 0 and np.isfinite(w.sum()):
        return w
    idx = np.flatnonzero(~(np.isfinite(w) & (w >= 0)))
    if idx.size:  # else: finite, non-negative weights whose sum overflows
        raise ValueError(
            f"sample_weight has {idx.size} value(s) that are negative, NaN or infinite, first at position "
            f"{idx[0]} ({float(w[idx[0]])!r}); sample_weight must be finite and non-negative."
        )
    return w


def _small_int_levels(values: Any) -> tuple[np.ndarray, int] | None:
    """Sorted distinct values of an integer array with a small range, else None."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iub" or values.size == 0:
        return None
    as_ints = values.view(np.uint8) if values.dtype.kind == "b" else values
    lo, hi = int(as_ints.min()), int(as_ints.max())
    if hi - lo <= 1:  # one or two values: min and max say which
        return _levels(np.unique([0, hi - lo]), lo, values.dtype), lo
    if hi - lo > _range_limit(values.size):
        return None
    present = np.bincount(_shifted(values, lo), minlength=hi - lo + 1)
    return _levels(np.flatnonzero(present), lo, values.dtype), lo


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
