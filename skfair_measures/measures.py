"""Measures: a base metric and an operation, plus composites and constraints.

A :class:`FairnessMeasure` computes its base metric in every group and reduces the
group values with its operation (mlr3fairness' ``MeasureFairness``). A
:class:`CompositeMeasure` aggregates several measures computed on the same counts,
a :class:`ConstraintMeasure` is a performance measure subject to a fairness bound,
and a :class:`PerformanceMeasure` is a plain (overall) metric such as accuracy.

The protocol every measure kind follows (the kinds of ``unaware`` too):

- a tree: :attr:`MeasureBase.children` and :meth:`MeasureBase.leaves`;
- one resolved inputs record, :attr:`MeasureBase.inputs` (:class:`MeasureInputs`:
  response method, threshold, pos_label, groups, undefined policy, whether the
  sensitive attribute is needed). A composite or constraint owns its leaves'
  inputs: leaves that disagree are refused when the tree is built, and
  :meth:`Measure.with_inputs` changes them on every leaf at once;
- its meaning as data: ``minimize`` (None for signed values), ``ideal`` (the
  perfectly fair value), ``signed``, ``range``;
- one evaluation path: validated rows (:meth:`Measure.evaluate`) and sufficient
  statistics (:meth:`Measure.evaluate_stats`) go through the same ``_evaluate``;
  :meth:`Measure.from_stats` is its vectorised form for bootstrap replicates and
  posterior draws.

Other modules read measures through this protocol only; they never inspect a
measure's attributes to learn what kind it is.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from sklearn.exceptions import UndefinedMetricWarning

from ._stats import (
    ConfusionStats,
    ErrorStats,
    GroupedSample,
    binarize_labels,
    check_inputs,
    check_scores,
    check_small_groups,
    restrict_small_groups,
)
from .base import BaseMetric, MulticlassError, get_base
from .operations import Operation, absdiff, get_operation
from .results import MeasureResult

if TYPE_CHECKING:  # pragma: no cover
    from .bootstrap import BootstrapResult
    from .scoring import FairnessScorer

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
    "evaluate_measures",
    "qualified_key",
]

Undefined = Literal["propagate", "drop", "raise"]
_UNDEFINED = ("propagate", "drop", "raise")
Stats = ConfusionStats | ErrorStats | Mapping[str, ConfusionStats | ErrorStats]


class UndefinedGroupWarning(UndefinedMetricWarning):
    """A group's rate is undefined (zero denominator); the measure is NaN.

    Subclasses scikit-learn's ``UndefinedMetricWarning``, so existing warning
    filters keep working.
    """


# --- inputs ----------------------------------------------------------------------


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

    def replace(self, **changes: Any) -> MeasureInputs:
        """A copy with some fields changed (validated)."""
        return _checked_inputs(dataclasses.replace(self, **changes))


def _checked_inputs(inputs: MeasureInputs) -> MeasureInputs:
    if inputs.undefined not in _UNDEFINED:
        raise ValueError(f"undefined={inputs.undefined!r}; pass 'propagate', 'drop' or 'raise'.")
    t = inputs.threshold
    if t is not None and not (isinstance(t, int | float | np.number) and 0.0 <= float(t) <= 1.0):
        raise ValueError(f"threshold={t!r}; pass a probability in [0, 1] (or None for predicted labels).")
    if inputs.groups is not None and not isinstance(inputs.groups, pd.Index):
        inputs = dataclasses.replace(inputs, groups=pd.Index(inputs.groups))
    check_small_groups(inputs.min_group_size, inputs.small_groups)
    return inputs


_RESOLVED_FIELDS = ("threshold", "pos_label", "groups", "undefined", "min_group_size", "small_groups")


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
        given = [(k, v) for k, v in seen if v is not None] if name == "groups" else seen
        first = given[0][1] if given else None
        if any(not _same(v, first) for _, v in given):
            raise ValueError(
                f"the parts of {key} disagree on {name}: "
                + ", ".join(f"{k}: {v!r}" for k, v in given)
                + f". Give them the same {name}=, or set it on the whole measure with .with_inputs({name}=...)."
            )
        values[name] = first
    proba = any(r.response_method == "predict_proba" for r in records)
    return MeasureInputs(
        response_method="predict_proba" if proba else "predict",
        needs_sensitive=any(r.needs_sensitive for r in records),
        **values,
    )


# --- the protocol ------------------------------------------------------------------


class MeasureBase:
    """The protocol of every measure kind.

    Attributes
    ----------
    key : str
        Identifier, e.g. ``"fairness.tpr"``; also the scorer and MLflow metric name.
    description : str
        One-line description.
    minimize : bool or None
        True if smaller is better/fairer, False if larger is, None for signed values.
    ideal : float or None
        The perfectly fair (or best) value: 0 for differences, 1 for ratios; None
        when there is none (a performance measure, a user operation).
    range : tuple of float
        Possible values.
    """

    key: str
    description: str
    minimize: bool | None
    ideal: float | None = None
    range: tuple[float, float] = (-np.inf, np.inf)

    @property
    def children(self) -> tuple[MeasureBase, ...]:
        """The measures this one is made of (empty for a leaf)."""
        return ()

    def leaves(self) -> list[MeasureBase]:
        """The leaf measures of the tree, in order."""
        if not self.children:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]

    @property
    def inputs(self) -> MeasureInputs:
        """The resolved inputs record of the whole tree."""
        return MeasureInputs()

    @property
    def signed(self) -> bool:
        """Whether the value carries a sign (no better/worse direction)."""
        return self.minimize is None

    def against(self, reference: Any) -> MeasureBase:
        """The signed form of the measure, comparing every group with ``reference``.

        Only a measure that compares groups with one operation has one (see
        :meth:`FairnessMeasure.against`); the others raise a ValueError.
        """
        raise ValueError(
            f"reference={reference!r} does not apply to {self.key}: it does not compare the groups "
            "with one operation; omit reference=."
        )

    @property
    def greater_is_better(self) -> bool:
        """Scorer direction: the opposite of ``minimize`` (signed measures: True)."""
        return self.minimize is not True

    @property
    def response_method(self) -> str:
        """What a scorer asks the estimator for: ``"predict"`` or ``"predict_proba"``."""
        return self.inputs.response_method

    @property
    def base_label(self) -> str:
        """What is computed per group, for tables (e.g. ``"tpr, fpr"``)."""
        return ", ".join(leaf.base_label for leaf in self.leaves()) if self.children else "(none)"

    @property
    def operation_label(self) -> str:
        """How groups are compared, for tables (e.g. ``"absdiff"``)."""
        return "(none)"

    def __repr__(self) -> str:
        direction = {True: "minimize", False: "maximize", None: "signed"}[self.minimize]
        return f"<{type(self).__name__} {self.key}: {self.description} ({direction}, range {self.range})>"


def qualified_key(stem: str, **params: Any) -> str:
    """A key that names the non-default parameters of a measure.

    Parameters left at their defaults are passed as None and omitted, so distinct
    measures get distinct keys (``fairness.tpr`` and its ratio form can be scored
    side by side).

    Examples
    --------
    >>> qualified_key("fairness.tpr", operation="ratio", threshold=None)
    'fairness.tpr(operation=ratio)'
    >>> qualified_key("fairness.tpr")
    'fairness.tpr'
    """
    parts = [f"{k}={v}" for k, v in params.items() if v is not None]
    return f"{stem}({', '.join(parts)})" if parts else stem


class Measure(MeasureBase):
    """A measure computed from ``y_true``, ``y_pred`` and the groups of the samples.

    Leaves hold their own :class:`MeasureInputs` (``self._inputs``); composites and
    constraints resolve theirs from their leaves when built.
    """

    _inputs: MeasureInputs

    # -- inputs -------------------------------------------------------------------
    @property
    def inputs(self) -> MeasureInputs:
        return self._inputs

    @property
    def threshold(self) -> float | None:
        return self.inputs.threshold

    @property
    def pos_label(self) -> Any:
        return self.inputs.pos_label

    @property
    def groups(self) -> pd.Index | None:
        return self.inputs.groups

    @property
    def undefined(self) -> Undefined:
        return self.inputs.undefined

    @property
    def requires_sensitive(self) -> bool:
        """Whether the measure compares groups (kept for compatibility; see ``inputs``)."""
        return self.inputs.needs_sensitive

    def with_inputs(self, **changes: Any) -> Measure:
        """A copy with ``threshold``, ``pos_label``, ``groups`` or ``undefined`` set on every leaf.

        Examples
        --------
        >>> from skfair_measures import msr
        >>> eod = msr("fairness.eod").with_inputs(threshold=0.3)
        >>> [leaf.threshold for leaf in eod.leaves()]
        [0.3, 0.3]
        """
        unknown = set(changes) - set(_RESOLVED_FIELDS)
        if unknown:
            raise TypeError(f"with_inputs() got {sorted(unknown)}; it sets {list(_RESOLVED_FIELDS)}.")
        out = copy.deepcopy(self)
        for leaf in out.leaves():
            leaf._set_inputs(leaf._inputs.replace(**changes))
        out._refresh()
        return out

    def _set_inputs(self, inputs: MeasureInputs) -> None:
        self._inputs = inputs

    def _refresh(self) -> None:
        """Re-resolve the inputs of a tree after its leaves changed."""
        for child in self.children:
            child._refresh()
        if self.children:
            self._inputs = _resolve_inputs(self.key, self.leaves())

    # -- public API -----------------------------------------------------------------
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
        sample = self.validate(y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
        return self._evaluate(_SampleSource(sample))

    def evaluate_stats(self, stats: Stats) -> MeasureResult:
        """Compute the measure from sufficient statistics (e.g. aggregated by a dataframe engine).

        Parameters
        ----------
        stats : ConfusionStats, ErrorStats, or dict {"confusion": ..., "errors": ...}
            Statistics of one sample (no leading axes), computed for this measure's
            inputs (its threshold and pos_label).

        Examples
        --------
        >>> from skfair_measures import msr
        >>> s = ConfusionStats.from_codes([0, 0, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1], pd.Index(["a", "b"]))
        >>> msr("fairness.tpr").evaluate_stats(s).value
        0.5
        """
        return self._evaluate(_StatsSource(stats))

    def evaluate_sample(self, sample: GroupedSample) -> MeasureResult:
        """Compute the measure on an already validated sample (see :meth:`validate`)."""
        return self._evaluate(_SampleSource(sample))

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

    def validate(
        self, y_true: Any, y_pred: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> GroupedSample:
        """Validate the inputs once for this measure (its groups and whether it needs them)."""
        return _validate(self.key, self.inputs, y_true, y_pred, sensitive_features, sample_weight)

    def as_scorer(self, sensitive: str | Sequence[str] | None = None, *, groups: Any = None) -> FairnessScorer:
        """A scikit-learn scorer for this measure.

        Parameters
        ----------
        sensitive : str or list of str, optional
            Column(s) of ``X`` holding the sensitive attribute (column mode). If
            None, the scorer requests ``sensitive_features`` through scikit-learn's
            metadata routing (when the measure needs it); enable it with
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
    ) -> BootstrapResult:
        """Bootstrap distribution of the measure; see :func:`skfair_measures.bootstrap.bootstrap`."""
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
        """Posterior of the measure; see :func:`skfair_measures.bayes.posterior` for the arguments."""
        from .bayes import posterior

        return posterior(self, y_true, y_score, sensitive_features=sensitive_features, **kwargs)

    # -- vectorised core -------------------------------------------------------------
    @property
    def bases(self) -> tuple[BaseMetric, ...]:
        """The base metrics this measure needs, per group (each once)."""
        out: dict[str, BaseMetric] = {}
        for leaf in self.leaves():
            for b in leaf._own_bases():
                out.setdefault(b.name, b)
        return tuple(out.values())

    def _own_bases(self) -> tuple[BaseMetric, ...]:
        return ()

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Evaluate on stacked per-group values ``{base name: array (..., n_groups)}``.

        NaN propagates (``undefined="drop"`` drops NaN groups row by row); no
        warning is issued (the caller summarises draws).
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def from_stats(self, stats: Stats) -> np.ndarray:
        """Evaluate on sufficient statistics with any leading axes.

        Examples
        --------
        >>> from skfair_measures import msr
        >>> s = ConfusionStats.from_codes([0, 0, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1], pd.Index(["a", "b"]))
        >>> float(msr("fairness.tpr").from_stats(s))
        0.5
        """
        source = _StatsSource(stats)
        values, overall = {}, {}
        for b in self.bases:
            values[b.name], overall[b.name] = b.from_stats(source.stats_for(b, self.key))
        return self.from_group_values(values, groups=source.groups, overall=overall)

    def _evaluate(self, source: _Source) -> MeasureResult:
        raise NotImplementedError  # pragma: no cover - abstract


