"""Simultaneous verdicts: which group pairs of which measures are within or beyond a tolerance, jointly.

For every base rate of the measures given and every pair of groups ``(a, b)``, the
difference ``rate_a - rate_b`` gets an interval, and all of them hold together with
probability ``prob`` (the family-wise level), by one joint construction, not one
interval each:

- draws (``bb``, ``bc``, ``bcr``, ``ppi``): a max-type band. Each difference is
  standardised by its posterior mean and sd; ``c`` is the ``prob`` quantile over the
  draws of the largest standardised deviation across the whole family; each interval is
  ``mean +- c sd``. The band holds ``prob`` of the joint posterior mass (a credible
  statement; its frequentist error is that of the posterior);
- a guaranteed box (``method="guaranteed"``, or ``auto`` below its row count): the group
  rates' simultaneous intervals at level ``prob`` (union bound over every rate of the
  family), and each difference's interval is ``[lower_a - upper_b, upper_a - lower_b]``,
  valid jointly because the box is; widened to hold the estimate.

A pair is ``within`` when its interval lies in ``[-eps, eps]``, ``exceeds`` when it lies
wholly outside (``lower > eps`` or ``upper < -eps``), ``inconclusive`` otherwise; a pair
with an undefined rate is ``undefined`` and leaves the family. With probability at
least ``prob`` (for the box; of the posterior mass for draws) no verdict of the table is
wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..results import check_prob
from ._method import group_labels

if TYPE_CHECKING:  # _posterior calls this module (MeasurePosterior.verdict)
    from ._posterior import MeasurePosterior

__all__ = ["verdicts"]

_COLUMNS = ["measure", "base", "group_a", "group_b", "estimate", "lower", "upper", "verdict"]


def verdicts(
    posteriors: Mapping[str, MeasurePosterior] | Iterable[MeasurePosterior], eps: float, prob: float = 0.95
) -> pd.DataFrame:
    """Verdicts per measure, base rate and group pair, simultaneous at family-wise level ``prob``.

    Parameters
    ----------
    posteriors : dict of str to MeasurePosterior, or iterable of them
        From one fit (``posteriors(...)``): the family is every base rate of every
        measure and every pair of groups.
    eps : float
        The tolerance on ``|rate_a - rate_b|``.
    prob : float, default=0.95
        The family-wise level.

    Returns
    -------
    pandas.DataFrame
        Columns ``measure, base, group_a, group_b, estimate, lower, upper, verdict``;
        ``attrs`` holds ``family_wise_level``, ``construction``, ``eps`` and ``family_size``.

    Examples
    --------
    >>> import numpy as np
    >>> import skfair_measures as sfm
    >>> from skfair_measures import bayes
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat(["a", "b", "c"], 3000)
    >>> y = rng.integers(0, 2, g.size)
    >>> wrong = rng.uniform(size=g.size) < np.where(g == "c", 0.4, 0.1)  # accuracy 0.9, 0.9, 0.6
    >>> s = np.where(wrong, 1 - y, y) * 0.8 + 0.1
    >>> res = bayes.posteriors([sfm.msr("fairness.acc")], y, s, sensitive_features=g, method="bb", random_state=0)
    >>> table = bayes.verdicts(res, eps=0.05)
    >>> table[["group_a", "group_b", "verdict"]].values.tolist()
    [['a', 'b', 'within'], ['a', 'c', 'exceeds'], ['b', 'c', 'exceeds']]
    >>> table.attrs["family_wise_level"], table.attrs["construction"].split(":")[0]
    (0.95, 'max-type band over the draws')
    """
    posts = list(posteriors.values()) if isinstance(posteriors, Mapping) else list(posteriors)
    if not posts:
        raise ValueError("posteriors is empty; pass the posteriors of one fit (bayes.posteriors(...)).")
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps={eps!r}; pass a tolerance >= 0.")
    prob = check_prob(prob)
    boxes = {id(p.interval_box) for p in posts}
    if len(boxes) > 1 or len({p.groups.size for p in posts}) > 1:
        raise ValueError("the posteriors come from different fits; pass those of one posteriors(...) call.")
    first = posts[0]
    labels = group_labels(first.groups)
    pairs = list(combinations(range(len(labels)), 2))
    family = [(p, name, a, b) for p in posts for name in p.group_draws for a, b in pairs]
    if first.interval_box is not None:
        rows, how = _box_rows(family, first, prob)
    else:
        rows, how = _draw_rows(family, prob)
    table = pd.DataFrame(
        [[p.key, name, labels[a], labels[b], est, lo, hi, _verdict(est, lo, hi, eps)]
         for (p, name, a, b), (est, lo, hi) in zip(family, rows, strict=True)],
        columns=_COLUMNS,
    )
    table.attrs.update(family_wise_level=prob, construction=how, eps=float(eps),
                       family_size=int((table["verdict"] != "undefined").sum()))
    return table


def _verdict(est: float, lo: float, hi: float, eps: float) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "undefined"
    if -eps <= lo and hi <= eps:
        return "within"
    if lo > eps or hi < -eps:
        return "exceeds"
    return "inconclusive"


def _draw_rows(family: list, prob: float) -> tuple[list[tuple[float, float, float]], str]:
    diffs = np.stack([
        (p.group_draws[name][..., a] - p.group_draws[name][..., b]).ravel() for p, name, a, b in family
    ], axis=1)
    ok = np.isfinite(diffs).all(axis=0)
    mean = np.where(ok, np.nanmean(np.where(np.isfinite(diffs), diffs, np.nan), axis=0), np.nan)
    sd = np.where(ok, np.nanstd(diffs, axis=0, ddof=1), np.nan)
    scale = np.where(sd > 0, sd, 1.0)
    if ok.any():
        t = np.max(np.abs(diffs[:, ok] - mean[ok]) / scale[ok], axis=1)
        c = float(np.quantile(t, prob))
    else:
        c = np.nan
    lo, hi = mean - c * sd, mean + c * sd
    how = (f"max-type band over the draws: mean +- {c:.3g} sd for every difference, holding {prob:g} of the "
           "joint posterior mass")
    return list(zip(mean.tolist(), lo.tolist(), hi.tolist(), strict=True)), how


def _box_rows(family: list, first: MeasurePosterior, prob: float) -> tuple[list[tuple[float, float, float]], str]:
    names = tuple(dict.fromkeys(name for _, name, _, _ in family))
    lower, upper, _ = first.interval_box.at(prob, names)
    rows = []
    for p, name, a, b in family:
        d = p.group_draws[name].reshape(-1, p.groups.size)
        est = float(np.mean(d[:, a] - d[:, b])) if np.isfinite(d[:, [a, b]]).all() else np.nan
        lo, hi = lower[name][a] - upper[name][b], upper[name][a] - lower[name][b]
        if not np.isfinite(est):
            rows.append((np.nan, np.nan, np.nan))
            continue
        rows.append((est, float(min(lo, est)), float(max(hi, est))))
    k = sum(len(first.interval_box.groups[n]) + 1 for n in names)  # as ConfidenceBox.at splits alpha
    how = (f"union bound: simultaneous betting intervals of the {k} group and pooled rates, each at level "
           f"1 - {1 - prob:g}/{k}; differences from the box's corners")
    return rows, how
