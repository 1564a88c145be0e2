"""HOC: the noise transition matrix of weak proxies from their agreement patterns.

Zhu, Yao, Sun, Li and Liu (2023, Appendix C.3, after Zhu, Song and Liu 2021)
estimate how proxy guesses ``A~`` of a sensitive attribute ``A`` relate to the
truth, without ever seeing ``A``. With three proxies whose guesses are independent
and identically distributed given ``A`` (Requirement 4.3), the joint frequencies
of their guesses are polynomials in the transition matrix
``T[a, a~] = P(A~ = a~ | A = a)`` and the prior ``p[a] = P(A = a)``:

* first order  ``P(A~1 = i)               = sum_a p[a] T[a, i]``
* second order ``P(A~1 = i, A~2 = j)       = sum_a p[a] T[a, i] T[a, j]``
* third order  ``P(A~1 = i, A~2 = j, A~3 = l) = sum_a p[a] T[a, i] T[a, j] T[a, l]``

HOC counts these *consensus patterns* and finds the ``T`` (rows softmax-
parametrised) and ``p`` (softmax) that reproduce them, by minimising the sum of
the Euclidean norms of the three residuals (the objective of the authors' code).
The counts are symmetrised over the order of the three proxies, since the model
is symmetric; with more than three proxies they are averaged over 3-subsets of
the columns. The authors ran Adam (learning rate 0.1, 1500 steps); here L-BFGS
with analytic gradients runs from a few starts, on the smooth squared residuals
first and then on the sum of norms. The latent classes are only identified up to
relabeling, which is fixed by matching each latent class to the guess it
produces most often.

With two groups the symmetrised statistics hold exactly three free numbers for
three unknowns (``T[0, 1]``, ``T[1, 0]``, ``p[0]``), so HOC is a method of moments
and the minimum is an exact fit; with more groups the system is over-determined.

When fewer than three proxies exist, Algorithm 2 of the paper builds more from the
*clusterability* assumption (a row and its two nearest neighbours in feature space
share the sensitive attribute): the proxies of the two neighbours become extra
columns (:func:`neighbour_proxies`).
"""

from __future__ import annotations

import itertools
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.utils.validation import check_random_state
from threadpoolctl import threadpool_limits

__all__ = [
    "HOCSolution",
    "ProxyCalibrationWarning",
    "ProxyReliabilityWarning",
    "check_informativeness",
    "choose_subsets",
    "consensus_statistics",
    "fit_transition",
    "moments",
    "neighbour_proxies",
]

# Smoothing of the residual norms: sqrt(|r|^2 + _SMOOTH) keeps the objective
# differentiable at an exact fit (two groups) without moving the minimum.
_SMOOTH = 1e-18
# A transition matrix whose 2-norm condition number exceeds this is singular.
SINGULAR_COND = 1e12

_FEW_PROXIES = (
    "{where} needs at least 3 proxy columns to estimate the transition matrix T "
    "(got {n}). Pass more proxies, or pass features= and knn_augment=True to add the "
    "proxies of each row's 2 nearest neighbours (Algorithm 2 of Zhu et al. 2023){extra}."
)


def single_thread_blas() -> Any:
    """Context that limits BLAS to one thread.

    The HOC problems are tiny (``K**2 + K`` parameters): BLAS threads only add
    contention, which made L-BFGS ten times slower on a busy two-core host.
    """
    return threadpool_limits(limits=1, user_api="blas")


class ProxyReliabilityWarning(UserWarning):
    """A proxy-based estimate failed a reliability check; the result's ``reasons`` say which.

    Examples
    --------
    >>> issubclass(ProxyReliabilityWarning, UserWarning)
    True
    """


#: The earlier name of :class:`ProxyReliabilityWarning` (the same class).
ProxyCalibrationWarning = ProxyReliabilityWarning


