"""The one grouped aggregation an engine runs, and its small result turned into statistics.

A classification pass groups the rows by (sensitive columns..., y_true, y_pred) and
returns, per cell, the row count and the summed weight: a table with at most
``n_groups * 4`` rows for binary labels, whatever the number of rows. A regression pass
groups by the sensitive columns and returns the summed weight, the weighted sum of
absolute errors and of squared errors. Both also count the rows that would make a
number wrong (missing or negative weights, scores outside [0, 1], missing or infinite
errors), so that bad data is refused with the column named instead of being summed.

Locally the small table becomes a :class:`~skfair_measures.ConfusionStats` or an
:class:`~skfair_measures.ErrorStats` through the core's own label and group
encoding (``binarize_labels``, ``encode_groups``), so an engine and an in-memory call on
the same rows give the same counts.
"""

from __future__ import annotations

import dataclasses

import narwhals as nw
import numpy as np
import pandas as pd

from .._counts import ConfusionStats, ErrorStats
from .._groups import encode_groups
from .._labels import binarize_labels, check_labels
from .._stats import GroupedSample
from ..measures import MeasureInputs
from ._frames import Columns, collect, engine_name

__all__ = [
    "check_types",
    "confusion_table",
    "error_table",
    "local_stats",
    "group_sizes",
    "binning_bounds",
    "value_sample",
    "value_table",
]

# Internal column names inside the engine; the user's names are restored locally.
_T, _P, _W = "__sfm_y_true", "__sfm_y_pred", "__sfm_weight"
_BAD_W, _BAD_SCORE, _BAD_ERR = "__sfm_bad_weight", "__sfm_bad_score", "__sfm_bad_error"
_N, _SUM_W, _SUM_AE, _SUM_SE = "n_rows", "weight", "sum_abs_error", "sum_sq_error"
_SUM_W2 = "sum_sq_weight"

#: Most distinct predictions a distribution distance reads from an engine: a (group, value) table of at most
#: groups x this many rows, collected locally.
MAX_VALUES = 10_000
_TOO_MANY_VALUES = (
    "{key} compares the groups' distributions of prediction={column!r}, which holds {n:,} distinct values; "
    "the engine returns one row per (group, value), so at most {limit:,} distinct values are read exactly. "
    "Pass bins= to the measure (e.g. msr({key!r}, bins=1000)): the engine then returns the mass per (group, "
    "equal-width bin) and the result states its error bound (result.attrs); or bin the scores in the engine "
    "first, e.g. round them to 3 decimals (polars: pl.col({column!r}).round(3); SQL/Spark: round({column}, 3)), "
    "for distances exact on the rounded scores; or collect the columns to pandas."
)
_NOT_NUMERIC = "{argument}={column!r} has dtype {dtype}; {why}, so it must be numeric."
_BAD_ROWS = "{argument}={column!r} has {n} row(s) that are {what}; {fix}"
_ENGINE_FAILED = (
    "the {engine} engine failed while aggregating target={target!r}, prediction={prediction!r}, "
    "sensitive={sensitive}, sample_weight={weight!r}: {error}"
)


#: Why a ``kind`` pass needs a numeric prediction (and, for errors, target); weights are always summed.
_WHY_NUMERIC = {
    "confusion": "a threshold is applied to its scores",
    "errors": "a regression measure subtracts it",
    "scores": "posteriors read its scores",
    "values": "distribution distances compare its values",
}


def check_types(frame: nw.LazyFrame, cols: Columns, kind: str, threshold: float | None = None) -> None:
    """Refuse, naming the argument, a non-numeric column that a ``kind`` pass computes with.

    The prediction of a confusion pass is numeric only with a ``threshold`` (else it holds labels).
    """
    named = [("target", _WHY_NUMERIC[kind])] if kind == "errors" else []
    named += [("prediction", _WHY_NUMERIC[kind])] if kind != "confusion" or threshold is not None else []
    schema = frame.collect_schema()
    for argument, why in [*named, ("sample_weight", "weights are summed")]:
        column = getattr(cols, argument)
        if column is not None and not schema[column].is_numeric():
            raise TypeError(_NOT_NUMERIC.format(argument=argument, column=column, dtype=schema[column], why=why))


def _weight_columns(cols: Columns) -> list[nw.Expr]:
    """The weight (1 when unweighted) and a 0/1 flag for a missing, negative or infinite weight."""
    if cols.sample_weight is None:
        return [nw.lit(1.0).alias(_W), nw.lit(0).alias(_BAD_W)]
    w = nw.col(cols.sample_weight).cast(nw.Float64)
    bad = (~(w.is_finite() & (w >= 0))).fill_null(True)
    return [w.fill_null(0.0).alias(_W), bad.cast(nw.Int64).alias(_BAD_W)]


