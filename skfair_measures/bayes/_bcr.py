"""Rectified Bayesian calibration (``method="bcr"``): BC that admits when its calibration misfits.

BC (:mod:`._bc`) imputes every unlabeled row from a calibration map shared, through
a hierarchical prior, by all groups. When one group's calibration differs from the
others' and that group has few labels, the map is pulled toward the others' and BC
is confidently wrong (docs/reproduction_ji2020.md: 60-76% coverage on Compas-VR).

This method keeps BC's fit and adds a *rectifier*, the Bayesian analogue of the
rectifier of prediction-powered inference (Angelopoulos et al., Science 2023): in
every stratum ``(g, p)`` (group ``g``, prediction ``p``) the calibrated probability
may be off by ``delta_gp``, the mean of ``y - f(s)`` over the stratum's rows. Per
posterior draw of the calibration:

- the labeled rows of the stratum estimate it by their mean residual
  ``e_gp = mean(y_i - q_i)``, whose variance if the calibration were right is
  ``v_gp = sum q_i (1 - q_i) / n_gp**2`` (a stratum without labels has no
  estimate, ``v = inf``);
- a hierarchical prior shrinks the rectifiers toward zero (toward BC):
  ``delta_gp ~ N(0, tau_g**2)``, ``tau_g ~ HalfNormal(rectifier_scale)``, one
  ``tau`` per group, because a misfit is a group's own (the hierarchy of BC fits
  the large groups well, so their residuals say nothing about a small group's);
- ``tau_g`` is integrated on a grid (its marginal likelihood is normal in closed
  form), and ``delta_gp`` is drawn from its normal posterior given ``tau_g``;
- the unlabeled rows of the stratum get ``N_U,gp * delta_gp`` more expected
  positives (clipped to the stratum's size).

So with few labels in a group the estimate stays near BC's, but its interval
carries the prior uncertainty of the group's calibration (wider than BC's, much
narrower than Beta-Binomial's); as labels accrue, the labeled residuals take
over and the estimate moves to where the labels put it, as PPI's would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ._bc import BayesianCalibration, CalibrationFit, calibrated_probabilities
from ._method import Bases, FitData, GroupDraws, Rng, is_number, refuse_option

__all__ = ["RECTIFIER_SCALE", "RectifiedCalibration", "rectifier_draws", "stratum_residuals", "stratum_slope"]

#: Default scale of the HalfNormal prior on each group's rectifier spread ``tau_g``, in
#: logit units (chosen on the reproduction, docs/reproduction_ji2020.md).
RECTIFIER_SCALE = 0.25
#: Grid of ``tau / rectifier_scale`` on which ``tau`` is integrated (HalfNormal mass beyond 4 is 6e-5).
_TAU_GRID = np.linspace(0.0, 4.0, 65)[1:]


def stratum_residuals(
    q: np.ndarray, y_true: np.ndarray, y_pred: np.ndarray, codes: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sums over the labeled rows of each stratum ``(group, prediction)``, per draw.

    Parameters
    ----------
    q : ndarray of shape (n_draws, n_labeled)
        Calibrated probability of ``y = 1`` of every labeled row under every draw.
    y_true, y_pred, codes : ndarray of shape (n_labeled,)
    n_groups : int

    Returns
    -------
    residual, variance : ndarray of shape (n_draws, n_groups, 2)
        ``sum(y - q)`` and ``sum(q (1 - q))`` per stratum.
    size : ndarray of shape (n_groups, 2)
        Labeled rows per stratum.

    Examples
    --------
    >>> r, v, n = stratum_residuals(np.array([[0.5, 0.8]]), np.array([1, 1]), np.array([1, 1]), np.array([0, 0]), 1)
    >>> r.round(3).tolist(), v.round(3).tolist(), n.tolist()
    ([[[0.0, 0.7]]], [[[0.0, 0.41]]], [[0, 2]])
    """
    stratum = np.asarray(codes, dtype=np.intp) * 2 + np.asarray(y_pred, dtype=np.intp)
    onehot = np.zeros((stratum.size, 2 * n_groups))
    onehot[np.arange(stratum.size), stratum] = 1.0
    residual, variance = (np.asarray(y_true, dtype=float) - q) @ onehot, (q * (1.0 - q)) @ onehot
    size = onehot.sum(axis=0).astype(np.intp)
    shape = (q.shape[0], n_groups, 2)
    return residual.reshape(shape), variance.reshape(shape), size.reshape(n_groups, 2)


