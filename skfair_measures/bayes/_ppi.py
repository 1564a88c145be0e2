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

Every PPI quantity is a mean, a covariance or a variance of linear functions of a
row's observed and imputed cells, so it is computed from per-group sums (rows, and the
weighted first and second moments of the score per cell, :class:`~._method.ScoreMoments`):
of the rows in memory (:func:`row_moments`), or of one engine pass when the rows stay in a
data frame (:mod:`._frames`); one construction serves both. ``ppi_py`` cannot read such
sums (its functions take the rows), has no covariance matrix of a mean estimate (its
intervals are per coordinate) and no ``lambda`` tuned for a nonlinear function of the
mean (its ``lam=None`` minimises the summed variance of the four cells, not that of the
rate), so the steps are written here with its formulas (``ppi_py.ppi._calc_lam_glm`` for
``lambda``, ``ppi_mean_pointestimate`` and ``ppi_mean_ci`` for the estimate and its
variance); ``tests/test_bayes_ppi.py`` checks them against ``ppi_py`` on accuracy, where
the rate is a plain mean.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .._undefined import name_groups
from ..base import BaseMetric, ratio_roles
from ._method import (
    MOMENTS,
    Bases,
    EstimationMethod,
    FitData,
    GroupDraws,
    Rng,
    ScoreMoments,
    cell_sums,
    group_name,
    is_number,
    refuse_option,
)
from ._posterior import external_stacklevel

__all__ = ["ASYMPTOTIC_ROWS", "AsymptoticWarning", "PredictionPowered", "row_moments", "tuned_lambda"]

#: Relative step of the central differences of the delta method.
_STEP = 1e-6
#: Fewest labeled rows per group for a rectifier with a variance.
MIN_LABELED = 2
#: Below this many labeled rows in a rate's denominator (per group), PPI's normal-theory interval
#: is not to be trusted: on the papers' score files, groups of a few labeled rows gave 47-90%
#: coverage of Delta accuracy and 11-86% of Delta TPR at n_L = 40-100 (docs/reproduction_ji2020.md).
ASYMPTOTIC_ROWS = 30

# A labeled row of cell c = t * 2 + p with score s stacks its observed and imputed cells,
# z = (e_c, (1 - s) e_p + s e_{2+p}) = _A[c] + s _B[c]; an unlabeled row of prediction p has
# u = (1 - s) e_p + s e_{2+p} = _AU[p] + s _BU[p].
_AU, _BU = np.eye(4)[:2], np.eye(4)[2:] - np.eye(4)[:2]
_A = np.hstack([np.eye(4), _AU[[0, 1, 0, 1]]])
_B = np.hstack([np.zeros((4, 4)), _BU[[0, 1, 0, 1]]])


class AsymptoticWarning(UserWarning):
    """PPI's interval relies on a normal approximation that too few labeled rows do not support."""


