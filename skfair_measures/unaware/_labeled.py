"""Proxy disparities calibrated on a small sample where the attribute is known.

HOC (:mod:`._proxy`) needs proxies that are independent and identically distributed
given the attribute. When they are not (the reliability checks fail, or the proxies
share inputs), a small *labeled* sample, rows where the true attribute ``A`` was
collected, calibrates the proxies without that assumption. For every cell ``c`` of
(true label ``y``, prediction ``k``, pattern ``z`` of all proxy guesses):

    P(A = a, f = k | Y = y)  =  sum_z  P(f = k, Z = z | Y = y)  P(A = a | Y = y, f = k, Z = z),

where the first factor is counted on all rows and the second on the labeled rows
of the cell. This is the double-sampling (validation-subsample) estimator of
measurement-error models: it is unbiased whatever the dependence among the proxies,
as long as the labeled rows are a random sample of the rows (or random within
cells). Sparse cells are smoothed towards the cell's (y, k) share with ``alpha``
pseudo-rows; with ``alpha`` large every cell falls back to ``P(A | Y = y, f = k)``
from the labeled rows alone, which is unbiased too, only noisier. The proxies
buy precision, never bias. The interval resamples labeled and other rows
separately and repeats the whole estimate.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_random_state

from .._groups import encode_known_groups, resolve_sensitive
from ..results import check_prob
from ._proxy import (
    ProxyDisparityResult,
    _resolve_classes,
    bootstrap_diagnostics,
    disparity_from_rates,
    rates_frame,
    replicate_reasons,
    warn_outcome,
)
from ._proxy_codes import encode_proxies

__all__ = ["labeled_proxy_disparity"]

# A group with fewer labeled rows than this gives a noisy calibration: a reliability reason.
_MIN_LABELED = 20


def _labeled_codes(sensitive: Any, n: int, groups: pd.Index) -> np.ndarray:
    """Group code of each row's true attribute; -1 where it is unknown (missing)."""
    values = sensitive.to_numpy(dtype=object) if isinstance(sensitive, pd.Series) else np.asarray(sensitive, object)
    if values.ndim != 1 or values.size != n:
        raise ValueError(
            f"sensitive must be 1-D with one entry per row of y_pred ({n}), missing where unknown; "
            f"got shape {values.shape}."
        )
    codes = encode_known_groups(values, groups, "sensitive", missing=True)
    if not (codes >= 0).any():
        raise ValueError(
            "sensitive has no known value: label a random sample of rows with the true attribute "
            "(missing values mark the rows where it is unknown)."
        )
    return codes


def _cells(pred: np.ndarray, label: np.ndarray, codes: np.ndarray, n_label: int, n_pred: int) -> tuple[np.ndarray, int]:
    """One cell index per row over (label, prediction, proxy pattern), and the number of cells."""
    patterns, z = np.unique(codes, axis=0, return_inverse=True)
    z, n_z = z.ravel(), len(patterns)
    return (label * n_pred + pred) * n_z + z, n_label * n_pred * n_z


