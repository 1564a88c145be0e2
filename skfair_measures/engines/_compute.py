"""Measures on a data frame of any engine: one grouped pass per distinct need, measures run locally.

A measure needs confusion counts or error sums (``base.statistic``), for its threshold
and positive label (``measure.inputs``). The engine pass depends only on the statistic
and the threshold (``score >= threshold`` is computed in the engine); the positive label
the declared groups and ``min_group_size`` are applied locally to the small table
(small groups left out or merged by the core's own rule, on the groups' row counts). So measures are
grouped by what the engine must compute, each group costs one pass, and every measure
then evaluates on the statistics with ``measure.evaluate_stats``, exactly as on rows.

:func:`evaluate_measures` and :func:`compute_metrics` are the library's one door for
several measures (``sfm.evaluate_measures`` and ``sfm.compute_metrics`` are these
functions): arrays are evaluated in memory, a frame of any engine by its grouped
pass. A pandas frame takes the engine pass when every argument names a column and
every measure reads sufficient statistics; predictions or weights given as arrays,
and measures that read the rows (wrapped scikit-learn metrics, ranking, distribution
parity), are evaluated in memory on its columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw
import pandas as pd

from .._counts import ConfusionStats, ErrorStats
from .._groups import resolve_sensitive
from .._protocol import Stats, small_groups_note, warn_small_groups
from .._small_groups import SmallGroupPlan, small_group_plan
from .._together import evaluate_together
from ..measures import Measure, MeasureBase, MeasureInputs, MeasureResult
from ..registry import as_measures
from ..regression import DistributionParity
from . import _native
from ._aggregate import (
    binning_bounds,
    check_types,
    confusion_table,
    error_table,
    group_sizes,
    local_stats,
    value_sample,
    value_table,
)
from ._frames import Columns, as_lazy, check_columns

__all__ = ["compute_metrics", "evaluate_measures", "grouped_stats"]

_NEEDS_ROWS = (
    "{key} cannot be computed in the engine: its base metric {base!r} needs the rows, not sufficient "
    "statistics. Collect the columns to pandas first (e.g. data.toPandas(), data.compute(), "
    "data.collect()) and call skfair_measures.compute_metrics on the pandas DataFrame."
)
_NO_BASES = (
    "{key} compares the distributions of the predictions per group: it reads a (group, value) table, not "
    "confusion counts or error sums, so only its value is computed in the engine (evaluate_measures or "
    "compute_metrics on the frame). For anything else, collect the columns to pandas first (e.g. "
    "data.toPandas(), data.compute(), data.collect()) and call the measure on them: "
    "msr({key!r})(y_true, y_pred, sensitive_features=groups)."
)
_STATISTICS = ("confusion", "errors")
#: How far a binned distance can be from the exact one, per distance (:func:`~._aggregate.binning_bounds`).
_BINNING_ERROR = {
    "ks": "Kolmogorov-Smirnov: below it by at most the largest share of one group's mass in one bin",
    "wasserstein": "1-Wasserstein: each group's mass moved by at most half a bin",
}


def _engine_table(frame: nw.LazyFrame, cols: Columns, kind: str, threshold: float | None) -> pd.DataFrame:
    """One pass of the engine; hand-written numpy for pandas and Dask (see ``_native``), narwhals otherwise."""
    check_types(frame, cols, kind, threshold)
    table = _native.native_table(frame, cols, kind, threshold)
    if table is not None:
        return table
    return error_table(frame, cols) if kind == "errors" else confusion_table(frame, cols, threshold)


class _Engine:
    """The engine passes of one call, each run at most once (cached by what it computes)."""

    def __init__(self, data: Any, cols: Columns) -> None:
        self.frame, self.cols = as_lazy(data), cols
        self._tables: dict[tuple, pd.DataFrame] = {}
        self._widths: dict[int | None, float | None] = {}
        self._stats: dict[tuple, ConfusionStats | ErrorStats] = {}
        self._plans: dict[tuple, SmallGroupPlan | None] = {}

    def table(self, kind: str, threshold: float | None) -> pd.DataFrame:
        key = (kind, None if kind == "errors" else threshold)
        if key not in self._tables:
            self._tables[key] = _engine_table(self.frame, self.cols, kind, key[1])
        return self._tables[key]

    def distribution(self, m: DistributionParity) -> MeasureResult:
        """A distribution distance from the (group, prediction value) table (one table per ``bins``).

        Exact up to ``_aggregate.MAX_VALUES`` distinct predictions; above, with the measure's
        ``bins``, from bin centres, the error bound in ``result.attrs``.
        """
        if ("values", m.bins) not in self._tables:
            self._tables["values", m.bins], self._widths[m.bins] = value_table(self.frame, self.cols, m.key, m.bins)
        table, width = self._tables["values", m.bins], self._widths[m.bins]
        sample = value_sample(table, self.cols, m.inputs)
        res = m.evaluate_sample(sample)
        if width is not None:
            bound = binning_bounds(sample, width)[m.distance]
            approximation = (
                f"predictions binned into {m.bins} equal-width bins of width {width:.6g} (too many distinct values to "
                f"read exactly): the value is within {bound:.6g} of the exact one ({_BINNING_ERROR[m.distance]})"
            )
            res.attrs.update(binned=True, bins=m.bins, bin_width=width, error_bound=bound, approximation=approximation)
        return res

    def stats(self, kind: str, inputs: MeasureInputs, key: str = "the measure") -> ConfusionStats | ErrorStats:
        """The statistics for ``inputs``, small groups restricted as the core does (warning once per need)."""
        need = (kind, *_inputs_key(inputs))
        if need not in self._stats:
            # the core's order (``_protocol._validate``, then the labels when counted): the groups and the
            # small-group rule first, the labels and the positive class after, so an input with faults in
            # both raises the same error in every door
            plan = self.small_groups(kind, inputs, key)
            stats = local_stats(self.table(kind, inputs.threshold), self.cols, kind, inputs)
            self._stats[need] = stats if plan is None else plan.stats(stats)
        return self._stats[need]

    def small_groups(self, kind: str, inputs: MeasureInputs, key: str = "the measure") -> SmallGroupPlan | None:
        """The core's small-group decision on the groups' row counts, made (and warned) once per setting.

        Every statistic of one setting shares it, as the measures evaluated together in
        memory share one restricted sample.
        """
        if inputs.min_group_size is None:
            return None
        setting = (_hashable(inputs.groups), inputs.min_group_size, inputs.small_groups, inputs.needs_sensitive)
        if setting not in self._plans:
            sizes, groups = group_sizes(self.table(kind, inputs.threshold), self.cols, inputs)
            plan = small_group_plan(sizes, groups, inputs.min_group_size, inputs.small_groups, key)
            if plan is not None:
                plan.warn(stacklevel=4)  # the caller of evaluate_measures
            self._plans[setting] = plan
        return self._plans[setting]


def _hashable(value: Any) -> Any:
    """A key's part: an index as the tuple of its labels."""
    return tuple(value.tolist()) if isinstance(value, pd.Index) else value


