"""The group encoder: sensitive (and control) features in, one integer code per row out.

The one place that decides what a group is, for every door of the library (a measure
call, ``groupwise_metrics``, the engines, ``unaware`` and ``active``):

- a DataFrame, dict or 2-D array gives one column per feature, several columns give
  intersectional groups, folded into one code over the combinations that occur (never
  the product of all levels);
- a missing value is refused before any conversion, naming the feature;
- a pandas Categorical (or a polars Enum / Arrow dictionary, which reach pandas as one)
  contributes the categories that occur: its list of categories is not a declaration
  (an unused level, as ``df[df.sex != "X"]`` leaves, is not a group);
- declared groups (``groups=``) are a declaration: each keeps its place, an absent one
  with zero counts, and a value outside them is an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._arrays import _shifted, _small_int_levels

__all__ = ["SingleGroupError", "encode_groups", "encode_known_groups", "resolve_sensitive"]

_REQUIRED = (
    "{} is required: pass the group of each sample (array-like of shape (n_samples,) or a DataFrame of several columns)"
)
_MISSING = (
    "{} has {} missing value(s); a missing group cannot be compared. Drop those rows, or encode them as an explicit "
    "group such as 'unknown'."
)


class SingleGroupError(ValueError):
    """The sensitive features hold fewer than two groups, so nothing can be compared.

    Scorers catch it to report NaN for one cross-validation fold instead of
    aborting the whole search.
    """


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
            raise ValueError(_REQUIRED.format(argument) + ", or name the sensitive column(s) of X.")
        return sensitive_features
    if sensitive_features is not None:
        raise ValueError(f"both {argument} and sensitive column(s) {columns!r} of X were given; pass one of them.")
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
    sensitive_features: Any, argument: str = "sensitive_features"
) -> list[tuple[str, np.ndarray | pd.api.extensions.ExtensionArray]]:
    """Split sensitive features into named 1-D columns without converting values.

    Missing values are checked on the original objects, before any conversion, so
    that ``None``/``NaN`` can never become a group literally named ``'nan'``.
    """
    if sensitive_features is None:
        raise ValueError(_REQUIRED.format("sensitive_features") + ".")
    prefix = argument.removesuffix("s")  # unnamed columns: sensitive_feature_0, control_feature_0, ...
    cols = _named_columns(sensitive_features, prefix)
    if not cols:
        raise ValueError(f"{argument} has no columns.")
    kind = prefix.replace("_", " ")
    return [(name, _refuse_missing_groups(name, _column_values(col), kind)) for name, col in cols]


def _named_columns(sensitive_features: Any, prefix: str = "sensitive_feature") -> list[tuple[str, Any]]:
    """(name, column) pairs of a DataFrame, Series, dict, Categorical, list or array."""
    default = f"{prefix}_0"
    if isinstance(sensitive_features, pd.DataFrame | dict):  # both iterate over their column names
        return [(str(c), sensitive_features[c]) for c in sensitive_features]
    if isinstance(sensitive_features, pd.Series):
        name = sensitive_features.name
        return [(default if name is None else str(name), sensitive_features)]
    if isinstance(sensitive_features, pd.Categorical):
        return [(default, sensitive_features)]
    listed = isinstance(sensitive_features, list | tuple) and len(sensitive_features) > 0
    if listed and not isinstance(sensitive_features[0], list | tuple | np.ndarray | pd.Series):  # scalars, not rows
        # through pandas, not np.asarray: a list mixing 1 and "1" must stay two groups
        return [(default, pd.Series(list(sensitive_features)))]
    arr = np.asarray(sensitive_features)
    if arr.ndim == 1:
        return [(default, arr)]
    if arr.ndim == 2:
        return [(f"{prefix}_{j}", arr[:, j]) for j in range(arr.shape[1])]
    raise ValueError(f"sensitive_features must be 1-D or 2-D; got shape {arr.shape}.")


def _column_values(col: Any) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """A column's values; extension arrays (categoricals, Arrow/pandas strings) as they are."""
    if isinstance(col, pd.Series):  # an extension array is factorised without object conversion
        return col.array if isinstance(col.dtype, pd.api.extensions.ExtensionDtype) else col.to_numpy()
    return col if isinstance(col, pd.Categorical) else np.asarray(col)


def _refuse_missing_groups(name: str, values: Any, kind: str = "sensitive feature") -> Any:
    """The column's values, refused if any is missing; a NumPy object array comes back as its Categorical.

    An object array holds a pointer per row to a Python object: looking for missing
    values (``pd.isna``) and then factorising would visit every object twice. One
    sorted ``pd.factorize`` does both (a missing value gets the code -1), and its codes
    travel on as a Categorical, which encoding reads without hashing again.
    """
    if isinstance(values, pd.Categorical):
        missing = values.codes < 0
    elif isinstance(values, np.ndarray) and values.dtype.kind in "iub":
        return values  # integer and boolean arrays cannot hold missing values
    elif isinstance(values, np.ndarray) and values.dtype == object:
        codes, uniques = pd.factorize(values, sort=True)
        missing = codes < 0
        if not missing.any():
            return pd.Categorical.from_codes(codes, categories=pd.Index(uniques), validate=False)
    else:
        missing = pd.isna(values)
    if missing.any():
        raise ValueError(_MISSING.format(f"{kind} {name!r}", int(missing.sum())))
    return values