# --- where leaves read their values ------------------------------------------------


class _Source:
    """Where leaves read their per-group values: validated rows or statistics."""

    groups: pd.Index

    def values(self, base: BaseMetric, inputs: MeasureInputs, key: str) -> tuple[np.ndarray, float]:
        raise NotImplementedError  # pragma: no cover - abstract

    def counts(self) -> pd.Series:
        raise NotImplementedError  # pragma: no cover - abstract

    def rows(self, key: str) -> GroupedSample:
        """The validated rows, for measures that need more than sufficient statistics."""
        raise NotImplementedError  # pragma: no cover - abstract


class _SampleSource(_Source):
    def __init__(self, sample: GroupedSample) -> None:
        self.sample = sample
        self.groups = sample.groups

    def values(self, base: BaseMetric, inputs: MeasureInputs, key: str) -> tuple[np.ndarray, float]:
        data, pos = prepared(self.sample, inputs)
        try:
            return base.group_values(data, pos)
        except MulticlassError as err:
            raise MulticlassError(f"{key}: {err}") from None

    def rows(self, key: str) -> GroupedSample:
        return self.sample

    def counts(self) -> pd.Series:
        return self.sample.counts_per_group()


class _StatsSource(_Source):
    def __init__(self, stats: Stats) -> None:
        if isinstance(stats, ConfusionStats):
            stats = {"confusion": stats}
        elif isinstance(stats, ErrorStats):
            stats = {"errors": stats}
        elif not isinstance(stats, Mapping) or not stats:
            raise TypeError(f"stats must be ConfusionStats, ErrorStats or a dict of them; got {stats!r}.")
        self.stats = dict(stats)
        first = next(iter(self.stats.values()))
        if any(not s.groups.equals(first.groups) for s in self.stats.values()):
            raise ValueError("the statistics in stats= describe different groups; compute them on the same groups.")
        self.groups = first.groups

    def stats_for(self, base: BaseMetric, key: str) -> ConfusionStats | ErrorStats:
        kind = base.statistic
        if kind is None:
            raise TypeError(
                f"{key}: base metric {base.name!r} needs the rows, not sufficient statistics; "
                "evaluate it on y_true, y_pred and sensitive_features."
            )
        if kind not in self.stats:
            raise ValueError(
                f"{key}: base metric {base.name!r} needs {kind!r} statistics; stats= has {list(self.stats)}."
            )
        return self.stats[kind]

    def values(self, base: BaseMetric, inputs: MeasureInputs, key: str) -> tuple[np.ndarray, float]:
        try:
            vals, overall = base.from_stats(self.stats_for(base, key))
        except MulticlassError as err:
            raise MulticlassError(f"{key}: {err}") from None
        return np.asarray(vals, dtype=float), float(overall)

    def rows(self, key: str) -> GroupedSample:
        raise TypeError(f"{key} reads the rows (sorted predictions per group), not sufficient statistics.")

    def counts(self) -> pd.Series:
        n = next(iter(self.stats.values())).n
        return pd.Series(np.asarray(n, dtype=float), index=self.groups, name="count")


