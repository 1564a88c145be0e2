"""Which classes exist, and which one is positive: the label decisions of every measure.

Binary rates compare one positive class with the rest (:func:`binarize_labels`);
multiclass counts run over the classes of :func:`class_index`: the classes declared with
``labels=``, or else those seen in y_true and y_pred together.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._arrays import _check_no_missing, _range_limit, _shifted, _small_int_levels

__all__ = ["binarize_labels", "check_labels", "class_codes", "class_index", "factorized_labels", "implied_positive"]

#: The codes and the distinct labels of one object label array, from one factorisation (None: other dtypes).
Factorized = tuple[np.ndarray, np.ndarray] | None

_NOT_BINARY = (
    "{name} {n} distinct labels ({labels}); this binary rate compares one class with the rest. Pass pos_label= "
    "(that class against the others), or average='macro' or 'weighted' (e.g. msr('fairness.tpr', average='macro')) "
    "for the mean over classes."
)
_NEED_POS_LABEL = (
    "the labels are {labels}; pass pos_label= to say which one is the positive class (e.g. pos_label={example!r})."
)


_BINARY_DEFAULTS = ({0, 1}, {-1, 1})


def implied_positive(classes: Any) -> bool:
    """Whether the classes imply their positive class: 1 of {0, 1}, {-1, 1} or booleans.

    Otherwise (e.g. ``["no", "yes"]``) a rate of one class against the rest needs
    ``pos_label=``, while a metric defined on the classes themselves (accuracy, error
    rate, balanced accuracy) reads the K x K counts and needs none.

    Examples
    --------
    >>> implied_positive([0, 1]), implied_positive([True]), implied_positive(["no", "yes"])
    (True, True, False)
    """
    label_set = set(classes)
    return any(label_set <= default for default in _BINARY_DEFAULTS)


def need_pos_label(classes: Any) -> str:
    """The message that asks for ``pos_label=`` among these classes."""
    labels = sorted(classes, key=str)
    return _NEED_POS_LABEL.format(labels=labels, example=labels[-1] if labels else 1)


def _distinct(arr: np.ndarray) -> np.ndarray:
    """Distinct values as an object array (bincount for small integer ranges)."""
    small = _small_int_levels(arr)  # its levels keep the array's dtype (booleans stay booleans)
    return (pd.unique(arr) if small is None else small[0]).astype(object)


def factorized_labels(arr: np.ndarray, name: str) -> Factorized:
    """Codes and distinct labels of an object label array from one hash pass, missing labels refused.

    An object array holds a pointer per row to a Python object, so every pass over it
    hashes or compares a million Python objects: looking for missing values
    (``pd.isna``), finding the distinct labels (``pd.unique``) and comparing with the
    positive class would be three such passes. ``pd.factorize`` gives the codes with
    ``-1`` for a missing value (None, NaN, NA) and the distinct labels in one: missing
    labels are then an integer test, and any later mapping of labels (positive class,
    class codes) a lookup over the few distinct labels. None for other dtypes, whose
    checks are vectorised already (numbers; pandas Categorical and string arrays, whose
    missing values and distinct labels are read from their codes or Arrow buffers).

    Examples
    --------
    >>> codes, uniques = factorized_labels(np.array(["no", "yes", "no"], dtype=object), "y_true")
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, 0], ['no', 'yes'])
    """
    if not (isinstance(arr, np.ndarray) and arr.dtype == object):
        return None
    codes, uniques = pd.factorize(arr)
    _check_no_missing(arr, name, missing=codes < 0)
    return codes, np.asarray(uniques, dtype=object)


def _check_label_values(
    y_true: np.ndarray, y_pred: np.ndarray, factorized: tuple[Factorized, Factorized] = (None, None)
) -> None:
    """Refuse missing labels and floats that are not whole numbers (scores, regression values)."""
    for arr, nm, done in ((y_true, "y_true", factorized[0]), (y_pred, "y_pred", factorized[1])):
        if arr.dtype.kind in "iub" or done is not None:
            continue  # integer and boolean arrays hold neither missing values nor fractions; factorised: checked
        _check_no_missing(arr, nm)
        if arr.dtype.kind == "f":
            infinite = np.flatnonzero(np.isinf(arr))
            if infinite.size:  # refused as NaN is (scikit-learn: "Input contains infinity"), not a third class
                raise ValueError(
                    f"{nm} has {infinite.size} infinite value(s), first at position {infinite[0]}; "
                    "labels are finite: drop or fix those rows before computing a measure."
                )
            frac = arr[(arr != np.round(arr))]
            if frac.size:
                raise ValueError(
                    f"{nm} holds non-label values such as {frac[0]:.4g}; pass predicted labels (e.g. "
                    "estimator.predict(X)), or probabilities to a measure built with threshold=."
                )


def _sorted_labels(labels: Any) -> list[Any]:
    """Labels in sorted order (as np.unique), by their text when types do not compare."""
    try:
        return sorted(labels)
    except TypeError:
        return sorted(labels, key=str)


def check_labels(labels: Any) -> pd.Index | None:
    """Validate declared classes (``labels=``): None, or distinct, non-missing labels, at least two.

    Examples
    --------
    >>> check_labels([0, 1, 2]).tolist()
    [0, 1, 2]
    >>> check_labels(None) is None
    True
    """
    if labels is None:
        return None
    if isinstance(labels, str) or not hasattr(labels, "__len__"):
        raise TypeError(f"labels={labels!r}; pass the list of classes, e.g. labels=[0, 1, 2].")
    index = labels if isinstance(labels, pd.Index) else pd.Index(list(labels))
    if len(index) < 2:
        raise ValueError(f"labels={index.tolist()!r}; declare at least two classes.")
    if np.asarray(pd.isna(index)).any():
        raise ValueError(f"labels={index.tolist()!r} holds a missing value; declare real class labels.")
    if not index.is_unique:
        raise ValueError(f"labels={index.tolist()!r} repeats a class; list each class once.")
    return index


def class_index(uniq_t: np.ndarray, uniq_p: np.ndarray, labels: pd.Index | None = None) -> pd.Index:
    """The classes of a sample: the declared ``labels``, or else those seen in y_true and y_pred together.

    The one decision of which classes exist. Declaring them (``labels=``, as in
    scikit-learn) keeps every fold of a multiclass cross-validation on the same K
    classes, also a fold whose y_true misses one; a label outside the declared classes
    is an error naming ``labels=``. Without a declaration the classes are the sorted
    union of the distinct labels of y_true and y_pred.

    Parameters
    ----------
    uniq_t, uniq_p : ndarray
        Distinct labels of y_true and y_pred.
    labels : pandas.Index, optional
        Declared classes (validated by :func:`check_labels`), in their order.

    Returns
    -------
    pandas.Index

    Examples
    --------
    >>> class_index(np.array([1, 0]), np.array([2, 0])).tolist()
    [0, 1, 2]
    >>> class_index(np.array([1, 0]), np.array([1, 0]), pd.Index([0, 1, 2])).tolist()
    [0, 1, 2]
    """
    seen = pd.unique(np.concatenate([uniq_t, uniq_p]))
    if labels is None:
        return pd.Index(_sorted_labels(seen))
    outside = seen[labels.get_indexer(pd.Index(seen, dtype=object)) < 0] if len(seen) else seen
    if len(outside):
        raise ValueError(
            f"y_true and y_pred hold label(s) {_sorted_labels(outside.tolist())} outside the declared classes "
            f"labels={labels.tolist()!r}; add them to labels= (every class the model can predict) or fix the data."
        )
    return labels


def class_codes(
    y_true: np.ndarray, y_pred: np.ndarray, classes: pd.Index, factorized: tuple[Factorized, Factorized] = (None, None)
) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``0..K-1`` of both label arrays in ``classes`` (a lookup table for small integers).

    An array with its :func:`factorized_labels` maps its few distinct labels, not every row.

    Examples
    --------
    >>> t, p = class_codes(np.array([2, 0, 1]), np.array([2, 2, 0]), pd.Index([0, 1, 2]))
    >>> t.tolist(), p.tolist()
    ([2, 0, 1], [2, 2, 0])
    """
    if factorized != (None, None):

        def lookup(arr: np.ndarray, done: Factorized) -> np.ndarray:
            if done is None:
                return class_codes(arr, arr, classes)[0]
            return classes.get_indexer(pd.Index(done[1], dtype=object)).astype(np.intp)[done[0]]

        return lookup(y_true, factorized[0]), lookup(y_pred, factorized[1])
    values = classes.to_numpy()
    ints = values.dtype.kind in "iu" and y_true.dtype.kind in "iu" and y_pred.dtype.kind in "iu"
    lo, hi = (int(values.min()), int(values.max())) if ints else (0, 0)
    if ints and y_true.dtype == y_pred.dtype == np.intp and np.array_equal(values, np.arange(values.size)):
        return y_true, y_pred  # labels 0..K-1 in order: already the codes
    if ints and hi - lo <= _range_limit(values.size):
        lut = np.full(hi - lo + 1, -1, dtype=np.intp)
        lut[_shifted(values, lo)] = np.arange(values.size)
        return lut[_shifted(y_true, lo)], lut[_shifted(y_pred, lo)]
    return classes.get_indexer(y_true).astype(np.intp), classes.get_indexer(y_pred).astype(np.intp)


