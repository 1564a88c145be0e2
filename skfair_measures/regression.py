"""Fairness for regression: parity of the predictions, and bounded group loss.

Three questions about a regressor's predictions across groups:

- **mean-prediction parity** (``fairness.dp_mean``): does each group get the same
  prediction on average? The regression form of demographic parity (fairlearn #1313).
- **distribution parity** (``fairness.dp_ks``, ``fairness.dp_wasserstein``): are the
  groups' prediction *distributions* the same? The largest pairwise two-sample
  Kolmogorov-Smirnov distance ``sup_x |F_g(x) - F_h(x)|``, or the largest pairwise
  1-Wasserstein distance ``integral |F_g(x) - F_h(x)| dx``, between the groups'
  (weighted) empirical distribution functions (Agarwal, Dudik and Wu, "Fair
  Regression", ICML 2019, define statistical parity for regression through these CDFs).
- **bounded group loss** (``fairness.bgl``): the largest loss of any group
  (Agarwal, Dudik and Wu 2019), e.g. the worst group's mean squared error.

The distribution distances read the rows, not confusion counts: the rows fold into
weighted (group, distinct value) atoms, and each pair of groups is compared at the
atoms of those two groups only (:func:`pairwise_distribution_distances`), so the cost
is groups x atoms lookups, in chunks of bounded memory, with no Python loop over rows
or over pairs of groups.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from ._arrays import _check_no_missing, mean_by
from ._stats import GroupedSample
from ._undefined import name_groups
from .base import BaseMetric, get_base
from .measures import FairnessMeasure, Measure, MeasureInputs, MeasureResult, UndefinedGroupWarning
from .operations import Operation, _group_max

__all__ = [
    "DistributionParity",
    "MeanPrediction",
    "bounded_group_loss",
    "pairwise_distribution_distances",
    "worst_group",
]

Distance = Literal["ks", "wasserstein"]


def _numeric(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.dtype.kind not in "fiub":
        raise ValueError(f"{name} must be numeric predictions for a regression measure; got dtype {arr.dtype}.")
    out = arr.astype(float, copy=False)
    _check_no_missing(out, name)  # the package's one wording: how many, and the first
    infinite = np.flatnonzero(np.isinf(out))
    if infinite.size:  # as scikit-learn's regression metrics ("Input contains infinity"): no finite distance
        raise ValueError(
            f"{name} has {infinite.size} infinite value(s), first at position {infinite[0]}; drop or fix those rows."
        )
    return out


class MeanPrediction(BaseMetric):
    """The (weighted) mean prediction of each group: a base metric that reads the rows.

    Examples
    --------
    >>> from skfair_measures._stats import check_inputs
    >>> vals, overall = MeanPrediction().group_values(check_inputs([0, 0, 0], [1.0, 3.0, 5.0], ["a", "a", "b"]))
    >>> vals.tolist(), overall
    ([2.0, 5.0], 3.0)
    """

    name = "mean_prediction"
    description = "Mean prediction"
    minimize = False
    range = (-np.inf, np.inf)
    undefined_when = "the group has no samples"
    statistic: ClassVar[None] = None

    def group_values(self, sample: GroupedSample, pos_label: Any = None) -> tuple[np.ndarray, float]:
        pred = _numeric(sample.y_pred, "y_pred")
        w = np.ones_like(pred) if sample.sample_weight is None else sample.sample_weight
        overall = float(np.dot(w, pred) / w.sum()) if w.sum() > 0 else float("nan")
        return mean_by(sample.group_codes, pred, sample.n_groups, sample.sample_weight), overall


# --- bounded group loss: the worst group's loss --------------------------------------


def _range_same(r: tuple[float, float]) -> tuple[float, float]:
    return r


#: The largest value over groups: for a loss, the worst group's loss.
_WORST = "largest group value (for a loss: the worst group's loss, bounded group loss)"
worst_group = Operation("worst_group", _group_max, True, _WORST, range_of=_range_same)


def bounded_group_loss(base: str | BaseMetric = "mse", **kwargs: Any) -> FairnessMeasure:
    """Bounded group loss: the largest loss of any group (Agarwal, Dudik and Wu 2019).

    Parameters
    ----------
    base : str or BaseMetric, default="mse"
        A loss (a base metric where smaller is better): ``"mse"``, ``"mae"``,
        ``"rmse"``, ``"error_rate"``, ...
    **kwargs
        Passed to :class:`~skfair_measures.measures.FairnessMeasure` (``key=``,
        ``undefined=``, ``groups=``, ...).

    Examples
    --------
    >>> m = bounded_group_loss("mae")
    >>> m([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 2.0, 4.0], sensitive_features=list("aabb"))
    3.0
    >>> m.key, m.minimize
    ('fairness.bgl(base=mae)', True)
    """
    resolved = get_base(base)
    if not resolved.minimize:
        raise ValueError(
            f"base={resolved.name!r} is better when larger; bounded group loss needs a loss "
            "(mse, mae, rmse, error_rate, ...)."
        )
    default_key = "fairness.bgl" if resolved.name == "mse" else f"fairness.bgl(base={resolved.name})"
    key = kwargs.pop("key", None) or default_key
    kwargs.setdefault("description", f"Bounded group loss: the largest {resolved.description.lower()} of any group")
    return FairnessMeasure(resolved, worst_group, key=key, **kwargs)


# --- distribution parity --------------------------------------------------------------


#: query cells (atoms x groups) evaluated at once by :func:`pairwise_distribution_distances`
_CHUNK_CELLS = 1 << 21


def pairwise_distribution_distances(
    values: Any,
    group_codes: Any,
    n_groups: int,
    sample_weight: Any = None,
    distances: tuple[str, ...] = ("ks", "wasserstein"),
) -> tuple[np.ndarray, np.ndarray]:
    """Kolmogorov-Smirnov and 1-Wasserstein distances between every pair of groups.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        The predictions.
    group_codes : array-like of shape (n_samples,)
        Group code ``0..n_groups-1`` of each sample.
    n_groups : int
    sample_weight : array-like of shape (n_samples,), optional
    distances : tuple of {"ks", "wasserstein"}, default=("ks", "wasserstein")
        The tables to compute; one left out is returned as zeros (half the work).

    Returns
    -------
    ks, wasserstein : ndarray of shape (n_groups, n_groups)
        Symmetric tables with a zero diagonal; NaN in the rows and columns of
        groups without weight.

    Notes
    -----
    ``F_g - F_h`` only changes at the values group ``g`` or ``h`` holds ("atoms"), so
    each pair is read at those values only: at every atom of ``g``, ``|F_g - F_h|`` for
    every ``h`` and the width until the next atom of either group. The KS distance is the
    largest difference, the 1-Wasserstein distance the sum of difference times width (a
    value both groups hold counts half from each side). The cost is ``n_groups x
    (n_distinct + n_atoms)``, where ``n_atoms`` (distinct (group, value) pairs) is at most
    the number of rows: linear in the groups, where comparing every pair over every
    distinct value is quadratic in them.

    Examples
    --------
    >>> ks, w1 = pairwise_distribution_distances([0.0, 1.0, 2.0, 3.0], [0, 0, 1, 1], 2)
    >>> float(ks[0, 1]), float(w1[0, 1])
    (1.0, 2.0)
    """
    v = np.asarray(values, dtype=float)
    codes = np.asarray(group_codes, dtype=np.intp)
    w = np.ones_like(v) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    totals = np.bincount(codes, weights=w, minlength=n_groups)
    ks, w1 = np.zeros((2, n_groups, n_groups))
    if (totals > 0).any():
        # the atoms: the (distinct value u[d], group) pairs with positive weight, sorted by value then group
        u, d_of_row = np.unique(v, return_inverse=True)
        keys, key_of_row = np.unique(d_of_row.astype(np.int64) * n_groups + codes, return_inverse=True)
        mass = np.bincount(key_of_row, weights=w, minlength=keys.size)
        keys, mass = keys[mass > 0], mass[mass > 0]  # a row of weight 0 does not move its group's distribution
        wanted = {"ks": ks, "wasserstein": w1}
        tables = [wanted[name] if name in distances else None for name in wanted]
        _pairwise_from_atoms(keys // n_groups, keys % n_groups, mass, u, totals, *tables)
    ks = np.maximum(ks, ks.T)
    w1 = w1 + w1.T
    empty = ~(totals > 0)
    for table in (ks, w1):
        np.fill_diagonal(table, 0.0)
        table[empty, :] = table[:, empty] = np.nan
    return ks, w1


def _pairwise_from_atoms(
    d: np.ndarray,
    group: np.ndarray,
    mass: np.ndarray,
    u: np.ndarray,
    totals: np.ndarray,
    ks: np.ndarray | None,
    w1: np.ndarray | None,
) -> None:
    """Fill ``ks[g, h]`` (largest gap at the atoms of ``g``) and ``w1[g, h]`` (area from the atoms of ``g``).

    Blocks of distinct values are swept from the largest down, each a dense
    ``(values, groups)`` table of the distribution functions, of which group holds an atom
    at each value, and of each group's next atom above it (a running minimum carried down
    from the block above). Each atom of ``g`` reads its value's row: a contiguous copy.
    """
    n_groups = totals.size
    scale = np.divide(1.0, totals, out=np.zeros(n_groups), where=totals > 0)
    block = max(1, _CHUNK_CELLS // n_groups)
    above = np.zeros(n_groups)  # weight of each group above the current block
    next_above = np.full(n_groups, np.inf)  # each group's smallest atom above the current block
    bounds = np.searchsorted(d, np.arange(0, u.size + block, block))
    for k in range((u.size + block - 1) // block - 1, -1, -1):
        a, lo, hi = k * block, bounds[k], bounds[k + 1]
        rows = min(block, u.size - a)
        cell = (d[lo:hi] - a) * n_groups + group[lo:hi]
        m = np.bincount(cell, weights=mass[lo:hi], minlength=rows * n_groups).reshape(rows, n_groups)
        held = m > 0
        # weight strictly above each value: from the rows below it in this block, plus the blocks above
        suffix = np.cumsum(m[::-1], axis=0)[::-1] - m + above
        cdf = 1.0 - suffix * scale
        above = suffix[0] + m[0]
        if w1 is not None:
            at = np.where(held, u[a : a + rows, None], np.inf)
            nearest = np.minimum.accumulate(np.vstack([next_above, at[::-1]]), axis=0)[::-1]  # at or above
            after = nearest[1:]  # strictly above each value: the next atom of each group
            next_above = nearest[0]
        if hi == lo:  # values held only by rows of weight 0
            continue
        # this block's atoms, grouped by their group for the reductions below
        order = np.argsort(group[lo:hi], kind="stable")
        g, r = group[lo:hi][order], d[lo:hi][order] - a
        gap = np.abs(cdf[r] - cdf[r, g][:, None])
        runs = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
        owners = g[runs]
        if ks is not None:
            ks[owners] = np.maximum(ks[owners], np.maximum.reduceat(gap, runs, axis=0))
        if w1 is not None:
            upto = np.minimum(after[r], after[r, g][:, None])
            width = np.where(np.isfinite(upto), upto - u[a + r][:, None], 0.0)
            gap *= width
            gap[held[r]] *= 0.5  # a value both groups hold counts half on each side
            w1[owners] += np.add.reduceat(gap, runs, axis=0)


class DistributionParity(Measure):
    """Largest pairwise distance between the groups' distributions of predictions.

    Parameters
    ----------
    distance : {"ks", "wasserstein"}
        Two-sample Kolmogorov-Smirnov distance (``sup_x |F_g - F_h|``, in [0, 1]) or
        1-Wasserstein distance (``integral |F_g - F_h| dx``, in the units of y_pred).
    key : str, optional
        Defaults to ``"fairness.dp_ks"`` or ``"fairness.dp_wasserstein"``.
    undefined : {"propagate", "drop", "raise"}, default="propagate"
        What a group without samples (a declared group absent from the data) does.
    groups : array-like, optional
        All groups to expect.
    bins : int, optional
        For frames of the engines only (polars, DuckDB, Dask, Spark...): when the
        prediction column holds more than 10,000 distinct values, the engine sums the
        mass per (group, equal-width bin) over the observed range and the distance is
        computed at the bin centres, its error bound in ``result.attrs``
        (Kolmogorov-Smirnov: the largest share of one group's mass in one bin;
        1-Wasserstein: the bin width). Without it such a column is refused there. Rows
        in memory, and engine columns of fewer distinct values, are always exact.

    Examples
    --------
    >>> m = DistributionParity("ks")
    >>> m([0, 0, 0, 0], [0.1, 0.2, 0.3, 0.4], sensitive_features=list("aabb"))
    1.0
    >>> DistributionParity("wasserstein")([0, 0, 0, 0], [0.1, 0.2, 0.3, 0.4], sensitive_features=list("aabb"))
    0.2
    """

    def __init__(
        self,
        distance: Distance = "ks",
        *,
        key: str | None = None,
        description: str | None = None,
        undefined: Literal["propagate", "drop", "raise"] = "propagate",
        groups: Any = None,
        bins: int | None = None,
    ) -> None:
        if distance not in ("ks", "wasserstein"):
            raise ValueError(f"distance={distance!r}; pass 'ks' or 'wasserstein'.")
        if bins is not None and (isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2):
            raise ValueError(f"bins={bins!r}; pass a number of bins of at least 2 (e.g. bins=1000), or None.")
        self.distance, self.bins = distance, None if bins is None else int(bins)
        self.key = key or f"fairness.dp_{distance}"
        name = "Kolmogorov-Smirnov" if distance == "ks" else "1-Wasserstein"
        self.description = description or f"Largest pairwise {name} distance between the groups' predictions"
        self.minimize, self.ideal = True, 0.0
        self.range = (0.0, 1.0) if distance == "ks" else (0.0, np.inf)
        self._inputs = MeasureInputs(groups=groups, undefined=undefined).replace()  # checked, groups an Index

    @property
    def base_label(self) -> str:
        return "distribution of y_pred"

    @property
    def operation_label(self) -> str:
        return f"max pairwise {self.distance}"

    def from_group_values(self, values: Any, *, groups: pd.Index, overall: Any = None) -> np.ndarray:
        raise TypeError(f"{self.key} compares distributions of predictions; it reads the rows, not group values.")

    def _evaluate(self, source: Any) -> MeasureResult:
        sample = source.rows(self.key)
        pred = _numeric(sample.y_pred, "y_pred")
        ks, w1 = pairwise_distribution_distances(
            pred, sample.group_codes, sample.n_groups, sample.sample_weight, distances=(self.distance,)
        )
        table = ks if self.distance == "ks" else w1
        groups, empty = sample.groups, np.isnan(np.diag(table))
        if empty.any():  # declared groups absent from the data
            names = name_groups(groups[np.flatnonzero(empty)])
            if self.undefined == "raise":
                raise ValueError(f"group(s) {names} have no samples; {self.key} cannot be computed.")
            then = "they are left out" if self.undefined == "drop" else f"{self.key} is NaN; pass undefined='drop'"
            warnings.warn(f"group(s) {names} have no samples; {then}.", UndefinedGroupWarning, stacklevel=3)
        keep = ~empty if self.undefined == "drop" else np.ones(len(groups), dtype=bool)
        sub = table[np.ix_(keep, keep)]
        value = float(np.max(sub)) if keep.sum() >= 2 and not np.isnan(sub).any() else float("nan")
        by_group = functools.partial(pd.DataFrame, table, index=groups, columns=groups)  # built when asked
        undefined = list(groups[empty])
        return MeasureResult(
            self.key, value, by_group, sample.counts_per_group, measure=self, undefined_groups=undefined
        )
