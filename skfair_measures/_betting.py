"""Confidence sequences for a bounded mean by betting, with a small state updated batch by batch.

Waudby-Smith and Ramdas (JRSS-B 2024, "Estimating means of bounded random variables by
betting"): for every candidate mean ``m`` a gambler bets on the observations ``x_i`` in
``[0, upper]``; her wealth ``K_t(m) = prod_i (1 + lambda_i (x_i - m))`` is a nonnegative
martingale when ``m`` is the true mean (independent draws, or any sequence whose
conditional mean is ``m``), so by Ville's inequality ``P(sup_t K_t(m) >= 1 / alpha) <=
alpha``. The confidence sequence ``{m : max_{s <= t} K_s(m) < 1 / alpha}`` holds at
every sample size and under continuous monitoring, with no normal approximation.

What is implemented (their "hedged capital process" with predictable plug-in bets):

- ``K_t(m) = max(K+_t(m), K-_t(m)) / 2`` with ``K+`` betting that the mean exceeds ``m``
  and ``K-`` that it is below; ``max`` of two half-stakes is valid (their section 4.3)
  and the set of ``m`` it keeps is an interval (their Proposition 4);
- bets ``lambda_t = sqrt(2 log(2 / alpha_bet) / (sigma2_{t-1} t log(1 + t)))``, with the
  running mean and variance of the past observations (prior 1/2 and 1/4), truncated at
  ``c / m`` (``c / (upper - m)`` for ``K-``) with ``c = 1/2``; each bet depends on the
  past only, which is all the guarantee needs. The bets are tuned for ``alpha_bet``
  (0.05); the sequence is valid at every ``alpha`` asked later, tightest near
  ``alpha_bet``;
- the state is the log-wealth of both gamblers and the running maximum of the hedged
  wealth on a grid of candidate means, plus three running sums: it is small, updated
  batch by batch (``update``), saved and restored (``to_dict`` / ``from_dict``), and an
  interval can be read at any ``alpha`` at any time (``interval``);
- the grid: the interval returned is the hull of the kept grid points widened by one
  grid step on each side, so a true mean between two grid points is never cut off.

Weights: observations need only be bounded. With rows sampled with known inclusion
probabilities, ``x = w y`` with ``w`` the density ratio (target over sampling
distribution, so ``E[w y]`` is the target mean) and ``upper = max w`` gives a sequence
for the target mean (importance weighting); the bound ``upper`` must be known in
advance, not read off the data.

Why our own and not a package: ``confseq`` (0.0.11, January 2023, "alpha") ships only
a C++ source distribution that needs CMake, pybind11 2.6 and Boost to build (its build
fails on this project's Python 3.11 toolchain), pulls in matplotlib, multiprocess and
pytest at run time, and its ``betting_cs`` recomputes the whole path from the full
array of observations: no state to update or save between batches, which the monitor
needs. ``expectation`` (0.6) requires Python >= 3.12 and has the same whole-array
interface. The arithmetic is about 60 lines of numpy, vectorised over the grid.

Examples
--------
>>> import numpy as np
>>> cs = BettingCS()
>>> cs.update(np.random.default_rng(0).binomial(1, 0.3, 200))
>>> lo, hi = cs.interval(0.05)
>>> bool(lo < 0.3 < hi), bool(hi - lo < 0.3)
(True, True)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ALPHA_BET", "GRID_SIZE", "BettingCS"]

#: The level the bets are tuned for (valid at every level; tightest near this one).
ALPHA_BET = 0.05
#: Number of grid steps over ``[0, upper]``; the interval is widened by one step per side.
GRID_SIZE = 1000
#: Truncation of the bets: ``lambda <= c / m`` keeps every factor ``1 + lambda (x - m) >= 1 - c``.
_TRUNCATION = 0.5
_LOG_HALF = float(np.log(0.5))


@functools.lru_cache(maxsize=32)
def _grid_caps(upper: float, grid_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid of candidate means and the bet caps of ``K+`` and ``K-`` on it (read-only, shared)."""
    m = np.linspace(0.0, upper, grid_size + 1)
    with np.errstate(divide="ignore"):
        cap_plus = np.where(m > 0, _TRUNCATION / m, np.inf)
        cap_minus = np.where(m < upper, _TRUNCATION / (upper - m), np.inf)
    for a in (m, cap_plus, cap_minus):
        a.setflags(write=False)
    return m, cap_plus, cap_minus