def _factorize(values: np.ndarray | pd.Categorical) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and sorted labels of the values that occur in one column.

    A categorical keeps the order of its categories but only those that occur: its list
    of categories is a dtype, not a declaration of groups (that is ``groups=``).
    """
    if isinstance(values, pd.Categorical) or isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(values)
        codes = np.asarray(cat.codes, dtype=np.intp)
        present = np.bincount(codes, minlength=len(cat.categories)) > 0  # missing values were refused before
        if present.all():
            return codes, pd.Index(cat.categories)
        lut = np.cumsum(present) - 1
        return lut[codes], pd.Index(cat.categories[present])
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


def encode_groups(
    sensitive_features: Any,
    n_samples: int | None = None,
    *,
    groups: pd.Index | None = None,
    name: str = "sensitive_features",
    compare: bool = True,
    samples: int | None = None,
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
    compare : bool, default=True
        Whether the groups are compared: then fewer than two observed groups (none
        declared) raise :class:`SingleGroupError`.
    samples : int, optional
        How many samples the values stand for, when each is a row of a summary table
        (an engine's count per cell); by default one sample per value. Messages count
        samples, not table rows.

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
    cols = _checked_columns(sensitive_features, n_samples, name)
    return _encoded(cols, groups, name, compare=compare, samples=samples)


def _checked_columns(sensitive_features: Any, n_samples: int | None, name: str) -> list[tuple[str, Any]]:
    """The named sensitive columns, each of ``n_samples`` values and none missing."""
    cols = _sensitive_columns(sensitive_features)
    for _, values in cols:
        if n_samples is not None and len(values) != n_samples:
            raise ValueError(f"{name} has {len(values)} samples but y_true has {n_samples}; pass one group per sample.")
    return cols


def _encoded(
    cols: list[tuple[str, Any]], groups: pd.Index | None, name: str, *, compare: bool = True, samples: int | None = None
) -> tuple[np.ndarray, pd.Index]:
    """Group codes and labels of checked columns: the declared groups, or those observed.

    At least two observed groups when the groups are to be compared (``compare``); a
    measure that compares none (``classif.acc`` shown per group) takes one.
    """
    if groups is not None:
        # intersectional groups: each row's tuple of labels
        key = pd.MultiIndex.from_arrays([np.asarray(v, dtype=object) for _, v in cols]) if len(cols) > 1 else cols[0][1]
        return encode_known_groups(key, groups, name), pd.Index(groups)
    codes, index = _observed_groups(cols)
    if compare:
        _check_two_groups(codes, index, name, samples)
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
    level_codes, level_tables = [np.arange(len(levels))], [levels]
    for _, values in cols[1:]:
        col_codes, col_levels = _factorize(values)
        pair = codes.astype(np.int64) * len(col_levels) + col_codes
        uniq, codes = np.unique(pair, return_inverse=True)  # sorted, so groups come in label order
        level_codes = [lc[uniq // len(col_levels)] for lc in level_codes] + [uniq % len(col_levels)]
        level_tables.append(col_levels)
    index = pd.MultiIndex(levels=level_tables, codes=level_codes, names=[c for c, _ in cols])
    return codes.astype(np.intp, copy=False), index


def _check_two_groups(codes: np.ndarray, index: pd.Index, name: str, samples: int | None = None) -> None:
    """Refuse fewer than two observed groups; ``samples`` is how many samples the codes stand for."""
    if codes.size and codes.min() != codes.max():
        return  # two distinct codes: two observed groups (min and max cost less than a bincount)
    seen = index[codes[0]] if codes.size else None  # every code is the same: one group at most
    raise SingleGroupError(
        f"{name} holds a single group ({seen!r}) in these {codes.size if samples is None else samples} samples; "
        "a fairness measure compares at least two groups. Pass a feature with two or more values (in cross-validation, "
        "stratify the folds by group so that no fold misses a group, or declare all groups with groups=)."
    )


def encode_known_groups(values: Any, groups: Any, name: str, *, missing: bool = False) -> np.ndarray:
    """The code of each value in declared ``groups``; a value outside them is an error naming ``name``.

    Parameters
    ----------
    values : array-like of shape (n_samples,) or pandas.MultiIndex
        One group label per row (a MultiIndex for intersectional groups).
    groups : array-like
        The declared groups; the code of a value is its position here.
    name : str
        How the caller names ``values`` in the error (an argument, or a column of one).
    missing : bool, default=False
        Whether a missing value is allowed (then coded -1, e.g. a row whose group is
        unknown); by default it is refused, since a missing group cannot be compared.

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> encode_known_groups(["b", "a", "b"], ["a", "b", "c"], "sex").tolist()
    [1, 0, 1]
    >>> encode_known_groups(["b", None], ["a", "b"], "sex", missing=True).tolist()
    [1, -1]
    """
    index = groups if isinstance(groups, pd.Index) else pd.Index(list(groups))
    key = values if isinstance(values, pd.MultiIndex) else pd.Index(np.asarray(values, dtype=object), dtype=object)
    unknown = np.asarray(pd.isna(key)) if key.nlevels == 1 else np.zeros(len(key), dtype=bool)
    if unknown.any() and not missing:
        raise ValueError(_MISSING.format(name, int(unknown.sum())))
    codes = np.asarray(index.get_indexer(key), dtype=np.intp)
    codes[unknown] = -1
    bad = (codes < 0) & ~unknown
    if bad.any():
        shown = list(pd.unique(np.asarray(key[bad], dtype=object)))
        rest = " ..." if len(shown) > 5 else ""
        if "unlabeled" in name or "without a label" in name:  # the groups of the labeled rows (posteriors)
            raise ValueError(
                f"{name} holds value(s) {shown[:5]!r}{rest}, group(s) without a labeled row (the labeled rows and "
                f"the measure's groups= give {list(index)}); a group's rates need labeled rows. Label some rows of "
                "these groups, or leave their unlabeled rows out."
            )
        raise ValueError(
            f"{name} holds value(s) {shown[:5]!r}{rest}, not one of the declared groups {list(index)}; "
            "add them to the measure's groups= or fix the data."
        )
    return codes
