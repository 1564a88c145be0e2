"""Posteriors of rows that stay in an engine: ``posterior(measure, "y", "score", ..., data=frame)``.

One engine pass (:func:`skfair_measures.engines._moments.score_table`) returns, per
(group, label or none, ``score >= threshold``) cell, the rows and five weighted sums of
the scores; a row whose label is missing is unlabeled. From that small table:

- ``"bb"`` (Beta-Binomial) reads the labeled confusion counts, exactly those of the
  rows in memory, so with the same seed its draws are the in-memory draws;
- ``"ppi"`` (PPI++) reads, per group, the first and second moments of the observed
  and imputed cells (every PPI quantity is a mean, a covariance or a variance of
  linear functions of them; :class:`CountedPPI`), so its estimate, tuned lambdas,
  covariance and draws equal the in-memory ones up to floating-point summation order.

The other methods read every labeled row (a calibration model, betting sequences) and
are refused with the way out named. The layers: ``bayes`` and ``engines`` are both
above the core; this module is the one arrow from ``bayes`` to ``engines``, and
``engines`` imports nothing of ``bayes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._groups import encode_groups
from .._labels import binarize_labels
from .._small_groups import small_group_plan
from ..base import BaseMetric, ratio_roles
from ..engines._aggregate import _N, _P, _SUM_W, _T, _group_codes, _refuse_bad_rows
from ..engines._frames import as_lazy, check_columns
from ..engines._moments import SCORE_SUMS, SUM_SCORE, score_histogram, score_table
from ..measures import MeasureBase
from ._bb import BetaBinomial
from ._bc import CLIP
from ._method import EstimationMethod, FitData, GroupDraws, Rows
from ._posterior import external_stacklevel
from ._ppi import (
    MIN_LABELED,
    PredictionPowered,
    _CellEstimate,
    _gradient,
    _Quantities,
    _rate,
    _unusable,  # reads n, big_n and the weight totals only: a stratum of rows or of moments alike
    _warn_small,
    fit_groups,
    normal_draws,
)
from ._small_groups import small_group_options
from ._table import METHODS

__all__ = ["HISTOGRAM_BINS", "CountedPPI", "CountFitData", "FrameRows", "frame_fit_data", "frame_rows"]

#: Methods that run on an engine's table of counts and score moments alone.
FRAME_METHODS = ("bb", "ppi")
#: Equal-width bins on [0, 1] of the unlabeled scores' histogram of the other methods (:func:`frame_rows`).
HISTOGRAM_BINS = 1000


class _InEngine:
    """Stand-in for rows that stay in the engine: their number, and a clear error if anything reads them."""

    def __init__(self, size: int) -> None:
        self.size = int(size)

    def __getattr__(self, name: str) -> Any:
        raise TypeError(
            f"the rows stay in the engine (data=): only their counts and score moments were computed, so "
            f"{name!r} of the rows cannot be read; use method= {' or '.join(map(repr, FRAME_METHODS))}, or "
            "collect the rows and pass arrays."
        )


@dataclass(frozen=True)
class ScoreMoments:
    """Per group, the sums of one engine pass (arrays with the group axis first).

    ``labeled`` holds arrays of shape ``(group, 2, 2)`` (cells ``[y_true, y_pred]``),
    ``unlabeled`` of shape ``(group, 2)`` (``y_pred``); keys ``n_rows`` and the
    :data:`~skfair_measures.engines._moments.SCORE_SUMS`.
    """

    labeled: dict[str, np.ndarray]
    unlabeled: dict[str, np.ndarray]
    weighted: bool


@dataclass(frozen=True, eq=False)
class CountFitData(FitData):
    """A :class:`FitData` of a frame: labeled counts and score moments, no rows."""

    moments: ScoreMoments = field(default=None)  # type: ignore[assignment]

    @property
    def counts(self) -> np.ndarray:
        """Labeled confusion counts ``[group, y_true, y_pred]`` (rows, unweighted), as in memory."""
        return self.moments.labeled[_N].astype(float)


def _refuse_unlabeled(unlabeled: dict[str, Any], y_true: Any) -> None:
    given = [k for k, v in unlabeled.items() if v is not None]
    if given:
        raise ValueError(
            f"{', '.join(given)} cannot be combined with data=: the unlabeled rows are the frame's rows whose "
            f"{y_true!r} is missing; drop {given[0]}."
        )


def _unlabeled_codes(table: pd.DataFrame, cols: Any, groups: pd.Index) -> np.ndarray:
    """Group codes of the rows without a label (the groups are those of the labeled rows)."""
    if table.empty:
        return np.zeros(0, dtype=np.intp)
    names = list(cols.sensitive)
    values = table[names[0]] if len(names) == 1 else table[names]
    rows = int(table[_N].sum())
    codes, _ = encode_groups(
        values, groups=groups, name="sensitive (rows without a label)", compare=False, samples=rows
    )
    return codes


def frame_fit_data(
    frame: Any,
    measures: list[MeasureBase],
    estimator: EstimationMethod,
    requested: str,
    y_true: Any,
    y_score: Any,
    sensitive_features: Any,
    sample_weight: Any,
    threshold: float,
    pos_label: Any,
    groups: Any,
    unlabeled: dict[str, Any],
) -> tuple[EstimationMethod, CountFitData]:
    """The method to run and its data, from one engine pass over ``frame``.

    Parameters
    ----------
    frame : DataFrame of any supported engine
    measures : list of Measure
    estimator : EstimationMethod
        The checked options record of the requested method.
    requested : str
        ``method=`` as given (``"auto"`` is refused here: its rules read rows).
    y_true, y_score, sensitive_features, sample_weight : str
        Column names: labels (missing on unlabeled rows), scores, groups, weights.
    threshold : float
    pos_label : object or None
    groups : pandas.Index or None
        The measures' declared groups.
    unlabeled : dict of str to object
        ``unlabeled_scores``, ``unlabeled_sensitive``, ``unlabeled_sample_weight``:
        must be None (the unlabeled rows are the frame's rows without a label).

    Returns
    -------
    estimator : EstimationMethod
        ``estimator``, or its count-reading form (:class:`CountedPPI`).
    data : CountFitData
    """
    if requested not in FRAME_METHODS:
        raise ValueError(
            f"method={requested!r} on data= needs the labeled rows themselves; on a frame pass method= "
            f"{' or '.join(map(repr, FRAME_METHODS))} (computed from one engine pass), or collect the rows and "
            "pass arrays for the other methods."
        )
    _refuse_unlabeled(unlabeled, y_true)
    if isinstance(estimator, BetaBinomial) and estimator.prior == "scores":
        raise ValueError(
            "prior='scores' on data= is not computed in the engine yet; pass prior='uniform', "
            "'jeffreys' or (alpha, beta), or collect the rows and pass arrays."
        )
    if sample_weight is not None and not METHODS[requested].weights:
        raise ValueError(
            f"method={requested!r} counts labeled samples and takes no sample_weight; use "
            "method='ppi' for weighted data."
        )
    cols = check_columns(as_lazy(frame), y_true, y_score, sensitive_features, sample_weight)
    table = score_table(frame, cols, threshold)
    reads = not isinstance(estimator, BetaBinomial)  # bb reads no unlabeled row: their groups do not matter
    moments, index = _moments(table, cols, pos_label, groups, sample_weight is not None, reads)
    moments, index = _restricted(moments, index, measures)
    n_l = int(moments.labeled[_N].sum())
    n_u = int(moments.unlabeled[_N].sum())
    if requested == "ppi" and n_u == 0:
        raise ValueError(
            f"method='ppi' needs unlabeled rows: rows of data whose {y_true!r} is missing (null). "
            "Without them use method='bb'."
        )
    rows = (_InEngine(n_l), _InEngine(n_l), _InEngine(n_u))  # y_true, labeled and unlabeled rows: not read
    data = CountFitData(*rows, index, float(threshold), moments=moments)  # type: ignore[arg-type]
    if isinstance(estimator, PredictionPowered):
        estimator = CountedPPI(lam=estimator.lam)
    return estimator, data


@dataclass(frozen=True)
class FrameRows:
    """:func:`frame_rows`: the labeled rows collected from the engine, the unlabeled rows as a score histogram.

    ``labeled`` is a pandas frame of the user's columns; :meth:`unlabeled` turns the
    histogram into :class:`Rows` whose entries stand for ``count`` rows each, once the
    groups of the labeled rows are known.
    """

    labeled: pd.DataFrame
    histogram: pd.DataFrame
    cols: Any

    @property
    def n_unlabeled(self) -> int:
        return int(self.histogram[_N].sum())

    def column(self, name: Any) -> Any:
        """The labeled rows' column(s) ``name`` (a list of names: a frame of them), or None."""
        if name is None:
            return None
        return self.labeled[list(name)] if isinstance(name, list | tuple) else self.labeled[name]

    def unlabeled(self, groups: pd.Index, threshold: float) -> Rows:
        """One entry per (group, prediction, score bin): its rows, mean score and summed weight."""
        hist = self.histogram
        if hist.empty:
            return Rows.empty()
        n = hist[_N].to_numpy(dtype=float)
        codes = _unlabeled_codes(hist, self.cols, groups)
        weight = None if self.cols.sample_weight is None else hist[_SUM_W].to_numpy(dtype=float)
        scores = hist[SUM_SCORE].to_numpy(dtype=float) / n
        y_pred = hist[_P].to_numpy().astype(np.intp)  # the engine's score >= threshold, row by row
        return Rows(np.clip(scores, 0.0, 1.0), y_pred, codes, weight, count=n, bin_width=1.0 / HISTOGRAM_BINS)


def frame_rows(
    frame: Any,
    y_true: Any,
    y_score: Any,
    sensitive_features: Any,
    sample_weight: Any,
    threshold: float,
    unlabeled: dict[str, Any],
) -> FrameRows:
    """The labeled rows of ``frame`` in memory and its unlabeled rows as a score histogram, from the engine.

    For ``bc``, ``bcr``, ``guaranteed`` and ``auto`` on ``data=``: they read every labeled
    row (a calibration model sampled on them, betting over them), and labeled rows are
    few. The unlabeled rows enter those methods only through sums over rows of a
    function of the score, so they stay in the engine, counted per (group, ``score >=
    threshold``, one of :data:`HISTOGRAM_BINS` equal-width score bins), with the bin's
    summed score; scores at or beyond the calibration's clipping bounds
    (:data:`~._bc.CLIP`) are kept apart within their bin. Each entry enters as its rows
    at the bin's mean score:

    - exact where a function is linear in the score (the guaranteed interval's proxies,
      the selection rate) and where an entry holds one distinct score;
    - otherwise (the calibration map ``f`` of ``bc``/``bcr``) the first-order terms
      cancel around the mean, so an entry of ``n`` rows in a bin of width ``h = 1 /
      HISTOGRAM_BINS`` is off by at most ``n h^2 / 8 max |f''|`` over the bin (the bound
      under the posterior's draws is ``attrs["binning"]``: :func:`~._bc.histogram_error`).
    """
    _refuse_unlabeled(unlabeled, y_true)
    cols = check_columns(as_lazy(frame), y_true, y_score, sensitive_features, sample_weight)
    labeled, hist = score_histogram(frame, cols, threshold, HISTOGRAM_BINS, CLIP)
    _refuse_bad_rows(hist, cols)
    if labeled.empty:
        raise ValueError(f"target={cols.target!r} is missing on every row of data; label some rows.")
    return FrameRows(labeled, hist, cols)


def _moments(
    table: pd.DataFrame, cols: Any, pos_label: Any, groups: Any, weighted: bool, reads_unlabeled: bool = True
) -> tuple[ScoreMoments, pd.Index]:
    """The engine's table as per-group arrays: groups from the labeled rows, as in memory."""
    _refuse_bad_rows(table.drop(columns=[_T]), cols)  # missing labels are unlabeled rows, not faults
    missing = table[_T].isna().to_numpy()
    lab, unl = table[~missing].reset_index(drop=True), table[missing].reset_index(drop=True)
    if lab.empty:
        raise ValueError(f"target={cols.target!r} is missing on every row of data; label some rows.")
    codes, index = _group_codes(lab, cols, groups, True)
    t, _, _ = binarize_labels(lab[_T].to_numpy(), lab[_T].to_numpy(), pos_label)
    t = np.asarray(t, dtype=np.intp)
    p = lab[_P].to_numpy().astype(np.intp)
    n_g = len(index)
    labeled = _per_cell(lab, (codes * 2 + t) * 2 + p, (n_g, 2, 2))
    try:
        u_codes = _unlabeled_codes(unl, cols, index)
    except ValueError:  # a group with unlabeled rows only: refused where they are read, left out where not (bb)
        if reads_unlabeled:
            raise
        unl, u_codes = unl.iloc[:0], np.zeros(0, dtype=np.intp)
    u_p = unl[_P].to_numpy().astype(np.intp)
    unlabeled = _per_cell(unl, u_codes * 2 + u_p, (n_g, 2))
    return ScoreMoments(labeled, unlabeled, weighted), index


def _per_cell(table: pd.DataFrame, cell: np.ndarray, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The rows and score sums of the table's entries summed per cell, in ``shape`` (rows as integers)."""
    size = int(np.prod(shape))
    out = {
        k: np.bincount(cell, weights=table[k].to_numpy(float), minlength=size).reshape(shape) for k in (_N, *SCORE_SUMS)
    }
    out[_N] = np.rint(out[_N]).astype(np.int64)
    return out


def _restricted(moments: ScoreMoments, index: pd.Index, measures: list[MeasureBase]) -> tuple[ScoreMoments, pd.Index]:
    """``min_group_size`` on labeled rows, the core's rule (as ``_small_groups.restrict_fit_data`` in memory)."""
    min_size, small = small_group_options(measures)
    sizes = moments.labeled[_N].sum((1, 2))
    key = measures[0].key if len(measures) == 1 else "posteriors(" + ", ".join(m.key for m in measures) + ")"
    plan = small_group_plan(sizes, index, min_size, small, key)
    if plan is None:
        return moments, index
    plan.warn(stacklevel=external_stacklevel())
    kept = plan.lut >= 0

    def pooled(a: np.ndarray) -> np.ndarray:
        out = np.zeros((len(plan.groups), *a.shape[1:]), dtype=a.dtype)
        np.add.at(out, plan.lut[kept], a[kept])
        return out

    return ScoreMoments(
        {k: pooled(v) for k, v in moments.labeled.items()},
        {k: pooled(v) for k, v in moments.unlabeled.items()},
        moments.weighted,
    ), plan.groups


# -- PPI++ from per-group moments ----------------------------------------------------------
def _basis(i: int, size: int) -> np.ndarray:
    e = np.zeros(size)
    e[i] = 1.0
    return e


@dataclass
class _GroupMoments:
    """One group's PPI moments with the weights normalised to mean 1, as ``_ppi._normalised`` does.

    ``z = (y, y_hat)`` (8,) on labeled rows, ``u = y_hat`` (4,) on unlabeled ones; ``sw``/``sv``
    are the raw weight totals, ``zbar``/``ubar`` the weighted means, ``m1_*`` the normalised
    weighted sums, ``cl`` (8, 8) and ``cu`` (4, 4) the centred sums of squares weighted by w^2.
    """

    n: int
    big_n: int
    sw: float
    sv: float
    m1_l: np.ndarray
    m1_u: np.ndarray
    sum_w2: float
    m_w2: np.ndarray
    m_w2_zz: np.ndarray
    sum_v2: float
    m_v2: np.ndarray
    m_v2_uu: np.ndarray
    cl: np.ndarray
    cu: np.ndarray
    den_w: np.ndarray  # (2, 2) raw sum w per labeled cell
    den_w2: np.ndarray  # (2, 2) raw sum w^2 per labeled cell

    @property
    def w(self) -> np.ndarray:  # what ``_ppi._unusable`` sums
        return np.array([self.sw])

    @property
    def v(self) -> np.ndarray:
        return np.array([self.sv])


def _second(a: np.ndarray, b: np.ndarray, s0: float, s1: float, s2: float) -> np.ndarray:
    """Sum over rows of (a + s b)(a + s b)^T from sum 1, sum s, sum s^2 (weighted)."""
    return np.outer(a, a) * s0 + (np.outer(a, b) + np.outer(b, a)) * s1 + np.outer(b, b) * s2


def _group_moments(mo: ScoreMoments, g: int) -> _GroupMoments:
    lab, unl = mo.labeled, mo.unlabeled
    _, ws, w2, w2s, w2s2 = SCORE_SUMS
    sw_key = SCORE_SUMS[0]
    s_z, s2_z, s2_zz = np.zeros(8), np.zeros(8), np.zeros((8, 8))
    for t in (0, 1):
        for p in (0, 1):
            a = np.concatenate([_basis(2 * t + p, 4), _basis(p, 4)])
            b = np.concatenate([np.zeros(4), _basis(2 + p, 4) - _basis(p, 4)])
            s_z += a * lab[sw_key][g, t, p] + b * lab[ws][g, t, p]
            s2_z += a * lab[w2][g, t, p] + b * lab[w2s][g, t, p]
            s2_zz += _second(a, b, lab[w2][g, t, p], lab[w2s][g, t, p], lab[w2s2][g, t, p])
    s_u, s2_u, s2_uu = np.zeros(4), np.zeros(4), np.zeros((4, 4))
    for p in (0, 1):
        a, b = _basis(p, 4), _basis(2 + p, 4) - _basis(p, 4)
        s_u += a * unl[sw_key][g, p] + b * unl[ws][g, p]
        s2_u += a * unl[w2][g, p] + b * unl[w2s][g, p]
        s2_uu += _second(a, b, unl[w2][g, p], unl[w2s][g, p], unl[w2s2][g, p])
    n, big_n = int(lab[_N][g].sum()), int(unl[_N][g].sum())
    sw, sv = float(lab[sw_key][g].sum()), float(unl[sw_key][g].sum())
    c = n / sw if n and sw > 0 else 1.0  # ``_ppi._normalised``: weights scaled to mean 1
    cu = big_n / sv if big_n and sv > 0 else 1.0
    sum_w2, sum_v2 = float(lab[w2][g].sum()), float(unl[w2][g].sum())
    zbar = s_z / sw if sw > 0 else np.zeros(8)
    ubar = s_u / sv if sv > 0 else np.zeros(4)
    cl = c * c * (s2_zz - np.outer(zbar, s2_z) - np.outer(s2_z, zbar) + sum_w2 * np.outer(zbar, zbar))
    cuu = cu * cu * (s2_uu - np.outer(ubar, s2_u) - np.outer(s2_u, ubar) + sum_v2 * np.outer(ubar, ubar))
    return _GroupMoments(
        n,
        big_n,
        sw,
        sv,
        c * s_z,
        cu * s_u,
        c * c * sum_w2,
        c * c * s2_z,
        c * c * s2_zz,
        cu * cu * sum_v2,
        cu * cu * s2_u,
        cu * cu * s2_uu,
        cl,
        cuu,
        lab[sw_key][g],
        lab[w2][g],
    )


def _cells_at(st: _GroupMoments, lam: float) -> _CellEstimate:
    """``_ppi._cells_at`` from moments: the cell estimate at ``lam`` (0 without unlabeled rows)."""
    if st.big_n == 0:
        lam = 0.0
    if lam > 0.0:
        mu = lam * st.m1_u / st.big_n + (st.m1_l[:4] - lam * st.m1_l[4:]) / st.n
    else:
        mu = st.m1_l[:4] / (st.n if st.sw > 0 else np.nan)  # the weighted mean of y (normalised weights sum to n)
    empty = np.zeros((0, 4))
    return _CellEstimate(np.asarray(mu, dtype=float), float(lam), empty, empty)


def _tuned_lambda(st: _GroupMoments, phi: np.ndarray, theta: np.ndarray) -> float:
    """``_ppi.tuned_lambda`` of the rate's linear functional, from moments."""
    n, big_n = st.n, st.big_n
    if n < 2 or big_n < 1:
        return 0.0
    c0 = float(theta @ phi)
    py, ph = np.concatenate([phi, np.zeros(4)]), np.concatenate([np.zeros(4), phi])
    sum_w = float(st.m1_l[:4].sum())  # the normalised weights sum to n (every labeled row is in one cell)
    f_sum = float(st.m1_l @ py) - c0 * sum_w
    fh_sum = float(st.m1_l @ ph) - c0 * sum_w
    ffh = float(py @ st.m_w2_zz @ ph) - c0 * float(st.m_w2 @ (py + ph)) + c0 * c0 * st.sum_w2
    fhfh = float(ph @ st.m_w2_zz @ ph) - 2 * c0 * float(st.m_w2 @ ph) + c0 * c0 * st.sum_w2
    sum_v = float(st.m1_u[:2].sum() + st.m1_u[2:].sum()) if big_n else 0.0
    fu_sum = float(st.m1_u @ phi) - c0 * sum_v
    fufu = float(phi @ st.m_v2_uu @ phi) - 2 * c0 * float(st.m_v2 @ phi) + c0 * c0 * st.sum_v2
    cov = ffh / n - (f_sum / n) * (fh_sum / n)
    m = n + big_n
    total, squares = fh_sum + fu_sum, fhfh + fufu
    var = (squares - total * total / m) / (m - 1)
    if not np.isfinite(cov) or not np.isfinite(var) or var <= 1e-14 * max(squares / m, 1e-300):
        return 0.0  # constant predictions (a variance of 0 up to rounding): labels only, as in memory
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def _denominator_rows(st: _GroupMoments, roles: Any) -> float:
    """Kish's effective labeled rows in the rate's denominator cells (``_ppi._denominator_rows``)."""
    inside = roles.den if roles.simple else np.ones((2, 2), dtype=bool)
    w, w2 = float(st.den_w[inside].sum()), float(st.den_w2[inside].sum())
    return w * w / w2 if w2 > 0 else 0.0


@dataclass(frozen=True)
class CountedPPI(PredictionPowered):
    """``method="ppi"`` on an engine's table: PPI++ from per-group moments (see the module docstring).

    The same estimate, tuning, covariance and draws as :class:`PredictionPowered` on the
    rows; each quantity's influence on the covariance is its gradient ``phi`` with the
    ``lambda`` of its fit, and ``Cov = sum_g [phi; -lam phi]' C_l [phi; -lam phi] / (n (n - 1))
    + lam lam' phi' C_u phi' / (N (N - 1))`` with ``C`` the centred, w^2-weighted sums of
    squares of the stacked cells.
    """

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
        assert isinstance(data, CountFitData)
        strata = [_group_moments(data.moments, g) for g in range(len(data.groups))]
        q, contributions, reasons, lambdas, small = self._estimate_moments(data, bases, strata)
        _warn_small(small)
        attrs = {
            "lambda": lambdas,
            "asymptotic": not small,
            "small_groups": small,
            "engine": "per-group score moments from one engine pass",
        }
        return normal_draws(
            q, _covariance(contributions, strata), bases, data.groups, chains, draws, rng, attrs, reasons
        )

    def _fit(self, st: _GroupMoments, base: BaseMetric) -> _CellEstimate:
        if self.lam is not None:
            return _cells_at(st, float(self.lam))
        first = _cells_at(st, 1.0)
        phi = _gradient(base, first.mu)
        if not np.isfinite(phi).all():
            return first
        return _cells_at(st, _tuned_lambda(st, phi, first.mu))

    def _estimate_moments(
        self, data: CountFitData, bases: tuple[BaseMetric, ...], strata: list[_GroupMoments]
    ) -> tuple[_Quantities, list[dict[int, tuple[np.ndarray, float]]], list[str], dict[str, list[float]], list[str]]:

        unl = data.moments.unlabeled
        raw = unl[SCORE_SUMS[0]].sum(1) if unl[_N].sum() else data.moments.labeled[SCORE_SUMS[0]].sum((1, 2))
        shares = raw / raw.sum()
        q = _Quantities()
        contributions: list[dict[int, tuple[np.ndarray, float]]] = []
        reasons: list[str] = []
        small: list[str] = []
        lambdas: dict[str, list[float]] = {}
        for base in bases:
            roles = ratio_roles(base)
            fitted = fit_groups(base, roles, strata, self._fit, _unusable, _denominator_rows, data.groups)
            fits, dfs = fitted.fits, fitted.dfs
            lambdas[base.name], small, reasons = fitted.lambdas, small + fitted.small, reasons + fitted.reasons
            for g, (value, why) in enumerate(fitted.rates):
                q.add((base.name, g), value, {}, {}, dfs[g])
                contributions.append(_influence(base, {g: 1.0}, fits) if why is None else {})
            present = {g: float(s) for g, s in enumerate(shares) if s > 0}
            value, parts = np.nan, {}
            if not any(fits[g] is None for g in present):
                mu = sum(s * fits[g].mu for g, s in present.items())
                pooled = _CellEstimate(np.asarray(mu, dtype=float), np.nan, np.zeros((0, 4)), np.zeros((0, 4)))
                value, why = _rate(base, roles, pooled, MIN_LABELED)
                value, parts = (np.nan, {}) if why is not None else (value, _influence(base, present, fits))
            q.add((base.name, None), value, {}, {}, min([dfs[g] for g in present], default=1.0))
            contributions.append(parts)
        return q, contributions, reasons, lambdas, small


def _influence(
    base: BaseMetric, shares: dict[int, float], fits: list[_CellEstimate | None]
) -> dict[int, tuple[np.ndarray, float]]:
    """Per group, the quantity's weighted gradient and its fit's lambda (``_ppi._influence``'s columns)."""
    mu = sum(share * fits[g].mu for g, share in shares.items() if fits[g] is not None)
    phi = _gradient(base, np.asarray(mu, dtype=float))
    return {g: (share * phi, fits[g].lam) for g, share in shares.items()}


def _covariance(contributions: list[dict[int, tuple[np.ndarray, float]]], strata: list[_GroupMoments]) -> np.ndarray:
    """``_Quantities.covariance`` from moments: block-diagonal over groups, ``ddof=1``."""
    k = len(contributions)
    cov = np.zeros((k, k))
    for g, st in enumerate(strata):
        lab = np.zeros((k, 8))
        unl = np.zeros((k, 4))
        for j, parts in enumerate(contributions):
            if g in parts:
                u, lam = parts[g]
                lab[j] = np.concatenate([u, -lam * u])
                unl[j] = lam * u
        if st.n >= 2:
            cov += lab @ st.cl @ lab.T / (st.n * (st.n - 1))
        if st.big_n >= 2:
            cov += unl @ st.cu @ unl.T / (st.big_n * (st.big_n - 1))
    return cov
