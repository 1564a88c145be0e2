"""The one result interface: point values, bootstrap results, posteriors, estimates.

Whatever produced it, a result answers the same questions under the same names:
``value`` (NaN when undefined, with the ``reason``), ``by_group``, ``counts``,
``draws`` where it was sampled, ``interval(prob)`` and ``to_dict()``. Reports,
plots, the CLI and the MLflow plugin read results through this interface only; they
never inspect a result's attributes to learn what it is.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ._undefined import name_groups

if TYPE_CHECKING:  # pragma: no cover
    from .measures import MeasureBase

__all__ = [
    "DEFAULT_EPS",
    "DEFAULT_PROB",
    "MeasureResult",
    "NoIntervalError",
    "Result",
    "UndefinedReplicatesWarning",
    "check_prob",
    "group_labels",
    "group_table",
    "interval_refusal",
    "percentile_interval",
    "plain",
    "replicate_se",
]

#: Half-width of practical fairness (the region of practical equivalence around a
#: measure's ideal value), used by posterior summaries, ``prob_within``, ``rope``, the
#: audit report, the CLI and the MLflow plugin alike. 0.05 is the ROPE width of Ji's
#: dissertation (sections 2.3.6 and 3.7.1); the 0.02 of the NeurIPS paper cannot be
#: resolved with a few hundred labels (a group difference's posterior sd is 0.05-0.1
#: with 100 labels).
DEFAULT_EPS = 0.05

#: The one default level ``prob`` of every interval, verdict and summary (checked by :func:`check_prob`).
DEFAULT_PROB = 0.95

Kind = Literal["point", "bootstrap", "posterior", "estimate"]


class NoIntervalError(ValueError):
    """A point result has no interval; ask for a bootstrap or a posterior."""


class UndefinedReplicatesWarning(UserWarning):
    """Some bootstrap replicates behind an interval are undefined (NaN).

    The message says how many of how many replicates were undefined and whether
    the interval was refused (NaN bounds) or computed from the defined ones; see
    :func:`percentile_interval` for the rule.
    """


def plain(x: Any) -> Any:
    """A JSON-friendly copy of a group label or value (tuples become lists, NaN None).

    Integers stay integers and strings stay strings, so groups ``1`` and ``"1"``
    remain distinct.

    Examples
    --------
    >>> plain(("F", np.int64(1))), plain(np.float64("nan")), plain(True)
    (['F', 1], None, True)
    """
    if isinstance(x, tuple | list):
        return [plain(v) for v in x]
    if isinstance(x, np.generic):  # NumPy booleans, integers, floats and strings as Python's
        x = x.item()
    return None if isinstance(x, float) and math.isnan(x) else x


def group_table(index: pd.Index) -> dict[str, Any]:
    """Group names and labels of an index, JSON-friendly and without merging labels.

    Examples
    --------
    >>> group_table(pd.MultiIndex.from_tuples([("F", 1), ("M", 1)], names=["sex", "race"]))
    {'group_names': ['sex', 'race'], 'groups': [['F', 1], ['M', 1]]}
    """
    names = [None if n is None else str(n) for n in index.names]
    return {"group_names": names, "groups": [plain(g) for g in index]}


def group_labels(groups: pd.Index) -> list[str]:
    """String labels of the groups (tuples of an intersectional index joined by ``", "``).

    Examples
    --------
    >>> group_labels(pd.MultiIndex.from_tuples([("F", "x"), ("M", "y")]))
    ['F, x', 'M, y']
    """
    return [", ".join(map(str, g)) if isinstance(g, tuple) else str(g) for g in groups]


def _aligned(obj: pd.Series | pd.DataFrame | None) -> Any:
    """Values of a per-group Series (a list) or DataFrame (a dict of lists), group order kept."""
    if obj is None:
        return None
    if isinstance(obj, pd.DataFrame):
        return {str(c): [plain(v) for v in obj[c].tolist()] for c in obj.columns}
    return [plain(v) for v in obj.tolist()]


class Result:
    """Base class of every result: the interface the rest of the library reads.

    Subclasses set ``key``, ``value``, ``measure`` and ``kind`` and override the
    properties they compute. Defaults: no per-group values, no counts, no draws,
    no interval.

    Attributes
    ----------
    key : str
        The measure's key.
    value : float
        The estimate (NaN when undefined; ``reason`` says why).
    measure : MeasureBase or None
        The measure that produced the result.
    kind : {"point", "bootstrap", "posterior", "estimate"}
        What produced it.
    """

    key: str
    value: float
    measure: MeasureBase | None = None
    kind: Kind = "point"
    # What a subclass computed, if it stores it as it is; the properties below read these.
    _by_group: pd.Series | pd.DataFrame | None = None
    _counts: pd.Series | None = None
    _draws: np.ndarray | None = None
    _reason: str | None = None

    @property
    def by_group(self) -> pd.Series | pd.DataFrame | None:
        """Per-group values of the base metric(s), or None."""
        return self._by_group

    @property
    def counts(self) -> pd.Series | None:
        """(Weighted) number of samples per group, or None."""
        return self._counts

    @property
    def draws(self) -> np.ndarray | None:
        """Sampled values of the measure (bootstrap replicates, posterior draws), or None."""
        return self._draws

    @property
    def reason(self) -> str | None:
        """Why ``value`` is undefined (NaN), or None when it is defined."""
        if not math.isnan(self.value):
            return None
        return self._reason or "the value is undefined"

    @property
    def defined(self) -> bool:
        """Whether ``value`` is a number."""
        return not math.isnan(self.value)

    def interval(self, prob: float = 0.95) -> tuple[float, float]:
        """Equal-tailed interval of probability ``prob``.

        Results without draws have none; bootstrap results and posteriors do.
        """
        raise NoIntervalError(
            f"{self.key} is a point value and has no interval; use the measure's "
            "bootstrap(...) or posterior(...) for one."
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dictionary that keeps every group (labels as lists, not strings)."""
        out: dict[str, Any] = {"key": self.key, "kind": self.kind, "value": plain(self.value)}
        if self.reason is not None:
            out["reason"] = self.reason
        by_group, counts = self.by_group, self.counts
        frame = counts if by_group is None else by_group  # the groups' index
        if frame is not None:
            out.update(group_table(frame.index))
        out["by_group"], out["counts"] = _aligned(by_group), _aligned(counts)
        if self.measure is not None:
            out.update(minimize=self.measure.minimize, ideal=self.measure.ideal)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self.key!r}, value={self.value!r})"