def _estimate(
    n_lab: np.ndarray, n_all: np.ndarray, shape: tuple[int, int, int], alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Rates ``H[..., a, y, k]`` and labeled rows per (y, k) from labeled counts ``n_lab[..., a, cell]``."""
    lab = n_lab.reshape(*n_lab.shape[:-1], *shape)  # (..., a, y, k, z)
    tot = n_all.reshape(*n_all.shape[:-1], *shape)  # (..., y, k, z)
    per_yk = lab.sum(axis=-1)  # (..., a, y, k)
    n_yk = per_yk.sum(axis=-3)  # (..., y, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        prior = per_yk / n_yk[..., None, :, :]  # P_L(A = a | y, k)
        post = (lab + alpha * prior[..., None]) / (lab.sum(axis=-4, keepdims=True) + alpha)
        joint = (post * tot[..., None, :, :, :]).sum(axis=-1)  # (..., a, y, k)
        h = joint / joint.sum(axis=-1, keepdims=True)
    return h, n_yk


def labeled_proxy_disparity(
    y_pred: Any,
    proxies: Any,
    sensitive: Any,
    metric: str = "dp",
    y_true: Any = None,
    *,
    groups: Any = None,
    pos_label: Any = None,
    alpha: float = 1.0,
    n_boot: int = 0,
    prob: float = 0.95,
    random_state: Any = 0,
) -> ProxyDisparityResult:
    """DP, EOd or EOp through proxies calibrated on a small sample with the true attribute.

    Needs none of HOC's assumptions (see the module docstring): the proxies may be of
    different strength and their errors may depend on each other and on the
    predictions. It needs the true attribute on a random sample of the rows.

    Parameters
    ----------
    y_pred : array-like of shape (n_samples,)
        Predictions of the audited model.
    proxies : array-like or DataFrame of shape (n_samples, n_proxies)
        Guesses of the sensitive attribute, one column per proxy (one or more).
    sensitive : array-like of shape (n_samples,)
        The true attribute where it is known (a random sample of the rows), missing
        (None / NaN) elsewhere.
    metric : {"dp", "eod", "eop"}, default="dp"
        Demographic parity, equalised odds or equal opportunity.
    y_true : array-like of shape (n_samples,), optional
        True labels; required for ``"eod"`` and ``"eop"``.
    groups : array-like, optional
        The sensitive values; by default the sorted union of the proxies' values.
    pos_label : optional
        Positive class for ``"eop"`` (inferred for 0/1 and -1/1 labels).
    alpha : float, default=1.0
        Pseudo-rows that smooth each cell's labeled shares towards its (label,
        prediction) shares; 0 uses the cells' own shares (an empty cell then borrows
        the (label, prediction) shares).
    n_boot : int, default=0
        Bootstrap replicates (labeled and other rows resampled separately) for
        ``result.interval(prob)``.
    prob : float, default=0.95
        Probability of ``result.interval()`` (its default) and of the interval in
        ``to_dict``; a number in (0, 1).
    random_state : int, RandomState instance or None, default=0
        Seed of the bootstrap.

    Returns
    -------
    ProxyDisparityResult
        With ``mode="labeled"``; ``reliable`` is False when a group has fewer than
        20 labeled rows. ``diagnostics`` holds the labeled counts per group and
        per (label, prediction) cell, the number of proxy patterns and ``alpha``.

    Raises
    ------
    ValueError
        On bad input, naming the argument; ``sensitive`` without a known value or
        with a value outside the groups.

    Examples
    --------
    Proxies whose errors move together (HOC's independence fails), 600 labeled rows:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> n = 20_000
    >>> a = (rng.random(n) < 0.4).astype(int)
    >>> y_pred = (rng.random(n) < np.where(a == 1, 0.6, 0.3)).astype(int)
    >>> shared = rng.random(n) < 0.2                          # one error for all proxies
    >>> flip = shared[:, None] | (rng.random((n, 3)) < 0.1)
    >>> proxies = np.where(flip, 1 - a[:, None], a[:, None])
    >>> sensitive = np.where(rng.random(n) < 0.03, a, None)   # known on about 600 rows
    >>> res = labeled_proxy_disparity(y_pred, proxies, sensitive, n_boot=200)
    >>> true = y_pred[a == 1].mean() - y_pred[a == 0].mean()
    >>> round(float(true), 2), round(res.value, 2)
    (0.3, 0.32)
    >>> lo, hi = res.interval()
    >>> bool(lo < true < hi)
    True
    """
    start, prob = time.perf_counter(), _check(metric, alpha, n_boot, prob)
    classes, pred, label, pos = _resolve_classes(y_pred, y_true, metric, pos_label)
    codes, group_index, columns = encode_proxies(proxies, groups=groups, n_samples=len(pred))
    truth = _labeled_codes(resolve_sensitive(sensitive, argument="sensitive"), len(pred), group_index)
    n_label = 1 if metric == "dp" else len(classes)
    cell, n_cells = _cells(pred, label, codes, n_label, len(classes))
    shape = (n_label, len(classes), n_cells // (n_label * len(classes)))
    k, known = len(group_index), truth >= 0
    n_all = np.bincount(cell, minlength=n_cells).astype(float)
    n_lab = np.bincount(truth[known] * n_cells + cell[known], minlength=k * n_cells).reshape(k, n_cells).astype(float)

    h, n_yk = _estimate(n_lab, n_all, shape, alpha)
    reason = _undefined_reason(n_yk, n_all.reshape(shape).sum(-1), classes, metric)
    value = float("nan") if reason else float(disparity_from_rates(h, metric, pos))
    counts = n_lab.sum(axis=1)
    few = zip(group_index[counts < _MIN_LABELED], counts[counts < _MIN_LABELED], strict=True)
    reasons = [f"group {g!r} has only {int(c)} labeled row(s); label at least {_MIN_LABELED} per group" for g, c in few]
    draws = None
    if n_boot:  # replicates resample the labeled rows and the other rows separately, the whole estimate redone
        rng, lab, other = check_random_state(random_state), n_lab.ravel(), n_all - n_lab.sum(axis=0)
        lab_b = rng.multinomial(int(lab.sum()), lab / lab.sum(), size=n_boot).astype(float)
        lab_b = lab_b.reshape(n_boot, *n_lab.shape)
        # every row labeled: no other rows, zero counts in every replicate
        other_b = rng.multinomial(int(round(other.sum())), other / max(other.sum(), 1), size=n_boot).astype(float)
        all_b = lab_b.sum(axis=1) + other_b
        h_b, n_yk_b = _estimate(lab_b, all_b, shape, alpha)
        draws = disparity_from_rates(h_b, metric, pos)
        undefined = (n_yk_b == 0) & (all_b.reshape(n_boot, *shape).sum(-1) > 0)  # as _undefined_reason
        draws[undefined.reshape(n_boot, -1).any(axis=1)] = np.nan
    reasons += replicate_reasons(draws, prob, value)
    labeled_by_group = dict(zip(group_index.tolist(), counts.tolist(), strict=True))
    diagnostics = {"groups": group_index.tolist(), "classes": classes.tolist(), "proxy_columns": columns}
    diagnostics |= {"n_samples": len(pred), "n_labeled": int(known.sum()), "n_labeled_by_group": labeled_by_group}
    diagnostics |= {"n_labeled_by_cell": n_yk, "n_patterns": int(shape[-1]), "alpha": float(alpha)}
    diagnostics["seconds"] = time.perf_counter() - start
    if draws is not None:
        diagnostics["bootstrap"] = bootstrap_diagnostics(draws, prob, value)
    warn_outcome(reason, reasons, metric, "labeled")
    by_group = rates_frame(h, metric, pos, group_index, classes)
    fields = {"reasons": reasons, "reason": reason, "draws": draws, "prob": prob}
    return ProxyDisparityResult(value, by_group, diagnostics, metric=metric, mode="labeled", **fields)


def _check(metric: str, alpha: float, n_boot: int, prob: float) -> float:
    """Refuse a bad setting by name; return the checked ``prob``."""
    if metric not in ("dp", "eod", "eop"):
        raise ValueError(f"metric must be one of ['dp', 'eod', 'eop']; got {metric!r}.")
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be a finite number >= 0; got {alpha!r}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ValueError(f"n_boot must be an integer >= 0; got {n_boot!r}.")
    return check_prob(prob)


def _undefined_reason(n_yk: np.ndarray, rows_yk: np.ndarray, classes: np.ndarray, metric: str) -> str | None:
    """A (label, prediction) cell with rows but no labeled row leaves its group shares unknown."""
    empty = np.argwhere((n_yk == 0) & (rows_yk > 0))
    if not empty.size:
        return None
    y, k = empty[0]
    shown = [c.item() if isinstance(c, np.generic) else c for c in classes]
    where = f"y_pred={shown[k]!r}" + ("" if metric == "dp" else f", y_true={shown[y]!r}")
    return f"no labeled row has {where}, so the group shares there are unknown; label more rows"
