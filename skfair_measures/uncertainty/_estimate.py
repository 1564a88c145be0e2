"""The one result type of an estimate with its uncertainty, and the one summary row of it.

Whatever made it (a bootstrap, a posterior, a betting confidence sequence, prediction-powered
inference, a proxy or quantification estimator, the monitor), an :class:`Estimate` answers the
same questions under the same names: the ``value`` and the ``n`` rows it used, the ``target``
its interval is about, the ``construction`` that made the interval (in words a reader knows),
``interval(prob)``, ``prob_within(eps)`` and ``prob_greater(x)`` where the construction defines
a probability (NaN with :attr:`Estimate.no_prob_reason` where it does not), ``verdict(eps)``
read off the interval, and one ``summary()`` row whose columns (:data:`SUMMARY_COLUMNS`) every
table of estimates shares. The level is always called ``prob`` (default :data:`DEFAULT_PROB`,
checked by :func:`~skfair_measures.results.check_prob`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..results import (
    DEFAULT_EPS,
    DEFAULT_PROB,
    NoIntervalError,
    Result,
    check_prob,
    interval_refusal,
    percentile_interval,
    plain,
)
from ._bands import check_eps, classify

__all__ = ["DEFAULT_PROB", "SUMMARY_COLUMNS", "Estimate", "ReplicatesResult", "summarize"]

#: The columns of every summary row, in order: what sinks (report, CLI, MLflow, tables) read.
SUMMARY_COLUMNS = (
    "measure",
    "value",
    "lower",
    "upper",
    "prob",
    "construction",
    "target",
    "n",
    "eps",
    "prob_within",
    "verdict",
    "note",
)

Verdict = Literal["within", "exceeds", "inconclusive"]
_NAN = float("nan")


class Estimate(Result):
    """An estimate of a measure with its uncertainty: one value, one interval, one story.

    Built by the library's doors (bootstrap, posteriors, guaranteed intervals, the unaware
    estimators, the monitor, ...); subclasses compute their interval and probabilities
    themselves by overriding :meth:`interval` and :meth:`_prob_draws`. Built directly, the
    interval comes from ``interval`` (a function of ``prob``, or fixed bounds valid at
    ``prob`` only) or, without it, from ``draws`` (equal-tailed percentiles).

    Parameters
    ----------
    key : str
        The measure's key, e.g. ``"fairness.tpr"``.
    value : float
        The estimate; NaN when undefined (``reason`` says why).
    construction : str
        What made the interval, in words a reader knows: ``"percentile bootstrap"``,
        ``"Beta-Binomial posterior"``, ``"betting, without replacement"``, ...
    n : int, optional
        Rows the value used.
    target : {"audited rows", "population"}, default="audited rows"
        What the interval is about: the value on the rows audited, or in the population
        they were drawn from.
    interval : callable or tuple of float, optional
        ``prob -> (low, high)``, or ``(low, high)`` at level ``prob`` only.
    draws : array-like, optional
        Sampled values of the measure (bootstrap replicates, posterior draws).
    posterior : bool, default=False
        Whether ``draws`` are posterior draws, so that ``prob_within`` and
        ``prob_greater`` are their shares; otherwise those are NaN with ``no_prob_reason``.
    prob : float, default=DEFAULT_PROB
        The default level of :meth:`interval`, :meth:`verdict` and :meth:`summary`.
    center : float, optional
        The value of perfect fairness (0 for a difference, 1 for a ratio); default: the
        measure's ideal, else 0.
    by_group : pandas.Series or pandas.DataFrame, optional
        Per-group values.
    reason : str, optional
        Why ``value`` is NaN.
    no_prob_reason : str, optional
        Why the construction gives no probabilities (default: said from ``construction``).

    Examples
    --------
    >>> from skfair_measures.uncertainty import Estimate
    >>> est = Estimate("fairness.tpr", 0.02, construction="Beta-Binomial posterior", n=400,
    ...                draws=np.linspace(-0.03, 0.07, 101), posterior=True)
    >>> [round(b, 3) for b in est.interval(0.9)], round(est.prob_within(0.05), 3), est.verdict(0.05)
    ([-0.025, 0.065], 0.802, 'inconclusive')
    >>> est.summary()[["measure", "n", "verdict"]].values.tolist()
    [['fairness.tpr', 400, 'inconclusive']]
    >>> ci = Estimate("fairness.tpr", 0.02, construction="Wilson score", interval=(0.0, 0.04))
    >>> ci.verdict(0.05), ci.prob_within(0.05), ci.no_prob_reason
    ('within', nan, 'a Wilson score interval is a confidence interval; it gives no probabilities')
    """

    kind = "estimate"
    prob: float = DEFAULT_PROB
    _center: float | None = None
    n: int | None = None
    target: str = "audited rows"
    construction: str = ""
    _interval: Callable[[float], tuple[float, float]] | tuple[float, float] | None = None
    _posterior: bool = False
    _no_prob_reason: str | None = None

    def __init__(
        self,
        key: str,
        value: float,
        *,
        construction: str,
        n: int | None = None,
        target: str = "audited rows",
        interval: Callable[[float], tuple[float, float]] | tuple[float, float] | None = None,
        draws: Any = None,
        posterior: bool = False,
        prob: float = DEFAULT_PROB,
        center: float | None = None,
        by_group: pd.Series | pd.DataFrame | None = None,
        reason: str | None = None,
        no_prob_reason: str | None = None,
        measure: Any = None,
    ) -> None:
        if interval is None and draws is None:
            raise ValueError(f"{key}: pass interval= (bounds or a function of prob) or draws=; an estimate needs one.")
        self.key, self.value, self.construction, self.target = key, float(value), construction, target
        self.n = None if n is None else int(n)
        self._interval = interval if callable(interval) or interval is None else tuple(map(float, interval))
        self._draws = None if draws is None else np.ravel(np.asarray(draws, dtype=float))
        self._posterior = bool(posterior and draws is not None)
        self.prob, self._center = check_prob(prob), None if center is None else float(center)
        self._by_group, self._reason, self._no_prob_reason, self.measure = by_group, reason, no_prob_reason, measure

    @property
    def center(self) -> float:
        """The value of perfect fairness the verdict and ``prob_within`` measure from (the measure's ideal)."""
        if self._center is not None:
            return self._center
        ideal = getattr(self.measure, "ideal", None)
        return 0.0 if ideal is None else float(ideal)

    # -- the interval ---------------------------------------------------------------------
    def interval(self, prob: float | None = None) -> tuple[float, float]:
        """Interval of level ``prob`` (default: the estimate's ``prob``); NaN bounds when undefined.

        Returns
        -------
        tuple of float
            ``(low, high)``.
        """
        prob = self.prob if prob is None else check_prob(prob)
        if callable(self._interval):
            lo, hi = self._interval(prob)
            return float(lo), float(hi)
        if self._interval is not None:
            if not math.isclose(prob, self.prob):
                raise ValueError(
                    f"prob={prob!r}; {self.key}'s {self.construction} interval was made at prob={self.prob:g} only."
                )
            return self._interval
        return percentile_interval(self._draws, prob, estimate=self.value, key=self.key, warn=False)

    def interval_reason(self, prob: float | None = None) -> str | None:
        """Why ``interval(prob)`` has NaN bounds although the value is defined, or None."""
        if not self.defined or self._interval is not None or self._draws is None:
            return None
        return interval_refusal(self._draws, self.prob if prob is None else prob)

    # -- probabilities ------------------------------------------------------------------------
    def _prob_draws(self) -> np.ndarray | None:
        """Draws whose shares are probabilities (posterior draws), or None when the construction has none."""
        return self._draws if self._posterior else None

    @property
    def no_prob_reason(self) -> str | None:
        """Why :meth:`prob_within` and :meth:`prob_greater` are NaN, or None when they are numbers."""
        if self._prob_draws() is not None:
            return None if self.defined and not np.isnan(self._prob_draws()).any() else self.reason or "undefined draws"
        if self._no_prob_reason is not None:
            return self._no_prob_reason
        return f"a {self.construction} interval is a confidence interval; it gives no probabilities"

    def prob_greater(self, x: float = 0.0) -> float:
        """Probability that the measure exceeds ``x``, where the construction defines one; NaN otherwise."""
        return self._share(lambda d: d > x)

    def prob_within(self, eps: float = DEFAULT_EPS) -> float:
        """Probability of practical fairness, ``P(|measure - center| <= eps)``, where defined; NaN otherwise."""
        eps = check_eps(eps)
        return self._share(lambda d: np.abs(d - self.center) <= eps)

    def _share(self, inside: Callable[[np.ndarray], np.ndarray]) -> float:
        """The share of the probability draws ``inside`` holds, where the construction defines one; NaN otherwise."""
        draws = self._prob_draws()
        return _NAN if draws is None or self.no_prob_reason is not None else float(np.mean(inside(draws)))

    # -- the verdict and the summary row ------------------------------------------------------
    def verdict(self, eps: float = DEFAULT_EPS, prob: float | None = None) -> Verdict:
        """``"within"``, ``"exceeds"`` or ``"inconclusive"``: where the interval lies against ``center +- eps``.

        ``"within"`` when the whole interval lies in ``[center - eps, center + eps]``, ``"exceeds"`` when
        it lies wholly outside, else (or with NaN bounds) ``"inconclusive"``.
        """
        return self._verdict(*self.interval(prob), check_eps(eps))

    def _verdict(self, lo: float, hi: float, eps: float) -> Verdict:
        verdict = classify([lo - self.center], [hi - self.center], eps)[0]
        return "inconclusive" if verdict == "undefined" else verdict

    def note(self, prob: float | None = None) -> str:
        """What a reader should know beside the numbers: why a value, interval or probability is missing."""
        parts = [self.reason, self.interval_reason(prob), self.no_prob_reason]
        return "; ".join(dict.fromkeys(p for p in parts if p))

    def summary(self, prob: float | None = None, eps: float | None = None) -> pd.DataFrame:
        """The one summary row: a one-row DataFrame with exactly :data:`SUMMARY_COLUMNS`.

        Parameters
        ----------
        prob : float, optional
            The interval's level (default: the estimate's ``prob``).
        eps : float, optional
            Half-width of practical fairness (default :data:`~skfair_measures.results.DEFAULT_EPS`).
        """
        prob, eps = self.prob if prob is None else check_prob(prob), DEFAULT_EPS if eps is None else check_eps(eps)
        try:
            (lo, hi), missing = self.interval(prob), None
        except NoIntervalError as error:  # a result built without replicates: the value, and why no interval
            (lo, hi), missing = (_NAN, _NAN), str(error)
        note = "; ".join(p for p in (missing, self.note(prob) if missing is None else self.reason) if p)
        row = (self.key, self.value, lo, hi, prob, self.construction, self.target, self.n, eps)
        row += (self.prob_within(eps), self._verdict(lo, hi, eps), note)
        return pd.DataFrame([row], columns=list(SUMMARY_COLUMNS))

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict() | {k: plain(v) for k, v in self.summary().iloc[0].items() if k != "measure"}
        if self._draws is not None and (refusal := self.interval_reason()) is not None:
            out["interval_reason"] = refusal
        return out

    def __repr__(self) -> str:
        lo, hi = self.interval()
        return (
            f"<{type(self).__name__} {self.key}: {self.value:.4g} in [{lo:.4g}, {hi:.4g}] "
            f"({self.prob:g} {self.construction}, {self.target})>"
        )


class ReplicatesResult(Estimate):
    """An estimate whose interval comes from bootstrap replicates (``_draws``).

    The interval is :meth:`_mapped` where a subclass gives one (a joint band of the signed
    parts mapped through the measure's operations: :func:`mapped_interval`), else the percentile
    interval (:func:`~skfair_measures.results.percentile_interval`); both are refused (NaN
    bounds) when more replicates are undefined than one tail's share. A confidence interval:
    no probabilities. Subclasses set ``prob``, and may override :meth:`_replicate_cause` (what
    makes a replicate undefined, for the warning) and ``_no_replicates_hint``.
    """

    construction = "percentile bootstrap"
    _no_replicates_hint: str = "use the measure's bootstrap()"
    _no_prob_reason = "a bootstrap interval is a confidence interval: no probability (replicates are not a posterior)"

    def _replicate_cause(self) -> str | None:
        return None

    def _mapped(self, prob: float) -> tuple[float, float] | None:
        return None

    def interval(self, prob: float | None = None) -> tuple[float, float]:
        """Interval of level ``prob`` (default: the result's ``prob``); NaN bounds when undefined or refused.

        Raises
        ------
        NoIntervalError
            Without bootstrap replicates.
        """
        prob = self.prob if prob is None else check_prob(prob)
        draws = self._replicates()
        if self.defined and interval_refusal(draws, prob) is None and (mapped := self._mapped(prob)) is not None:
            return mapped
        return percentile_interval(draws, prob, estimate=self.value, key=self.key, cause=self._replicate_cause())

    def interval_reason(self, prob: float | None = None) -> str | None:
        """Why ``interval(prob)`` is refused (NaN bounds) although the value is defined, or None."""
        if not self.defined:
            return None
        return interval_refusal(self._replicates(), self.prob if prob is None else prob)

    def _replicates(self) -> np.ndarray:
        if self._draws is None:
            raise NoIntervalError(
                f"{self.key} was estimated without bootstrap replicates and has no interval; "
                f"{self._no_replicates_hint}."
            )
        return np.asarray(self._draws, dtype=float)


def summarize(
    estimates: Iterable[Estimate] | Mapping[Any, Estimate], prob: float | None = None, eps: float | None = None
) -> pd.DataFrame:
    """The summary rows of many estimates in one table (columns :data:`SUMMARY_COLUMNS`).

    Parameters
    ----------
    estimates : iterable or mapping of Estimate
        The estimates (a mapping's values), in order; tables of summary rows are taken as they are.
    prob, eps : float, optional
        As for :meth:`Estimate.summary`.

    Examples
    --------
    >>> from skfair_measures.uncertainty import Estimate, summarize
    >>> a = Estimate("fairness.tpr", 0.1, construction="Wilson score", interval=(0.06, 0.15))
    >>> b = Estimate("fairness.fpr", 0.0, construction="Wilson score", interval=(0.0, 0.02))
    >>> summarize([a, b])[["measure", "verdict"]].values.tolist()
    [['fairness.tpr', 'exceeds'], ['fairness.fpr', 'within']]
    """
    items = estimates.values() if isinstance(estimates, Mapping) else estimates
    rows = [e if isinstance(e, pd.DataFrame) else e.summary(prob, eps) for e in items]
    if not rows:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    return pd.concat(rows, ignore_index=True)[list(SUMMARY_COLUMNS)]
