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

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_random_state

from ..measures import UndefinedGroupWarning
from ._hoc import (
    HOCEstimator,
    HOCSolution,
    ProxyCalibrationWarning,
    augment_if_needed,
    check_informativeness,
    choose_subsets,
    compress_rows,
    consensus_statistics,
    fit_transition,
    single_thread_blas,
    warn_if_unreliable,
)
from ._plain import _label, plain
from ._proxy_codes import encode_labels, encode_proxies

__all__ = ["ProxyDisparityResult", "proxy_disparity"]

_METRICS = ("dp", "eod", "eop")
_MODES = ("base", "global", "local")
# Local cells with fewer rows than this give an unstable T_k; the user is warned.
_MIN_LOCAL_ROWS = 100


@dataclass
class ProxyDisparityResult:
    """A disparity measured through proxies of the sensitive attribute.

    Attributes
    ----------
    value : float
        The calibrated (``mode="global"``/``"local"``) or direct (``"base"``)
        disparity.
    by_group : pandas.DataFrame
        Estimated rate per group (rows): ``P(y_pred = k | A = a)`` for DP with one
        column per predicted class; ``P(y_pred = k | y_true = y, A = a)`` for EOd
        with (``y_true``, ``y_pred``) MultiIndex columns; for EOp the single column
        (pos, pos), the true positive rate.
    diagnostics : dict
        ``T`` and ``p`` (calibrated modes), condition numbers, the informativeness
        check (Requirement 4.2), solver information, the uncalibrated rates and, with a
        bootstrap, its replicates. See :func:`proxy_disparity`.
    interval : tuple of float or None
        Percentile bootstrap interval of ``value``; ``None`` without bootstrap.
    metric : str
        ``"dp"``, ``"eod"`` or ``"eop"``.
    mode : str
        ``"base"``, ``"global"`` or ``"local"``.
    """

    value: float
    by_group: pd.DataFrame
    diagnostics: dict[str, Any] = field(default_factory=dict)
    interval: tuple[float, float] | None = None
    metric: str = "dp"
    mode: str = "global"

    def to_dict(self) -> dict[str, Any]:
        """Return the result as plain Python types (JSON-serialisable).

        Returns
        -------
        dict
            Keys ``value``, ``metric``, ``mode``, ``by_group`` (group label as
            ``str`` -> {column label as ``str`` -> rate}), ``interval`` (list or
            ``None``) and ``diagnostics``.
        """
        by_group = {str(g): {_label(c): plain(v) for c, v in row.items()} for g, row in self.by_group.iterrows()}
        return {
            "value": plain(self.value),
            "metric": self.metric,
            "mode": self.mode,
            "by_group": by_group,
            "interval": None if self.interval is None else [plain(v) for v in self.interval],
            "diagnostics": plain(self.diagnostics),
        }

    def __repr__(self) -> str:
        ci = "" if self.interval is None else f", interval=({self.interval[0]:.4f}, {self.interval[1]:.4f})"
        return f"ProxyDisparityResult(metric={self.metric!r}, mode={self.mode!r}, value={self.value:.4f}{ci})"


@dataclass
class _Problem:
    """Everything about one calibration that stays fixed across bootstrap replicates."""

    cells: np.ndarray  # (n_cells, 2 + n_columns): prediction, label, proxy codes
    n_groups: int
    n_pred: int
    n_label: int
    metric: str
    mode: str
    pooled: np.ndarray  # columns (of cells) of the user's proxies
    hoc_cols: np.ndarray  # columns (of cells) fed to HOC
    subsets: np.ndarray  # triples, relative to hoc_cols
    pos: int | None
    clip: bool
    solver: dict[str, Any]
    classes: np.ndarray  # labels of the prediction / label codes
    prior: str = "hoc"

    @property
    def pred(self) -> np.ndarray:
        return self.cells[:, 0]

    @property
    def label(self) -> np.ndarray:
        return self.cells[:, 1]