def prepared(sample: GroupedSample, inputs: MeasureInputs) -> tuple[GroupedSample, Any]:
    """The sample a measure reads (thresholded if it has a threshold) and its pos_label."""
    if inputs.threshold is None:
        return sample, inputs.pos_label
    key = ("threshold", inputs.threshold, inputs.pos_label)
    if key not in sample._cache:
        scores = check_scores(sample.y_pred, "y_pred (scores, since threshold= is set)")
        t, _, _ = binarize_labels(sample.y_true, sample.y_true, inputs.pos_label)
        pred = (scores >= inputs.threshold).astype(np.intp)
        sample._cache[key] = GroupedSample(t, pred, sample.group_codes, sample.groups, sample.sample_weight)
    return sample._cache[key], None


_ONE_GROUP = pd.Index([0], name="all")


def _validate(
    key: str, inputs: MeasureInputs, y_true: Any, y_pred: Any, sensitive_features: Any, sample_weight: Any
) -> GroupedSample:
    if sensitive_features is None:
        if inputs.needs_sensitive:
            raise ValueError(
                f"{key} compares groups: pass sensitive_features= (the group of "
                "each sample). In a scorer, use as_scorer(sensitive='column') or enable "
                "metadata routing, see Measure.as_scorer."
            )
        n = len(y_true)
        return check_inputs(y_true, y_pred, np.zeros(n, dtype=np.intp), sample_weight, groups=_ONE_GROUP)
    sample = check_inputs(y_true, y_pred, sensitive_features, sample_weight, groups=inputs.groups)
    return restrict_small_groups(sample, inputs.min_group_size, inputs.small_groups, key)


