"""Operations: how the groups are compared.

An operation reduces the last axis of an array of per-group values to one number,
so one function serves a point estimate ``(n_groups,)``, bootstrap replicates
``(n_boot, n_groups)`` and posterior draws ``(chain, draw, n_groups)``. An undefined
group (NaN) makes the result NaN: NaN propagates, it is never skipped silently.

Each operation carries its meaning as data, so that no other module has to infer it
from a name: whether smaller results are fairer (``minimize``), whether the result
is signed, its ideal (perfectly fair) value, the family it belongs to (a difference
or a ratio, which says how it compares against a reference group), and its range
given the base metric's range.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ._undefined import _did_you_mean, name_groups
from .base import _ratio

__all__ = [
    "Operation",
    "absdiff",
    "diff",
    "diff_to_overall",
    "diff_to_reference",
    "from_callable",
    "get_operation",
    "mean_pairwise_absdiff",
    "ratio",
    "ratio_to_overall",
    "ratio_to_reference",
]

Family = Literal["difference", "ratio"]


# --- ranges of results, given the base metric's (lower, upper) range --------------
# Module-level functions (not lambdas) so that operations, and the measures holding
# them, pickle.
def _range_spread(r: tuple[float, float]) -> tuple[float, float]:
    return (0.0, r[1] - r[0])


def _range_signed(r: tuple[float, float]) -> tuple[float, float]:
    return (r[0] - r[1], r[1] - r[0])


def _range_unit(r: tuple[float, float]) -> tuple[float, float]:
    return (0.0, 1.0)


def _range_nonneg(r: tuple[float, float]) -> tuple[float, float]:
    return (0.0, np.inf)


def _range_any(r: tuple[float, float]) -> tuple[float, float]:
    return (-np.inf, np.inf)


@dataclass(frozen=True)
class Operation:
    """A reduction of per-group values to one number, with its meaning as data.

    Parameters
    ----------
    name : str
        Short name, e.g. ``"absdiff"``.
    func : callable
        ``func(values, *, groups, overall)`` reducing the last axis of ``values``.
    minimize : bool or None
        True if smaller is fairer, False if larger is fairer, None for signed
        results that have no direction (e.g. a signed difference).
    description : str
        Human-readable description.
    ideal : float or None
        The perfectly fair value (0 for differences, 1 for ratios); None if the
        operation has none (a user function).
    family : {"difference", "ratio"} or None
        How the operation compares groups; it decides the signed form against a
        reference group (:meth:`against`).
    range_of : callable
        Maps the base metric's ``(lower, upper)`` range to the result's range.
    params : dict
        Parameters shown in the measure's description (e.g. the reference group).
    needs_overall : bool
        Whether the operation compares groups with the pooled (overall) value.
    why_undefined : callable or None
        ``why_undefined(values, groups, metric)`` says why the operation is NaN on
        per-group values that are all defined (e.g. a ratio to a reference group whose
        rate is 0), or returns None; see :meth:`undefined_reason`.

    Examples
    --------
    >>> absdiff([0.5, 0.75, 0.25])
    0.5
    >>> absdiff.ideal, absdiff.signed, ratio.ideal
    (0.0, False, 1.0)
    """

    name: str
    func: Callable[..., np.ndarray]
    minimize: bool | None
    description: str
    ideal: float | None = None
    family: Family | None = None
    range_of: Callable[[tuple[float, float]], tuple[float, float]] = field(default=_range_any, repr=False)
    params: dict[str, Any] = field(default_factory=dict)
    needs_overall: bool = False
    why_undefined: Callable[[np.ndarray, pd.Index, str], str | None] | None = field(default=None, repr=False)
    bounds_of: Callable[..., tuple[float, float]] | None = field(default=None, repr=False)

    def bounds(
        self, lower: Any, upper: Any, *, groups: pd.Index, overall: tuple[float, float] | None = None
    ) -> tuple[float, float]:
        """An interval holding the operation's value at every point of a box of group values.

        If each group's value lies in ``[lower[g], upper[g]]`` (and the pooled value in
        ``overall``), the operation's value lies in the interval returned: the image of
        the box, or a stated superset of it (never narrower). This is how a joint
        confidence box of the group rates becomes an interval of the measure.

        Parameters
        ----------
        lower, upper : array-like of shape (n_groups,)
        groups : pandas.Index
        overall : tuple of float, optional
            The box of the pooled value (operations that compare with it).

        Raises
        ------
        TypeError
            A user operation, whose image of a box is unknown.

        Examples
        --------
        >>> absdiff.bounds([0.2, 0.5], [0.4, 0.6], groups=pd.RangeIndex(2))
        (0.09999999999999998, 0.39999999999999997)
        >>> absdiff.bounds([0.2, 0.3], [0.4, 0.6], groups=pd.RangeIndex(2))  # the boxes overlap
        (0.0, 0.39999999999999997)
        """
        if self.bounds_of is None:
            raise TypeError(
                f"the operation {self.name!r} has no interval propagation (a user function of the group values); "
                "use one of the named operations (absdiff, diff, ratio, ...) or a posterior method with draws."
            )
        lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        if self.needs_overall and overall is None:
            raise ValueError(f"the {self.name} operation needs the box of the overall value (overall=...).")
        return self.bounds_of(lo, hi, groups=groups, overall=overall, **self.params)

    @property
    def signed(self) -> bool:
        """Whether the result carries a sign (no better/worse direction)."""
        return self.minimize is None

    @property
    def reference(self) -> Any:
        """The reference group of a ``*_to_reference`` operation, else None."""
        return self.params.get("reference")

    def undefined_reason(self, values: Any, *, groups: pd.Index, metric: str = "the base metric") -> str | None:
        """Why the operation is undefined on 1-D per-group ``values`` that are all defined, or None.

        Examples
        --------
        >>> op = ratio_to_reference("m")
        >>> op.undefined_reason([0.4, 0.0], groups=pd.Index(["f", "m"]), metric="selection_rate")[:49]
        "the ratio to the reference group 'm' is undefined"
        """
        if self.why_undefined is None:
            return None
        return self.why_undefined(np.asarray(values, dtype=float), groups, metric)

    def against(self, reference: Any) -> Operation:
        """The signed comparison of every group with ``reference`` in this family.

        Differences become :func:`diff_to_reference` (other group minus the
        reference), ratios :func:`ratio_to_reference`.

        Examples
        --------
        >>> absdiff.against("m").name
        'diff_to_reference'
        """
        if self.family is None:
            raise ValueError(
                f"reference={reference!r} does not apply to the operation {self.name!r} "
                "(neither a difference nor a ratio); omit reference=."
            )
        return (diff_to_reference if self.family == "difference" else ratio_to_reference)(reference)

    def __call__(self, values: Any, *, groups: pd.Index | None = None, overall: Any = None) -> Any:
        """Reduce the last axis of ``values``; a 1-D input gives a Python float."""
        arr = np.asarray(values, dtype=float)
        if arr.shape[-1] < 1:
            raise ValueError("an operation needs at least one group value.")
        if self.needs_overall and overall is None:
            raise ValueError(f"the {self.name} operation needs the overall value (overall=...).")
        if groups is None:
            groups = pd.RangeIndex(arr.shape[-1])
        out = self.func(arr, groups=groups, overall=None if overall is None else np.asarray(overall, dtype=float))
        return float(out) if np.ndim(out) == 0 else out


def _group_min(v: np.ndarray, **_: Any) -> np.ndarray:
    return v.min(axis=-1)


def _group_max(v: np.ndarray, **_: Any) -> np.ndarray:
    return v.max(axis=-1)


def _absdiff(v: np.ndarray, **_: Any) -> np.ndarray:
    return v.max(axis=-1) - v.min(axis=-1)


def _diff(v: np.ndarray, **_: Any) -> np.ndarray:
    # Signed difference of largest magnitude: between the max and the min group,
    # taken as (earlier group) - (later group) in group order; for two groups x0 - x1.
    spread = _absdiff(v)
    return np.where(v.argmax(axis=-1) <= v.argmin(axis=-1), spread, -spread)


def _ratio_min_max(v: np.ndarray, **_: Any) -> np.ndarray:
    if (v < 0).any():
        raise ValueError("ratio needs non-negative group values; use a difference instead.")
    return _sym_ratio(v.min(axis=-1), v.max(axis=-1))


def _mean_pairwise(v: np.ndarray, **_: Any) -> np.ndarray:
    k = v.shape[-1]
    d = np.abs(v[..., :, None] - v[..., None, :])
    return d.sum(axis=(-2, -1)) / (k * (k - 1)) if k > 1 else np.zeros(v.shape[:-1])


def _sym_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min(a / b, b / a) with 1 where both are 0 and NaN where either is NaN."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)  # NaN in either gives NaN in both
    return np.where(hi == 0, 1.0, _ratio(lo, hi))


def _signed_largest(d: np.ndarray) -> np.ndarray:
    """Along the last axis, the entry of largest magnitude, keeping its sign."""
    idx = np.nanargmax(np.where(np.isnan(d), -np.inf, np.abs(d)), axis=-1)
    out = np.take_along_axis(d, idx[..., None], axis=-1)[..., 0]
    return np.where(np.isnan(d).any(axis=-1), np.nan, out)


def _ref_index(groups: pd.Index, reference: Any) -> int:
    try:
        loc = groups.get_loc(reference)
    except KeyError:
        raise ValueError(
            f"reference={reference!r} is not one of the groups {name_groups(groups)}; pass one of them."
        ) from None
    if not isinstance(loc, (int, np.integer)):
        raise ValueError(f"reference={reference!r} does not name a single group of {name_groups(groups)}.")
    return int(loc)


def _diff_to_overall(v: np.ndarray, groups: pd.Index, overall: np.ndarray) -> np.ndarray:
    return np.abs(v - overall[..., None]).max(axis=-1)


def _ratio_to_overall(v: np.ndarray, groups: pd.Index, overall: np.ndarray) -> np.ndarray:
    return _sym_ratio(v, overall[..., None]).min(axis=-1)


def _diff_to_reference(v: np.ndarray, groups: pd.Index, overall: Any, *, reference: Any) -> np.ndarray:
    r = _ref_index(groups, reference)
    others = np.delete(v, r, axis=-1) - v[..., r : r + 1]
    return _signed_largest(others)


def _ratio_to_reference(v: np.ndarray, groups: pd.Index, overall: Any, *, reference: Any) -> np.ndarray:
    r = _ref_index(groups, reference)
    return _ratio(np.delete(v, r, axis=-1), v[..., r : r + 1]).min(axis=-1)


def _why_ratio_to_reference(v: np.ndarray, groups: pd.Index, metric: str, *, reference: Any) -> str | None:
    if v.ndim != 1 or v[_ref_index(groups, reference)] != 0:
        return None
    return (
        f"the ratio to the reference group {reference!r} is undefined: the reference group's {metric} is 0, "
        "and a ratio divides by it; choose a reference group whose rate is not 0, or compare with "
        "diff_to_reference (a difference is defined)"
    )


# --- images of a box of group values ------------------------------------------------------
# Each returns an interval holding the operation's value at every point of the box
# lower <= v <= upper; where the exact image is awkward a superset is returned, and the
# docstring says so. Used for confidence boxes of group rates (bayes, method="guaranteed").
def _pair_extremes(lo: np.ndarray, hi: np.ndarray) -> float:
    """The largest hi[i] - lo[j] over groups i != j (0 with one group)."""
    if lo.size < 2:
        return 0.0
    d = hi[:, None] - lo[None, :]
    np.fill_diagonal(d, -np.inf)
    return float(d.max())


def _bounds_absdiff(lo: np.ndarray, hi: np.ndarray, **_: Any) -> tuple[float, float]:
    # exact: the spread is smallest when every group sits at a common value (or as close as the box allows)
    return (max(0.0, float(lo.max() - hi.min())), _pair_extremes(lo, hi))


def _bounds_diff(lo: np.ndarray, hi: np.ndarray, **_: Any) -> tuple[float, float]:
    if lo.size == 2:  # exact: x0 - x1
        return (float(lo[0] - hi[1]), float(hi[0] - lo[1]))
    spread = _pair_extremes(lo, hi)  # superset: the sign depends on which groups are extreme
    return (-spread, spread)


def _bounds_ratio(lo: np.ndarray, hi: np.ndarray, **_: Any) -> tuple[float, float]:
    # superset: min(v) >= min(lo) and max(v) <= max(hi); 1 when the boxes share a point
    low = float(lo.min() / hi.max()) if hi.max() > 0 else 1.0
    high = 1.0 if lo.max() <= hi.min() else float(hi.min() / lo.max())
    return (min(low, 1.0), high)


def _bounds_mean_pairwise(lo: np.ndarray, hi: np.ndarray, **_: Any) -> tuple[float, float]:
    k = lo.size
    if k < 2:
        return (0.0, 0.0)
    up = np.maximum(hi[:, None] - lo[None, :], hi[None, :] - lo[:, None])  # each pair at its own extreme: superset
    down = np.maximum(0.0, np.maximum(lo[:, None] - hi[None, :], lo[None, :] - hi[:, None]))
    return (float(down.sum() / (k * (k - 1))), float(up.sum() / (k * (k - 1))))


def _bounds_diff_to_overall(lo: np.ndarray, hi: np.ndarray, *, overall: tuple[float, float], **_: Any):
    # per group, the range of |v - o| over the boxes of v and o; a superset: the pooled value is one box for all
    o_lo, o_hi = overall
    down, up = np.maximum(0.0, np.maximum(lo - o_hi, o_lo - hi)), np.maximum(hi - o_lo, o_hi - lo)
    return (float(down.max()), float(up.max()))


def _bounds_ratio_to_overall(lo: np.ndarray, hi: np.ndarray, *, overall: tuple[float, float], **_: Any):
    # per group, the range of the symmetric ratio of v and o over their boxes
    o_lo, o_hi = overall
    top = np.maximum(hi, o_hi)
    low = np.where(top > 0, np.minimum(lo, o_lo) / np.where(top > 0, top, 1.0), 1.0)
    far = np.maximum(lo, o_lo)
    high = np.where(far <= np.minimum(hi, o_hi), 1.0, np.minimum(hi, o_hi) / np.where(far > 0, far, 1.0))
    return (float(np.minimum(low, 1.0).min()), float(high.min()))


def _bounds_diff_to_reference(
    lo: np.ndarray, hi: np.ndarray, *, groups: pd.Index, reference: Any, **_: Any
) -> tuple[float, float]:
    r = _ref_index(groups, reference)
    o_lo, o_hi = np.delete(lo, r), np.delete(hi, r)
    # exact with two groups; with more, the value is one of the differences: the hull of theirs (superset)
    return (float((o_lo - hi[r]).min()), float((o_hi - lo[r]).max()))


def _bounds_ratio_to_reference(
    lo: np.ndarray, hi: np.ndarray, *, groups: pd.Index, reference: Any, **_: Any
) -> tuple[float, float]:
    r = _ref_index(groups, reference)
    o_lo, o_hi = np.delete(lo, r), np.delete(hi, r)
    low = o_lo / hi[r] if hi[r] > 0 else np.full(o_lo.shape, np.inf)
    high = o_hi / lo[r] if lo[r] > 0 else np.full(o_hi.shape, np.inf)
    return (float(low.min()), float(high.min()))


#: What each named operation computes, in the words of a measure's description ({reference!r}: from its params).
_DESCRIPTIONS = {
    "absdiff": "largest absolute difference between groups (max - min; abs(x1 - x2) for two groups)",
    "diff": "signed difference of largest magnitude, earlier minus later group (x1 - x2 for two groups)",
    "ratio": "smallest ratio between groups (min / max); 1 is perfectly fair",
    "mean_pairwise_absdiff": "mean absolute difference over all ordered pairs of groups",
    "diff_to_overall": "largest absolute difference between a group and the overall value",
    "ratio_to_overall": "smallest symmetric ratio min(x/overall, overall/x) over groups",
    "diff_to_reference": "signed difference to the reference group {reference!r} (other - reference)",
    "ratio_to_reference": "smallest ratio of a group to the reference group {reference!r}",
}


def _by_difference(name: str, func: Callable[..., np.ndarray], minimize: bool | None, **more: Any) -> Operation:
    """A comparison by differences: perfectly fair at 0; a signed one (no direction) ranges over both signs."""
    described = _DESCRIPTIONS[name].format(**more.get("params", {}))
    range_of = _range_signed if minimize is None else _range_spread
    return Operation(name, func, minimize, described, ideal=0.0, family="difference", range_of=range_of, **more)


def _by_ratio(name: str, func: Callable[..., np.ndarray], range_of: Callable = _range_unit, **more: Any) -> Operation:
    """A comparison by ratios: larger is fairer, perfectly fair at 1."""
    described = _DESCRIPTIONS[name].format(**more.get("params", {}))
    return Operation(name, func, False, described, ideal=1.0, family="ratio", range_of=range_of, **more)


absdiff = _by_difference("absdiff", _absdiff, True, bounds_of=_bounds_absdiff)
diff = _by_difference("diff", _diff, None, bounds_of=_bounds_diff)
ratio = _by_ratio("ratio", _ratio_min_max, bounds_of=_bounds_ratio)
mean_pairwise_absdiff = _by_difference("mean_pairwise_absdiff", _mean_pairwise, True, bounds_of=_bounds_mean_pairwise)
diff_to_overall = _by_difference(
    "diff_to_overall", _diff_to_overall, True, needs_overall=True, bounds_of=_bounds_diff_to_overall
)
ratio_to_overall = _by_ratio(
    "ratio_to_overall", _ratio_to_overall, needs_overall=True, bounds_of=_bounds_ratio_to_overall
)


def diff_to_reference(reference: Any) -> Operation:
    """Signed difference to a reference group: ``x_g - x_reference``.

    With two groups this is exactly the other group minus the reference; with more,
    the difference of largest magnitude (keeping its sign).

    Examples
    --------
    >>> op = diff_to_reference("m")
    >>> op([0.7, 0.5], groups=pd.Index(["f", "m"]))
    0.19999999999999996
    """
    func = functools.partial(_diff_to_reference, reference=reference)
    params = {"reference": reference}
    return _by_difference("diff_to_reference", func, None, params=params, bounds_of=_bounds_diff_to_reference)


def ratio_to_reference(reference: Any) -> Operation:
    """Smallest ratio ``x_g / x_reference`` over the other groups.

    Examples
    --------
    >>> ratio_to_reference("m")([0.4, 0.5], groups=pd.Index(["f", "m"]))
    0.8
    """
    return _by_ratio(
        "ratio_to_reference",
        functools.partial(_ratio_to_reference, reference=reference),
        _range_nonneg,
        params={"reference": reference},
        why_undefined=functools.partial(_why_ratio_to_reference, reference=reference),
        bounds_of=_bounds_ratio_to_reference,
    )


def _apply_callable(v: np.ndarray, groups: pd.Index, overall: Any, *, func: Callable[[pd.Series], float]) -> np.ndarray:
    flat = v.reshape(-1, v.shape[-1])
    out = np.array([float(func(pd.Series(row, index=groups))) for row in flat])
    return out.reshape(v.shape[:-1])


def from_callable(
    func: Callable[[pd.Series], float],
    *,
    name: str | None = None,
    minimize: bool | None = True,
    ideal: float | None = None,
) -> Operation:
    """Wrap a user function of the per-group values (a labeled Series) as an operation.

    The function receives a pandas Series indexed by group, so ``lambda x: x["F"]``
    picks one group as in mlr3fairness. On stacked inputs (replicates, draws) it is
    called once per row. Say what the result means: ``minimize`` (True, False, or
    None for a signed result) and ``ideal`` (the perfectly fair value, if any). The
    operation pickles if ``func`` does (a module-level function, not a lambda).

    Examples
    --------
    >>> op = from_callable(lambda x: x["b"] - x["a"], name="b_minus_a", minimize=None, ideal=0.0)
    >>> op([0.25, 0.75], groups=pd.Index(["a", "b"]))
    0.5
    """
    label = name or str(getattr(func, "__name__", "custom"))
    return Operation(label, functools.partial(_apply_callable, func=func), minimize, f"user operation {label}", ideal)


_NAMED = {op.name: op for op in (absdiff, diff, ratio, mean_pairwise_absdiff, diff_to_overall, ratio_to_overall)}
_WITH_REFERENCE = {"diff_to_reference": diff_to_reference, "ratio_to_reference": ratio_to_reference}
_NAMED_ALIASES = {
    "groupdiff_absdiff": "absdiff",
    "groupdiff_diff": "diff",
    "groupdiff_tau": "ratio",
    "difference": "absdiff",
    "between_groups": "absdiff",
    "to_overall": "diff_to_overall",
    "pairwise": "mean_pairwise_absdiff",
}


def get_operation(operation: str | Operation | Callable[..., float], reference: Any = None) -> Operation:
    """Resolve an operation from a name, an :class:`Operation` or a user callable.

    ``"diff_to_reference"`` and ``"ratio_to_reference"`` need ``reference``.

    Examples
    --------
    >>> get_operation("groupdiff_tau").name
    'ratio'
    >>> get_operation("diff_to_reference", reference="m").params
    {'reference': 'm'}
    """
    if isinstance(operation, Operation):
        return operation
    if isinstance(operation, str):
        key = _NAMED_ALIASES.get(operation, operation)
        if key in _WITH_REFERENCE:
            if reference is None:
                raise ValueError(f"operation={operation!r} needs reference= (the reference group).")
            return _WITH_REFERENCE[key](reference)
        if key in _NAMED:
            return _NAMED[key]
        options = [*_NAMED, *_WITH_REFERENCE]
        hint = _did_you_mean(key, [*options, *_NAMED_ALIASES])
        raise ValueError(f"operation={operation!r} is unknown.{hint} Known: {options}, or a callable.")
    if callable(operation):
        return from_callable(operation)
    raise TypeError(f"operation must be a name, an Operation or a callable; got {operation!r}.")
