"""One batch of a monitored model's log, counted where it lives (the engines' grouped pass).

A batch is given as arrays (turned into a pandas frame) or as a frame of any engine
with column names. Its confusion counts per group come from the engines' own pass
(``engines._compute._Engine``: the grouped count, the core's label and group rules);
the monitor only keeps them. A batch may hold a single group (a day on which one group
was served), so groups are counted without the "at least two groups" check of a
measure; the measures read the monitor's accumulated counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._counts import ConfusionStats
from .._inputs import MeasureInputs
from ..engines._compute import _Engine
from ..engines._frames import as_lazy, check_columns, collect

__all__ = ["Batch", "as_batch", "count", "label_of"]

#: Column names of a frame built from arrays.
PRED, TRUE, ID = "y_pred", "y_true", "id"


@dataclass
class Batch:
    """A batch as a frame and the names of its columns (``target`` None: no labels yet)."""

    frame: Any
    prediction: str
    target: str | None
    sensitive: tuple[str, ...]
    ids: str | None = None


def _length(name: str, values: Any) -> int:
    try:
        return len(values)
    except TypeError:
        raise TypeError(f"{name} must be array-like (one value per row); got {type(values).__name__}.") from None


def as_batch(y_pred: Any, sensitive_features: Any, y_true: Any = None, ids: Any = None, data: Any = None) -> Batch:
    """The batch's frame: ``data`` with column names, or a pandas frame of the arrays given."""
    if sensitive_features is None:
        raise TypeError("sensitive_features is missing; pass the group of each row (or column names with data=).")
    if data is not None:
        for name, value in (("y_pred", y_pred), ("y_true", y_true), ("ids", ids)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"with data=, {name} must name a column of data; got a {type(value).__name__}.")
        sens = (sensitive_features,) if isinstance(sensitive_features, str) else tuple(sensitive_features or ())
        check_columns(as_lazy(data), y_true if y_true is not None else y_pred, y_pred, sens)
        if ids is not None:
            check_columns(as_lazy(data), ids, y_pred, sens)
        return Batch(data, y_pred, y_true, sens, ids)
    if y_pred is None:
        raise TypeError("y_pred is missing; pass the batch's predictions (or data= and column names).")
    n = _length("y_pred", y_pred)
    if isinstance(sensitive_features, pd.DataFrame):
        parts = {str(c): sensitive_features[c].to_numpy() for c in sensitive_features.columns}
    else:
        parts = {str(getattr(sensitive_features, "name", None) or "sensitive"): sensitive_features}
    for argument, value in (("y_true", y_true), ("ids", ids), *(("sensitive_features", v) for v in parts.values())):
        if value is not None and _length(argument, value) != n:
            raise ValueError(f"{argument} has {_length(argument, value)} rows and y_pred has {n}; pass one per row.")
    columns = {k: np.asarray(v.to_numpy() if isinstance(v, pd.Series) else v, dtype=object) for k, v in parts.items()}
    for column, argument, value in ((PRED, "y_pred", y_pred), (TRUE, "y_true", y_true), (ID, "ids", ids)):
        if value is not None:
            columns[column] = np.asarray(value)
            if columns[column].ndim != 1:
                raise ValueError(f"{argument} has shape {columns[column].shape}; pass one value per row (1-D).")
    frame = pd.DataFrame(columns)
    for key in parts:  # restore plain dtypes (the core refuses missing values itself, naming the column)
        frame[key] = frame[key].infer_objects()
    return Batch(frame, PRED, TRUE if y_true is not None else None, tuple(parts), ID if ids is not None else None)


def count(batch: Batch, threshold: float | None, pos_label: Any, *, labeled: bool) -> ConfusionStats | None:
    """Binary confusion counts per group of the batch (None for a batch without rows).

    ``labeled=False`` counts the predictions alone (the target is the prediction
    itself), for measures whose rates read no label.
    """
    target = batch.target if labeled else batch.prediction  # (the monitor counts labels only when the batch has them)
    if not labeled and threshold is not None:
        raise ValueError(
            "a measure with threshold= reads scores; without labels the monitor cannot count them as labels. "
            "Pass y_true with the batch, or predicted labels and a measure without threshold=."
        )
    engine = _Engine(batch.frame, check_columns(as_lazy(batch.frame), target, batch.prediction, batch.sensitive))
    table = engine.table("confusion", threshold)
    if table.empty or float(table["n_rows"].sum()) == 0:
        return None
    inputs = MeasureInputs(threshold=threshold, pos_label=pos_label, needs_sensitive=False)
    stats = engine.stats("confusion", inputs, "the monitor")
    if not isinstance(stats, ConfusionStats) or stats.counts.shape[-1] != 2:
        raise ValueError(
            "the monitor counts binary labels; this batch has more than two classes. Pass pos_label= on the "
            "measure (one class against the rest)."
        )
    return stats


def collect_columns(batch: Batch, names: list[str]) -> pd.DataFrame:
    """Some columns of the batch as a pandas frame (the rows kept until their labels arrive)."""
    if isinstance(batch.frame, pd.DataFrame):
        return batch.frame[names].reset_index(drop=True)
    return collect(as_lazy(batch.frame).select(*names))


def label_of(value: Any) -> Any:
    """A group label as a plain Python value (tuples for intersectional groups), for keys and JSON."""
    if isinstance(value, tuple):
        return tuple(label_of(v) for v in value)
    if isinstance(value, np.datetime64 | np.timedelta64):  # .item() of nanoseconds is an int: keep the meaning
        return pd.Timestamp(value) if isinstance(value, np.datetime64) else pd.Timedelta(value)
    return value.item() if isinstance(value, np.generic) else value
