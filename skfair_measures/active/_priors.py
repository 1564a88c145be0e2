"""Beta priors per group: uniform, or informed by the model's own scores (seed 002, section 2.4).

The chapter's informative prior is ``Beta(N0 s, N0 (1 - s))`` with ``s`` the mean
score-based expectation of the group's rate and ``N0 = 2``. With an overconfident
model (``s`` near 1) its second parameter goes to 0 and the density piles up at 1:
a few correct labels then make a group look perfect with almost no uncertainty, and
Thompson sampling stops visiting it. We therefore add the scores' pseudo-counts to a
uniform ``Beta(base, base)`` floor, ``Beta(base + n0 s, base + n0 (1 - s))``, and
cap ``n0``, the number of labels the scores are worth (see ``MAX_PRIOR_STRENGTH``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_PRIOR_STRENGTH", "PRIORS", "beta_prior"]

PRIORS = ("uniform", "informative")

#: Largest number of labels the model's scores may be worth. Chosen by simulation
#: (benchmarks/reproduce_ji2020_active.py, docs/reproduction_active.md): with
#: GaussianNB's near-1 scores on scikit-learn's digits, the rate at which
#: ``worst_group(prob=0.95)`` stops on a wrong class stays at the level of the uniform
#: prior up to this strength and grows beyond it.
MAX_PRIOR_STRENGTH = 10.0

_EDGE = 1e-6  # keeps a face-value prior (base 0) proper when a score mean is exactly 0 or 1


def beta_prior(
    mean: np.ndarray, kind: str = "informative", *, strength: float = 2.0, base: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Beta parameters per group (or per group and score bin).

    Parameters
    ----------
    mean : ndarray
        What the model's scores expect the rate to be, per cell (NaN where the
        scores say nothing, e.g. an empty bin: the uniform floor is used there).
    kind : {"informative", "uniform"}
        ``"uniform"`` ignores ``mean``: ``Beta(base, base)``.
    strength : float, default=2.0
        Labels the scores are worth (``n0``), at most ``MAX_PRIOR_STRENGTH``.
    base : float, default=1.0
        Pseudo-counts of the uniform floor on each side; 0 gives the chapter's
        face-value prior ``Beta(n0 s, n0 (1 - s))``.

    Returns
    -------
    alpha, beta : ndarray
        Same shape as ``mean``.

    Examples
    --------
    >>> a, b = beta_prior(np.array([0.75, 1.0]), strength=2.0)
    >>> a.tolist(), b.tolist()
    ([2.5, 3.0], [1.5, 1.0])
    """
    if kind not in PRIORS:
        raise ValueError(f"prior={kind!r} is not known; use one of {PRIORS}.")
    if not 0.0 <= strength <= MAX_PRIOR_STRENGTH:
        raise ValueError(
            f"prior_strength={strength!r} must be in [0, {MAX_PRIOR_STRENGTH:g}]: the scores may count as at most "
            f"{MAX_PRIOR_STRENGTH:g} labels, so that an overconfident model cannot mislead the search "
            "(see docs/active.md)."
        )
    if base < 0 or (kind == "uniform" and base == 0) or base + strength == 0:
        raise ValueError(f"prior_base={base!r} must be >= 0, and > 0 for a uniform prior or prior_strength=0.")
    mean = np.asarray(mean, dtype=float)
    if kind == "uniform":
        return np.full(mean.shape, float(base)), np.full(mean.shape, float(base))
    lo = _EDGE if base == 0 else 0.0
    s = np.clip(np.where(np.isnan(mean), 0.5, mean), lo, 1.0 - lo)
    n0 = np.where(np.isnan(mean), 0.0 if base > 0 else strength, strength)
    return base + n0 * s, base + n0 * (1.0 - s)
