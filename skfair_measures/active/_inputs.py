"""The rows of an assessment: validated once (classes, predictions, scores, groups and labels already known).

The unlabeled rows of each group are then put in a random order once (one permutation and one
stable sort, :class:`GroupPools`); taking a row advances that group's pointer, so ``ask`` never
passes over the rows, whatever the size of the pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._groups import encode_groups
from .._labels import binarize_labels
from ._metrics import ActiveMetric

__all__ = ["GroupPools", "Pool", "check_pool", "label_codes"]


@dataclass(frozen=True)
class Pool:
    """The rows of an active assessment as integer codes and per-row expectations."""

    classes: pd.Index
    pos_code: int  # -1 when the metric needs no positive class and none was found
    pred: np.ndarray  # class code of each prediction
    confidence: np.ndarray  # score of the predicted class
    p_pos: np.ndarray  # score of the positive class (NaN when there is none)
    groups: pd.Index
    group: np.ndarray  # group code of each row
    labels: np.ndarray  # class code of a label known up front, -1 for unlabeled rows


def _classes(y_pred: np.ndarray, scores: np.ndarray, classes: Any, pos_label: Any) -> pd.Index:
    """The classes in the order of the score columns: ``classes``, else those of ``y_pred`` (and ``pos_label``)."""
    if classes is not None:
        index, source = pd.Index(list(classes)), f"classes={list(classes)!r}"
        if not index.is_unique:
            raise ValueError(f"{source} repeats a class; list each class once.")
    elif scores.ndim == 2:
        index, source = pd.Index(pd.unique(y_pred)).sort_values(), "found in y_pred"
    else:
        index = pd.Index(pd.unique(np.append(y_pred.astype(object), [pos_label]))).sort_values()
        source = f"found in y_pred and pos_label={pos_label!r}"
    if scores.ndim == 2 and scores.shape[1] != len(index):
        raise ValueError(
            f"scores has {scores.shape[1]} columns for {len(index)} classes ({source}); pass classes= naming the "
            "class of each score column, in column order."
        )
    if scores.ndim == 1 and len(index) != 2:
        raise ValueError(
            f"1-D scores are P(y == pos_label) for a binary task, but the classes are {index.tolist()!r} ({source}); "
            "pass classes=[negative, positive] (or the predict_proba matrix)."
        )
    return index


def label_codes(classes: pd.Index, values: Any, name: str) -> np.ndarray:
    """Class code of each value; a value outside ``classes`` is an error naming it."""
    values = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    codes = classes.get_indexer(pd.Index(values, dtype=object) if values.dtype == object else values)
    if (codes < 0).any():
        bad = pd.unique(np.asarray(values, dtype=object)[codes < 0])[:5]
        raise ValueError(f"{name} holds {list(bad)!r}, not among the classes {classes.tolist()!r}.")
    return codes


def _scores(scores: Any, n: int) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim not in (1, 2) or s.shape[0] != n:
        raise ValueError(f"scores has shape {s.shape}; pass one score per row (1-D) or the predict_proba matrix.")
    if not np.isfinite(s).all() or s.min() < 0 or s.max() > 1:
        raise ValueError("scores must be probabilities in [0, 1] without NaN.")
    return s


def _default_pos_label(pos_label: Any, y_pred: Any, scores: Any, classes: Any, metric: ActiveMetric) -> Any:
    """The positive class by the core's rule: as given, else 1 for 0/1, -1/1 and boolean labels.

    Other labels need ``pos_label`` when the metric or 1-D scores refer to a positive
    class; accuracy with the ``predict_proba`` matrix needs none.
    """
    if pos_label is not None:
        return pos_label
    labels = pd.unique(np.asarray(list(classes) if classes is not None else y_pred, dtype=object).ravel())
    one_d = np.ndim(scores) == 1
    if len(labels) <= 2:
        try:
            return binarize_labels(labels, labels)[2]
        except ValueError as err:
            if not (one_d or metric.needs_pos_label):
                return None
            why = "1-D scores are P(y == pos_label)" if one_d else f"metric={metric.key!r} refers to a positive class"
            raise ValueError(f"{why}, but pos_label is not given: {err}") from None
    if metric.needs_pos_label:
        raise ValueError(
            f"metric={metric.key!r} refers to a positive class; y_pred holds {len(labels)} classes: "
            "pass pos_label= (that class against the others)."
        )
    return None


def check_pool(
    y_pred: Any, scores: Any, sensitive: Any, metric: ActiveMetric, classes: Any, pos_label: Any, y_true: Any
) -> Pool:
    """Validate the inputs of :class:`ActiveAssessment` once, naming the culprit."""
    pos_label = _default_pos_label(pos_label, y_pred, scores, classes, metric)
    pred_values = np.asarray(y_pred.to_numpy() if isinstance(y_pred, pd.Series) else y_pred)
    if pred_values.ndim != 1:
        raise ValueError(f"y_pred has shape {pred_values.shape}; pass one predicted label per row.")
    n = pred_values.size
    s = _scores(scores, n)
    index = _classes(pred_values, s, classes, pos_label)
    pred = label_codes(index, pred_values, "y_pred")
    pos_code = int(index.get_indexer([pos_label])[0]) if pos_label is not None else -1
    if metric.needs_pos_label and pos_code < 0:
        raise ValueError(f"metric={metric.key!r} needs pos_label among the classes {index.tolist()!r}.")
    if s.ndim == 1:
        if pos_code < 0:
            raise ValueError(f"1-D scores are P(y == pos_label), but pos_label={pos_label!r} is not a class.")
        p_pos, confidence = s, np.where(pred == pos_code, s, 1.0 - s)
    else:
        confidence = s[np.arange(n), pred]
        p_pos = s[:, pos_code] if pos_code >= 0 else np.full(n, np.nan)
    group, groups = encode_groups(sensitive, n, name="sensitive_features")
    labels = np.full(n, -1, dtype=np.int64)
    if y_true is not None:
        yt = pd.Series(np.asarray(y_true, dtype=object))
        if len(yt) != n:
            raise ValueError(f"y_true has {len(yt)} rows but y_pred has {n}; use NaN/None for unlabeled rows.")
        known = yt.notna().to_numpy()
        labels[known] = label_codes(index, yt[known].to_numpy(), "y_true")
    return Pool(index, pos_code, pred, confidence, p_pos, groups, group, labels)


class GroupPools:
    """Unlabeled row indices by group, each group in a random order.

    Parameters
    ----------
    codes : ndarray of int of shape (n_rows,)
        Group code of each row; -1 for rows that can never be asked.
    n_groups : int
        Number of groups.
    rng : numpy.random.Generator
        Source of the random order.

    Examples
    --------
    >>> pools = GroupPools(np.array([0, 1, 0, 1, -1]), 2, np.random.default_rng(0))
    >>> pools.remaining.tolist()
    [2, 2]
    >>> sorted(pools.take(0, 2).tolist())
    [0, 2]
    >>> pools.remaining.tolist()
    [0, 2]
    """

    def __init__(self, codes: np.ndarray, n_groups: int, rng: np.random.Generator):
        perm = rng.permutation(codes.size)
        keep = perm[codes[perm] >= 0]
        self._order = keep[np.argsort(codes[keep], kind="stable")]
        sizes = np.bincount(codes[keep], minlength=n_groups)
        self._end = np.cumsum(sizes)
        self._next, self.sizes = self._end - sizes, sizes

    @property
    def remaining(self) -> np.ndarray:
        """Rows not yet taken, per group."""
        return self._end - self._next

    def take(self, group: int, n: int = 1) -> np.ndarray:
        """Take up to ``n`` random rows of ``group`` (fewer when it runs out)."""
        start = self._next[group]
        stop = min(start + n, self._end[group])
        self._next[group] = stop
        return self._order[start:stop]