def rectifier_draws(
    residual: np.ndarray, variance: np.ndarray, size: np.ndarray, *, slope: np.ndarray, scale: float, rng: Rng
) -> np.ndarray:
    """One draw of every stratum's rectifier ``delta_gp`` per calibration draw.

    The model and its steps are in the module docstring: mean residuals and their
    variances, the marginal likelihood of ``tau_g`` on a grid, a grid point drawn per
    (draw, group), then ``delta`` from its conditional normal posterior.

    Parameters
    ----------
    residual, variance : ndarray of shape (n_draws, n_groups, 2)
        From :func:`stratum_residuals`.
    size : ndarray of shape (n_groups, 2)
    slope : ndarray of shape (n_draws, n_groups, 2)
        ``q (1 - q)`` at the stratum's mean calibrated probability: the change of
        the probability per unit of logit, so that the prior on ``delta_gp`` is a
        logit shift of scale ``tau_g`` (a stratum whose probabilities are near 0 or
        1 cannot move by much).
    scale : float
        ``rectifier_scale``: the HalfNormal scale of ``tau_g``, in logit units.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_draws, n_groups, 2)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> slope = np.full((4000, 1, 2), 0.25)
    >>> far = rectifier_draws(np.full((4000, 1, 2), 30.0), np.full((4000, 1, 2), 16.0), np.full((1, 2), 100),
    ...                       slope=slope, scale=0.5, rng=rng)
    >>> bool(0.2 < far.mean() < 0.3)   # 100 labels per stratum, all saying +0.3: the labels win
    True
    >>> none = rectifier_draws(np.zeros((4000, 1, 2)), np.zeros((4000, 1, 2)), np.zeros((1, 2), int),
    ...                        slope=slope, scale=0.5, rng=rng)
    >>> bool(abs(none.mean()) < 0.01 and 0.05 < none.std() < 0.15)   # no labels: the prior
    True
    """
    has = size > 0
    n = np.where(has, size, 1).astype(float)
    mean, var = np.where(has, residual / n, 0.0), np.where(has, variance / n**2, np.inf)
    # a perfectly confident calibration (q in {0, 1}) still leaves Bernoulli noise of a few rows
    var = np.maximum(var, 1e-6 / n)
    tau = scale * _TAU_GRID  # (K,)
    prior_var = (slope[..., None] * tau) ** 2  # (T, G, 2, K): prior variance of delta given tau
    total = prior_var + var[..., None]
    loglik = np.where(np.isfinite(total), -0.5 * (np.log(total) + mean[..., None] ** 2 / total), 0.0).sum(axis=2)
    logpost = loglik - 0.5 * (tau / scale) ** 2  # HalfNormal prior, uniform grid
    # a grid point per (draw, group) from softmax(logpost), by Gumbel-max: argmax(logpost + Gumbel noise)
    pick = np.argmax(logpost + rng.gumbel(size=logpost.shape), axis=-1)  # (T, G)
    tau_pick = tau[pick][..., None]  # (T, G, 1)
    p_var = (slope * tau_pick) ** 2  # (T, G, 2)
    known = np.isfinite(var)
    v = np.where(known, var, 1.0)
    post_mean = np.where(known, p_var / (p_var + v) * mean, 0.0)
    post_var = np.where(known, p_var * v / (p_var + v), p_var)
    return post_mean + np.sqrt(post_var) * rng.standard_normal(post_mean.shape)


