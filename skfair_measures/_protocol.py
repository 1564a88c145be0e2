"""The protocol of every measure kind, and the one path on which measures evaluate.

- a tree: :attr:`MeasureBase.children` and :meth:`MeasureBase.leaves`;
- one resolved inputs record, :attr:`MeasureBase.inputs` (:class:`~skfair_measures.measures.MeasureInputs`);
- its meaning as data: ``minimize`` (None for signed values), ``ideal``, ``signed``, ``range``;
- one evaluation path: validated rows (:meth:`Measure.evaluate`) and sufficient
  statistics (:meth:`Measure.evaluate_stats`) go through the same ``_evaluate``, reading
  per-group values from a source (rows or statistics); :meth:`Measure.from_stats` is its
  vectorised form for bootstrap replicates and posterior draws.

What is computed from a measure (scorers, bootstrap intervals, posteriors) lives in
the layers above, which take the measure as an argument: ``sfm.make_scorers``,
``sfm.bootstrap(m, ...)``, ``bayes.posterior(m, ...)``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._arrays import check_scores
from ._counts import ConfusionStats, ErrorStats
from ._inputs import _RESOLVED_FIELDS, MeasureInputs, Undefined, _resolve_inputs
from ._labels import binarize_labels
from ._small_groups import SMALL_GROUP_ROWS, SmallGroupPlan, SmallGroupWarning
from ._stats import GroupedSample, check_inputs, restrict_small_groups
from ._undefined import name_groups
from .base import BaseMetric, MulticlassError, ratio_roles
from .results import MeasureResult

__all__ = ["Measure", "MeasureBase", "PerGroup", "Stats", "prepared", "qualified_key"]

Stats = ConfusionStats | ErrorStats | Mapping[str, ConfusionStats | ErrorStats]
#: Values per group of each base metric, ``{base name: array (..., n_groups)}``.
PerGroup = Mapping[str, np.ndarray]
#: Bounds of each base metric's pooled value, ``{base name: (low, high)}``.
Boxes = Mapping[str, tuple[float, float]]


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

    def bounds_from_group_values(
        self, lower: PerGroup, upper: PerGroup, *, groups: pd.Index, overall: Boxes | None = None
    ) -> tuple[float, float]:
        """An interval holding the measure at every point of a box of group values.

        ``lower[base][g] <= value <= upper[base][g]`` for every base and group (and the
        pooled value of each base in ``overall[base]``) implies that the measure lies in
        the interval returned (the image of the box or a superset of it): a joint
        confidence box of the group rates gives a confidence interval of the measure.
        Measures whose image of a box is unknown raise a TypeError naming themselves.
        """
        raise TypeError(
            f"{self.key} has no interval propagation from boxes of group values (only measures built from named "
            "operations and mean/max/min composites of them do); use a posterior method with draws."
        )

    def leaves(self) -> list[MeasureBase]:
        """The leaf measures of the tree, in order."""
        return [leaf for child in self.children for leaf in child.leaves()] if self.children else [self]

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
    def __call__(self, y_true: Any, y_pred: Any, *, sensitive_features: Any = None, sample_weight: Any = None) -> float:
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
        self, y_true: Any, y_pred: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> MeasureResult:
        """Compute the measure with its per-group values and group counts."""
        sample = self.validate(y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
        result = self.evaluate_sample(sample)
        warn_small_groups([small_groups_note(self, sample, result)], stacklevel=3)
        return result

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
        return self._keyed(_StatsSource(stats))

    def evaluate_sample(self, sample: GroupedSample) -> MeasureResult:
        """Compute the measure on an already validated sample (see :meth:`validate`)."""
        return self._keyed(_SampleSource(sample))

    def _keyed(self, source: Any) -> MeasureResult:
        """``_evaluate``, with the key of the measure called (not of a part) in a multiclass error's example."""
        try:
            return self._evaluate(source)
        except MulticlassError as err:
            if "MEASURE_KEY" not in str(err):
                raise
            raise MulticlassError(str(err).replace("MEASURE_KEY", repr(self.key))) from None

    def groupwise(
        self, y_true: Any, y_pred: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> pd.Series | pd.DataFrame:
        """Base-metric value in each group (mlr3fairness' ``groupwise_metrics``)."""
        res = self.evaluate(y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
        return res.by_group

    def validate(
        self, y_true: Any, y_pred: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> GroupedSample:
        """Validate the inputs once for this measure (its groups and whether it needs them)."""
        return _validate(self.key, self.inputs, y_true, y_pred, sensitive_features, sample_weight)

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

    def from_group_values(self, values: PerGroup, *, groups: pd.Index, overall: PerGroup | None = None) -> np.ndarray:
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
        values, overall, groups = self.group_values_from_stats(stats)
        return self.from_group_values(values, groups=groups, overall=overall)

    def group_values_from_stats(self, stats: Stats) -> tuple[PerGroup, PerGroup, pd.Index]:
        """Every base metric in every group, and pooled, from statistics with any leading axes.

        Returns ``(values, overall, groups)``: ``{base name: array (..., n_groups)}``,
        ``{base name: array (...)}`` and the groups; :meth:`from_stats` runs them through
        the measure's operations.

        Examples
        --------
        >>> from skfair_measures import msr
        >>> s = ConfusionStats.from_codes([0, 0, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1], pd.Index(["a", "b"]))
        >>> values, overall, groups = msr("fairness.tpr").group_values_from_stats(s)
        >>> values["tpr"].tolist(), float(overall["tpr"]), list(groups)
        ([0.5, 1.0], 0.75, ['a', 'b'])
        """
        source = _StatsSource(stats)
        values, overall = {}, {}
        for b in self.bases:
            values[b.name], overall[b.name] = b.from_stats(source.stats_for(b, self.key))
        return values, overall, source.groups

    def _evaluate(self, source: _Source) -> MeasureResult:
        raise NotImplementedError  # pragma: no cover - abstract


# --- where leaves read their values ------------------------------------------------


class _BaseSource:
    """Where leaves read their per-group values: validated rows (:class:`_SampleSource`) or statistics.

    Each source has ``groups``, ``values(base, inputs, key)`` (every group's value and the
    pooled one), ``counts()`` (the weighted rows per group), ``weightless()`` (which groups
    have rows whose sample weights are all 0) and ``rows(key)`` (the validated rows, for
    measures that need more than sufficient statistics).
    """

    groups: pd.Index

    def values(self, base: BaseMetric, inputs: MeasureInputs, key: str) -> tuple[np.ndarray, float]:
        try:
            vals, overall = self._values(base, inputs, key)
        except MulticlassError as err:
            raise MulticlassError(f"{key}: {err}") from None
        return np.asarray(vals, dtype=float), float(overall)

    def _values(self, base: BaseMetric, inputs: MeasureInputs, key: str) -> tuple[np.ndarray, float]:
        raise NotImplementedError  # pragma: no cover - abstract


class _SampleSource(_BaseSource):
    def __init__(self, sample: GroupedSample) -> None:
        self.sample = sample
        self.groups = sample.groups

    def _values(self, base: BaseMetric, inputs: MeasureInputs, key: str) -> tuple[np.ndarray, float]:
        return base.group_values(*prepared(self.sample, inputs))

    def rows(self, key: str) -> GroupedSample:
        return self.sample

    def counts(self) -> pd.Series:
        return self.sample.counts_per_group()

    def weightless(self) -> np.ndarray:
        return self.sample.weightless()


class _StatsSource(_BaseSource):
    def __init__(self, stats: Stats) -> None:
        if isinstance(stats, ConfusionStats):
            stats = {"confusion": stats}
        elif isinstance(stats, ErrorStats):
            stats = {"errors": stats}
        elif not isinstance(stats, Mapping) or not stats:
            raise TypeError(f"stats must be ConfusionStats, ErrorStats or a dict of them; got {stats!r}.")
        self.stats = dict(stats)
        self.first = next(iter(self.stats.values()))
        if any(not s.groups.equals(self.first.groups) for s in self.stats.values()):
            raise ValueError("the statistics in stats= describe different groups; compute them on the same groups.")
        self.groups = self.first.groups

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

    def _values(self, base: BaseMetric, inputs: MeasureInputs, key: str) -> tuple[np.ndarray, float]:
        return base.from_stats(self.stats_for(base, key))

    def rows(self, key: str) -> GroupedSample:
        raise TypeError(f"{key} reads the rows (sorted predictions per group), not sufficient statistics.")

    def counts(self) -> pd.Series:
        return pd.Series(np.asarray(self.first.n, dtype=float), index=self.groups, name="count")

    def weightless(self) -> np.ndarray:
        return self.first.weightless()


_Source = _SampleSource | _StatsSource


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
                "each sample). In a scorer, read it from a column of X (sfm.make_scorers(..., "
                "sensitive='column')) or enable metadata routing (see docs/scoring.md)."
            )
        return check_inputs(y_true, y_pred, np.zeros(len(y_true), dtype=np.intp), sample_weight, groups=_ONE_GROUP)
    declared = {"groups": inputs.groups, "labels": inputs.labels, "compare_groups": inputs.needs_sensitive}
    sample = check_inputs(y_true, y_pred, sensitive_features, sample_weight, **declared)
    return restrict_small_groups(sample, inputs.min_group_size, inputs.small_groups, key)


def _denominator_rows(measure: MeasureBase, source: GroupedSample | Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per group: its rows, and the fewest rows (not weights) in the denominator of a rate the measure reads.

    From rows, or from statistics (an engine's pass): unweighted counts are rows; weighted
    ones know only each group's rows, which then stand for every denominator.
    """
    if isinstance(source, GroupedSample):
        sizes = source.group_sizes().astype(float)
    else:
        first = next(iter(source.values()))
        sizes = np.asarray(first.n if first.rows is None else first.rows, dtype=float)
    fewest = sizes.copy()
    for base in measure.bases:
        try:
            roles = ratio_roles(base)
        except TypeError:
            continue
        if not roles.simple:
            continue
        if isinstance(source, GroupedSample):
            data, pos = prepared(source, measure.inputs)
            if data.reads_classes(pos):
                continue
            cells = data.cell_moments(pos)[:, 0].reshape(data.n_groups, 4)
        else:
            stats = source.get("confusion")
            if not isinstance(stats, ConfusionStats) or stats.rows is not None or stats.counts.shape[-1] != 2:
                continue
            cells = np.asarray(stats.counts, dtype=float).reshape(-1, 4)
        fewest = np.minimum(fewest, cells[:, roles.den.ravel()].sum(-1))
    return sizes, fewest


def _without(measure: MeasureBase, source: GroupedSample | Mapping[str, Any], small: np.ndarray) -> float:
    """The measure without the small groups (NaN when fewer than two groups remain)."""
    keep = ~small
    groups = source.groups if isinstance(source, GroupedSample) else next(iter(source.values())).groups
    plan = SmallGroupPlan(np.where(keep, np.cumsum(keep) - 1, -1), groups[keep], "")  # the small ones left out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if isinstance(source, GroupedSample):
                r = source.subset(keep[source.group_codes])
                r = GroupedSample(r.y_true, r.y_pred, plan.codes(r.group_codes), plan.groups, r.sample_weight, r.labels)
                return float(measure.evaluate_sample(r).value)
            return float(measure.evaluate_stats({kind: plan.stats(st) for kind, st in source.items()}).value)
        except (ValueError, TypeError):  # one group left: the comparison is undefined without them
            return np.nan


def warn_small_groups(notes: list[str | None], stacklevel: int = 2) -> None:
    """One :class:`SmallGroupWarning` for the notes of :func:`small_groups_note` (none if there are none)."""
    notes = [n for n in notes if n]
    if notes:
        warnings.warn(" ".join(notes), SmallGroupWarning, stacklevel=stacklevel + 1)


def small_groups_note(
    measure: MeasureBase, sample: GroupedSample | Mapping[str, Any], result: MeasureResult
) -> str | None:
    """What to say when groups whose rates rest on few rows decide the value (kept on the result), else None.

    A group is small when a rate the measure reads has fewer than ``SMALL_GROUP_ROWS``
    (30) rows in its denominator there (rows, not weights: weights change no size). When
    some groups are small and others not, the measure is computed again without the
    small ones; if the value moves, the note names them with both values (every door warns
    with it once: :func:`warn_small_groups`), and ``result.small_groups_note`` keeps it for
    reports. Measures with
    ``min_group_size=`` set have decided already (their small groups are left out or
    merged), and so do measures that compare no groups.

    Examples
    --------
    >>> import warnings
    >>> from skfair_measures import msr
    >>> y = np.r_[np.ones(100, int), np.ones(5, int)]; g = np.r_[np.repeat(["a", "b"], 50), ["c"] * 5]
    >>> p = np.r_[np.tile([1, 0], 50), np.ones(5, int)]
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     value = msr("fairness.tpr")(y, p, sensitive_features=g)
    >>> print(seen[0].message)  # doctest: +NORMALIZE_WHITESPACE
    fairness.tpr: 0.5000 is decided by group(s) with fewer than 30 rows in a rate's denominator: 'c' (5);
    without them it is 0.0000. Pass min_group_size=6 to leave them out (small_groups='merge' to pool them), or
    read the interval (sfm.bootstrap) before the value.
    """
    inputs = measure.inputs
    if inputs.min_group_size is not None or not inputs.needs_sensitive or not np.isfinite(result.value):
        return None
    sizes, rows = _denominator_rows(measure, sample)
    small = (rows < SMALL_GROUP_ROWS) & (sizes > 0)
    if not small.any() or small[sizes > 0].all():
        return None
    without = _without(measure, sample, small)
    if np.isclose(without, result.value):
        return None
    groups = sample.groups if isinstance(sample, GroupedSample) else next(iter(sample.values())).groups
    named = name_groups([groups[i] for i in np.flatnonzero(small)], rows[small].astype(int))
    other = "undefined (fewer than two groups)" if np.isnan(without) else f"{without:.4f}"
    need = int(sizes[small].max()) + 1  # min_group_size counts a group's rows
    note = (
        f"{measure.key}: {result.value:.4f} is decided by group(s) with fewer than {SMALL_GROUP_ROWS} rows in a "
        f"rate's denominator: {named}; without them it is {other}. Pass min_group_size={need} to "
        "leave them out (small_groups='merge' to pool them), or read the interval (sfm.bootstrap) before the value."
    )
    result.small_groups_note = note
    return note