def engine_failure(engine: str, cols: Columns, exc: BaseException) -> RuntimeError:
    """An engine's error (any type) as one error naming the engine and the columns it read."""
    columns = {"target": cols.target, "prediction": cols.prediction, "sensitive": list(cols.sensitive)}
    error = f"{type(exc).__name__}: {exc}"
    return RuntimeError(_ENGINE_FAILED.format(engine=engine, **columns, weight=cols.sample_weight, error=error))


def needed_columns(cols: Columns) -> list[str]:
    """The columns a pass reads, each once: sensitive, target, prediction, weight."""
    return list(dict.fromkeys([*cols.sensitive, cols.target, cols.prediction, *filter(None, [cols.sample_weight])]))


def _run(query: nw.LazyFrame, frame: nw.LazyFrame, cols: Columns) -> pd.DataFrame:
    """Collect ``query``; an engine error is re-raised naming the columns it read."""
    try:
        return collect(query)
    except Exception as exc:  # any engine's error type: re-raised with the columns named
        raise engine_failure(engine_name(frame), cols, exc) from exc


def grouped_pass(
    frame: nw.LazyFrame, cols: Columns, select: list, keys: list[str], aggs: list, derived: list | tuple = ()
) -> pd.DataFrame:
    """The engine's one grouped query: per (sensitive..., ``keys``) the row count and ``aggs``, collected.

    ``select`` adds columns beside the sensitive ones (under internal names) and the weight
    columns, ``derived`` columns computed from those; the user's names of the sensitive
    columns are restored on the small table.
    """
    sens = [f"__sfm_s{i}" for i in range(len(cols.sensitive))]
    renamed = [nw.col(c).alias(s) for c, s in zip(cols.sensitive, sens, strict=True)]
    query = frame.select(*renamed, *select, *_weight_columns(cols))
    query = query.with_columns(*derived) if derived else query
    query = query.group_by(*sens, *keys, drop_null_keys=False).agg(nw.len().alias(_N), *aggs)
    return _run(query, frame, cols).rename(columns=dict(zip(sens, cols.sensitive, strict=True)))


def confusion_table(
    frame: nw.LazyFrame, cols: Columns, threshold: float | None = None, squares: bool = False
) -> pd.DataFrame:
    """Run one grouped count in the engine: a row per (group, y_true, y_pred) cell.

    With ``threshold``, the prediction column holds scores and the predicted label
    ``score >= threshold`` is computed in the engine. With ``squares``, also the sum of
    the squared weights per cell (the weighted Poisson bootstrap's second moment). The
    column types are checked by the caller (:func:`check_types`), as for :func:`error_table`.

    Returns
    -------
    pandas.DataFrame
        The sensitive columns (user's names), ``y_true``, ``y_pred``, ``n_rows``,
        ``weight`` (and ``sum_sq_weight``) and the counts of bad weights and scores per cell.
    """
    pred, bad_score = nw.col(cols.prediction), nw.lit(0)
    if threshold is not None:
        bad_score = (~pred.is_between(0.0, 1.0)).fill_null(True).cast(nw.Int64)
        pred = pred >= threshold
    select = [nw.col(cols.target).alias(_T), pred.alias(_P), bad_score.alias(_BAD_SCORE)]
    w = nw.col(_W)
    aggs = [w.sum().alias(_SUM_W), nw.col(_BAD_W).sum(), nw.col(_BAD_SCORE).sum()]
    return grouped_pass(frame, cols, select, [_T, _P], aggs + ([(w * w).sum().alias(_SUM_W2)] if squares else []))


def error_table(frame: nw.LazyFrame, cols: Columns) -> pd.DataFrame:
    """Run one grouped sum in the engine: per group the weight and the error sums (``y_pred - y_true``)."""
    err = nw.col(cols.prediction).cast(nw.Float64) - nw.col(cols.target).cast(nw.Float64)
    e, w = nw.col("__sfm_e"), nw.col(_W)
    derived = [(w * e.abs()).alias("__sfm_ae"), (w * e * e).alias("__sfm_se")]
    derived.append((~e.is_finite()).fill_null(True).cast(nw.Int64).alias(_BAD_ERR))
    sums = [nw.col("__sfm_ae").sum().alias(_SUM_AE), nw.col("__sfm_se").sum().alias(_SUM_SE)]
    aggs = [w.sum().alias(_SUM_W), *sums, nw.col(_BAD_W).sum(), nw.col(_BAD_ERR).sum()]
    return grouped_pass(frame, cols, [err.alias("__sfm_e")], [], aggs, derived)