class MeasureResult(Result):
    """The value of a measure with its per-group values and group counts.

    The pandas objects are built on first access, so evaluating many measures stays
    cheap when only the values are read.

    Attributes
    ----------
    key : str
        Measure key, e.g. ``"fairness.tpr"``.
    value : float
        The measure's value (NaN if undefined).
    by_group : pandas.Series or pandas.DataFrame
        Base-metric value per group (a DataFrame with one column per component
        measure for composites).
    counts : pandas.Series
        Number of samples (weighted if weights were given) per group.
    overall : float or pandas.Series or None
        Base metric on all samples pooled.
    undefined_groups : list
        Groups whose base metric was undefined (zero denominator).
    measure : Measure or None
        The measure that produced the result (its configuration: base, operation, ...).

    Examples
    --------
    >>> from skfair_measures import msr
    >>> res = msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=[1, 1, "1", "1"])
    >>> res.to_dict()["groups"], res.to_dict()["by_group"]
    ([1, '1'], [0.5, 1.0])
    """

    kind: Kind = "point"

    def __init__(
        self,
        key: str,
        value: float,
        by_group: pd.Series | pd.DataFrame | Callable[[], Any] | None = None,
        counts: pd.Series | Callable[[], pd.Series] | None = None,
        overall: float | pd.Series | Callable[[], Any] | None = None,
        undefined_groups: Any = (),
        measure: MeasureBase | None = None,
        reason: str | None = None,
    ) -> None:
        self.key, self.measure, self.value, self._reason = key, measure, value, reason
        self._lazy = {"by_group": by_group, "counts": counts, "overall": overall}
        self.undefined_groups = list(undefined_groups)
        #: The small groups that decide the value, with the value without them (set by the doors), or None.
        self.small_groups_note: str | None = None

    def _get(self, name: str) -> Any:
        obj = self._lazy[name]
        if callable(obj):
            obj = self._lazy[name] = obj()
        return obj

    def __getstate__(self) -> dict[str, Any]:
        # Build the lazy parts before pickling: closures do not pickle.
        for name in self._lazy:
            self._get(name)
        return self.__dict__

    @property
    def by_group(self) -> pd.Series | pd.DataFrame | None:
        return self._get("by_group")

    @property
    def counts(self) -> pd.Series | None:
        return self._get("counts")

    @property
    def overall(self) -> float | pd.Series | None:
        return self._get("overall")

    @property
    def minimize(self) -> bool | None:
        """Whether smaller values are better (None for signed measures)."""
        return None if self.measure is None else self.measure.minimize

    @property
    def reason(self) -> str | None:
        if not math.isnan(self.value):
            return None
        if self._reason is not None:
            return self._reason
        if self.undefined_groups:
            return f"undefined for group(s) {name_groups(self.undefined_groups)}"
        return "the value is undefined"

    @property
    def attrs(self) -> dict[str, Any]:
        """What else is known about how the value was computed, e.g. an approximation and its error bound.

        Empty for exact values. A distribution distance of an engine's binned predictions
        holds ``binned``, ``bins``, ``bin_width``, ``error_bound`` and ``approximation``.
        """
        return self.__dict__.setdefault("_attrs", {})

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        overall = self.overall
        out["overall"] = _aligned(overall) if isinstance(overall, pd.Series) else plain(overall)
        out["undefined_groups"] = [plain(g) for g in self.undefined_groups]
        if self.__dict__.get("_attrs"):
            out["attrs"] = {k: plain(v) for k, v in self.attrs.items()}
        return out


