"""Can a proxy calibration be trusted? Checks of one HOC fit, as data.

HOC (:mod:`._hoc`) reads the agreement of three or more proxies as accuracy. It
assumes that their guesses are independent and identically distributed given the
true attribute (Requirement 4.3 of Zhu et al. 2023). When that fails (proxies of
different strength, or errors that move together), the moment equations may have
no valid solution, and the solver returns the nearest ``(T, p)`` it can find: an
estimate that can be far off while its bootstrap interval stays narrow. These
checks catch that:

* ``moments``: a parametric-bootstrap test of the fitted moments. The observed
  residual (the solver's loss) is compared with the residuals of refits on pattern
  counts simulated from the fitted ``(T, p)``, where the assumptions hold by
  construction. With two groups and three proxies the model is exactly identified
  (three equations, three unknowns) and the residual is zero whenever a valid
  solution exists, so this test catches exactly the moment patterns that no
  conditionally independent, identical proxies can produce. Independence itself
  cannot be tested further there; a fourth proxy or a third group makes it
  testable.
* ``diagonal``: every row of ``T`` is dominated by its diagonal, i.e. each group's
  members are guessed right more often than as any single other group.
* ``prior``: the estimated prior ``p`` against the proxies' own guess shares
  ``P(A~)``. If ``p[a] > 2 P(A~ = a)``, the proxies would miss more than half of
  group ``a`` (since ``P(A~ = a) >= p[a] T[a, a]``); if ``p[a] < P(A~ = a) / 2``,
  more than half of the guesses ``a`` would be wrong. Either way the proxies
  would be worse than a coin flip for that group.
* ``conditioning``: the condition number of ``T`` (its inverse amplifies
  estimation error by up to that factor).
* ``informative``: Requirement 4.2 of the paper (see
  :func:`._hoc.check_informativeness`).
* ``dependent`` (:func:`dependent_proxies`, on the proxy columns themselves): two
  columns that determine each other row by row (identical, or the same guesses under
  other names) are one proxy counted twice. Their perfect agreement is read by HOC as
  perfect accuracy (``T`` = identity), whatever the proxy's real accuracy: HOC needs
  conditionally independent proxies, and such a pair gives it no information. There
  is no sound threshold below perfect dependence: near-identical proxies are what very
  accurate, conditionally independent proxies look like, and their few disagreements
  are exactly what HOC reads the errors from (the bootstrap interval shows how few).

Every check reports whether it passed, its numbers and, if it failed, a sentence
saying why; :func:`assess_fit` collects them.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

import numpy as np
from sklearn.utils.validation import check_random_state

from ._hoc import HOCSolution, check_informativeness, fit_transition, moments

__all__ = ["assess_fit", "dependent_proxies", "moment_test"]

# A residual below this is an exact fit up to the solver's tolerance.
_EXACT = 1e-6
# Significance level of the moment test.
MOMENT_ALPHA = 0.01
# p[a] / P(A~ = a) outside [1 / _PRIOR_RATIO, _PRIOR_RATIO] fails the prior check.
_PRIOR_RATIO = 2.0


def _symmetric_counts(m3: np.ndarray, n: float, n_sim: int, rng: Any) -> np.ndarray:
    """Third-order pattern frequencies of ``n_sim`` samples of ``n`` rows, symmetrised."""
    k, probs = m3.shape[0], np.clip(m3.ravel(), 0.0, None)
    sims = rng.multinomial(max(int(round(n)), 1), probs / probs.sum(), size=n_sim).reshape(n_sim, k, k, k)
    perms = itertools.permutations(range(1, 4))
    sym = sum(sims.transpose((0, *p)) for p in perms) / 6.0
    return sym / sym.sum(axis=(1, 2, 3), keepdims=True)


def moment_test(sol: HOCSolution, n_rows: float, *, n_sim: int = 100, random_state: Any = None) -> dict[str, Any]:
    """Parametric-bootstrap test that the fitted ``(T, p)`` explains the observed moments.

    Simulates ``n_sim`` tables of ``n_rows`` rows of three proxies from the fitted
    model (conditionally independent, identical proxies), refits each, and compares
    the observed residual with the simulated ones. The simulation draws one triple
    of proxies; with more proxies the observed moments average several triples and
    vary less, so the test is then conservative (it rejects less often).

    Parameters
    ----------
    sol : HOCSolution
        The fit to test (its ``loss`` is the observed residual).
    n_rows : float
        Number of rows the fit used.
    n_sim : int, default=100
        Simulated tables.
    random_state : int, RandomState instance or None
        Seed of the simulation.

    Returns
    -------
    dict
        ``residual`` (observed), ``residual_null_q95`` (95% quantile of the simulated
        residuals), ``p_value`` and ``passed`` (``p_value >= 0.01`` or an exact fit).

    Examples
    --------
    >>> import numpy as np
    >>> T = np.array([[0.8, 0.2], [0.3, 0.7]]); p = np.array([0.4, 0.6])
    >>> sol = fit_transition(*moments(T, p))                 # an exact fit
    >>> moment_test(sol, 5000, n_sim=20, random_state=0)["passed"]
    True
    """
    rng = check_random_state(random_state)
    sims = _symmetric_counts(moments(sol.T, sol.p)[2], n_rows, n_sim, rng)
    refit = partial(fit_transition, init=(sol.T, sol.p), n_init=1, max_iter=200, tol=1e-12)
    null = np.array([refit(c3.sum(axis=-1).sum(axis=-1), c3.sum(axis=-1), c3).loss for c3 in sims])
    p_value = (1.0 + np.sum(null >= sol.loss)) / (n_sim + 1.0)
    out = {"residual": float(sol.loss), "residual_null_q95": float(np.quantile(null, 0.95)), "p_value": float(p_value)}
    return out | {"n_sim": int(n_sim), "passed": bool(sol.loss <= _EXACT or p_value >= MOMENT_ALPHA)}


def dependent_proxies(codes: np.ndarray, columns: list[Any]) -> dict[str, Any]:
    """Pairs of proxy columns that determine each other row by row: one proxy counted twice.

    Parameters
    ----------
    codes : ndarray of shape (n_samples, n_proxies)
        Group code of every guess (:func:`._proxy_codes.encode_proxies`).
    columns : list
        Column names, for the message.

    Returns
    -------
    dict
        ``pairs`` (the dependent pairs of column names), ``passed`` and, if it failed,
        ``reason``.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0, 0, 1], [1, 1, 1], [0, 0, 0], [1, 1, 0]])
    >>> dependent_proxies(codes, ["a", "b", "c"])["pairs"]
    [('a', 'b')]
    """
    m, k = codes.shape[1], int(codes.max()) + 1 if codes.size else 1
    levels = [np.count_nonzero(np.bincount(codes[:, j], minlength=k)) for j in range(m)]
    pairs = []
    for i, j in itertools.combinations(range(m), 2):
        # a bijection between the guesses of i and j: as many joint values as values of each
        joint = np.count_nonzero(np.bincount(codes[:, i] * k + codes[:, j], minlength=k * k))
        if joint == levels[i] == levels[j]:
            pairs.append((columns[i], columns[j]))
    out: dict[str, Any] = {"passed": not pairs, "pairs": pairs}
    if pairs:
        shown = ", ".join(f"{a!r} and {b!r}" for a, b in pairs[:5]) + (" ..." if len(pairs) > 5 else "")
        out["reason"] = (
            f"the proxy columns {shown} give the same guess on every row (up to renaming): one proxy counted twice. "
            "HOC reads their agreement as accuracy and needs conditionally independent proxies, so such columns give "
            "it no information and T is not identified; drop the copies and use proxies that err independently"
        )
    return out


def _diagonal(T: np.ndarray, groups: list[Any]) -> dict[str, Any]:
    worst = np.where(np.eye(len(T), dtype=bool), -np.inf, T).argmax(axis=1)  # the likeliest wrong guess per group
    bad = [a for a in range(len(T)) if T[a, a] <= T[a, worst[a]]]
    out: dict[str, Any] = {"passed": not bad, "diagonal": np.diag(T).tolist()}
    if bad:
        a = bad[0]
        out["reason"] = (
            f"T is not diagonally dominant: members of group {groups[a]!r} would be guessed as "
            f"{groups[worst[a]]!r} ({T[a, worst[a]]:.2f}) at least as often as right ({T[a, a]:.2f})"
        )
    return out


def _prior(p: np.ndarray, noisy_prior: np.ndarray, groups: list[Any]) -> dict[str, Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = p / noisy_prior
    bad = np.flatnonzero((ratio > _PRIOR_RATIO) | (ratio < 1.0 / _PRIOR_RATIO))
    out: dict[str, Any] = {"passed": not bad.size, "p": p.tolist(), "p_noisy": noisy_prior.tolist()}
    if bad.size:
        a = bad[0]
        what = "miss more than half of that group" if ratio[a] > 1 else "be wrong in more than half of those guesses"
        out["reason"] = (
            f"the estimated share of group {groups[a]!r} ({p[a]:.2f}) is far from the share of rows the "
            f"proxies assign to it ({noisy_prior[a]:.2f}): the proxies would {what}"
        )
    return out


def assess_fit(
    sol: HOCSolution,
    noisy_prior: np.ndarray,
    n_rows: float,
    groups: list[Any],
    *,
    cond_warn: float,
    n_sim: int,
    random_state: Any,
) -> dict[str, Any]:
    """All reliability checks of one HOC fit.

    Parameters
    ----------
    sol : HOCSolution
        The fit.
    noisy_prior : ndarray of shape (K,)
        ``P(A~ = a)``: the proxies' guess shares on the rows of the fit.
    n_rows : float
        Number of rows of the fit.
    groups : list
        Group labels (for the messages).
    cond_warn : float
        Largest acceptable condition number of ``T``.
    n_sim : int
        Simulated tables of the moment test (0 skips it).
    random_state : int, RandomState instance or None
        Seed of the moment test.

    Returns
    -------
    dict
        One entry per check (``moments``, ``diagonal``, ``prior``, ``conditioning``,
        ``informative``), each with ``passed``; ``reasons`` (list of str, empty when
        every check passed) and ``passed``.

    Examples
    --------
    >>> import numpy as np
    >>> T = np.array([[0.8, 0.2], [0.3, 0.7]]); p = np.array([0.4, 0.6])
    >>> m1, m2, m3 = moments(T, p)
    >>> out = assess_fit(fit_transition(m1, m2, m3), m1, 5000, ["a", "b"], cond_warn=25, n_sim=20, random_state=0)
    >>> out["passed"], out["reasons"]
    (True, [])
    """
    groups = [g.item() if isinstance(g, np.generic) else g for g in groups]  # 1, not np.int64(1), in messages
    checks: dict[str, Any] = {
        "diagonal": _diagonal(sol.T, groups),
        "prior": _prior(sol.p, np.asarray(noisy_prior, dtype=float), groups),
    }
    if n_sim > 0:
        m = checks["moments"] = moment_test(sol, n_rows, n_sim=n_sim, random_state=random_state)
        if not m["passed"]:
            m["reason"] = (
                f"the fitted moments do not match the proxies' agreement (residual {m['residual']:.2g}, "
                f"p = {m['p_value']:.2g} against fits on data simulated from the model): the proxies are not "
                "independent and identically distributed given the attribute, as HOC assumes"
            )
    info = check_informativeness(sol.T, noisy_prior)
    checks["informative"] = dict(info)
    if not info["passed"]:
        checks["informative"]["reason"] = (
            "T fails Requirement 4.2 of Zhu et al. (2023): some group's proxies do not beat a random guess"
        )
    cond = info["condition_number"]
    checks["conditioning"] = {"passed": bool(cond <= cond_warn), "condition_number": cond}
    if cond > cond_warn:
        checks["conditioning"]["reason"] = (
            f"T is ill-conditioned (condition number {cond:.1f} > cond_warn={cond_warn:g}): inverting it "
            "amplifies estimation error up to that factor"
        )
    reasons = [c["reason"] for c in checks.values() if not c["passed"]]
    return {**checks, "reasons": reasons, "passed": not reasons}
