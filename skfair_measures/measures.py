"""Measures: a base metric and an operation, plus composites and constraints.

A :class:`FairnessMeasure` computes its base metric in every group and reduces the
group values with its operation (mlr3fairness' ``MeasureFairness``). A
:class:`CompositeMeasure` aggregates several measures computed on the same counts,
a :class:`ConstraintMeasure` is a performance measure subject to a fairness bound,
and a :class:`PerformanceMeasure` is a plain (overall) metric such as accuracy.

Every measure is callable as ``m(y_true, y_pred, *, sensitive_features=...)`` and
returns a Python float; :meth:`Measure.evaluate` returns the value with the
per-group values and group counts; :meth:`Measure.as_scorer` gives a scikit-learn
scorer. Measures also evaluate vectorised on stacked statistics
(:meth:`Measure.from_group_values`), which is how bootstrap replicates and
posterior draws reuse the very same operations.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from sklearn.exceptions import UndefinedMetricWarning

from ._stats import ConfusionStats, ErrorStats, GroupedSample, binarize_labels, check_inputs, check_scores
from .base import BaseMetric, get_base
from .operations import Operation, absdiff, get_operation

if TYPE_CHECKING:  # pragma: no cover
    from .scoring import FairnessScorer

__all__ = [
    "CompositeMeasure",
    "ConstraintMeasure",
    "FairnessMeasure",
    "Measure",
    "MeasureResult",
    "PerformanceMeasure",
    "UndefinedGroupWarning",
    "evaluate_measures",
]

Undefined = Literal["propagate", "drop", "raise"]


class UndefinedGroupWarning(UndefinedMetricWarning):
    """A group's rate is undefined (zero denominator); the measure is NaN.

    Subclasses scikit-learn's ``UndefinedMetricWarning``, so existing warning
    filters keep working.
    """


class MeasureResult:
    """The value of a measure with its per-group values and group counts.

    The pandas objects are built on first access, so evaluating many measures stays
    cheap when only the values are read.

    Attributes
    ----------
    key : str
        Measure key, e.g. ``"fairness.tpr"``.
    value : float
        The measure's value (NaN if undefined).
    by_group : pandas.Series or pandas.DataFrame
        Base-metric value per group (a DataFrame with one column per component
        measure for composites).
    counts : pandas.Series
        Number of samples (weighted if weights were given) per group.
    overall : float or pandas.Series or None
        Base metric on all samples pooled.
    minimize : bool or None
        Whether smaller values are fairer/better (None for signed measures).
    undefined_groups : list
        Groups whose base metric was undefined (zero denominator).
    measure : Measure or None
        The measure that produced the result (its configuration: base, operation, ...).
    """

    def __init__(
        self,
        key: str,
        value: float,
        by_group: pd.Series | pd.DataFrame | Callable[[], Any] | None = None,
        counts: pd.Series | Callable[[], pd.Series] | None = None,
        overall: float | pd.Series | Callable[[], Any] | None = None,
        minimize: bool | None = True,
        undefined_groups: Sequence[Any] = (),
        measure: Measure | None = None,
    ) -> None:
        self.key = key
        self.measure = measure
        self.value = value
        self._lazy = {"by_group": by_group, "counts": counts, "overall": overall}
        self.minimize = minimize
        self.undefined_groups = list(undefined_groups)

    def _get(self, name: str) -> Any:
        obj = self._lazy[name]
        if callable(obj):
            obj = self._lazy[name] = obj()
        return obj

    @property
    def by_group(self) -> pd.Series | pd.DataFrame | None:
        return self._get("by_group")

    @property
    def counts(self) -> pd.Series | None:
        return self._get("counts")

    @property
    def overall(self) -> float | pd.Series | None:
        return self._get("overall")

    def __repr__(self) -> str:
        return f"MeasureResult(key={self.key!r}, value={self.value!r})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dictionary (group labels as strings)."""

        def conv(obj: Any) -> Any:
            if isinstance(obj, pd.Series):
                return {str(k): float(v) for k, v in obj.items()}
            if isinstance(obj, pd.DataFrame):
                return {str(c): conv(obj[c]) for c in obj.columns}
            return obj

        return {
            "key": self.key,
            "value": self.value,
            "by_group": conv(self.by_group),
            "counts": conv(self.counts),
            "overall": conv(self.overall),
            "minimize": self.minimize,
        }