# --- undefined groups --------------------------------------------------------------


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
        stacklevel=5,
    )


def _operate(op: Operation, values: np.ndarray, groups: pd.Index, overall: Any, undefined: str) -> np.ndarray:
    """Apply ``op``; with ``undefined='drop'``, leave out the NaN groups of each row.

    Rows (bootstrap replicates, posterior draws) that share a pattern of undefined
    groups are reduced together, so the cost grows with the number of patterns,
    not of rows.
    """
    values = np.asarray(values, dtype=float)
    if undefined != "drop" or not np.isnan(values).any():
        return op(values, groups=groups, overall=overall)
    flat = values.reshape(-1, values.shape[-1])
    ov = None if overall is None else np.broadcast_to(np.asarray(overall, dtype=float), values.shape[:-1]).ravel()
    out = np.full(flat.shape[0], np.nan)
    patterns, which = np.unique(np.isnan(flat), axis=0, return_inverse=True)
    for p, missing in enumerate(patterns):
        rows, keep = which.ravel() == p, ~missing
        if keep.sum() >= (1 if op.needs_overall else 2):
            sub_ov = None if ov is None else ov[rows]
            out[rows] = op(flat[rows][:, keep], groups=groups[keep], overall=sub_ov)
    return out.reshape(values.shape[:-1]) if values.ndim > 1 else float(out[0])


