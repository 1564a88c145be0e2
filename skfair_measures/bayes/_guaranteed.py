"""``method="guaranteed"``: confidence intervals valid at every sample size, from labels (and scores).

Assumed: the labeled rows are independent draws from the rows being audited (all rows
given, labeled and unlabeled), drawn at random; nothing about the scores or a model.
Guaranteed: the interval covers the measure's true value on the audited rows with
probability at least ``prob`` at every number of labeled rows, however few. One audit
is one look: the interval is a fixed-sample betting interval, read once (for a sequence
watched over time, a monitor, :class:`skfair_measures._betting.BettingStack`).

How:

- every group rate is a ratio of confusion cells, ``E[num] / E[den]`` over the group's
  rows (TPR: the predicted positives among the positives);
- labels only: the rate is the mean of ``num`` over the rows of its denominator; we
  condition on the denominator: the labeled rows that enter it are independent draws
  from the rows of that kind, so a betting interval over them
  (:func:`~skfair_measures._betting.fixed_sample_interval`, Waudby-Smith and Ramdas 2024,
  bets tuned for the fixed sample) covers the rate whatever their number (none: the rate
  is undefined, with the reason);
- with unlabeled scores (prediction-powered): the score of every row, read as the
  probability of the positive label, gives proxies of ``num`` and ``den``; their means
  over all audited rows are known exactly, and each labeled row's correction (label
  minus proxy) is bet on (:func:`~skfair_measures._betting.prediction_powered_interval`,
  after Csillag et al. 2025 and Kilian et al. 2025). Badly calibrated scores widen the
  interval, they cannot break it;
- one interval per (base, group) and per base on all rows pooled (for measures that
  compare with the overall value); a measure reads the ``k`` intervals of its own bases
  (groups and pooled), each at level ``alpha / k`` (Bonferroni's union bound), so the box
  of its group rates holds jointly with probability ``>= 1 - alpha`` (the pooled
  interval is counted even by measures that do not read it: a little conservative);
- every group interval is widened, if need be, to hold the group's point estimate (a
  superset: coverage is kept, and the reported value lies inside the reported interval);
- the measure's interval is the image of that box under the measure's own operation
  (:meth:`~skfair_measures._protocol.MeasureBase.bounds_from_group_values`): exact for
  absolute differences and two-group differences, a stated superset elsewhere, never
  narrower; composites (mean, max, min) through their parts;
- the estimate is the measure on the labeled frequencies;
- a rate of the predictions alone (the selection rate of ``fairness.cv``), given the
  unlabeled rows, is known exactly on every audited row: its interval is that value.

Weights (``sample_weight``: each labeled row's inverse inclusion probability, known up to
a common factor, as in a stratified or importance sample): the rate ``E_w[num] /
E_w[den]`` is the root of ``E[w (num - theta den)] = 0`` over the labeled rows' sampling
distribution, whatever the common factor, so each labeled row enters
:func:`~skfair_measures._betting.prediction_powered_interval` as ``(w num / W, w den / W)``
with no proxy (``W`` the largest weight given, assumed to bound the design's weights).
With weights the scores are not used (prediction-powering would need the weights'
normalisation, which a Hajek weight does not carry); ``attrs`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._betting import GRID_SIZE, fixed_sample_interval, prediction_powered_interval
from .._small_sample import reads_pooled
from .._undefined import name_groups
from ..base import ratio_roles
from ._bb import bb_cell_draws, cell_concentration
from ._method import Bases, EstimationMethod, FitData, GroupDraws, Rng, group_name

__all__ = ["TARGETS", "ConfidenceBox", "Guaranteed", "QuantileBox", "audit_target", "labels_box"]

#: What an interval can be about: the rows given (labeled and unlabeled), or a population they were drawn from.
TARGETS = ("audited rows", "population")


def audit_target(target: Any, has_unlabeled: bool, method: str) -> str:
    """What the guaranteed interval is about, decided once: ``target=`` as given, else by the data.

    With unlabeled rows the audit is of the rows given (labeled and unlabeled), and the
    labeled rows are a sample without replacement from them; with labeled rows only they
    are a sample from a population, unless ``target="audited rows"`` says they are the
    audit (then every row is labeled and each rate is known exactly).

    Examples
    --------
    >>> audit_target(None, True, "auto"), audit_target(None, False, "guaranteed")
    ('audited rows', 'population')
    """
    if target is None:
        return "audited rows" if has_unlabeled else "population"
    if target not in TARGETS:
        raise ValueError(f"target={target!r}; pass 'audited rows' (the rows given) or 'population'.")
    if target == "audited rows" and method not in ("auto", "guaranteed"):
        raise ValueError(
            f"target='audited rows' is answered by the guaranteed interval (sampling without replacement from "
            f"the rows given); method={method!r} models a population: use method='guaranteed' or 'auto'."
        )
    return target


@dataclass(eq=False)
class RateInterval:
    """The data of one rate's one-look interval, computed at the level asked (and kept).

    ``labels`` holds the ``num`` of the labeled rows in the rate's denominator (labels
    only); ``pp`` the arguments of :func:`prediction_powered_interval` (with scores).
    """

    point: float
    labels: np.ndarray | None = None
    pp: tuple | None = None
    population: float | None = None
    grid_size: int = GRID_SIZE
    _cache: dict = field(default_factory=dict)

    def interval(self, alpha: float) -> tuple[float, float]:
        """The interval at level ``1 - alpha``, widened to hold the point estimate (the point if known exactly)."""
        if self.labels is None and self.pp is None:
            return self.point, self.point  # a rate of the predictions over every audited row: no uncertainty
        if alpha not in self._cache:
            if self.pp is not None:
                lo, hi = prediction_powered_interval(
                    *self.pp, alpha, population=self.population, grid_size=self.grid_size
                )
            else:
                lo, hi = fixed_sample_interval(self.labels, alpha, grid_size=self.grid_size)
            if np.isfinite(self.point):
                lo, hi = min(lo, self.point), max(hi, self.point)
            self._cache[alpha] = (lo, hi)
        return self._cache[alpha]


@dataclass(eq=False)
class ConfidenceBox:
    """One-look intervals of every (base, group) rate and pooled rate, read jointly.

    ``at(prob)`` gives ``(lower, upper, overall)``: per base, arrays over the groups of
    the simultaneous bounds at level ``prob`` (union bound over all ``k`` intervals),
    and per base the pooled rate's bounds.
    """

    groups: dict[str, list[RateInterval]]
    pooled: dict[str, RateInterval]
    name: str = "betting (guaranteed), labels"  # the construction, in words

    @property
    def k(self) -> int:
        """The number of intervals the union bound splits ``alpha`` over."""
        return sum(len(v) for v in self.groups.values()) + len(self.pooled)

    def split(self, bases: tuple[str, ...], pooled: bool = True) -> int:
        """How many intervals ``at(prob, bases, pooled)`` splits ``1 - prob`` over: every group rate (and pooled)."""
        return sum(len(self.groups[b]) + pooled for b in bases)

    def at(
        self, prob: float, bases: tuple[str, ...] | None = None, pooled: bool = True
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, tuple[float, float]]]:
        """Simultaneous bounds at level ``prob`` of the rates of ``bases`` (default: all); pooled ones if read."""
        names = tuple(self.groups) if bases is None else bases
        alpha = (1.0 - prob) / self.split(names, pooled)  # union bound over the intervals read, and no others
        lower, upper = {}, {}
        for name in names:
            bounds = np.array([r.interval(alpha) for r in self.groups[name]])
            lower[name], upper[name] = bounds[:, 0], bounds[:, 1]
        overall = {name: self.pooled[name].interval(alpha) if pooled else (0.0, 1.0) for name in names}
        return lower, upper, overall

    def measure_interval(self, measure: Any, groups: pd.Index, prob: float) -> tuple[float, float]:
        """The measure's interval at level ``prob``: the image of the joint box of the rates it reads.

        The pooled rates get a share of ``1 - prob`` only when the measure reads them
        (a comparison with the overall value, a performance part): a difference between
        groups spends the whole budget on the group rates.
        """
        lower, upper, overall = self.at(prob, tuple(b.name for b in measure.bases), reads_pooled(measure))
        return measure.bounds_from_group_values(lower, upper, groups=groups, overall=overall)


@dataclass(eq=False)
class QuantileBox:
    """A posterior's equal-tailed intervals read as confidence intervals: the interval without its probabilities.

    ``method="auto"``'s interval below its row count when its estimate is the calibration
    model's (:mod:`._auto`): the labels' Jeffreys posterior, widened (by the posterior) to
    hold that estimate, so the draws' shares would no longer agree with it. ``at`` gives
    simultaneous bounds (a union bound over the ``k`` rates read), as :class:`ConfidenceBox`'s.
    """

    values: dict[str, np.ndarray]  # draws of every rate, shape (chain, draw, group)
    overall: dict[str, np.ndarray]  # draws of every pooled rate, shape (chain, draw)
    name: str = "Jeffreys posterior (equal-tailed), widened to hold the estimate"  # the construction, in words

    def split(self, bases: tuple[str, ...], pooled: bool = True) -> int:
        """How many intervals ``at(prob, bases, pooled)`` splits ``1 - prob`` over."""
        return sum(self.values[b].shape[-1] + pooled for b in bases)

    def at(self, prob: float, bases: tuple[str, ...] | None = None, pooled: bool = True):
        """Simultaneous bounds at level ``prob`` of the rates of ``bases`` (default: all); pooled ones if read."""
        names = tuple(self.values) if bases is None else bases
        q = (1.0 - prob) / self.split(names, pooled) / 2.0
        draws = {n: self.values[n].reshape(-1, self.values[n].shape[-1]) for n in names}
        lower = {n: np.quantile(d, q, axis=0) for n, d in draws.items()}
        upper = {n: np.quantile(d, 1.0 - q, axis=0) for n, d in draws.items()}
        overall = {n: tuple(np.quantile(self.overall[n], [q, 1.0 - q])) if pooled else (0.0, 1.0) for n in names}
        return lower, upper, overall

    def measure_interval(self, measure: Any, groups: pd.Index, prob: float) -> tuple[float, float]:
        """The equal-tailed interval of the measure's draws at level ``prob``."""
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = np.asarray(measure.from_group_values(self.values, groups=groups, overall=self.overall))
        lo, hi = np.quantile(draws, [(1.0 - prob) / 2.0, (1.0 + prob) / 2.0])
        return float(lo), float(hi)


