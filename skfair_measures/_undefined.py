"""Undefined group values: the warning, the reason a result gives, and the ``undefined=`` policy.

A group whose base rate has a zero denominator is NaN. The measure is then NaN
with a warning naming the group, the rate and the fix (``undefined="propagate"``),
leaves that group out of the comparison (``"drop"``), or raises (``"raise"``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import UndefinedMetricWarning

from .base import BaseMetric
from .operations import Operation
from .results import MeasureResult

__all__ = ["UndefinedGroupWarning"]


class UndefinedGroupWarning(UndefinedMetricWarning):
    """A group's rate is undefined (zero denominator); the measure is NaN.

    Subclasses scikit-learn's ``UndefinedMetricWarning``, so existing warning
    filters keep working.
    """


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
