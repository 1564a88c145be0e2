"""Prediction-powered inference (PPI++) for the count-based rates of every group.

Angelopoulos, Bates, Fannjiang, Jordan and Zrnic (Science 2023) estimate a mean
from few labeled rows and many unlabeled ones: the model's predictions on the
unlabeled rows give a low-variance estimate, and the labeled rows estimate its
bias (the *rectifier*). PPI++ (Angelopoulos, Duchi and Zrnic 2023) weighs the
predictions by a tuning factor ``lambda`` in ``[0, 1]`` chosen to minimise the
variance; ``lambda = 0`` is the classical estimate from labels only, so PPI++ is
never worse than it asymptotically, and the interval covers whatever the quality of
the scores (a poor model only makes it wider).

Here the mean is the vector of the four confusion-cell frequencies of one group,
``mu_g = E[1{y = t, yhat = p}]`` (``t, p`` in ``{0, 1}``). A labeled row contributes
its observed cell; the model's score ``s`` imputes ``s`` to cell ``[1, p]`` and
``1 - s`` to cell ``[0, p]`` (``p`` is known on every row). Every count-based rate is
a scale-free function ``r = f(mu_g)`` of these cells (``tpr = mu[1, 1] / (mu[1, 0] +
mu[1, 1])``, ``ppv``, accuracy, balanced accuracy, ...), so:

- the point estimate is the ratio estimator ``f(mu_hat)``;
- its variance comes from the delta method, ``grad f' Cov(mu_hat) grad f``, with
  the gradient by central differences (any rate, no per-rate formulas);
- ``lambda`` is tuned per group and rate for that linear functional, with PPI++'s
  closed form (the variance-minimising ``lambda`` of a one-dimensional mean);
- groups are independent strata (each group's rows estimate its own cells), so the
  covariance of all group rates is block diagonal; the pooled (overall) rates
  combine the groups' cells with the groups' shares of the unlabeled rows;
- the rates are drawn jointly from their asymptotic normal distribution, clipped
  to the rate's range (a monotone map, so quantiles and hence coverage are kept),
  and the measure's own operation turns the draws into draws of the measure.

Sample weights (of labeled and unlabeled rows) make every mean a weighted
(Hajek) mean within its group, as ``ppi_py`` normalises them.

Where ``ppi_py`` is used and where not: the point estimate of each group's cells
at the tuned ``lambda`` is ``ppi_py.ppi_mean_pointestimate``. ``ppi_py`` has no
function that returns the covariance matrix of a mean estimate (its intervals are
per coordinate), nor a ``lambda`` tuned for a nonlinear function of the mean (its
``lam=None`` minimises the summed variance of the four cells, not that of the
rate); those two steps are written here, following the same formulas
(``ppi_py.ppi._calc_lam_glm`` for ``lambda``, ``ppi_mean_ci`` for the variance).
``tests/test_bayes_ppi.py`` checks both against ``ppi_py`` on accuracy, where the
rate is a plain mean.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._optional import require
from .._undefined import name_groups
from ..base import BaseMetric, ratio_roles
from ._method import EstimationMethod, FitData, GroupDraws, group_name, is_number, refuse_option
from ._posterior import external_stacklevel

__all__ = [
    "ASYMPTOTIC_ROWS",
    "AsymptoticWarning",
    "PredictionPowered",
    "cell_indicators",
    "imputed_cells",
    "tuned_lambda",
]

#: Relative step of the central differences of the delta method.
_STEP = 1e-6
#: Fewest labeled rows per group for a rectifier with a variance.
MIN_LABELED = 2
#: Below this many labeled rows in a rate's denominator (per group), PPI's normal-theory interval
#: is not to be trusted: on the papers' score files, groups of a few labeled rows gave 47-90%
#: coverage of Delta accuracy and 11-86% of Delta TPR at n_L = 40-100 (docs/reproduction_ji2020.md).
ASYMPTOTIC_ROWS = 30


class AsymptoticWarning(UserWarning):
    """PPI's interval relies on a normal approximation that too few labeled rows do not support."""


