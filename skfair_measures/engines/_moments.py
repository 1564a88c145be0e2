"""One engine pass for the posteriors: per (group, label or none, prediction) the moments of the scores.

``bayes.posterior(..., data=frame)`` reads a frame whose label column is missing on
the unlabeled rows. Beta-Binomial needs the labeled confusion counts; PPI needs, per
group, the weighted sums and sums of squares of the rows' contributions (observed
cells on labeled rows, imputed cells ``s`` / ``1 - s`` on all rows). Every
contribution is a constant plus the score ``s`` times a constant within one cell
``(group, y_true, score >= threshold)``, with ``y_true`` null on the unlabeled rows,
so per cell five sums give every such moment exactly:

``n_rows``, ``weight`` = sum w, ``sum_w_score`` = sum w s, ``sum_w2`` = sum w^2,
``sum_w2_score`` = sum w^2 s, ``sum_w2_score2`` = sum w^2 s^2 (w = 1 unweighted).

The table has at most ``n_groups * 6`` rows. pandas and Dask run it on numpy per
partition (:mod:`._native`'s flat cell index); the other engines through narwhals.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import narwhals as nw
import numpy as np
import pandas as pd

from .._stats import _COMPILED_ROWS, _compiled_kernel
from . import _native
from ._aggregate import (
    _BAD_SCORE,
    _BAD_W,
    _N,
    _P,
    _SUM_W,
    _T,
    _W,
    _run,
    check_types,
    grouped_pass,
    needed_columns,
)
from ._frames import Columns, as_lazy

__all__ = ["BIN", "SCORE_SUMS", "SPLIT", "SUM_SCORE", "score_histogram", "score_table"]

_WS, _W2, _W2S, _W2S2 = "sum_w_score", "sum_w2", "sum_w2_score", "sum_w2_score2"
#: Columns of :func:`score_histogram`: the score bin, whether the score is at or beyond a split point, sum of scores.
BIN, SPLIT, SUM_SCORE = "__sfm_bin", "__sfm_split", "sum_score"
#: The summed columns of :func:`score_table`, besides ``n_rows``.
SCORE_SUMS = (_SUM_W, _WS, _W2, _W2S, _W2S2)


def score_table(data: Any, cols: Columns, threshold: float) -> pd.DataFrame:
    """Run the pass: a row per (sensitive..., y_true or null, score >= threshold) cell with its sums.

    Parameters
    ----------
    data : DataFrame of any supported engine
    cols : Columns
        ``prediction`` names the scores (probabilities of the positive class),
        ``target`` the labels (null on unlabeled rows).
    threshold : float
        The predicted label is ``score >= threshold``, computed in the engine.

    Returns
    -------
    pandas.DataFrame
        The sensitive columns (user's names), ``__sfm_y_true`` (null for unlabeled
        rows), ``__sfm_y_pred``, ``n_rows``, the sums of :data:`SCORE_SUMS` and the
        counts of bad weights and scores per cell.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"y": [1, None, 0], "s": [0.9, 0.8, 0.2], "g": ["a", "a", "b"]})
    >>> t = score_table(df, Columns("y", "s", ("g",)), 0.5)
    >>> t.sort_values("g")[["g", "n_rows", "sum_w_score"]].to_numpy().tolist()
    [['a', 1, 0.9], ['a', 1, 0.8], ['b', 1, 0.2]]
    """
    frame = as_lazy(data)
    check_types(frame, cols, "scores")
    # on Dask a table per partition (the user's scheduler), summed locally
    table = _native.on_rows(frame, cols, lambda part, _: _partition(part, cols, threshold), [*cols.sensitive, _T, _P])
    return _narwhals(frame, cols, threshold) if table is None else table


def _narwhals(frame: nw.LazyFrame, cols: Columns, threshold: float) -> pd.DataFrame:
    s, bad = _scores(cols)
    select = [nw.col(cols.target).alias(_T), (s >= threshold).alias(_P), s.alias("__sfm_s"), bad.alias(_BAD_SCORE)]
    w, s = nw.col(_W), nw.col("__sfm_s")
    sums = dict(zip(SCORE_SUMS, (w, w * s, w * w, w * w * s, w * w * s * s), strict=True))
    aggs = [v.sum().alias(name) for name, v in sums.items()] + [nw.col(_BAD_W).sum(), nw.col(_BAD_SCORE).sum()]
    return grouped_pass(frame, cols, select, [_T, _P], aggs)


def _scores(cols: Columns) -> tuple[nw.Expr, nw.Expr]:
    """The scores, 0 where missing or outside [0, 1], and a 0/1 flag of those rows (refused downstream)."""
    s = nw.col(cols.prediction).cast(nw.Float64)
    bad = (~s.is_between(0.0, 1.0)).fill_null(True)
    return nw.when(bad).then(nw.lit(0.0)).otherwise(s), bad.cast(nw.Int64)


def _np_scores(pdf: pd.DataFrame, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`_scores`, on numpy: the scores (0 where bad) and the mask of bad ones."""
    s = pdf[cols.prediction].to_numpy(dtype=float, na_value=np.nan)
    bad = ~((s >= 0) & (s <= 1))
    return np.where(bad, 0.0, s), bad


