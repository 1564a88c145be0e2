"""The grouped aggregation of :mod:`._aggregate`, hand-written on numpy for pandas and Dask.

Why hand-written: narwhals runs the aggregation on pandas (and so on every Dask
partition) as a pandas ``groupby`` over several keys, which measured 3x slower than
this per pandas frame and 8x slower end to end on a lazy Dask frame of 2e7 rows
(3.4 s against 0.43 s on 2 cores). Here each key column is factorised once, the keys
fold into one flat cell index, and one ``np.bincount`` per summed quantity does the
work, exactly as the in-memory core does (``ConfusionStats.from_codes``). The output has
the same columns as the narwhals query, so everything downstream is shared.

On Dask every partition runs :func:`table` independently (in the scheduler the user
configured: threads, processes or a ``distributed`` cluster); only the small tables
travel back, and :func:`combine` sums their matching rows.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ._aggregate import (
    _BAD_ERR,
    _BAD_SCORE,
    _BAD_W,
    _ENGINE_FAILED,
    _N,
    _P,
    _SUM_AE,
    _SUM_SE,
    _SUM_W,
    _T,
    _require_numeric,
)
from ._frames import Columns, as_lazy

__all__ = ["combine", "dask_table", "table"]


def _codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and levels of one key column; a missing value is a level of its own (kept, then refused)."""
    arr = values.to_numpy() if not isinstance(values.dtype, pd.CategoricalDtype) else values.array
    if isinstance(arr, np.ndarray) and arr.dtype.kind in "iub" and arr.size:
        as_int = arr.view(np.uint8) if arr.dtype.kind == "b" else arr
        lo, hi = int(as_int.min()), int(as_int.max())
        if hi - lo <= 4 * arr.size + 1024:  # small range: a shift instead of hashing
            codes = as_int.astype(np.intp)
            if lo:
                codes -= lo
            return codes, pd.Index(np.arange(lo, hi + 1).astype(arr.dtype))
    codes, uniques = pd.factorize(arr, use_na_sentinel=False)
    return codes.astype(np.intp, copy=False), pd.Index(uniques)


def _weights(pdf: pd.DataFrame, cols: Columns) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Weights (missing counted as 0) and the mask of missing, negative or infinite ones; None if unweighted."""
    if cols.sample_weight is None:
        return None, None
    w = pdf[cols.sample_weight].to_numpy(dtype=float, na_value=np.nan)
    bad = ~(np.isfinite(w) & (w >= 0))
    return np.where(np.isnan(w), 0.0, w), bad


def _grouped(
    keys: list[pd.Series], names: list[str], sums: dict[str, np.ndarray], flags: dict[str, np.ndarray | None]
) -> pd.DataFrame:
    """Per distinct combination of ``keys``: the row count, ``sums`` summed and ``flags`` counted.

    One flat cell index (built in place, to keep one array of the partition's length
    alive) and one ``np.bincount`` per quantity; flags count only their flagged rows.
    """
    cell = np.zeros(len(keys[0]), dtype=np.intp)
    levels = []
    for key in keys:
        codes, lev = _codes(key)
        cell *= len(lev)
        cell += codes
        del codes
        levels.append(lev)
    size = int(np.prod([len(lev) for lev in levels]))
    out = {_N: np.bincount(cell, minlength=size)}
    out |= {name: np.bincount(cell, weights=v, minlength=size) for name, v in sums.items()}
    out |= {name: np.bincount(cell[m], minlength=size) if m is not None else 0 * out[_N] for name, m in flags.items()}
    seen = np.flatnonzero(out[_N])
    columns, rest = {}, seen
    for name, lev in zip(reversed(names), reversed(levels), strict=True):
        columns[name] = np.asarray(lev[rest % len(lev)])
        rest = rest // len(lev)
    table = pd.DataFrame({name: columns[name] for name in names})
    for name, v in out.items():
        table[name] = v[seen]
    if _SUM_W not in table:
        table[_SUM_W] = table[_N].astype(float)  # unweighted: every row weighs 1
    return table


def table(pdf: pd.DataFrame, cols: Columns, kind: str, threshold: float | None = None) -> pd.DataFrame:
    """The small table of one pandas frame (``kind`` is ``"confusion"`` or ``"errors"``)."""
    w, bad_w = _weights(pdf, cols)
    sums = {} if w is None else {_SUM_W: w}
    keys = [pdf[c] for c in cols.sensitive]
    names = list(cols.sensitive)
    if kind == "errors":
        e = pdf[cols.prediction].to_numpy(dtype=float, na_value=np.nan, copy=True)
        e -= pdf[cols.target].to_numpy(dtype=float, na_value=np.nan)
        bad_e = ~np.isfinite(e)
        e[bad_e] = 0.0
        ae = np.abs(e)
        sums |= {_SUM_AE: ae if w is None else w * ae, _SUM_SE: e * e if w is None else w * e * e}
        return _grouped(keys, names, sums, {_BAD_W: bad_w, _BAD_ERR: bad_e})
    pred, bad_score = pdf[cols.prediction], None
    if threshold is not None:
        score = pred.to_numpy(dtype=float, na_value=np.nan)
        bad_score = ~((score >= 0) & (score <= 1))
        pred = pd.Series(score >= threshold, index=pdf.index)
    keys += [pdf[cols.target], pred]
    return _grouped(keys, names + [_T, _P], sums, {_BAD_W: bad_w, _BAD_SCORE: bad_score})


def combine(tables: list[pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    """Sum the small tables of several partitions, row by matching keys (missing keys kept)."""
    stacked = pd.concat(tables, ignore_index=True)
    return stacked.groupby(keys, dropna=False, sort=False, observed=True).sum().reset_index()


def _check_types(data: Any, cols: Columns, kind: str, threshold: float | None) -> None:
    frame = as_lazy(data)
    if kind == "errors":
        for argument, column in (("target", cols.target), ("prediction", cols.prediction)):
            _require_numeric(frame, argument, column, "a regression measure subtracts it")
    if cols.sample_weight is not None:
        _require_numeric(frame, "sample_weight", cols.sample_weight, "weights are summed")
    if threshold is not None:
        _require_numeric(frame, "prediction", cols.prediction, "a threshold is applied to its scores")


def pandas_table(pdf: pd.DataFrame, cols: Columns, kind: str, threshold: float | None = None) -> pd.DataFrame:
    """The small table of an in-memory pandas frame."""
    _check_types(pdf, cols, kind, threshold)
    return table(pdf, cols, kind, threshold)


def dask_table(ddf: Any, cols: Columns, kind: str, threshold: float | None = None) -> pd.DataFrame:
    """One pass over a Dask DataFrame: a small table per partition, summed locally."""
    import dask

    _check_types(ddf, cols, kind, threshold)
    needed = list(dict.fromkeys([*cols.sensitive, cols.target, cols.prediction, *filter(None, [cols.sample_weight])]))
    parts = ddf[needed].to_delayed()  # projecting first lets Dask read only these columns
    run = partial(table, cols=cols, kind=kind, threshold=threshold)
    try:
        tables = dask.compute(*[dask.delayed(run)(p) for p in parts])
    except Exception as exc:  # any scheduler's error type: re-raised with the columns named
        raise RuntimeError(
            _ENGINE_FAILED.format(
                engine="dask",
                target=cols.target,
                prediction=cols.prediction,
                sensitive=list(cols.sensitive),
                weight=cols.sample_weight,
                error=f"{type(exc).__name__}: {exc}",
            )
        ) from exc
    keys = list(cols.sensitive) + ([] if kind == "errors" else [_T, _P])
    return combine(list(tables), keys)