def stratum_slope(unlabeled_cells: np.ndarray) -> np.ndarray:
    """``q (1 - q)`` at each stratum's mean calibrated probability ``q`` (0.25 where a stratum is empty).

    Examples
    --------
    >>> stratum_slope(np.array([[[9.0, 5.0], [1.0, 5.0]]])).round(6).tolist()   # q = 0.1 and 0.5
    [[0.09, 0.25]]
    """
    size = unlabeled_cells.sum(axis=-2)
    q = np.divide(unlabeled_cells[..., 1, :], size, out=np.full(size.shape, 0.5), where=size > 0)
    return q * (1.0 - q)


def rectified_cells(unlabeled_cells: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Unlabeled expected cells with ``N_U,gp * delta_gp`` moved from cell ``[0, p]`` to ``[1, p]``.

    Parameters
    ----------
    unlabeled_cells : ndarray of shape (..., n_groups, 2, 2)
        Expected cells ``[group, y_true, y_pred]`` of the unlabeled rows.
    delta : ndarray of shape (..., n_groups, 2)
        Rectifier per stratum ``(group, prediction)``.

    Returns
    -------
    ndarray of the shape of ``unlabeled_cells``; positives kept within ``[0, N_U,gp]``.

    Examples
    --------
    >>> cells = np.array([[[6.0, 0.0], [4.0, 10.0]]])   # 10 rows predicted 0, 10 predicted 1
    >>> rectified_cells(cells, np.array([[0.1, 0.5]])).tolist()
    [[[5.0, 0.0], [5.0, 10.0]]]
    """
    size = unlabeled_cells.sum(axis=-2)  # (..., G, 2): rows per stratum
    positives = np.clip(unlabeled_cells[..., 1, :] + size * delta, 0.0, size)
    return np.stack([size - positives, positives], axis=-2)


@dataclass(frozen=True)
class RectifiedCalibration(BayesianCalibration):
    """``method="bcr"``: BC plus a per-group rectifier with a hierarchical prior (module docstring).

    The options are BC's plus ``rectifier_scale``, the HalfNormal scale of the
    spread of the rectifiers in a group (default :data:`RECTIFIER_SCALE`).
    """

    rectifier_scale: float = RECTIFIER_SCALE

    name: ClassVar[str] = "bcr"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (is_number(self.rectifier_scale) and self.rectifier_scale > 0):
            scale = self.rectifier_scale
            refuse_option("rectifier_scale", scale, f"pass a positive number (default {RECTIFIER_SCALE})")

    def draws_from_calibrated(
        self, unlabeled: np.ndarray, fit: CalibrationFit, data: FitData, bases: Bases, rng: Rng
    ) -> GroupDraws:
        """The rectified draws from a calibration fit (BC's, so one fit serves both methods)."""
        lab = data.labeled
        q = calibrated_probabilities(fit.params, lab.scores, lab.codes)  # (chain, draw, n_labeled)
        lead, flat = q.shape[:-1], q.reshape(-1, q.shape[-1])
        residual, variance, size = stratum_residuals(flat, data.y_true, lab.y_pred, lab.codes, data.n_groups)
        slope = stratum_slope(unlabeled).reshape(residual.shape)
        delta = rectifier_draws(residual, variance, size, slope=slope, scale=float(self.rectifier_scale), rng=rng)
        cells = data.counts + rectified_cells(unlabeled, delta.reshape(lead + delta.shape[1:]))
        out = self.draws_from_cells(cells, fit, bases)
        out.attrs["rectifier_scale"] = float(self.rectifier_scale)
        out.extra["rectifier"] = delta.reshape(lead + delta.shape[1:])
        plain = super().draws_from_calibrated(unlabeled, fit, data, bases, rng)  # BC's draws: no rectifier
        with np.errstate(invalid="ignore"):
            groups = {name: v.mean(axis=(0, 1)) for name, v in plain.values.items()}
            out.calibration_point = (groups, {name: float(v.mean()) for name, v in plain.overall.items()})
        return out
