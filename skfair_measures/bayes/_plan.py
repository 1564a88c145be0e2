"""How many labels an audit needs: ``plan_labels``, by simulation of the interval the audit will read.

The question: how many rows must be labeled, and in which groups, so that the interval
of a measure decides ``|Δ| <= eps`` at level ``prob`` with probability ``power``. The
interval is the one the audit will read: with ``method="auto"`` (the default) the labels'
Jeffreys posterior, the interval ``auto`` reports below :data:`~._auto.INTERVAL_MIN_LABELS`
labels per rate and group (:mod:`._auto`); with ``method="guaranteed"`` the guaranteed one.

Decided means the interval lies in ``[-eps, eps]`` (``within``) or wholly outside it
(``exceeds``), the rule of :func:`skfair_measures.verdicts`; the power counted is that of
the *right* decision, the one the guess implies (``within`` when the guessed
``|Δ| <= eps``, else ``exceeds``).

How (a simulation, not a bound): for a number of labels, ``n_sim`` seeded audits are
drawn from the guess, and each runs the very procedure of the interval planned for (the
Jeffreys posterior of :class:`~._bb.BetaBinomial`, or :class:`~._guaranteed.Guaranteed`'s
confidence box, mapped through the measure's operation); the power is the share that
decide rightly. A candidate passes when that share is at least ``power`` plus one
binomial standard deviation of ``n_sim`` audits (the search keeps the first candidate
whose estimate crosses the bar, which picks lucky estimates: without the margin, a plan
from 40 audits reached 0.68 instead of 0.8 in an independent check). The labels are
searched on a doubling grid and then by bisection (to 10% of the labels, so a plan may
be up to 10% above the fewest), with the same seeds at every candidate (common random
numbers, so the power is close to monotone in the labels). The plan's power is then
estimated again on ``n_sim`` fresh audits, and the labels grow by 10% steps until that
estimate reaches ``power``; a plan that cannot (every row labeled) says so: a warning,
``attrs["shortfall"]``, and a line of ``skfair plan``.

Two forms of the guess:

- ``rates`` and ``group_sizes`` (labels only): per group the guessed value of the
  measure's rate and the share of rows in its denominator (``denominator_share``: the
  positive rate for TPR, 1 for accuracy); each labeled row is in the denominator with
  that probability and counts in the numerator with the rate;
- ``scores`` with ``sensitive_features`` (prediction-powered): every audited row's
  score, read as the probability of the positive label. Each simulated audit draws the
  labels of all rows from the scores (the guess is that they are calibrated), labels
  the planned rows of each group (without replacement) and computes the
  prediction-powered guaranteed interval with the other rows' scores. Any measure whose
  base rates are ratios of confusion cells is planned this way.

The interval holds whatever the guess; only the planned power depends on it. With scores,
``auto`` widens its interval to hold the calibration model's estimate; the plan does not
(the widening rarely moves a decision, and the estimate is not simulated).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression

from .._arrays import check_scores
from .._progress import progress_lines
from ..base import ratio_roles
from ..results import check_prob
from ._auto import INTERVAL_MIN_LABELS
from ._bb import BetaBinomial
from ._guaranteed import Guaranteed, QuantileBox, _proxies, _ratio
from ._method import FitData, Rows

__all__ = ["plan_labels"]

_ALLOCATIONS = ("equal", "proportional")


#: Grid steps of the simulated audits' intervals: a fifth of the audit's own, five times faster; a coarser grid
#: rejects whole coarser segments only, so its interval is as wide or wider and the plan errs towards more labels.
PLAN_GRID = 200
#: Draws of the Jeffreys posterior per simulated audit (the audit's own: 4,000): its quantiles to about 0.01.
PLAN_DRAWS = 1000
#: The labels' Jeffreys posterior, the interval auto reports below INTERVAL_MIN_LABELS labels.
_JEFFREYS = BetaBinomial(prior="jeffreys")


def _interval(data: FitData, measure: Any, prob: float, method: str) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    if method == "auto":  # NaN where a group has no labeled row in a rate's denominator: undecided
        fit = _JEFFREYS.group_draws(data, measure.bases, chains=1, draws=PLAN_DRAWS, rng=rng, seed=0)
        return QuantileBox(fit.values, fit.overall).measure_interval(measure, data.groups, prob)
    fit = Guaranteed().group_draws(data, tuple(measure.bases), chains=1, draws=1, rng=rng, seed=0)
    box = fit.confidence
    for rate in [*box.pooled.values(), *(r for rates in box.groups.values() for r in rates)]:
        rate.grid_size = PLAN_GRID
    return box.measure_interval(measure, data.groups, prob)


def _allocate(t: int, sizes: np.ndarray, allocation: str) -> np.ndarray:
    if allocation == "equal":
        return np.minimum(t, sizes)
    share = sizes / sizes.sum()
    return np.minimum(np.maximum(1, np.round(t * share).astype(int)), sizes)


def plan_labels(
    measure: Any,
    *,
    eps: float,
    group_sizes: Mapping[Any, int] | None = None,
    rates: Mapping[Any, float] | None = None,
    denominator_share: Mapping[Any, float] | float = 1.0,
    scores: Any = None,
    sensitive_features: Any = None,
    threshold: float = 0.5,
    prob: float = 0.95,
    power: float = 0.8,
    allocation: str = "equal",
    n_sim: int = 200,
    random_state: int = 0,
    y_true: Any = None,
    method: str = "auto",
    progress: bool | None = None,
    alpha: None = None,
) -> pd.DataFrame:
    """Labels per group for the audit's interval to decide ``|Δ| <= eps`` with probability ``power``.

    Parameters
    ----------
    measure : Measure
        A fairness measure whose base rates are ratios of confusion cells (``fairness.tpr``,
        ``fairness.acc``, ...), with its operation (differences, ratios, composites).
    eps : float
        The tolerance: the audit asks whether the measure lies in ``[-eps, eps]``.
    group_sizes, rates : dict of group to int, dict of group to float, optional
        Labels only: the audited rows per group and the guessed rate of the measure's
        (single) base per group. Give these, or ``scores`` and ``sensitive_features``.
    denominator_share : float or dict of group to float, default=1.0
        With ``rates``: the share of each group's rows in the rate's denominator
        (the guessed positive rate for TPR; 1 for accuracy).
    scores, sensitive_features : array-like of shape (n_rows,), optional
        Prediction-powered: every audited row's score (probability of the positive
        label) and group. The labels are simulated from the scores; predictions are
        ``score >= threshold``.
    threshold : float, default=0.5
        Decision threshold with ``scores``.
    prob : float, default=0.95
        The interval's probability content (its level; ``1 - alpha``).
    power : float, default=0.8
        Probability of the right decision asked for.
    allocation : {"equal", "proportional"}, default="equal"
        Labels the same number of rows in every group (capped at its size), or in
        proportion to the group sizes.
    n_sim : int, default=200
        Simulated audits per candidate number of labels.
    random_state : int, default=0
        Seed of the simulation.
    y_true : array-like of shape (n_rows,), optional
        With ``scores``: the labels known so far (NaN or None where a row is unlabeled).
        The guess then checks the scores' calibration on them: where the labeled rows'
        positive rate departs from their mean score (a binomial test at 1%), the scores are
        recalibrated on them (logistic in the score's logit) before the guess is made, and
        ``attrs["calibration"]`` says so.
    method : {"auto", "guaranteed"}, default="auto"
        The interval the audit will read. ``"auto"``: what ``posterior()`` reports by
        default, the labels' Jeffreys posterior below ``INTERVAL_MIN_LABELS`` (200) labeled
        rows in every rate's denominator and Beta-Binomial's from there, planned by the
        normal approximation; ``"guaranteed"``: the guaranteed interval at every size.
    progress : bool or None, default=None
        Lines on standard error: one per candidate (True), none (False), or (None) from
        the first second on, at most one every two seconds, terminal or not.
    alpha : None
        Removed: the level is ``prob`` (``prob = 1 - alpha``); passing ``alpha`` raises.

    Returns
    -------
    pandas.DataFrame
        Index: the groups and ``"total"``; columns ``rows`` (audited rows), ``labels``
        (rows to label) and ``rate`` (the guessed rate, labels only: NaN with scores).
        ``attrs``: ``power`` (simulated at the plan) and its binomial ``power_sd``,
        ``guess`` (the guessed measure value), ``decision`` (``within`` or ``exceeds``),
        ``eps``, ``prob``, ``target_power``, ``n_sim``, ``allocation``, ``measure`` (its key),
        ``bases`` (the names of its base rates), ``interval``, ``how``, ``method`` (the
        interval planned for), ``normal_labels`` (the labels a normal approximation of
        the difference asks, equal allocation, for comparison), ``calibration``, and
        ``shortfall`` (None, or why the plan's power is below ``power``, also warned).

    Raises
    ------
    ValueError
        When labeling every row does not reach ``power`` (the guess is too close to
        ``eps``), or the arguments do not describe one of the two forms.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> plan = sfm.plan_labels(sfm.msr("fairness.acc"), eps=0.3, group_sizes={"a": 5000, "b": 5000},
    ...                        rates={"a": 0.85, "b": 0.85}, n_sim=30)
    >>> int(plan.loc["total", "labels"]) == int(plan.loc[["a", "b"], "labels"].sum())
    True
    >>> plan.attrs["decision"], plan.attrs["power"] >= 0.8
    ('within', True)
    """
    if alpha is not None:
        raise TypeError(f"plan_labels takes prob= (1 - alpha), not alpha=: pass prob={1 - alpha:g}")
    check_prob(power, "power")
    check_prob(prob, "prob")
    if method not in ("auto", "guaranteed"):
        raise ValueError(f"method={method!r}; pass 'auto' (the interval posterior() reports) or 'guaranteed'.")
    if not eps > 0:
        raise ValueError(f"eps must be positive; got {eps!r}")
    if allocation not in _ALLOCATIONS:
        raise ValueError(f"allocation must be one of {_ALLOCATIONS}; got {allocation!r}")
    if n_sim < 10:
        raise ValueError(f"n_sim must be at least 10 to estimate a power; got {n_sim!r}")
    if measure.ideal != 0.0:
        raise ValueError(
            f"plan_labels decides |Δ| <= eps for measures whose ideal value is 0 (differences); "
            f"{measure.key!r} has ideal {measure.ideal!r} (a ratio?): plan its difference, e.g. "
            "operation='absdiff'"
        )
    for base in measure.bases:
        if not ratio_roles(base).simple:
            raise TypeError(
                f"plan_labels plans the guaranteed interval, which bounds rates of the form "
                f"(cells) / (cells); {base.name!r} is not one"
            )
    if scores is not None:
        if rates is not None or group_sizes is not None:
            raise ValueError(
                "give either scores and sensitive_features (prediction-powered) or group_sizes and "
                "rates (labels only), not both"
            )
        sim = _ScoresSimulation(measure, scores, sensitive_features, threshold, random_state, y_true)
    else:
        if group_sizes is None or rates is None:
            raise ValueError(
                "plan_labels needs group_sizes and rates (labels only) or scores and "
                "sensitive_features (prediction-powered)"
            )
        sim = _RatesSimulation(measure, group_sizes, rates, denominator_share, random_state)
    guess = float(sim.guess)
    if not np.isfinite(guess):
        raise ValueError(
            f"the guessed value of {measure.key} is undefined: a group has no expected row in a rate's "
            f"denominator (groups {list(map(str, sim.groups))}); merge or drop that group, or check the guess"
        )
    within, sizes, say = abs(guess) <= eps, sim.sizes, progress_lines(progress)
    say(f"plan_labels: {n_sim} simulated audits per candidate number of labels ...")
    cache: dict[tuple[int, int], float] = {}
    passes: dict[int, bool] = {}

    def right(n: np.ndarray, i: int) -> bool:
        """Whether audit ``i`` with ``n`` labels per group decides rightly (the rule of ``verdicts``)."""
        lo, hi = sim.interval(n, i, prob, method)
        return (-eps <= lo and hi <= eps) if within else (lo > eps or hi < -eps)

    def passing(t: int) -> bool:
        """Whether ``t`` labels reach the bar; the audits stop once the answer is certain (the same answer)."""
        if t not in passes:
            n, need, hits = _allocate(t, sizes, allocation), int(np.ceil(bar * n_sim - 1e-9)), 0
            for i in range(n_sim):
                hits += right(n, i)
                if hits >= need or hits + n_sim - i - 1 < need:
                    break
            passes[t] = hits >= need
            say(f"plan_labels: {int(n.sum())} labels: {'enough' if passes[t] else 'too few'} ({i + 1} audits)")
        return passes[t]

    def power_at(t: int, first: int = 0) -> float:
        """The share of right decisions at ``t`` labels over the audits ``first`` to ``first + n_sim``."""
        if (t, first) not in cache:
            n = _allocate(t, sizes, allocation)
            cache[t, first] = sum(right(n, i) for i in range(first, first + n_sim)) / n_sim
        return cache[t, first]

    normal = _normal_labels(sim, guess, eps, prob, power, allocation)
    # auto reads Beta-Binomial's interval once every group has INTERVAL_MIN_LABELS rows in each rate's
    # denominator: no need to search the Jeffreys interval beyond that many labels
    switch = _labels_for_denominators(sim, INTERVAL_MIN_LABELS, allocation) if method == "auto" else None
    # the bar: one binomial sd above the power asked, against the search's selection of a lucky estimate
    bar = power + float(np.sqrt(power * (1 - power) / n_sim))
    top = int(sizes.max()) if allocation == "equal" else int(sizes.sum())
    cap = top if switch is None else min(top, switch)
    lo_t, t, planned = 0, min(8, cap), method
    while t < cap and not passing(t):  # doubling, up to where auto reads Beta-Binomial's interval
        lo_t, t = t, min(2 * t, cap)
    if not passing(t):  # even `cap` labels are too few for the interval of few labels
        if switch is None or switch >= top or normal is None:
            # the interval with every row labeled, against the guess
            lo, hi = sim.interval(_allocate(top, sizes, allocation), 0, prob, method)
            half = (hi - lo) / 2
            side = f"below {eps - half:.3f}" if within else f"above {eps + half:.3f}"
            why = (
                f"labeling every row does not give the {'guaranteed' if method == 'guaranteed' else 'Jeffreys'} "
                f"interval power {power} to decide |Δ| <= {eps} for {measure.key} (simulated power "
                f"{power_at(t):.2f}): with every row labeled its interval is still about +-{half:.3f} wide, so "
                f"the guessed |Δ| = {abs(guess):.3f} would have to lie {side}"
            )
            if sim.calibration and "recalibrated" in sim.calibration:
                why += f" ({sim.calibration})"
            raise ValueError(why + "; raise eps, lower power or prob, or give scores that predict the labels")
        if normal > top:
            raise ValueError(
                f"labeling every row does not give power {power} to decide |Δ| <= {eps} for {measure.key}: the "
                f"guessed |Δ| = {abs(guess):.3f} is so close to eps that even a normal approximation asks "
                f"{normal} labeled rows per group, more than the groups hold; raise eps, lower power or prob, or "
                "give scores that predict the labels"
            )
        planned, t = "bb", max(switch, normal)  # from `switch` labels auto reads Beta-Binomial's interval
    simulated = planned != "bb"
    while simulated and t - lo_t > max(1, t // 10):  # bisection to 10%: power_at(t) >= bar
        mid = (lo_t + t) // 2
        lo_t, t = (lo_t, mid) if passing(mid) else (mid, t)
    # the plan's power on fresh audits (the search's estimates are selected): 10% more labels until it is reached
    while simulated and power_at(t, n_sim) < power and t < cap:
        t = min(cap, max(t + 1, int(np.ceil(1.1 * t))))
        say(f"plan_labels: {int(_allocate(t, sizes, allocation).sum())} labels, on fresh audits ...")
    n = _allocate(t, sizes, allocation)
    p = power_at(t, n_sim) if simulated else _normal_power(sim, guess, eps, prob, t, allocation)
    shortfall = None
    if p < power:
        shortfall = (
            f"the plan reaches power {p:.2f} ({'fresh simulated audits' if simulated else 'normal approximation'}), "
            f"below the {power:g} asked: the groups hold too few rows to label; raise eps, lower power or prob"
        )
        warnings.warn(f"plan_labels: {shortfall}", UserWarning, stacklevel=2)
    out = pd.DataFrame(
        {"rows": np.append(sizes, sizes.sum()), "labels": np.append(n, n.sum()), "rate": np.append(sim.rates, np.nan)},
        index=pd.Index([*map(str, sim.groups), "total"], name="group"),
    )
    how = {
        "auto": "the labels' Jeffreys posterior (auto's interval below 200 labels per rate and group)",
        "guaranteed": sim.form,
        "bb": "Beta-Binomial (auto's, from 200 labels per rate)",
    }
    out.attrs = {
        "power": p,
        "power_sd": float(np.sqrt(p * (1 - p) / n_sim)) if simulated else float("nan"),
        "guess": guess,
        "decision": "within" if within else "exceeds",
        "eps": eps,
        "prob": prob,
        "target_power": power,
        "n_sim": n_sim,
        "allocation": allocation,
        "measure": measure.key,
        "bases": tuple(base.name for base in measure.bases),
        "interval": how[planned],
        "method": planned,
        "normal_labels": None if normal is None else int(_allocate(min(normal, top), sizes, allocation).sum()),
        "calibration": sim.calibration,
        "shortfall": shortfall,
        "how": (
            f"simulation: {n_sim} seeded audits per candidate, each computing {how[planned]} at level "
            f"{prob}; the fewest labels (doubling, then bisection to 10%) whose share of right decisions "
            f"reaches the power plus one binomial sd, then checked on {n_sim} fresh audits"
            if simulated
            else f"the interval of few labels needs more labels than give every group {INTERVAL_MIN_LABELS} rows "
            "in each rate's denominator, where auto reads Beta-Binomial's interval: the normal approximation's "
            "count, and at least that many"
        ),
    }
    return out


def _extreme_pair(sim: Any) -> tuple[int, int, float] | None:
    """The two groups whose guessed rates lie farthest apart, and their rates' summed variance per labeled row."""
    rates, share = sim.rates_guess, sim.share
    ok = np.isfinite(rates) & (share > 0)
    if ok.sum() < 2:
        return None
    a, b = int(np.argmax(np.where(ok, rates, -np.inf))), int(np.argmin(np.where(ok, rates, np.inf)))
    return a, b, float(rates[a] * (1 - rates[a]) / share[a] + rates[b] * (1 - rates[b]) / share[b])


def _normal_labels(sim: Any, guess: float, eps: float, prob: float, power: float, allocation: str) -> int | None:
    """Labels a normal approximation of the two extreme groups' difference asks (the search's unit), or None.

    ``n = (z_{1-alpha/2} + z_power)**2 (p_a (1 - p_a) / s_a + p_b (1 - p_b) / s_b) / (eps - |guess|)**2``
    labeled rows in each of the two groups (``s``: share of rows in the rate's denominator).
    """
    pair = _extreme_pair(sim)
    if pair is None or abs(abs(guess) - eps) < 1e-12:
        return None
    a, b, var = pair
    z = stats.norm.ppf((1 + prob) / 2) + stats.norm.ppf(power)
    per_group = int(np.ceil(z * z * max(var, 1e-12) / (eps - abs(guess)) ** 2))
    if allocation == "equal":  # in the search's unit: labels per group (equal), or in all (proportional)
        return per_group
    return int(np.ceil(per_group * sim.sizes.sum() / sim.sizes[[a, b]].min()))


def _normal_power(sim: Any, guess: float, eps: float, prob: float, t: int, allocation: str) -> float:
    """The normal approximation's power of the right decision at ``t`` labels (the search's unit)."""
    a, b, var = _extreme_pair(sim)
    n = float(_allocate(t, sim.sizes, allocation)[[a, b]].min())
    return float(stats.norm.cdf(abs(eps - abs(guess)) / np.sqrt(var / n) - stats.norm.ppf((1 + prob) / 2)))


def _labels_for_denominators(sim: Any, rows: int, allocation: str) -> int:
    """Total labels that give every group about ``rows`` rows in each rate's denominator (capped by its size)."""
    need = np.ceil(rows / np.maximum(sim.share, 1e-9))
    if allocation == "equal":
        return int(min(need.max(), sim.sizes.max()))
    return int(min(np.max(need * sim.sizes.sum() / sim.sizes), sim.sizes.sum()))


class _Simulation:
    """Seeded audits drawn from a guess: ``interval(n, i, ...)``, audit ``i``'s interval with ``n`` labels per group."""

    def interval(self, n: np.ndarray, i: int, prob: float, method: str) -> tuple[float, float]:
        return _interval(self._audit(n, np.random.default_rng([self.seed, i])), self.measure, prob, method)

    def _value(self, rates: dict, overall: dict) -> float:
        """The measure at the guessed rates of every group (``rates``) and pooled (``overall``)."""
        return float(self.measure.bounds_from_group_values(rates, rates, groups=self.groups, overall=overall)[0])


class _RatesSimulation(_Simulation):
    """Audits drawn from guessed rates and denominator shares, labels only."""

    form = "guaranteed, labels only"

    def __init__(self, measure, group_sizes, rates, share, seed):
        if len(measure.bases) != 1:
            raise ValueError(
                f"rates plan a measure of one base rate; {measure.key!r} reads "
                f"{len(measure.bases)}: pass scores and sensitive_features instead"
            )
        self.groups = pd.Index(list(group_sizes))
        missing = [g for g in self.groups if g not in rates]
        if missing:
            raise ValueError(f"rates has no guess for group(s) {missing}; give one per key of group_sizes")
        self.sizes = np.array([int(group_sizes[g]) for g in self.groups])
        if (self.sizes < 1).any():
            raise ValueError("group_sizes must be positive integers")
        self.rates = np.array([float(rates[g]) for g in self.groups])
        sh = share if isinstance(share, Mapping) else dict.fromkeys(self.groups, share)
        self.share = np.array([float(sh[g]) for g in self.groups])
        if not ((0 <= self.rates) & (self.rates <= 1)).all() or not ((0 < self.share) & (self.share <= 1)).all():
            raise ValueError("rates must lie in [0, 1] and denominator_share in (0, 1]")
        self.measure, self.seed = measure, seed
        self.rates_guess, self.calibration = self.rates, None
        # a confusion cell (y, y_pred) in the numerator, one in the denominator only, one outside (or the latter)
        roles, cells = ratio_roles(measure.bases[0]), [(y, p) for y in (0, 1) for p in (0, 1)]
        den = next(c for c in cells if roles.den[c] and not roles.num[c])
        out = next((c for c in cells if not roles.den[c]), den)
        self.cells = next(c for c in cells if roles.num[c] and roles.den[c]), den, out
        name, pooled = measure.bases[0].name, float(np.average(self.rates, weights=self.sizes * self.share))
        self.guess = self._value({name: self.rates}, {name: (pooled,) * 2})

    def _audit(self, n: np.ndarray, rng: np.random.Generator) -> FitData:
        codes = np.repeat(np.arange(self.groups.size), n)
        in_den = rng.uniform(size=codes.size) < self.share[codes]
        in_num = rng.uniform(size=codes.size) < self.rates[codes]
        (yn, pn), (yd, pd_), (yo, po) = self.cells
        y = np.where(in_den, np.where(in_num, yn, yd), yo).astype(np.intp)
        p = np.where(in_den, np.where(in_num, pn, pd_), po).astype(np.intp)
        return FitData(y, Rows(np.full(y.size, 0.5), p, codes.astype(np.intp)), Rows.empty(), self.groups, 0.5)


class _ScoresSimulation(_Simulation):
    """Audits whose labels are drawn from the rows' scores, prediction-powered."""

    form = "guaranteed, prediction-powered by the scores of the unlabeled rows"

    def __init__(self, measure, scores, sensitive_features, threshold, seed, y_true=None):
        s = check_scores(scores, "scores")
        if sensitive_features is None:
            raise ValueError("with scores, pass sensitive_features (each row's group)")
        g = pd.Series(np.asarray(sensitive_features, dtype=object).ravel()).to_numpy()  # NaN stays NaN, not 'nan'
        if pd.isna(g).any():
            raise ValueError(
                f"sensitive_features has {int(pd.isna(g).sum())} missing value(s) (NaN or None); every audited row "
                "needs a group, as in the audit itself: fill them (e.g. 'unknown') or drop those rows"
            )
        if g.size != s.size:
            raise ValueError(f"scores has {s.size} rows and sensitive_features {g.size}; give one group per score")
        self.groups = pd.Index(pd.unique(g))
        self.codes = codes = self.groups.get_indexer(g).astype(np.intp)
        self.pred = (s >= threshold).astype(np.intp)  # the model's predictions, from the scores as given
        self.scores, self.calibration = _checked_calibration(s, y_true)
        self.sizes = np.bincount(codes, minlength=self.groups.size)
        self.rates = np.full(self.groups.size, np.nan)
        self.members = [np.flatnonzero(codes == j) for j in range(self.groups.size)]
        self.measure, self.seed, self.threshold = measure, seed, threshold
        self.guess = self._expected_value()

    def _expected_value(self) -> float:
        """The measure under the scores' expected confusion cells (calibrated scores)."""
        lower, overall, shares = {}, {}, []
        for base in self.measure.bases:
            num, den = _proxies(self.scores, self.pred, ratio_roles(base))
            lower[base.name], pooled, d_g = _ratio(self.codes, num, den, self.groups.size)
            overall[base.name] = (pooled,) * 2
            shares.append(d_g / self.sizes)
        # the first base's expected rates and denominator shares, and the smallest share of any base
        first = self.measure.bases[0].name
        self.rates_guess, self.share = lower[first], np.min(shares, axis=0)
        return self._value(lower, overall)

    def _audit(self, n: np.ndarray, rng: np.random.Generator) -> FitData:
        y_all = (rng.uniform(size=self.scores.size) < self.scores).astype(np.intp)
        mask = np.zeros(self.scores.size, dtype=bool)
        for j, rows in enumerate(self.members):
            mask[rng.choice(rows, size=int(n[j]), replace=False)] = True
        lab = Rows(self.scores[mask], self.pred[mask], self.codes[mask])
        unl = Rows(self.scores[~mask], self.pred[~mask], self.codes[~mask])
        return FitData(y_all[mask], lab, unl, self.groups, self.threshold, target="audited rows")


def _checked_calibration(scores: np.ndarray, y_true: Any) -> tuple[np.ndarray, str | None]:
    """The scores the guess reads, recalibrated on the labels known when they disagree with them, and what was done."""
    if y_true is None:
        return scores, None
    y = pd.to_numeric(pd.Series(np.asarray(y_true, dtype=object).ravel()), errors="coerce").to_numpy(dtype=float)
    if y.size != scores.size:
        raise ValueError(f"y_true has {y.size} rows and scores {scores.size}; give one label (or NaN) per score")
    known = np.isfinite(y)
    if not known.any():
        return scores, "no labeled row to check the scores' calibration on"
    if not np.isin(y[known], (0.0, 1.0)).all():
        raise ValueError("y_true must hold 0/1 labels (NaN or None where a row is unlabeled)")
    n, k, mean = int(known.sum()), int(y[known].sum()), float(scores[known].mean())
    p = stats.binomtest(k, n, min(max(mean, 1e-9), 1 - 1e-9)).pvalue
    said = f"{n} labeled rows: positive rate {k / n:.3f}, mean score {mean:.3f} (binomial test p = {p:.2g})"
    if p >= 0.01 or k in (0, n):
        return scores, said + ": the scores are used as calibrated"
    logit = np.log(np.clip(scores, 1e-6, 1 - 1e-6) / np.clip(1 - scores, 1e-6, 1))
    fit = LogisticRegression(C=1e4).fit(logit[known, None], y[known].astype(int))
    return fit.predict_proba(logit[:, None])[:, 1], said + ": the scores were recalibrated on them (logistic)"
