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

__all__ = ["bounds", "count", "level_cells", "weighted_cells"]


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