def _warn_undefined(key: str, base: BaseMetric, groups: pd.Index, bad: np.ndarray, undefined: str) -> None:
    names = [groups[i] for i in np.flatnonzero(bad)]
    reason = f" ({base.undefined_when})" if base.undefined_when else ""
    if undefined == "raise":
        raise ValueError(
            f"{base.name} is undefined for group(s) {names}{reason}; {key} cannot be "
            "computed. Merge small groups, collect more data, or pass undefined='drop'."
        )
    consequence = (
        "those groups are dropped from the comparison"
        if undefined == "drop"
        else f"{key} is NaN; merge groups or pass undefined='drop'"
    )
    warnings.warn(
        f"{base.name} is undefined for group(s) {names}{reason}; {consequence}.",
        UndefinedGroupWarning,
        stacklevel=4,
    )


class Measure:
    """Base class of all measures.

    Attributes
    ----------
    key : str
        Identifier, e.g. ``"fairness.tpr"``; also the scorer and MLflow metric name.
    description : str
        One-line description.
    minimize : bool or None
        True if smaller is better/fairer, False if larger is, None for signed values.
    range : tuple of float
        Possible values.
    """

    key: str
    description: str
    minimize: bool | None
    range: tuple[float, float]
    requires_sensitive: bool = True
    threshold: float | None = None
    pos_label: Any = None

    # -- public API -------------------------------------------------------------------
    def __call__(
        self,
        y_true: Any,
        y_pred: Any,
        *,
        sensitive_features: Any = None,
        sample_weight: Any = None,
    ) -> float:
        """Compute the measure.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True labels (values for regression).
        y_pred : array-like of shape (n_samples,)
            Predicted labels; predicted probabilities of the positive class if the
            measure was built with ``threshold=``.
        sensitive_features : array-like of shape (n_samples,) or DataFrame
            Group of each sample; several columns give intersectional groups.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        return self.evaluate(y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight).value

    def evaluate(
        self,
        y_true: Any,
        y_pred: Any,
        *,
        sensitive_features: Any = None,
        sample_weight: Any = None,
    ) -> MeasureResult:
        """Compute the measure with its per-group values and group counts."""
        sample = _check_sample(self, y_true, y_pred, sensitive_features, sample_weight)
        return self._evaluate(sample)

    def groupwise(
        self,
        y_true: Any,
        y_pred: Any,
        *,
        sensitive_features: Any = None,
        sample_weight: Any = None,
    ) -> pd.Series | pd.DataFrame:
        """Base-metric value in each group (mlr3fairness' ``groupwise_metrics``)."""
        return self.evaluate(
            y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight
        ).by_group

    @property
    def greater_is_better(self) -> bool:
        """Scorer direction: the opposite of ``minimize`` (signed measures: True)."""
        return self.minimize is False or self.minimize is None

    @property
    def response_method(self) -> str:
        """What a scorer asks the estimator for: ``"predict"`` or ``"predict_proba"``."""
        if self.threshold is not None:
            return "predict_proba"
        methods = {b.response_method for b in self.bases}
        return "predict_proba" if "predict_proba" in methods else "predict"

    def as_scorer(self, sensitive: str | Sequence[str] | None = None, *, groups: Any = None) -> FairnessScorer:
        """A scikit-learn scorer for this measure.

        Parameters
        ----------
        sensitive : str or list of str, optional
            Column(s) of ``X`` holding the sensitive attribute (column mode). If
            None, the scorer requests ``sensitive_features`` through scikit-learn's
            metadata routing; enable it with
            ``sklearn.set_config(enable_metadata_routing=True)`` and pass
            ``sensitive_features=`` to ``fit`` (GridSearchCV) or in ``params=``
            (cross_validate).
        groups : array-like, optional
            All groups to expect, so that a cross-validation fold missing a group
            shows it as undefined rather than silently comparing fewer groups.

        Returns
        -------
        FairnessScorer
            Carries ``greater_is_better`` from ``minimize`` (minimised measures
            are negated, like scikit-learn's ``neg_*`` scorers).
        """
        from .scoring import FairnessScorer

        return FairnessScorer(self, sensitive=sensitive, groups=groups)

    def bootstrap(
        self,
        y_true: Any,
        y_pred: Any,
        *,
        sensitive_features: Any = None,
        sample_weight: Any = None,
        n_boot: int = 1000,
        prob: float = 0.95,
        random_state: Any = None,
    ) -> Any:
        """Frequentist bootstrap distribution of the measure (resampling counts).

        See :func:`skfair_measures.bootstrap.bootstrap` for details.
        """
        from .bootstrap import bootstrap

        return bootstrap(
            self,
            y_true,
            y_pred,
            sensitive_features=sensitive_features,
            sample_weight=sample_weight,
            n_boot=n_boot,
            prob=prob,
            random_state=random_state,
        )

    def posterior(self, y_true: Any, y_score: Any, *, sensitive_features: Any, **kwargs: Any) -> Any:
        """Bayesian posterior of the measure (``method="bb"`` or ``"bc"``).

        See :func:`skfair_measures.bayes.posterior` for the arguments.
        """
        from .bayes import posterior

        return posterior(self, y_true, y_score, sensitive_features=sensitive_features, **kwargs)

    # -- vectorised core -------------------------------------------------------------
    @property
    def bases(self) -> tuple[BaseMetric, ...]:
        """The base metrics this measure needs, per group."""
        raise NotImplementedError  # pragma: no cover - abstract

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Evaluate on stacked per-group values ``{base name: array (..., n_groups)}``.

        NaN propagates; no warning is issued (the caller summarises draws).
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def from_stats(self, stats: ConfusionStats | ErrorStats) -> np.ndarray:
        """Evaluate on sufficient statistics with any leading axes.

        Examples
        --------
        >>> from skfair_measures import msr
        >>> from skfair_measures._stats import ConfusionStats
        >>> s = ConfusionStats.from_codes([0, 0, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1], pd.Index(["a", "b"]))
        >>> float(msr("fairness.tpr").from_stats(s))
        0.5
        """
        values, overall = {}, {}
        for b in self.bases:
            if not hasattr(b, "from_counts") and not hasattr(b, "from_sums"):
                raise TypeError(f"{self.key}: base {b.name!r} has no sufficient statistics.")
            f = b.from_counts if hasattr(b, "from_counts") else b.from_sums
            arr = stats.counts if hasattr(b, "from_counts") else stats.sums
            values[b.name] = f(arr)
            overall[b.name] = f(stats.overall)
        return self.from_group_values(values, groups=stats.groups, overall=overall)

    def _evaluate(self, sample: GroupedSample) -> MeasureResult:
        raise NotImplementedError  # pragma: no cover - abstract

    def _prepared(self, sample: GroupedSample) -> tuple[GroupedSample, Any]:
        """The sample this measure reads (thresholded if needed) and its pos_label."""
        if self.threshold is None:
            return sample, self.pos_label
        return _thresholded(sample, self.threshold, self.pos_label), None

    def __repr__(self) -> str:
        direction = {True: "minimize", False: "maximize", None: "signed"}[self.minimize]
        return f"<{type(self).__name__} {self.key}: {self.description} ({direction}, range {self.range})>"


def _thresholded(sample: GroupedSample, threshold: float, pos_label: Any) -> GroupedSample:
    key = ("threshold", threshold, pos_label)
    if key not in sample._cache:
        scores = check_scores(sample.y_pred, "y_pred (scores, since threshold= is set)")
        t, _, _ = binarize_labels(sample.y_true, sample.y_true, pos_label)
        pred = (scores >= threshold).astype(np.intp)
        sample._cache[key] = GroupedSample(t, pred, sample.group_codes, sample.groups, sample.sample_weight)
    return sample._cache[key]


def _check_sample(
    measure: Measure, y_true: Any, y_pred: Any, sensitive_features: Any, sample_weight: Any
) -> GroupedSample:
    if sensitive_features is None:
        if measure.requires_sensitive:
            raise ValueError(
                f"{measure.key} compares groups: pass sensitive_features= (the group of "
                "each sample). In a scorer, use as_scorer(sensitive='column') or enable "
                "metadata routing, see Measure.as_scorer."
            )
        n = len(y_true)
        sensitive_features = pd.Series(np.zeros(n, dtype=np.intp), name="all")
        sample = check_inputs(y_true, y_pred, sensitive_features, sample_weight, groups=pd.Index([0], name="all"))
        return sample
    return check_inputs(y_true, y_pred, sensitive_features, sample_weight, groups=getattr(measure, "groups", None))


def _operate(op: Operation, values: np.ndarray, groups: pd.Index, overall: Any, undefined: str) -> np.ndarray:
    """Apply ``op``; with ``undefined='drop'``, ignore groups that are NaN in a 1-D input."""
    if undefined == "drop" and values.ndim == 1:
        keep = ~np.isnan(values)
        if keep.sum() < 2 and not op.needs_overall:
            return np.nan
        values, groups = values[keep], groups[keep]
    return op(values, groups=groups, overall=overall)


class FairnessMeasure(Measure):
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
        Identifier; defaults to ``"fairness.<base>"``.
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
        self.key = key or f"fairness.{self.base.name}"
        self.pos_label = pos_label
        self.threshold = threshold
        if undefined not in ("propagate", "drop", "raise"):
            raise ValueError(f"undefined={undefined!r}; pass 'propagate', 'drop' or 'raise'.")
        self.undefined = undefined
        self.groups = None if groups is None else pd.Index(groups)
        op = self.operation
        self.minimize = op.minimize
        self.range = tuple(op.range_of(tuple(self.base.range)))
        self.description = description or f"{self.base.description}: {op.description}"

    @property
    def bases(self) -> tuple[BaseMetric, ...]:
        return (self.base,)

    @property
    def reference(self) -> Any:
        """The reference group of a ``*_to_reference`` operation, else None."""
        return self.operation.params.get("reference")

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        ov = None if overall is None else overall.get(self.base.name)
        return self.operation(values[self.base.name], groups=groups, overall=ov)

    def _evaluate(self, sample: GroupedSample) -> MeasureResult:
        data, pos = self._prepared(sample)
        vals, overall = self.base.group_values(data, pos)
        bad = np.isnan(vals)
        if bad.any():
            _warn_undefined(self.key, self.base, data.groups, bad, self.undefined)
        value = _operate(self.operation, vals, data.groups, overall, self.undefined)
        groups, name = data.groups, self.base.name
        return MeasureResult(
            key=self.key,
            value=float(value),
            by_group=lambda: pd.Series(vals, index=groups, name=name),
            counts=data.counts_per_group,
            overall=overall,
            minimize=self.minimize,
            measure=self,
            undefined_groups=[groups[i] for i in np.flatnonzero(bad)] if bad.any() else (),
        )

    def clone(self, **overrides: Any) -> FairnessMeasure:
        """A copy with some parameters replaced (as ``msr(key, **overrides)``)."""
        params = {
            "base": self.base,
            "operation": self.operation,
            "key": self.key,
            "description": None,
            "pos_label": self.pos_label,
            "threshold": self.threshold,
            "undefined": self.undefined,
            "groups": self.groups,
        }
        if "operation" in overrides or "reference" in overrides:
            params["operation"] = overrides.pop("operation", self.operation.name)
            params["reference"] = overrides.pop("reference", self.reference)
        if "base" in overrides and "key" not in overrides:
            params["key"] = None
        params.update(overrides)
        return FairnessMeasure(**params)


class PerformanceMeasure(Measure):
    """A plain performance measure on all samples, e.g. ``classif.acc``.

    ``sensitive_features`` is optional; when given, :meth:`groupwise` shows the
    metric in each group.

    Examples
    --------
    >>> PerformanceMeasure("acc")([1, 0, 1, 1], [1, 0, 0, 1])
    0.75
    """

    requires_sensitive = False

    def __init__(
        self,
        base: str | BaseMetric | Callable[..., float],
        *,
        key: str | None = None,
        pos_label: Any = None,
        threshold: float | None = None,
    ) -> None:
        self.base = get_base(base)
        prefix = "regr" if self.base.minimize and self.base.name in ("mse", "mae", "rmse") else "classif"
        self.key = key or f"{prefix}.{self.base.name}"
        self.description = self.base.description
        self.minimize = self.base.minimize
        self.range = tuple(self.base.range)
        self.pos_label = pos_label
        self.threshold = threshold
        self.groups = None

    @property
    def bases(self) -> tuple[BaseMetric, ...]:
        return (self.base,)

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        if overall is None:
            raise ValueError(f"{self.key} needs the overall value (overall=...).")
        return np.asarray(overall[self.base.name])

    def _evaluate(self, sample: GroupedSample) -> MeasureResult:
        data, pos = self._prepared(sample)
        vals, overall = self.base.group_values(data, pos)
        if np.isnan(overall):
            _warn_undefined(self.key, self.base, pd.Index(["all samples"]), np.array([True]), "propagate")
        groups, name = data.groups, self.base.name
        return MeasureResult(
            key=self.key,
            value=float(overall),
            by_group=lambda: pd.Series(vals, index=groups, name=name),
            counts=data.counts_per_group,
            overall=overall,
            minimize=self.minimize,
            measure=self,
        )


_AGGREGATES: dict[str, Callable[..., np.ndarray]] = {
    "mean": lambda a: np.mean(a, axis=0),
    "max": lambda a: np.max(a, axis=0),
    "min": lambda a: np.min(a, axis=0),
}


class CompositeMeasure(Measure):
    """Aggregate of several measures computed on the same data (one pass of counts).

    Parameters
    ----------
    measures : sequence of Measure
        The component measures; all must share the same direction.
    aggregate : {"mean", "max", "min"} or callable, default="mean"
        Combines the component values (a callable receives an array whose first
        axis runs over the components).
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
        if isinstance(aggregate, str):
            if aggregate not in _AGGREGATES:
                raise ValueError(f"aggregate={aggregate!r}; pass 'mean', 'max', 'min' or a callable.")
            self.aggregate_name, self._agg = aggregate, _AGGREGATES[aggregate]
        else:
            self.aggregate_name = getattr(aggregate, "__name__", "custom")
            self._agg = lambda a: np.asarray(aggregate(a))
        self.key = key or "+".join(m.key for m in self.measures)
        self.description = description or (f"{self.aggregate_name} of " + ", ".join(m.key for m in self.measures))
        lows = [m.range[0] for m in self.measures]
        highs = [m.range[1] for m in self.measures]
        self.range = (min(lows), max(highs))
        self.threshold = None
        self.groups = None
        self.requires_sensitive = any(m.requires_sensitive for m in self.measures)

    @property
    def bases(self) -> tuple[BaseMetric, ...]:
        out: dict[str, BaseMetric] = {}
        for m in self.measures:
            for b in m.bases:
                out.setdefault(b.name, b)
        return tuple(out.values())

    @property
    def response_method(self) -> str:
        methods = {m.response_method for m in self.measures}
        return "predict_proba" if "predict_proba" in methods else "predict"

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        parts = [np.asarray(m.from_group_values(values, groups=groups, overall=overall)) for m in self.measures]
        return self._agg(np.stack(parts))

    def _evaluate(self, sample: GroupedSample) -> MeasureResult:
        results = [m._evaluate(sample) for m in self.measures]
        value = float(self._agg(np.array([r.value for r in results])))

        def by_group() -> pd.DataFrame | None:
            parts = {r.key: r.by_group for r in results}
            return pd.concat(parts, axis=1) if all(isinstance(p, pd.Series) for p in parts.values()) else None

        return MeasureResult(
            key=self.key,
            value=value,
            by_group=by_group,
            counts=lambda: results[0].counts,
            overall=lambda: pd.Series({r.key: r.overall for r in results}, dtype=float),
            minimize=self.minimize,
            measure=self,
            undefined_groups=sorted({g for r in results for g in r.undefined_groups}, key=str),
        )


class ConstraintMeasure(Measure):
    """A performance measure subject to a fairness bound (mlr3fairness semantics).

    If the fairness measure is within ``epsilon`` of its optimum (0 for a
    difference), the value is the performance; otherwise it is the worst
    performance minus the fairness value (maximised performance), or the worst
    performance plus the fairness value (minimised performance). A model that
    violates the bound therefore always ranks below one that meets it.

    Parameters
    ----------
    performance : Measure
        E.g. ``msr("classif.acc")``.
    fairness : Measure
        A minimised fairness measure, e.g. ``msr("fairness.eod")``.
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
        if fairness.minimize is not True:
            raise ValueError(
                f"fairness={fairness.key} is not a minimised measure; a constraint needs "
                "one whose optimum is its lower bound (e.g. an absolute difference)."
            )
        if performance.minimize is None:
            raise ValueError(f"performance={performance.key} has no direction.")
        if not np.isfinite(epsilon) or epsilon < 0:
            raise ValueError(f"epsilon={epsilon!r} must be a finite number >= 0.")
        self.performance = performance
        self.fairness = fairness
        self.epsilon = float(epsilon)
        self.key = key or f"{fairness.key}_{performance.key.split('.')[-1]}<={epsilon:g}"
        self.description = description or (f"{performance.key} subject to {fairness.key} <= {epsilon:g}")
        self.minimize = performance.minimize
        self.range = (-np.inf, np.inf)
        self.threshold = None
        self.groups = None

    @property
    def bases(self) -> tuple[BaseMetric, ...]:
        out: dict[str, BaseMetric] = {}
        for m in (self.performance, self.fairness):
            for b in m.bases:
                out.setdefault(b.name, b)
        return tuple(out.values())

    @property
    def response_method(self) -> str:
        methods = {self.performance.response_method, self.fairness.response_method}
        return "predict_proba" if "predict_proba" in methods else "predict"

    def _combine(self, perf: np.ndarray, fair: np.ndarray) -> np.ndarray:
        is_fair = np.abs(self.fairness.range[0] - fair) <= self.epsilon
        if self.minimize:
            bad = self.performance.range[1] + fair
        else:
            bad = self.performance.range[0] - fair
        out = np.where(is_fair, perf, bad)
        return np.where(np.isnan(fair) | np.isnan(perf), np.nan, out)

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        perf = self.performance.from_group_values(values, groups=groups, overall=overall)
        fair = self.fairness.from_group_values(values, groups=groups, overall=overall)
        return self._combine(np.asarray(perf), np.asarray(fair))

    def _evaluate(self, sample: GroupedSample) -> MeasureResult:
        perf = self.performance._evaluate(sample)
        fair = self.fairness._evaluate(sample)
        value = float(self._combine(np.asarray(perf.value), np.asarray(fair.value)))
        return MeasureResult(
            key=self.key,
            value=value,
            by_group=lambda: fair.by_group,
            counts=lambda: fair.counts,
            overall=lambda: pd.Series({perf.key: perf.value, fair.key: fair.value}, dtype=float),
            minimize=self.minimize,
            measure=self,
            undefined_groups=fair.undefined_groups,
        )


def evaluate_measures(
    measures: Sequence[Measure],
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any = None,
    sample_weight: Any = None,
) -> dict[str, MeasureResult]:
    """Evaluate several measures on one validated sample (one pass of counts).

    Examples
    --------
    >>> from skfair_measures import msr
    >>> res = evaluate_measures([msr("fairness.tpr"), msr("fairness.fpr")],
    ...                         [1, 1, 0, 0], [1, 0, 0, 1], sensitive_features=list("abab"))
    >>> {k: r.value for k, r in res.items()}
    {'fairness.tpr': 1.0, 'fairness.fpr': 1.0}
    """
    measures = list(measures)
    if not measures:
        return {}
    needs = any(m.requires_sensitive for m in measures)
    lead = measures[0] if needs is measures[0].requires_sensitive else next(m for m in measures if m.requires_sensitive)
    sample = _check_sample(lead, y_true, y_pred, sensitive_features, sample_weight)
    return {m.key: m._evaluate(sample) for m in measures}
