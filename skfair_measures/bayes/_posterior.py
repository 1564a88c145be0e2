"""The posterior of a fairness measure: draws, summaries and ArviZ conversion.

A :class:`MeasurePosterior` holds draws of every base metric in every group,
shape ``(chain, draw, group)``, and the draws of the measure itself, shape
``(chain, draw)``, obtained by running the group draws through the measure's own
operations (:meth:`~skfair_measures.Measure.from_group_values`): the posterior and
the point estimate share one code path. It is a :class:`~skfair_measures.results.Result`.
Summaries are plain Python floats; intervals, the region of practical equivalence
and the summary table follow seed 000 section 3 and seed 002 chapter 2.

NaN discipline: when any draw of the measure is undefined (a group rate with a zero
denominator), every summary is NaN, the probabilities ``prob_*`` are NaN and
:meth:`MeasurePosterior.rope` gives no verdict; :attr:`MeasurePosterior.reason` says
why. A share of draws is never silently read as a probability.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._optional import require
from .._verdicts import VerdictFamily, verdicts
from ..measures import MeasureBase, UndefinedGroupWarning
from ..results import DEFAULT_EPS, check_prob, plain
from ..uncertainty import Estimate, check_eps
from ._method import group_labels

__all__ = ["DEFAULT_EPS", "MeasurePosterior", "RopeResult", "SamplingWarning", "warn_undefined"]

# DEFAULT_EPS, the one half-width of practical fairness, is decided in the core (results.py).


_STATS = (
    "diverging",
    "step_size",
    "n_steps",
    "depth",
    "energy",
    "logp",
    "lp",
    "tree_depth",
    "acceptance_rate",
    "mean_tree_accept",
)


class SamplingWarning(UserWarning):
    """MCMC diagnostics are bad: divergences, large R-hat or a small effective sample size."""


def _import_arviz() -> Any:
    """Import ArviZ lazily, silencing its announcement of a future refactor."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return require("arviz", "posterior summaries (ArviZ)")