def value_table(
    frame: nw.LazyFrame, cols: Columns, key: str = "the measure", bins: int | None = None
) -> tuple[pd.DataFrame, float | None]:
    """The rows and summed weight of every (group, prediction value), from the engine, and the bin width.

    Two passes: the number of distinct predictions and their range (so that a
    continuous column is binned, or refused, before a table as large as the data is
    collected), then the grouped sum. The rows of one value of one group are
    interchangeable for a distribution function, so up to ``MAX_VALUES`` distinct
    values the table gives the distances exactly (bin width None). Above, with
    ``bins``, each prediction is replaced by the centre of its equal-width bin over
    the observed range (width returned); without, the call is refused.
    """
    check_types(frame, cols, "values")
    pred = nw.col(cols.prediction).cast(nw.Float64)
    summary = _run(frame.select(pred.n_unique().alias(_N), pred.min().alias("lo"), pred.max().alias("hi")), frame, cols)
    n_values, width = int(summary[_N].iloc[0]), None
    if n_values > MAX_VALUES:
        if bins is None:
            raise ValueError(_TOO_MANY_VALUES.format(key=key, column=cols.prediction, n=n_values, limit=MAX_VALUES))
        lo, hi = float(summary["lo"].iloc[0]), float(summary["hi"].iloc[0])
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"prediction={cols.prediction!r} holds infinite values; {key} cannot bin them.")
        width = (hi - lo) / bins
        at = ((pred - lo) / width).floor().clip(0, bins - 1)  # the largest value closes the last bin
        pred = at * width + (lo + width / 2)
    aggs = [nw.col(_W).sum().alias(_SUM_W), nw.col(_BAD_W).sum()]
    return grouped_pass(frame, cols, [pred.alias(_P)], [_P], aggs), width


def binning_bounds(sample: GroupedSample, width: float) -> dict[str, float]:
    """How far the distances of a binned (group, bin centre) sample can be from those of the rows.

    Each value moved to its bin's centre: both groups' distribution functions are exact
    at the bin edges, and within a bin a group's function rises by at most its share of
    mass there, so the Kolmogorov-Smirnov distance of the binned sample is at most the
    true one and at least the true one minus the largest share of one group's mass in one
    bin. Each row moves by at most ``width / 2``, so each group's distribution moves by
    at most the sum over bins of its share times ``width / 2`` (1-Wasserstein), and a
    distance between two groups by at most the sum of both: ``width``.
    """
    totals = np.bincount(sample.group_codes, weights=sample.sample_weight, minlength=sample.n_groups)
    of_row = totals[sample.group_codes]
    share = np.divide(sample.sample_weight, of_row, out=np.zeros(of_row.size), where=of_row > 0)
    return {"ks": float(share.max(initial=0.0)), "wasserstein": float(width)}


def value_sample(table: pd.DataFrame, cols: Columns, inputs: MeasureInputs) -> GroupedSample:
    """A :func:`value_table` as the core's sample: one row per (group, value), weighing its summed weight.

    Distribution distances fold rows into weighted (group, value) atoms, so this sample
    gives the same distances as the rows themselves; a weighted sample keeps the rows
    of each group, so a group whose weights are all 0 is told apart from an absent one.
    """
    codes, index, weights = _checked(table, cols, inputs)
    values = table[_P].to_numpy(dtype=float)
    sample = GroupedSample(np.zeros(values.size), values, codes, index, weights)
    sample._cache["sizes"] = _row_counts(table, codes, index).astype(np.int64)
    return sample


_NO_GROUP = (
    "a missing group cannot be compared. Drop those rows, or encode them as an explicit group such as 'unknown'."
)
#: The engine's counts of rows that would make a number wrong: (flag column, argument, what they are, the fix).
_BAD_FLAGS = (
    (_BAD_W, "sample_weight", "missing, negative or not finite", "weights must be finite and non-negative."),
    (
        _BAD_SCORE,
        "prediction",
        "missing or outside [0, 1]",
        "with threshold= the prediction column must hold probabilities of the positive class.",
    ),
    (
        _BAD_ERR,
        "prediction",
        "missing or infinite in target or prediction (their difference is not finite)",
        "drop or impute those rows before computing a regression measure.",
    ),
)