def labels_box(data: FitData, bases: Bases, fit: GroupDraws, seed: int) -> QuantileBox:
    """``auto``'s interval with the calibration model's estimate: the labels' Jeffreys posterior ``fit`` as a box.

    A rate no labeled row informs keeps its prior draws (the calibration model's estimate has
    a value there, and the labels bound it by nothing); a rate of the predictions alone, given
    the unlabeled rows, is its exact value on every audited row. ``fit``'s draws are changed in place.
    """
    alpha, _ = cell_concentration(bases, data.n_groups, "jeffreys")
    shape = next(iter(fit.values.values())).shape[:2]
    prior = bb_cell_draws(np.zeros_like(data.counts), alpha, *shape, np.random.default_rng(seed))
    for b in bases:
        fit.values[b.name] = np.where(np.isnan(fit.values[b.name]), b.from_counts(prior), fit.values[b.name])
        if ratio_roles(b).label_free and data.has_unlabeled:
            rate, pooled = _exact_rates(data, ratio_roles(b))
            fit.values[b.name], fit.overall[b.name] = np.broadcast_to(rate, (*shape, rate.size)), np.full(shape, pooled)
    return QuantileBox(fit.values, fit.overall)


def weighted(data: FitData) -> bool:
    """Whether weights were given (of labeled or unlabeled rows): the weighted, labels-only form."""
    return data.labeled.weight is not None or data.unlabeled.weight is not None


