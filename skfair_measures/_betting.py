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
  batch by batch (``update_values``), saved and restored (``to_dict`` / ``from_dict``), and an
  interval can be read at any ``alpha`` at any time (``intervals``);
- the grid: the interval returned is exact with respect to the grid, the hull of the
  grid segments ``[m_j, m_j+1]`` not wholly rejected. Each factor of ``K+`` falls with
  ``m`` (``1 + lambda (x - m)``, and with the truncated bet ``1 + c (x / m - 1)``) and each
  factor of ``K-`` rises, so on a segment ``max(K+(m), K-(m)) >= max(K+(m_j+1), K-(m_j))``
  at every time; the state keeps the running maximum of that segment bound
  (``log_seg_max``), and a segment where it reached ``2 / alpha`` holds no candidate the
  sequence keeps. Hence a true mean between two grid points is never cut off, even
  when every grid point is rejected (a coarse grid, many rows). The moments form bets a
  lower bound of the row-by-row wealth, which is itself monotone, so the segment bound
  is a lower bound of that (valid) wealth on the whole segment: rejection is still safe.

Batches (:meth:`BettingStack.update_counts` for 0/1 rows, exact; :meth:`BettingStack.update_moments`
for bounded rows known by ``count``, ``sum(x)``, ``sum(x^2)``, a lower bound): one bet for the
whole batch, chosen before it from the past observations and the batch's size (the bet
row mode would give the batch's last row). Why the wealth stays a nonnegative
supermartingale: given everything before the batch, the batch's rows are independent
with mean ``m``, so ``E[prod_i (1 + lambda (x_i - m))] = 1`` for a bet fixed beforehand
(the moments form multiplies smaller factors: ``<= 1``). This needs the batch's size not to
depend on its values (a fixed number of rows, or a time window whose arrivals do not
depend on the outcomes). Ville's inequality then holds at batch ends, where the running
maximum is updated. A batch costs O(grid) whatever its size; one-row batches are row
mode exactly.

Workers: two sequences run on independent rows combine by multiplying their current
wealths (:meth:`BettingStack.combined`): along any interleaving of the two workers' batches
(fixed without looking at values to come) the product of the two ``K+`` (and of the two
``K-``) is a test martingale. Multiplying running maxima is not valid (the product of two
maxima reached at different times is not a wealth of any gambler), so a combination
starts its maximum from the product's current value. A coordinator that combines again
and again may keep a running maximum over the combined values it read, since those are
values of one supermartingale: ``np.maximum(new.log_max, previous.log_max,
out=new.log_max)``. Replaying all batches in one common order into one sequence is the
other valid way.

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
>>> st = BettingStack()  # one sequence
>>> for x in np.random.default_rng(0).binomial(1, 0.3, 200):
...     st.update_values([x])
>>> lo, hi = st.intervals(0.05)
>>> bool(lo[0] < 0.3 < hi[0]), bool(hi[0] - lo[0] < 0.3)
(True, True)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ALPHA_BET",
    "GRID_SIZE",
    "BettingStack",
    "fixed_sample_interval",
    "intervals_together",
    "prediction_powered_interval",
    "update_counts_together",
]

#: The level the bets are tuned for (valid at every level; tightest near this one).
ALPHA_BET = 0.05
#: Number of grid steps over ``[0, upper]``; the interval is widened by one step per side.
GRID_SIZE = 1000
#: Truncation of the bets: ``lambda <= c / m`` keeps every factor ``1 + lambda (x - m) >= 1 - c``.
_TRUNCATION = 0.5
_LOG_HALF = float(np.log(0.5))
#: Truncation of the one-look bets (Waudby-Smith and Ramdas use 1/2 or 3/4 for intervals).
_ONE_LOOK_TRUNCATION = 0.75


def _psi(c: np.ndarray) -> np.ndarray:
    """``(-log(1 - c) - c) / c^2``, 1/2 at ``c = 0``: ``log(1 + y) >= y - psi(c) y^2`` for ``y >= -c``."""
    c = np.asarray(c, dtype=float)
    safe = np.where(c > 1e-4, c, 0.5)
    return np.where(c > 1e-4, (-np.log1p(-safe) - safe) / safe**2, 0.5 + c / 3.0)


@functools.lru_cache(maxsize=32)
def _grid_caps(upper: float, grid_size: int, c: float = _TRUNCATION) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid of candidate means and the bet caps ``c / m``, ``c / (upper - m)`` of ``K+`` and ``K-`` (read-only)."""
    m = np.linspace(0.0, upper, grid_size + 1)
    with np.errstate(divide="ignore"):
        cap_plus = np.where(m > 0, c / m, np.inf)
        cap_minus = np.where(m < upper, c / (upper - m), np.inf)
    for a in (m, cap_plus, cap_minus):
        a.setflags(write=False)
    return m, cap_plus, cap_minus


@functools.lru_cache(maxsize=32)
def _grid_terms(grid_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``-m``, ``1 - m`` and ``-(1 - m)`` on the grid over [0, 1] (read-only, shared): the factors of 0/1 bets."""
    m = _grid_caps(1.0, grid_size)[0]
    out = (-m, 1.0 - m, -(1.0 - m))
    for a in out:
        a.setflags(write=False)
    return out


def _counts_log_wealth(
    bet: np.ndarray, one: np.ndarray, zero: np.ndarray, ones: np.ndarray, zeros: np.ndarray
) -> np.ndarray:
    """``ones log1p(bet one) + zeros log1p(bet zero)``: a batch's log-wealth from its counts (``bet`` is overwritten).

    In place: with many stacked sequences the arrays are large, and temporaries cost more than the arithmetic.
    """
    out = np.multiply(bet, one)
    np.log1p(out, out=out)
    out *= ones
    other = np.multiply(bet, zero, out=bet)
    np.log1p(other, out=other)
    other *= zeros
    out += other
    return out


#: The per-row state of a :class:`BettingStack`, in the order of its fields.
_STATE = ("alpha_bet", "n", "total", "sq_dev", "log_plus", "log_minus", "log_max", "log_seg_max")


