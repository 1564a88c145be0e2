"""``method="guaranteed"``: confidence intervals valid at every sample size, from the labels alone.

Assumed: the labeled rows are independent draws from the rows (or the distribution)
being audited, in the order given, drawn at random or with known probabilities; nothing
about the scores or a model. Guaranteed: the interval covers the measure's true value
with probability at least ``prob`` at every number of labeled rows, however few, and
stays valid if it is read after every new label (a confidence sequence).

How:

- every group rate is a bounded mean over the rows of its denominator: TPR is the mean
  of ``y_pred`` over the positives of the group. The denominator is random; we
  condition on it: the subsequence of rows that enter it is itself a sequence of
  independent draws from the rows of that kind, so a betting confidence sequence
  (:class:`skfair_measures._betting.BettingCS`, Waudby-Smith and Ramdas 2024) over that
  subsequence covers the rate whatever the number of rows it turns out to hold (none:
  the rate is undefined, with the reason);
- one sequence per (base, group) and per base on all rows pooled (for measures that
  compare with the overall value); a measure reads the ``k`` sequences of its own bases
  (groups and pooled), each at level ``alpha / k`` (Bonferroni's union bound), so the box
  of its group rates holds jointly with probability ``>= 1 - alpha`` (the pooled
  sequence is counted even by measures that do not read it: a little conservative);
- the measure's interval is the image of that box under the measure's own operation
  (:meth:`~skfair_measures._protocol.MeasureBase.bounds_from_group_values`): exact for
  absolute differences and two-group differences, a stated superset elsewhere, never
  narrower; composites (mean, max, min) through their parts;
- the estimate is the measure on the labeled frequencies.

Unlabeled scores are not read (the prediction-powered form is not built yet) and
``sample_weight`` is refused: the table says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._betting import ALPHA_BET, BettingCS
from .._undefined import name_groups
from ..base import BaseMetric, ratio_roles
from ._method import EstimationMethod, FitData, GroupDraws, group_name, refuse_option

__all__ = ["ConfidenceBox", "Guaranteed"]


@dataclass(eq=False)
class ConfidenceBox:
    """Confidence sequences of every (base, group) rate and pooled rate, read jointly.

    ``at(prob)`` gives ``(lower, upper, overall)``: per base, arrays over the groups of
    the simultaneous bounds at level ``prob`` (union bound over all ``k`` sequences),
    and per base the pooled rate's bounds.
    """

    groups: dict[str, list[BettingCS]]
    pooled: dict[str, BettingCS]

    @property
    def k(self) -> int:
        """The number of sequences the union bound splits ``alpha`` over."""
        return sum(len(v) for v in self.groups.values()) + len(self.pooled)

    def at(
        self, prob: float, bases: tuple[str, ...] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, tuple[float, float]]]:
        """Simultaneous bounds at level ``prob`` of the rates of ``bases`` (default: all)."""
        names = tuple(self.groups) if bases is None else bases
        alpha = (1.0 - prob) / sum(len(self.groups[b]) + 1 for b in names)  # union bound over these sequences
        lower, upper = {}, {}
        for name in names:
            seqs = self.groups[name]
            bounds = np.array([cs.interval(alpha) for cs in seqs])
            lower[name], upper[name] = bounds[:, 0], bounds[:, 1]
        overall = {name: self.pooled[name].interval(alpha) for name in names}
        return lower, upper, overall

    def measure_interval(self, measure: Any, groups: pd.Index, prob: float) -> tuple[float, float]:
        """The measure's interval at level ``prob``: the image of the joint box of its own rates."""
        lower, upper, overall = self.at(prob, tuple(b.name for b in measure.bases))
        return measure.bounds_from_group_values(lower, upper, groups=groups, overall=overall)


def _sequences(x_num: np.ndarray, in_den: np.ndarray, codes: np.ndarray, n_groups: int, alpha_bet: float):
    per_group = []
    for g in range(n_groups):
        cs = BettingCS(alpha_bet=alpha_bet)
        cs.update(x_num[in_den & (codes == g)])
        per_group.append(cs)
    pooled = BettingCS(alpha_bet=alpha_bet)
    pooled.update(x_num[in_den])
    return per_group, pooled


@dataclass(frozen=True)
class Guaranteed(EstimationMethod):
    """``method="guaranteed"``: betting confidence sequences of the group rates, joined by a union bound.

    Parameters
    ----------
    alpha_bet : float, default=0.05
        The level the bets are tuned for; the interval is valid at every level
        (``post.interval(prob)``) and tightest near ``1 - alpha_bet``.

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

    alpha_bet: float = ALPHA_BET

    name: ClassVar[str] = "guaranteed"

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha_bet, float | int) and 0 < self.alpha_bet < 1):
            refuse_option("alpha_bet", self.alpha_bet, "pass a level in (0, 1), e.g. 0.05")

    def group_draws(
        self,
        data: FitData,
        bases: tuple[BaseMetric, ...],
        *,
        chains: int,
        draws: int,
        rng: np.random.Generator,
        seed: int,
    ) -> GroupDraws:
        cells = data.y_true * 2 + data.labeled.y_pred  # flat confusion cell of each labeled row
        codes, n_groups = data.labeled.codes, data.n_groups
        values, overall, point, point_overall = {}, {}, {}, {}
        groups_cs: dict[str, list[BettingCS]] = {}
        pooled_cs: dict[str, BettingCS] = {}
        reasons: list[str] = []
        for base in bases:
            roles = ratio_roles(base)
            if not roles.simple:
                raise TypeError(
                    f"method='guaranteed' bounds rates of the form (cells) / (cells); {base.name!r} is not one "
                    "(e.g. balanced accuracy averages two rates); use method='bb' for it."
                )
            in_den = roles.den.ravel()[cells]
            x_num = roles.num.ravel()[cells].astype(float)
            groups_cs[base.name], pooled_cs[base.name] = _sequences(x_num, in_den, codes, n_groups, self.alpha_bet)
            den = np.bincount(codes[in_den], minlength=n_groups).astype(float)
            num = np.bincount(codes[in_den], weights=x_num[in_den], minlength=n_groups)
            with np.errstate(invalid="ignore", divide="ignore"):
                rate = num / den
            empty = np.flatnonzero(den == 0)
            if empty.size:
                why = base.undefined_when or "no samples in its denominator"
                reasons.append(
                    f"{base.name} in group(s) {name_groups(group_name(data.groups, j) for j in empty)} has no labeled "
                    f"row in its denominator ({why}); its guaranteed interval would be the whole range"
                )
            pooled = float(num.sum() / den.sum()) if den.sum() else np.nan
            values[base.name] = rate.reshape(1, 1, n_groups)
            overall[base.name] = np.full((1, 1), pooled)
            point[base.name], point_overall[base.name] = rate, pooled
        box = ConfidenceBox(groups_cs, pooled_cs)
        attrs = {"sampler": "none: betting confidence sequences (Waudby-Smith & Ramdas 2024)",
                 "alpha_bet": float(self.alpha_bet), "sequences": box.k,
                 "interval": "simultaneous box of the group rates (union bound), mapped through the operation"}
        return GroupDraws(values, overall, attrs=attrs, point=point, point_overall=point_overall, reasons=reasons,
                          confidence=box)