def _clipped_lambda(cov: float, var: float, n: int, big_n: int, floor: float = 0.0) -> float:
    """``Cov / ((1 + n / N) Var)`` clipped to ``[0, 1]``; 0 (labels only) when the variance is not positive."""
    if not np.isfinite(cov) or not np.isfinite(var) or var <= floor:
        return 0.0
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def tuned_lambda(f: np.ndarray, f_hat: np.ndarray, f_hat_unlabeled: np.ndarray) -> float:
    """PPI++'s variance-minimising ``lambda`` for the mean of ``f``, clipped to ``[0, 1]``.

    ``lambda = Cov(f, f_hat) / ((1 + n / N) Var(f_hat))``, with the covariance over the
    ``n`` labeled rows and the variance of the predictions over all ``n + N`` rows
    (``ppi_py.ppi._calc_lam_glm`` for a one-dimensional mean). ``f`` and ``f_hat`` are
    the (weighted, centred or not) values of the labeled rows, ``f_hat_unlabeled``
    those of the unlabeled rows. ``method="ppi"`` computes the same from per-group sums.

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
    return _clipped_lambda(cov, float(np.var(np.concatenate([f_hat, f_hat_unlabeled]), ddof=1)), n, big_n)


def _gradient(base: BaseMetric, mu: np.ndarray) -> np.ndarray:
    """Gradient of ``base.from_counts`` at the cell frequencies ``mu`` (4,), by central differences."""
    h = _STEP * max(float(np.abs(mu).sum()), 1e-12)
    steps = np.concatenate([mu + h * np.eye(4), mu - h * np.eye(4)]).reshape(8, 2, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.asarray(base.from_counts(steps), dtype=float)
    return (v[:4] - v[4:]) / (2.0 * h)


def row_moments(data: FitData) -> ScoreMoments:
    """The per-cell sums of :data:`~._method.MOMENTS` of the rows in memory (what an engine pass gives).

    Examples
    --------
    >>> import pandas as pd
    >>> from skfair_measures.bayes._method import Rows
    >>> rows = Rows(np.array([0.8, 0.4]), np.array([1, 0]), np.array([0, 0]), np.array([2.0, 1.0]))
    >>> mo = row_moments(FitData(np.array([1, 0]), rows, Rows.empty(), pd.Index(["a"]), 0.5))
    >>> mo.labeled["ws"].tolist(), round(float(mo.labeled["w2s2"][0, 1, 1]), 2)  # rows of cells [0, 0] and [1, 1]
    ([[[0.4, 0.0], [0.0, 1.6]]], 2.56)
    """
    lab, unl = data.labeled, data.unlabeled
    if unl.count is not None:  # the frame route gives PPI the moments of the rows themselves (_frames)
        raise TypeError("PPI's variance reads each unlabeled row's weight, not a score histogram's bins.")

    def sums(cell: np.ndarray, rows: Any, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
        w = np.ones(cell.size) if rows.weight is None else np.asarray(rows.weight, dtype=float)
        s = np.asarray(rows.scores, dtype=float)
        return cell_sums(cell, (np.ones(cell.size), w, w * s, w * w, w * w * s, w * w * s * s), shape)

    g = data.n_groups
    labeled = sums((lab.codes * 2 + data.y_true) * 2 + lab.y_pred, lab, (g, 2, 2))
    return ScoreMoments(labeled, sums(unl.codes * 2 + unl.y_pred, unl, (g, 2)))


class _Side(NamedTuple):
    """One group's labeled (``x = z``, 8) or unlabeled (``x = u``, 4) rows, weights scaled to mean 1.

    ``n`` rows, raw weight ``total``; ``m1 = sum w x``, ``sq = sum w**2``, ``m_sq = sum w**2 x``,
    ``m_outer = sum w**2 x x'`` and ``centred = sum w**2 (x - xbar)(x - xbar)'`` (``xbar`` the weighted mean).
    """

    n: int
    total: float
    m1: np.ndarray
    sq: float
    m_sq: np.ndarray
    m_outer: np.ndarray
    centred: np.ndarray


@dataclass
class _Stratum:
    """One group: its labeled and unlabeled sides, and the raw ``sum w``, ``sum w**2`` per labeled cell (2, 2)."""

    lab: _Side
    unl: _Side
    den_w: np.ndarray
    den_w2: np.ndarray


def _sides(sums: dict[str, np.ndarray], a: np.ndarray, b: np.ndarray) -> list[_Side]:
    """Per group, the :class:`_Side` of rows ``x = a[c] + s b[c]`` from their cells' sums (weights to mean 1)."""
    n_rows, w, ws, w2, w2s, w2s2 = (sums[k].reshape(sums["n"].shape[0], -1) for k in MOMENTS)
    first, second = w @ a + ws @ b, w2 @ a + w2s @ b
    ab = np.einsum("gc,ci,cj->gij", w2s, a, b)
    outer = np.einsum("gc,ci,cj->gij", w2, a, a) + ab + ab.transpose(0, 2, 1) + np.einsum("gc,ci,cj->gij", w2s2, b, b)
    out = []
    for g, (n, total, sq) in enumerate(zip(n_rows.sum(1).round(), w.sum(1), w2.sum(1), strict=True)):
        c = n / total if n and total > 0 else 1.0  # ``ppi_py``'s normalisation: weights of mean 1
        mean, c2 = first[g] / total if total > 0 else np.zeros(a.shape[1]), c * c
        centred = outer[g] - np.outer(mean, second[g]) - np.outer(second[g], mean) + sq * np.outer(mean, mean)
        out.append(_Side(int(n), float(total), c * first[g], c2 * sq, c2 * second[g], c2 * outer[g], c2 * centred))
    return out


