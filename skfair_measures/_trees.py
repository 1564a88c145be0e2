"""Measures made of measures: a composite aggregates several, a constraint bounds a performance by a fairness measure.

Both read every part from the same counts (one pass), and own their parts' inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._inputs import _resolve_inputs
from ._protocol import Boxes, Measure, PerGroup, _Source
from ._undefined import _joined_reasons, _union_groups
from .results import MeasureResult

__all__ = ["CompositeMeasure", "ConstraintMeasure"]


#: The aggregates named by a string: numpy's reductions over the first axis (the parts).
_AGGREGATES = ("mean", "max", "min")


def _common(values: Sequence[Any]) -> Any:
    first = values[0]
    return first if all(v == first for v in values) else None


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
        self.ideal = _common([m.ideal for m in self.measures])
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
        if self.minimize:
            bad = self.performance.range[1] + deviation
        else:
            bad = self.performance.range[0] - deviation
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