def _labeled_weight(data: FitData) -> np.ndarray:
    w = data.labeled.weight
    return np.ones(data.y_true.size) if w is None else np.asarray(w, dtype=float)


def _proxies(scores: np.ndarray, y_pred: np.ndarray, roles: Any) -> tuple[np.ndarray, np.ndarray]:
    """The model's expectation of ``num`` and ``den`` of each row given its score (P(y = 1) = score)."""
    q1 = np.clip(scores, 0.0, 1.0)
    num, den = (roles.num & roles.den).astype(float), roles.den.astype(float)  # [y, y_pred]
    return q1 * num[1, y_pred] + (1.0 - q1) * num[0, y_pred], q1 * den[1, y_pred] + (1.0 - q1) * den[0, y_pred]


def _ratio(codes: np.ndarray, num: np.ndarray, den: np.ndarray, n_groups: int) -> tuple[np.ndarray, float, np.ndarray]:
    """Per group ``sum num / sum den`` over the rows (NaN where 0/0), pooled, and the groups' ``sum den``."""
    n, d = (np.bincount(codes, weights=x, minlength=n_groups) for x in (num, den))
    with np.errstate(invalid="ignore", divide="ignore"):
        return n / d, float(n.sum() / d.sum()) if d.sum() else np.nan, d