def _strata(mo: ScoreMoments) -> list[_Stratum]:
    lab, unl = _sides(mo.labeled, _A, _B), _sides(mo.unlabeled, _AU, _BU)
    cells = zip(lab, unl, mo.labeled["w"], mo.labeled["w2"], strict=True)
    return [_Stratum(*args) for args in cells]


class _Fit(NamedTuple):
    """PPI++ estimate of one group's cell frequencies (4,) at one ``lambda``."""

    mu: np.ndarray
    lam: float


def _cells_at(st: _Stratum, lam: float) -> _Fit:
    """The cell estimate at ``lam`` (0, labels only, without unlabeled rows): ``ppi_py.ppi_mean_pointestimate``."""
    lab, unl = st.lab, st.unl
    lam = lam if unl.n else 0.0
    if lam > 0.0:
        return _Fit(lam * unl.m1 / unl.n + (lab.m1[:4] - lam * lab.m1[4:]) / lab.n, float(lam))
    return _Fit(lab.m1[:4] / (lab.n if lab.total > 0 else np.nan), 0.0)  # the normalised weights sum to n


def _tuned_lambda(st: _Stratum, phi: np.ndarray, theta: np.ndarray) -> float:
    """:func:`tuned_lambda` of the rate's linear functional ``phi`` (centred at ``theta``), from the sums."""
    lab, unl = st.lab, st.unl
    n, big_n = lab.n, unl.n
    if n < 2 or big_n < 1:
        return 0.0
    c0 = float(theta @ phi)
    py, ph = np.concatenate([phi, np.zeros(4)]), np.concatenate([np.zeros(4), phi])
    f_sum, fh_sum = float(lab.m1 @ py) - c0 * n, float(lab.m1 @ ph) - c0 * n  # the scaled weights sum to n
    ffh = float(py @ lab.m_outer @ ph) - c0 * float(lab.m_sq @ (py + ph)) + c0 * c0 * lab.sq
    fhfh = float(ph @ lab.m_outer @ ph) - 2 * c0 * float(lab.m_sq @ ph) + c0 * c0 * lab.sq
    fu_sum = float(unl.m1 @ phi) - c0 * float(unl.m1.sum())
    fufu = float(phi @ unl.m_outer @ phi) - 2 * c0 * float(unl.m_sq @ phi) + c0 * c0 * unl.sq
    m, total, squares = n + big_n, fh_sum + fu_sum, fhfh + fufu
    var = (squares - total * total / m) / (m - 1)
    # constant predictions (a variance of 0 up to rounding): labels only
    return _clipped_lambda(ffh / n - (f_sum / n) * (fh_sum / n), var, n, big_n, 1e-14 * max(squares / m, 1e-300))


def _draw(mean: np.ndarray, df: np.ndarray, cov: np.ndarray, size: int, rng: Rng) -> np.ndarray:
    """Joint draws with the covariance ``cov`` and Student-t marginals of ``df`` degrees of freedom (a Gaussian copula).

    The delta method's normal approximation is too narrow when a group has few
    labeled rows in the rate's denominator (15 positives for a TPR): at n_L = 100
    the normal interval covered 90-92% in the simulation of ``tests/test_bayes_ppi.py``.
    Each quantity's marginal is a t with ``df`` = effective labeled rows in its
    denominator minus one, the usual small-sample correction; the normal
    draws' dependence between quantities is kept through their ranks.
    """
    from scipy.special import ndtr, stdtrit

    out, ok = np.full((size, mean.size), np.nan), np.isfinite(mean)
    if not ok.any():
        return out
    sub = cov[np.ix_(ok, ok)]
    z = rng.multivariate_normal(np.zeros(ok.sum()), sub, size=size, method="eigh")
    sd = np.sqrt(np.clip(np.diag(sub), 0.0, None))
    u = np.divide(z, sd, out=np.zeros_like(z), where=sd > 0)
    out[:, ok] = mean[ok] + stdtrit(df[ok], np.clip(ndtr(u), 1e-12, 1 - 1e-12)) * sd
    return out


