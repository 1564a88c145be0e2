"""Joint constructions shared by every result with draws: the max-type band, the verdict rule, mapped intervals.

An interval of a measure whose value sits at an edge of its range (an absolute difference, a
largest gap, a min/max ratio) is not the percentile interval of its draws: replicates of
``|a - b|`` are never below 0, so for two identical groups that interval misses the value 0 and a
perfectly fair model reads as certainly unfair. :func:`mapped_interval` builds it the other way:
a joint construction of the signed parts (every pair's difference for difference operations, every
group's value for the others), mapped through the measure's operations, so the value always lies
inside and the interval reaches the ideal whenever the parts allow it.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["check_eps", "classify", "mapped_interval", "max_type_band"]

#: Operations that are a reduction of the groups' pairwise absolute differences: mapped pair by pair
#: (sharper than through a box of the groups: the pair's own spread, not the sum of two groups').
_PAIRWISE = {"absdiff": np.max, "mean_pairwise_absdiff": np.mean}


def check_eps(eps: Any) -> float:
    """The half-width of practical fairness, refused unless a number >= 0 (the message names ``eps``).

    Examples
    --------
    >>> check_eps(0.05)
    0.05
    >>> check_eps(-1)
    Traceback (most recent call last):
    ...
    ValueError: eps=-1; pass a half-width >= 0, e.g. 0.05.
    """
    ok = isinstance(eps, int | float | np.integer | np.floating) and not isinstance(eps, bool | np.bool_)
    if not (ok and eps >= 0):  # NaN fails too
        raise ValueError(f"eps={eps!r}; pass a half-width >= 0, e.g. 0.05.")
    return float(eps)


def classify(lower: Any, upper: Any, eps: float) -> np.ndarray:
    """``within`` / ``exceeds`` / ``inconclusive`` for intervals of a difference, ``undefined`` for NaN bounds.

    Examples
    --------
    >>> classify([-0.01, 0.08, -0.02, np.nan], [0.03, 0.1, 0.09, np.nan], eps=0.05).tolist()
    ['within', 'exceeds', 'inconclusive', 'undefined']
    """
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    defined = np.isfinite(lo) & np.isfinite(hi)
    with np.errstate(invalid="ignore"):
        within, exceeds = (-eps <= lo) & (hi <= eps), (lo > eps) | (hi < -eps)
    out = np.where(within, "within", np.where(exceeds, "exceeds", "inconclusive")).astype(object)
    out[~defined] = "undefined"
    return out


def max_type_band(draws: np.ndarray, center: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Simultaneous band ``center +- c sd`` over the columns of ``draws``, ``c`` from the largest deviation.

    Parameters
    ----------
    draws : ndarray of shape (n_draws, n_columns)
        Joint draws (or replicates) of every quantity of the family; an undefined entry
        (NaN) counts as the largest deviation of its draw.
    center : ndarray of shape (n_columns,)
        Where each column's interval is centred (the draws' mean, or the observed value).
    prob : float
        Share of the draws whose every column lies inside the band.

    Returns
    -------
    lower, upper : ndarray of shape (n_columns,)
    c : float
        The multiplier of the standard deviations (NaN without columns).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(4000, 20))
    >>> lo, hi, c = max_type_band(x, np.zeros(20), 0.95)
    >>> round(c, 1), float(np.mean(((x >= lo) & (x <= hi)).all(axis=1)))
    (3.0, 0.95)
    """
    if draws.shape[1] == 0:
        return np.empty(0), np.empty(0), float("nan")
    sd = np.nanstd(draws, axis=0, ddof=1)
    scale = np.where(sd > 0, sd, 1.0)
    t = np.max(np.abs(draws - center) / scale, axis=1)
    c = float(np.quantile(np.where(np.isnan(t), np.inf, t), prob))
    return center - c * sd, center + c * sd, c


def mapped_interval(
    measure: Any, draws: dict[str, np.ndarray], values: dict[str, np.ndarray], groups: pd.Index, prob: float
) -> tuple[float, float] | None:
    """Interval of a measure from a joint band of its signed parts mapped through its operations, or None.

    One :func:`max_type_band` (centred on the observed values, at level ``prob``) holds every
    pairwise difference of a leaf whose operation reduces pairwise absolute differences, and every
    group value of the other leaves; each leaf maps its part of the band (a difference interval to
    the range of its absolute value, a box through :meth:`~skfair_measures.Measure.bounds_from_group_values`),
    and a composite aggregates its leaves' bounds (mean, max and min are monotone). The observed
    value always lies inside. None for a signed measure (its percentile interval holds its value),
    for measures whose operations map no box (user operations, comparisons with the pooled value)
    and when a group's value is undefined (a measure that drops it).

    Parameters
    ----------
    measure : Measure
    draws : dict of str to ndarray of shape (n_draws, n_groups)
        Replicates (or draws) of every base metric in every group.
    values : dict of str to ndarray of shape (n_groups,)
        The observed value of every base metric in every group.
    groups : pandas.Index
    prob : float

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> rng = np.random.default_rng(0)
    >>> same = {"tpr": rng.normal(0.8, 0.02, size=(1000, 2))}
    >>> lo, hi = mapped_interval(sfm.msr("fairness.tpr"), same, {"tpr": np.array([0.8, 0.8])}, pd.RangeIndex(2), 0.95)
    >>> lo, round(hi, 2)
    (0.0, 0.06)
    """
    leaves, aggregate = measure.leaves(), getattr(measure, "aggregate", None)
    flat = not measure.children or (leaves == list(measure.children) and isinstance(aggregate, str))
    if measure.minimize is None or not flat or any(getattr(leaf, "operation", None) is None for leaf in leaves):
        return None
    pairs = list(combinations(range(len(groups)), 2))
    columns, centers = [], []
    for leaf in leaves:
        d, v = np.asarray(draws[leaf.base.name], dtype=float), np.asarray(values[leaf.base.name], dtype=float)
        if leaf.operation.name in _PAIRWISE:
            d = np.stack([d[:, a] - d[:, b] for a, b in pairs], axis=1) if pairs else d[:, :0]
            v = np.array([v[a] - v[b] for a, b in pairs])
        columns.append(d)
        centers.append(v)
    if np.isnan(np.concatenate(centers)).any():
        return None  # an undefined group the measure dropped (undefined="drop"): the percentile interval
    lo, hi, _ = max_type_band(np.concatenate(columns, axis=1), np.concatenate(centers), prob)
    edges = np.cumsum([0] + [c.shape[1] for c in columns])  # each leaf's columns
    parts = []
    for leaf, start, stop in zip(leaves, edges[:-1], edges[1:], strict=True):
        low, high = lo[start:stop], hi[start:stop]
        if leaf.operation.name in _PAIRWISE:
            reduce = _PAIRWISE[leaf.operation.name]
            nearest = np.where((low <= 0) & (high >= 0), 0.0, np.minimum(np.abs(low), np.abs(high)))
            far = np.maximum(-low, high)
            parts.append((float(reduce(nearest)), float(reduce(far))) if pairs else (0.0, 0.0))
            continue
        try:
            parts.append(leaf.bounds_from_group_values({leaf.base.name: low}, {leaf.base.name: high}, groups=groups))
        except (TypeError, ValueError):  # a user operation, or one that needs the pooled value's box
            return None
    if not measure.children:
        return parts[0]
    bounds = np.asarray(parts, dtype=float)
    reduce = getattr(np, aggregate)
    return (float(reduce(bounds[:, 0])), float(reduce(bounds[:, 1])))