def _partition(pdf: pd.DataFrame, cols: Columns, threshold: float) -> pd.DataFrame:
    """The table of one pandas frame, on numpy: one compiled pass when it can, else a bincount per sum.

    The compiled pass (:func:`skfair_measures._count_kernel.score_moments`, large frames,
    numba installed) reads the flat (group, label) cell and the scores once and forms
    ``score >= threshold`` and every sum as it goes; the NumPy path builds a flat cell
    index over (group, label, prediction) and runs one ``np.bincount`` per sum. Both add
    the same terms in row order: the same table.
    """
    kernel = _compiled_kernel() if len(pdf) >= _COMPILED_ROWS else None
    if kernel is not None:
        return _compiled(kernel, pdf, cols, threshold)
    s, bad = _np_scores(pdf, cols)
    w, bad_w = _native._weights(pdf, cols)
    s2, w2 = s * s, None if w is None else w * w
    # w = 1: sum w = sum w^2 = n_rows, sum w^2 s = sum w s (filled in below)
    sums = {_WS: s, _W2S2: s2} if w is None else {_SUM_W: w, _WS: w * s, _W2: w2, _W2S: w2 * s, _W2S2: w2 * s2}
    keys = [pdf[c] for c in cols.sensitive] + [pdf[cols.target], pd.Series(s >= threshold, index=pdf.index)]
    table = _native._grouped(keys, [*cols.sensitive, _T, _P], sums, {_BAD_W: bad_w, _BAD_SCORE: bad})
    if w is None:
        table[_W2], table[_W2S] = table[_N].astype(float), table[_WS]
    return table[[*cols.sensitive, _T, _P, _N, *SCORE_SUMS, _BAD_W, _BAD_SCORE]]


def _floats(values: pd.Series) -> np.ndarray:
    """A numeric column as a numpy array the kernel reads (float or integer; missing values NaN)."""
    arr = values.to_numpy()
    if isinstance(arr, np.ndarray) and arr.dtype.kind in "fiu" and arr.dtype.isnative:
        return arr
    return values.to_numpy(dtype=float, na_value=np.nan)


