"""Small groups: which groups a ``min_group_size`` leaves out or pools, decided once.

:func:`small_group_plan` decides on the groups' row counts; the plan applies to rows
(:func:`skfair_measures._stats.restrict_small_groups`), to statistics
(:func:`restrict_small_group_stats`, e.g. from a dataframe engine) or to group codes (the
Bayesian posteriors), so that every path drops or merges the same groups with the same
warning.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._counts import ConfusionStats, ErrorStats
from ._groups import SingleGroupError
from ._undefined import name_groups

__all__ = [
    "SMALL_GROUP_ROWS",
    "SmallGroupPlan",
    "SmallGroupWarning",
    "check_small_groups",
    "fold_group_sizes",
    "merge_rare_levels",
    "restrict_small_group_stats",
    "small_group_effect",
    "small_group_plan",
    "small_groups_in_folds",
]

#: A group with fewer rows than this (in a test fold) is small: by default the fold means of
#: ``benchmark`` and ``cross_validate_fairness`` warn, naming it, with the mean without it beside.
SMALL_GROUP_ROWS = 30


class SmallGroupWarning(UserWarning):
    """Groups smaller than ``min_group_size`` were left out of a measure, or merged."""


def check_small_groups(min_group_size: Any, small_groups: Any) -> None:
    """Validate ``min_group_size`` (None or a positive integer) and ``small_groups``."""
    if small_groups not in ("drop", "merge"):
        raise ValueError(f"small_groups={small_groups!r}; pass 'drop' (leave them out) or 'merge' (pool into 'other').")
    if min_group_size is None:
        return
    if isinstance(min_group_size, bool) or not isinstance(min_group_size, int | np.integer) or min_group_size < 1:
        raise ValueError(f"min_group_size={min_group_size!r}; pass a positive number of rows (or None).")


def _other_label(groups: pd.Index) -> Any:
    label = "other" if groups.nlevels == 1 else ("other",) * groups.nlevels
    if label in groups:
        raise ValueError(
            f"a group is already named {label!r}, so small groups cannot be merged into it; rename that group, "
            "or pass small_groups='drop'."
        )
    return label


@dataclass(frozen=True, eq=False)
class SmallGroupPlan:
    """Which groups a ``min_group_size`` leaves out or pools, decided once on their row counts.

    Built by :func:`small_group_plan`; applied to rows (:func:`restrict_small_groups`),
    to statistics (:func:`restrict_small_group_stats`, e.g. from a dataframe engine) or
    to group codes (the Bayesian posteriors), so that every path drops or merges the
    same groups with the same warning.

    Attributes
    ----------
    lut : ndarray of shape (n_groups_before,)
        New code of each old group; -1 for a group left out.
    groups : pandas.Index
        The groups after (the kept ones in their order, then ``"other"`` when merging).
    message : str
        The :class:`SmallGroupWarning` text naming the small groups and their sizes.
    """

    lut: np.ndarray
    groups: pd.Index
    message: str

    def codes(self, codes: np.ndarray) -> np.ndarray:
        """Codes after the plan (-1 for rows of a group left out)."""
        return self.lut[codes]

    def stats(self, stats: ConfusionStats | ErrorStats) -> ConfusionStats | ErrorStats:
        """Statistics (any leading axes) with the small groups' cells left out or summed into ``"other"``."""
        rows = None if stats.rows is None else self._pooled(stats.rows, 1)
        if isinstance(stats, ErrorStats):
            return dataclasses.replace(stats, sums=self._pooled(stats.sums, 2), groups=self.groups, rows=rows)
        return dataclasses.replace(stats, counts=self._pooled(stats.counts, 3), groups=self.groups, rows=rows)

    def warn(self, stacklevel: int = 1) -> None:
        """Emit the :class:`SmallGroupWarning`, attributed ``stacklevel`` frames above the caller."""
        warnings.warn(self.message, SmallGroupWarning, stacklevel=stacklevel + 1)

    def _pooled(self, values: np.ndarray, tail: int) -> np.ndarray:
        moved = np.moveaxis(np.asarray(values, dtype=float), values.ndim - tail, 0)
        out = np.zeros((len(self.groups), *moved.shape[1:]))
        kept = self.lut >= 0
        np.add.at(out, self.lut[kept], moved[kept])
        return np.moveaxis(out, 0, values.ndim - tail)


