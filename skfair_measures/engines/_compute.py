"""Measures on a data frame of any engine: one grouped pass per distinct need, measures run locally.

A measure needs confusion counts or error sums (``base.statistic``), for its threshold
and positive label (``measure.inputs``). The engine pass depends only on the statistic
and the threshold (``score >= threshold`` is computed in the engine); the positive label
the declared groups and ``min_group_size`` are applied locally to the small table
(small groups left out or merged by the core's own rule, on the groups' row counts). So measures are
grouped by what the engine must compute, each group costs one pass, and every measure
then evaluates on the statistics with ``measure.evaluate_stats``, exactly as on rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw
import pandas as pd

from .._stats import ConfusionStats, ErrorStats, SmallGroupPlan, small_group_plan
from ..measures import Measure, MeasureInputs, MeasureResult, as_measures
from . import _native
from ._aggregate import confusion_stats, confusion_table, error_stats, error_table, group_sizes
from ._frames import Columns, as_lazy, check_columns

__all__ = ["compute_metrics", "evaluate_measures", "grouped_stats"]

_NEEDS_ROWS = (
    "{key} cannot be computed in the engine: its base metric {base!r} needs the rows, not sufficient "
    "statistics. Collect the columns to pandas first (e.g. data.toPandas(), data.compute(), "
    "data.collect()) and call skfair_measures.compute_metrics on the pandas DataFrame."
)
_STATISTICS = ("confusion", "errors")


def _engine_table(data: Any, frame: nw.LazyFrame, cols: Columns, kind: str, threshold: float | None) -> pd.DataFrame:
    """One pass of the engine; hand-written numpy for pandas and Dask (see ``_native``), narwhals otherwise."""
    impl = frame.implementation
    if impl is nw.Implementation.PANDAS and isinstance(data, pd.DataFrame):
        return _native.pandas_table(data, cols, kind, threshold)
    if impl is nw.Implementation.DASK:
        return _native.dask_table(nw.to_native(frame), cols, kind, threshold)
    if kind == "errors":
        return error_table(frame, cols)
    return confusion_table(frame, cols, threshold)


class _Engine:
    """The engine passes of one call, each run at most once (cached by what it computes)."""

    def __init__(self, data: Any, cols: Columns) -> None:
        self.data, self.frame, self.cols = data, as_lazy(data), cols
        self._tables: dict[tuple, pd.DataFrame] = {}
        self._stats: dict[tuple, ConfusionStats | ErrorStats] = {}
        self._plans: dict[tuple, SmallGroupPlan | None] = {}
        self.passes = 0

    def table(self, kind: str, threshold: float | None) -> pd.DataFrame:
        key = (kind, None if kind == "errors" else threshold)
        if key not in self._tables:
            self._tables[key] = _engine_table(self.data, self.frame, self.cols, kind, key[1])
            self.passes += 1
        return self._tables[key]

    def stats(self, kind: str, inputs: MeasureInputs, key: str = "the measure") -> ConfusionStats | ErrorStats:
        """The statistics for ``inputs``, small groups restricted as the core does (warning once per need)."""
        need = (kind, inputs.threshold, inputs.pos_label, _groups_key(inputs), inputs.min_group_size,
                inputs.small_groups)
        if need not in self._stats:
            table = self.table(kind, inputs.threshold)
            if kind == "errors":
                stats = error_stats(table, self.cols, groups=inputs.groups)
            else:
                stats = confusion_stats(
                    table, self.cols, pos_label=inputs.pos_label, thresholded=inputs.threshold is not None,
                    groups=inputs.groups,
                )
            plan = self.small_groups(kind, inputs, key)
            self._stats[need] = stats if plan is None else plan.stats(stats)
        return self._stats[need]

    def small_groups(self, kind: str, inputs: MeasureInputs, key: str = "the measure") -> SmallGroupPlan | None:
        """The core's small-group decision on the groups' row counts, made (and warned) once per setting.

        Every statistic of one setting shares it, as the measures evaluated together in
        memory share one restricted sample.
        """
        if inputs.min_group_size is None:
            return None
        setting = (_groups_key(inputs), inputs.min_group_size, inputs.small_groups)
        if setting not in self._plans:
            table = self.table(kind, None if kind == "errors" else inputs.threshold)
            sizes, groups = group_sizes(table, self.cols, inputs.groups)
            plan = small_group_plan(sizes, groups, inputs.min_group_size, inputs.small_groups, key)
            if plan is not None:
                plan.warn(stacklevel=4)  # the caller of evaluate_measures
            self._plans[setting] = plan
        return self._plans[setting]


def _groups_key(inputs: MeasureInputs) -> tuple | None:
    return None if inputs.groups is None else tuple(inputs.groups.tolist())


def _statistics_of(measure: Measure) -> tuple[str, ...]:
    """The statistics a measure reads, refusing one whose bases need the rows."""
    kinds = []
    for base in measure.bases:
        if base.statistic is None:
            raise TypeError(_NEEDS_ROWS.format(key=measure.key, base=base.name))
        kinds.append(base.statistic)
    return tuple(k for k in _STATISTICS if k in kinds)


def _need(measure: Measure) -> tuple:
    """What a measure needs computed: its statistics, threshold, positive label, declared and small groups."""
    inputs = measure.inputs
    return (_statistics_of(measure), inputs.threshold, inputs.pos_label, _groups_key(inputs),
            inputs.min_group_size, inputs.small_groups)


def evaluate_measures(
    data: Any,
    target: str,
    prediction: str,
    sensitive: str | Sequence[str],
    measures: Measure | str | Sequence[Measure | str],
    *,
    sample_weight: str | None = None,
) -> dict[str, MeasureResult]:
    """Evaluate measures on a data frame, computing the statistics in its engine.

    Parameters
    ----------
    data : DataFrame of any supported engine
        pandas, polars (eager or lazy), pyarrow Table, DuckDB relation, Dask or PySpark.
    target, prediction : str
        Columns with the true labels and the predictions (scores for measures built
        with ``threshold=``).
    sensitive : str or list of str
        Sensitive column(s); several give intersectional groups.
    measures : Measure, str or sequence of them
        Measures or registry keys; they must be computable from sufficient statistics.
    sample_weight : str, optional
        Column of non-negative weights.

    Returns
    -------
    dict of str to MeasureResult
        Keyed by measure key, with per-group values and counts.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0], "yhat": [1, 0, 0, 0], "sex": list("FMFM")})
    >>> res = evaluate_measures(df.lazy(), "y", "yhat", "sex", ["fairness.tpr"])
    >>> res["fairness.tpr"].value
    1.0
    """
    ms = as_measures(measures)
    needs = {m.key: _need(m) for m in ms}  # refuses row-based measures before any engine work
    engine = _Engine(data, check_columns(as_lazy(data), target, prediction, sensitive, sample_weight))
    local: dict[tuple, dict[str, ConfusionStats | ErrorStats]] = {}
    out = {}
    for m in ms:
        need = needs[m.key]
        if need not in local:
            local[need] = {kind: engine.stats(kind, m.inputs, m.key) for kind in need[0]}
        out[m.key] = m.evaluate_stats(local[need])
    return out


def compute_metrics(
    data: Any,
    target: str,
    prediction: str,
    sensitive: str | Sequence[str],
    measures: Measure | str | Sequence[Measure | str],
    *,
    sample_weight: str | None = None,
) -> pd.Series:
    """Compute measures on a data frame of any engine, where the data lives.

    The same signature and output as :func:`skfair_measures.scoring.compute_metrics`;
    the engine runs one grouped aggregation per distinct need (confusion counts per
    threshold, error sums), and only the small tables come back.

    Parameters
    ----------
    data : DataFrame of any supported engine
        pandas, polars (eager or lazy), pyarrow Table, DuckDB relation, Dask or PySpark.
    target, prediction : str
        Columns with the true labels and the predictions.
    sensitive : str or list of str
        Sensitive column(s); several give intersectional groups.
    measures : Measure, str or sequence of them
        Measures or registry keys.
    sample_weight : str, optional
        Column of non-negative weights.

    Returns
    -------
    pandas.Series
        One value per measure, indexed by key.

    Examples
    --------
    >>> import duckdb, pandas as pd
    >>> pdf = pd.DataFrame({"y": [1, 1, 0, 0], "yhat": [1, 0, 0, 0], "sex": list("FMFM")})
    >>> rel = duckdb.from_df(pdf)
    >>> compute_metrics(rel, "y", "yhat", "sex", ["fairness.acc", "classif.acc"])
    fairness.acc    0.50
    classif.acc     0.75
    dtype: float64
    """
    res = evaluate_measures(data, target, prediction, sensitive, measures, sample_weight=sample_weight)
    return pd.Series({key: r.value for key, r in res.items()}, dtype=float)


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
    inputs = MeasureInputs(threshold=threshold, pos_label=pos_label).replace(
        groups=None if groups is None else pd.Index(groups)
    )
    engine = _Engine(data, check_columns(as_lazy(data), target, prediction, sensitive, sample_weight))
    return engine.stats(statistic, inputs)