def _refuse_bad_rows(table: pd.DataFrame, cols: Columns) -> None:
    """Raise, naming the column, if the engine counted rows that would make a number wrong."""

    def missing(column: str) -> int:  # rows whose key column is null in the small table
        return int(table.loc[table[column].isna(), _N].sum()) if column in table else 0

    null, fix = "missing (null/NaN)", "drop or impute those rows before computing a measure."
    found = [(missing(c), "sensitive", c, null, _NO_GROUP) for c in cols.sensitive]
    for flag, argument, what, why in _BAD_FLAGS:  # flagged rows, counted by the engine
        found.append((int(table[flag].sum()) if flag in table else 0, argument, getattr(cols, argument), what, why))
    found += [(missing(_T), "target", cols.target, null, fix), (missing(_P), "prediction", cols.prediction, null, fix)]
    for n, argument, column, what, why in found:
        if n > 0:
            raise ValueError(_BAD_ROWS.format(argument=argument, column=column, n=n, what=what, fix=why))


def _group_codes(
    table: pd.DataFrame, cols: Columns, groups: pd.Index | None, compare: bool = True
) -> tuple[np.ndarray, pd.Index]:
    """The core's group encoding applied to the small table's sensitive columns."""
    names = list(cols.sensitive)
    values = table[names[0]] if len(names) == 1 else table[names]
    samples = int(table[_N].sum())  # each row of the table is a cell of n_rows samples
    return encode_groups(values, groups=groups, name="sensitive", compare=compare, samples=samples)


def _checked(table: pd.DataFrame, cols: Columns, inputs: MeasureInputs) -> tuple[np.ndarray, pd.Index, np.ndarray]:
    """A table's rows refused if bad, then its group codes, groups and weight per row (summed weight, or rows)."""
    _refuse_bad_rows(table, cols)
    codes, index = _group_codes(table, cols, inputs.groups, inputs.needs_sensitive)
    return codes, index, table[_SUM_W if cols.sample_weight is not None else _N].to_numpy(dtype=float)


def local_stats(table: pd.DataFrame, cols: Columns, kind: str, inputs: MeasureInputs) -> ConfusionStats | ErrorStats:
    """Turn a :func:`confusion_table` or :func:`error_table` into statistics for ``inputs``.

    Confusion counts per group (K x K for K classes) or error sums per group (n, sum |e|,
    sum e^2), by the core's label rules: ``inputs.pos_label`` (with ``inputs.threshold``,
    ``y_pred`` holds ``score >= threshold`` and True is the positive class), the groups to
    expect (``inputs.groups``), the classes (``inputs.labels``; by default those in the
    table), and whether the groups are compared (``inputs.needs_sensitive``: at least two
    then, as ``check_inputs(compare_groups=)``).
    """
    codes, index, weights = _checked(table, cols, inputs)  # the groups before the labels, as in the core
    rows = None if cols.sample_weight is None else _row_counts(table, codes, index)  # unweighted: counts are rows
    if kind == "errors":
        parts = [weights, table[_SUM_AE].to_numpy(dtype=float), table[_SUM_SE].to_numpy(dtype=float)]
        sums = np.stack([np.bincount(codes, weights=v, minlength=len(index)) for v in parts], axis=-1)
        return ErrorStats(sums, index, rows=rows)
    y_true, y_pred, pos_label, labels = table[_T].to_numpy(), table[_P].to_numpy(), inputs.pos_label, inputs.labels
    if inputs.threshold is not None:  # as the core: y_true binarised, the prediction is score >= threshold
        y_true, _, _ = binarize_labels(y_true, y_true, pos_label)
        y_pred, pos_label, labels = y_pred.astype(np.intp), None, None
    # Each row of the small table is one (group, y_true, y_pred) cell weighing its summed weight, so the
    # core's own sample of those rows gives the same counts, with the same label rules (binary, K classes,
    # one class against the rest with pos_label) as rows in memory; a weighted record keeps the rows of
    # each group (the count column), as in memory, so a group whose weights are all 0 is told apart.
    stats = GroupedSample(y_true, y_pred, codes, index, weights, check_labels(labels)).confusion(pos_label)
    return dataclasses.replace(stats, rows=rows)


def _row_counts(table: pd.DataFrame, codes: np.ndarray, index: pd.Index) -> np.ndarray:
    """Rows (not weights) per group of a small table, its rows' group codes ``codes``."""
    return np.bincount(codes, weights=table[_N].to_numpy(dtype=float), minlength=len(index))


def group_sizes(table: pd.DataFrame, cols: Columns, inputs: MeasureInputs) -> tuple[np.ndarray, pd.Index]:
    """Rows (not weights) of each group of a small table, and the groups (those of its statistics)."""
    codes, index = _group_codes(table, cols, inputs.groups, inputs.needs_sensitive)
    return _row_counts(table, codes, index).astype(np.int64), index