@dataclass
class BettingCS:
    """Anytime-valid confidence sequence for the mean of observations in ``[0, upper]``.

    Parameters
    ----------
    upper : float, default=1.0
        Known upper bound of the observations (a weighted 0/1 outcome: the largest weight).
    grid_size : int, default=GRID_SIZE
        Grid steps over ``[0, upper]``.
    alpha_bet : float, default=ALPHA_BET
        The level the bets are tuned for.

    Examples
    --------
    >>> cs = BettingCS()
    >>> cs.interval(0.05)  # no data: the whole range
    (0.0, 1.0)
    >>> cs.update([1, 1, 0, 1, 1, 1, 0, 1, 1, 1])
    >>> lo, hi = cs.interval(0.05)
    >>> 0.2 < lo < 0.8 < hi <= 1.0
    True
    """

    upper: float = 1.0
    grid_size: int = GRID_SIZE
    alpha_bet: float = ALPHA_BET
    n: int = 0
    total: float = 0.0
    sq_dev: float = 0.0  # sum of (x_i - running mean before x_i)^2
    log_plus: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    log_minus: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    log_max: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if not (np.isfinite(self.upper) and self.upper > 0):
            raise ValueError(f"upper={self.upper!r}; pass the known upper bound of the observations, > 0.")
        if not (isinstance(self.grid_size, int | np.integer) and self.grid_size >= 2):
            raise ValueError(f"grid_size={self.grid_size!r}; pass an integer >= 2.")
        if not 0 < self.alpha_bet < 1:
            raise ValueError(f"alpha_bet={self.alpha_bet!r}; pass a level in (0, 1).")
        k = self.grid_size + 1
        for name in ("log_plus", "log_minus", "log_max"):
            if getattr(self, name) is None:
                setattr(self, name, np.zeros(k))
            elif np.shape(getattr(self, name)) != (k,):
                raise ValueError(f"{name} has shape {np.shape(getattr(self, name))}; expected ({k},).")

    @property
    def grid(self) -> np.ndarray:
        """The candidate means, ``grid_size + 1`` points from 0 to ``upper``."""
        return _grid_caps(float(self.upper), int(self.grid_size))[0]

    def _bet(self, t: float) -> float:
        """The predictable bet before observation ``t`` (1-based), from the past mean and variance."""
        var = (0.25 * self.upper**2 + self.sq_dev) / (self.n + 1)
        return float(np.sqrt(2.0 * np.log(2.0 / self.alpha_bet) / (var * t * np.log1p(t))))

    def _mean(self) -> float:
        return (0.5 * self.upper + self.total) / (self.n + 1)

    def update(self, x: Any) -> None:
        """Bet on each observation of ``x`` in turn (its order is the order of the sequence).

        Parameters
        ----------
        x : array-like of shape (n,)
            Observations in ``[0, upper]``; refused with the range otherwise.
        """
        x = np.asarray(x, dtype=float).ravel()
        if x.size and not (np.isfinite(x).all() and x.min() >= 0.0 and x.max() <= self.upper):
            finite = x[np.isfinite(x)]
            seen = f"values in [{finite.min():g}, {finite.max():g}]" if finite.size else "no finite value"
            raise ValueError(
                f"observations must lie in [0, {self.upper:g}] (upper=); got {seen}"
                f"{' and non-finite values' if finite.size < x.size else ''}."
            )
        m = self.grid
        with np.errstate(divide="ignore"):
            cap_plus = np.where(m > 0, _TRUNCATION / m, np.inf)
            cap_minus = np.where(m < self.upper, _TRUNCATION / (self.upper - m), np.inf)
        # A bet is per observation; the grid is the vectorised axis.
        for xi in x:
            lam = self._bet(self.n + 1)
            self.log_plus += np.log1p(np.minimum(lam, cap_plus) * (xi - m))
            self.log_minus += np.log1p(-np.minimum(lam, cap_minus) * (xi - m))
            np.maximum(self.log_max, _LOG_HALF + np.maximum(self.log_plus, self.log_minus), out=self.log_max)
            mean = self._mean()
            self.sq_dev += (xi - mean) ** 2
            self.total += xi
            self.n += 1

    def update_counts(self, successes: float, trials: float) -> None:
        """Bet on a batch of 0/1 observations known only by its counts: ``successes`` ones in ``trials``.

        One bet is fixed before the batch, from the past alone (the bet of the batch's
        last observation, the smallest of the batch), so the wealth of the batch is
        ``(1 + lambda (1 - m))^successes (1 - lambda m)^(trials - successes)`` whatever
        the order of its rows: counts are enough, and the guarantee is that of
        :meth:`update` read at batch ends. The running variance of the bets takes the
        batch's squared deviations from the mean before it. Needs ``upper=1``.

        Parameters
        ----------
        successes, trials : int
            Ones in the batch and rows in it (``0 <= successes <= trials``; 0 trials is no bet).

        Examples
        --------
        >>> a, b = BettingCS(), BettingCS()
        >>> a.update_counts(30, 100)
        >>> b.update_counts(29, 100)
        >>> lo, hi = a.interval(0.05)
        >>> bool(lo < 0.3 < hi), a.n
        (True, 100)
        """
        if self.upper != 1.0:
            raise ValueError(f"update_counts needs 0/1 observations (upper=1); this sequence has upper={self.upper!r}.")
        k, n = float(successes), float(trials)
        if not (np.isfinite(k) and np.isfinite(n) and 0 <= k <= n and k == int(k) and n == int(n)):
            raise ValueError(
                f"successes={successes!r}, trials={trials!r}; pass whole counts with 0 <= successes <= trials."
            )
        if n == 0:
            return
        m, cap_plus, cap_minus = _grid_caps(1.0, int(self.grid_size))
        lam = self._bet(self.n + n)
        lam_plus, lam_minus = np.minimum(lam, cap_plus), np.minimum(lam, cap_minus)
        self.log_plus += k * np.log1p(lam_plus * (1.0 - m)) + (n - k) * np.log1p(-lam_plus * m)
        self.log_minus += k * np.log1p(-lam_minus * (1.0 - m)) + (n - k) * np.log1p(lam_minus * m)
        np.maximum(self.log_max, _LOG_HALF + np.maximum(self.log_plus, self.log_minus), out=self.log_max)
        mean = self._mean()
        self.sq_dev += k * (1.0 - mean) ** 2 + (n - k) * mean**2
        self.total += k
        self.n += int(n)

    def combined(self, other: BettingCS) -> BettingCS:
        """One sequence from two run on independent rows (two workers): their wealths multiply.

        Each side's gamblers bet on their own past only, so on independent rows the
        product of the two ``K+`` (and of the two ``K-``) is again a test martingale;
        the hedged wealth of the products is valid as before. The running maxima of the
        two sides are not those of the product, so the maximum restarts from the
        product's current value (valid: Ville's inequality holds at any subset of
        times; the sequence may then be wider than either side was). The running sums
        add; later bets use the pooled mean and variance.

        Examples
        --------
        >>> a, b = BettingCS(), BettingCS()
        >>> a.update_counts(30, 100)
        >>> b.update_counts(31, 100)
        >>> ab = a.combined(b)
        >>> ab.n, bool(ab.interval(0.05)[1] - ab.interval(0.05)[0] < a.interval(0.05)[1] - a.interval(0.05)[0])
        (200, True)
        """
        if (self.upper, self.grid_size, self.alpha_bet) != (other.upper, other.grid_size, other.alpha_bet):
            raise ValueError(
                "the two sequences differ in upper, grid_size or alpha_bet "
                f"({(self.upper, self.grid_size, self.alpha_bet)} vs {(other.upper, other.grid_size, other.alpha_bet)})"
                "; only sequences built with the same settings combine."
            )
        plus, minus = self.log_plus + other.log_plus, self.log_minus + other.log_minus
        return BettingCS(
            self.upper, self.grid_size, self.alpha_bet, self.n + other.n, self.total + other.total,
            self.sq_dev + other.sq_dev, log_plus=plus, log_minus=minus,
            log_max=_LOG_HALF + np.maximum(plus, minus),
        )

    def interval(self, alpha: float = 0.05) -> tuple[float, float]:
        """The confidence sequence at level ``1 - alpha`` now: ``(lower, upper)``.

        Valid simultaneously over every time it is read, for the ``alpha`` given.

        Examples
        --------
        >>> cs = BettingCS()
        >>> cs.update([0] * 50)
        >>> cs.interval(0.05)[0], cs.interval(0.05)[1] < 0.2
        (0.0, True)
        """
        if not 0 < alpha < 1:
            raise ValueError(f"alpha={alpha!r}; pass a level in (0, 1).")
        kept = np.flatnonzero(self.log_max < np.log(1.0 / alpha))
        m = self.grid
        if kept.size == 0:  # pragma: no cover - Ville: probability <= alpha; then the closest candidate
            kept = np.array([int(np.argmin(self.log_max))])
        lo = m[max(int(kept[0]) - 1, 0)]
        hi = m[min(int(kept[-1]) + 1, m.size - 1)]
        return (float(lo), float(hi))

    def to_dict(self) -> dict[str, Any]:
        """The state as plain Python values (JSON-friendly), restored by :meth:`from_dict`."""
        return {
            "upper": float(self.upper), "grid_size": int(self.grid_size), "alpha_bet": float(self.alpha_bet),
            "n": int(self.n), "total": float(self.total), "sq_dev": float(self.sq_dev),
            "log_plus": self.log_plus.tolist(), "log_minus": self.log_minus.tolist(), "log_max": self.log_max.tolist(),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> BettingCS:
        """A state saved by :meth:`to_dict`.

        Examples
        --------
        >>> cs = BettingCS()
        >>> cs.update([1, 0, 1])
        >>> BettingCS.from_dict(cs.to_dict()).interval(0.1) == cs.interval(0.1)
        True
        """
        arrays = {k: np.asarray(state[k], dtype=float) for k in ("log_plus", "log_minus", "log_max")}
        return cls(state["upper"], state["grid_size"], state["alpha_bet"], state["n"], state["total"],
                   state["sq_dev"], **arrays)
