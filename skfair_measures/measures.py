"""Measures: a base metric and an operation, plus composites and constraints.

A :class:`FairnessMeasure` computes its base metric in every group and reduces the
group values with its operation (mlr3fairness' ``MeasureFairness``). A
:class:`CompositeMeasure` aggregates several measures computed on the same counts,
a :class:`ConstraintMeasure` is a performance measure subject to a fairness bound,
and a :class:`PerformanceMeasure` is a plain (overall) metric such as accuracy.

This module defines the four measure kinds and gathers the public names of the modules
they stand on:

- ``_inputs``: :class:`MeasureInputs`, the one resolved inputs record of a measure tree;
- ``_protocol``: :class:`MeasureBase` and :class:`Measure`, the protocol every measure kind
  follows (``unaware``'s too), and the one evaluation path (rows or statistics);
- ``_undefined``: :class:`UndefinedGroupWarning`, reasons and the ``undefined=`` policy;
- ``_together``: several measures on one sample, validated once per need.

Leaves (:class:`FairnessMeasure`, :class:`PerformanceMeasure`) compare a base metric per
group by an operation, or read it on all samples; trees (:class:`CompositeMeasure`,
:class:`ConstraintMeasure`) are measures made of measures: both read every part from the
same counts (one pass), and own their parts' inputs.

Other modules read measures through the protocol only; they never inspect a
measure's attributes to learn what kind it is. The measure core imports nothing
above it: scorers, bootstrap intervals and posteriors take a measure as an argument
(``sfm.make_scorers``, ``sfm.bootstrap(m, ...)``, ``bayes.posterior(m, ...)``), and the
registry (``msr``) turns keys into measures.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._inputs import MeasureInputs, Undefined, _checked_inputs, _resolve_inputs
from ._protocol import Boxes, Measure, MeasureBase, PerGroup, _Source, qualified_key
from ._undefined import (
    UndefinedGroupWarning,
    _joined_reasons,
    _operate,
    _undefined_reason,
    _union_groups,
    _warn_undefined,
)
from .base import BaseMetric, get_base
from .operations import Operation, absdiff, get_operation
from .results import MeasureResult

__all__ = [
    "CompositeMeasure",
    "ConstraintMeasure",
    "FairnessMeasure",
    "Measure",
    "MeasureBase",
    "MeasureInputs",
    "MeasureResult",
    "PerformanceMeasure",
    "UndefinedGroupWarning",
    "qualified_key",
]

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
        self.operation = op = get_operation(operation, reference=reference)
        named = None if op is absdiff else op.name  # the key names a non-default operation
        stem = f"fairness.{self.base.name}"
        self.key = key or qualified_key(stem, operation=named, reference=op.reference, threshold=threshold)
        self._set_inputs(_checked_inputs(MeasureInputs("predict", threshold, pos_label, groups, undefined)))
        self.minimize, self.ideal, self.range = op.minimize, op.ideal, op.range_of(self.base.range)
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
        self.description, self.minimize, self.range = self.base.description, self.base.minimize, self.base.range
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


#: The aggregates named by a string: numpy's reductions over the first axis (the parts).
_AGGREGATES = ("mean", "max", "min")


def _combined(
    measure: Measure, source: _Source, value: float, parts: list, by_group: Any, overall: Any, defined_by: list
) -> MeasureResult:
    """The result of a measure made of ``parts``: its undefined groups are those of ``defined_by``."""
    reason = _joined_reasons(parts) if np.isnan(value) else None
    undefined = _union_groups(defined_by)
    return MeasureResult(
        measure.key, value, by_group, source.counts, overall, measure=measure, undefined_groups=undefined, reason=reason
    )


class CompositeMeasure(Measure):
    """Aggregate of several measures computed on the same data (one pass of counts).

    The composite owns its parts' inputs: parts that disagree on threshold,
    pos_label, declared groups or the undefined policy are refused;
    :meth:`with_inputs` sets them on every part.

    Parameters
    ----------
    measures : sequence of Measure
        The component measures; all must share the same direction.
    aggregate : {"mean", "max", "min"} or callable, default="mean"
        Combines the component values (a callable receives an array whose first
        axis runs over the components; a module-level function pickles).
    key : str, optional
        Identifier; defaults to the component keys joined by ``"+"``.
    description : str, optional

    Examples
    --------
    >>> from skfair_measures import msr
    >>> eod = CompositeMeasure([msr("fairness.tpr"), msr("fairness.fpr")], key="my.eod")
    >>> eod([1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 0], sensitive_features=list("aaabbb"))
    0.5
    """

    def __init__(
        self,
        measures: Sequence[Measure],
        aggregate: str | Callable[..., Any] = "mean",
        *,
        key: str | None = None,
        description: str | None = None,
    ) -> None:
        self.measures = tuple(measures)
        if not self.measures:
            raise ValueError("measures is empty; pass at least one measure.")
        directions = {m.minimize for m in self.measures}
        if len(directions) != 1:
            raise ValueError(
                "measures mix directions (minimize and maximize); a composite needs "
                f"measures of one direction, got {[(m.key, m.minimize) for m in self.measures]}."
            )
        self.minimize = directions.pop()
        ideals = {m.ideal for m in self.measures}  # the parts' common ideal, if they share one
        self.ideal = ideals.pop() if len(ideals) == 1 else None
        if isinstance(aggregate, str) and aggregate not in _AGGREGATES:
            raise ValueError(f"aggregate={aggregate!r}; pass 'mean', 'max', 'min' or a callable.")
        self.aggregate = aggregate
        self.aggregate_name = aggregate if isinstance(aggregate, str) else getattr(aggregate, "__name__", "custom")
        self.key = key or "+".join(m.key for m in self.measures)
        self.description = description or (f"{self.aggregate_name} of " + ", ".join(m.key for m in self.measures))
        self.range = (min(m.range[0] for m in self.measures), max(m.range[1] for m in self.measures))
        self._inputs = _resolve_inputs(self.key, self.leaves())

    @property
    def children(self) -> tuple[Measure, ...]:
        return self.measures

    @property
    def operation_label(self) -> str:
        ops = sorted({m.operation_label for m in self.measures})
        return f"{self.aggregate_name}({', '.join(ops)})"

    def _agg(self, stacked: np.ndarray) -> np.ndarray:
        if isinstance(self.aggregate, str):
            return np.asarray(getattr(np, self.aggregate)(stacked, axis=0))
        return np.asarray(self.aggregate(stacked))

    def from_group_values(self, values: PerGroup, *, groups: pd.Index, overall: PerGroup | None = None) -> np.ndarray:
        parts = [np.asarray(m.from_group_values(values, groups=groups, overall=overall)) for m in self.measures]
        return self._agg(np.stack(parts))

    def bounds_from_group_values(
        self, lower: PerGroup, upper: PerGroup, *, groups: pd.Index, overall: Boxes | None = None
    ) -> tuple[float, float]:
        # mean, max and min never decrease when one argument grows: the bounds of the parts bound the whole
        # (a superset when parts share a base: each part takes its own worst point of the box)
        if not isinstance(self.aggregate, str):
            return super().bounds_from_group_values(lower, upper, groups=groups, overall=overall)
        parts = np.array(
            [m.bounds_from_group_values(lower, upper, groups=groups, overall=overall) for m in self.measures]
        )
        return (float(self._agg(parts[:, 0])), float(self._agg(parts[:, 1])))

    def _evaluate(self, source: _Source) -> MeasureResult:
        results = [m._evaluate(source) for m in self.measures]
        value = float(self._agg(np.array([r.value for r in results])))

        def by_group() -> pd.DataFrame | None:
            parts = {r.key: r.by_group for r in results}
            return pd.concat(parts, axis=1) if all(isinstance(p, pd.Series) for p in parts.values()) else None

        def overall() -> pd.Series:
            return pd.Series({r.key: r.overall for r in results}, dtype=float)

        return _combined(self, source, value, results, by_group, overall, results)


class ConstraintMeasure(Measure):
    """A performance measure subject to a fairness bound (mlr3fairness semantics).

    If the fairness measure is within ``epsilon`` of its ideal value (0 for a
    difference, 1 for a ratio), the value is the performance; otherwise it is the
    worst performance minus the deviation (maximised performance), or the worst
    performance plus the deviation (minimised performance). A model that violates
    the bound therefore always ranks below one that meets it.

    Parameters
    ----------
    performance : Measure
        E.g. ``msr("classif.acc")``.
    fairness : Measure
        A fairness measure with an ideal value, e.g. ``msr("fairness.eod")``.
    epsilon : float, default=0.01
        Allowed deviation from perfect fairness.
    key : str, optional

    Examples
    --------
    >>> from skfair_measures import msr
    >>> m = ConstraintMeasure(msr("classif.acc"), msr("fairness.tpr"), epsilon=0.6)
    >>> m([1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 1], sensitive_features=list("FFMMFM"))
    0.6666666666666666
    """

    def __init__(
        self,
        performance: Measure,
        fairness: Measure,
        epsilon: float = 0.01,
        *,
        key: str | None = None,
        description: str | None = None,
    ) -> None:
        if fairness.ideal is None:
            raise ValueError(
                f"fairness={fairness.key} has no ideal value, so 'within epsilon of fair' has no "
                "meaning; use a difference (ideal 0) or a ratio (ideal 1) measure."
            )
        if performance.minimize is None:
            raise ValueError(f"performance={performance.key} has no direction.")
        if not np.isfinite(epsilon) or epsilon < 0:
            raise ValueError(f"epsilon={epsilon!r} must be a finite number >= 0.")
        self.performance = performance
        self.fairness = fairness
        self.epsilon = float(epsilon)
        self.key = key or f"{fairness.key}_{performance.key.split('.')[-1]}<={epsilon:g}"
        self.description = description or (f"{performance.key} subject to {fairness.key} within {epsilon:g} of fair")
        self.minimize = performance.minimize
        self.range = (-np.inf, np.inf)
        self._inputs = _resolve_inputs(self.key, self.leaves())

    @property
    def children(self) -> tuple[Measure, ...]:
        return (self.performance, self.fairness)

    @property
    def operation_label(self) -> str:
        return f"constraint(epsilon={self.epsilon:g})"

    def _combine(self, perf: np.ndarray, fair: np.ndarray) -> np.ndarray:
        deviation = np.abs(fair - self.fairness.ideal)
        bad = self.performance.range[1] + deviation if self.minimize else self.performance.range[0] - deviation
        out = np.where(deviation <= self.epsilon, perf, bad)
        return np.where(np.isnan(fair) | np.isnan(perf), np.nan, out)

    def from_group_values(self, values: PerGroup, *, groups: pd.Index, overall: PerGroup | None = None) -> np.ndarray:
        perf = self.performance.from_group_values(values, groups=groups, overall=overall)
        fair = self.fairness.from_group_values(values, groups=groups, overall=overall)
        return self._combine(np.asarray(perf), np.asarray(fair))

    def _evaluate(self, source: _Source) -> MeasureResult:
        perf = self.performance._evaluate(source)
        fair = self.fairness._evaluate(source)
        value = float(self._combine(np.asarray(perf.value), np.asarray(fair.value)))

        def overall() -> pd.Series:
            return pd.Series({perf.key: perf.value, fair.key: fair.value}, dtype=float)

        return _combined(self, source, value, [perf, fair], lambda: fair.by_group, overall, [fair])