def binarize_labels(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    pos_label: Any = None,
    distinct: tuple[np.ndarray, np.ndarray] | None = None,
    labels: pd.Index | None = None,
    any_class: bool = False,
    factorized: tuple[Factorized, Factorized] = (None, None),
) -> tuple[np.ndarray, np.ndarray, Any]:
    """Map binary labels to 0/1 codes, validating both label arrays.

    ``pos_label`` against the rest; without it, the labels must be binary (their
    positive class 1 for {0, 1}, {-1, 1} and booleans). ``labels`` are the declared
    classes (:func:`class_index`). ``any_class=True`` says the caller's values do not
    depend on which class is positive: without ``pos_label`` and without an implied
    positive class, the last class is taken instead of refusing. ``factorized`` holds
    :func:`factorized_labels` of either array (checked already; its 0/1 codes then come
    from its few distinct labels, not from comparing every row again).

    Examples
    --------
    >>> t, p, pos = binarize_labels(np.array(["a", "b"]), np.array(["b", "b"]), "b")
    >>> t.tolist(), p.tolist(), pos
    ([0, 1], [1, 1], 'b')
    """
    _check_label_values(y_true, y_pred, factorized)
    uniq_t, uniq_p = distinct if distinct is not None else (_distinct(y_true), _distinct(y_pred))
    pos = _positive_label(pos_label, uniq_t, uniq_p, labels, any_class)
    zero_one = pos == 1 and set(uniq_t.tolist()) | set(uniq_p.tolist()) <= {0, 1}

    def codes(arr: np.ndarray, done: Factorized) -> np.ndarray:
        if zero_one and arr.dtype == np.intp:
            return arr  # already 0/1 codes
        if done is not None:  # each distinct label compared once, as ``arr == pos`` compares each row
            return np.array([bool(u == pos) for u in done[1]], dtype=np.intp)[done[0]]
        try:
            return np.asarray(arr == pos, dtype=np.intp)
        except OverflowError:  # pos outside the array's dtype (a uint64 label, boolean array): no row equals it
            return np.zeros(arr.shape, dtype=np.intp)

    return codes(y_true, factorized[0]), codes(y_pred, factorized[1]), pos


def _positive_label(
    pos_label: Any, uniq_t: np.ndarray, uniq_p: np.ndarray, labels: pd.Index | None = None, any_class: bool = False
) -> Any:
    """The positive class given the distinct labels of y_true and y_pred, refusing what is not binary.

    ``pos_label`` when given (among several classes: that class against the rest), else 1 for
    {0, 1}, {-1, 1} and booleans. ``any_class``: the caller's values do not depend on which
    class is positive (:attr:`~skfair_measures.base.BaseMetric.needs_positive`), so the last
    class serves where none is implied.
    """
    classes = list(class_index(uniq_t, uniq_p, labels))
    shown = sorted(classes, key=str)
    if len(classes) > 2 and (pos_label is None or pos_label not in classes):
        named = "labels= declares" if labels is not None else "y_true and y_pred hold"
        raise ValueError(_NOT_BINARY.format(name=named, n=len(classes), labels=shown))
    if pos_label is not None:
        if pos_label not in classes and len(classes) == 2:
            raise ValueError(f"pos_label={pos_label!r} is not one of the labels {shown}; pass one of them.")
        return pos_label
    if implied_positive(classes):
        return 1
    if any_class and classes:
        return shown[-1]
    raise ValueError(need_pos_label(classes))