def _covariance(influence: Sequence[dict[int, tuple[np.ndarray, float]]], strata: list[_Stratum]) -> np.ndarray:
    """Block-diagonal over groups: ``[phi; -lam phi]' C_l [phi; -lam phi] / (n (n - 1)) + ... / (N (N - 1))``.

    ``influence`` holds, per quantity and group, its gradient ``phi`` and the fit's ``lam``;
    ``C`` are the centred, w**2-weighted sums of squares of the stacked cells. Unbiased covariances
    (``ddof=1``; ``ppi_py`` divides by ``n``): with the 20-60 labels per group of a small audit the
    difference is a visible part of the interval's width (coverage at n_L = 200 in ``tests/test_bayes_ppi.py``).
    """
    k = len(influence)
    cov = np.zeros((k, k))
    for g, st in enumerate(strata):
        lab, unl = np.zeros((k, 8)), np.zeros((k, 4))
        for j, parts in enumerate(influence):
            if g in parts:
                u, lam = parts[g]
                lab[j], unl[j] = np.concatenate([u, -lam * u]), lam * u
        for rows, side in ((lab, st.lab), (unl, st.unl)):
            if side.n >= 2:
                cov += rows @ side.centred @ rows.T / (side.n * (side.n - 1))
    return cov


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

    def group_draws(self, data: FitData, bases: Bases, *, chains: int, draws: int, rng: Rng, seed: int) -> GroupDraws:
        """Draws of every (base, group) and pooled rate from the estimates and covariance, clipped to each range."""
        moments = row_moments(data) if data.moments is None else data.moments
        strata = _strata(moments)
        rows, reasons, lambdas, small = self._estimate(moments, bases, strata, data.groups)
        if small:
            message = (
                f"method='ppi': fewer than {ASYMPTOTIC_ROWS} labeled rows in the denominator of "
                f"{'; '.join(small)}. PPI's interval is asymptotic and can miss far more often than 5% here; "
                "label more rows of these groups, or use method='bcr' (attrs['asymptotic'] is False)."
            )
            warnings.warn(message, AsymptoticWarning, stacklevel=external_stacklevel())
        value, influence, df = zip(*rows, strict=True)
        mean, cov = np.asarray(value, dtype=float), _covariance(influence, strata)
        sample = _draw(mean, np.asarray(df, dtype=float), cov, chains * draws, rng)
        # every base's groups, then its pooled rate (the order of _estimate), clipped to the base's range
        low, high = np.array([b.range for b in bases], dtype=float).T[..., None]
        per_base = (len(bases), data.n_groups + 1)
        d = np.clip(sample.reshape(chains, draws, *per_base), low, high)
        est = np.clip(mean.reshape(per_base), low, high)
        se = np.where(np.isfinite(mean), np.sqrt(np.clip(np.diag(cov), 0.0, None)), np.nan).reshape(per_base)
        values = {b.name: d[:, :, i, :-1] for i, b in enumerate(bases)}
        overall = {b.name: d[:, :, i, -1] for i, b in enumerate(bases)}
        point = {b.name: est[i, :-1] for i, b in enumerate(bases)}
        point_overall = {b.name: float(est[i, -1]) for i, b in enumerate(bases)}
        std_errors = {b.name: se[i, :-1].tolist() for i, b in enumerate(bases)}
        attrs: dict[str, Any] = {"sampler": "delta method, Student-t marginals", "se": std_errors, "lambda": lambdas}
        attrs |= {"asymptotic": not small, "small_groups": small}
        if data.moments is not None:
            attrs["engine"] = "per-group score moments from one engine pass"
        return GroupDraws(values, overall, attrs=attrs, point=point, point_overall=point_overall, reasons=reasons)

    def _fit(self, st: _Stratum, base: BaseMetric) -> _Fit:
        """PPI++ for one rate: start at ``lambda = 1`` (as ``ppi_py``), tune it for the rate, re-estimate."""
        if self.lam is not None:
            return _cells_at(st, float(self.lam))
        first = _cells_at(st, 1.0)
        phi = _gradient(base, first.mu)
        return _cells_at(st, _tuned_lambda(st, phi, first.mu)) if np.isfinite(phi).all() else first

    def _estimate(
        self, moments: ScoreMoments, bases: Bases, strata: list[_Stratum], groups: Any
    ) -> tuple[list[tuple[float, dict, float]], list[str], dict[str, list[float]], list[str]]:
        """Every base's ``(estimate, influence, degrees of freedom)`` in every group, then pooled.

        Also why some are undefined, the lambdas and the groups too small for the asymptotics.
        """
        unl, lab = moments.unlabeled, moments.labeled
        raw = unl["w"].sum(1) if unl["n"].sum() else lab["w"].sum((1, 2))  # each group's share of the rows, weighted
        present = {g: float(s) for g, s in enumerate(raw / raw.sum()) if s > 0}
        unusable = [_unusable(st) for st in strata]
        rows: list[tuple[float, dict, float]] = []
        reasons, small, lambdas = [], [], {}
        for base in bases:
            roles = ratio_roles(base)  # a TypeError naming the base if it is not a rate of counts
            fits = [self._fit(st, base) if why is None else None for st, why in zip(strata, unusable, strict=True)]
            lambdas[base.name] = [np.nan if f is None else f.lam for f in fits]
            kish = [_denominator_rows(st, roles) for st in strata]
            dfs = [max(r - 1.0, 1.0) for r in kish]
            few = [g for g, r in enumerate(kish) if fits[g] is not None and r < ASYMPTOTIC_ROWS]
            if few:
                named = name_groups((group_name(groups, g) for g in few), sizes=(round(kish[g]) for g in few))
                small.append(f"{base.name} in group(s) {named} (labeled rows)")
            undefined: dict[str, list[int]] = {}  # why -> the groups it makes undefined
            for g, fit in enumerate(fits):
                value, why = _rate(base, roles, fit, unusable[g])
                rows.append((value, _influence(base, {g: 1.0}, fits) if why is None else {}, dfs[g]))
                if why:
                    undefined.setdefault(why, []).append(g)
            for why, gs in undefined.items():
                named = name_groups(group_name(groups, g) for g in gs)
                reasons.append(f"{base.name} in group(s) {named} is undefined: {why}")
            value, parts = np.nan, {}
            if not any(fits[g] is None for g in present):  # the pooled rate: the groups' cells, by their shares
                pooled = _Fit(np.asarray(sum(s * fits[g].mu for g, s in present.items()), dtype=float), np.nan)
                value, why = _rate(base, roles, pooled, None)
                value, parts = (np.nan, {}) if why is not None else (value, _influence(base, present, fits))
            rows.append((value, parts, min([dfs[g] for g in present], default=1.0)))
        return rows, reasons, lambdas, small