def small_group_plan(
    sizes: Any, groups: pd.Index, min_group_size: int | None, small_groups: str = "drop", key: str = "the measure"
) -> SmallGroupPlan | None:
    """Decide which groups of fewer than ``min_group_size`` rows to leave out or pool (None: none).

    Parameters
    ----------
    sizes : array-like of shape (n_groups,)
        Number of rows (not weights) of each group.
    groups : pandas.Index
        The groups, in the order of ``sizes``.
    min_group_size : int or None
        Groups with fewer rows are small (declared groups absent from the data too).
    small_groups : {"drop", "merge"}, default="drop"
        Leave the small groups out, or pool them into one group ``"other"``
        (``("other", ...)`` for intersectional groups) placed last. Declared groups
        absent from the data (size 0) are left out either way: there is nothing to pool.
    key : str, default="the measure"
        Who asks, for the warning and error messages.

    Returns
    -------
    SmallGroupPlan or None

    Raises
    ------
    SingleGroupError
        If fewer than two groups with rows remain.

    Examples
    --------
    >>> plan = small_group_plan([50, 3, 40, 2], pd.Index(list("abcd")), 10, "merge")
    >>> plan.lut.tolist(), list(plan.groups)
    ([0, 2, 1, 2], ['a', 'c', 'other'])
    """
    if min_group_size is None:
        return None
    sizes = np.asarray(sizes, dtype=np.int64)
    small = sizes < min_group_size
    if not small.any():
        return None
    lut = np.where(small, -1, np.cumsum(~small) - 1)  # the kept groups' new codes, in their order

    def named(mask: np.ndarray) -> str:
        return name_groups(groups[mask].tolist(), sizes[mask])  # Python scalars: the message reads 7, not np.int64(7)

    absent = small & (sizes == 0)  # declared groups without rows: left out, never merged into an empty "other"
    pooled = small & ~absent if small_groups == "merge" else np.zeros_like(small)
    left_out = small & ~pooled
    index = groups[~small]
    parts = []
    if left_out.any():
        parts.append(f"are left out, with their rows: {named(left_out)}")
    if pooled.any():
        label = _other_label(groups)
        lut[pooled] = len(index)
        index = index.insert(len(index), label)  # placed last, with the groups' names
        parts.append(f"are merged into {label!r} ({int(sizes[pooled].sum())} rows): {named(pooled)}")
    kept = lut >= 0
    if np.count_nonzero(np.bincount(lut[kept], weights=sizes[kept], minlength=len(index))) < 2:
        raise SingleGroupError(
            f"{key}: fewer than two groups have at least min_group_size={min_group_size} rows (small: {named(small)}); "
            "lower min_group_size, or merge rare levels first (skfair_measures.groups.merge_rare_levels)."
        )
    message = f"{key}: group(s) with fewer than min_group_size={min_group_size} rows {'; '.join(parts)}."
    return SmallGroupPlan(lut, index, message)


def restrict_small_group_stats(
    stats: ConfusionStats | ErrorStats,
    sizes: Any,
    min_group_size: int | None,
    small_groups: str = "drop",
    key: str = "the measure",
    *,
    warn: bool = True,
) -> ConfusionStats | ErrorStats:
    """:func:`restrict_small_groups` on statistics: the same groups left out or pooled, from counts.

    For statistics computed without the rows (a dataframe engine's grouped pass):
    counts are additive, so leaving a group out drops its cells and merging sums
    them, exactly as the same rule applied to the rows would.

    Parameters
    ----------
    stats : ConfusionStats, MulticlassStats or ErrorStats
        Statistics per group (any leading axes, e.g. bootstrap replicates).
    sizes : array-like of shape (n_groups,)
        Number of rows (not weights) of each group of ``stats``.
    min_group_size, small_groups, key
        As for :func:`restrict_small_groups`.
    warn : bool, default=True
        Emit the :class:`SmallGroupWarning` (off for replicates of statistics
        already restricted once).

    Examples
    --------
    >>> import warnings
    >>> s = ConfusionStats.from_codes([0, 0, 0, 1, 1, 1, 2], [1] * 7, [1] * 7, pd.Index(list("abc")))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     r = restrict_small_group_stats(s, [3, 3, 1], 2, "merge")
    >>> list(r.groups), r.n.tolist()
    (['a', 'b', 'other'], [3.0, 3.0, 1.0])
    """
    plan = small_group_plan(sizes, stats.groups, min_group_size, small_groups, key)
    if plan is None:
        return stats
    if warn:
        plan.warn(stacklevel=2)  # attributed to whoever called this function
    return plan.stats(stats)