def _exact_rates(data: FitData, roles: Any) -> tuple[np.ndarray, float]:
    """A label-free rate (the selection rate) on every audited row, labeled and unlabeled: known exactly.

    Weights are known up to a common factor, so the labeled and unlabeled rows' weights
    must be on one scale: with ``sample_weight=`` the unlabeled rows' weights are required
    (a weight of 1 for them would make the value change when every weight is scaled).
    """
    if data.labeled.weight is not None and data.unlabeled.weight is None:
        raise ValueError(
            f"sample_weight= is given for the labeled rows but unlabeled_sample_weight= is not, for the "
            f"{int(data.unlabeled.multiplicity.sum())} unlabeled rows whose predictions this label-free rate reads; "
            "weights are known up to a common factor, so pass unlabeled_sample_weight= on the same scale "
            "(e.g. np.ones(n_unlabeled) if the labeled weights are inverse labeling probabilities)."
        )
    lab, unl = data.labeled, data.unlabeled
    codes, y_pred = np.concatenate([lab.codes, unl.codes]), np.concatenate([lab.y_pred, unl.y_pred])
    w_unl = unl.multiplicity if unl.weight is None else np.asarray(unl.weight, dtype=float)
    w = np.concatenate([_labeled_weight(data), w_unl])
    return _ratio(codes, w * roles.num[0, y_pred], w * roles.den[0, y_pred], data.n_groups)[:2]


def _rates(data: FitData, roles: Any, cells: np.ndarray, rate: np.ndarray, pooled: float):
    """One :class:`RateInterval` per group and one pooled, labels only or prediction-powered."""
    codes, n_groups = data.labeled.codes, data.n_groups
    in_den, x_num = roles.den.ravel()[cells], roles.num.ravel()[cells].astype(float)
    if weighted(data):
        w = _labeled_weight(data)
        scaled = w / w.max() if w.size and w.max() > 0 else w
        A, B = scaled * x_num * in_den, scaled * in_den

        def by_weight(mask: np.ndarray, point: float) -> RateInterval:
            zero = np.zeros(int(mask.sum()))
            return RateInterval(point, pp=(A[mask], B[mask], zero, zero, 0.0, 0.0))

        per_group = [by_weight(codes == g, float(rate[g])) for g in range(n_groups)]
        return per_group, by_weight(np.ones(codes.size, bool), pooled)
    if not data.has_unlabeled and data.target == "audited rows":  # every audited row labeled: known exactly
        return [RateInterval(float(r)) for r in rate], RateInterval(pooled)
    if not data.has_unlabeled:
        per_group = [RateInterval(float(rate[g]), labels=x_num[in_den & (codes == g)]) for g in range(n_groups)]
        return per_group, RateInterval(pooled, labels=x_num[in_den])
    A, B = (x_num * in_den), in_den.astype(float)
    a_l, b_l = _proxies(data.labeled.scores, data.labeled.y_pred, roles)
    a_u, b_u = _proxies(data.unlabeled.scores, data.unlabeled.y_pred, roles)
    rows_u = data.unlabeled.multiplicity  # the proxies are linear in the score: a bin's mean score is exact
    a_u, b_u, codes_u = a_u * rows_u, b_u * rows_u, data.unlabeled.codes

    def one(mask_l: np.ndarray, mask_u: np.ndarray, point: float) -> RateInterval:
        n_all = mask_l.sum() + rows_u[mask_u].sum()
        means = [float((x_l[mask_l].sum() + x_u[mask_u].sum()) / n_all) for x_l, x_u in ((a_l, a_u), (b_l, b_u))]
        wor = float(n_all) if data.target == "audited rows" else None  # without replacement from these rows
        return RateInterval(point, pp=(A[mask_l], B[mask_l], a_l[mask_l], b_l[mask_l], *means), population=wor)

    per_group = [one(codes == g, codes_u == g, float(rate[g])) for g in range(n_groups)]
    return per_group, one(np.ones(codes.size, bool), np.ones(codes_u.size, bool), pooled)


