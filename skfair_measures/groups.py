"""Groups: how the sensitive attribute becomes groups, and what to do with small ones.

The public face of the core's one group encoder: :func:`resolve_sensitive` reads the
sensitive attribute from columns of ``X`` or from values, and :func:`encode_groups`
turns it into one integer code per row and the index of the groups that occur (or
the declared ``groups=``). Integrations build on these two, never on the private
modules behind them.

Small groups. Crossing a few sensitive columns quickly yields groups of a handful of rows, whose
rates are noise (or undefined, which makes the whole measure NaN). Two tools:

- ``min_group_size=`` on any measure (``msr("fairness.tpr", min_group_size=30)``, or
  ``measure.with_inputs(min_group_size=30)``): groups with fewer rows are left out of
  the comparison with a warning naming them, or pooled into one group "other" with
  ``small_groups="merge"``. Scorers built from such a measure do the same in every
  cross-validation fold.
- :func:`merge_rare_levels`: before crossing the columns, replace the rare levels of
  each column by "other", so that the intersections are built from well-populated
  levels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._groups import SingleGroupError, encode_groups, resolve_sensitive
from ._small_groups import (
    SMALL_GROUP_ROWS,
    SmallGroupWarning,
    fold_group_sizes,
    small_group_effect,
    small_groups_in_folds,
)
from ._stats import restrict_small_groups

__all__ = [
    "SMALL_GROUP_ROWS",
    "SingleGroupError",
    "SmallGroupWarning",
    "encode_groups",
    "fold_group_sizes",
    "merge_rare_levels",
    "resolve_sensitive",
    "restrict_small_groups",
    "small_group_effect",
    "small_groups_in_folds",
]


def _merge_column(col: pd.Series, min_count: int, other: Any) -> pd.Series:
    counts = col.value_counts(dropna=False)
    rare = counts.index[counts.to_numpy() < min_count]
    if rare.empty:
        return col
    if other in set(counts.index) and other not in set(rare):
        raise ValueError(
            f"column {col.name!r} already has a level {other!r} with {counts[other]} rows; pass another other=."
        )
    is_rare = col.isin(rare).to_numpy()
    values = col.astype(object).to_numpy(copy=True)
    values[is_rare] = other
    return pd.Series(values, index=col.index, name=col.name)


def merge_rare_levels(sensitive_features: Any, min_count: int, *, other: Any = "other") -> Any:
    """Replace the levels of each sensitive column seen in fewer than ``min_count`` rows by ``other``.

    Parameters
    ----------
    sensitive_features : array-like, Series or DataFrame
        One or several sensitive columns.
    min_count : int
        Levels with fewer rows are merged.
    other : object, default="other"
        The label of the merged level.

    Returns
    -------
    Series or DataFrame
        The same columns (a Series for one column, a DataFrame for several), rare
        levels replaced; missing values stay missing (and are refused by measures).

    Examples
    --------
    >>> merge_rare_levels(pd.Series(["a", "a", "b", "c"], name="race"), 2).tolist()
    ['a', 'a', 'other', 'other']
    >>> frame = pd.DataFrame({"sex": ["F", "M", "M", "M"], "race": ["a", "a", "a", "b"]})
    >>> merge_rare_levels(frame, 2).to_dict("list")
    {'sex': ['other', 'M', 'M', 'M'], 'race': ['a', 'a', 'a', 'other']}
    """
    if isinstance(min_count, bool) or not isinstance(min_count, int | np.integer) or min_count < 1:
        raise ValueError(f"min_count={min_count!r}; pass a positive number of rows.")
    if isinstance(sensitive_features, pd.DataFrame):
        return pd.DataFrame(
            {c: _merge_column(sensitive_features[c], min_count, other) for c in sensitive_features.columns},
            index=sensitive_features.index,
        )
    if isinstance(sensitive_features, pd.Series):
        return _merge_column(sensitive_features, min_count, other)
    arr = np.asarray(sensitive_features, dtype=object)
    if arr.ndim == 2:
        frame = pd.DataFrame(arr, columns=[f"sensitive_feature_{j}" for j in range(arr.shape[1])])
        return merge_rare_levels(frame, min_count, other=other)
    return _merge_column(pd.Series(arr, name="sensitive_feature_0"), min_count, other)
