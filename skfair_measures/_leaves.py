"""Leaf measures: a base metric per group compared by an operation, or a plain performance metric."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ._inputs import MeasureInputs, Undefined, _checked_inputs
from ._protocol import Boxes, Measure, PerGroup, _Source, qualified_key
from ._undefined import UndefinedGroupWarning, _operate, _undefined_reason, _warn_undefined
from .base import BaseMetric, get_base
from .operations import Operation, absdiff, get_operation
from .results import MeasureResult

__all__ = ["FairnessMeasure", "PerformanceMeasure"]

#: The inputs a leaf's constructor takes, beside what it computes.
_INPUTS = ("pos_label", "threshold", "undefined", "groups")
#: A performance measure's one "group": all samples.
_ALL_SAMPLES, _UNDEFINED_ALL = pd.Index(["all samples"]), np.array([True])


class _OneBase(Measure):
    """A leaf: one base metric, and its own inputs (the threshold decides what a scorer asks for)."""

    base: BaseMetric

    def _set_inputs(self, inputs: MeasureInputs) -> None:
        response = "predict_proba" if inputs.threshold is not None else self.base.response_method
        self._inputs = dataclasses.replace(inputs, response_method=response)

    def _own_bases(self) -> tuple[BaseMetric, ...]:
        return (self.base,)

    @property
    def base_label(self) -> str:
        return self.base.name

    def _result(self, source: _Source, vals: np.ndarray, overall: Any, value: Any, **extra: Any) -> MeasureResult:
        def by_group() -> pd.Series:  # built when read
            return pd.Series(vals, index=source.groups, name=self.base.name)

        return MeasureResult(self.key, float(value), by_group, source.counts, overall, measure=self, **extra)


class FairnessMeasure(_OneBase):
    """A base metric computed per group, compared across groups by an operation.

    Parameters
    ----------
    base : str, BaseMetric or callable
        What to compute per group: a name (``"tpr"``, ``"fpr"``, ``"acc"``,
        ``"mse"``, ...), a :class:`~skfair_measures.base.BaseMetric`, or any
        scikit-learn metric function or scorer (evaluated per group).
    operation : str, Operation or callable, default="absdiff"
        How groups are compared: ``"absdiff"``, ``"diff"``, ``"ratio"``,
        ``"diff_to_reference"``, ``"ratio_to_reference"``, ``"diff_to_overall"``,
        ``"ratio_to_overall"``, ``"mean_pairwise_absdiff"``, or a function of the
        per-group values (a Series indexed by group).
    key : str, optional
        Identifier; defaults to ``"fairness.<base>"``, qualified by a non-default
        operation, reference or threshold (see :func:`qualified_key`).
    reference : object, optional
        Reference group for the ``*_to_reference`` operations.
    pos_label : object, optional
        The positive class; needed when labels are not {0, 1} or {-1, 1}.
    threshold : float, optional
        Treat ``y_pred`` as probabilities of the positive class and predict
        positive when ``y_pred >= threshold``.
    undefined : {"propagate", "drop", "raise"}, default="propagate"
        What an undefined group rate (zero denominator) does: make the measure
        NaN (with a warning naming the group), drop the group (with a warning),
        or raise.
    groups : array-like, optional
        All groups to expect (e.g. when scoring cross-validation folds).

    Examples
    --------
    >>> m = FairnessMeasure("tpr")
    >>> y_true = [1, 1, 1, 1, 0, 0]
    >>> y_pred = [1, 1, 1, 0, 0, 1]
    >>> sex = ["F", "F", "M", "M", "F", "M"]
    >>> m(y_true, y_pred, sensitive_features=sex)
    0.5
    >>> m.groupwise(y_true, y_pred, sensitive_features=sex).to_dict()
    {'F': 1.0, 'M': 0.5}
    """

    def __init__(
        self,
        base: str | BaseMetric | Callable[..., float],
        operation: str | Operation | Callable[..., float] = absdiff,
        *,
        key: str | None = None,
        description: str | None = None,
        reference: Any = None,
        pos_label: Any = None,
        threshold: float | None = None,
        undefined: Undefined = "propagate",
        groups: Any = None,
    ) -> None:
        self.base = get_base(base)
        self.operation = get_operation(operation, reference=reference)
        op = self.operation
        self.key = key or qualified_key(
            f"fairness.{self.base.name}",
            operation=None if op is absdiff else op.name,
            reference=op.reference,
            threshold=threshold,
        )
        self._set_inputs(_checked_inputs(MeasureInputs("predict", threshold, pos_label, groups, undefined)))
        self.minimize = op.minimize
        self.ideal = op.ideal
        self.range = tuple(op.range_of(tuple(self.base.range)))
        self.description = description or f"{self.base.description}: {op.description}"

    @property
    def reference(self) -> Any:
        """The reference group of a ``*_to_reference`` operation, else None."""
        return self.operation.reference

    @property
    def operation_label(self) -> str:
        return self.operation.name

    def from_group_values(self, values: PerGroup, *, groups: pd.Index, overall: PerGroup | None = None) -> np.ndarray:
        ov = None if overall is None else overall.get(self.base.name)
        return _operate(self.operation, values[self.base.name], groups, ov, self.undefined)

    def bounds_from_group_values(
        self, lower: PerGroup, upper: PerGroup, *, groups: pd.Index, overall: Boxes | None = None
    ) -> tuple[float, float]:
        ov = None if overall is None else overall.get(self.base.name)
        return self.operation.bounds(lower[self.base.name], upper[self.base.name], groups=groups, overall=ov)

    def _evaluate(self, source: _Source) -> MeasureResult:
        vals, overall = source.values(self.base, self.inputs, self.key)
        groups, bad = source.groups, np.isnan(vals)
        weightless = source.weightless() if bad.any() else None
        if bad.any():
            _warn_undefined(self.key, self.base, groups, bad, self.undefined, weightless)
        value = _operate(self.operation, vals, groups, overall, self.undefined)
        why = self.operation.undefined_reason(vals, groups=groups, metric=self.base.name) if np.isnan(value) else None
        if why is not None and not bad.any():
            warnings.warn(f"{self.key}: {why}.", UndefinedGroupWarning, stacklevel=4)
        reason = (why or _undefined_reason(self.base, groups, bad, weightless)) if np.isnan(value) else None
        undefined = [groups[i] for i in np.flatnonzero(bad)]
        return self._result(source, vals, overall, value, undefined_groups=undefined, reason=reason)

    def clone(self, **overrides: Any) -> FairnessMeasure:
        """A copy with some parameters replaced (as ``msr(key, **overrides)``).

        A new operation, reference or base gives a new default key.
        """
        params = {name: getattr(self, name) for name in ("base", "operation", "key", *_INPUTS)} | {"description": None}
        changed = set(overrides)
        if {"operation", "reference"} & changed:
            params["operation"] = overrides.pop("operation", self.operation.name)
            params["reference"] = overrides.pop("reference", self.reference)
        if {"base", "operation", "reference", "threshold"} & changed and "key" not in changed:
            params["key"] = None
        params.update(overrides)
        return FairnessMeasure(**params)

    def against(self, reference: Any) -> FairnessMeasure:
        """The signed comparison with ``reference`` in the operation's family (a new key).

        Examples
        --------
        >>> from skfair_measures import msr
        >>> msr("fairness.acc").against("M").key
        'fairness.acc(operation=diff_to_reference, reference=M)'
        """
        return self.clone(operation=self.operation.against(reference), reference=reference)


class PerformanceMeasure(_OneBase):
    """A plain performance measure on all samples, e.g. ``classif.acc``.

    ``sensitive_features`` is optional; when given, :meth:`groupwise` shows the
    metric in each group.

    Examples
    --------
    >>> PerformanceMeasure("acc")([1, 0, 1, 1], [1, 0, 0, 1])
    0.75
    """

    def __init__(
        self,
        base: str | BaseMetric | Callable[..., float],
        *,
        key: str | None = None,
        pos_label: Any = None,
        threshold: float | None = None,
        undefined: Undefined = "propagate",
        groups: Any = None,
    ) -> None:
        self.base = get_base(base)
        prefix = "regr" if self.base.statistic == "errors" else "classif"
        self.key = key or qualified_key(f"{prefix}.{self.base.name}", threshold=threshold)
        self.description = self.base.description
        self.minimize = self.base.minimize
        self.range = tuple(self.base.range)
        inputs = MeasureInputs("predict", threshold, pos_label, groups, undefined, needs_sensitive=False)
        self._set_inputs(_checked_inputs(inputs))

    @property
    def operation_label(self) -> str:
        return "overall"

    def from_group_values(self, values: PerGroup, *, groups: pd.Index, overall: PerGroup | None = None) -> np.ndarray:
        if overall is None:
            raise ValueError(f"{self.key} needs the overall value (overall=...).")
        return np.asarray(overall[self.base.name])

    def bounds_from_group_values(
        self, lower: PerGroup, upper: PerGroup, *, groups: pd.Index, overall: Boxes | None = None
    ) -> tuple[float, float]:
        if overall is None:
            raise ValueError(f"{self.key} needs the box of the overall value (overall=...).")
        lo, hi = overall[self.base.name]
        return (float(lo), float(hi))

    def _evaluate(self, source: _Source) -> MeasureResult:
        vals, overall = source.values(self.base, self.inputs, self.key)
        if not np.isnan(overall):
            return self._result(source, vals, overall, overall)
        weightless = np.array([bool(source.weightless().any()) and float(source.counts().sum()) == 0])
        _warn_undefined(self.key, self.base, _ALL_SAMPLES, _UNDEFINED_ALL, "propagate", weightless)
        reason = _undefined_reason(self.base, _ALL_SAMPLES, _UNDEFINED_ALL, weightless)
        return self._result(source, vals, overall, overall, reason=reason)
