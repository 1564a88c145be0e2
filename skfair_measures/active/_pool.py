"""Per-group pools of unlabeled rows: taking a random row is O(1).

The rows of each group are put in a random order once (one permutation and one
stable sort when the pool is built); taking a row advances that group's pointer.
So ``ask`` never passes over the rows, whatever the size of the pool.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GroupPools"]


class GroupPools:
    """Unlabeled row indices by group, each group in a random order.

    Parameters
    ----------
    codes : ndarray of int of shape (n_rows,)
        Group code of each row; -1 for rows that can never be asked.
    n_groups : int
        Number of groups.
    rng : numpy.random.Generator
        Source of the random order.

    Examples
    --------
    >>> pools = GroupPools(np.array([0, 1, 0, 1, -1]), 2, np.random.default_rng(0))
    >>> pools.remaining.tolist()
    [2, 2]
    >>> sorted(pools.take(0, 2).tolist())
    [0, 2]
    >>> pools.remaining.tolist()
    [0, 2]
    """

    def __init__(self, codes: np.ndarray, n_groups: int, rng: np.random.Generator):
        perm = rng.permutation(codes.size)
        keep = perm[codes[perm] >= 0]
        self._order = keep[np.argsort(codes[keep], kind="stable")]
        sizes = np.bincount(codes[keep], minlength=n_groups)
        self._end = np.cumsum(sizes)
        self._next = self._end - sizes
        self.sizes = sizes

    @property
    def remaining(self) -> np.ndarray:
        """Rows not yet taken, per group."""
        return self._end - self._next

    def take(self, group: int, n: int = 1) -> np.ndarray:
        """Take up to ``n`` random rows of ``group`` (fewer when it runs out)."""
        start = self._next[group]
        stop = min(start + n, self._end[group])
        self._next[group] = stop
        return self._order[start:stop]
