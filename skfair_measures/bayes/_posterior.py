"""The posterior of a fairness measure: draws, summaries and ArviZ conversion.

A :class:`MeasurePosterior` holds draws of every base metric in every group,
shape ``(chain, draw, group)``, and the draws of the measure itself, shape
``(chain, draw)``, obtained by running the group draws through the measure's own
operations (:meth:`~skfair_measures.Measure.from_group_values`): the posterior and
the point estimate share one code path. Summaries are plain Python floats;
intervals, the region of practical equivalence and the summary table follow
seed 000 section 3 and seed 002 chapter 2.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..measures import Measure

__all__ = ["MeasurePosterior", "RopeResult", "SamplingWarning"]


_STATS = ("diverging", "step_size", "n_steps", "depth", "energy", "logp", "lp", "tree_depth",
          "acceptance_rate", "mean_tree_accept")


class SamplingWarning(UserWarning):
    """MCMC diagnostics are bad: divergences, large R-hat or a small effective sample size."""


def _import_arviz() -> Any:
    """Import ArviZ lazily, silencing its announcement of a future refactor."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    return az


def external_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` that points at the first frame outside the package."""
    package = str(Path(__file__).resolve().parents[1])
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def group_labels(groups: pd.Index) -> list[str]:
    """String labels of the groups (tuples of an intersectional index joined by ``", "``).

    Examples
    --------
    >>> group_labels(pd.MultiIndex.from_tuples([("F", "x"), ("M", "y")]))
    ['F, x', 'M, y']
    """
    return [", ".join(map(str, g)) if isinstance(g, tuple) else str(g) for g in groups]


@dataclass(frozen=True)
class RopeResult:
    """Posterior mass below, inside and above a region of practical equivalence.

    Seed 002 section 2.3.6: with ``mu = (P(Delta < c - eps), P(|Delta - c| <= eps),
    P(Delta > c + eps))`` the verdict is the region of largest mass, and that mass
    is the confidence of the verdict.

    Attributes
    ----------
    below, within, above : float
        Posterior probabilities of the three regions (they sum to 1).
    eps : float
        Half-width of the region.
    center : float
        Value of perfect fairness (0 for a difference, 1 for a ratio).
    verdict : {"below", "equivalent", "above"}
        The region of largest posterior mass.
    probability : float
        That mass.

    Examples
    --------
    >>> r = RopeResult(0.01, 0.9, 0.09, eps=0.05, center=0.0)
    >>> r.verdict, r.probability
    ('equivalent', 0.9)
    """

    below: float
    within: float
    above: float
    eps: float
    center: float = 0.0

    @property
    def verdict(self) -> str:
        """``"below"``, ``"equivalent"`` or ``"above"``: the region of largest mass."""
        return ("below", "equivalent", "above")[int(np.argmax([self.below, self.within, self.above]))]

    @property
    def probability(self) -> float:
        """Posterior probability of the verdict's region."""
        return max(self.below, self.within, self.above)

    def __str__(self) -> str:
        lo, hi = self.center - self.eps, self.center + self.eps
        where = {
            "below": f"below {lo:g}",
            "equivalent": f"practically fair (within [{lo:g}, {hi:g}])",
            "above": f"above {hi:g}",
        }[self.verdict]
        return f"{where} with probability {self.probability:.3f}"


@dataclass(eq=False)
class MeasurePosterior:
    """Posterior draws of a fairness measure and of its base metrics per group.

    Returned by :func:`skfair_measures.bayes.posterior`; not meant to be built by
    hand.

    Attributes
    ----------
    measure : Measure
        The measure whose draws these are. With ``reference=`` this is the signed
        version (other group minus reference) of the measure asked for.
    draws : ndarray of shape (chain, draw)
        Draws of the measure.
    group_draws : dict of str to ndarray of shape (chain, draw, group)
        Draws of every base metric in every group.
    groups : pandas.Index
        The groups, in the order of the last axis of ``group_draws``.
    method : {"bb", "bc"}
        Beta-Binomial or Bayesian calibration.
    counts : ndarray of shape (group, 2, 2)
        Labelled confusion counts ``[group, y_true, y_pred]``.
    attrs : dict
        Settings of the fit: prior, seed, sampler, number of unlabelled samples, ...
    trace : arviz.InferenceData or None
        The MCMC trace of the calibration model (``method="bc"``), with sampler
        statistics.
    """

    measure: Measure
    draws: np.ndarray
    group_draws: dict[str, np.ndarray]
    groups: pd.Index
    method: str
    counts: np.ndarray
    attrs: dict[str, Any] = field(default_factory=dict)
    trace: Any = None
    extra_draws: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    # -- basic facts --------------------------------------------------------------------
    @property
    def key(self) -> str:
        """Key of the measure, e.g. ``"fairness.acc"``."""
        return self.measure.key

    @property
    def center(self) -> float:
        """Value of perfect fairness: 1 for ratio operations, else 0."""
        op = getattr(self.measure, "operation", None)
        return 1.0 if op is not None and "ratio" in op.name else 0.0

    @property
    def n_draws(self) -> int:
        """Total number of draws (chains times draws per chain)."""
        return int(self.draws.size)

    def _flat(self) -> np.ndarray:
        return np.asarray(self.draws, dtype=float).ravel()

    # -- point summaries ------------------------------------------------------------
    def mean(self) -> float:
        """Posterior mean of the measure (the paper's point estimate)."""
        return float(np.mean(self._flat()))

    def median(self) -> float:
        """Posterior median of the measure."""
        return float(np.median(self._flat()))

    def sd(self) -> float:
        """Posterior standard deviation of the measure."""
        return float(np.std(self._flat(), ddof=1))

    def interval(
        self, prob: float = 0.95, kind: Literal["eti", "hdi"] = "eti"
    ) -> tuple[float, float]:
        """Credible interval of the measure.

        Parameters
        ----------
        prob : float, default=0.95
            Posterior mass inside the interval.
        kind : {"eti", "hdi"}, default="eti"
            Equal-tailed interval (quantiles ``(1 - prob) / 2`` and
            ``(1 + prob) / 2``, as in the papers' coverage tables) or highest
            density interval (:func:`arviz.hdi`).

        Returns
        -------
        tuple of float
            ``(lower, upper)``.
        """
        if not 0.0 < prob < 1.0:
            raise ValueError(f"prob={prob!r} must be in (0, 1).")
        x = self._flat()
        if np.isnan(x).any():
            return (float("nan"), float("nan"))
        if kind == "eti":
            lo, hi = np.quantile(x, [(1.0 - prob) / 2.0, (1.0 + prob) / 2.0])
            return (float(lo), float(hi))
        if kind == "hdi":
            az = _import_arviz()
            lo, hi = az.hdi(x, hdi_prob=prob)
            return (float(lo), float(hi))
        raise ValueError(f"kind={kind!r}; pass 'eti' or 'hdi'.")

    def prob_greater(self, x: float = 0.0) -> float:
        """Posterior probability that the measure exceeds ``x``: e.g. ``P(Delta > 0)``."""
        return float(np.mean(self._flat() > x))

    def prob_less(self, x: float = 0.0) -> float:
        """Posterior probability that the measure is below ``x``."""
        return float(np.mean(self._flat() < x))

    def prob_within(self, eps: float, center: float | None = None) -> float:
        """Probability of being practically fair: ``P(|Delta - center| < eps)``.

        Parameters
        ----------
        eps : float
            Half-width of the region of practical fairness (seed 000 uses 0.02).
        center : float, optional
            Value of perfect fairness; defaults to :attr:`center` (0 for
            differences, 1 for ratios).
        """
        if eps < 0:
            raise ValueError(f"eps={eps!r} must be >= 0.")
        c = self.center if center is None else float(center)
        return float(np.mean(np.abs(self._flat() - c) < eps))

    def upper_bound(self, prob: float = 0.95) -> float:
        """One-sided upper credible bound of ``|Delta - center|``: its ``prob`` quantile."""
        return float(np.quantile(np.abs(self._flat() - self.center), prob))

    def rope(self, eps: float = 0.05, center: float | None = None) -> RopeResult:
        """Region-of-practical-equivalence verdict (seed 002 section 2.3.6).

        Parameters
        ----------
        eps : float, default=0.05
            Half-width of the region (seed 002 uses 0.05).
        center : float, optional
            Value of perfect fairness; defaults to :attr:`center`.

        Returns
        -------
        RopeResult
        """
        c = self.center if center is None else float(center)
        x = self._flat()
        below = float(np.mean(x < c - eps))
        above = float(np.mean(x > c + eps))
        return RopeResult(below, 1.0 - below - above, above, eps=float(eps), center=c)

    # -- tables -------------------------------------------------------------------------
    def by_group(self, base: str | None = None, prob: float = 0.95) -> pd.DataFrame:
        """Posterior mean, sd and equal-tailed interval of a base metric in each group.

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
        d = self.group_draws[name].reshape(-1, len(self.groups))
        lo, hi = np.quantile(d, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
        return pd.DataFrame(
            {"mean": d.mean(0), "sd": d.std(0, ddof=1), "lower": lo, "upper": hi},
            index=self.groups,
        )

    def summary(self, prob: float = 0.95, eps: float = 0.02) -> pd.DataFrame:
        """One row per quantity: the measure, then every base metric in every group.

        Columns are the posterior ``mean``, ``sd``, the equal-tailed interval
        ``eti_lower``/``eti_upper``, the highest-density interval
        ``hdi_lower``/``hdi_upper`` (ArviZ), ``r_hat`` and ``ess_bulk`` (ArviZ;
        informative for MCMC draws), ``P(>center)`` and ``P(|.-center|<eps)`` (the
        last two only on the measure's row).

        Parameters
        ----------
        prob : float, default=0.95
            Mass of the intervals.
        eps : float, default=0.02
            Half-width of practical fairness (seed 000 uses 0.02).

        Returns
        -------
        pandas.DataFrame
        """
        az = _import_arviz()
        rows: dict[str, np.ndarray] = {self.key: np.asarray(self.draws, dtype=float)}
        labels = group_labels(self.groups)
        for name, d in self.group_draws.items():
            for j, lab in enumerate(labels):
                rows[f"{name}[{lab}]"] = np.asarray(d[..., j], dtype=float)
        out = []
        for name, x in rows.items():
            flat = x.ravel()
            ok = not np.isnan(flat).any()
            lo, hi = np.quantile(flat, [(1 - prob) / 2, (1 + prob) / 2]) if ok else (np.nan, np.nan)
            hlo, hhi = az.hdi(flat, hdi_prob=prob) if ok else (np.nan, np.nan)
            multi = x.shape[0] > 1 and x.shape[1] >= 4 and ok
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r_hat = float(az.rhat(x)) if multi else np.nan
                ess = float(az.ess(x)) if multi else np.nan
            out.append(
                {
                    "quantity": name,
                    "mean": float(np.mean(flat)),
                    "sd": float(np.std(flat, ddof=1)),
                    "eti_lower": float(lo),
                    "eti_upper": float(hi),
                    "hdi_lower": float(hlo),
                    "hdi_upper": float(hhi),
                    "r_hat": r_hat,
                    "ess_bulk": ess,
                }
            )
        table = pd.DataFrame(out).set_index("quantity")
        table[f"P(>{self.center:g})"] = np.nan
        table[f"P(|.-{self.center:g}|<{eps:g})"] = np.nan
        table.iloc[0, -2] = self.prob_greater(self.center)
        table.iloc[0, -1] = self.prob_within(eps)
        return table

    # -- diagnostics and ArviZ -------------------------------------------------------
    def diagnostics(self) -> dict[str, float]:
        """Sampler diagnostics of the calibration model (empty for Beta-Binomial).

        Returns
        -------
        dict of str to number
            ``divergences`` (count), ``max_r_hat`` and ``min_ess_bulk`` over the
            calibration parameters, ``seconds`` (sampling wall time). Which
            parameter was worst is in ``attrs["diagnostics"]``.
        """
        d = self.attrs.get("diagnostics", {})
        return {k: v for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def to_inference_data(self) -> Any:
        """The posterior as ArviZ ``InferenceData``.

        The ``posterior`` group holds the measure (named by its key) and every base
        metric with dims ``("chain", "draw", "group")``; for Bayesian calibration
        also the calibration parameters, with ``sample_stats`` from the sampler.
        ``constant_data`` holds the labelled confusion counts; ``attrs`` the
        settings.

        Returns
        -------
        arviz.InferenceData
        """
        az = _import_arviz()
        labels = group_labels(self.groups)
        posterior: dict[str, np.ndarray] = {self.key: np.asarray(self.draws)}
        dims: dict[str, list[str]] = {}
        for name, d in {**self.group_draws, **self.extra_draws}.items():
            posterior[name] = np.asarray(d)
            if np.ndim(d) == 3:
                dims[name] = ["group"]
        if self.trace is not None and hasattr(self.trace, "posterior"):
            # the calibration model's own variables (hyperparameters, z-scores)
            for k, v in self.trace.posterior.data_vars.items():
                if k not in posterior and set(v.dims) <= {"chain", "draw", "group"}:
                    posterior[k] = np.asarray(v)
                    if "group" in v.dims:
                        dims[k] = ["group"]
        sample_stats = None
        if self.trace is not None and hasattr(self.trace, "sample_stats"):
            st = self.trace.sample_stats
            sample_stats = {k: np.asarray(st[k]) for k in st.data_vars if k in _STATS and np.ndim(st[k]) == 2}
        dims["counts"] = ["group", "y_true", "y_pred"]
        attrs = {k: v for k, v in self.attrs.items() if isinstance(v, (str, int, float, bool))}
        attrs.update(measure=self.key, method=self.method)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return az.from_dict(
                posterior=posterior,
                sample_stats=sample_stats,
                constant_data={"counts": np.asarray(self.counts)},
                coords={"group": labels, "y_true": [0, 1], "y_pred": [0, 1]},
                dims=dims,
                attrs=attrs,
            )

    def __repr__(self) -> str:
        lo, hi = self.interval()
        return (
            f"<MeasurePosterior {self.key} ({self.method}, {self.n_draws} draws): "
            f"mean {self.mean():.4f}, 95% interval [{lo:.4f}, {hi:.4f}]>"
        )