# --- leaves ------------------------------------------------------------------------


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
        response = "predict_proba" if threshold is not None else self.base.response_method
        self._inputs = _checked_inputs(
            MeasureInputs(response, threshold, pos_label, groups, undefined, needs_sensitive=True)
        )
        self.minimize = op.minimize
        self.ideal = op.ideal
        self.range = tuple(op.range_of(tuple(self.base.range)))
        self.description = description or f"{self.base.description}: {op.description}"

    def _set_inputs(self, inputs: MeasureInputs) -> None:
        response = "predict_proba" if inputs.threshold is not None else self.base.response_method
        self._inputs = dataclasses.replace(inputs, response_method=response)

    def _own_bases(self) -> tuple[BaseMetric, ...]:
        return (self.base,)

    @property
    def reference(self) -> Any:
        """The reference group of a ``*_to_reference`` operation, else None."""
        return self.operation.reference

    @property
    def base_label(self) -> str:
        return self.base.name

    @property
    def operation_label(self) -> str:
        return self.operation.name

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        ov = None if overall is None else overall.get(self.base.name)
        return _operate(self.operation, values[self.base.name], groups, ov, self.undefined)

    def _evaluate(self, source: _Source) -> MeasureResult:
        vals, overall = source.values(self.base, self.inputs, self.key)
        bad = np.isnan(vals)
        if bad.any():
            _warn_undefined(self.key, self.base, source.groups, bad, self.undefined)
        value = _operate(self.operation, vals, source.groups, overall, self.undefined)
        groups, name = source.groups, self.base.name
        why = self.operation.undefined_reason(vals, groups=groups, metric=name) if np.isnan(value) else None
        if why is not None and not bad.any():
            warnings.warn(f"{self.key}: {why}.", UndefinedGroupWarning, stacklevel=4)
        return MeasureResult(
            key=self.key,
            value=float(value),
            by_group=lambda: pd.Series(vals, index=groups, name=name),
            counts=source.counts,
            overall=overall,
            measure=self,
            undefined_groups=[groups[i] for i in np.flatnonzero(bad)],
            reason=(why or _undefined_reason(self.base, groups, bad)) if np.isnan(value) else None,
        )

    def clone(self, **overrides: Any) -> FairnessMeasure:
        """A copy with some parameters replaced (as ``msr(key, **overrides)``).

        A new operation, reference or base gives a new default key.
        """
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


