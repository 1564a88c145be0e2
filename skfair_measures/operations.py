"""Operations: how the groups are compared.

An operation reduces the last axis of an array of per-group values to one number,
so one function serves a point estimate ``(n_groups,)``, bootstrap replicates
``(n_boot, n_groups)`` and posterior draws ``(chain, draw, n_groups)``. An undefined
group (NaN) makes the result NaN: NaN propagates, it is never skipped silently.

Each operation says whether smaller results are fairer (``minimize``), whether
its result is signed, and what range it has given the base metric's range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "Operation",
    "absdiff",
    "diff",
    "diff_to_overall",
    "diff_to_reference",
    "get_operation",
    "mean_pairwise_absdiff",
    "ratio",
    "ratio_to_overall",
    "ratio_to_reference",
]


@dataclass(frozen=True)
class Operation:
    """A reduction of per-group values to one number.

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
    range_of : callable
        Maps the base metric's ``(lower, upper)`` range to the result's range.
    params : dict
        Parameters shown in the measure's description (e.g. the reference group).

    Examples
    --------
    >>> absdiff([0.5, 0.75, 0.25])
    0.5
    """

    name: str
    func: Callable[..., np.ndarray]
    minimize: bool | None
    description: str
    range_of: Callable[[tuple[float, float]], tuple[float, float]] = field(
        default=lambda r: (-np.inf, np.inf), repr=False
    )
    params: dict[str, Any] = field(default_factory=dict)
    needs_overall: bool = False

    @property
    def signed(self) -> bool:
        """Whether the result carries a sign (no better/worse direction)."""
        return self.minimize is None

    def __call__(
        self,
        values: Any,
        *,
        groups: pd.Index | None = None,
        overall: Any = None,
    ) -> Any:
        """Reduce the last axis of ``values``; a 1-D input gives a Python float."""
        arr = np.asarray(values, dtype=float)
        if arr.shape[-1] < 1:
            raise ValueError("an operation needs at least one group value.")
        if groups is None:
            groups = pd.RangeIndex(arr.shape[-1])
        out = self.func(arr, groups=groups, overall=None if overall is None else np.asarray(overall, dtype=float))
        if np.ndim(out) == 0:
            return float(out)
        return out


def _absdiff(v: np.ndarray, **_: Any) -> np.ndarray:
    return v.max(axis=-1) - v.min(axis=-1)


def _diff(v: np.ndarray, **_: Any) -> np.ndarray:
    # Signed difference of largest magnitude: between the max and the min group,
    # taken as (earlier group) - (later group) in group order; for two groups x0 - x1.
    i_max = v.argmax(axis=-1)
    i_min = v.argmin(axis=-1)
    spread = v.max(axis=-1) - v.min(axis=-1)
    return np.where(i_max <= i_min, spread, -spread)


def _ratio_min_max(v: np.ndarray, **_: Any) -> np.ndarray:
    if (v < 0).any():
        raise ValueError("ratio needs non-negative group values; use a difference instead.")
    lo, hi = v.min(axis=-1), v.max(axis=-1)
    out = np.ones(np.shape(lo))
    np.divide(lo, hi, out=out, where=hi != 0)
    return np.where(np.isnan(lo) | np.isnan(hi), np.nan, out)


def _mean_pairwise(v: np.ndarray, **_: Any) -> np.ndarray:
    k = v.shape[-1]
    d = np.abs(v[..., :, None] - v[..., None, :])
    return d.sum(axis=(-2, -1)) / (k * (k - 1)) if k > 1 else np.zeros(v.shape[:-1])


def _sym_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min(a / b, b / a) with 1 where both are 0 and NaN where either is NaN."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    out = np.ones(np.broadcast(lo, hi).shape)
    np.divide(lo, hi, out=out, where=hi != 0)
    return np.where(np.isnan(lo) | np.isnan(hi), np.nan, out)


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
            f"reference={reference!r} is not one of the groups {list(groups)}; pass one of them."
        ) from None
    if not isinstance(loc, (int, np.integer)):
        raise ValueError(f"reference={reference!r} does not name a single group of {list(groups)}.")
    return int(loc)


def _require_overall(overall: np.ndarray | None, name: str) -> np.ndarray:
    if overall is None:
        raise ValueError(f"the {name} operation needs the overall value (overall=...).")
    return overall


absdiff = Operation(
    "absdiff",
    _absdiff,
    True,
    "largest absolute difference between groups (max - min; abs(x1 - x2) for two groups)",
    range_of=lambda r: (0.0, r[1] - r[0]),
)

diff = Operation(
    "diff",
    _diff,
    None,
    "signed difference of largest magnitude, earlier minus later group (x1 - x2 for two groups)",
    range_of=lambda r: (r[0] - r[1], r[1] - r[0]),
)

ratio = Operation(
    "ratio",
    _ratio_min_max,
    False,
    "smallest ratio between groups (min / max); 1 is perfectly fair",
    range_of=lambda r: (0.0, 1.0),
)

mean_pairwise_absdiff = Operation(
    "mean_pairwise_absdiff",
    _mean_pairwise,
    True,
    "mean absolute difference over all ordered pairs of groups",
    range_of=lambda r: (0.0, r[1] - r[0]),
)

diff_to_overall = Operation(
    "diff_to_overall",
    lambda v, groups, overall: np.abs(v - _require_overall(overall, "diff_to_overall")[..., None]).max(axis=-1),
    True,
    "largest absolute difference between a group and the overall value",
    range_of=lambda r: (0.0, r[1] - r[0]),
    needs_overall=True,
)

ratio_to_overall = Operation(
    "ratio_to_overall",
    lambda v, groups, overall: _sym_ratio(v, _require_overall(overall, "ratio_to_overall")[..., None]).min(axis=-1),
    False,
    "smallest symmetric ratio min(x/overall, overall/x) over groups",
    range_of=lambda r: (0.0, 1.0),
    needs_overall=True,
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

    def func(v: np.ndarray, groups: pd.Index, overall: Any) -> np.ndarray:
        r = _ref_index(groups, reference)
        others = np.delete(v, r, axis=-1) - v[..., r : r + 1]
        return _signed_largest(others)

    return Operation(
        "diff_to_reference",
        func,
        None,
        f"signed difference to the reference group {reference!r} (other - reference)",
        range_of=lambda r: (r[0] - r[1], r[1] - r[0]),
        params={"reference": reference},
    )


def ratio_to_reference(reference: Any) -> Operation:
    """Smallest ratio ``x_g / x_reference`` over the other groups.

    Examples
    --------
    >>> ratio_to_reference("m")([0.4, 0.5], groups=pd.Index(["f", "m"]))
    0.8
    """

    def func(v: np.ndarray, groups: pd.Index, overall: Any) -> np.ndarray:
        r = _ref_index(groups, reference)
        ref = v[..., r : r + 1]
        out = np.full(np.broadcast(np.delete(v, r, axis=-1), ref).shape, np.nan)
        np.divide(np.delete(v, r, axis=-1), ref, out=out, where=ref != 0)
        return out.min(axis=-1)

    return Operation(
        "ratio_to_reference",
        func,
        False,
        f"smallest ratio of a group to the reference group {reference!r}",
        range_of=lambda r: (0.0, np.inf),
        params={"reference": reference},
    )


def from_callable(
    func: Callable[[pd.Series], float], *, name: str | None = None, minimize: bool | None = True
) -> Operation:
    """Wrap a user function of the per-group values (a labelled Series) as an operation.

    The function receives a pandas Series indexed by group, so ``lambda x: x["F"]``
    picks one group as in mlr3fairness. On stacked inputs (replicates, draws) it is
    called once per row.

    Examples
    --------
    >>> op = from_callable(lambda x: x["b"] - x["a"], name="b_minus_a", minimize=None)
    >>> op([0.25, 0.75], groups=pd.Index(["a", "b"]))
    0.5
    """

    def apply(v: np.ndarray, groups: pd.Index, overall: Any) -> np.ndarray:
        flat = v.reshape(-1, v.shape[-1])
        out = np.array([float(func(pd.Series(row, index=groups))) for row in flat])
        return out.reshape(v.shape[:-1])

    label = name or getattr(func, "__name__", "custom")
    return Operation(label, apply, minimize, f"user operation {label}")


_NAMED = {op.name: op for op in (absdiff, diff, ratio, mean_pairwise_absdiff, diff_to_overall, ratio_to_overall)}
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
        if key in ("diff_to_reference", "ratio_to_reference"):
            if reference is None:
                raise ValueError(f"operation={operation!r} needs reference= (the reference group).")
            return diff_to_reference(reference) if key == "diff_to_reference" else ratio_to_reference(reference)
        if key in _NAMED:
            return _NAMED[key]
        import difflib

        options = [*_NAMED, "diff_to_reference", "ratio_to_reference"]
        close = difflib.get_close_matches(key, options + list(_NAMED_ALIASES), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"operation={operation!r} is unknown.{hint} Known: {options}, or a callable.")
    if callable(operation):
        return from_callable(operation)
    raise TypeError(f"operation must be a name, an Operation or a callable; got {operation!r}.")