def _noisy_counts(prob: _Problem, w: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Counts ``n[..., y, k, a~]`` averaged over the given proxy columns."""
    k, kp, ky = prob.n_groups, prob.n_pred, prob.n_label
    w2 = w.reshape(-1, w.shape[-1])
    n_rep = w2.shape[0]
    size = ky * kp * k
    offsets = (np.arange(n_rep) * size)[:, None]
    out = np.zeros(n_rep * size)
    for c in columns:
        cell = (prob.label * kp + prob.pred) * k + prob.cells[:, c]
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
        self.name = name
        self.missing = missing


def _fit(
    prob: _Problem,
    w: np.ndarray,
    init: tuple[np.ndarray, np.ndarray] | None,
    rng: Any,
    n_init: int,
    name: str,
) -> tuple[HOCSolution, np.ndarray]:
    """HOC on the rows weighted by ``w``; returns the solution and P(A~) there."""
    c1, c2, c3 = consensus_statistics(prob.cells[:, prob.hoc_cols], w, prob.n_groups, prob.subsets)
    missing = np.flatnonzero(~(c1 > 0))
    if missing.size:
        raise _NeverGuessed(name, missing)
    sol = fit_transition(
        c1,
        c2,
        c3,
        init=init,
        n_init=n_init,
        max_iter=prob.solver["max_iter"],
        tol=prob.solver["tol"],
        random_state=rng,
    )
    return sol, c1


def _calibrate(
    prob: _Problem,
    w: np.ndarray,
    n_pooled: np.ndarray,
    *,
    rng: Any,
    warm: dict[str, HOCSolution] | None,
    strict: bool,
    cond_warn: float,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Calibrated rates ``H[a, y, k]`` for one table of counts (Theorem 4.1)."""
    k, kp, ky = prob.n_groups, prob.n_pred, prob.n_label
    fits: dict[str, HOCSolution] = {}
    checks: dict[str, dict[str, Any]] = {}
    n_init = prob.solver["n_init"] if warm is None else 1

    def fit(name: str, mask: np.ndarray | None, init: Any) -> HOCSolution | None:
        wm = w if mask is None else w * mask
        if wm.sum() <= 0:
            return None
        start = warm[name] if warm is not None and name in warm else init
        start = None if start is None else (start.T, start.p)
        sol, noisy_prior = _fit(prob, wm, start, rng, n_init, name)
        fits[name] = sol
        sol.extra["n_rows"] = float(wm.sum())
        checks[name] = check_informativeness(sol.T, noisy_prior)
        return sol

    glob = fit("global", None, None)
    # prior p (DP) or p_y = P(A | Y = y) (EOd, EOp), never per prediction cell
    if prob.metric == "dp" or prob.prior == "implied":
        priors = np.repeat(glob.p[None, :], ky, axis=0)  # "implied": replaced below
    else:
        priors = np.full((ky, k), np.nan)
        for y in range(ky):
            sol = fit(f"label={y}", prob.label == y, glob)
            if sol is not None:
                priors[y] = sol.p
    # joint P(f = k, A~ = a~ | Y = y)
    with np.errstate(invalid="ignore", divide="ignore"):
        joint = n_pooled / n_pooled.sum(axis=(-2, -1), keepdims=True)
    used = {"global": glob} if prob.mode == "global" else {}
    transitions = np.full((ky, kp, k, k), np.nan)
    for y in range(ky):
        for j in range(kp):
            if prob.mode == "global":
                T = glob.T
            else:
                name = f"pred={j}" if prob.metric == "dp" else f"label={y},pred={j}"
                mask = prob.pred == j if prob.metric == "dp" else (prob.pred == j) & (prob.label == y)
                sol = fit(name, mask, glob)
                if sol is None:  # no rows: the joint column is zero whatever T is
                    T = glob.T
                else:
                    T = sol.T
                    used[name] = sol
            transitions[y, j] = T
    for name in used:
        info = checks[name]
        if not info["nonsingular"]:
            if strict:
                warn_if_unreliable(info, _pretty(name, prob.classes), cond_warn=cond_warn, stacklevel=4)
            nan = np.full((k, ky, kp), np.nan)
            return nan, {"fits": fits, "checks": checks, "priors": priors, "T": transitions}
    q = np.linalg.solve(np.swapaxes(transitions, -1, -2), joint[..., None])[..., 0]  # (y, k, a)
    if prob.prior == "implied":  # the prior the global T implies: (T^T)^-1 P(A~ | Y = y)
        priors = np.linalg.solve(glob.T.T[None], joint.sum(axis=1)[..., None])[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        h = q / priors[:, None, :]
    h = np.moveaxis(h, -1, 0)  # (a, y, k)
    if prob.clip:
        h = np.clip(h, 0.0, 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            h = h / h.sum(axis=-1, keepdims=True)
    if strict:
        for name in used:
            warn_if_unreliable(checks[name], _pretty(name, prob.classes), cond_warn=cond_warn, stacklevel=4)
            n_rows = fits[name].extra["n_rows"]
            if name != "global" and n_rows < _MIN_LOCAL_ROWS:
                warnings.warn(
                    f"the local cell {_named(name, prob.classes)} has only {n_rows:.0f} rows; its "
                    "transition matrix is poorly determined. Use mode='global'.",
                    ProxyCalibrationWarning,
                    stacklevel=3,
                )
    return h, {"fits": fits, "checks": checks, "priors": priors, "T": transitions, "used": used}


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
        classes = pred_labels
        return classes, _codes_of(pred, classes), np.zeros(len(pred), np.intp), None
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
    classes = pd.unique(np.concatenate([true_labels.astype(object), pred_labels.astype(object)]))
    try:
        classes = np.asarray(sorted(classes), dtype=object)
    except TypeError:
        classes = np.asarray(classes, dtype=object)
    pos = None
    if pos_label is not None:
        hits = [i for i, c in enumerate(classes) if c == pos_label]
        if not hits:
            raise ValueError(f"pos_label={pos_label!r} is not among the labels {classes.tolist()}; pass one of them.")
        pos = hits[0]
    elif set(classes.tolist()) <= {0, 1} or set(classes.tolist()) <= {-1, 1}:
        pos = len(classes) - 1
    elif metric == "eop":
        raise ValueError(
            f"the labels are {classes.tolist()}; pass pos_label= to say which one is the "
            f"positive class (e.g. pos_label={classes[-1]!r})."
        )
    return classes, _codes_of(pred, classes), _codes_of(true, classes), pos


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
    confidence_level: float = 0.95,
    cond_warn: float = 25.0,
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
        resampled multinomially and ``interval`` is set.
    confidence_level : float, default=0.95
        Coverage of the percentile interval.
    cond_warn : float, default=25.0
        Warn when a transition matrix used for calibration has a larger condition
        number: its inverse amplifies estimation errors that much.
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
        ``value``, ``by_group``, ``diagnostics`` and ``interval``. The diagnostics
        hold ``T`` (global transition matrix, rows = true group, columns = guess),
        ``p`` (prior of the true attribute), ``p_given_y`` (EOd/EOp), ``T_local``
        (local mode, shape (n_label, n_pred, K, K); ``n_label = 1`` for DP),
        ``condition_number`` (largest among the matrices used) and
        ``condition_numbers``, ``informativeness`` (Requirement 4.2 per fitted
        matrix) and ``informative``, ``solver`` (per fit: loss, iterations,
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
    >>> round(true, 2), round(base.value, 2), round(res.value, 2)
    (0.3, 0.16, 0.3)
    >>> np.round(res.diagnostics["T"], 2).tolist()
    [[0.8, 0.2], [0.25, 0.75]]
    """
    start = time.perf_counter()
    metric = str(metric).lower()
    mode = str(mode).lower()
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {list(_METRICS)}; got {metric!r}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}; got {mode!r}.")
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ValueError(f"n_boot must be an integer >= 0; got {n_boot!r}.")
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"confidence_level must lie in (0, 1); got {confidence_level!r}.")
    if prior not in ("hoc", "implied"):
        raise ValueError(f"prior must be 'hoc' or 'implied'; got {prior!r}.")
    if not cond_warn > 1.0:
        raise ValueError(f"cond_warn must be > 1 (a condition number); got {cond_warn!r}.")
    if estimator is None:
        estimator = HOCEstimator()
    elif not isinstance(estimator, HOCEstimator):
        raise TypeError(f"estimator must be an HOCEstimator (solver settings); got {type(estimator).__name__}.")
    estimator._check_params()

    classes, pred, label, pos = _resolve_classes(y_pred, y_true, metric, pos_label)
    codes, group_index, columns = encode_proxies(proxies, groups=groups, n_samples=len(pred))
    n_samples, n_proxies = codes.shape
    rng = check_random_state(random_state)

    augmented = False
    if mode != "base":
        hoc_codes = augment_if_needed(codes, features, knn_augment, estimator.knn_metric, where=f"mode={mode!r}")
        augmented = hoc_codes.shape[1] > n_proxies
    else:
        hoc_codes = codes
    table = np.column_stack([pred, label, hoc_codes])
    cells, counts = compress_rows(table)
    k = len(group_index)
    n_label = 1 if metric == "dp" else len(classes)
    prob = _Problem(
        cells=cells,
        n_groups=k,
        n_pred=len(classes),
        n_label=n_label,
        metric=metric,
        mode=mode,
        pooled=np.arange(2, 2 + n_proxies),
        hoc_cols=np.arange(2, 2 + hoc_codes.shape[1]),
        subsets=(
            choose_subsets(hoc_codes.shape[1], estimator.max_subsets, rng)
            if mode != "base"
            else np.zeros((0, 3), np.intp)
        ),
        pos=pos,
        clip=clip,
        prior=prior,
        classes=classes,
        solver={"n_init": estimator.n_init, "max_iter": estimator.max_iter, "tol": estimator.tol},
    )

    n_base = _noisy_counts(prob, counts, prob.pooled[:1])
    n_pooled = _noisy_counts(prob, counts, prob.pooled)
    h_noisy = _noisy_rates(n_pooled if mode != "base" else n_base)
    diagnostics: dict[str, Any] = {
        "groups": group_index.tolist(),
        "classes": classes.tolist(),
        "proxy_columns": columns,
        "n_samples": int(n_samples),
        "n_proxies": int(n_proxies),
        "knn_augmented": augmented,
    }
    if mode == "base":
        h = _noisy_rates(n_base)
        diagnostics["p_noisy"] = n_base.sum(axis=(0, 1)) / n_base.sum()
        fitted: dict[str, Any] = {}
    else:
        try:
            with single_thread_blas():
                h, fitted = _calibrate(prob, counts, n_pooled, rng=rng, warm=None, strict=True, cond_warn=cond_warn)
        except _NeverGuessed as err:
            where = "" if err.name == "global" else f" on the rows {_named(err.name, classes)}"
            raise ValueError(
                f"no proxy ever guesses the group(s) {group_index[err.missing].tolist()}"
                f"{where}, so the transition matrix T is singular there and cannot be "
                "inverted. Drop those groups from groups=, merge them, or use mode='global' "
                "when only a local cell lacks them."
            ) from None
        diagnostics.update(_fit_diagnostics(prob, fitted, n_pooled, h_noisy, group_index, classes))
    value = float(disparity_from_rates(h, metric, pos))
    by_group = _frame(h, metric, pos, group_index, classes)
    if np.isnan(value):
        bad = by_group.index[by_group.isna().any(axis=1)].tolist()
        warnings.warn(
            f"the {metric} disparity is undefined: the rate of group(s) {bad} has no "
            "rows to estimate it from (e.g. the first proxy never guesses that group, or a "
            "label is absent); the value is NaN. Merge groups or use more data.",
            UndefinedGroupWarning,
            stacklevel=2,
        )

    interval = None
    if n_boot > 0:
        with single_thread_blas():
            values = _bootstrap(prob, counts, n_boot, fitted, rng, cond_warn)
        alpha = 1.0 - confidence_level
        if np.isfinite(values).any():
            lo, hi = np.nanpercentile(values, [50 * alpha, 100 - 50 * alpha])
            interval = (float(lo), float(hi))
        else:
            interval = (float("nan"), float("nan"))
        diagnostics["bootstrap"] = {
            "n_boot": int(n_boot),
            "n_failed": int(np.isnan(values).sum()),
            "confidence_level": float(confidence_level),
            "std": float(np.nanstd(values)) if np.isfinite(values).any() else float("nan"),
            "values": values,
        }
    diagnostics["seconds"] = time.perf_counter() - start
    return ProxyDisparityResult(
        value=value,
        by_group=by_group,
        diagnostics=diagnostics,
        interval=interval,
        metric=metric,
        mode=mode,
    )


def _frame(h: np.ndarray, metric: str, pos: int | None, groups: pd.Index, classes: np.ndarray) -> pd.DataFrame:
    index = pd.Index(groups, name="group")
    if metric == "dp":
        return pd.DataFrame(h[:, 0, :], index=index, columns=pd.Index(classes, name="y_pred"))
    if metric == "eop":
        cols = pd.MultiIndex.from_tuples([(classes[pos], classes[pos])], names=["y_true", "y_pred"])
        return pd.DataFrame(h[:, pos, pos][:, None], index=index, columns=cols)
    cols = pd.MultiIndex.from_product([classes, classes], names=["y_true", "y_pred"])
    return pd.DataFrame(h.reshape(h.shape[0], -1), index=index, columns=cols)


def _fit_diagnostics(
    prob: _Problem,
    fitted: dict[str, Any],
    n_pooled: np.ndarray,
    h_noisy: np.ndarray,
    groups: pd.Index,
    classes: np.ndarray,
) -> dict[str, Any]:
    """Diagnostics of the point estimate (names of fits use class codes)."""
    fits: dict[str, HOCSolution] = fitted["fits"]
    checks = fitted["checks"]
    used = fitted.get("used", {})
    glob = fits["global"]
    out: dict[str, Any] = {
        "T": glob.T,
        "p": glob.p,
        "p_noisy": n_pooled.sum(axis=(0, 1)) / n_pooled.sum(),
        "by_group_noisy": _frame(h_noisy, prob.metric, prob.pos, groups, classes),
        "value_noisy": float(disparity_from_rates(h_noisy, prob.metric, prob.pos)),
        "condition_number": max(checks[name]["condition_number"] for name in used),
        "condition_numbers": {_named(n, classes): checks[n]["condition_number"] for n in used},
        "informativeness": {_named(n, classes): checks[n] for n in checks},
        "informative": all(checks[n]["passed"] for n in used),
        "solver": {_named(n, classes): {**fits[n].info(), "n_rows": fits[n].extra["n_rows"]} for n in fits},
        "n_subsets": int(len(prob.subsets)),
        "clipped": bool(prob.clip),
    }
    if prob.metric != "dp":
        out["p_given_y"] = fitted["priors"]
    if prob.mode == "local":
        out["T_local"] = fitted["T"]
    return out


def _named(name: str, classes: np.ndarray) -> str:
    """Replace class codes by labels in a fit name (``label=1,pred=0``)."""
    if name == "global":
        return name
    parts = []
    for part in name.split(","):
        key, code = part.split("=")
        parts.append(f"{'y_true' if key == 'label' else 'y_pred'}={classes[int(code)]}")
    return ",".join(parts)


def _bootstrap(
    prob: _Problem,
    counts: np.ndarray,
    n_boot: int,
    fitted: dict[str, Any],
    rng: Any,
    cond_warn: float,
) -> np.ndarray:
    """Disparity on ``n_boot`` multinomial resamples of the cell counts."""
    total = int(round(counts.sum()))
    weights = rng.multinomial(total, counts / counts.sum(), size=n_boot).astype(float)
    if prob.mode == "base":
        n_base = _noisy_counts(prob, weights, prob.pooled[:1])
        return disparity_from_rates(_noisy_rates(n_base), prob.metric, prob.pos)
    n_pooled = _noisy_counts(prob, weights, prob.pooled)
    values = np.full(n_boot, np.nan)
    warm = fitted["fits"]
    for b in range(n_boot):
        try:
            h, _ = _calibrate(
                prob,
                weights[b],
                n_pooled[b],
                rng=rng,
                warm=warm,
                strict=False,
                cond_warn=cond_warn,
            )
        except _NeverGuessed:
            continue
        values[b] = disparity_from_rates(h, prob.metric, prob.pos)
    return values