class PerformanceMeasure(Measure):
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
        response = "predict_proba" if threshold is not None else self.base.response_method
        self._inputs = _checked_inputs(
            MeasureInputs(response, threshold, pos_label, groups, undefined, needs_sensitive=False)
        )

    _set_inputs = FairnessMeasure._set_inputs

    def _own_bases(self) -> tuple[BaseMetric, ...]:
        return (self.base,)

    @property
    def base_label(self) -> str:
        return self.base.name

    @property
    def operation_label(self) -> str:
        return "overall"

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

    def _evaluate(self, source: _Source) -> MeasureResult:
        vals, overall = source.values(self.base, self.inputs, self.key)
        if np.isnan(overall):
            _warn_undefined(self.key, self.base, pd.Index(["all samples"]), np.array([True]), "propagate")
        groups, name = source.groups, self.base.name
        return MeasureResult(
            key=self.key,
            value=float(overall),
            by_group=lambda: pd.Series(vals, index=groups, name=name),
            counts=source.counts,
            overall=overall,
            measure=self,
            reason=_undefined_reason(self.base, pd.Index(["all samples"]), np.array([True]))
            if np.isnan(overall)
            else None,
        )


# --- trees -------------------------------------------------------------------------


def _agg_mean(a: np.ndarray) -> np.ndarray:
    return np.mean(a, axis=0)


def _agg_max(a: np.ndarray) -> np.ndarray:
    return np.max(a, axis=0)


def _agg_min(a: np.ndarray) -> np.ndarray:
    return np.min(a, axis=0)


_AGGREGATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {"mean": _agg_mean, "max": _agg_max, "min": _agg_min}


