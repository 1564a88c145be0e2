"""Validate proxy guesses of a sensitive attribute and encode them as integer codes.

A proxy matrix holds, for every sample, one guess of the sensitive attribute per
proxy model (one column per proxy). All columns guess the *same* attribute, so they
share one set of group labels: the declared ``groups=`` or, by default, the sorted
union of the values the proxies produce. Missing values are rejected before any
conversion (a ``None`` must never become a group called ``'None'``), and a value
outside the declared groups is an error that names the column and the value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._arrays import _check_no_missing, _to_1d
from .._groups import encode_known_groups

__all__ = ["encode_labels", "encode_proxies"]


def _columns(proxies: Any, name: str) -> list[tuple[str, np.ndarray]]:
    """Split ``proxies`` into named 1-D object columns without converting values."""
    if isinstance(proxies, pd.DataFrame):
        return [(str(c), proxies[c].to_numpy(dtype=object)) for c in proxies.columns]
    if isinstance(proxies, pd.Series):
        return [(str("proxy_0" if proxies.name is None else proxies.name), proxies.to_numpy(dtype=object))]
    strings = isinstance(proxies, (list, tuple)) and proxies and isinstance(proxies[0], str)
    arr = np.asarray(proxies, dtype=object if strings else None)
    arr = arr if arr.dtype.kind in "biuf" else arr.astype(object)  # labels other than numbers kept as objects
    arr = arr[:, None] if arr.ndim == 1 else arr
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, one column per proxy (n_samples, n_proxies); got shape {arr.shape}.")
    return [(f"proxy_{j}", arr[:, j]) for j in range(arr.shape[1])]


def _sorted_union(values: np.ndarray) -> np.ndarray:
    uniq = [v.item() if isinstance(v, np.generic) else v for v in pd.unique(values)]  # 1, not np.int64(1)
    try:
        return np.asarray(sorted(uniq), dtype=object)
    except TypeError:  # mixed types that do not compare: keep order of appearance
        return np.asarray(uniq, dtype=object)


def _refuse_non_guesses(values: np.ndarray, name: str, column: str) -> None:
    """A proxy guesses a group per row: not a probability, and not the same group for every row."""
    numeric = values.dtype.kind == "f" or (values.dtype == object and all(isinstance(v, float) for v in values[:100]))
    if numeric:
        as_float = values.astype(float)
        fractional = as_float != np.round(as_float)
        if fractional.any():
            raise ValueError(
                f"{name} column {column!r} holds non-integer numbers (e.g. {as_float[fractional][0]:.4g}),"
                " like probabilities or scores; a proxy must guess a group for every row. Pass each proxy's "
                "predicted group (e.g. predict(), not predict_proba())."
            )
    if len(values) > 1 and len(pd.unique(values)) == 1:
        only = np.asarray(values[:1]).tolist()[0]
        raise ValueError(
            f"{name} column {column!r} guesses the same group ({only!r}) for every row; a constant "
            "proxy carries no information about the groups. Drop that column or fix the proxy model."
        )


def _refuse_mixed_codings(cols: list[tuple[str, np.ndarray]], name: str) -> None:
    """Without declared groups, a proxy column must not use labels disjoint from all others.

    A column coded 5/6 beside columns coded 0/1 would otherwise make a union of four
    groups that no single proxy guesses, and a meaningless calibration.
    """
    seen = [(column, set(pd.unique(values).tolist())) for column, values in cols]
    for j, (column, labels) in enumerate(seen):
        others = set().union(*(other for i, (_, other) in enumerate(seen) if i != j))
        if len(labels) > 1 and others and not labels & others:
            shown = _sorted_union(np.array(list(labels), dtype=object)).tolist()
            rest = _sorted_union(np.array(list(others), dtype=object)).tolist()
            raise ValueError(
                f"{name} column {column!r} guesses {shown} but the other columns guess {rest}; every proxy "
                "guesses the same attribute, so they must share one coding. Recode the proxies, or pass "
                "groups= to declare the groups."
            )


def encode_proxies(
    proxies: Any, *, groups: Any = None, n_samples: int | None = None, name: str = "proxies", min_groups: int = 2
) -> tuple[np.ndarray, pd.Index, list[str]]:
    """Encode a proxy matrix as integer group codes shared by all columns.

    Parameters
    ----------
    proxies : array-like or DataFrame of shape (n_samples, n_proxies)
        Guesses of the sensitive attribute, one column per proxy; a 1-D array is
        one proxy.
    groups : array-like, optional
        The sensitive values (group labels). By default, the sorted union of the
        values in all columns.
    n_samples : int, optional
        Expected number of rows.
    name : str, default="proxies"
        Argument name used in error messages.
    min_groups : int, default=2
        Smallest number of groups accepted.

    Returns
    -------
    codes : ndarray of shape (n_samples, n_proxies)
        Group code (index into ``groups``) of every guess.
    groups : pandas.Index
        Group labels.
    columns : list of str
        Column names (DataFrame columns, or ``proxy_0``, ``proxy_1``, ...).

    Examples
    --------
    >>> codes, groups, cols = encode_proxies([["b", "a"], ["a", "a"], ["b", "b"]])
    >>> codes.tolist(), groups.tolist(), cols
    ([[1, 0], [0, 0], [1, 1]], ['a', 'b'], ['proxy_0', 'proxy_1'])
    """
    cols = _columns(proxies, name)
    if not cols or len(cols[0][1]) == 0:
        raise ValueError(f"{name} is empty; pass at least one row and one proxy column.")
    for column, values in cols:
        missing = pd.isna(values)
        if missing.any():
            raise ValueError(
                f"{name} column {column!r} has {int(missing.sum())} missing value(s), "
                f"first at row {int(np.flatnonzero(missing)[0])}; a proxy must guess a "
                "group for every row. Drop those rows or encode them as an explicit group."
            )
        if n_samples is not None and len(values) != n_samples:
            raise ValueError(
                f"{name} has {len(values)} rows but y_pred has {n_samples}; pass one "
                "row of proxy guesses per prediction."
            )
    for column, values in cols:
        _refuse_non_guesses(values, name, column)
    if groups is None:
        _refuse_mixed_codings(cols, name)
        labels = _sorted_union(np.concatenate([v for _, v in cols]))
    else:
        labels = np.asarray(list(groups), dtype=object)
        if pd.isna(labels).any():
            raise ValueError("groups contains a missing value; declare real group labels.")
        if len(pd.unique(labels)) != len(labels):
            raise ValueError(f"groups has duplicate labels: {labels.tolist()}.")
    index = pd.Index(labels, dtype=object)
    if len(index) < min_groups:
        raise ValueError(
            f"{name} holds {len(index)} group(s) ({index.tolist()}); a disparity compares at least {min_groups} "
            "groups. Pass groups= to declare the sensitive values the proxies can take."
        )
    codes = np.empty((len(cols[0][1]), len(cols)), dtype=np.intp)
    for j, (column, values) in enumerate(cols):
        codes[:, j] = encode_known_groups(values, index, f"{name} column {column!r}")
    return codes, index, [c for c, _ in cols]


def encode_labels(values: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate a 1-D label vector and factorise it (sorted labels).

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        Predicted or true labels.
    name : str
        Argument name used in error messages.

    Returns
    -------
    values : ndarray of shape (n_samples,)
        The labels as a 1-D array (object dtype unless numeric or boolean).
    labels : ndarray
        Sorted distinct labels.

    Examples
    --------
    >>> v, labels = encode_labels([1, 0, 1], "y_pred")
    >>> labels.tolist()
    [0, 1]
    """
    arr = _to_1d(values, name)
    arr = np.asarray(arr, dtype=object) if isinstance(arr, pd.Categorical) else arr
    if arr.size == 0:
        raise ValueError(f"{name} is empty.")
    _check_no_missing(arr, name)
    if arr.dtype.kind == "f":
        fractional = arr != np.round(arr)
        if fractional.any():
            raise ValueError(
                f"{name} holds non-integer numbers (e.g. {arr[fractional][0]:.4g} at position "
                f"{int(np.flatnonzero(fractional)[0])}), like probabilities or scores; pass class labels "
                "(e.g. model.predict(X), or the scores thresholded)."
            )
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "biu":
        arr = arr.astype(object)
    return arr, _sorted_union(arr) if arr.dtype == object else np.unique(arr)