@dataclass
class HOCSolution:
    """Result of one HOC fit.

    Attributes
    ----------
    T : ndarray of shape (n_groups, n_groups)
        Transition matrix, ``T[a, a~] = P(A~ = a~ | A = a)``; rows sum to one.
    p : ndarray of shape (n_groups,)
        Prior of the true attribute.
    loss : float
        Final objective (sum of the residual norms of the three orders).
    n_iter : int
        L-BFGS iterations of the best start.
    converged : bool
        Whether the best start met the convergence criterion.
    message : str
        Solver message of the best start.
    n_init : int
        Number of starts.
    seconds : float
        Wall time of the fit.
    """

    T: np.ndarray
    p: np.ndarray
    loss: float
    n_iter: int
    converged: bool
    message: str
    n_init: int
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        """Solver information as plain Python types."""
        kinds = {"loss": float, "n_iter": int, "converged": bool, "message": str, "n_init": int, "seconds": float}
        return {name: kind(getattr(self, name)) for name, kind in kinds.items()}


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def moments(T: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First-, second- and third-order pattern probabilities implied by ``T``, ``p``."""
    k, pT = len(p), p[:, None] * T
    m1, m2 = pT.sum(axis=0), pT.T @ T
    tt = (T[:, :, None] * T[:, None, :]).reshape(k, k * k)
    m3 = (pT.T @ tt).reshape(k, k, k)
    return m1, m2, m3


def _objective(
    theta: np.ndarray, k: int, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray, squared: bool
) -> tuple[float, np.ndarray]:
    """Loss ``sum_j |m_j - c_j|`` (or ``sum_j |m_j - c_j|^2``) and its logit gradient."""
    T, p = _softmax(theta[: k * k].reshape(k, k), axis=1), _softmax(theta[k * k :])
    pT = p[:, None] * T
    tt = (T[:, :, None] * T[:, None, :]).reshape(k, k * k)  # tt[a, j*k + l] = T[a,j] T[a,l]
    r1 = pT.sum(axis=0) - c1
    r2 = (pT.T @ T - c2).ravel()
    r3 = (pT.T @ tt).ravel() - c3.ravel()
    if squared:
        loss = r1 @ r1 + r2 @ r2 + r3 @ r3
        g1, g2, g3 = 2.0 * r1, 2.0 * r2, 2.0 * r3
    else:
        n1, n2, n3 = np.sqrt(r1 @ r1 + _SMOOTH), np.sqrt(r2 @ r2 + _SMOOTH), np.sqrt(r3 @ r3 + _SMOOTH)
        loss = n1 + n2 + n3
        g1, g2, g3 = r1 / n1, r2 / n2, r3 / n3
    g2, g3 = g2.reshape(k, k), g3.reshape(k, k, k)
    # d loss / d T[a, b]: each of the three factors of a pattern in turn is T[a, b]
    s3 = (g3 + g3.transpose(1, 0, 2) + g3.transpose(2, 0, 1)).reshape(k, k * k)
    dT = p[:, None] * (g1 + T @ (g2 + g2.T).T + tt @ s3.T)
    # d loss / d p[a]
    w = T @ g2.T + tt @ g3.reshape(k, k * k).T  # sum_j g2[i,j] T[a,j] + sum_jl g3[i,j,l] ..
    dp = T @ g1 + (w * T).sum(axis=1)
    # chain rule through the softmaxes
    d_t = T * (dT - (dT * T).sum(axis=1, keepdims=True))
    d_p = p * (dp - dp @ p)
    return float(loss), np.concatenate([d_t.ravel(), d_p])


def _align(T: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relabel latent classes so that class ``a`` is the one guessed ``a`` most often."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(-T)
    order = rows[np.argsort(cols)]  # order[guess] = the latent class matched to it
    return T[order], p[order]


def _logits(T: np.ndarray, p: np.ndarray) -> np.ndarray:
    lt, lp = np.log(np.clip(T, 1e-9, None)), np.log(np.clip(p, 1e-9, None))
    return np.concatenate([(lt - lt.mean(axis=1, keepdims=True)).ravel(), lp - lp.mean()])


def fit_transition(
    c1: np.ndarray,
    c2: np.ndarray,
    c3: np.ndarray,
    *,
    init: tuple[np.ndarray, np.ndarray] | None = None,
    n_init: int = 4,
    max_iter: int = 1000,
    tol: float = 1e-12,
    random_state: Any = None,
) -> HOCSolution:
    """Fit ``T`` and ``p`` to first-, second- and third-order consensus frequencies.

    Parameters
    ----------
    c1, c2, c3 : ndarray of shape (K,), (K, K), (K, K, K)
        Observed pattern frequencies of three proxies (each sums to one).
    init : tuple of ndarray, optional
        Starting ``(T, p)``, e.g. a previous solution (warm start). By default the
        authors' start: logits 0 on the diagonal and -1 off it, a uniform prior.
    n_init : int, default=4
        Number of starts; starts after the first are random diagonally dominant
        perturbations. The lowest loss wins.
    max_iter : int, default=1000
        L-BFGS iterations per start.
    tol : float, default=1e-12
        Gradient tolerance (``gtol``) and relative loss tolerance of L-BFGS.
    random_state : int, RandomState instance or None
        Seed of the extra starts.

    Returns
    -------
    HOCSolution

    Examples
    --------
    >>> import numpy as np
    >>> T = np.array([[0.8, 0.2], [0.3, 0.7]]); p = np.array([0.4, 0.6])
    >>> c = moments(T, p)
    >>> sol = fit_transition(*c)
    >>> np.round(sol.T, 4).tolist(), np.round(sol.p, 4).tolist()
    ([[0.8, 0.2], [0.3, 0.7]], [0.4, 0.6])
    """
    from scipy.optimize import minimize

    start, k, rng = time.perf_counter(), len(c1), check_random_state(random_state)
    starts = [np.concatenate([(np.eye(k) - 1.0).ravel(), np.zeros(k)]) if init is None else _logits(*init)]
    for _ in range(max(n_init, 1) - 1):
        t = rng.uniform(0.5, 2.5) * np.eye(k) + rng.normal(0.0, 0.5, (k, k))
        starts.append(np.concatenate([t.ravel(), rng.normal(0.0, 0.5, k)]))
    # Each start first minimises the smooth squared residuals, then (more than two
    # groups) polishes the authors' sum of residual norms from there: the norms are
    # sharply curved near a small residual and L-BFGS crawls on them from afar. With
    # two groups the symmetrised moments give three equations in three unknowns, an
    # exact fit that both losses share, so the polish is skipped.
    options, runs = {"maxiter": max_iter, "gtol": tol, "ftol": tol}, []
    for theta in starts:
        res = minimize(_objective, theta, args=(k, c1, c2, c3, True), jac=True, method="L-BFGS-B", options=options)
        n_iter = res.nit
        if k > 2:
            res = minimize(_objective, res.x, args=(k, c1, c2, c3, False), jac=True, method="L-BFGS-B", options=options)
            n_iter += res.nit
        runs.append((_objective(res.x, k, c1, c2, c3, False)[0], n_iter, res))
    loss, n_iter, best = min(runs, key=lambda run: run[0])  # the first start of the lowest loss
    T, p = _align(_softmax(best.x[: k * k].reshape(k, k), axis=1), _softmax(best.x[k * k :]))
    message = best.message if isinstance(best.message, str) else best.message.decode()
    # an exact fit stops on a flat line search: that is convergence too
    converged = bool(best.success) or best.fun < 1e-14
    return HOCSolution(T, p, float(loss), int(n_iter), converged, message, len(starts), time.perf_counter() - start)


def choose_subsets(n_columns: int, max_subsets: int, random_state: Any = None) -> np.ndarray:
    """Column triples whose consensus counts are averaged.

    All ``C choose 3`` triples when there are at most ``max_subsets`` of them,
    otherwise ``max_subsets`` distinct triples drawn at random.

    Parameters
    ----------
    n_columns : int
        Number of proxy columns (at least 3).
    max_subsets : int
        Largest number of triples.
    random_state : int, RandomState instance or None
        Seed of the draw.

    Returns
    -------
    ndarray of shape (n_subsets, 3)

    Examples
    --------
    >>> choose_subsets(4, 10).tolist()
    [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]
    """
    triples = np.array(list(itertools.combinations(range(n_columns), 3)), dtype=np.intp)
    if len(triples) <= max_subsets:
        return triples
    pick = check_random_state(random_state).choice(len(triples), size=max_subsets, replace=False)
    return triples[np.sort(pick)]


_PERMS = list(itertools.permutations(range(3)))


def consensus_statistics(
    codes: np.ndarray, weights: np.ndarray, n_groups: int, subsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First-, second- and third-order consensus frequencies of proxy guesses.

    Parameters
    ----------
    codes : ndarray of shape (n_cells, n_proxies)
        Group codes of the guesses (one row per distinct row of the data).
    weights : ndarray of shape (..., n_cells)
        Number of rows in each cell; leading axes (e.g. bootstrap replicates) are
        kept.
    n_groups : int
        Number of groups ``K``.
    subsets : ndarray of shape (n_subsets, 3)
        Column triples, see :func:`choose_subsets`.

    Returns
    -------
    c1, c2, c3 : ndarray of shape (..., K), (..., K, K), (..., K, K, K)
        Frequencies, symmetrised over the order of the proxies and averaged over
        the triples; NaN where the weights sum to zero.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0, 0, 0], [1, 1, 0]])
    >>> c1, c2, c3 = consensus_statistics(codes, np.array([3.0, 1.0]), 2, np.array([[0, 1, 2]]))
    >>> np.round(c1, 4).tolist()
    [0.8333, 0.1667]
    """
    w = np.asarray(weights, dtype=float)
    w2 = w.reshape(-1, w.shape[-1])
    n_rep, k3 = w2.shape[0], n_groups**3
    offsets, c3 = (np.arange(n_rep) * k3)[:, None], np.zeros((n_rep, n_groups, n_groups, n_groups))
    for i, j, m in subsets:
        cell = (codes[:, i] * n_groups + codes[:, j]) * n_groups + codes[:, m]
        flat = np.bincount((offsets + cell[None, :]).ravel(), weights=w2.ravel(), minlength=n_rep * k3)
        c3 += flat.reshape(n_rep, n_groups, n_groups, n_groups)
    c3 = sum(c3.transpose((0, *(1 + np.array(perm)))) for perm in _PERMS) / (6.0 * len(subsets))
    total = w2.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        c3 = c3 / total[:, None, None, None]
    c2 = c3.sum(axis=-1)
    c1, shape = c2.sum(axis=-1), (*w.shape[:-1], n_groups)
    return c1.reshape(shape), c2.reshape(*shape, n_groups), c3.reshape(*shape, n_groups, n_groups)


def neighbour_proxies(
    codes: np.ndarray, features: Any, *, n_neighbors: int = 2, metric: str = "euclidean"
) -> np.ndarray:
    """Add the proxy guesses of each row's nearest neighbours as extra columns.

    Algorithm 2 (lines 3-5) of Zhu et al. (2023): under clusterability a row and its
    ``n_neighbors`` nearest neighbours in feature space share the sensitive
    attribute, so the neighbours' guesses act as further proxies of the row.

    Parameters
    ----------
    codes : ndarray of shape (n_samples, n_proxies)
        Group codes of the guesses.
    features : array-like of shape (n_samples, n_features)
        Numeric features that define the neighbours.
    n_neighbors : int, default=2
        Neighbours per row (the paper uses 2).
    metric : str, default="euclidean"
        Any metric of :class:`sklearn.neighbors.NearestNeighbors` (the authors'
        code uses ``"cosine"`` on image embeddings).

    Returns
    -------
    ndarray of shape (n_samples, n_proxies * (n_neighbors + 1))
        The original columns, then the columns of the first neighbour, and so on.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0], [0], [1], [1]])
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> neighbour_proxies(codes, X, n_neighbors=1).tolist()
    [[0, 0], [0, 0], [1, 1], [1, 1]]
    """
    from sklearn.neighbors import NearestNeighbors

    X = np.asarray(features, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    if X.ndim != 2 or X.shape[0] != codes.shape[0]:
        raise ValueError(f"features must be 2-D with one row per sample ({codes.shape[0]} rows); got shape {X.shape}.")
    if not np.isfinite(X).all():
        raise ValueError("features holds NaN or infinite values; impute them first.")
    if X.shape[0] <= n_neighbors:
        raise ValueError(f"features has {X.shape[0]} rows; {n_neighbors} neighbours per row need more.")
    nn = NearestNeighbors(n_neighbors=n_neighbors + 1, metric=metric).fit(X)
    _, idx = nn.kneighbors(X)
    # drop the row itself (usually first; with duplicates it may sit anywhere, or not among the neighbours: the last)
    is_self = idx == np.arange(X.shape[0])[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    neighbours = idx[~is_self].reshape(X.shape[0], n_neighbors)
    return np.concatenate([codes] + [codes[neighbours[:, j]] for j in range(n_neighbors)], axis=1)


def check_informativeness(T: np.ndarray, noisy_prior: np.ndarray) -> dict[str, Any]:
    """Requirement 4.2 of Zhu et al. (2023) for one transition matrix.

    ``T`` must be non-singular, and every row ``a`` must satisfy either
    ``T[a, a] > P(A~ = a)`` (the proxy says ``a`` more often for members of ``a``
    than overall) or ``T[a, a] > T[a, a']`` for all ``a' != a``. With two groups this
    reduces to ``T[0, 1] + T[1, 0] < 1``: better than a random guess.

    Parameters
    ----------
    T : ndarray of shape (K, K)
        Transition matrix.
    noisy_prior : ndarray of shape (K,)
        ``P(A~ = a)`` on the rows the matrix describes.

    Returns
    -------
    dict
        ``passed``, ``nonsingular``, ``condition_number``, and per row
        ``above_noisy_prior`` and ``diagonal_dominant``.

    Examples
    --------
    >>> import numpy as np
    >>> check_informativeness(np.array([[0.6, 0.4], [0.3, 0.7]]), np.array([0.45, 0.55]))["passed"]
    True
    >>> check_informativeness(np.array([[0.4, 0.6], [0.7, 0.3]]), np.array([0.55, 0.45]))["passed"]
    False
    """
    T = np.asarray(T, dtype=float)
    cond = float(np.linalg.cond(T))
    nonsingular, diag = bool(np.isfinite(cond) and cond < SINGULAR_COND), np.diag(T)
    above = diag > np.asarray(noisy_prior, dtype=float)
    dominant = diag > np.where(np.eye(T.shape[0], dtype=bool), -np.inf, T).max(axis=1)
    out = {"passed": bool(nonsingular and np.all(above | dominant)), "nonsingular": nonsingular}
    return out | {"condition_number": cond, "above_noisy_prior": above.tolist(), "diagonal_dominant": dominant.tolist()}


def compress_rows(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an integer matrix and how often each occurs.

    Every statistic used here is a function of these counts, so a bootstrap can
    resample the counts (multinomially) instead of the rows.

    Parameters
    ----------
    columns : ndarray of shape (n_samples, n_columns)
        Integer codes.

    Returns
    -------
    cells : ndarray of shape (n_cells, n_columns)
    counts : ndarray of shape (n_cells,)

    Examples
    --------
    >>> import numpy as np
    >>> cells, counts = compress_rows(np.array([[0, 1], [0, 1], [1, 0]]))
    >>> cells.tolist(), counts.tolist()
    ([[0, 1], [1, 0]], [2.0, 1.0])
    """
    columns = np.asarray(columns, dtype=np.int64)
    radix = columns.max(axis=0) + 1 if columns.size else np.ones(columns.shape[1], np.int64)
    if np.sum(np.log2(radix.astype(float))) < 62:  # one mixed-radix code per row: fast
        weights = np.cumprod(np.concatenate([[1], radix[::-1][:-1]]))[::-1]
        codes, first, counts = np.unique(columns @ weights, return_index=True, return_counts=True)
        cells = columns[first]
    else:
        cells, counts = np.unique(columns, axis=0, return_counts=True)
    return cells.astype(np.intp), counts.astype(float)


def augment_if_needed(codes: np.ndarray, features: Any, knn_augment: bool, metric: str, *, where: str) -> np.ndarray:
    """Apply Algorithm 2's neighbour augmentation when fewer than 3 proxies exist."""
    n = codes.shape[1]
    if n >= 3:
        if knn_augment:
            msg = f"{where}: knn_augment=True is ignored with {n} proxies; Algorithm 2 adds neighbours only when "
            warnings.warn(msg + "fewer than 3 proxies exist.", UserWarning, stacklevel=3)
        return codes
    if not knn_augment:
        extra = ", or use mode='base' (the first proxy as if it were the attribute)" if "mode=" in where else ""
        raise ValueError(_FEW_PROXIES.format(where=where, n=n, extra=extra))
    if features is None:
        raise ValueError(
            f"{where}: knn_augment=True needs features= (the features that define each row's nearest neighbours)."
        )
    return neighbour_proxies(codes, features, n_neighbors=2, metric=metric)


def singular_error(what: str, cond: float, hint: str = "") -> ValueError:
    """The error for a singular estimated transition matrix ``what`` (condition number ``cond``)."""
    return ValueError(
        f"the estimated transition matrix {what} is singular (condition number {cond:.3g}): the proxies carry no "
        f"usable information about the groups here. Use stronger or more varied proxies{hint}."
    )


def warn_if_unreliable(info: dict[str, Any], what: str) -> None:
    """Raise for a singular transition matrix ``what``, warn when it fails Requirement 4.2 (``info``: its check)."""
    if not info["nonsingular"]:
        raise singular_error(what, info["condition_number"])
    if not info["passed"]:
        msg = (
            f"the estimated transition matrix {what} fails the informativeness requirement (Requirement 4.2 of Zhu "
            "et al. 2023: each group's proxies must beat a random guess); the calibration is unreliable. Check the "
            "proxies."
        )
        warnings.warn(msg, ProxyCalibrationWarning, stacklevel=3)