# -- intervals from replicates -----------------------------------------------------------
def _undefined(draws: Any) -> tuple[np.ndarray, int]:
    """The replicates as a flat float array, and how many are undefined (NaN or infinite)."""
    draws = np.ravel(np.asarray(draws, dtype=float))
    if draws.size == 0:
        raise ValueError("draws is empty; an interval needs at least one replicate (pass n_boot >= 2).")
    return draws, int(draws.size - np.isfinite(draws).sum())


def interval_refusal(draws: Any, prob: float) -> str | None:
    """Why no equal-tailed ``prob`` interval is given from these replicates, or None.

    The interval is refused when the share of undefined replicates exceeds the mass
    of one tail, ``(1 - prob) / 2``: see :func:`percentile_interval`.

    Parameters
    ----------
    draws : array-like
        Bootstrap replicates of a measure, NaN where a replicate was undefined.
    prob : float
        Interval probability, in (0, 1).

    Returns
    -------
    str or None
        The reason (counts, tail share and probability), or None when the interval
        can be computed.

    Examples
    --------
    >>> print(interval_refusal([0.1, 0.2, float("nan"), 0.3], 0.95))
    1 of 4 bootstrap replicates are undefined, more than the 0.025 share of one tail
    of a 0.95 interval (they could all lie in one tail): no interval
    >>> interval_refusal([0.1, 0.2, 0.3], 0.95) is None
    True
    """
    check_prob(prob)
    draws, n_undefined = _undefined(draws)
    refused = _refused(draws.size, n_undefined, prob)
    return _counts_text(draws.size, n_undefined, prob) + ": no interval" if refused else None


def _refused(n: int, n_undefined: int, prob: float) -> bool:
    # a relative tolerance keeps exactly one tail's share (10 of 100 at prob=0.8) on the given side
    return n_undefined - (1.0 - prob) / 2.0 * n > 1e-9 * n


def _counts_text(n: int, n_undefined: int, prob: float, key: str | None = None, cause: str | None = None) -> str:
    """'k of n bootstrap replicates [of key] are undefined [(cause)], more than / no more than ...'."""
    of = f" of {key}" if key else ""
    why = f" ({cause})" if cause else ""
    share = f"the {(1.0 - prob) / 2.0:.3g} share of one tail of a {prob:g} interval"
    refused = _refused(n, n_undefined, prob)
    compare = f"more than {share} (they could all lie in one tail)" if refused else f"no more than {share}"
    return f"{n_undefined} of {n} bootstrap replicates{of} are undefined{why}, {compare}"


