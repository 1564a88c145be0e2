"""What a measure needs from the data: one inputs record for a whole measure tree.

A leaf holds its own :class:`MeasureInputs`; a composite or constraint resolves one
record from its leaves when it is built, refusing leaves that disagree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ._labels import check_labels
from ._small_groups import check_small_groups

if TYPE_CHECKING:  # pragma: no cover
    from ._protocol import MeasureBase

__all__ = ["MeasureInputs", "Undefined"]

Undefined = Literal["propagate", "drop", "raise"]
_UNDEFINED = ("propagate", "drop", "raise")


@dataclass(frozen=True, eq=False)
class MeasureInputs:
    """What a measure needs from the data: one record for a whole measure tree.

    Attributes
    ----------
    response_method : {"predict", "predict_proba"}
        What a scorer asks the estimator for.
    threshold : float or None
        If set, ``y_pred`` holds probabilities of the positive class, and the
        prediction is ``y_pred >= threshold``.
    pos_label : object
        The positive class (None: 1 for {0, 1} or {-1, 1} labels).
    groups : pandas.Index or None
        All groups to expect; an absent group is undefined rather than silently
        left out of the comparison.
    undefined : {"propagate", "drop", "raise"}
        What an undefined group rate does to the measure.
    needs_sensitive : bool
        Whether the measure compares groups (needs ``sensitive_features``).
    min_group_size : int or None
        Groups with fewer rows are left out (with a warning naming them), or
        pooled into one group "other" (``small_groups="merge"``).
    small_groups : {"drop", "merge"}
        What ``min_group_size`` does to the small groups.
    labels : pandas.Index or None
        The classes of a multiclass measure (scikit-learn's ``labels=``), so that
        every cross-validation fold counts the same K classes; None: the classes
        seen in y_true and y_pred together.

    Examples
    --------
    >>> from skfair_measures import msr
    >>> msr("fairness.eod", threshold=0.3).inputs.response_method
    'predict_proba'
    """

    response_method: str = "predict"
    threshold: float | None = None
    pos_label: Any = None
    groups: pd.Index | None = None
    undefined: Undefined = "propagate"
    needs_sensitive: bool = True
    min_group_size: int | None = None
    small_groups: Literal["drop", "merge"] = "drop"
    labels: pd.Index | None = None

    def replace(self, **changes: Any) -> MeasureInputs:
        """A copy with some fields changed (validated)."""
        return _checked_inputs(dataclasses.replace(self, **changes))


def _checked_inputs(inputs: MeasureInputs) -> MeasureInputs:
    if inputs.undefined not in _UNDEFINED:
        raise ValueError(f"undefined={inputs.undefined!r}; pass 'propagate', 'drop' or 'raise'.")
    t = inputs.threshold
    if t is not None and not (isinstance(t, int | float | np.number) and 0.0 <= float(t) <= 1.0):
        raise ValueError(f"threshold={t!r}; pass a probability in [0, 1] (or None for predicted labels).")
    check_small_groups(inputs.min_group_size, inputs.small_groups)
    groups = None if inputs.groups is None else pd.Index(inputs.groups)
    return dataclasses.replace(inputs, groups=groups, labels=check_labels(inputs.labels))


_RESOLVED_FIELDS = ("threshold", "pos_label", "groups", "undefined", "min_group_size", "small_groups", "labels")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, pd.Index) or isinstance(b, pd.Index):
        return isinstance(a, pd.Index) and isinstance(b, pd.Index) and a.equals(b)
    return a == b


def _resolve_inputs(key: str, leaves: Sequence[MeasureBase]) -> MeasureInputs:
    """One inputs record for a tree; leaves that disagree are refused, naming them."""
    records = [leaf.inputs for leaf in leaves]
    values: dict[str, Any] = {}
    for name in _RESOLVED_FIELDS:
        seen = [(leaf.key, getattr(r, name)) for leaf, r in zip(leaves, records, strict=True)]
        given = [(k, v) for k, v in seen if v is not None] if name in ("groups", "labels") else seen
        first = given[0][1] if given else None
        if any(not _same(v, first) for _, v in given):
            raise ValueError(
                f"the parts of {key} disagree on {name}: "
                + ", ".join(f"{k}: {v!r}" for k, v in given)
                + f". Give them the same {name}=, or set it on the whole measure with .with_inputs({name}=...)."
            )
        values[name] = first
    response = "predict_proba" if any(r.response_method == "predict_proba" for r in records) else "predict"
    return MeasureInputs(response_method=response, needs_sensitive=any(r.needs_sensitive for r in records), **values)
