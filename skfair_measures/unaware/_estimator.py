"""The HOC estimator: the transition matrix and prior of proxy guesses, fitted and checked.

It sits above the solver (:mod:`._hoc`) and the checks of a fitted solution
(:mod:`._reliability`), which builds on the solver.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, check_random_state

from ._hoc import (
    ProxyReliabilityWarning,
    augment_if_needed,
    check_informativeness,
    choose_subsets,
    compress_rows,
    consensus_statistics,
    fit_transition,
    moments,
    single_thread_blas,
    warn_if_unreliable,
)
from ._proxy_codes import encode_proxies
from ._reliability import assess_fit

__all__ = ["HOCEstimator"]


class HOCEstimator(BaseEstimator):
    """Estimate the noise transition matrix and prior of proxy guesses by HOC.

    Fits ``T[a, a~] = P(A~ = a~ | A = a)`` and ``p[a] = P(A = a)`` from the
    first-, second- and third-order agreement frequencies of three or more proxies
    of a sensitive attribute (Zhu et al. 2023, Appendix C; Zhu, Song and Liu 2021),
    assuming the proxies' guesses are independent and identically distributed given
    the true attribute. No true attribute is needed.

    Parameters
    ----------
    groups : array-like, optional
        The sensitive values. By default, the sorted union of the proxies' values.
    n_init : int, default=4
        Solver starts (the first is the authors' start; the lowest loss wins).
    max_subsets : int, default=20
        With more than three proxies, the consensus counts are averaged over all
        column triples, or over this many random ones when there are more.
    max_iter : int, default=1000
        L-BFGS iterations per start.
    tol : float, default=1e-12
        L-BFGS tolerance.
    knn_augment : bool, default=False
        With fewer than three proxies, add the proxies of each row's two nearest
        neighbours in ``features`` (Algorithm 2 of the paper, clusterability).
    knn_metric : str, default="euclidean"
        Distance for the neighbours.
    n_check : int, default=100
        Tables simulated for the moment test of ``reliability_`` (``0`` skips it).
    random_state : int, RandomState instance or None, default=None
        Seed of the extra starts and of the random triples.

    Attributes
    ----------
    T_ : ndarray of shape (n_groups, n_groups)
        Estimated transition matrix (rows sum to one).
    p_ : ndarray of shape (n_groups,)
        Estimated prior of the true attribute.
    groups_ : pandas.Index
        Group labels, in the order of the rows and columns of ``T_``.
    noisy_prior_ : ndarray of shape (n_groups,)
        Frequency of each guess, ``P(A~ = a)``, over the columns used.
    consensus_ : tuple of ndarray
        The first-, second- and third-order frequencies that were matched.
    subsets_ : ndarray of shape (n_subsets, 3)
        Column triples averaged.
    condition_number_ : float
        2-norm condition number of ``T_``.
    informativeness_ : dict
        Requirement 4.2 check, see :func:`check_informativeness`.
    loss_, n_iter_, converged_ : float, int, bool
        Solver outcome.
    reliability_ : dict
        The reliability checks of the fit (moment test, diagonal dominance, prior
        against the guess shares, Requirement 4.2) with ``reasons`` and ``passed``;
        a failure warns with :class:`ProxyReliabilityWarning`.
    n_features_in_ : int
        Number of proxy columns passed to ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 20_000)                       # hidden attribute
    >>> T = np.array([[0.8, 0.2], [0.3, 0.7]])
    >>> proxies = np.stack([(rng.random(a.size) < T[a, 1]).astype(int) for _ in range(3)], axis=1)
    >>> hoc = HOCEstimator(random_state=0).fit(proxies)
    >>> np.round(hoc.T_, 1).tolist()
    [[0.8, 0.2], [0.3, 0.7]]
    """

    def __init__(
        self,
        *,
        groups: Any = None,
        n_init: int = 4,
        max_subsets: int = 20,
        max_iter: int = 1000,
        tol: float = 1e-12,
        knn_augment: bool = False,
        knn_metric: str = "euclidean",
        n_check: int = 100,
        random_state: Any = None,
    ) -> None:
        self.groups, self.n_init, self.max_subsets, self.max_iter, self.tol = groups, n_init, max_subsets, max_iter, tol
        self.knn_augment, self.knn_metric, self.n_check = knn_augment, knn_metric, n_check
        self.random_state = random_state

    def _check_params(self) -> None:
        for name in ("n_init", "max_subsets", "max_iter", "n_check"):
            value, low = getattr(self, name), int(name != "n_check")  # n_check=0 skips the moment test
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"The {name!r} parameter of HOCEstimator must be an integer >= {low}; got {value!r}.")
        if not (isinstance(self.tol, (float, int)) and self.tol > 0):
            raise ValueError(f"The 'tol' parameter of HOCEstimator must be > 0; got {self.tol!r}.")

    def fit(self, proxies: Any, y: Any = None, *, features: Any = None) -> HOCEstimator:
        """Estimate ``T_`` and ``p_`` from proxy guesses.

        Parameters
        ----------
        proxies : array-like or DataFrame of shape (n_samples, n_proxies)
            Guesses of the sensitive attribute, one column per proxy (at least 3
            unless ``knn_augment=True``).
        y : None
            Ignored (scikit-learn convention).
        features : array-like of shape (n_samples, n_features), optional
            Features for the nearest-neighbour augmentation.

        Returns
        -------
        self : HOCEstimator
            The fitted estimator.
        """
        self._check_params()
        codes, groups, _ = encode_proxies(proxies, groups=self.groups)
        n_proxies = codes.shape[1]
        codes = augment_if_needed(codes, features, self.knn_augment, self.knn_metric, where="HOCEstimator.fit")
        rng = check_random_state(self.random_state)
        subsets = choose_subsets(codes.shape[1], self.max_subsets, rng)
        cells, counts = compress_rows(codes)
        c1, c2, c3 = consensus_statistics(cells, counts, len(groups), subsets)
        if not np.all(c1 > 0):
            raise ValueError(
                f"no proxy ever guesses the group(s) {groups[~(c1 > 0)].tolist()}, so the transition matrix T is "
                "singular (a zero column) and cannot be estimated. Drop those groups from groups= or merge them."
            )
        with single_thread_blas():
            sol = fit_transition(c1, c2, c3, n_init=self.n_init, max_iter=self.max_iter, tol=self.tol, random_state=rng)
            self.groups_, self.n_features_in_, self.subsets_, self.consensus_ = groups, n_proxies, subsets, (c1, c2, c3)
            self.noisy_prior_, self.T_, self.p_, self.loss_ = c1, sol.T, sol.p, sol.loss
            self.n_iter_, self.converged_ = sol.n_iter, sol.converged
            self.informativeness_ = check_informativeness(sol.T, c1)
            self.condition_number_ = self.informativeness_["condition_number"]
            warn_if_unreliable(self.informativeness_, "T_")
            # reliability_: the checks of _reliability.assess_fit; the fit's own failures warn with their reasons
            n_rows, limits = float(counts.sum()), {"cond_warn": np.inf, "n_sim": self.n_check, "random_state": rng}
            self.reliability_ = checks = assess_fit(sol, c1, n_rows, list(groups), **limits)
        reasons = [c["reason"] for k, c in checks.items() if k in ("moments", "diagonal", "prior") and not c["passed"]]
        if reasons:
            msg = f"HOCEstimator: the fitted T_ and p_ are unreliable: {'; '.join(reasons)}."
            warnings.warn(msg, ProxyReliabilityWarning, stacklevel=2)
        return self

    def predict_proba_patterns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pattern frequencies implied by the fitted ``T_`` and ``p_``.

        Returns
        -------
        m1, m2, m3 : ndarray
            First-, second- and third-order frequencies; compare with
            ``consensus_`` to judge the fit (Requirement 4.3 violations show here
            with more than two groups).
        """
        check_is_fitted(self, "T_")
        return moments(self.T_, self.p_)
