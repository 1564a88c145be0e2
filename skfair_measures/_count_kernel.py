"""Compiled counting of integer (group, y_true, y_pred) rows into a confusion tensor.

The integer fast path of :func:`skfair_measures._stats.check_inputs` imports this
module only for large inputs, and only when numba is installed (the ``bayes`` extra
brings it); otherwise it counts with NumPy as before. Why compiled code and not a
library: no library counts a 3-D ``(group, y_true, y_pred)`` tensor in one pass over
three arrays. NumPy needs a flat cell index first (four elementwise passes over the
rows, more than the ``np.bincount`` itself), while here one pass bounds the three
arrays and one pass counts each row straight into its cell.

``cache=True`` keeps the compiled kernels on disk (numba's cache next to this file, or
its user-wide cache when that is read-only): only the first call ever for a combination
of dtypes compiles; later processes load it. ``nogil=True``: the loops release the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bounds", "count", "float_label_codes", "level_cells", "score_moments", "weighted_cells"]


@njit(cache=True, nogil=True)
def bounds(g: np.ndarray, t: np.ndarray, p: np.ndarray) -> tuple:  # pragma: no cover - compiled by numba
    """Smallest and largest value of each of three non-empty arrays of equal length, in one pass.

    Returns ``(g_lo, g_hi, t_lo, t_hi, p_lo, p_hi)``, each in its array's dtype.
    """
    g_lo = g_hi = g[0]
    t_lo = t_hi = t[0]
    p_lo = p_hi = p[0]
    for i in range(g.size):
        a, b, c = g[i], t[i], p[i]
        g_lo, g_hi = min(g_lo, a), max(g_hi, a)
        t_lo, t_hi = min(t_lo, b), max(t_hi, b)
        p_lo, p_hi = min(p_lo, c), max(p_hi, c)
    return g_lo, g_hi, t_lo, t_hi, p_lo, p_hi


@njit(cache=True, nogil=True)
def count(  # pragma: no cover - compiled by numba
    g: np.ndarray, g_lo: int, t: np.ndarray, p: np.ndarray, lo: int, n_c: int, flat: np.ndarray
) -> None:
    """Add one to ``flat[((g - g_lo) * n_c + t - lo) * n_c + p - lo]`` for every row, in one pass.

    ``flat`` is the C-ordered ``(n_groups, n_c, n_c)`` tensor, raveled; every value must
    lie in the ranges it covers (the caller takes them from :func:`bounds`). The offsets
    are taken in 64-bit integers, so narrow and unsigned 32-bit types do not wrap;
    ``uint64`` is not passed here (its difference with a signed bound would be a float).
    """
    n_cc = n_c * n_c
    for i in range(g.size):
        # products independent of each other, and an unsigned index (no negative-index wraparound)
        flat[np.uint64((g[i] - g_lo) * n_cc + (t[i] - lo) * n_c + (p[i] - lo))] += 1


@njit(cache=True, nogil=True)
def weighted_cells(  # pragma: no cover - compiled by numba
    g: np.ndarray, g_lo: int, t: np.ndarray, p: np.ndarray, lo: int, k: int, w: np.ndarray, out: np.ndarray
) -> None:
    """Per cell ``((g - g_lo) * k + t - lo) * k + p - lo``: rows, sum of ``w``, of ``w**2``, rows unlike its first.

    ``out`` has shape ``(cells, 4)`` and starts at zero; every value must lie in the
    ranges it covers (codes with ``g_lo = lo = 0``, or raw values with the bounds of
    :func:`bounds`, as :func:`count` takes them). The weighted confusion counts: the
    rows and summed weight of every cell for the point value; the summed squared weight
    and whether a cell's weights all match for the weighted bootstrap's per-cell draws.
    No flat cell index (NumPy's three elementwise passes) nor a bincount per sum. The
    weights are added in row order, as ``np.bincount`` adds them: the same sums to the
    last bit.
    """
    kk = k * k
    first = np.empty(out.shape[0])
    for i in range(g.size):
        c = np.uint64((g[i] - g_lo) * kk + (t[i] - lo) * k + (p[i] - lo))
        x = w[i]
        if out[c, 0] == 0.0:
            first[c] = x
        out[c, 0] += 1.0
        out[c, 1] += x
        out[c, 2] += x * x
        out[c, 3] += x != first[c]


@njit(cache=True, nogil=True)
def level_cells(  # pragma: no cover - compiled by numba
    g: np.ndarray, t: np.ndarray, p: np.ndarray, k: int, w: np.ndarray, levels: np.ndarray, out: np.ndarray
) -> bool:
    """Add one to ``out[(g * k + t) * k + p, j]`` where ``w == levels[j]``; False at the first other weight.

    ``levels`` is sorted, not empty and short (a linear scan per row). The exact atoms
    of weights that take few values (class or frequency weights): rows per (cell,
    weight) in one pass, where factorising the weights and then the (cell, weight) pairs
    takes two hash passes. The scan counts the levels below the weight, without a branch
    on the comparison: a binary search's data-dependent branches cost several times
    more on random weights (measured 7 ms against 2.7 ms per million rows, 2 levels).
    """
    kk = k * k
    n_levels = levels.size
    for i in range(g.size):
        x = w[i]
        at = 0
        for j in range(n_levels):
            at += levels[j] < x
        if at == n_levels or levels[at] != x:
            return False
        out[np.intp(g[i]) * kk + np.intp(t[i]) * k + np.intp(p[i]), at] += 1
    return True


@njit(cache=True, nogil=True)
def float_label_codes(x: np.ndarray, out: np.ndarray) -> tuple:  # pragma: no cover - compiled by numba
    """Codes of a float label column whose values are small integers, a missing value (NaN) a code of its own.

    Returns ``(ok, lo, hi)``. When every non-missing value is an integer and
    ``hi - lo + 2`` codes fit ``out``'s type, ``out[i] = x[i] - lo`` and
    ``out[i] = hi - lo + 1`` for NaN, and ``ok`` is True; otherwise ``out`` is left
    unfinished and ``ok`` is False (the caller factorises instead). ``lo > hi`` when
    every value is missing. Two passes (bounds, then codes), against a hash per row in
    a factorisation: the labels of an audit frame, missing on its unlabeled rows.
    """
    lo, hi = np.inf, -np.inf
    for i in range(x.size):
        v = x[i]
        if v != v:
            continue
        if v != np.floor(v):
            return False, 0.0, 0.0
        lo, hi = min(lo, v), max(hi, v)
    if lo > hi:
        lo = hi = 0.0
    if hi - lo + 1 >= np.iinfo(out.dtype).max:
        return False, lo, hi
    missing = hi - lo + 1
    for i in range(x.size):
        v = x[i]
        out[i] = missing if v != v else v - lo
    return True, lo, hi


@njit(cache=True, nogil=True, inline="always")
def _scored(cell: int, score: float, threshold: float) -> tuple:  # pragma: no cover - compiled by numba
    """A score (0 when missing or outside [0, 1]), its cell ``2 * cell + (score >= threshold)``, whether it was bad."""
    x = np.float64(score)
    bad = not (x >= 0.0 and x <= 1.0)
    x = 0.0 if bad else x
    return x, np.intp(cell) * 2 + (1 if x >= threshold else 0), bad


@njit(cache=True, nogil=True)
def score_moments(  # pragma: no cover - compiled by numba
    cell: np.ndarray, s: np.ndarray, threshold: float, w: np.ndarray, out: np.ndarray
) -> None:
    """Per cell ``2 * cell + (score >= threshold)``: the rows and moments of the scores, in one pass.

    ``out`` has shape ``(2 * cells, 8)`` and starts at zero; its columns: rows, sum w,
    sum w s, sum w^2, sum w^2 s, sum w^2 s^2, rows with a bad weight (missing, negative
    or infinite), rows with a bad score (missing or outside [0, 1]). A bad score counts
    as 0 and a missing weight as 0 (they are refused afterwards, with the column named).
    ``w`` empty: every weight is 1. The terms are formed and added in row order as the
    NumPy path forms them (``w * s``, ``w * w``, ``w**2 * s``, ``w**2 * (s * s)``, one
    ``np.bincount`` each): the same sums to the last bit.
    """
    if w.size == 0:  # three sums per row instead of six; the others follow (w = 1)
        for i in range(cell.size):
            x, c, bad_s = _scored(cell[i], s[i], threshold)
            out[c, 0] += 1.0
            out[c, 2] += x
            out[c, 5] += x * x
            out[c, 7] += bad_s
        out[:, 1] = out[:, 0]
        out[:, 3] = out[:, 0]
        out[:, 4] = out[:, 2]
        return
    for i in range(cell.size):
        x, c, bad_s = _scored(cell[i], s[i], threshold)
        v = np.float64(w[i])
        bad_w = not (np.isfinite(v) and v >= 0.0)
        if v != v:
            v = 0.0
        v2 = v * v
        out[c, 0] += 1.0
        out[c, 1] += v
        out[c, 2] += v * x
        out[c, 3] += v2
        out[c, 4] += v2 * x
        out[c, 5] += v2 * (x * x)
        out[c, 6] += bad_w
        out[c, 7] += bad_s
