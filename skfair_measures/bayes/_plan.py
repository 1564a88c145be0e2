"""How many labels an audit needs: ``plan_labels``, by simulation of the guaranteed interval.

The question: how many rows must be labeled, and in which groups, so that the
guaranteed interval of a measure (``method="guaranteed"``, the interval ``auto`` reports
below :data:`~._auto.INTERVAL_MIN_LABELS` labels) decides ``|Δ| <= eps`` at level
``1 - alpha`` with probability ``power``.

Decided means the interval lies in ``[-eps, eps]`` (``within``) or wholly outside it
(``exceeds``), the rule of :func:`skfair_measures.verdicts`; the power counted is that of
the *right* decision, the one the guess implies (``within`` when the guessed
``|Δ| <= eps``, else ``exceeds``).

How (a simulation, not a bound): for a number of labels, ``n_sim`` seeded audits are
drawn from the guess, and each runs the very procedure of ``method="guaranteed"``
(:class:`~._guaranteed.Guaranteed`, its confidence box mapped through the measure's
operation); the power is the share that decide rightly. A candidate passes when that
share is at least ``power`` plus one binomial standard deviation of ``n_sim`` audits
(the search keeps the first candidate whose estimate crosses the bar, which picks
lucky estimates: without the margin, a plan from 40 audits reached 0.68 instead of
0.8 in an independent check). The labels are searched on a
doubling grid and then by bisection (to 5% of the labels, so a plan may be up to 5%
above the fewest), with the same seeds at every candidate (common
random numbers, so the power is close to monotone in the labels).

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

The interval holds whatever the guess; only the planned power depends on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..base import ratio_roles
from ..results import check_prob
from ._guaranteed import Guaranteed
from ._method import FitData, Rows

__all__ = ["plan_labels"]

_ALLOCATIONS = ("equal", "proportional")


def _decides(lo: float, hi: float, eps: float, within: bool) -> bool:
    if within:
        return -eps <= lo and hi <= eps
    return lo > eps or hi < -eps


def _interval(data: FitData, measure: Any, prob: float) -> tuple[float, float]:
    box = (
        Guaranteed()
        .group_draws(data, tuple(measure.bases), chains=1, draws=1, rng=np.random.default_rng(0), seed=0)
        .confidence
    )
    return box.measure_interval(measure, data.groups, prob)


def _cells(roles: Any) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int] | None]:
    """A confusion cell ``(y, y_pred)`` in the numerator, one in the denominator only, one outside."""
    num = [(y, p) for y in (0, 1) for p in (0, 1) if roles.num[y, p] and roles.den[y, p]]
    den = [(y, p) for y in (0, 1) for p in (0, 1) if roles.den[y, p] and not roles.num[y, p]]
    out = [(y, p) for y in (0, 1) for p in (0, 1) if not roles.den[y, p]]
    return num[0], den[0], (out[0] if out else None)


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
    alpha: float = 0.05,
    power: float = 0.8,
    allocation: str = "equal",
    n_sim: int = 200,
    random_state: int = 0,
) -> pd.DataFrame:
    """Labels per group for the guaranteed interval to decide ``|Δ| <= eps`` with probability ``power``.

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
    alpha : float, default=0.05
        The interval's level is ``1 - alpha``.
    power : float, default=0.8
        Probability of the right decision asked for.
    allocation : {"equal", "proportional"}, default="equal"
        Labels the same number of rows in every group (capped at its size), or in
        proportion to the group sizes.
    n_sim : int, default=200
        Simulated audits per candidate number of labels.
    random_state : int, default=0
        Seed of the simulation.

    Returns
    -------
    pandas.DataFrame
        Index: the groups and ``"total"``; columns ``rows`` (audited rows), ``labels``
        (rows to label) and ``rate`` (the guessed rate, labels only: NaN with scores).
        ``attrs``: ``power`` (simulated at the plan) and its binomial ``power_sd``,
        ``guess`` (the guessed measure value), ``decision`` (``within`` or ``exceeds``),
        ``eps``, ``alpha``, ``target_power``, ``n_sim``, ``allocation``, ``measure`` (its key),
        ``bases`` (the names of its base rates), ``interval``, ``how``.

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
    check_prob(power, "power")
    check_prob(alpha, "alpha")
    if not eps > 0:
        raise ValueError(f"eps must be positive; got {eps!r}")
    if allocation not in _ALLOCATIONS:
        raise ValueError(f"allocation must be one of {_ALLOCATIONS}; got {allocation!r}")
    if n_sim < 10:
        raise ValueError(f"n_sim must be at least 10 to estimate a power; got {n_sim!r}")
    ideal = measure.ideal
    if ideal != 0.0:
        raise ValueError(
            f"plan_labels decides |Δ| <= eps for measures whose ideal value is 0 (differences); "
            f"{measure.key!r} has ideal {ideal!r} (a ratio?): plan its difference, e.g. "
            "operation='absdiff'"
        )
    for base in measure.bases:
        if not ratio_roles(base).simple:
            raise TypeError(
                f"plan_labels plans the guaranteed interval, which bounds rates of the form "
                f"(cells) / (cells); {base.name!r} is not one"
            )
    prob = 1.0 - alpha
    if scores is not None:
        if rates is not None or group_sizes is not None:
            raise ValueError(
                "give either scores and sensitive_features (prediction-powered) or group_sizes and "
                "rates (labels only), not both"
            )
        sim = _ScoresSimulation(measure, scores, sensitive_features, threshold, random_state)
    else:
        if group_sizes is None or rates is None:
            raise ValueError(
                "plan_labels needs group_sizes and rates (labels only) or scores and "
                "sensitive_features (prediction-powered)"
            )
        sim = _RatesSimulation(measure, group_sizes, rates, denominator_share, random_state)
    guess = float(sim.guess)
    within = abs(guess) <= eps
    sizes = sim.sizes

    cache: dict[int, float] = {}

    def power_at(t: int) -> float:
        if t not in cache:
            n = _allocate(t, sizes, allocation)
            hits = sum(_decides(*sim.interval(n, i, prob), eps, within) for i in range(n_sim))
            cache[t] = hits / n_sim
        return cache[t]

    # the bar: one binomial sd above the power asked, against the search's selection of a lucky estimate
    bar = power + float(np.sqrt(power * (1 - power) / n_sim))
    top = int(sizes.max()) if allocation == "equal" else int(sizes.sum())
    lo_t, t = 0, min(8, top)
    while power_at(t) < bar:
        if t >= top:
            raise ValueError(
                f"labeling every row does not give the guaranteed interval power {power} to decide |Δ| <= {eps} "
                f"(simulated power {power_at(t):.2f}; the guessed value {guess:.3f} is too close to eps): raise eps, "
                "lower power or alpha, or give scores that predict the labels"
            )
        lo_t, t = t, min(2 * t, top)
    while t - lo_t > max(1, t // 20):  # bisection to 5%: power_at(t) >= power > power_at(lo_t) (0: failing)
        mid = (lo_t + t) // 2
        if power_at(mid) >= bar:
            t = mid
        else:
            lo_t = mid
    n = _allocate(t, sizes, allocation)
    p = power_at(t)
    groups = [str(g) for g in sim.groups]
    out = pd.DataFrame(
        {"rows": np.append(sizes, sizes.sum()), "labels": np.append(n, n.sum()), "rate": np.append(sim.rates, np.nan)},
        index=pd.Index([*groups, "total"], name="group"),
    )
    out.attrs.update(
        {
            "power": p,
            "power_sd": float(np.sqrt(p * (1 - p) / n_sim)),
            "guess": guess,
            "decision": "within" if within else "exceeds",
            "eps": eps,
            "alpha": alpha,
            "target_power": power,
            "n_sim": n_sim,
            "allocation": allocation,
            "measure": measure.key,
            "bases": tuple(base.name for base in measure.bases),
            "interval": sim.form,
            "how": f"simulation: {n_sim} seeded audits per candidate, each running method='guaranteed' at level "
            f"{prob}; the fewest labels (doubling, then bisection to 5%) whose share of right decisions "
            f"reaches the power plus one binomial sd",
        }
    )
    return out


class _RatesSimulation:
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
        self.cells = _cells(ratio_roles(measure.bases[0]))
        self.guess = float(
            measure.bounds_from_group_values(
                {measure.bases[0].name: self.rates},
                {measure.bases[0].name: self.rates},
                groups=self.groups,
                overall={measure.bases[0].name: (self._pooled(),) * 2},
            )[0]
        )

    def _pooled(self) -> float:
        w = self.sizes * self.share
        return float((w * self.rates).sum() / w.sum())

    def interval(self, n: np.ndarray, i: int, prob: float) -> tuple[float, float]:
        rng = np.random.default_rng([self.seed, i])
        codes = np.repeat(np.arange(self.groups.size), n)
        in_den = rng.uniform(size=codes.size) < self.share[codes]
        in_num = rng.uniform(size=codes.size) < self.rates[codes]
        (yn, pn), (yd, pd_), out = self.cells
        yo, po = out if out is not None else (yd, pd_)
        y = np.where(in_den, np.where(in_num, yn, yd), yo).astype(np.intp)
        p = np.where(in_den, np.where(in_num, pn, pd_), po).astype(np.intp)
        data = FitData(y, Rows(np.full(y.size, 0.5), p, codes.astype(np.intp)), Rows.empty(), self.groups, 0.5)
        return _interval(data, self.measure, prob)


class _ScoresSimulation:
    """Audits whose labels are drawn from the rows' scores, prediction-powered."""

    form = "guaranteed, prediction-powered by the scores of the unlabeled rows"

    def __init__(self, measure, scores, sensitive_features, threshold, seed):
        s = np.asarray(scores, dtype=float).ravel()
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
        if not (np.isfinite(s) & (s >= 0) & (s <= 1)).all():
            raise ValueError("scores must be probabilities in [0, 1]")
        self.groups = pd.Index(pd.unique(g))
        codes = self.groups.get_indexer(g).astype(np.intp)
        self.codes, self.scores = codes, s
        self.pred = (s >= threshold).astype(np.intp)
        self.sizes = np.bincount(codes, minlength=self.groups.size)
        self.rates = np.full(self.groups.size, np.nan)
        self.members = [np.flatnonzero(codes == j) for j in range(self.groups.size)]
        self.measure, self.seed, self.threshold = measure, seed, threshold
        expected = FitData(np.zeros(0, np.intp), Rows.empty(), Rows(s, self.pred, codes), self.groups, threshold)
        self.guess = self._expected_value(expected)

    def _expected_value(self, data: FitData) -> float:
        """The measure under the scores' expected confusion cells (calibrated scores)."""
        lower, overall = {}, {}
        for base in self.measure.bases:
            roles = ratio_roles(base)
            q = data.unlabeled.scores
            num = (
                q * (roles.num & roles.den)[1, data.unlabeled.y_pred]
                + (1 - q) * (roles.num & roles.den)[0, data.unlabeled.y_pred]
            )
            den = q * roles.den[1, data.unlabeled.y_pred] + (1 - q) * roles.den[0, data.unlabeled.y_pred]
            n_g = np.bincount(self.codes, weights=num, minlength=self.groups.size)
            d_g = np.bincount(self.codes, weights=den, minlength=self.groups.size)
            lower[base.name] = n_g / d_g
            overall[base.name] = (float(num.sum() / den.sum()),) * 2
        return float(self.measure.bounds_from_group_values(lower, lower, groups=self.groups, overall=overall)[0])

    def interval(self, n: np.ndarray, i: int, prob: float) -> tuple[float, float]:
        rng = np.random.default_rng([self.seed, i])
        y_all = (rng.uniform(size=self.scores.size) < self.scores).astype(np.intp)
        mask = np.zeros(self.scores.size, dtype=bool)
        for j, rows in enumerate(self.members):
            mask[rng.choice(rows, size=int(n[j]), replace=False)] = True
        lab = Rows(self.scores[mask], self.pred[mask], self.codes[mask])
        unl = Rows(self.scores[~mask], self.pred[~mask], self.codes[~mask])
        data = FitData(y_all[mask], lab, unl, self.groups, self.threshold)
        return _interval(data, self.measure, prob)