def _compiled(kernel: Any, pdf: pd.DataFrame, cols: Columns, threshold: float) -> pd.DataFrame:
    keys = [pdf[c] for c in cols.sensitive] + [pdf[cols.target]]
    cell, size, values = _native._flat_cells(keys, [*cols.sensitive, _T])
    w = np.zeros(0) if cols.sample_weight is None else _floats(pdf[cols.sample_weight])
    out = np.zeros((2 * size, 8))
    kernel.score_moments(cell, _floats(pdf[cols.prediction]), float(threshold), w, out)
    seen = np.flatnonzero(out[:, 0])
    table = values.iloc[seen // 2].reset_index(drop=True)
    table[_P] = seen % 2 == 1
    for j, name in enumerate((_N, *SCORE_SUMS, _BAD_W, _BAD_SCORE)):
        table[name] = out[seen, j].astype(np.int64) if name in (_N, _BAD_W, _BAD_SCORE) else out[seen, j]
    return table


# -- labeled rows and the unlabeled rows' score histogram --------------------------------


def score_histogram(
    data: Any, cols: Columns, threshold: float, bins: int, split: tuple[float, float]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The labeled rows, collected, and per (group, prediction, score bin) the unlabeled rows' counts and sums.

    For the methods that read every labeled row (a calibration model, betting
    intervals) while the unlabeled rows stay in the engine. A row is unlabeled when its
    ``target`` is missing (null, or NaN in a float column).

    Parameters
    ----------
    data : DataFrame of any supported engine
    cols : Columns
    threshold : float
        The predicted label is ``score >= threshold``.
    bins : int
        Equal-width score bins on [0, 1]: bin ``min(floor(score * bins), bins - 1)``.
    split : (float, float)
        A score at or below ``split[0]`` or at or above ``split[1]`` is kept apart from the
        other scores of its bin (column :data:`SPLIT`), so that a bin's mean score lies on
        the same side of those points as each of its scores (the calibration's clipping
        bounds).

    Returns
    -------
    labeled : pandas.DataFrame
        The labeled rows' sensitive, target, prediction (and weight) columns, user's names.
    histogram : pandas.DataFrame
        The sensitive columns (user's names), ``__sfm_y_pred``, :data:`BIN`, :data:`SPLIT`,
        ``n_rows``, ``weight`` (sum of weights, or rows), :data:`SUM_SCORE` and the counts
        of bad weights and scores.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"y": [1, None, None], "s": [0.9, 0.8, 0.805], "g": ["a", "a", "a"]})
    >>> lab, hist = score_histogram(df, Columns("y", "s", ("g",)), 0.5, 100, (0.01, 0.99))
    >>> len(lab), hist[["__sfm_bin", "n_rows", "sum_score"]].to_numpy().round(3).tolist()
    (1, [[80.0, 2.0, 1.605]])
    """
    frame = as_lazy(data)
    check_types(frame, cols, "scores")
    needed = needed_columns(cols)
    run = partial(_rows_partition, cols=cols, threshold=threshold, bins=bins, split=split, needed=needed)
    found = _native.on_rows(frame, cols, lambda part, _: run(part))
    if isinstance(found, list):  # Dask: a pair per partition
        labeled = pd.concat([lab for lab, _ in found], ignore_index=True)
        return labeled, _native.combine([h for _, h in found], [*cols.sensitive, _P, BIN, SPLIT])
    return _rows_narwhals(frame, cols, threshold, bins, split, needed) if found is None else found


def _rows_partition(
    pdf: pd.DataFrame, cols: Columns, threshold: float, bins: int, split: tuple[float, float], needed: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    missing = pdf[cols.target].isna().to_numpy()
    labeled, unl = pdf.loc[~missing, needed].reset_index(drop=True), pdf.loc[missing]
    s, bad = _np_scores(unl, cols)
    w, bad_w = _native._weights(unl, cols)
    at = np.minimum(np.floor(s * bins), bins - 1).astype(np.int64)
    derived = (s >= threshold, at, (s <= split[0]) | (s >= split[1]))  # prediction, score bin, split flag
    keys = [unl[c] for c in cols.sensitive] + [pd.Series(x, index=unl.index) for x in derived]
    sums = {SUM_SCORE: s} if w is None else {_SUM_W: w, SUM_SCORE: s}
    table = _native._grouped(keys, [*cols.sensitive, _P, BIN, SPLIT], sums, {_BAD_W: bad_w, _BAD_SCORE: bad})
    return labeled, table


def _rows_narwhals(
    frame: nw.LazyFrame, cols: Columns, threshold: float, bins: int, split: tuple[float, float], needed: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    target = nw.col(cols.target)
    missing = target.is_null()
    if frame.collect_schema()[cols.target].is_float():
        missing = missing | target.is_nan().fill_null(True)  # NaN is a missing label, as pandas reads it
    labeled = _run(frame.filter(~missing).select(*needed), frame, cols)
    s, bad = _scores(cols)
    at = (s * bins).floor().clip(0, bins - 1).cast(nw.Int64)
    select = [(s >= threshold).alias(_P), at.alias(BIN), ((s <= split[0]) | (s >= split[1])).alias(SPLIT)]
    select += [s.alias("__sfm_s"), bad.alias(_BAD_SCORE)]
    aggs = [nw.col(_W).sum().alias(_SUM_W), nw.col("__sfm_s").sum().alias(SUM_SCORE)]
    aggs += [nw.col(_BAD_W).sum(), nw.col(_BAD_SCORE).sum()]
    return labeled, grouped_pass(frame.filter(missing), cols, select, [_P, BIN, SPLIT], aggs)
