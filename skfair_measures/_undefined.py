"""Undefined group values: the warning, the reason a result gives, and the ``undefined=`` policy.

A group whose base rate has a zero denominator is NaN. The measure is then NaN
with a warning naming the group, the rate and the fix (``undefined="propagate"``),
leaves that group out of the comparison (``"drop"``), or raises (``"raise"``).

Every message that names groups names them through :func:`name_groups`: at most
:data:`NAMED_GROUPS` of them, then how many more, so a column of 100,000 groups
gives a warning of a line, not of 200 KB. The module imports nothing of ours when
it runs, so every core module may use it.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.exceptions import UndefinedMetricWarning

if TYPE_CHECKING:
    from .base import BaseMetric
    from .operations import Operation
    from .results import MeasureResult

__all__ = ["NAMED_GROUPS", "WEIGHTLESS", "UndefinedGroupWarning", "name_groups", "undefined_groups"]

#: How many groups a message names before it says how many more there are.
NAMED_GROUPS = 10
#: A group name longer than this is cut in messages (the data keep it whole).
_NAME_CHARS = 60


class UndefinedGroupWarning(UndefinedMetricWarning):
    """A group's rate is undefined (zero denominator); the measure is NaN.

    Subclasses scikit-learn's ``UndefinedMetricWarning``, so existing warning
    filters keep working.
    """


def _literal(x: Any) -> Any:
    """A group label as Python writes it: 7, not np.int64(7); a very long name cut."""
    if isinstance(x, tuple):
        return tuple(_literal(v) for v in x)
    if isinstance(x, np.generic):
        x = x.item()
    return x[: _NAME_CHARS - 1] + "\u2026" if isinstance(x, str) and len(x) > _NAME_CHARS else x


def name_groups(groups: Iterable[Any], sizes: Iterable[Any] | None = None, *, limit: int = NAMED_GROUPS) -> str:
    """The groups a message names: at most ``limit``, then how many more.

    Parameters
    ----------
    groups : iterable
        Group labels, in the order to name them.
    sizes : iterable or None, default=None
        Rows per group; given, each group reads ``'a' (12)`` and the names are not
        bracketed.
    limit : int, default=NAMED_GROUPS
        How many groups to name.

    Returns
    -------
    str
        A Python list of the named groups (NumPy scalars as plain numbers, names
        longer than 60 characters cut), followed by ``and N more`` when some are
        not named.

    Examples
    --------
    >>> name_groups(["F", "M"])
    "['F', 'M']"
    >>> name_groups(range(25), limit=3)
    '[0, 1, 2] and 22 more'
    >>> name_groups(["a", "b", "c"], sizes=[3, 1, 2], limit=2)
    "'a' (3), 'b' (1) and 1 more"
    """
    groups = list(groups)
    shown = [_literal(g) for g in groups[:limit]]
    text = repr(shown) if sizes is None else ", ".join(f"{g!r} ({int(n)})" for g, n in zip(shown, sizes, strict=False))
    more = len(groups) - len(shown)
    return f"{text} and {more:,} more" if more > 0 else text


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'a', 'b'?`` naming up to three close matches of a name not found, or ``""``."""
    close = difflib.get_close_matches(name, list(known), n=3)
    return f" Did you mean {', '.join(map(repr, close))}?" if close else ""


#: Why a group whose rows all weigh 0 is undefined: its statistics are those of an absent group.
WEIGHTLESS = "all sample weights of the group are 0"


def undefined_groups(groups: pd.Index, bad: Any, cause: str, weightless: Any = None) -> str:
    """``for group(s) [...] (cause)``: the undefined groups and why, those whose weights are all 0 named apart.

    The one wording of which groups are undefined and why, for the measures' warnings and
    reasons and for the groupwise reductions.

    Parameters
    ----------
    groups : pandas.Index
        All groups.
    bad : array of bool
        Which groups are undefined.
    cause : str
        Why, in the base metric's words (``undefined_when``); may be empty.
    weightless : array of bool, optional
        Which groups have rows whose sample weights are all 0; their cause is the weights.

    Examples
    --------
    >>> undefined_groups(pd.Index(["a", "b", "c"]), [True, False, True], "no positives in y_true", [False, False, True])
    "for group(s) ['a'] (no positives in y_true) and for group(s) ['c'] (all sample weights of the group are 0)"
    """
    bad = np.asarray(bad, dtype=bool)
    zero = bad & np.asarray(weightless, dtype=bool) if weightless is not None else np.zeros_like(bad)
    parts = [(bad & ~zero, f" ({cause})" if cause else ""), (zero, f" ({WEIGHTLESS})")]
    return " and ".join(f"for group(s) {name_groups(groups[np.flatnonzero(m)])}{why}" for m, why in parts if m.any())


def _warn_undefined(
    key: str, base: BaseMetric, groups: pd.Index, bad: np.ndarray, undefined: str, weightless: Any = None
) -> None:
    which = undefined_groups(groups, bad, base.undefined_when, weightless)
    if undefined == "raise":
        raise ValueError(
            f"{base.name} is undefined {which}; {key} cannot be "
            "computed. Merge small groups, collect more data, or pass undefined='drop'."
        )
    dropped = "those groups are dropped from the comparison"
    consequence = dropped if undefined == "drop" else f"{key} is NaN; merge groups or pass undefined='drop'"
    warnings.warn(f"{base.name} is undefined {which}; {consequence}.", UndefinedGroupWarning, stacklevel=5)


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


def _undefined_reason(base: BaseMetric, groups: pd.Index, bad: np.ndarray, weightless: Any = None) -> str:
    """Why a leaf is NaN, in the words of its base metric (or of the weights, for a group weighing 0)."""
    if not bad.any():
        return f"{base.name} is undefined on these samples"
    return f"{base.name} is undefined {undefined_groups(groups, bad, base.undefined_when, weightless)}"


def _joined_reasons(results: Sequence[MeasureResult]) -> str:
    reasons = dict.fromkeys(r.reason for r in results if r.reason is not None)
    return "; ".join(reasons) or "a part is undefined"


def _union_groups(results: Sequence[MeasureResult]) -> list[Any]:
    return list(dict.fromkeys(g for r in results for g in r.undefined_groups))