def _inputs_key(inputs: MeasureInputs) -> tuple:
    """What an engine's statistics depend on: threshold, positive label, groups, classes, comparing or not."""
    fields = ("threshold", "pos_label", "groups", "min_group_size", "small_groups", "labels", "needs_sensitive")
    return tuple(_hashable(getattr(inputs, f)) for f in fields)


def _statistics_of(measure: Measure) -> tuple[str, ...]:
    """The statistics a measure reads, refusing one whose bases need the rows."""
    for base in measure.bases:
        if base.statistic is None:
            raise TypeError(_NEEDS_ROWS.format(key=measure.key, base=base.name))
    if not measure.bases:  # no base metric: a distribution distance, computed on the rows
        raise TypeError(_NO_BASES.format(key=measure.key))
    return tuple(k for k in _STATISTICS if k in {base.statistic for base in measure.bases})


def evaluate_measures(
    measures: MeasureBase | str | Sequence[MeasureBase | str],
    y_true: Any = None,
    y_pred: Any = None,
    *,
    sensitive_features: Any = None,
    sample_weight: Any = None,
    data: Any = None,
    stats: Stats | None = None,
) -> dict[str, MeasureResult]:
    """Evaluate several measures on arrays, on a frame of any engine, or on sufficient statistics.

    Parameters
    ----------
    measures : Measure, str or sequence of them
        Measures or registry keys; distinct measures need distinct keys.
    y_true, y_pred : array-like of shape (n_samples,), or column names of ``data``
        True labels (values) and predictions (scores for measures built with ``threshold=``).
    sensitive_features : array-like or DataFrame, or column name(s) of ``data``
        Group of each sample; several columns give intersectional groups.
    sample_weight : array-like, or a column name of ``data``, optional
    data : DataFrame of any supported engine, optional
        pandas, polars (eager or lazy), pyarrow Table, DuckDB relation, Dask or PySpark;
        ``y_true``, ``y_pred``, ``sensitive_features`` and ``sample_weight`` then name its
        columns (a pandas frame also takes arrays for ``y_pred`` and ``sample_weight``).
        Other engines compute the statistics where the data lives, one grouped pass per
        distinct need; only measures that read sufficient statistics run there.
    stats : ConfusionStats, ErrorStats or dict of them, optional
        Sufficient statistics instead of rows (e.g. from :func:`grouped_stats`).

    Returns
    -------
    dict of str to MeasureResult
        Keyed by measure key, in the order given, with per-group values and counts.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = sfm.evaluate_measures([sfm.msr("fairness.tpr"), "fairness.fpr"],
    ...                             [1, 1, 0, 0], [1, 0, 0, 1], sensitive_features=list("abab"))
    >>> {k: r.value for k, r in res.items()}
    {'fairness.tpr': 1.0, 'fairness.fpr': 1.0}
    >>> import polars as pl
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0], "yhat": [1, 0, 0, 0], "sex": list("FMFM")})
    >>> sfm.evaluate_measures(["fairness.tpr"], "y", "yhat", sensitive_features="sex", data=df.lazy())[
    ...     "fairness.tpr"].value
    1.0
    """
    ms = as_measures(measures)
    if stats is not None:
        if data is not None or y_true is not None or y_pred is not None:
            raise TypeError("stats= replaces the rows; pass either stats= or y_true, y_pred (and data=), not both.")
        return {m.key: m.evaluate_stats(stats) for m in ms}
    if data is None:
        return evaluate_together(ms, y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
    if sensitive_features is None:
        raise TypeError("sensitive_features= must name the sensitive column(s) of data.")
    if isinstance(data, pd.DataFrame) and not _in_engine(ms, y_true, y_pred, sample_weight):  # on its rows, in memory
        y_pred = data[y_pred] if isinstance(y_pred, str) else y_pred
        w = data[sample_weight] if isinstance(sample_weight, str) else sample_weight
        groups = resolve_sensitive(X=data, columns=sensitive_features)
        return evaluate_together(ms, data[y_true], y_pred, sensitive_features=groups, sample_weight=w)
    return _in_engine_pass(ms, data, y_true, y_pred, sensitive_features, sample_weight)


def compute_metrics(
    data: Any,
    target: str,
    prediction: str | Any,
    sensitive: str | Sequence[str],
    measures: MeasureBase | str | Sequence[MeasureBase | str],
    *,
    sample_weight: str | Any = None,
) -> pd.Series:
    """Compute measures on the predictions of any model, in a frame of any engine (mlr3fairness' ``compute_metrics``).

    The values of :func:`evaluate_measures` on ``data``, as a Series.

    Parameters
    ----------
    data : DataFrame of any supported engine
        pandas, polars (eager or lazy), pyarrow Table, DuckDB relation, Dask or PySpark;
        holds the target, the sensitive column(s) and, optionally, the predictions.
    target : str
        Column with the true labels (values).
    prediction : str or array-like
        Column with the predictions; a pandas frame also takes the predictions themselves.
    sensitive : str or list of str
        Sensitive column(s); several give intersectional groups.
    measures : Measure, str or sequence of them
        Measures or registry keys.
    sample_weight : str or array-like, optional
        Column of non-negative weights; a pandas frame also takes the weights themselves.

    Returns
    -------
    pandas.Series
        One value per measure, indexed by key.

    Examples
    --------
    >>> import duckdb, pandas as pd
    >>> import skfair_measures as sfm
    >>> pdf = pd.DataFrame({"y": [1, 1, 0, 0], "yhat": [1, 0, 0, 0], "sex": list("FMFM")})
    >>> sfm.compute_metrics(pdf, "y", "yhat", "sex", ["fairness.acc", "classif.acc"])
    fairness.acc    0.50
    classif.acc     0.75
    dtype: float64
    >>> sfm.compute_metrics(duckdb.from_df(pdf), "y", "yhat", "sex", ["fairness.acc", "classif.acc"])
    fairness.acc    0.50
    classif.acc     0.75
    dtype: float64
    """
    res = evaluate_measures(
        measures, target, prediction, sensitive_features=sensitive, sample_weight=sample_weight, data=data
    )
    return pd.Series({key: r.value for key, r in res.items()}, dtype=float)


def _in_engine(ms: Sequence[MeasureBase], *columns: Any) -> bool:
    """Whether a pandas frame takes the engine pass: every argument a column name, every measure on statistics."""
    named = all(c is None or isinstance(c, str) for c in columns)
    return named and all(isinstance(m, Measure) and m.bases and all(b.statistic for b in m.bases) for m in ms)


def _in_engine_pass(
    ms: Sequence[MeasureBase], data: Any, target: Any, prediction: Any, sensitive: Any, sample_weight: Any
) -> dict[str, MeasureResult]:
    """The statistics computed in the frame's engine, one grouped pass per distinct need."""
    # refuses row-based measures before any engine work; distribution distances read a (group, value) table
    # what each measure needs computed: its statistics, and what they depend on
    needs = {m.key: (_statistics_of(m), *_inputs_key(m.inputs)) for m in ms if not isinstance(m, DistributionParity)}
    engine = _Engine(data, check_columns(as_lazy(data), target, prediction, sensitive, sample_weight))
    local: dict[tuple, dict[str, ConfusionStats | ErrorStats]] = {}
    out, notes = {}, []
    for m in ms:
        if isinstance(m, DistributionParity):
            out[m.key] = engine.distribution(m)
            continue
        need = needs[m.key]
        if need not in local:
            local[need] = {kind: engine.stats(kind, m.inputs, m.key) for kind in need[0]}
        out[m.key] = m.evaluate_stats(local[need])
        notes.append(small_groups_note(m, local[need], out[m.key]))
    warn_small_groups(notes, stacklevel=3)
    return out


def grouped_stats(
    data: Any,
    target: str,
    prediction: str,
    sensitive: str | Sequence[str],
    *,
    sample_weight: str | None = None,
    statistic: str = "confusion",
    threshold: float | None = None,
    pos_label: Any = None,
    groups: Any = None,
) -> ConfusionStats | ErrorStats:
    """Sufficient statistics per group, computed in the data's engine in one pass.

    Parameters
    ----------
    data : DataFrame of any supported engine
    target, prediction : str
        Columns with the true labels (values) and the predictions (scores with ``threshold``).
    sensitive : str or list of str
        Sensitive column(s).
    sample_weight : str, optional
        Column of non-negative weights.
    statistic : {"confusion", "errors"}, default="confusion"
        Binary confusion counts ``(n_groups, 2, 2)`` or regression error sums ``(n_groups, 3)``.
    threshold : float, optional
        Predict the positive class where ``prediction >= threshold`` (computed in the engine).
    pos_label : optional
        The positive class of ``target`` (and of ``prediction`` without a threshold).
    groups : array-like, optional
        All groups to expect; absent ones keep zero counts.

    Returns
    -------
    ConfusionStats or ErrorStats
        Additive: statistics of several frames merge with ``+``; pass them to
        ``measure.evaluate_stats``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"y": ["no", "yes", "yes"], "score": [0.2, 0.9, 0.4], "g": ["a", "a", "b"]})
    >>> s = grouped_stats(t, "y", "score", "g", threshold=0.5, pos_label="yes")
    >>> s.counts.tolist()
    [[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [1.0, 0.0]]]
    """
    if statistic not in _STATISTICS:
        raise ValueError(f"statistic={statistic!r}; pass 'confusion' or 'errors'.")
    if statistic == "errors" and (threshold is not None or pos_label is not None):
        raise ValueError("threshold= and pos_label= apply to statistic='confusion', not to regression errors.")
    inputs = MeasureInputs(threshold=threshold, pos_label=pos_label).replace(groups=groups)
    engine = _Engine(data, check_columns(as_lazy(data), target, prediction, sensitive, sample_weight))
    return engine.stats(statistic, inputs)