def percentile_interval(
    draws: Any, prob: float, *, estimate: float, key: str, cause: str | None = None, warn: bool = True
) -> tuple[float, float]:
    """Equal-tailed percentile interval of bootstrap replicates, some of which may be undefined.

    The one rule for undefined (NaN) replicates, shared by every result with
    replicates:

    * NaN bounds when ``estimate`` is NaN: there is nothing to put an interval around.
    * NaN bounds when the share of undefined replicates exceeds the mass of one tail,
      ``(1 - prob) / 2`` (2.5% at ``prob=0.95``). An undefined replicate has no
      value, so it could lie in either tail; if more of them are missing than one
      tail holds, they could all belong to the lower (or the upper) tail, and the
      quantile that bound needs is not known from the defined replicates.
    * Otherwise the ``(1 - prob) / 2`` and ``(1 + prob) / 2`` quantiles of the
      defined replicates.

    Whenever a replicate is undefined, an :class:`UndefinedReplicatesWarning` says
    how many of how many, and whether the interval was refused.

    Parameters
    ----------
    draws : array-like
        Bootstrap replicates of the measure; NaN (or infinite) marks an undefined one.
    prob : float
        Interval probability, in (0, 1).
    estimate : float
        The estimate on the observed data.
    key : str
        The measure's key, named in the warning.
    cause : str, optional
        What makes a replicate undefined (e.g. "a group rate with zero
        denominator"), named in the warning.
    warn : bool, default=True
        Whether to warn about undefined replicates.

    Returns
    -------
    (float, float)
        Lower and upper bounds, or NaN bounds.

    Examples
    --------
    >>> import warnings
    >>> draws = np.linspace(0.0, 1.0, 101)
    >>> percentile_interval(draws, 0.9, estimate=0.5, key="fairness.tpr")
    (0.05, 0.95)
    >>> draws[:10] = np.nan  # 10 of 101 undefined: more than a 0.05 tail
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     percentile_interval(draws, 0.9, estimate=0.5, key="fairness.tpr")
    (nan, nan)
    >>> print(caught[0].message)
    10 of 101 bootstrap replicates of fairness.tpr are undefined, more than the 0.05 share
    of one tail of a 0.9 interval (they could all lie in one tail); the interval is refused (NaN bounds).
    """
    check_prob(prob)
    draws, n_undefined = _undefined(draws)
    if math.isnan(estimate):
        return (float("nan"), float("nan"))
    if n_undefined and warn:
        _warn_undefined(draws.size, n_undefined, prob, key, cause)
    if _refused(draws.size, n_undefined, prob):
        return (float("nan"), float("nan"))
    tail = (1.0 - prob) / 2.0
    lo, hi = np.quantile(draws[np.isfinite(draws)], [tail, 1.0 - tail])
    return float(lo), float(hi)


def replicate_se(draws: Any, *, estimate: float) -> float:
    """Bootstrap standard error: the standard deviation (``ddof=1``) of the defined replicates.

    NaN when ``estimate`` is NaN or fewer than two replicates are defined. Undefined
    replicates are left out (the interval's warning reports them).

    Examples
    --------
    >>> replicate_se([1.0, 2.0, 3.0, float("nan")], estimate=2.0)
    1.0
    >>> replicate_se([1.0, float("nan")], estimate=1.0)
    nan
    """
    draws = np.ravel(np.asarray(draws, dtype=float))
    ok = draws[np.isfinite(draws)]
    return float("nan") if math.isnan(estimate) or ok.size < 2 else float(np.std(ok, ddof=1))


def check_prob(prob: Any, name: str = "prob") -> float:
    """The one check of a level (``prob``: the mass of an interval, a credible level, a bound's quantile).

    Every entry point that takes a level calls this, so one rule and one message
    hold everywhere: a real number strictly between 0 and 1 (not a bool, not NaN).

    Parameters
    ----------
    prob : object
        The level given.
    name : str, default="prob"
        The argument's name, for the message (the public API calls it ``prob``).

    Returns
    -------
    float

    Examples
    --------
    >>> check_prob(0.9)
    0.9
    >>> check_prob(95)
    Traceback (most recent call last):
    ...
    ValueError: prob=95; pass a probability in (0, 1), e.g. 0.95.
    """
    ok = isinstance(prob, int | float | np.integer | np.floating) and not isinstance(prob, bool | np.bool_)
    if not (ok and 0.0 < prob < 1.0):
        raise ValueError(f"{name}={prob!r}; pass a probability in (0, 1), e.g. 0.95.")
    return float(prob)


def _warn_undefined(n: int, n_undefined: int, prob: float, key: str, cause: str | None) -> None:
    text, refused = _counts_text(n, n_undefined, prob, key, cause), _refused(n, n_undefined, prob)
    then = "the interval is refused (NaN bounds)" if refused else f"the interval uses the other {n - n_undefined}"
    warnings.warn(f"{text}; {then}.", UndefinedReplicatesWarning, stacklevel=4)