# -- small groups in cross-validation: named by default, with the value they move --------------
def fold_group_sizes(codes: np.ndarray, tests: list[np.ndarray], groups: pd.Index) -> pd.DataFrame:
    """Rows of each group in each test fold: one row per fold, one column per group.

    Examples
    --------
    >>> fold_group_sizes(np.array([0, 0, 1, 1, 0]), [np.array([0, 2]), np.array([1, 3, 4])], pd.Index(["a", "b"]))
       a  b
    0  1  1
    1  2  1
    """
    sizes = [np.bincount(np.asarray(codes)[te], minlength=len(groups)) for te in tests]
    return pd.DataFrame(sizes, columns=groups)


def small_groups_in_folds(sizes: pd.DataFrame, min_rows: int = SMALL_GROUP_ROWS) -> pd.Series:
    """The groups with fewer than ``min_rows`` rows in some test fold (but rows in the data): their fewest.

    A group absent from a fold is reported as missing elsewhere; here it counts by its
    smallest non-zero size.

    Examples
    --------
    >>> small_groups_in_folds(pd.DataFrame({"a": [40, 41], "b": [4, 0]}))
    b    4
    dtype: int64
    """
    fewest = sizes.where(sizes > 0).min(axis=0)
    return fewest[fewest < min_rows].dropna().astype(np.int64)


def _number(x: float) -> str:
    return "undefined" if np.isnan(x) else f"{x:.4f}"


def small_group_effect(
    small: pd.Series,
    with_small: pd.DataFrame,
    without_small: pd.DataFrame,
    *,
    who: str,
    min_rows: int = SMALL_GROUP_ROWS,
) -> str:
    """The warning that names the small groups of a cross-validation and how much they move the fold means.

    Parameters
    ----------
    small : pandas.Series
        Fewest test rows of each small group (:func:`small_groups_in_folds`).
    with_small, without_small : pandas.DataFrame
        Fold means with every group and with the small groups left out: one row per learner
        (or one row), one column per measure.
    who : str
        ``"benchmark"`` or ``"cross_validate_fairness"``.
    min_rows : int
        The size below which a group is small.

    Examples
    --------
    >>> msg = small_group_effect(pd.Series({"Asian": 9}), pd.DataFrame({"fairness.tpr": [0.79]}, index=["tree"]),
    ...                          pd.DataFrame({"fairness.tpr": [0.43]}, index=["tree"]), who="benchmark")
    >>> print(msg)  # doctest: +NORMALIZE_WHITESPACE
    benchmark: group(s) with fewer than 30 rows in a test fold: 'Asian' (9); they move the fold means:
    fairness.tpr 0.7900 with them, 0.4300 without (tree). Pass min_group_size=30 to the measures to leave
    them out, or small_groups='merge' with it to pool them; pooled out-of-fold predictions are steadier.
    """
    named = name_groups(small.index.tolist(), small.to_numpy())
    moved = []
    for key in with_small.columns:
        for who_row in with_small.index:
            a, b = float(with_small.loc[who_row, key]), float(without_small.loc[who_row, key])
            if not (np.isnan(a) and np.isnan(b)) and not np.isclose(a, b, equal_nan=True):
                label = f" ({who_row})" if who_row is not None and str(who_row) != "" else ""
                moved.append(f"{key} {_number(a)} with them, {_number(b)} without{label}")
    effect = "; ".join(moved) if moved else "no fold mean changes without them"
    return (
        f"{who}: group(s) with fewer than {min_rows} rows in a test fold: {named}; they move the fold means: "
        f"{effect}. Pass min_group_size={min_rows} to the measures to leave them out, or small_groups='merge' "
        "with it to pool them; pooled out-of-fold predictions are steadier."
    )


# -- before crossing sensitive columns: rare levels merged --------------------------------------------
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
