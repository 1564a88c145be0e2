"""Randomized response: weaken proxy guesses on purpose, with a privacy guarantee.

Section 4.2 of Zhu et al. (2023): if a proxy's guess is correct with probability at
most ``1 - eps0`` and equals any given wrong group with probability at least
``eps1`` for every individual, the guesses satisfy ``ln((1 - eps0) / eps1)``
differential privacy of the sensitive attribute (label DP, Ghazi et al. 2021). When
proxies are too accurate, adding noise imposes that bound: with probability
``flip_prob`` a guess is replaced by one of the ``K - 1`` other groups, uniformly.
Then ``eps0 = flip_prob`` and ``eps1 = flip_prob / (K - 1)``, so

    epsilon = ln((1 - flip_prob) (K - 1) / flip_prob).

Two groups flipped with probability 0.4 give ``ln(1.5) = 0.41``, the paper's
example. The noise is independent across rows and proxies, so it keeps the proxies
conditionally independent (Requirement 4.3), and HOC calibration still works on
the weakened proxies as long as ``flip_prob < (K - 1) / K`` (Requirement 4.2): the
transition matrix of a weakened proxy is ``T @ R``, with ``R`` the
:attr:`RandomizedResponse.transition_matrix_`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, check_random_state

from ._proxy_codes import encode_proxies

__all__ = ["RandomizedResponse"]


class RandomizedResponse(TransformerMixin, BaseEstimator):
    """Replace proxy guesses by another group at random (k-ary randomized response).

    Each guess is kept with probability ``1 - flip_prob`` and otherwise replaced by
    one of the other groups, chosen uniformly, independently for every entry.

    Parameters
    ----------
    flip_prob : float, optional
        Probability of replacing a guess, in ``[0, (K - 1) / K)``. Give exactly one
        of ``flip_prob`` and ``epsilon``.
    epsilon : float, optional
        Target privacy level (> 0); sets
        ``flip_prob = (K - 1) / (exp(epsilon) + K - 1)``.
    groups : array-like, optional
        The sensitive values. By default the sorted union of the values seen in
        ``fit``; declare them when a group may be absent from the data.
    random_state : int, RandomState instance or None, default=None
        Seed of the noise; an int makes ``transform`` reproducible.

    Attributes
    ----------
    groups_ : pandas.Index
        Group labels.
    flip_prob_ : float
        Probability of replacing a guess.
    epsilon_ : float
        Differential privacy level of the noisy guesses (``inf`` when
        ``flip_prob_ = 0``), ``ln((1 - flip_prob_) (K - 1) / flip_prob_)``.
    transition_matrix_ : ndarray of shape (n_groups, n_groups)
        ``R[a, b] = P(output b | input a)``.
    n_features_in_ : int
        Number of proxy columns seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> proxies = np.array([[0, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
    >>> rr = RandomizedResponse(flip_prob=0.4, random_state=0).fit(proxies)
    >>> round(rr.epsilon_, 2)
    0.41
    >>> rr.transform(proxies).shape
    (4, 3)
    >>> round(RandomizedResponse(epsilon=np.log(3)).fit(proxies).flip_prob_, 2)
    0.25
    """

    def __init__(
        self,
        *,
        flip_prob: float | None = None,
        epsilon: float | None = None,
        groups: Any = None,
        random_state: Any = None,
    ) -> None:
        self.flip_prob, self.epsilon, self.groups, self.random_state = flip_prob, epsilon, groups, random_state

    def fit(self, X: Any, y: Any = None) -> RandomizedResponse:
        """Learn the group labels and set the flip probability.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_proxies)
            Proxy guesses, one column per proxy.
        y : None
            Ignored.

        Returns
        -------
        self : RandomizedResponse
            The fitted transformer.
        """
        _, groups, _ = encode_proxies(X, groups=self.groups, name="X")
        k = len(groups)
        if (self.flip_prob is None) == (self.epsilon is None):
            raise ValueError(
                "RandomizedResponse needs exactly one of flip_prob= (probability of replacing a guess) or epsilon= "
                f"(target privacy level); got flip_prob={self.flip_prob!r}, epsilon={self.epsilon!r}."
            )
        if self.epsilon is not None:
            if not self.epsilon > 0:
                raise ValueError(f"epsilon must be > 0; got {self.epsilon!r}.")
            flip = (k - 1) / (np.exp(self.epsilon) + k - 1)
        else:
            flip = float(self.flip_prob)
            if not 0.0 <= flip < (k - 1) / k:
                raise ValueError(
                    f"flip_prob must lie in [0, {(k - 1) / k:.4g}) for {k} groups (at "
                    f"(K-1)/K the output no longer depends on the input); got {flip!r}."
                )
        self.groups_, self.flip_prob_ = groups, float(flip)
        self.epsilon_ = float(np.log((1 - flip) * (k - 1) / flip)) if flip > 0 else float("inf")
        self.transition_matrix_ = np.where(np.eye(k, dtype=bool), 1.0 - flip, flip / (k - 1))
        self.n_features_in_ = 1 if np.ndim(X) == 1 else int(np.shape(X)[1])
        return self

    def transform(self, X: Any) -> Any:
        """Return noisy copies of the guesses.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_proxies)
            Proxy guesses with values among ``groups_``.

        Returns
        -------
        ndarray or DataFrame of the same shape
            A DataFrame (same index and columns) for a DataFrame input, else an
            array of group labels.
        """
        check_is_fitted(self, "transition_matrix_")
        codes, _, _ = encode_proxies(X, groups=self.groups_, name="X")
        if codes.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {codes.shape[1]} proxy columns but RandomizedResponse was fitted with {self.n_features_in_}."
            )
        rng, k = check_random_state(self.random_state), len(self.groups_)
        flip = rng.random_sample(codes.shape) < self.flip_prob_
        shift = rng.randint(1, k, size=codes.shape)  # k >= 2: encode_proxies refuses fewer groups
        noisy = np.where(flip, (codes + shift) % k, codes)
        if isinstance(X, pd.DataFrame):
            labels = np.asarray(self.groups_, dtype=object)[noisy]
            return pd.DataFrame(labels, index=X.index, columns=X.columns).infer_objects()
        values = np.asarray(self.groups_.tolist())[noisy]
        return values[:, 0] if np.ndim(X) == 1 else values
