"""Group disparities measured through weak proxies of the sensitive attribute.

Zhu, Yao, Sun, Li and Liu (2023), "Weak proxies are sufficient and preferable for
fairness with missing sensitive attributes". When the sensitive attribute ``A`` is
missing, a common shortcut is to measure fairness with a proxy's guess ``A~`` in
its place (*Base*). That shrinks the disparity: with two groups and proxy noise
independent of the predictions, the proxy disparity is the true one times
``1 - e1 - e2``, where ``e1 = P(A=1 | A~=2)`` and ``e2 = P(A=2 | A~=1)``
(Corollary 3.3). Theorem 4.1 undoes the noise exactly:

    P(A = ., f = k)  =  (T_k^T)^{-1}  P(A~ = ., f = k),       H[a, k] = P(A=a, f=k) / p[a],

where ``T_k[a, a~] = P(A~ = a~ | f = k, A = a)`` and ``p = P(A)``; for equalised odds
the same holds within each true label ``y`` with ``p_y = P(A | Y = y)``. ``T`` and
``p`` are estimated from three or more proxies by HOC (:mod:`._hoc`), without the
true attribute.

* ``mode="base"``: the first proxy column used as if it were the attribute.
* ``mode="global"``: one ``T`` for all rows (HOC on every row); the paper's
  heuristic that trades a little bias for much less variance.
* ``mode="local"``: one ``T`` per predicted class (DP) or per (true label,
  predicted class) cell (EOd, EOp), each fitted by HOC on that cell's rows.

The prior is never fitted per prediction cell: ``p`` comes from HOC on all rows
(DP) and ``p_y = P(A | Y = y)`` from HOC on the rows with label ``y`` (EOd, EOp), in
both modes (the authors' code averages the priors of its per-(label, prediction)
fits, which agrees with this within 0.1 points of error on their COMPAS data);
``prior="implied"`` instead divides by the prior that the global ``T`` implies,
``(T^T)^{-1} P(A~ | Y = y)``. The noisy rates ``P(A~ = ., f = k)`` pool the guesses of all proxy
columns (they share ``T`` under the HOC assumptions), as the authors' code does.

Disparities average absolute differences over ordered group pairs and over the
predicted classes (and true labels): with two groups and binary predictions
DP = ``|d positive rate|``, EOd = ``(|d TPR| + |d FPR|) / 2``, EOp = ``|d TPR|``.

Every statistic is a function of the counts of the distinct rows of
(prediction, label, proxies), so the bootstrap resamples those counts
multinomially instead of the rows.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_random_state

from ..measures import UndefinedGroupWarning
from ..results import check_prob, interval_refusal, replicate_se
from ._estimator import HOCEstimator
from ._hoc import (
    SINGULAR_COND,
    HOCSolution,
    ProxyReliabilityWarning,
    augment_if_needed,
    choose_subsets,
    compress_rows,
    consensus_statistics,
    fit_transition,
    single_thread_blas,
    singular_error,
)
from ._plain import UnawareResult
from ._proxy_codes import _sorted_union, encode_labels, encode_proxies
from ._reliability import assess_fit, dependent_proxies

__all__ = ["ProxyDisparityResult", "proxy_disparity"]

_METRICS = ("dp", "eod", "eop")
_MODES = ("base", "global", "local")
# Local cells with fewer rows than this give an unstable T_k: a reliability reason.
_MIN_LOCAL_ROWS = 100
# Calibrated rates further than this outside [0, 1] make the estimate undefined; closer
# ones are sampling noise around a rate near 0 or 1 and are clipped.
_RANGE_TOL = 0.02
# What makes a bootstrap replicate undefined, per mode (named in the interval's warning).
_REPLICATE_CAUSE = {
    "base": "a group without rows or labels in the replicate",
    "global": "in the replicate, a group no proxy guesses or calibrated rates more than 0.02 outside [0, 1]",
    "labeled": "a (label, prediction) cell with rows but no labeled row in the replicate",
}


class ProxyDisparityResult(UnawareResult):
    """A disparity measured through proxies of the sensitive attribute.

    Attributes
    ----------
    key : str
        ``"unaware.proxy_<metric>"`` (or the measure's key).
    value : float
        The calibrated (``mode="global"``/``"local"``) or direct (``"base"``)
        disparity; NaN when undefined (``reason`` says why).
    by_group : pandas.DataFrame
        Estimated rate per group (rows): ``P(y_pred = k | A = a)`` for DP with one
        column per predicted class; ``P(y_pred = k | y_true = y, A = a)`` for EOd
        with (``y_true``, ``y_pred``) MultiIndex columns; for EOp the single column
        (pos, pos), the true positive rate.
    reliable : bool
        False when a reliability check failed (``reasons`` lists them) or the value
        is undefined: the estimate cannot be trusted.
    reasons : list of str
        Why the estimate is unreliable (empty when ``reliable``).
    draws : ndarray or None
        Bootstrap replicates of ``value`` (``n_boot > 0``), NaN where a replicate was
        undefined.
    prob : float
        Default probability of ``interval()``.
    diagnostics : dict
        ``T`` and ``p`` (calibrated modes), the reliability checks per fitted matrix,
        condition numbers, solver information, the uncalibrated rates. See
        :func:`proxy_disparity`.
    metric, mode : str
        ``"dp"``, ``"eod"`` or ``"eop"``; ``"base"``, ``"global"``, ``"local"`` or
        ``"labeled"``.
    """

    def __init__(self, *args: Any, metric: str, mode: str, **fields: Any) -> None:
        super().__init__(*args, **fields)  # value, by_group, diagnostics and the fields of UnawareResult
        self.key, self.metric, self.mode = self.key or f"unaware.proxy_{metric}", metric, mode

    _no_replicates_hint = "pass n_boot= (e.g. proxy_disparity(..., n_boot=200)) or use the measure's bootstrap()"

    def _replicate_cause(self) -> str | None:
        return _REPLICATE_CAUSE.get(self.mode, _REPLICATE_CAUSE["global"])

    def to_dict(self) -> dict[str, Any]:
        """The result as plain Python types (JSON-serialisable), every group kept.

        Returns
        -------
        dict
            The keys of :meth:`UnawareResult.to_dict` plus ``metric`` and ``mode``.
        """
        return {**super().to_dict(), "metric": self.metric, "mode": self.mode}

    def __repr__(self) -> str:
        flag = "" if self.reliable else ", reliable=False"
        return f"ProxyDisparityResult(metric={self.metric!r}, mode={self.mode!r}, value={self.value:.4f}{flag})"


@dataclass
class _Problem:
    """One calibration: the options of :func:`proxy_disparity` and what stays fixed across bootstrap replicates.

    The options are checked (each refused by name) and normalised here; :func:`_encode` adds the rows:

    - ``cells`` (n_cells, 2 + n_columns): prediction, label and proxy codes of each distinct row;
    - ``n_groups``, ``n_pred``, ``n_label``; ``pos``, the positive class's code (EOp);
    - ``pooled``: the columns (of ``cells``) of the user's proxies; ``hoc_cols``: those fed to HOC
      (with the neighbours' under ``knn_augment``); ``subsets``: triples of them, relative to ``hoc_cols``;
    - ``classes``: the labels of the prediction and label codes; ``groups``: the group labels.
    """

    metric: str
    mode: str
    n_boot: int
    prob: float
    cond_warn: float
    n_check: int
    estimator: HOCEstimator | None
    prior: str
    clip: bool

    def __post_init__(self) -> None:
        self.metric, self.mode = str(self.metric).lower(), str(self.mode).lower()
        for name, allowed in (("metric", _METRICS), ("mode", _MODES), ("prior", ("hoc", "implied"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}; got {getattr(self, name)!r}.")
        for name, value in (("n_boot", self.n_boot), ("n_check", self.n_check)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0; got {value!r}.")
        if not self.cond_warn > 1.0:
            raise ValueError(f"cond_warn must be > 1 (a condition number); got {self.cond_warn!r}.")
        self.estimator = HOCEstimator() if self.estimator is None else self.estimator
        if not isinstance(self.estimator, HOCEstimator):
            kind = type(self.estimator).__name__
            raise TypeError(f"estimator must be an HOCEstimator (solver settings); got {kind}.")
        self.estimator._check_params()
        self.n_boot, self.n_check, self.cond_warn = int(self.n_boot), int(self.n_check), float(self.cond_warn)
        self.prob = check_prob(self.prob)

    @property
    def pred(self) -> np.ndarray:
        return self.cells[:, 0]

    @property
    def label(self) -> np.ndarray:
        return self.cells[:, 1]


def _noisy_counts(problem: _Problem, w: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Counts ``n[..., y, k, a~]`` averaged over the given proxy columns."""
    k, kp, ky = problem.n_groups, problem.n_pred, problem.n_label
    w2 = w.reshape(-1, w.shape[-1])
    n_rep, size = w2.shape[0], ky * kp * k
    offsets, out = (np.arange(n_rep) * size)[:, None], np.zeros(n_rep * size)
    for c in columns:
        cell = (problem.label * kp + problem.pred) * k + problem.cells[:, c]
        out += np.bincount((offsets + cell[None, :]).ravel(), weights=w2.ravel(), minlength=n_rep * size)
    return out.reshape(*w.shape[:-1], ky, kp, k) / len(columns)


def _noisy_rates(n: np.ndarray) -> np.ndarray:
    """``H~[..., a~, y, k] = P(f = k | Y = y, A~ = a~)`` from counts ``n[..., y, k, a~]``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        h = n / n.sum(axis=-2, keepdims=True)
    return np.moveaxis(h, -1, -3)


def disparity_from_rates(h: np.ndarray, metric: str, pos: int | None = None) -> np.ndarray:
    """Average absolute difference over ordered group pairs, classes and labels.

    Parameters
    ----------
    h : ndarray of shape (..., n_groups, n_label, n_pred)
        Rates ``P(f = k | Y = y, A = a)`` (``n_label = 1`` for DP).
    metric : {"dp", "eod", "eop"}
        ``"eop"`` uses only the (pos, pos) rate.
    pos : int, optional
        Index of the positive class (``"eop"``).

    Returns
    -------
    ndarray of shape (...)
        NaN when a rate is undefined.

    Examples
    --------
    >>> import numpy as np
    >>> h = np.array([[[0.7, 0.3]], [[0.4, 0.6]]])       # 2 groups, DP
    >>> float(np.round(disparity_from_rates(h, "dp"), 4))
    0.3
    """
    if metric == "eop":
        h = h[..., pos : pos + 1, pos : pos + 1]
    k = h.shape[-3]
    diff = np.abs(h[..., :, None, :, :] - h[..., None, :, :, :])
    pair = diff.sum(axis=(-4, -3)) / (k * (k - 1))
    return pair.mean(axis=(-2, -1))


class _NeverGuessed(ValueError):
    """A group no proxy ever guesses on some rows: ``T`` has a zero column there."""

    def __init__(self, name: str, missing: np.ndarray) -> None:
        super().__init__(name)
        self.name, self.missing = name, missing


# ----------------------------------------------------------------- the HOC fits
def _fit_all(problem: _Problem, w: np.ndarray, rng: Any, warm: dict[str, HOCSolution] | None) -> dict[str, HOCSolution]:
    """Every HOC fit a calibration needs: global, per label (the priors ``p_y``), per local cell.

    Each fit runs on the rows weighted by ``w`` (a cell without rows is not fitted: the
    joint there is zero whatever T is), warm-started at ``warm``'s solution or else at the
    global one, and its solution records P(A~) and the row count.
    """
    options = {"max_iter": problem.estimator.max_iter, "tol": problem.estimator.tol, "random_state": rng}
    options["n_init"] = problem.estimator.n_init if warm is None else 1
    cells: list[tuple[str, np.ndarray | None]] = [("global", None)]
    if problem.metric != "dp" and problem.prior == "hoc":
        cells += [(f"label={y}", problem.label == y) for y in range(problem.n_label)]
    cells += _local_cells(problem) if problem.mode == "local" else []
    fits: dict[str, HOCSolution] = {}
    for name, mask in cells:
        wm = w if mask is None else w * mask
        if wm.sum() <= 0:
            continue
        c1, c2, c3 = consensus_statistics(problem.cells[:, problem.hoc_cols], wm, problem.n_groups, problem.subsets)
        if (missing := np.flatnonzero(~(c1 > 0))).size:
            raise _NeverGuessed(name, missing)
        start = (warm or fits).get(name, fits.get("global"))
        fits[name] = fit_transition(c1, c2, c3, init=None if start is None else (start.T, start.p), **options)
        fits[name].extra.update(noisy_prior=c1, n_rows=float(wm.sum()))
    return fits


def _local_cells(problem: _Problem) -> list[tuple[str, np.ndarray]]:
    """Names and row masks of the local cells: per prediction (DP) or per (label, prediction)."""
    if problem.metric == "dp":
        return [(f"pred={j}", problem.pred == j) for j in range(problem.n_pred)]
    return [
        (f"label={y},pred={j}", (problem.pred == j) & (problem.label == y))
        for y in range(problem.n_label)
        for j in range(problem.n_pred)
    ]


def _used(problem: _Problem, fits: dict[str, HOCSolution]) -> dict[str, HOCSolution]:
    """The fits whose transition matrices are inverted."""
    if problem.mode == "global":
        return {"global": fits["global"]}
    return {name: fits[name] for name, _ in _local_cells(problem) if name in fits}


def _transitions(problem: _Problem, fits: dict[str, HOCSolution]) -> np.ndarray:
    """``T[y, k]`` for every (label, predicted class); an empty local cell borrows the global T."""
    cells = [name for name, _ in _local_cells(problem)]  # (label, prediction) in order
    out = np.stack([fits.get("global" if problem.mode == "global" else name, fits["global"]).T for name in cells])
    return out.reshape(problem.n_label, problem.n_pred, problem.n_groups, problem.n_groups)


def _priors(problem: _Problem, fits: dict[str, HOCSolution], joint: np.ndarray) -> np.ndarray:
    """Prior ``p`` (DP) or ``p_y = P(A | Y = y)`` per label (EOd, EOp), never per prediction cell."""
    glob = fits["global"]
    if problem.prior == "implied":  # the prior the global T implies: (T^T)^-1 P(A~ | Y = y)
        return np.linalg.solve(glob.T.T[None], joint.sum(axis=1)[..., None])[..., 0]
    if problem.metric == "dp":
        return glob.p[None, :]
    priors = np.full((problem.n_label, problem.n_groups), np.nan)
    for y in range(problem.n_label):
        if f"label={y}" in fits:
            priors[y] = fits[f"label={y}"].p
    return priors


def _calibrate(
    problem: _Problem, w: np.ndarray, n_pooled: np.ndarray, *, rng: Any, warm: dict[str, HOCSolution] | None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Calibrated rates ``H[a, y, k]`` for one table of counts (Theorem 4.1).

    NaN rates when a transition matrix to invert is singular.
    """
    fits = _fit_all(problem, w, rng, warm)
    with np.errstate(invalid="ignore", divide="ignore"):
        joint = n_pooled / n_pooled.sum(axis=(-2, -1), keepdims=True)  # P(f = k, A~ = a~ | Y = y)
    transitions, used = _transitions(problem, fits), _used(problem, fits)
    fitted = {"fits": fits, "used": used, "T": transitions}
    if any(np.linalg.cond(sol.T) >= SINGULAR_COND for sol in used.values()):
        fitted["priors"] = np.full((problem.n_label, problem.n_groups), np.nan)
        return np.full((problem.n_groups, problem.n_label, problem.n_pred), np.nan), fitted
    q = np.linalg.solve(np.swapaxes(transitions, -1, -2), joint[..., None])[..., 0]  # (y, k, a)
    fitted["priors"] = priors = _priors(problem, fits, joint)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.moveaxis(q / priors[:, None, :], -1, 0)  # (a, y, k)
        if problem.clip:
            h = np.clip(h, 0.0, 1.0)
            h = h / h.sum(axis=-1, keepdims=True)
    return h, fitted


def _in_range(h: np.ndarray) -> tuple[np.ndarray, bool]:
    """Clip rates within ``_RANGE_TOL`` of [0, 1]; False (and NaN) when any lies further out."""
    finite = h[np.isfinite(h)]
    if finite.size and (finite.min() < -_RANGE_TOL or finite.max() > 1 + _RANGE_TOL):
        return np.full_like(h, np.nan), False
    return np.clip(h, 0.0, 1.0), True


# ----------------------------------------------------------------- the named steps
def _encode(
    p: _Problem, rng: Any, y_pred: Any, proxies: Any, y_true: Any, groups: Any, pos_label: Any, features: Any, knn: bool
) -> tuple[np.ndarray, dict[str, Any]]:
    """Encode the inputs into ``p``, compressed to the distinct rows; their counts and the inputs' diagnostics."""
    p.classes, pred, label, p.pos = _resolve_classes(y_pred, y_true, p.metric, pos_label)
    codes, p.groups, columns = encode_proxies(proxies, groups=groups, n_samples=len(pred))
    (n_samples, n_proxies), calibrated = codes.shape, p.mode != "base"
    hoc_codes = codes
    if calibrated:
        hoc_codes = augment_if_needed(codes, features, knn, p.estimator.knn_metric, where=f"mode={p.mode!r}")
    p.cells, counts = compress_rows(np.column_stack([pred, label, hoc_codes]))
    p.n_groups, p.n_pred, p.n_label = len(p.groups), len(p.classes), 1 if p.metric == "dp" else len(p.classes)
    p.pooled, p.hoc_cols = np.arange(2, 2 + n_proxies), np.arange(2, 2 + hoc_codes.shape[1])
    p.subsets = choose_subsets(len(p.hoc_cols), p.estimator.max_subsets, rng) if calibrated else np.zeros((0, 3), int)
    meta = {"groups": p.groups.tolist(), "classes": p.classes.tolist(), "proxy_columns": columns}
    meta |= {"n_samples": int(n_samples), "n_proxies": int(n_proxies), "knn_augmented": hoc_codes.shape[1] > n_proxies}
    if calibrated:
        meta["proxy_dependence"] = dependent_proxies(codes, columns)
    return counts, meta


def _point_estimate(problem: _Problem, counts: np.ndarray, rng: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """Rates per group: the first proxy as the attribute (Base), or calibrated by HOC."""
    if problem.mode == "base":
        return _noisy_rates(_noisy_counts(problem, counts, problem.pooled[:1])), {}
    n_pooled = _noisy_counts(problem, counts, problem.pooled)
    try:
        h, fitted = _calibrate(problem, counts, n_pooled, rng=rng, warm=None)
    except _NeverGuessed as err:
        where = "" if err.name == "global" else f" on the rows {_named(err.name, problem.classes)}"
        raise ValueError(
            f"no proxy ever guesses the group(s) {problem.groups[err.missing].tolist()}{where}, so the transition "
            "matrix T is singular there and cannot be inverted. Drop those groups from groups=, merge them, or use "
            "mode='global' when only a local cell lacks them."
        ) from None
    for name, sol in fitted["used"].items():
        if (cond := np.linalg.cond(sol.T)) >= SINGULAR_COND:
            hint = ", or use mode='global'" if name != "global" else ""
            raise singular_error(_pretty(name, problem.classes), cond, hint)
    return h, fitted


def _assess(problem: _Problem, fitted: dict[str, Any], rng: Any) -> tuple[dict[str, Any], list[str]]:
    """Reliability checks of every fit the estimate depends on, and the reasons of those that fail.

    A fit whose ``T`` is inverted gets every check; a fit of a prior alone (``p_y`` of EOd and
    EOp, or the prior ``p`` of local DP) the prior's checks (moments, prior).
    """
    checks: dict[str, Any] = {}
    reasons: list[str] = []
    limits = {"cond_warn": problem.cond_warn, "n_sim": problem.n_check, "random_state": rng}
    for name, sol in fitted["fits"].items():
        inverted = name in fitted["used"] or (name == "global" and problem.prior == "implied")
        prior = (name.startswith("label=") and "," not in name) or (name == "global" and problem.metric == "dp")
        if not (inverted or prior):
            continue
        n_rows = sol.extra["n_rows"]
        out = assess_fit(sol, sol.extra["noisy_prior"], n_rows, problem.groups.tolist(), **limits)
        if not inverted:
            out = {k: v for k, v in out.items() if k in ("moments", "prior")}
            out["reasons"] = [c["reason"] for c in out.values() if not c["passed"]]
            out["passed"] = not out["reasons"]
        checks[_named(name, problem.classes)] = out
        reasons += [f"{_pretty(name, problem.classes)}: {r}" for r in out["reasons"]]
        if name != "global" and name in fitted["used"] and n_rows < _MIN_LOCAL_ROWS:
            reasons.append(
                f"the local cell {_named(name, problem.classes)} has only {n_rows:.0f} rows; its "
                "transition matrix is poorly determined (use mode='global')"
            )
    return checks, reasons


def _undefined_reason(h: np.ndarray, in_range: bool, problem: _Problem) -> str | None:
    """Why the disparity is undefined, or None."""
    if not in_range:
        return (
            f"the calibrated rates fall outside [0, 1] by more than {_RANGE_TOL}: the proxies do not fit the "
            "calibration model (see reasons); no disparity can be read from them"
        )
    used = h[..., problem.pos : problem.pos + 1, problem.pos : problem.pos + 1] if problem.metric == "eop" else h
    if np.isnan(used).any():
        bad = problem.groups[np.isnan(used).reshape(len(problem.groups), -1).any(axis=1)].tolist()
        return (
            f"the rate of group(s) {bad} has no rows to estimate it from (e.g. the first proxy never guesses "
            "that group, or a label is absent)"
        )
    return None


def _bootstrap(problem: _Problem, counts: np.ndarray, n_boot: int, fitted: dict[str, Any], rng: Any) -> np.ndarray:
    """Disparity on ``n_boot`` multinomial resamples of the cell counts, every fit redone.

    The whole pipeline is repeated per replicate: the proxy triples (when drawn at
    random), every HOC fit (warm-started at the point estimate's solution), the
    inversion and the range rule; an undefined replicate is NaN.
    """
    weights = rng.multinomial(int(round(counts.sum())), counts / counts.sum(), size=n_boot).astype(float)
    if problem.mode == "base":
        noisy = _noisy_rates(_noisy_counts(problem, weights, problem.pooled[:1]))
        return disparity_from_rates(noisy, problem.metric, problem.pos)
    n_pooled = _noisy_counts(problem, weights, problem.pooled)
    values, n_columns = np.full(n_boot, np.nan), len(problem.hoc_cols)
    for b in range(n_boot):
        if len(problem.subsets) < n_columns * (n_columns - 1) * (n_columns - 2) // 6:  # random triples: redraw
            problem.subsets = choose_subsets(n_columns, len(problem.subsets), rng)
        try:
            h, _ = _calibrate(problem, weights[b], n_pooled[b], rng=rng, warm=fitted["fits"])
        except _NeverGuessed:
            continue
        h, ok = _in_range(h) if not problem.clip else (h, True)
        if ok:
            values[b] = disparity_from_rates(h, problem.metric, problem.pos)
    return values


_LABELED_ADVICE = (
    " With a small sample where the attribute is known, use unaware.labeled_proxy_disparity, which does not need "
    "these assumptions."
)


def warn_outcome(reason: str | None, reasons: list[str], metric: str, kind: str, advice: str = "") -> None:
    """Warn that the disparity is undefined (``reason``) and that the ``kind`` estimate is unreliable (``reasons``)."""
    if reason is not None:
        msg = f"the {metric} disparity is undefined: {reason}; the value is NaN."
        warnings.warn(msg, UndefinedGroupWarning, stacklevel=3)
    if reasons:
        msg = f"the {kind} {metric} estimate is unreliable (result.reliable is False): {'; '.join(reasons)}.{advice}"
        warnings.warn(msg, ProxyReliabilityWarning, stacklevel=3)


def proxy_disparity(
    y_pred: Any,
    proxies: Any,
    metric: str = "dp",
    mode: str = "global",
    y_true: Any = None,
    *,
    groups: Any = None,
    pos_label: Any = None,
    features: Any = None,
    knn_augment: bool = False,
    clip: bool = False,
    prior: str = "hoc",
    n_boot: int = 0,
    prob: float = 0.95,
    cond_warn: float = 25.0,
    n_check: int = 100,
    estimator: HOCEstimator | None = None,
    random_state: Any = None,
) -> ProxyDisparityResult:
    """Measure DP, EOd or EOp when only weak proxies of the sensitive attribute exist.

    Calibrates the disparity measured through proxy guesses with the noise
    transition matrix estimated by HOC from three or more proxies (Zhu et al. 2023,
    Algorithm 1 and Theorem 4.1), or returns the direct proxy estimate (Base).

    Parameters
    ----------
    y_pred : array-like of shape (n_samples,)
        Predictions of the audited model.
    proxies : array-like or DataFrame of shape (n_samples, n_proxies)
        Guesses of the sensitive attribute, one column per proxy model. Base uses
        the first column; the calibrated modes need at least 3 columns (or
        ``knn_augment=True``). The guesses should be independent given the true
        attribute (Requirement 4.3): proxies trained on different data sources.
    metric : {"dp", "eod", "eop"}, default="dp"
        Demographic parity, equalised odds or equal opportunity.
    mode : {"base", "global", "local"}, default="global"
        Direct proxy estimate, one transition matrix for all rows, or one per
        prediction cell.
    y_true : array-like of shape (n_samples,), optional
        True labels; required for ``"eod"`` and ``"eop"``.
    groups : array-like, optional
        The sensitive values. By default the sorted union of the proxies' values; a
        proxy value outside the declared groups is an error.
    pos_label : optional
        Positive class for ``"eop"`` (inferred for 0/1 and -1/1 labels).
    features : array-like of shape (n_samples, n_features), optional
        Features for ``knn_augment``.
    knn_augment : bool, default=False
        With fewer than 3 proxies, add the proxies of each row's 2 nearest neighbours
        in ``features`` (Algorithm 2; assumes neighbours share the attribute).
    clip : bool, default=False
        Clip the calibrated rates to [0, 1] and renormalise them over the predicted
        classes (the authors' optional ``clip_vec``; their tables do not clip).
    prior : {"hoc", "implied"}, default="hoc"
        Prior ``p`` that divides the calibrated joint ``P(A, f = k)`` (Theorem 4.1).
        ``"hoc"``: fitted by HOC on all rows (DP) or on the rows with ``Y = y``
        (``p_y``, EOd/EOp), close to the authors' code. ``"implied"``: the prior that
        the global ``T`` implies, ``(T^T)^{-1} P(A~ | Y = y)``; in Global mode a
        group's calibrated rates then sum to one over the predicted classes. With two
        groups and DP the two coincide. With proxies whose noise does not depend on
        the label ``"implied"`` has much less variance (EOp error 0.005 against 0.04
        on 50,000 simulated rows); ``"hoc"`` reproduces the paper's COMPAS figures.
    n_boot : int, default=0
        Bootstrap replicates; with ``n_boot > 0`` the counts of the distinct rows are
        resampled multinomially, every HOC fit is redone on each replicate, and
        ``result.interval(prob)`` gives a percentile interval.
    prob : float, default=0.95
        Probability of ``result.interval()`` (its default) and of the interval in
        ``to_dict``; a number in (0, 1).
    cond_warn : float, default=25.0
        A transition matrix used for calibration with a larger condition number makes
        the estimate unreliable: its inverse amplifies estimation errors that much.
    n_check : int, default=100
        Tables simulated from each fitted model for the moment test of the
        reliability checks (``0`` skips that test; about 4 ms per table).
    estimator : HOCEstimator, optional
        Solver settings (``n_init``, ``max_subsets``, ``max_iter``, ``tol``,
        ``knn_metric``) for every HOC fit; its ``groups`` and ``random_state`` are
        not used.
    random_state : int, RandomState instance or None, default=None
        Seed of the solver restarts, the random proxy triples (more than
        ``max_subsets`` triples) and the bootstrap.

    Returns
    -------
    ProxyDisparityResult
        ``value`` (NaN with a ``reason`` when undefined), ``by_group``,
        ``reliable`` and ``reasons``, ``draws`` and ``interval(prob)`` (with
        ``n_boot``), and ``diagnostics``. The reliability checks run on every fit the
        estimate depends on (:mod:`skfair_measures.unaware._reliability`): the moment
        test of HOC's assumptions, a diagonally dominant ``T``, an estimated prior
        consistent with the proxies' guess shares, the condition number and
        Requirement 4.2; and on the proxies themselves, no two columns that determine
        each other row by row (``diagnostics['proxy_dependence']``). The calibrated
        modes return NaN when the calibrated rates fall more than 0.02 outside
        [0, 1] (closer ones are clipped). The diagnostics
        hold ``T`` (global transition matrix, rows = true group, columns = guess),
        ``p`` (prior of the true attribute), ``p_given_y`` (EOd/EOp), ``T_local``
        (local mode, shape (n_label, n_pred, K, K); ``n_label = 1`` for DP),
        ``condition_number`` (largest among the matrices used) and
        ``condition_numbers``, ``reliability`` (every check per fit),
        ``informative`` (Requirement 4.2), ``solver`` (per fit: loss, iterations,
        convergence, time), ``p_noisy`` and ``by_group_noisy`` (uncalibrated pooled
        rates), ``value_noisy``, sizes, and ``bootstrap``.

    Raises
    ------
    ValueError
        On bad input (naming the argument), with fewer than 3 proxies in a
        calibrated mode without ``knn_augment``, or when an estimated transition
        matrix is singular.

    Warns
    -----
    ProxyCalibrationWarning
        When a transition matrix fails Requirement 4.2 or is ill-conditioned.

    Examples
    --------
    Three conditionally independent proxies that are right 75-80% of the time:

    >>> import numpy as np
    >>> from skfair_measures import unaware
    >>> rng = np.random.default_rng(0)
    >>> n = 50_000
    >>> a = (rng.random(n) < 0.4).astype(int)                 # hidden attribute
    >>> y_pred = (rng.random(n) < np.where(a == 1, 0.6, 0.3)).astype(int)
    >>> flip = np.where(a == 1, 0.25, 0.2)
    >>> proxies = np.stack([np.where(rng.random(n) < flip, 1 - a, a) for _ in range(3)], axis=1)
    >>> true = float(abs(y_pred[a == 1].mean() - y_pred[a == 0].mean()))
    >>> base = unaware.proxy_disparity(y_pred, proxies, mode="base")
    >>> res = unaware.proxy_disparity(y_pred, proxies, metric="dp", mode="global")
    >>> round(true, 2), round(base.value, 2), round(res.value, 2), res.reliable
    (0.3, 0.16, 0.3, True)
    >>> np.round(res.diagnostics["T"], 2).tolist()
    [[0.8, 0.2], [0.25, 0.75]]
    """
    start = time.perf_counter()
    problem = _Problem(metric, mode, n_boot, prob, cond_warn, n_check, estimator, prior, clip)
    rng = check_random_state(random_state)
    counts, diagnostics = _encode(problem, rng, y_pred, proxies, y_true, groups, pos_label, features, knn_augment)
    with single_thread_blas():
        h, fitted = _point_estimate(problem, counts, rng)
        checks, reasons = _assess(problem, fitted, rng) if fitted else ({}, [])
        if not diagnostics.get("proxy_dependence", {"passed": True})["passed"]:
            reasons.insert(0, diagnostics["proxy_dependence"]["reason"])
        h, in_range = _in_range(h) if problem.mode != "base" and not clip else (h, True)
        draws = _bootstrap(problem, counts, problem.n_boot, fitted, rng) if problem.n_boot else None
    reason = _undefined_reason(h, in_range, problem)
    value = float("nan") if reason else float(disparity_from_rates(h, problem.metric, problem.pos))
    reasons += replicate_reasons(draws, problem.prob, value)
    diagnostics |= _fit_diagnostics(problem, fitted, counts, checks)
    if draws is not None:
        diagnostics["bootstrap"] = bootstrap_diagnostics(draws, problem.prob, value)
    diagnostics["seconds"] = time.perf_counter() - start
    warn_outcome(reason, reasons, problem.metric, "proxy-based", _LABELED_ADVICE)
    by_group = rates_frame(h, problem.metric, problem.pos, problem.groups, problem.classes)
    fields = {"reasons": reasons, "reason": reason, "draws": draws, "prob": problem.prob}
    return ProxyDisparityResult(value, by_group, diagnostics, metric=problem.metric, mode=problem.mode, **fields)


def replicate_reasons(draws: np.ndarray | None, prob: float, value: float) -> list[str]:
    """The reliability reason of a defined estimate whose ``prob`` interval is refused."""
    if draws is None or math.isnan(value):
        return []
    refusal = interval_refusal(draws, prob)
    return [] if refusal is None else [f"{refusal}: the estimate is unstable under resampling"]


def rates_frame(h: np.ndarray, metric: str, pos: int | None, groups: pd.Index, classes: np.ndarray) -> pd.DataFrame:
    """``by_group`` of a proxy result: rates ``h[a, y, k]`` as a frame (groups x classes)."""
    index = pd.Index(groups, name="group")
    if metric == "dp":
        return pd.DataFrame(h[:, 0, :], index=index, columns=pd.Index(classes, name="y_pred"))
    if metric == "eop":
        cols = pd.MultiIndex.from_tuples([(classes[pos], classes[pos])], names=["y_true", "y_pred"])
        return pd.DataFrame(h[:, pos, pos][:, None], index=index, columns=cols)
    cols = pd.MultiIndex.from_product([classes, classes], names=["y_true", "y_pred"])
    return pd.DataFrame(h.reshape(h.shape[0], -1), index=index, columns=cols)


def _fit_diagnostics(
    problem: _Problem, fitted: dict[str, Any], counts: np.ndarray, checks: dict[str, Any]
) -> dict[str, Any]:
    """Diagnostics of the point estimate (fit names use class labels); Base (nothing fitted): the guess shares."""
    n_pooled = _noisy_counts(problem, counts, problem.pooled if fitted else problem.pooled[:1])
    out: dict[str, Any] = {"p_noisy": n_pooled.sum(axis=(0, 1)) / n_pooled.sum()}
    if not fitted:
        return out
    fits: dict[str, HOCSolution] = fitted["fits"]
    h_noisy, named = _noisy_rates(n_pooled), {n: _named(n, problem.classes) for n in fits}
    conds = {named[n]: float(np.linalg.cond(fits[n].T)) for n in fitted["used"]}
    out |= {"T": fits["global"].T, "p": fits["global"].p}
    out["by_group_noisy"] = rates_frame(h_noisy, problem.metric, problem.pos, problem.groups, problem.classes)
    out["value_noisy"] = float(disparity_from_rates(h_noisy, problem.metric, problem.pos))
    out |= {"condition_number": max(conds.values()), "condition_numbers": conds, "reliability": checks}
    out["informative"] = all(c["informative"]["passed"] for c in checks.values() if "informative" in c)
    out["solver"] = {named[n]: {**fits[n].info(), "n_rows": fits[n].extra["n_rows"]} for n in fits}
    out |= {"n_subsets": int(len(problem.subsets)), "clipped": bool(problem.clip)}
    if problem.metric != "dp":
        out["p_given_y"] = fitted["priors"]
    if problem.mode == "local":
        out["T_local"] = fitted["T"]
    return out


def bootstrap_diagnostics(draws: np.ndarray, prob: float, value: float) -> dict[str, Any]:
    """Replicate count, undefined count, interval probability, standard error and the replicates."""
    return {
        "n_boot": int(draws.size),
        "n_failed": int((~np.isfinite(draws)).sum()),
        "prob": float(prob),
        "std": replicate_se(draws, estimate=value),
        "values": draws,
    }


def _named(name: str, classes: np.ndarray) -> str:
    """Replace class codes by labels in a fit name (``label=1,pred=0``)."""
    if name == "global":
        return name
    pairs = (part.split("=") for part in name.split(","))
    return ",".join(f"{'y_true' if key == 'label' else 'y_pred'}={classes[int(code)]}" for key, code in pairs)


def _pretty(name: str, classes: np.ndarray) -> str:
    return "T (global)" if name == "global" else f"T ({_named(name, classes)})"


def _codes_of(values: np.ndarray, classes: np.ndarray) -> np.ndarray:
    return pd.Index(classes, dtype=object).get_indexer(pd.Index(values, dtype=object)).astype(np.intp)


def _resolve_classes(
    y_pred: Any, y_true: Any, metric: str, pos_label: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
    """Label codes of predictions and truth over one class list, and the positive index."""
    pred, pred_labels = encode_labels(y_pred, "y_pred")
    if metric == "dp":
        return pred_labels, _codes_of(pred, pred_labels), np.zeros(len(pred), np.intp), None
    if y_true is None:
        raise ValueError(
            f"metric={metric!r} compares error rates and needs y_true= (the true labels); "
            "use metric='dp' without labels."
        )
    true, true_labels = encode_labels(y_true, "y_true")
    if len(true) != len(pred):
        raise ValueError(
            f"y_true has {len(true)} samples but y_pred has {len(pred)}; pass one true label per prediction."
        )
    classes = _sorted_union(np.concatenate([true_labels.astype(object), pred_labels.astype(object)]))
    pos = None
    if pos_label is not None:
        pos = next((i for i, c in enumerate(classes) if c == pos_label), None)
        if pos is None:
            raise ValueError(f"pos_label={pos_label!r} is not among the labels {classes.tolist()}; pass one of them.")
    elif set(classes.tolist()) <= {0, 1} or set(classes.tolist()) <= {-1, 1}:
        pos = len(classes) - 1
    elif metric == "eop":
        raise ValueError(
            f"the labels are {classes.tolist()}; pass pos_label= to say which one is the "
            f"positive class (e.g. pos_label={classes[-1]!r})."
        )
    return classes, _codes_of(pred, classes), _codes_of(true, classes), pos