@dataclass(frozen=True)
class Guaranteed(EstimationMethod):
    """``method="guaranteed"``: one-look betting intervals of the group rates, joined by a union bound.

    No options: the bets are tuned for the level read (``post.interval(prob)``), since
    an audit reads its interval once. With ``unlabeled_scores`` the intervals are
    prediction-powered.

    The posterior holds one draw, the labeled frequencies' value; ``interval(prob)``
    is the guaranteed interval, and the posterior probabilities (``prob_greater``,
    ``prob_within``, ``rope``) are NaN: a confidence interval is not a distribution.

    Examples
    --------
    >>> import numpy as np
    >>> import skfair_measures as sfm
    >>> rng = np.random.default_rng(0)
    >>> g, s = rng.integers(0, 2, 60), rng.uniform(size=60)
    >>> y = (rng.uniform(size=60) < s).astype(int)
    >>> post = sfm.bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=g, method="guaranteed")
    >>> lo, hi = post.interval(0.95)
    >>> bool(lo <= post.value <= hi), post.prob_within(0.05)
    (True, nan)
    """

    name: ClassVar[str] = "guaranteed"

    def group_draws(self, data: FitData, bases: Bases, *, chains: int, draws: int, rng: Rng, seed: int) -> GroupDraws:
        cells = data.y_true * 2 + data.labeled.y_pred  # flat confusion cell of each labeled row
        codes, n_groups = data.labeled.codes, data.n_groups
        values, overall, point, point_overall = {}, {}, {}, {}
        groups_ci, pooled_ci, reasons = {}, {}, []  # per base: its groups' RateIntervals, its pooled one; why undefined
        for base in bases:
            roles = ratio_roles(base)
            if not roles.simple:
                raise TypeError(
                    f"method='guaranteed' bounds rates of the form (cells) / (cells); {base.name!r} is not one "
                    "(e.g. balanced accuracy averages two rates); use method='bb' for it."
                )
            if roles.label_free and data.has_unlabeled:  # every audited row's prediction is known
                rate, pooled = _exact_rates(data, roles)
                groups_ci[base.name] = [RateInterval(float(r)) for r in rate]
                pooled_ci[base.name] = RateInterval(pooled)
                empty, where = np.flatnonzero(~np.isfinite(rate)), "row"
            else:
                in_den = roles.den.ravel()[cells]
                w = _labeled_weight(data) * in_den
                rate, pooled, den = _ratio(codes, w * roles.num.ravel()[cells], w, n_groups)
                groups_ci[base.name], pooled_ci[base.name] = _rates(data, roles, cells, rate, pooled)
                n_den = np.bincount(codes[in_den], minlength=n_groups)
                empty, where = np.flatnonzero((n_den == 0) | (den <= 0)), "labeled row"
            if empty.size:
                why = base.undefined_when or "no samples in its denominator"
                reasons.append(
                    f"{base.name} in group(s) {name_groups(group_name(data.groups, j) for j in empty)} has no {where} "
                    f"in its denominator ({why}); its guaranteed interval would be the whole range"
                )
            values[base.name], overall[base.name] = rate.reshape(1, 1, n_groups), np.full((1, 1), pooled)
            point[base.name], point_overall[base.name] = rate, pooled
        w = weighted(data)
        powered = data.has_unlabeled and not w
        name = "betting (guaranteed), " + ("prediction-powered" if powered else "labels")
        box = ConfidenceBox(groups_ci, pooled_ci, name)
        form = ", weighted labels only (with weights the scores are not used)" if w else ", labels only"
        form = ", prediction-powered by the unlabeled scores" if powered else form
        wor = data.target == "audited rows" and not w
        attrs = {
            "target": data.target,
            "construction": "betting, without replacement" if wor else "betting",
            "sampler": "none: one-look betting intervals (Waudby-Smith & Ramdas 2024)" + form,
            "prediction_powered": bool(powered),
            "sequences": box.k,
            "estimate": "the measure on the labeled frequencies" + (" (weighted)" if w else ""),
            "interval": "simultaneous box of the group rates (union bound), each widened to hold its estimate, "
            "mapped through the operation",
        }
        return GroupDraws(
            values, overall, attrs=attrs, point=point, point_overall=point_overall, reasons=reasons, confidence=box
        )