def _check_grid(grid_size: Any) -> None:
    if not (isinstance(grid_size, int | np.integer) and grid_size >= 2):
        raise ValueError(f"grid_size={grid_size!r}; pass an integer >= 2.")


def _rows(values: Any, name: str, rows: int) -> np.ndarray:
    """One float per sequence: a scalar is broadcast, an array must have one value per row."""
    a = np.asarray(values, dtype=float)
    if a.ndim == 0:
        return np.full(rows, float(a))
    if a.shape != (rows,):
        raise ValueError(f"{name} has shape {a.shape}; pass one value per sequence ({rows},).")
    return a


@dataclass(eq=False)
class BettingStack:
    """Many confidence sequences by betting, one per row, updated together by one numpy expression per batch.

    Each row is one anytime-valid confidence sequence for the mean of observations in
    ``[0, upper]`` (one row, ``rows=1``, is a single sequence), for ``rows`` sequences
    side by side. The state is a 2-D array per wealth, ``(rows, grid_size + 1)``, and the
    running sums per row; a batch of counts for every row costs a handful of numpy
    expressions over the whole ``(rows, grid)`` array instead of one Python call per
    sequence (a monitor bets on every group rate of every restarted box after every batch).
    A row whose batch is empty (0 trials, 0 rows) is left exactly as it was.

    Parameters
    ----------
    rows : int, default=1
        Number of sequences.
    upper : float, default=1.0
        Known upper bound of the observations, shared by all rows.
    grid_size : int, default=GRID_SIZE
        Grid steps over ``[0, upper]``, shared by all rows.
    alpha_bet : float or array of shape (rows,), default=ALPHA_BET
        The level each row's bets are tuned for.

    Examples
    --------
    >>> st = BettingStack(3, grid_size=100)
    >>> st.update_counts([30, 0, 90], [100, 0, 100])  # the middle sequence sees no rows
    >>> lo, hi = st.intervals(0.05)
    >>> bool(lo[0] < 0.3 < hi[0]), (float(lo[1]), float(hi[1])), bool(lo[2] < 0.9 < hi[2])
    (True, (0.0, 1.0), True)
    """

    rows: int = 1
    upper: float = 1.0
    grid_size: int = GRID_SIZE
    alpha_bet: Any = ALPHA_BET
    n: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    total: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    sq_dev: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]  # sum (x_i - mean before)^2
    log_plus: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    log_minus: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    log_max: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    #: per segment ``[m_j, m_j+1]``: running maximum of ``log(max(K+(m_j+1), K-(m_j)) / 2)``
    log_seg_max: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if not (isinstance(self.rows, int | np.integer) and self.rows >= 0):
            raise ValueError(f"rows={self.rows!r}; pass the number of sequences, an integer >= 0.")
        if not (np.isfinite(self.upper) and self.upper > 0):
            raise ValueError(f"upper={self.upper!r}; pass the known upper bound of the observations, > 0.")
        _check_grid(self.grid_size)
        r, k = int(self.rows), self.grid_size + 1
        self.alpha_bet = _rows(self.alpha_bet, "alpha_bet", r)
        if not ((self.alpha_bet > 0) & (self.alpha_bet < 1)).all():
            raise ValueError(f"alpha_bet={self.alpha_bet!r}; pass a level in (0, 1).")
        self.n = np.zeros(r, dtype=np.int64) if self.n is None else np.asarray(self.n, dtype=np.int64).reshape(r)
        for name in ("total", "sq_dev"):
            setattr(self, name, np.zeros(r) if getattr(self, name) is None else _rows(getattr(self, name), name, r))
        for name, width in (("log_plus", k), ("log_minus", k), ("log_max", k), ("log_seg_max", k - 1)):
            value = getattr(self, name)
            if value is None and name == "log_seg_max":  # a new sequence, or a state saved before segments were
                value = self._seg_now(slice(None))  # kept: start from the current value (valid, Ville at later times)
            elif value is None:
                value = np.zeros((r, k))
            elif np.size(value) != r * width:
                raise ValueError(f"{name} has shape {np.shape(value)}; expected ({r}, {width}).")
            setattr(self, name, np.asarray(value, dtype=float).reshape(r, width))

    @property
    def grid(self) -> np.ndarray:
        """The candidate means, ``grid_size + 1`` points from 0 to ``upper``."""
        return _grid_caps(float(self.upper), int(self.grid_size))[0]

    def _seg_now(self, idx: Any) -> np.ndarray:
        """``log(max(K+(m_j+1), K-(m_j)) / 2)`` per segment: the hedged wealth's lower bound on it now."""
        return _LOG_HALF + np.maximum(self.log_plus[idx, 1:], self.log_minus[idx, :-1])

    def _bet(self, idx: Any, t: np.ndarray) -> np.ndarray:
        """Per row, the predictable bet before observation ``t`` (1-based), from the past mean and variance."""
        var = (0.25 * self.upper**2 + self.sq_dev[idx]) / (self.n[idx] + 1)
        return np.sqrt(2.0 * np.log(2.0 / self.alpha_bet[idx]) / (var * t * np.log1p(t)))

    def _mean(self, idx: Any) -> np.ndarray:
        return (0.5 * self.upper + self.total[idx]) / (self.n[idx] + 1)

    def _bet_on(
        self, idx: Any, plus: np.ndarray, minus: np.ndarray, n: np.ndarray, sq: np.ndarray, total: np.ndarray
    ) -> None:
        """Add a batch's log-wealth increments to rows ``idx``, record the running maxima, and move the sums.

        In place (the arrays are large when many sequences are stacked, and temporaries cost
        more than the arithmetic); ``plus`` and ``minus`` are used as scratch space.
        """
        arrays = (self.log_plus, self.log_minus, self.log_max, self.log_seg_max)
        lp, lm, top, seg = (a[idx] for a in arrays)  # views of all rows, copies of some
        lp += plus
        lm += minus
        now = np.maximum(lp, lm, out=plus)
        now += _LOG_HALF
        np.maximum(top, now, out=top)
        now = np.maximum(lp[:, 1:], lm[:, :-1], out=minus[:, 1:])
        now += _LOG_HALF
        np.maximum(seg, now, out=seg)
        if not isinstance(idx, slice):
            for a, rows in zip(arrays, (lp, lm, top, seg), strict=True):
                a[idx] = rows
        self.sq_dev[idx] += sq
        self.total[idx] += total
        self.n[idx] += n.astype(np.int64)

    @staticmethod
    def _active(count: np.ndarray) -> Any:
        """The rows with a non-empty batch (a slice of all rows when every one has rows: no copies)."""
        active = np.flatnonzero(count > 0)
        return slice(None) if active.size == count.size else active

    def update_values(self, x: Any) -> None:
        """Bet on one observation per row, ``x`` of shape ``(rows,)`` in ``[0, upper]`` (row mode).

        Examples
        --------
        >>> st = BettingStack(2)
        >>> st.update_values([1.0, 0.0])
        >>> st.n.tolist(), st.total.tolist()
        ([1, 1], [1.0, 0.0])
        """
        x = _rows(x, "x", self.rows)
        self._check_range(x)
        m, cap_plus, cap_minus = _grid_caps(float(self.upper), int(self.grid_size))
        idx = slice(None)
        lam = self._bet(idx, self.n + 1.0)[:, None]
        dev = x[:, None] - m
        plus, minus = np.log1p(np.minimum(lam, cap_plus) * dev), np.log1p(-np.minimum(lam, cap_minus) * dev)
        self._bet_on(idx, plus, minus, np.ones(self.rows), (x - self._mean(idx)) ** 2, x)

    def _check_range(self, x: np.ndarray) -> None:
        if x.size and not (np.isfinite(x).all() and x.min() >= 0.0 and x.max() <= self.upper):
            finite = x[np.isfinite(x)]
            seen = f"values in [{finite.min():g}, {finite.max():g}]" if finite.size else "no finite value"
            raise ValueError(
                f"observations must lie in [0, {self.upper:g}] (upper=); got {seen}"
                f"{' and non-finite values' if finite.size < x.size else ''}."
            )

    def update_counts(self, successes: Any, trials: Any) -> None:
        """Bet on a batch of 0/1 observations per row known only by its counts: ``successes`` ones in ``trials``.

        One bet is fixed before the batch, from the past alone (the bet of the batch's
        last observation, the smallest of the batch), so the wealth of the batch is
        ``(1 + lambda (1 - m))^successes (1 - lambda m)^(trials - successes)`` whatever
        the order of its rows: counts are enough, and the guarantee is that of
        :meth:`update_values` read at batch ends. The running variance of the bets takes the
        batch's squared deviations from the mean before it. Needs ``upper=1``.

        Parameters
        ----------
        successes, trials : array-like of shape (rows,)
            Ones and rows of each sequence's batch (``0 <= successes <= trials``, whole
            numbers; 0 trials leaves the row as it was).
        """
        if self.upper != 1.0:
            raise ValueError(f"update_counts needs 0/1 observations (upper=1); this sequence has upper={self.upper!r}.")
        k_all, n_all = _rows(successes, "successes", self.rows), _rows(trials, "trials", self.rows)
        with np.errstate(invalid="ignore"):  # NaN and infinite counts fail the comparisons
            whole = (k_all == np.floor(k_all)) & (n_all == np.floor(n_all))
            ok = (0 <= k_all) & (k_all <= n_all) & (n_all < np.inf) & whole
        if not ok.all():
            raise ValueError(
                f"successes={successes!r}, trials={trials!r}; pass whole counts with 0 <= successes <= trials."
            )
        idx = self._active(n_all)
        k, n = k_all[idx], n_all[idx]
        if n.size == 0:
            return
        m, cap_plus, cap_minus = _grid_caps(1.0, int(self.grid_size))
        neg_m, one_minus_m, neg_one_minus_m = _grid_terms(int(self.grid_size))
        lam = self._bet(idx, self.n[idx] + n)[:, None]
        kc, fc = k[:, None], (n - k)[:, None]
        mean = self._mean(idx)
        # K+: k log1p(lam+ (1 - m)) + (n - k) log1p(-lam+ m); K-: k log1p(-lam- (1 - m)) + (n - k) log1p(lam- m)
        plus = _counts_log_wealth(np.minimum(lam, cap_plus), one_minus_m, neg_m, kc, fc)
        minus = _counts_log_wealth(np.minimum(lam, cap_minus), neg_one_minus_m, m, kc, fc)
        self._bet_on(idx, plus, minus, n, k * (1.0 - mean) ** 2 + (n - k) * mean**2, k)

    def update_moments(self, count: Any, total: Any, total_sq: Any) -> None:
        """Bet on a batch of observations in ``[0, upper]`` per row known by its sums (weighted rows, say).

        One bet, fixed before the batch from the past alone (as :meth:`update_counts`),
        and for each candidate ``m`` the log-wealth of the batch is bounded below by
        ``sum(y) - psi(c) sum(y^2)`` with ``y = lambda (x - m) >= -c`` (Fan, Grama and Liu
        2015: ``log(1 + y) >= y - psi(c) y^2`` for ``y >= -c``, ``psi(c) = (-log(1 - c) - c) / c^2``).
        The sums of ``y`` and ``y^2`` need only ``count``, ``sum(x)`` and ``sum(x^2)``, so a
        batch costs O(grid) whatever its size. The smaller wealth is still a nonnegative
        supermartingale (each factor is below ``1 + lambda (x - m)``, whose conditional
        mean is 1 at the true mean), so the guarantee is kept, at a small loss of width
        against betting row by row. On 0/1 rows :meth:`update_counts` is exact.

        Parameters
        ----------
        count, total, total_sq : array-like of shape (rows,)
            Rows in each batch (0 leaves the row as it was), ``sum(x)`` and ``sum(x ** 2)``
            (e.g. ``x = w y`` with weight ``w <= upper``).

        Examples
        --------
        >>> import numpy as np
        >>> x = 1.5 * np.random.default_rng(0).binomial(1, 0.3, 5000)  # weighted 0/1 rows, weight 1.5
        >>> st = BettingStack(upper=1.5)
        >>> st.update_moments(x.size, x.sum(), (x ** 2).sum())
        >>> lo, hi = st.intervals(0.05)
        >>> bool(lo[0] < 0.45 < hi[0]), st.n.tolist()
        (True, [5000])
        """
        n_all, s1_all, s2_all = (
            _rows(v, name, self.rows) for v, name in ((count, "count"), (total, "total"), (total_sq, "total_sq"))
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = np.isfinite(n_all) & np.isfinite(s1_all) & np.isfinite(s2_all) & (n_all >= 0)
            ok &= n_all == np.floor(n_all)
            # x in [0, upper] implies 0 <= sum x <= n upper, sum x^2 <= upper sum x, and sum x^2 >= (sum x)^2 / n
            tol = 1e-9 * np.maximum(1.0, np.abs(s2_all))
            ok &= (0 <= s1_all) & (s1_all <= n_all * self.upper * (1 + 1e-12)) & (s2_all <= self.upper * s1_all + tol)
            ok &= (n_all == 0) | (s2_all >= s1_all * s1_all / np.where(n_all > 0, n_all, 1.0) - tol)
        if not ok.all():
            raise ValueError(
                f"count={count!r}, total={total!r}, total_sq={total_sq!r} are not the sums of observations in "
                f"[0, {self.upper:g}] (upper=); pass the row count, sum(x) and sum(x ** 2) of one batch."
            )
        idx = self._active(n_all)
        n, s1, s2 = n_all[idx], s1_all[idx], s2_all[idx]
        if n.size == 0:
            return
        m, cap_plus, cap_minus = _grid_caps(float(self.upper), int(self.grid_size))
        lam = self._bet(idx, self.n[idx] + n)[:, None]
        nc, s1c, s2c = n[:, None], s1[:, None], s2[:, None]
        centred_sq = s2c - 2.0 * m * s1c + nc * m**2  # sum (x - m)^2 at every candidate
        lam_plus, lam_minus = np.minimum(lam, cap_plus), np.minimum(lam, cap_minus)
        mean, gain = self._mean(idx), s1c - nc * m
        plus = lam_plus * gain - _psi(lam_plus * m) * lam_plus**2 * centred_sq
        minus = -lam_minus * gain - _psi(lam_minus * (self.upper - m)) * lam_minus**2 * centred_sq
        self._bet_on(idx, plus, minus, n, np.maximum(s2 - 2.0 * mean * s1 + n * mean**2, 0.0), s1)

    def intervals(self, alpha: Any = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """Every row's sequence at level ``1 - alpha`` now (``alpha`` one level or one per row).

        Valid simultaneously over every time it is read, for the ``alpha`` given. The
        interval of a row is the hull of the grid segments whose running lower bound
        (``log_seg_max``) stayed below ``1 / alpha`` (the least rejected segment when all
        are), widened to the grid points whose running maximum did: every candidate mean
        the sequence keeps, on or between grid points, lies inside (see the module
        docstring), whatever the grid.

        Returns
        -------
        lower, upper : ndarray of shape (rows,)
        """
        return _intervals(self.grid, self.log_seg_max, self.log_max, _rows(alpha, "alpha", self.rows), alpha)

    def combined(self, other: BettingStack) -> BettingStack:
        """Row by row, one sequence from two run on independent rows (two workers): their wealths multiply.

        Each side's gamblers bet on their own past only, so on independent rows the
        product of the two ``K+`` (and of the two ``K-``) is again a test martingale;
        the hedged wealth of the products is valid as before. The running maxima of the
        two sides are not those of the product, so the maximum restarts from the
        product's current value (valid: Ville's inequality holds at any subset of
        times; the sequence may then be wider than either side was). The running sums
        add; later bets use the pooled mean and variance.

        Examples
        --------
        >>> a, b = BettingStack(), BettingStack()
        >>> a.update_counts(30, 100)
        >>> b.update_counts(31, 100)
        >>> ab = a.combined(b)
        >>> (lo, hi), (ab_lo, ab_hi) = a.intervals(0.05), ab.intervals(0.05)
        >>> ab.n.tolist(), bool(ab_hi[0] - ab_lo[0] < hi[0] - lo[0])
        ([200], True)
        """
        if self.rows != other.rows:
            raise ValueError(f"the two stacks have {self.rows} and {other.rows} rows; combine stacks row by row.")
        mine, theirs = ((s.upper, s.grid_size, s.alpha_bet.tolist()) for s in (self, other))
        if mine != theirs:
            raise ValueError(
                f"the two sequences differ in upper, grid_size or alpha_bet ({mine} vs {theirs}); only sequences "
                "built with the same settings combine."
            )
        plus, minus = self.log_plus + other.log_plus, self.log_minus + other.log_minus
        sums = (getattr(self, name) + getattr(other, name) for name in ("n", "total", "sq_dev"))
        top = _LOG_HALF + np.maximum(plus, minus)  # log_seg_max=None: restarts from the product's current value too
        return BettingStack(self.rows, self.upper, self.grid_size, self.alpha_bet.copy(), *sums, plus, minus, top)

    def take(self, idx: Any) -> BettingStack:
        """A new stack of the rows ``idx`` (an index array), copied."""
        idx = np.asarray(idx, dtype=int)
        return BettingStack(idx.size, self.upper, self.grid_size, *(getattr(self, name)[idx] for name in _STATE))

    def extended(self, rows: int, alpha_bet: Any = ALPHA_BET) -> BettingStack:
        """A copy with ``rows`` new sequences (no observations yet) appended."""
        new = BettingStack(rows, self.upper, self.grid_size, alpha_bet)
        return BettingStack.concat([self, new])

    @staticmethod
    def concat(stacks: list[BettingStack]) -> BettingStack:
        """The rows of several stacks with the same ``upper`` and ``grid_size``, in order."""
        first = stacks[0]
        if any((s.upper, s.grid_size) != (first.upper, first.grid_size) for s in stacks):
            raise ValueError("the stacks differ in upper or grid_size; only stacks with the same grid concatenate.")
        state = (np.concatenate([getattr(s, name) for s in stacks]) for name in _STATE)
        return BettingStack(sum(s.rows for s in stacks), first.upper, first.grid_size, *state)

    def to_dict(self) -> dict[str, Any]:
        """The state as plain Python values (JSON-friendly), restored by :meth:`from_dict`."""
        settings = {"rows": int(self.rows), "upper": float(self.upper), "grid_size": int(self.grid_size)}
        return {**settings, **{name: getattr(self, name).tolist() for name in _STATE}}

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> BettingStack:
        """A state saved by :meth:`to_dict` (wealths it lacks start anew, as segments of a state saved before them)."""
        saved = {name: state.get(name) if name.startswith("log_") else state[name] for name in _STATE}
        return cls(int(state["rows"]), state["upper"], state["grid_size"], **saved)


def _intervals(
    grid: np.ndarray, log_seg_max: np.ndarray, log_max: np.ndarray, a: np.ndarray, alpha: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of :meth:`BettingStack.intervals` from the running maxima, one level per row."""
    if not ((a > 0) & (a < 1)).all():
        raise ValueError(f"alpha={alpha!r}; pass a level in (0, 1).")
    thr = np.log(1.0 / a)[:, None]
    segs = grid.size - 1
    open_ = log_seg_max < thr
    has = open_.any(axis=1)
    first = np.where(has, np.argmax(open_, axis=1), np.argmin(log_seg_max, axis=1))
    last = np.where(has, segs - 1 - np.argmax(open_[:, ::-1], axis=1), first)
    lo, hi = grid[first], grid[last + 1]
    # grid points kept: inside already, except after moments batches (not monotone)
    kept = log_max < thr
    any_kept = kept.any(axis=1)
    k_first, k_last = np.argmax(kept, axis=1), segs - np.argmax(kept[:, ::-1], axis=1)
    lo = np.where(any_kept, np.minimum(lo, grid[k_first]), lo)
    hi = np.where(any_kept, np.maximum(hi, grid[k_last]), hi)
    return lo, hi


def update_counts_together(stacks: Sequence[BettingStack], successes: Sequence[Any], trials: Sequence[Any]) -> None:
    """Bet on one batch of counts in several stacks at once, as :meth:`BettingStack.update_counts` on each.

    The stacks' rows are put one after the other, updated by one numpy expression, and
    each stack then holds views of its rows of the result. Many small stacks (a
    monitor's boxes, a few sequences each) then cost about what one large one does: the
    work of a batch is the arithmetic over every row and grid point, not one Python call
    per stack.

    Parameters
    ----------
    stacks : sequence of BettingStack
        With the same ``upper`` (1) and ``grid_size``.
    successes, trials : sequence of array-like
        One array of shape ``(stack.rows,)`` per stack.

    Examples
    --------
    >>> a, b, c = BettingStack(2, grid_size=50), BettingStack(1, grid_size=50), BettingStack(1, grid_size=50)
    >>> update_counts_together([a, b], [[3, 4], [5]], [[10, 10], [10]])
    >>> c.update_counts([5], [10])
    >>> bool((b.log_max == c.log_max).all()), a.n.tolist()
    (True, [10, 10])
    """
    stacks = list(stacks)
    if not stacks:
        return
    whole = BettingStack.concat(stacks)
    whole.update_counts(
        np.concatenate([np.asarray(k, dtype=float).reshape(-1) for k in successes]),
        np.concatenate([np.asarray(n, dtype=float).reshape(-1) for n in trials]),
    )
    start = 0
    for st in stacks:
        rows = slice(start, start + st.rows)
        for name in _STATE[1:]:  # all but alpha_bet, which the update leaves as it was
            setattr(st, name, getattr(whole, name)[rows])
        start += st.rows


def intervals_together(stacks: Sequence[BettingStack], alphas: Sequence[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:meth:`BettingStack.intervals` of several stacks with one grid (one level per row each), read at once."""
    stacks = list(stacks)
    if not stacks:
        return []
    if len({(s.upper, s.grid_size) for s in stacks}) > 1:
        raise ValueError("the stacks differ in upper or grid_size; only stacks with the same grid are read together.")
    a = np.concatenate([_rows(al, "alpha", s.rows) for s, al in zip(stacks, alphas, strict=True)])
    seg, top = (np.concatenate([getattr(s, name) for s in stacks]) for name in ("log_seg_max", "log_max"))
    lo, hi = _intervals(stacks[0].grid, seg, top, a, alphas)
    cuts = np.cumsum([s.rows for s in stacks])[:-1]
    return list(zip(np.split(lo, cuts), np.split(hi, cuts), strict=True))


# ----------------------------------------------------------------------------------------
# One look: a fixed sample read once (an audit), not a sequence read at every time.
# ----------------------------------------------------------------------------------------

#: Rows per block of the (rows x grid) wealth matrix, to bound memory on large samples.
_BLOCK = 2048


def _past_mean_var(x: np.ndarray, upper: float) -> tuple[np.ndarray, np.ndarray]:
    """Before each row, the running mean and variance of the rows before it (prior 1/2 and 1/4, in units of upper)."""
    i = np.arange(1, x.size + 1, dtype=float)
    past_sum = np.concatenate([[0.0], np.cumsum(x)[:-1]])
    mean = (0.5 * upper + past_sum) / i  # mean before row i (1-based), the prior counted as one row
    sq = np.concatenate([[0.0], np.cumsum((x - mean) ** 2)[:-1]])
    return mean, (0.25 * upper**2 + sq) / i


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r}; pass a level in (0, 1).")


def fixed_sample_interval(
    x: Any, alpha: float = 0.05, *, upper: float = 1.0, grid_size: int = GRID_SIZE
) -> tuple[float, float]:
    """Confidence interval for the mean of a fixed sample in ``[0, upper]``, read once.

    Waudby-Smith and Ramdas (2024, section 5, "betting confidence intervals"): when the
    sample size ``n`` is fixed in advance and the interval is read once, the bets are tuned
    for ``n`` (``lambda_i = sqrt(2 log(2 / alpha) / (n sigma2_{i-1}))``, no ``log t`` factor
    that pays for looking at every ``t``) and the wealth is read at ``n`` only, not its
    running maximum. Markov's inequality at the one time ``n`` gives the guarantee:
    ``P(K_n(m) >= 1 / alpha) <= alpha`` at the true mean ``m``, for independent rows with
    mean ``m`` and bets chosen from the past rows. The hedged wealth is
    ``(K+ + K-) / 2`` (their sum, not their maximum: one look needs no running maximum).
    Each bet is truncated at ``3/4`` of the reciprocal range (their choice for intervals),
    so ``K+`` falls and ``K-`` rises with ``m``; on a grid segment ``[m_j, m_j+1]`` the hedged
    wealth is then at least ``(K+(m_j+1) + K-(m_j)) / 2``, a segment where that reaches
    ``1 / alpha`` holds no kept candidate, and the interval is the hull of the other
    segments (exact, whatever the grid). For a sequence watched over time (a monitor)
    use :class:`BettingStack`.

    Parameters
    ----------
    x : array-like of shape (n,)
        Observations in ``[0, upper]``, in the order they were drawn.
    alpha : float, default=0.05
        One minus the level; the bets are tuned for it.
    upper : float, default=1.0
        Known upper bound of the observations.
    grid_size : int, default=GRID_SIZE
        Grid steps over ``[0, upper]``.

    Returns
    -------
    tuple of float
        ``(lower, upper)``; ``(0, upper)`` without observations.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).binomial(1, 0.3, 100)
    >>> st = BettingStack()  # the sequence, read at every row
    >>> for xi in x:
    ...     st.update_values([xi])
    >>> lo, hi = fixed_sample_interval(x, 0.05)
    >>> seq_lo, seq_hi = st.intervals(0.05)
    >>> bool(lo < 0.3 < hi), bool(hi - lo < seq_hi[0] - seq_lo[0])
    (True, True)
    """
    _check_alpha(alpha)
    x = np.asarray(x, dtype=float).ravel()
    probe = BettingStack(upper=upper, grid_size=grid_size)  # validates upper and grid_size
    probe._check_range(x)
    m, cap_plus, cap_minus = _grid_caps(float(upper), int(grid_size), _ONE_LOOK_TRUNCATION)
    if x.size == 0:
        return (0.0, float(upper))
    _, var = _past_mean_var(x, upper)
    lam = np.sqrt(2.0 * np.log(2.0 / alpha) / (x.size * var))
    log_plus, log_minus = np.zeros_like(m), np.zeros_like(m)
    for start in range(0, x.size, _BLOCK):
        xb, lb = x[start : start + _BLOCK, None], lam[start : start + _BLOCK, None]
        log_plus += np.log1p(np.minimum(lb, cap_plus) * (xb - m)).sum(0)
        log_minus += np.log1p(-np.minimum(lb, cap_minus) * (xb - m)).sum(0)
    # K+ falls and K- rises with m, so on a grid segment [m_j, m_j+1] the hedged wealth
    # (K+ + K-) / 2 is at least (K+(m_j+1) + K-(m_j)) / 2: where that reaches 1 / alpha the
    # whole segment is rejected; the interval is the hull of the other segments.
    low = np.logaddexp(log_plus[1:], log_minus[:-1]) + _LOG_HALF
    return _hull(m, low < np.log(1.0 / alpha), np.maximum(log_plus, log_minus))


def prediction_powered_interval(
    num: Any,
    den: Any,
    num_proxy: Any,
    den_proxy: Any,
    num_mean: float,
    den_mean: float,
    alpha: float = 0.05,
    *,
    grid_size: int = GRID_SIZE,
    population: float | None = None,
) -> tuple[float, float]:
    """Confidence interval for a rate ``E[num] / E[den]`` from labeled rows and a model's proxies, read once.

    The rate ``theta`` (TPR: ``num = y_pred y``, ``den = y``) is the root of
    ``E[num - theta den] = 0`` over the audited rows. A model gives for every row, labeled
    or not, proxies ``num_proxy``, ``den_proxy`` (its expectation of ``num`` and ``den``
    given the score), whose means over all audited rows, ``num_mean`` and ``den_mean``, are
    known exactly. For each candidate ``theta`` a labeled row gives (prediction-powered
    e-values, Csillag et al. 2025; anytime-valid PPI, Kilian et al. 2025)::

        x_i(theta) = (num_i - theta den_i) - kappa_i (num_proxy_i - theta den_proxy_i)
                     + kappa_i (num_mean - theta den_mean)

    whose mean is ``E[num - theta den]`` whatever the proxies are, because the labeled
    rows are drawn at random from the audited rows (so the proxies of a labeled row
    average ``num_mean``, ``den_mean``): it is 0 at the true rate only. The proxies can be
    badly calibrated, or wrong: the guarantee does not depend on them, only the width
    does (good proxies leave ``x`` a small variance). ``kappa_i`` in ``[0, 1]`` (PPI++'s
    power tuning) is the past rows' regression slope of ``num - theta den`` on its proxy
    at the past estimate of ``theta``, shrunk towards 0 (no proxy) with few rows; bets
    ``lambda_i`` are tuned for the fixed sample, from the past rows, as in
    :func:`fixed_sample_interval`. With ``0 <= num <= den <= 1`` and
    ``0 <= num_proxy <= den_proxy <= 1``, ``x_i(theta)`` lies in
    ``[-low_i(theta), high_i(theta)]`` with ``low_i = theta + kappa_i (1 - theta) - kappa_i
    (num_mean - theta den_mean)`` and ``high_i = 1 - theta + kappa_i theta + kappa_i (num_mean -
    theta den_mean)``, for any labels. On each grid segment ``[theta_j, theta_j+1]`` the bets
    are one (truncated at 3/4 of the reciprocal of the larger end's bound), so there each
    gambler's log-wealth is concave in ``theta`` (a sum of logs of linear functions) and at
    least its smaller end value: a segment where ``(min K+ + min K-) / 2`` reaches ``1 /
    alpha`` holds no kept candidate, and the interval is the hull of the other segments.
    Markov's inequality at the one look gives the level.

    Parameters
    ----------
    num, den : array-like of shape (n,)
        Of each labeled row (0/1, ``num <= den``), in the order the rows were drawn.
    num_proxy, den_proxy : array-like of shape (n,)
        The proxies of the labeled rows, in ``[0, 1]`` with ``num_proxy <= den_proxy``.
    num_mean, den_mean : float
        The proxies' means over all audited rows (labeled and unlabeled).
    alpha : float, default=0.05
        One minus the level.
    grid_size : int, default=GRID_SIZE
        Grid steps over ``[0, 1]``.
    population : float, optional
        The number ``N`` of audited rows (labeled and unlabeled) the labeled rows were drawn
        from without replacement: the rate is then that of these ``N`` rows, and the
        interval shrinks to it as the labels cover them (Waudby-Smith & Ramdas 2020,
        "Confidence sequences for sampling without replacement"). Given the past rows,
        row ``i``'s ``x_i(theta)`` has mean ``mu_i(theta)``, the mean of the rows not yet
        drawn, known from the past rows and the proxies' totals and linear in ``theta``;
        the bets are on ``x_i - mu_i``. A ``theta`` under which some ``mu_i`` lies beyond
        every value ``x_i`` can take is impossible and rejected outright. The labeled rows
        are put in a random order (seeded, independent of the data) first, so that a
        uniformly random subset in that order is a sequential draw without replacement.
        Without it (default), rows are independent draws (sampling with replacement, or
        an infinite population).

    Returns
    -------
    tuple of float
        ``(lower, upper)``.

    Examples
    --------
    Accuracy (``den = 1``) with 30 labels and calibrated scores on 10,000 rows:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=10_000)
    >>> y = (rng.uniform(size=s.size) < s).astype(float)
    >>> p = np.where(s >= 0.5, s, 1 - s)  # P(correct | score), the proxy of num = 1[y = y_pred]
    >>> truth, lab = np.mean(y == (s >= 0.5)), rng.choice(s.size, 30, replace=False)
    >>> lo, hi = prediction_powered_interval((y == (s >= 0.5))[lab], np.ones(30), p[lab], np.ones(30), p.mean(), 1.0)
    >>> bool(lo < truth < hi), bool(hi - lo < 0.5)
    (True, True)

    Labels on 9,000 of the 10,000 rows, as a sample without replacement from them:

    >>> lab = rng.choice(s.size, 9000, replace=False)
    >>> lo, hi = prediction_powered_interval((y == (s >= 0.5))[lab], np.ones(9000), p[lab], np.ones(9000), p.mean(),
    ...                                      1.0, population=s.size)
    >>> bool(lo < truth < hi), bool(hi - lo < 0.02)
    (True, True)
    """
    _check_alpha(alpha)
    arrays = [np.asarray(v, dtype=float).ravel() for v in (num, den, num_proxy, den_proxy)]
    A, B, a, b = arrays
    if len({v.size for v in arrays}) != 1:
        raise ValueError(f"num, den, num_proxy, den_proxy have lengths {[v.size for v in arrays]}; pass one per row.")
    eps = 1e-12
    ordered = ((0.0, A), (A, B), (B, 1.0), (0.0, a), (a, b), (b, 1.0))  # each pair: smaller <= larger, on every row
    if not (np.isfinite(np.concatenate(arrays)).all() and all(np.all(x <= y + eps) for x, y in ordered)):
        raise ValueError("need 0 <= num <= den <= 1 and 0 <= num_proxy <= den_proxy <= 1 on every row.")
    if not (0 - eps <= num_mean <= den_mean + eps and den_mean <= 1 + eps):
        raise ValueError(f"num_mean={num_mean!r}, den_mean={den_mean!r}; need 0 <= num_mean <= den_mean <= 1.")
    _check_grid(grid_size)
    theta = np.linspace(0.0, 1.0, grid_size + 1)
    n = A.size
    if n == 0:
        return (0.0, 1.0)
    if population is not None:
        if not population >= n:
            raise ValueError(f"population={population!r}; pass the number of audited rows, at least the {n} labeled.")
        order = np.random.default_rng(0).permutation(n)  # a random subset in a random order: drawn one by one
        A, B, a, b = A[order], B[order], a[order], b[order]
    kappa, lam = _pp_bets(A, B, a, b, num_mean, den_mean, alpha)
    u = A - kappa * (a - num_mean)
    v = B - kappa * (b - den_mean)
    m0 = m1 = None
    if population is not None:  # x_i(theta) - mu_i(theta) = (u - m0) - theta (v + m1)
        past = [np.concatenate([[0.0], np.cumsum(z)[:-1]]) for z in (A, B, a, b)]
        left = population - np.arange(n)  # rows not yet drawn, this one included
        m0 = (-past[0] - kappa * (population * num_mean - past[2])) / left + kappa * num_mean
        m1 = (past[1] + kappa * (population * den_mean - past[3])) / left - kappa * den_mean
        u, v = u - m0, v + m1
    # Bounds of x_i(theta) for any labels: [-low_i(theta), high_i(theta)], linear in theta.
    # One bet per segment [theta_j, theta_j+1] (truncated at both ends' bounds), so that on
    # the segment the log-wealth is concave in theta.
    lp0, lp1, lm0, lm1 = (np.zeros(grid_size) for _ in range(4))
    # Every (row, grid point) quantity is computed once, by the same operations on the same
    # numbers as the formulas of low_i, high_i (the docstring's) and x (so the same floats): a segment's
    # ends are neighbouring grid points, the term kappa (num_mean - theta den_mean) is shared
    # by both bounds, products of a row's value and the grid are outer products (faster than
    # broadcasting an (n, 1) column), and buffers are reused.
    one_minus, centred = 1.0 - theta, num_mean - theta * den_mean
    impossible = np.zeros(grid_size, dtype=bool)
    for start in range(0, n, _BLOCK):
        sl = slice(start, start + _BLOCK)
        k, lb = kappa[sl], lam[sl, None]
        shared = np.multiply.outer(k, centred)  # kappa (num_mean - theta den_mean)
        ends = np.multiply.outer(k, one_minus)
        ends += theta
        ends -= shared  # low_i = theta + kappa (1 - theta) - kappa (num_mean - theta den_mean) at every grid point
        mu = None if m0 is None else m0[sl, None] + np.multiply.outer(m1[sl], theta)
        if mu is not None:  # x - mu lies in [-(low + mu), high - mu]; a bound below 0 makes theta impossible
            ends += mu
            impossible |= ((ends[:, :-1] < -1e-9) & (ends[:, 1:] < -1e-9)).any(0)
            np.maximum(ends, 1e-12, out=ends)
        low = np.maximum(ends[:, :-1], ends[:, 1:])
        ends = np.multiply.outer(k, theta, out=ends)
        ends += one_minus
        ends += shared  # high_i = 1 - theta + kappa theta + kappa (num_mean - theta den_mean) at every grid point
        if mu is not None:
            ends -= mu
            impossible |= ((ends[:, :-1] < -1e-9) & (ends[:, 1:] < -1e-9)).any(0)
            np.maximum(ends, 1e-12, out=ends)
        high = np.maximum(ends[:, :-1], ends[:, 1:])
        with np.errstate(divide="ignore"):
            bp = np.minimum(np.divide(_ONE_LOOK_TRUNCATION, low, out=low), lb, out=low)
            nbm = np.negative(np.minimum(np.divide(_ONE_LOOK_TRUNCATION, high, out=high), lb, out=high), out=high)
        x = np.subtract(u[sl, None], np.multiply.outer(v[sl], theta, out=shared), out=shared)
        x0, x1 = x[:, :-1], x[:, 1:]
        buf = np.empty_like(bp)
        for acc, bet, xs in ((lp0, bp, x0), (lp1, bp, x1), (lm0, nbm, x0), (lm1, nbm, x1)):
            acc += np.log1p(np.multiply(bet, xs, out=buf), out=buf).sum(0)
    # On a segment each gambler's log-wealth is concave in theta, so at least its smaller
    # end value: where (min K+ + min K-) / 2 reaches 1 / alpha the whole segment is rejected.
    low = np.logaddexp(np.minimum(lp0, lp1), np.minimum(lm0, lm1)) + _LOG_HALF
    return _hull(theta, (low < np.log(1.0 / alpha)) & ~impossible, np.maximum(lp0, lm0))


def _hull(grid: np.ndarray, open_segment: np.ndarray, badness: np.ndarray) -> tuple[float, float]:
    """The hull of the grid segments ``[grid[j], grid[j + 1]]`` not wholly rejected.

    ``badness`` (per segment, or per grid point) picks the least rejected segment when
    every one is rejected (probability <= alpha): the interval is then one segment.
    """
    segs = np.flatnonzero(open_segment)
    if segs.size == 0:
        segs = np.array([int(np.argmin(badness[: grid.size - 1]))])
    return (float(grid[segs[0]]), float(grid[segs[-1] + 1]))


def _pp_bets(
    A: np.ndarray, B: np.ndarray, a: np.ndarray, b: np.ndarray, num_mean: float, den_mean: float, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Predictable ``kappa_i`` and ``lambda_i`` of :func:`prediction_powered_interval`, from rows before ``i``."""
    n = A.size
    kappa, lam = np.empty(n), np.empty(n)
    # sums of the past rows: those of the data are exclusive cumulative sums (added in row order,
    # so the same floats as a running sum); those of u and v read the past bets, so this loop is
    # sequential, and runs per rate: it keeps plain floats, not numpy scalars
    data = np.stack([A, B, a, b, A * a, A * b, B * a, B * b, a * a, a * b, b * b], axis=1)
    past = np.vstack([np.zeros((1, data.shape[1])), np.cumsum(data, axis=0)[:-1]])
    su = sv = suu = suv = svv = 0.0
    log_term = 2.0 * np.log(2.0 / alpha)
    for i, (Ai, Bi, ai, bi, sA, sB, sa, sb, sAa, sAb, sBa, sBb, saa, sab, sbb) in enumerate(
        np.hstack([data[:, :4], past]).tolist()
    ):
        k = float(i)  # rows before this one
        est = min(max((su + 0.5) / (sv + 1.0), 0.0), 1.0)  # past estimate of theta, prior 1/2
        if k >= 2:
            # centred sums of z = A - est B and f = a - est b over the past rows
            zf = sAa - est * (sAb + sBa) + est**2 * sBb - (sA - est * sB) * (sa - est * sb) / k
            ff = saa - 2 * est * sab + est**2 * sbb - (sa - est * sb) ** 2 / k
            kap = min(max(zf / (ff + 0.5), 0.0), 1.0)  # ridge 0.5: shrunk towards no proxy with few rows
        else:
            kap = 0.0
        xx = suu - 2 * est * suv + est**2 * svv - (su - est * sv) ** 2 / max(k, 1.0)
        var = (0.25 + max(xx, 0.0)) / (k + 1.0)
        kappa[i], lam[i] = kap, np.sqrt(log_term / (n * var))
        ui, vi = Ai - kap * (ai - num_mean), Bi - kap * (bi - den_mean)
        su += ui
        sv += vi
        suu += ui * ui
        suv += ui * vi
        svv += vi * vi
    return kappa, lam