def cell_indicators(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """One-hot confusion cell of each labeled row, shape ``(n, 4)``, cells ``t * 2 + p``.

    Examples
    --------
    >>> cell_indicators(np.array([1, 0]), np.array([1, 1])).tolist()
    [[0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]]
    """
    out = np.zeros((np.size(y_true), 4))
    out[np.arange(np.size(y_true)), np.asarray(y_true, dtype=np.intp) * 2 + np.asarray(y_pred, dtype=np.intp)] = 1.0
    return out


def imputed_cells(scores: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """The model's guess of each row's cell, shape ``(n, 4)``: ``1 - s`` at ``[0, p]``, ``s`` at ``[1, p]``.

    Examples
    --------
    >>> imputed_cells(np.array([0.8]), np.array([1])).tolist()
    [[0.0, 0.19999999999999996, 0.0, 0.8]]
    """
    s = np.asarray(scores, dtype=float)
    p = np.asarray(y_pred, dtype=np.intp)
    out = np.zeros((s.size, 4))
    rows = np.arange(s.size)
    out[rows, p] = 1.0 - s
    out[rows, 2 + p] = s
    return out


def tuned_lambda(f: np.ndarray, f_hat: np.ndarray, f_hat_unlabeled: np.ndarray) -> float:
    """PPI++'s variance-minimising ``lambda`` for the mean of ``f``, clipped to ``[0, 1]``.

    ``lambda = Cov(f, f_hat) / ((1 + n / N) Var(f_hat))``, with the covariance over the
    ``n`` labeled rows and the variance of the predictions over all ``n + N`` rows
    (``ppi_py.ppi._calc_lam_glm`` for a one-dimensional mean). ``f`` and ``f_hat`` are
    the (weighted, centred or not) values of the labeled rows, ``f_hat_unlabeled``
    those of the unlabeled rows.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=200)
    >>> round(tuned_lambda(y, y, rng.normal(size=100_000)), 1)  # perfect predictions
    1.0
    >>> tuned_lambda(y, np.zeros(200), np.zeros(100))  # constant predictions: labels only
    0.0
    """
    n, big_n = f.size, f_hat_unlabeled.size
    if n < 2 or big_n < 1:
        return 0.0
    cov = float(np.mean((f - f.mean()) * (f_hat - f_hat.mean())))
    var = float(np.var(np.concatenate([f_hat, f_hat_unlabeled]), ddof=1))
    if not np.isfinite(cov) or not np.isfinite(var) or var <= 0.0:
        return 0.0
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def _gradient(base: BaseMetric, mu: np.ndarray) -> np.ndarray:
    """Gradient of ``base.from_counts`` at the cell frequencies ``mu`` (4,), by central differences."""
    h = _STEP * max(float(np.abs(mu).sum()), 1e-12)
    steps = np.concatenate([mu + h * np.eye(4), mu - h * np.eye(4)]).reshape(8, 2, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.asarray(base.from_counts(steps), dtype=float)
    return (v[:4] - v[4:]) / (2.0 * h)


@dataclass
class _Stratum:
    """One group's rows: observed and imputed cells, weights normalised to mean 1."""

    y: np.ndarray  # (n, 4) observed cells of the labeled rows
    y_hat: np.ndarray  # (n, 4) imputed cells of the labeled rows
    y_hat_u: np.ndarray  # (N, 4) imputed cells of the unlabeled rows
    w: np.ndarray  # (n,)
    v: np.ndarray  # (N,)

    @property
    def n(self) -> int:
        return self.y.shape[0]

    @property
    def big_n(self) -> int:
        return self.y_hat_u.shape[0]


def _normalised(weight: np.ndarray | None, mask: np.ndarray) -> np.ndarray:
    w = np.ones(int(mask.sum())) if weight is None else np.asarray(weight, dtype=float)[mask]
    total = w.sum()
    return w / (total / w.size) if w.size and total > 0 else w


def _strata(data: FitData) -> list[_Stratum]:
    lab, unl = data.labeled, data.unlabeled
    if unl.count is not None:  # the frame route gives PPI its moments instead (_frames.CountedPPI)
        raise TypeError("PPI's variance reads each unlabeled row's weight, not a score histogram's bins.")
    y_all = cell_indicators(data.y_true, lab.y_pred)
    yh_all = imputed_cells(lab.scores, lab.y_pred)
    yu_all = imputed_cells(unl.scores, unl.y_pred)
    out = []
    for g in range(len(data.groups)):
        in_l, in_u = lab.codes == g, unl.codes == g
        w, v = _normalised(lab.weight, in_l), _normalised(unl.weight, in_u)
        out.append(_Stratum(y_all[in_l], yh_all[in_l], yu_all[in_u], w, v))
    return out


@dataclass
class _CellEstimate:
    """PPI++ estimate of one group's cell frequencies at one ``lambda``, with its deviations.

    ``dev_l`` (n, 4) and ``dev_u`` (N, 4) are the rows' contributions to the estimate
    minus their mean, so that ``Cov(mu_hat) = cov(dev_l) / n + cov(dev_u) / N``.
    """

    mu: np.ndarray
    lam: float
    dev_l: np.ndarray
    dev_u: np.ndarray


def _ppi_py_mean() -> Any:
    """``ppi_py.ppi_mean_pointestimate``, imported without its side effect.

    Importing ``ppi_py`` (0.2.3) runs ``warnings.simplefilter("ignore")``, which
    silences every warning of the whole process, ours included (undefined groups,
    overridden thresholds). The import runs inside ``catch_warnings``, which restores
    the filters afterwards.
    """
    with warnings.catch_warnings():
        return require("ppi_py", 'method="ppi"').ppi_mean_pointestimate


def _cells_at(st: _Stratum, lam: float) -> _CellEstimate:
    if st.big_n == 0:
        lam = 0.0
    x = st.y - lam * st.y_hat
    if lam > 0.0:
        mu = np.asarray(_ppi_py_mean()(st.y, st.y_hat, st.y_hat_u, lam=lam, w=st.w, w_unlabeled=st.v))
        mu = mu.reshape(4)
        u_mean = np.average(st.y_hat_u, axis=0, weights=st.v)
        dev_u = st.v[:, None] * lam * (st.y_hat_u - u_mean)
    else:  # labels only (also when the group has no unlabeled rows)
        mu = np.average(st.y, axis=0, weights=st.w)
        dev_u = np.zeros((st.big_n, 4))
    dev_l = st.w[:, None] * (x - np.average(x, axis=0, weights=st.w))
    return _CellEstimate(mu, lam, dev_l, dev_u)


def _tuned_cells(st: _Stratum, base: BaseMetric) -> _CellEstimate:
    """PPI++ for one rate: start at ``lambda = 1`` (as ``ppi_py``), tune it for the rate, re-estimate."""
    first = _cells_at(st, 1.0)
    phi = _gradient(base, first.mu)
    if not np.isfinite(phi).all():
        return first
    theta = first.mu
    lam = tuned_lambda(
        (st.w[:, None] * (st.y - theta)) @ phi,
        (st.w[:, None] * (st.y_hat - theta)) @ phi,
        (st.v[:, None] * (st.y_hat_u - theta)) @ phi,
    )
    return _cells_at(st, lam)


@dataclass
class _Quantities:
    """Point estimates of all (rate, group) and (rate, overall) quantities and their influence columns."""

    names: list[tuple[str, int | None]] = field(default_factory=list)  # (base, group or None for overall)
    value: list[float] = field(default_factory=list)
    cols_l: list[dict[int, np.ndarray]] = field(default_factory=list)  # group -> (n_g,) influence
    cols_u: list[dict[int, np.ndarray]] = field(default_factory=list)
    df: list[float] = field(default_factory=list)  # degrees of freedom of the t marginal

    def add(self, name: tuple[str, int | None], value: float, cols_l: dict, cols_u: dict, df: float) -> None:
        self.names.append(name)
        self.value.append(value)
        self.cols_l.append(cols_l)
        self.cols_u.append(cols_u)
        self.df.append(df)

    def draw(self, cov: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """Joint draws with the covariance ``cov`` and Student-t marginals (a Gaussian copula).

        The delta method's normal approximation is too narrow when a group has few
        labeled rows in the rate's denominator (15 positives for a TPR): at n_L = 100
        the normal interval covered 90-92% in the simulation of ``tests/test_bayes_ppi.py``.
        Each quantity's marginal is a t with ``df`` = effective labeled rows in its
        denominator minus one, the usual small-sample correction; the normal
        draws' dependence between quantities is kept through their ranks.
        """
        from scipy.special import ndtr, stdtrit

        mean = np.asarray(self.value, dtype=float)
        out = np.full((size, mean.size), np.nan)
        ok = np.isfinite(mean)
        if not ok.any():
            return out
        sub = cov[np.ix_(ok, ok)]
        z = rng.multivariate_normal(np.zeros(ok.sum()), sub, size=size, method="eigh")
        sd = np.sqrt(np.clip(np.diag(sub), 0.0, None))
        u = np.divide(z, sd, out=np.zeros_like(z), where=sd > 0)
        p = np.clip(ndtr(u), 1e-12, 1 - 1e-12)
        t = stdtrit(np.asarray(self.df, dtype=float)[ok], p)
        out[:, ok] = mean[ok] + t * sd
        return out

    def covariance(self, strata: list[_Stratum]) -> np.ndarray:
        """Block-diagonal over groups: ``sum_g cov(L_g) / n_g + cov(U_g) / N_g``.

        Unbiased covariances (``ddof=1``; ``ppi_py`` divides by ``n``): with the
        20-60 labels per group of a small audit the difference is a visible part of
        the interval's width (coverage at n_L = 200 in ``tests/test_bayes_ppi.py``).
        """
        q = len(self.names)
        cov = np.zeros((q, q))
        for g, st in enumerate(strata):
            for cols, n in ((self.cols_l, st.n), (self.cols_u, st.big_n)):
                if n < 2:
                    continue
                m = np.stack([c.get(g, np.zeros(n)) for c in cols], axis=1)
                cov += (m.T @ m) / (n * (n - 1))  # the columns are centred already
        return cov


def normal_draws(
    quantities: _Quantities,
    cov: np.ndarray,
    bases: tuple[BaseMetric, ...],
    groups: Any,
    chains: int,
    draws: int,
    rng: np.random.Generator,
    attrs: dict[str, Any],
    reasons: list[str],
) -> GroupDraws:
    """Draws of every (base, group) and pooled rate from the estimates and their covariance, clipped to each range.

    The one place that turns PPI's estimates into :class:`GroupDraws`, whether the rows
    are in memory or summarised by an engine's moments.
    """
    n_groups = len(groups)
    mean = np.asarray(quantities.value, dtype=float)
    sample = quantities.draw(cov, chains * draws, rng)
    se = np.where(np.isfinite(mean), np.sqrt(np.clip(np.diag(cov), 0.0, None)), np.nan)
    values = {b.name: np.full((chains, draws, n_groups), np.nan) for b in bases}
    overall = {b.name: np.full((chains, draws), np.nan) for b in bases}
    point = {b.name: np.full(n_groups, np.nan) for b in bases}
    point_overall: dict[str, float] = {}
    std_errors: dict[str, list[float]] = {b.name: [] for b in bases}
    ranges = {b.name: tuple(b.range) for b in bases}
    for j, (name, g) in enumerate(quantities.names):
        d = np.clip(sample[:, j], *ranges[name]).reshape(chains, draws)
        if g is None:
            overall[name], point_overall[name] = d, float(np.clip(mean[j], *ranges[name]))
        else:
            values[name][..., g], point[name][g] = d, float(np.clip(mean[j], *ranges[name]))
            std_errors[name].append(float(se[j]))
    attrs = {"sampler": "delta method, Student-t marginals", "se": std_errors, **attrs}
    return GroupDraws(values, overall, attrs=attrs, point=point, point_overall=point_overall, reasons=reasons)


@dataclass(frozen=True)
class PredictionPowered(EstimationMethod):
    """``method="ppi"``: prediction-powered inference (PPI++) per group.

    Parameters
    ----------
    lam : float, optional
        PPI++'s power-tuning factor (``ppi_py``'s ``lam``): None tunes it per group
        and rate, 0 gives the classical estimate from the labels only, 1 plain PPI.

    Needs the model's scores on unlabeled rows (``unlabeled_scores`` with
    ``unlabeled_sensitive``); works with ``sample_weight`` and
    ``unlabeled_sample_weight``. The draws are from the estimate's asymptotic
    normal distribution, so every measure built from count-based rates (through its
    own operation) gets a point estimate (:attr:`MeasurePosterior.value`), draws
    and an interval whose coverage holds by construction for smooth measures (a
    rate, a signed difference or a ratio against a reference group).

    Examples
    --------
    >>> import numpy as np
    >>> import skfair_measures as sfm
    >>> rng = np.random.default_rng(0)
    >>> g, s = rng.integers(0, 2, 2100), rng.uniform(size=2100)
    >>> y = (rng.uniform(size=2100) < s).astype(int)
    >>> post = sfm.bayes.posterior(sfm.msr("fairness.acc"),
    ...     y[:100], s[:100], sensitive_features=g[:100], method="ppi",
    ...     unlabeled_scores=s[100:], unlabeled_sensitive=g[100:], random_state=0)
    >>> lo, hi = post.interval(0.95)
    >>> bool(lo <= post.value <= hi)
    True
    """

    lam: float | None = None

    name: ClassVar[str] = "ppi"

    def __post_init__(self) -> None:
        if self.lam is not None and not (is_number(self.lam) and 0 <= self.lam <= 1):
            refuse_option("lam", self.lam, "pass None (tuned per group and rate) or a number in [0, 1]")

    def group_draws(
        self,
        data: FitData,
        bases: tuple[BaseMetric, ...],
        *,
        chains: int,
        draws: int,
        rng: np.random.Generator,
        seed: int,
    ) -> GroupDraws:
        _ppi_py_mean()  # needed whenever a tuned lambda is positive: asked for once, before any work
        strata = _strata(data)
        quantities, reasons, lambdas, small = self._estimate(data, bases, strata)
        _warn_small(small)
        cov = quantities.covariance(strata)
        attrs = {"lambda": lambdas, "asymptotic": not small, "small_groups": small}
        return normal_draws(quantities, cov, bases, data.groups, chains, draws, rng, attrs, reasons)

    def _cells(self, st: _Stratum, base: BaseMetric) -> _CellEstimate:
        return _tuned_cells(st, base) if self.lam is None else _cells_at(st, float(self.lam))

    def _estimate(
        self, data: FitData, bases: tuple[BaseMetric, ...], strata: list[_Stratum]
    ) -> tuple[_Quantities, list[str], dict[str, list[float]], list[str]]:
        shares = _group_shares(data)
        q = _Quantities()
        reasons: list[str] = []
        small: list[str] = []
        lambdas: dict[str, list[float]] = {}
        for base in bases:
            roles = ratio_roles(base)  # a TypeError naming the base if it is not a rate of counts
            fitted = fit_groups(base, roles, strata, self._cells, _unusable, _denominator_rows, data.groups)
            lambdas[base.name], small, reasons = fitted.lambdas, small + fitted.small, reasons + fitted.reasons
            for g, (value, why) in enumerate(fitted.rates):
                cols = _influence(base, {g: 1.0}, fitted.fits) if why is None else ({}, {})
                q.add((base.name, g), value, *cols, fitted.dfs[g])
            present = [fitted.dfs[g] for g, share in enumerate(shares) if share > 0]
            q.add((base.name, None), *_overall(base, roles, fitted.fits, shares), min(present, default=1.0))
        return q, reasons, lambdas, small


@dataclass
class GroupFits:
    """One base's fits per group, and what they say: degrees of freedom, values, small groups, reasons."""

    fits: list[_CellEstimate | None]
    lambdas: list[float]
    dfs: list[float]
    rates: list[tuple[float, str | None]]
    small: list[str]
    reasons: list[str]


def fit_groups(
    base: BaseMetric,
    roles: Any,
    strata: list[Any],
    fit: Any,
    unusable_of: Any,
    rows_of: Any,
    groups: Any,
) -> GroupFits:
    """Fit one base in every group; name the groups too small for the asymptotics and those left undefined.

    The rows may be in memory or an engine's moments: ``fit``, ``unusable_of`` and
    ``rows_of`` read either.
    """
    unusable = [unusable_of(st) for st in strata]
    fits = [fit(st, base) if why is None else None for st, why in zip(strata, unusable, strict=True)]
    rows = [rows_of(st, roles) for st in strata]
    few = [g for g, r in enumerate(rows) if fits[g] is not None and r < ASYMPTOTIC_ROWS]
    small = []
    if few:
        named = name_groups((group_name(groups, g) for g in few), sizes=(round(rows[g]) for g in few))
        small.append(f"{base.name} in group(s) {named} (labeled rows)")
    rates = [_rate(base, roles, f, unusable[g]) for g, f in enumerate(fits)]
    undefined: dict[str, list[int]] = {}  # why -> the groups it makes undefined
    for g, (_, why) in enumerate(rates):
        if why:
            undefined.setdefault(why, []).append(g)
    reasons = [
        f"{base.name} in group(s) {name_groups(group_name(groups, g) for g in gs)} is undefined: {why}"
        for why, gs in undefined.items()
    ]
    return GroupFits(
        fits, [np.nan if f is None else f.lam for f in fits], [max(r - 1.0, 1.0) for r in rows], rates, small, reasons
    )


def _warn_small(small: list[str]) -> None:
    if small:
        warnings.warn(
            f"method='ppi': fewer than {ASYMPTOTIC_ROWS} labeled rows in the denominator of "
            f"{'; '.join(small)}. PPI's interval is asymptotic and can miss far more often than 5% here; "
            "label more rows of these groups, or use method='bcr' (attrs['asymptotic'] is False).",
            AsymptoticWarning,
            stacklevel=external_stacklevel(),
        )


def _denominator_rows(st: _Stratum, roles: Any) -> float:
    """Effective (Kish) number of labeled rows in the rate's denominator cells (all rows if not a plain ratio)."""
    inside = (st.y @ roles.den.ravel().astype(float)) > 0 if roles.simple else np.ones(st.n, dtype=bool)
    w = st.w[inside]
    return float(w.sum() ** 2 / (w**2).sum()) if w.size and (w**2).sum() > 0 else 0.0


def _group_shares(data: FitData) -> np.ndarray:
    """Each group's share of the unlabeled rows (of the labeled ones if there are none), weighted."""
    rows = data.unlabeled if data.unlabeled.codes.size else data.labeled
    n = np.bincount(rows.codes, weights=rows.weight, minlength=len(data.groups)).astype(float)
    return n / n.sum()


def _unusable(st: _Stratum) -> str | None:
    """Why a group has no PPI estimate (too few labeled rows, or weights that sum to 0), None if it has one."""
    if st.n < MIN_LABELED:
        return f"{st.n} labeled row(s); PPI needs at least {MIN_LABELED} per group"
    if not st.w.sum() > 0:
        return (
            f"its sample_weight sums to 0 over its {st.n} labeled row(s); give them positive weights or drop the group"
        )
    if st.big_n and not st.v.sum() > 0:
        return (
            f"its unlabeled_sample_weight sums to 0 over its {st.big_n} unlabeled row(s); give them positive "
            "weights or drop the group"
        )
    return None


def _rate(base: BaseMetric, roles: Any, fit: _CellEstimate | None, unusable: str | None) -> tuple[float, str | None]:
    if fit is None:
        return np.nan, unusable
    if roles.simple and float((fit.mu * roles.den.ravel()).sum()) <= 0.0:
        return np.nan, "the estimated denominator of the rate is not positive (no such rows)"
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(base.from_counts(fit.mu.reshape(2, 2)))
    if not np.isfinite(value):
        return np.nan, "the rate of the estimated cells is not finite"
    return value, None


def _influence(
    base: BaseMetric, shares: dict[int, float], fits: list[_CellEstimate | None]
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Delta-method influence columns of ``f(sum_g share_g mu_g)`` per group."""
    mu = sum(share * fits[g].mu for g, share in shares.items() if fits[g] is not None)
    phi = _gradient(base, np.asarray(mu, dtype=float))
    cols_l = {g: share * (fits[g].dev_l @ phi) for g, share in shares.items()}
    cols_u = {g: share * (fits[g].dev_u @ phi) for g, share in shares.items()}
    return cols_l, cols_u


def _overall(
    base: BaseMetric, roles: Any, fits: list[_CellEstimate | None], shares: np.ndarray
) -> tuple[float, dict, dict]:
    """The pooled rate: the groups' cells combined with their shares (NaN if a group has no estimate)."""
    present = {g: float(s) for g, s in enumerate(shares) if s > 0}
    if any(fits[g] is None for g in present):
        return np.nan, {}, {}
    mu = sum(s * fits[g].mu for g, s in present.items())
    pooled = _CellEstimate(np.asarray(mu, dtype=float), np.nan, np.zeros((0, 4)), np.zeros((0, 4)))
    value, why = _rate(base, roles, pooled, MIN_LABELED)
    if why is not None:
        return np.nan, {}, {}
    return (value, *_influence(base, present, fits))