def external_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` that points at the first frame outside the package."""
    package = str(Path(__file__).resolve().parents[1])
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def warn_undefined(key: str, reason: str) -> None:
    """Warn that a posterior is undefined, with the reason (one message for every method)."""
    message = f"{key}: {reason}; its summaries are NaN and rope() gives no verdict. Merge small groups or add data."
    warnings.warn(message, UndefinedGroupWarning, stacklevel=external_stacklevel())


@dataclass(frozen=True)
class RopeResult:
    """Posterior mass below, inside and above a region of practical equivalence.

    Seed 002 section 2.3.6: with ``mu = (P(Delta < c - eps), P(|Delta - c| <= eps),
    P(Delta > c + eps))`` the verdict is the region of largest mass, and that mass
    is the confidence of the verdict.

    Attributes
    ----------
    below, within, above : float
        Posterior probabilities of the three regions (they sum to 1); NaN when the
        posterior is undefined.
    eps : float
        Half-width of the region.
    center : float
        Value of perfect fairness (0 for a difference, 1 for a ratio).
    reason : str or None
        Why there is no verdict (the posterior has undefined draws).
    verdict : {"below", "equivalent", "above"} or None
        The region of largest posterior mass; None when undefined.
    probability : float
        That mass (NaN when undefined).

    Examples
    --------
    >>> r = RopeResult(0.01, 0.9, 0.09, eps=0.05, center=0.0)
    >>> r.verdict, r.probability
    ('equivalent', 0.9)
    >>> print(RopeResult(float("nan"), float("nan"), float("nan"), eps=0.05, reason="ppv undefined"))
    no verdict: ppv undefined
    """

    below: float
    within: float
    above: float
    eps: float
    center: float = 0.0
    reason: str | None = None

    @property
    def defined(self) -> bool:
        """Whether the three masses are numbers (a verdict exists)."""
        return not np.isnan([self.below, self.within, self.above]).any()

    @property
    def verdict(self) -> str | None:
        """``"below"``, ``"equivalent"`` or ``"above"``: the region of largest mass (None if undefined)."""
        if not self.defined:
            return None
        return ("below", "equivalent", "above")[int(np.argmax([self.below, self.within, self.above]))]

    @property
    def probability(self) -> float:
        """Posterior probability of the verdict's region (NaN if undefined)."""
        return max(self.below, self.within, self.above) if self.defined else float("nan")

    def __str__(self) -> str:
        if not self.defined:
            return f"no verdict: {self.reason or 'the posterior is undefined'}"
        lo, hi = self.center - self.eps, self.center + self.eps
        where = {
            "below": f"below {lo:g}",
            "equivalent": f"practically fair (within [{lo:g}, {hi:g}])",
            "above": f"above {hi:g}",
        }[self.verdict]
        return f"{where} with probability {self.probability:.3f}"


_NAN = float("nan")


@dataclass(eq=False, repr=False)
class MeasurePosterior(Estimate):
    """Posterior draws of a fairness measure and of its base metrics per group.

    Returned by :func:`skfair_measures.bayes.posterior`; not meant to be built by
    hand. An :class:`~skfair_measures.uncertainty.Estimate`: ``value``, ``n``, ``target``,
    ``construction``, ``interval(prob)``, ``prob_within(eps)``, ``verdict(eps)`` and
    ``summary()``. Its interval, probabilities and verdict come from one construction: the
    posterior draws, or, for ``method="guaranteed"`` (and ``"auto"`` when it widens its
    interval to hold another construction's estimate), a box mapped through the measure,
    which is a confidence interval and gives no probabilities (NaN, with ``no_prob_reason``).

    Attributes
    ----------
    measure : Measure
        The measure whose draws these are. With ``reference=`` this is the signed
        version (other group minus reference) of the measure asked for.
    chain_draws : ndarray of shape (chain, draw)
        Draws of the measure, by chain (``draws`` is the flat view).
    group_draws : dict of str to ndarray of shape (chain, draw, group)
        Draws of every base metric in every group.
    groups : pandas.Index
        The groups, in the order of the last axis of ``group_draws``.
    method : {"bb", "bc", "ppi"}
        Beta-Binomial, Bayesian calibration or prediction-powered inference.
    label_counts : ndarray of shape (group, 2, 2)
        Labeled confusion counts ``[group, y_true, y_pred]``.
    attrs : dict
        Settings of the fit: prior, seed, sampler, number of unlabeled samples, ...
    trace : arviz.InferenceData or None
        The MCMC trace of the calibration model (``method="bc"``), with sampler
        statistics.
    """

    kind = "posterior"

    measure: MeasureBase = field()  # field(): not the class default of Result.measure
    chain_draws: np.ndarray
    group_draws: dict[str, np.ndarray]
    groups: pd.Index
    method: str
    label_counts: np.ndarray
    attrs: dict[str, Any] = field(default_factory=dict)
    trace: Any = None
    extra_draws: dict[str, np.ndarray] = field(default_factory=dict)
    _point: float | None = None  # the method's point estimate (PPI's ratio estimator, auto's), if not the mean
    _reason: str | None = None  # why draws are undefined
    interval_box: Any = None  # a guaranteed box the interval is read from (guaranteed, or auto's)

    def __post_init__(self) -> None:
        self.key = self.measure.key
        self.chain_draws = np.atleast_2d(np.asarray(self.chain_draws, dtype=float))
        self.label_counts = np.asarray(self.label_counts, dtype=float)

    # -- the Result interface --------------------------------------------------------
    @property
    def defined(self) -> bool:
        """Whether every draw of the measure is a number."""
        return not np.isnan(self.chain_draws).any()

    @property
    def value(self) -> float:
        """The estimate: PPI's ratio estimator, else the posterior mean (NaN when undefined)."""
        return self.mean() if self._point is None or not self.defined else float(self._point)

    @property
    def draws(self) -> np.ndarray:
        """All draws of the measure, chains concatenated, shape ``(chain * draw,)``."""
        return self.chain_draws.ravel()

    @property
    def reason(self) -> str | None:
        """Why the posterior is undefined (None when every draw is a number)."""
        if self.defined:
            return None
        return self._reason or f"{int(np.isnan(self.draws).sum())} of {self.n_draws} draws are undefined"

    @property
    def by_group(self) -> pd.Series | pd.DataFrame:
        """Posterior mean of the base metric in each group (a DataFrame, one column per base, for several)."""
        means = {name: d.reshape(-1, len(self.groups)).mean(0) for name, d in self.group_draws.items()}
        frame = pd.DataFrame(means, index=self.groups)
        return frame.iloc[:, 0] if len(means) == 1 else frame

    @property
    def counts(self) -> pd.Series:
        """Number of labeled samples per group."""
        return pd.Series(self.label_counts.sum((-2, -1)), index=self.groups, name="n_labeled")

    # -- basic facts --------------------------------------------------------------------
    @property
    def n(self) -> int:  # type: ignore[override]
        """Rows the value used: the labeled rows and the unlabeled ones whose scores it read."""
        return int(self.label_counts.sum()) + int(self.attrs.get("n_unlabeled", 0) or 0)

    @property
    def construction(self) -> str:  # type: ignore[override]
        """What made the interval, in words a reader knows."""
        if self.interval_box is not None:
            return self.interval_box.name
        prior = " (Jeffreys prior)" if self.attrs.get("prior") == "jeffreys" else ""
        return _CONSTRUCTIONS.get(self.method, f"{self.method} posterior") + prior

    @property
    def target(self) -> str:  # type: ignore[override]
        """What the interval is about (``attrs["target"]``): the audited rows, or the population they came from."""
        return self.attrs.get("target", "population")

    def _prob_draws(self) -> np.ndarray | None:
        return None if self.interval_box is not None else self.draws

    @property
    def no_prob_reason(self) -> str | None:
        """Why the probabilities are NaN: undefined draws, or an interval that is a confidence interval."""
        if not self.defined:
            return self.reason
        if self.interval_box is None:
            return None
        if self.method != "guaranteed":  # auto put the guaranteed box on another method's draws
            return (
                f"the interval ({self.construction}; auto: {self.attrs.get('interval_reason', 'few labels')}) is "
                "a confidence interval; it gives no probabilities (the draws' would not agree with it)"
            )
        return f"method={self.method!r} gives a confidence interval, not probabilities"

    @property
    def n_draws(self) -> int:
        """Total number of draws (chains times draws per chain)."""
        return int(self.chain_draws.size)

    def note(self, prob: float | None = None) -> str:
        """The estimate's note, and which rows a posterior fitted on unlabeled scores too describes."""
        n_unl = int(self.attrs.get("n_unlabeled", 0) or 0)
        if not n_unl:
            return super().note(prob)
        n_lab = int(self.label_counts.sum())
        rows = (
            f"fitted on {n_lab:,} labeled rows and the scores of {n_unl:,} unlabeled rows: it describes all "
            f"{n_lab + n_unl:,} rows; a point value computed on the labeled rows alone may lie outside its interval"
        )
        return "; ".join(p for p in (super().note(prob), rows) if p)

    def _centre(self, center: float | None) -> float:
        if center is None and self.measure.ideal is None:
            raise ValueError(
                f"{self.key} has no ideal (perfectly fair) value; pass center= to prob_within() and rope()."
            )
        return self.center if center is None else float(center)

    # -- point summaries ------------------------------------------------------------
    def mean(self) -> float:
        """Posterior mean of the measure (the paper's point estimate); NaN when undefined."""
        return float(np.mean(self.draws)) if self.defined else _NAN

    def median(self) -> float:
        """Posterior median of the measure; NaN when undefined."""
        return float(np.median(self.draws)) if self.defined else _NAN

    def sd(self) -> float:
        """Posterior standard deviation of the measure; NaN when undefined."""
        if self._prob_draws() is None:
            return _NAN  # the interval is not the draws': their spread tells nothing of it
        return float(np.std(self.draws, ddof=1)) if self.defined and self.n_draws > 1 else _NAN

    def interval(self, prob: float | None = None, kind: Literal["eti", "hdi"] = "eti") -> tuple[float, float]:
        """Credible interval of the measure (NaN, NaN when undefined).

        Parameters
        ----------
        prob : float, optional
            Posterior mass inside the interval (default: ``prob``, 0.95).
        kind : {"eti", "hdi"}, default="eti"
            Equal-tailed interval (quantiles ``(1 - prob) / 2`` and
            ``(1 + prob) / 2``, as in the papers' coverage tables) or highest
            density interval (:func:`arviz.hdi`).

        Returns
        -------
        tuple of float
            ``(lower, upper)``.
        """
        prob = self.prob if prob is None else check_prob(prob)
        if kind not in ("eti", "hdi"):
            raise ValueError(f"kind={kind!r}; pass 'eti' or 'hdi'.")
        if not self.defined:
            return (_NAN, _NAN)
        if self.interval_box is not None:  # a guaranteed box through the operation (any kind), holding the estimate
            lo, hi = self.interval_box.measure_interval(self.measure, self.groups, prob)
            lo, hi = min(lo, self.value), max(hi, self.value)
        elif kind == "eti":
            lo, hi = np.quantile(self.draws, [(1.0 - prob) / 2.0, (1.0 + prob) / 2.0])
        else:
            lo, hi = _import_arviz().hdi(self.draws, hdi_prob=prob)
        return (float(lo), float(hi))

    def prob_less(self, x: float = 0.0) -> float:
        """Posterior probability that the measure is below ``x``; NaN when undefined."""
        return self._share(lambda d: d < x)

    def prob_within(self, eps: float = DEFAULT_EPS, center: float | None = None) -> float:
        """Probability of being practically fair: ``P(|Delta - center| <= eps)``; NaN when undefined.

        The same region as :meth:`rope`'s ``within``.

        Parameters
        ----------
        eps : float, default=DEFAULT_EPS
            Half-width of the region of practical fairness.
        center : float, optional
            Value of perfect fairness; defaults to :attr:`center` (0 for
            differences, 1 for ratios).
        """
        eps, c = check_eps(eps), self._centre(center)
        return self._share(lambda d: np.abs(d - c) <= eps)

    def upper_bound(self, prob: float = 0.95) -> float:
        """One-sided upper credible bound of ``|Delta - center|``: its ``prob`` quantile; NaN when undefined."""
        prob = check_prob(prob)  # undefined draws give NaN either way
        if self.interval_box is not None:  # the two-sided interval at prob bounds |Delta - center| at level prob
            lo, hi = self.interval(prob)
            return float(max(abs(lo - self.center), abs(hi - self.center)))
        return float(np.quantile(np.abs(self.draws - self.center), prob))

    def rope(self, eps: float = DEFAULT_EPS, center: float | None = None) -> RopeResult:
        """Region-of-practical-equivalence verdict (seed 002 section 2.3.6).

        Parameters
        ----------
        eps : float, default=DEFAULT_EPS
            Half-width of the region.
        center : float, optional
            Value of perfect fairness; defaults to :attr:`center`.

        Returns
        -------
        RopeResult
            No verdict (NaN masses, ``reason`` set) when the posterior is undefined.
        """
        eps, c = check_eps(eps), self._centre(center)
        if self.no_prob_reason is not None:
            band = f"; compare interval() with the band [{c - eps:g}, {c + eps:g}]" if self.defined else ""
            return RopeResult(_NAN, _NAN, _NAN, eps=eps, center=c, reason=self.no_prob_reason + band)
        below, above = float(np.mean(self.draws < c - eps)), float(np.mean(self.draws > c + eps))
        return RopeResult(below, 1.0 - below - above, above, eps=float(eps), center=c)

    def pair_verdicts(self, eps: float = DEFAULT_EPS, prob: float | None = None) -> pd.DataFrame:
        """Per base rate and group pair: ``within`` / ``exceeds`` / ``inconclusive``, jointly at level ``prob``.

        One joint construction over every pair of groups (a max-type band over the draws,
        or the union bound of a guaranteed box); for several measures of one fit use
        :func:`skfair_measures.verdicts`, whose family is all of them. The rule, columns
        and ``attrs`` are those of :func:`skfair_measures.verdicts`.

        Examples
        --------
        >>> import skfair_measures as sfm
        >>> from skfair_measures import bayes
        >>> post = bayes.posterior(sfm.msr("fairness.acc"), [1, 0, 1, 0] * 10, [0.9, 0.2, 0.4, 0.6] * 10,
        ...                        sensitive_features=list("aabb") * 10, method="guaranteed")
        >>> v = post.pair_verdicts(0.05)
        >>> v["verdict"].tolist(), v.attrs["construction"].split(":")[0], post.verdict(0.05)
        (['exceeds'], 'union bound', 'exceeds')
        """
        return verdicts([self], eps, self.prob if prob is None else prob)

    def verdict_family(self) -> VerdictFamily:
        """The draws of every base rate in every group, as :func:`skfair_measures.verdicts` reads them."""
        draws = {name: d.reshape(-1, self.groups.size) for name, d in self.group_draws.items()}
        return VerdictFamily(self.key, self.groups, draws, "posterior", fit=self.interval_box, box=self.interval_box)

    # -- tables -------------------------------------------------------------------------
    def group_summary(self, base: str | None = None, prob: float = 0.95) -> pd.DataFrame:
        """Posterior mean, sd and equal-tailed interval of a base metric in each group.

        A group whose draws are undefined has NaN in every column.

        Parameters
        ----------
        base : str, optional
            Base metric name (e.g. ``"tpr"``); defaults to the measure's first base.
        prob : float, default=0.95

        Returns
        -------
        pandas.DataFrame
            Indexed by group, columns ``mean, sd, lower, upper``.
        """
        name = base or next(iter(self.group_draws))
        if name not in self.group_draws:
            raise KeyError(f"base {name!r} not in this posterior; it has {sorted(self.group_draws)}.")
        d, prob = self.group_draws[name].reshape(-1, len(self.groups)), check_prob(prob)
        lo, hi = np.quantile(d, [(1 - prob) / 2, (1 + prob) / 2], axis=0)  # NaN columns stay NaN
        return pd.DataFrame({"mean": d.mean(0), "sd": d.std(0, ddof=1), "lower": lo, "upper": hi}, index=self.groups)

    def table(self, prob: float | None = None, eps: float = DEFAULT_EPS) -> pd.DataFrame:
        """One row per quantity: the measure, then every base metric in every group (:meth:`summary` is the one row).

        Columns are the posterior ``mean``, ``sd``, the equal-tailed interval
        ``eti_lower``/``eti_upper``, the highest-density interval
        ``hdi_lower``/``hdi_upper`` (ArviZ), ``r_hat`` and ``ess_bulk`` (ArviZ;
        informative for MCMC draws), ``P(>center)`` and ``P(|.-center|<=eps)`` (the
        last two only on the measure's row). A row over undefined draws is NaN.

        Parameters
        ----------
        prob : float, optional
            Mass of the intervals (default: ``prob``).
        eps : float, default=DEFAULT_EPS
            Half-width of practical fairness.

        Returns
        -------
        pandas.DataFrame
        """
        prob, labels = check_prob(self.prob if prob is None else prob), group_labels(self.groups)
        rows = {self.key: self.chain_draws}
        for name, d in self.group_draws.items():
            rows |= {f"{name}[{lab}]": np.asarray(d[..., j], dtype=float) for j, lab in enumerate(labels)}
        table = pd.DataFrame([_row(name, x, prob) for name, x in rows.items()]).set_index("quantity")
        if self.interval_box is not None:  # the intervals are the guaranteed ones: the draws' spread tells nothing
            lower, upper, _ = self.interval_box.at(prob)
            est = table["mean"].to_numpy()[1:]  # every group's interval holds its estimate (auto)
            lo, hi = (np.concatenate([bound[name] for name in self.group_draws]) for bound in (lower, upper))
            m_lo, m_hi = self.interval(prob)
            lo, hi = np.r_[m_lo, np.where(est < lo, est, lo)], np.r_[m_hi, np.where(est > hi, est, hi)]
            table["sd"] = np.nan
            table[["eti_lower", "hdi_lower"]], table[["eti_upper", "hdi_upper"]] = np.c_[lo, lo], np.c_[hi, hi]
        c = self.center
        first = {f"P(>{c:g})": self.prob_greater(c), f"P(|.-{c:g}|<={eps:g})": self.prob_within(eps)}  # the measure's
        return table.assign(**{k: [v] + [np.nan] * (len(table) - 1) for k, v in first.items()})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dictionary: the summary row's fields, ``method``, ``mean``, ``prob_greater``, ``n_draws``."""
        out = super().to_dict() | {"method": self.method, "mean": plain(self.mean())}
        return out | {"prob_greater": plain(self.prob_greater(self.center)), "n_draws": self.n_draws}

    # -- diagnostics and ArviZ -------------------------------------------------------
    def diagnostics(self) -> dict[str, float]:
        """Sampler diagnostics of the calibration model (empty for Beta-Binomial and PPI).

        Returns
        -------
        dict of str to number
            ``divergences`` (count), ``max_r_hat`` and ``min_ess_bulk`` over the
            calibration parameters, ``seconds`` (sampling wall time). Which
            parameter was worst is in ``attrs["diagnostics"]``.
        """
        d = self.attrs.get("diagnostics", {})
        return {k: v for k, v in d.items() if isinstance(v, int | float) and not isinstance(v, bool)}

    def to_inference_data(self) -> Any:
        """The posterior as ArviZ ``InferenceData``.

        The ``posterior`` group holds the measure (named by its key) and every base
        metric with dims ``("chain", "draw", "group")``; for Bayesian calibration
        also the calibration parameters, with ``sample_stats`` from the sampler.
        ``constant_data`` holds the labeled confusion counts; ``attrs`` the
        settings.

        Returns
        -------
        arviz.InferenceData
        """
        az, trace = _import_arviz(), self.trace
        variables = {**self.group_draws, **self.extra_draws}
        stats, counts = None, {"counts": self.label_counts}
        if trace is not None:  # the calibration model's own variables (hyperparameters, z-scores) and sampler
            model = trace.posterior.data_vars.items()
            variables |= {k: v for k, v in model if k not in variables and set(v.dims) <= {"chain", "draw", "group"}}
            stats = {k: np.asarray(v) for k, v in trace.sample_stats.items() if k in _STATS and v.ndim == 2}
        posterior = {self.key: self.chain_draws} | {name: np.asarray(d) for name, d in variables.items()}
        dims = {name: ["group"] for name, d in variables.items() if np.ndim(d) == 3}
        dims["counts"] = ["group", "y_true", "y_pred"]
        attrs = {k: v for k, v in self.attrs.items() if isinstance(v, str | int | float | bool)}
        attrs.update(measure=self.key, method=self.method)
        coords = {"group": group_labels(self.groups), "y_true": [0, 1], "y_pred": [0, 1]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return az.from_dict(
                posterior=posterior, sample_stats=stats, constant_data=counts, coords=coords, dims=dims, attrs=attrs
            )

    def __repr__(self) -> str:
        head = f"<MeasurePosterior {self.key} ({self.method}, {self.n_draws} draws): "
        if not self.defined:
            return f"{head}undefined: {self.reason}>"
        lo, hi = self.interval()
        return f"{head}value {self.value:.4f}, 95% interval [{lo:.4f}, {hi:.4f}]>"


#: The construction of each method's interval, in words a reader knows.
_CONSTRUCTIONS = {
    "bb": "Beta-Binomial posterior",
    "bc": "Bayesian calibration posterior",
    "bcr": "rectified Bayesian calibration posterior",
    "ppi": "prediction-powered (PPI++)",
}

_SUMMARY_COLUMNS = ("mean", "sd", "eti_lower", "eti_upper", "hdi_lower", "hdi_upper", "r_hat", "ess_bulk")


def _row(name: str, x: np.ndarray, prob: float) -> dict[str, Any]:
    """One summary row; all NaN when any draw is NaN."""
    flat = x.ravel()
    out: dict[str, Any] = {"quantity": name}
    if np.isnan(flat).any():
        return out | dict.fromkeys(_SUMMARY_COLUMNS, _NAN)
    az = _import_arviz()
    lo, hi = np.quantile(flat, [(1 - prob) / 2, (1 + prob) / 2])
    hlo, hhi = az.hdi(flat, hdi_prob=prob)
    multi = x.ndim == 2 and x.shape[0] > 1 and x.shape[1] >= 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r_hat, ess = (float(az.rhat(x)), float(az.ess(x))) if multi else (_NAN, _NAN)
    sd = np.std(flat, ddof=1) if flat.size > 1 else _NAN
    return out | dict(zip(_SUMMARY_COLUMNS, map(float, (np.mean(flat), sd, lo, hi, hlo, hhi, r_hat, ess)), strict=True))