def _common(values: Sequence[Any]) -> Any:
    first = values[0]
    return first if all(v == first for v in values) else None


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
        func = _AGGREGATES[self.aggregate] if isinstance(self.aggregate, str) else self.aggregate
        return np.asarray(func(stacked))

    def from_group_values(
        self,
        values: Mapping[str, np.ndarray],
        *,
        groups: pd.Index,
        overall: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        parts = [np.asarray(m.from_group_values(values, groups=groups, overall=overall)) for m in self.measures]
        return self._agg(np.stack(parts))

    def _evaluate(self, source: _Source) -> MeasureResult:
        results = [m._evaluate(source) for m in self.measures]
        value = float(self._agg(np.array([r.value for r in results])))

        def by_group() -> pd.DataFrame | None:
            parts = {r.key: r.by_group for r in results}
            return pd.concat(parts, axis=1) if all(isinstance(p, pd.Series) for p in parts.values()) else None

        return MeasureResult(
            key=self.key,
            value=value,
            by_group=by_group,
            counts=source.counts,
            overall=lambda: pd.Series({r.key: r.overall for r in results}, dtype=float),
            measure=self,
            undefined_groups=_union_groups(results),
            reason=_joined_reasons(results) if np.isnan(value) else None,
        )


def _undefined_reason(base: BaseMetric, groups: pd.Index, bad: np.ndarray) -> str:
    """Why a leaf is NaN, in the words of its base metric."""
    if not bad.any():
        return f"{base.name} is undefined on these samples"
    names = [groups[i] for i in np.flatnonzero(bad)]
    cause = f" ({base.undefined_when})" if base.undefined_when else ""
    return f"{base.name} is undefined for group(s) {names}{cause}"


def _joined_reasons(results: Sequence[MeasureResult]) -> str:
    reasons = dict.fromkeys(r.reason for r in results if r.reason is not None)
    return "; ".join(reasons) or "a part is undefined"


def _union_groups(results: Sequence[MeasureResult]) -> list[Any]:
    seen: dict[Any, None] = {}
    for r in results:
        for g in r.undefined_groups:
            seen.setdefault(g, None)
    return list(seen)


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

    def _evaluate(self, source: _Source) -> MeasureResult:
        perf = self.performance._evaluate(source)
        fair = self.fairness._evaluate(source)
        value = float(self._combine(np.asarray(perf.value), np.asarray(fair.value)))
        return MeasureResult(
            key=self.key,
            value=value,
            by_group=lambda: fair.by_group,
            counts=source.counts,
            overall=lambda: pd.Series({perf.key: perf.value, fair.key: fair.value}, dtype=float),
            measure=self,
            undefined_groups=fair.undefined_groups,
            reason=_joined_reasons([perf, fair]) if np.isnan(value) else None,
        )


# --- several measures at once ------------------------------------------------------


def as_measures(measures: MeasureBase | str | Sequence[MeasureBase | str]) -> list[Measure]:
    """Measures from measures or registry keys, refusing two that share a key.

    Examples
    --------
    >>> [m.key for m in as_measures(["fairness.tpr", "classif.acc"])]
    ['fairness.tpr', 'classif.acc']
    """
    from .registry import msr  # the registry sits above the measure classes

    if isinstance(measures, MeasureBase | str):
        measures = [measures]
    out = [msr(m) if isinstance(m, str) else m for m in measures]
    seen: dict[str, MeasureBase] = {}
    for m in out:
        if m.key in seen:
            raise ValueError(
                f"two measures share the key {m.key!r} ({seen[m.key]!r} and {m!r}); results are keyed by it. "
                "Pass key= to one of them (e.g. msr(..., key='my.name'))."
            )
        seen[m.key] = m
    return out


def evaluate_measures(
    measures: Sequence[Measure | str],
    y_true: Any = None,
    y_pred: Any = None,
    *,
    sensitive_features: Any = None,
    sample_weight: Any = None,
    stats: Stats | None = None,
) -> dict[str, MeasureResult]:
    """Evaluate several measures on one validated sample (one pass of counts).

    Parameters
    ----------
    measures : sequence of Measure or registry keys
        Distinct measures need distinct keys.
    y_true, y_pred, sensitive_features, sample_weight
        As for calling a measure.
    stats : ConfusionStats, ErrorStats or dict of them, optional
        Sufficient statistics instead of rows (e.g. from a dataframe engine).

    Examples
    --------
    >>> from skfair_measures import msr
    >>> res = evaluate_measures([msr("fairness.tpr"), "fairness.fpr"],
    ...                         [1, 1, 0, 0], [1, 0, 0, 1], sensitive_features=list("abab"))
    >>> {k: r.value for k, r in res.items()}
    {'fairness.tpr': 1.0, 'fairness.fpr': 1.0}
    """
    ms = as_measures(measures)
    if stats is not None:
        return {m.key: m.evaluate_stats(stats) for m in ms}
    samples: list[tuple[MeasureInputs, GroupedSample]] = []
    out = {}
    for m in ms:
        sample = _shared_sample(samples, m, y_true, y_pred, sensitive_features, sample_weight)
        out[m.key] = m._evaluate(_SampleSource(sample))
    return out


def _shared_sample(
    samples: list[tuple[MeasureInputs, GroupedSample]],
    m: Measure,
    y_true: Any,
    y_pred: Any,
    sensitive_features: Any,
    sample_weight: Any,
) -> GroupedSample:
    """Validate once per distinct (declared groups, needs groups) pair; reuse otherwise."""
    want = m.inputs
    for have, sample in samples:
        same_use = sensitive_features is not None or have.needs_sensitive == want.needs_sensitive
        same_small = (have.min_group_size, have.small_groups) == (want.min_group_size, want.small_groups)
        if _same(have.groups, want.groups) and same_use and same_small:
            return sample
    sample = _validate(m.key, want, y_true, y_pred, sensitive_features, sample_weight)
    samples.append((want, sample))
    return sample
