"""Recognise a data frame of any engine and check the columns a computation reads.

Every engine enters through :func:`as_lazy`: narwhals wraps pandas, polars (eager and
lazy), pyarrow, DuckDB relations, Dask and PySpark DataFrames behind one lazy API, so
the aggregation in :mod:`._aggregate` is written once. :func:`check_columns` names the
argument and the missing column before any engine work starts, and :func:`collect`
brings a (small) aggregated result back as a pandas DataFrame.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import narwhals as nw
import pandas as pd

__all__ = ["Columns", "as_lazy", "check_columns", "collect", "engine_name"]

_NOT_A_FRAME = (
    "data is a {kind}, which no supported engine recognises; pass a pandas, polars "
    "(DataFrame or LazyFrame), pyarrow Table, DuckDB relation, Dask or PySpark DataFrame."
)
_NOT_A_NAME = (
    "{argument} must name a column of data when data is a {engine} frame (an array "
    "cannot be aligned with rows that live in the engine); got a {kind}. Add the values "
    "as a column first."
)
_MISSING = "{argument}={column!r} is not a column of data; its columns are {columns}."


@dataclass(frozen=True)
class Columns:
    """The column names one computation reads (validated by :func:`check_columns`).

    Attributes
    ----------
    target : str
        True labels (or values, for regression).
    prediction : str
        Predicted labels, values, or scores when a threshold is applied.
    sensitive : tuple of str
        Sensitive column(s); several give intersectional groups.
    sample_weight : str or None
        Column of non-negative weights.
    """

    target: str
    prediction: str
    sensitive: tuple[str, ...]
    sample_weight: str | None = None


def as_lazy(data: Any) -> nw.LazyFrame:
    """Wrap ``data`` as a narwhals LazyFrame, whatever its engine.

    Examples
    --------
    >>> import pandas as pd
    >>> type(as_lazy(pd.DataFrame({"a": [1]}))).__name__
    'LazyFrame'
    """
    try:  # a narwhals frame is returned as it is
        with warnings.catch_warnings():
            # narwhals announces that its Dask support moves to a separate package
            # (narwhals-dask); until then it is part of narwhals and works as is.
            warnings.filterwarnings("ignore", message=".*narwhals-dask.*", category=FutureWarning)
            frame = nw.from_native(data)
    except TypeError:
        raise TypeError(_NOT_A_FRAME.format(kind=type(data).__name__)) from None
    if isinstance(frame, nw.Series):
        raise TypeError(_NOT_A_FRAME.format(kind=type(data).__name__))
    return frame.lazy() if isinstance(frame, nw.DataFrame) else frame


def engine_name(frame: nw.LazyFrame) -> str:
    """The engine behind a narwhals frame, e.g. ``"dask"`` or ``"pyspark"``."""
    return str(frame.implementation.value)


def check_columns(
    frame: nw.LazyFrame, target: Any, prediction: Any, sensitive: str | Sequence[str], sample_weight: Any = None
) -> Columns:
    """Check that every named column exists; the error names the argument and the column.

    Examples
    --------
    >>> import pandas as pd
    >>> lf = as_lazy(pd.DataFrame({"y": [1], "p": [1], "s": ["a"]}))
    >>> check_columns(lf, "y", "p", "s").sensitive
    ('s',)
    >>> check_columns(lf, "y", "yhat", "s")
    Traceback (most recent call last):
    ...
    KeyError: "prediction='yhat' is not a column of data; its columns are ['y', 'p', 's']."
    """
    names, engine = frame.collect_schema().names(), engine_name(frame)
    sens = (sensitive,) if isinstance(sensitive, str) else tuple(sensitive)
    if not sens:
        raise ValueError("sensitive is empty; name at least one sensitive column of data.")
    named = [("target", target), ("prediction", prediction), ("sample_weight", sample_weight)]
    for argument, column in [*named, *(("sensitive", s) for s in sens)]:
        if argument == "sample_weight" and column is None:
            continue
        if not isinstance(column, str):
            raise TypeError(_NOT_A_NAME.format(argument=argument, engine=engine, kind=type(column).__name__))
        if column not in names:
            raise KeyError(_MISSING.format(argument=argument, column=column, columns=names))
    return Columns(target, prediction, sens, sample_weight)


def collect(frame: nw.LazyFrame) -> pd.DataFrame:
    """Run the engine and return the (small) result as a pandas DataFrame.

    The result goes through pyarrow, which every engine can produce, so labels keep
    their types (strings stay strings, integers stay integers).
    """
    table = frame.collect(backend="pyarrow").to_native()
    return table.to_pandas(types_mapper=None)