def _denominator_rows(st: _Stratum, roles: Any) -> float:
    """Kish's effective number of labeled rows in the rate's denominator cells (all rows if not a plain ratio)."""
    inside = roles.den if roles.simple else np.ones((2, 2), dtype=bool)
    w, w2 = float(st.den_w[inside].sum()), float(st.den_w2[inside].sum())
    return w * w / w2 if w2 > 0 else 0.0


def _unusable(st: _Stratum) -> str | None:
    """Why a group has no PPI estimate (too few labeled rows, or weights that sum to 0), None if it has one."""
    n, big_n = st.lab.n, st.unl.n
    if n < MIN_LABELED:
        return f"{n} labeled row(s); PPI needs at least {MIN_LABELED} per group"
    if not st.lab.total > 0:
        return f"its sample_weight sums to 0 over its {n} labeled row(s); give them positive weights or drop the group"
    if big_n and not st.unl.total > 0:
        return (
            f"its unlabeled_sample_weight sums to 0 over its {big_n} unlabeled row(s); give them positive "
            "weights or drop the group"
        )
    return None


def _rate(base: BaseMetric, roles: Any, fit: _Fit | None, unusable: str | None) -> tuple[float, str | None]:
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
    base: BaseMetric, shares: dict[int, float], fits: list[_Fit | None]
) -> dict[int, tuple[np.ndarray, float]]:
    """Per group, the delta method's weighted gradient of ``f(sum_g share_g mu_g)`` and the fit's lambda."""
    mu = sum(share * fits[g].mu for g, share in shares.items() if fits[g] is not None)
    phi = _gradient(base, np.asarray(mu, dtype=float))
    return {g: (share * phi, fits[g].lam) for g, share in shares.items()}
