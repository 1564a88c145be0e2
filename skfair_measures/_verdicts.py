"""Simultaneous verdicts: which group pairs of which measures are within or beyond a tolerance, jointly.

For every base rate of the measures given and every pair of groups ``(a, b)``, the
difference ``rate_a - rate_b`` gets an interval, and all of them hold together with
probability ``prob`` (the family-wise level), by one joint construction, not one
interval each:

- posterior draws (``bb``, ``bc``, ``bcr``, ``ppi``): a max-type band. Each difference
  is standardised by its posterior mean and sd; ``c`` is the ``prob`` quantile over the
  draws of the largest standardised deviation across the whole family; each interval is
  ``mean +- c sd``. The band holds ``prob`` of the joint posterior mass (a credible
  statement; its frequentist error is that of the posterior);
- bootstrap replicates (:func:`skfair_measures.bootstrap`, :func:`skfair_measures.bootstraps`,
  the engines' Poisson bootstrap): the same max-type band centred on the observed
  difference: ``c`` is the ``prob`` quantile over the replicates of the largest
  ``|replicate - observed| / sd`` across the family (the bootstrap max-t band of
  simultaneous inference). A difference whose replicates are undefined more often than
  the percentile interval allows (:func:`~skfair_measures.results.interval_refusal`)
  leaves the family; in the others an undefined replicate counts as the largest
  deviation (the band widens, never narrows). Like every bootstrap interval it is
  asymptotic: with 10 groups x 5 rates (225 differences) its family-wise error was
  4.5% at 400 rows per group, but 7.8% at 150 and 11% at 60 (seeded, 300-400 runs); with
  small groups use the guaranteed box. A difference that never varies across
  replicates (a rate of 0 or 1 in both groups of a small sample) gets a zero-width interval;
- a confidence box (``method="guaranteed"``'s, or ``auto``'s below its row count when its
  interval holds another estimate): the group rates' simultaneous intervals at level
  ``prob`` (union bound over every rate of the family), and each difference's interval is
  ``[lower_a - upper_b, upper_a - lower_b]``, valid jointly because the box is; widened to
  hold the estimate.

A pair is ``within`` when its interval lies in ``[-eps, eps]``, ``exceeds`` when it lies
wholly outside (``lower > eps`` or ``upper < -eps``), ``inconclusive`` otherwise; a pair
with an undefined rate is ``undefined`` and leaves the family. With probability at
least ``prob`` (for the box; of the posterior mass for draws; approximately, for the
bootstrap) no verdict of the table is wrong.

A result takes part by giving its :class:`VerdictFamily` (``result.verdict_family()``):
this module reads only that, so it sits below every kind of result that carries draws.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ._small_groups import SmallGroupWarning
from ._small_sample import SMALL_DENOMINATOR, newcombe, small_rates
from .results import check_prob, group_labels, interval_refusal
from .uncertainty import check_eps, classify, max_type_band

__all__ = ["COLUMNS", "VerdictFamily", "classify", "max_type_band", "verdict_tables", "verdicts"]

#: The columns of every verdict table.
COLUMNS = ["measure", "base", "group_a", "group_b", "estimate", "lower", "upper", "verdict"]


#: Below this many rows in its smallest group a bootstrap verdict table says (and warns once) that its
#: family-wise level is not reached: measured with 10 groups x 5 rates (tests/test_verdicts.py, slow), the
#: error was 11% at 60 rows per group, 7.8% at 150 and 4.5% at 400, against a nominal 5%.
BOOTSTRAP_MIN_ROWS = 400


@dataclass(frozen=True, eq=False)
class VerdictFamily:
    """What one result contributes to a verdict table: per base rate, draws of every group's rate.

    Attributes
    ----------
    key : str
        The measure's key.
    groups : pandas.Index
        The groups, in the order of the last axis of ``draws``.
    draws : dict of str to ndarray of shape (n_draws, n_groups)
        Posterior draws or bootstrap replicates of each base rate in each group.
    source : {"posterior", "bootstrap"}
        Posterior draws are centred on their mean and any undefined draw leaves the pair
        out; bootstrap replicates are centred on ``observed``.
    observed : dict of str to ndarray of shape (n_groups,), optional
        The rates on the observed data (the bootstrap's centre).
    fit : object, optional
        What the draws of one joint fit share (results with different ``fit`` cannot form
        one family: their draws are not joint).
    box : object, optional
        A guaranteed confidence box (``at(prob, bases)`` gives simultaneous bounds of the
        rates, ``split(bases)`` how many intervals share ``1 - prob``); when set, the
        verdicts read the box, not the draws.
    rows : pandas.Series, optional
        Rows per group of the observed data (a bootstrap's); below
        :data:`BOOTSTRAP_MIN_ROWS` in any group the table says its level is not reached.
    counts : RateCounts, optional
        Events and trials of every rate in every group (a bootstrap's, of simple rates):
        with a denominator below ``SMALL_DENOMINATOR`` rows the verdicts read Newcombe
        intervals, not the replicates.
    """

    key: str
    groups: pd.Index
    draws: Mapping[str, np.ndarray]
    source: str = "posterior"
    observed: Mapping[str, np.ndarray] | None = None
    fit: Any = None
    box: Any = None
    rows: pd.Series | None = None
    counts: Any = None


def verdicts(results: Mapping[str, Any] | Iterable[Any], eps: float, prob: float = 0.95) -> pd.DataFrame:
    """Verdicts per measure, base rate and group pair, simultaneous at family-wise level ``prob``.

    Parameters
    ----------
    results : dict of str to result, or iterable of results
        Results of one joint fit, each with ``verdict_family()``: the posteriors of one
        :func:`skfair_measures.bayes.posteriors` call, or the bootstrap results of one
        :func:`skfair_measures.bootstraps` call (or one result alone). The family is every
        base rate of every measure and every pair of groups.
    eps : float
        The tolerance on ``|rate_a - rate_b|``.
    prob : float, default=0.95
        The family-wise level.

    Returns
    -------
    pandas.DataFrame
        Columns ``measure, base, group_a, group_b, estimate, lower, upper, verdict``;
        ``attrs`` holds ``family_wise_level``, ``construction``, ``eps``, ``family_size``
        (the distinct differences with a verdict: a rate that two measures read, such as
        the TPR of ``fairness.eod`` and of ``fairness.tpr``, has a row under each and counts
        once), ``counts`` (distinct differences per verdict, so they add up to ``family_size``
        plus the undefined ones), ``tally`` (the sentence a sink prints: "over 5 distinct
        differences: 1 exceeds, 4 inconclusive", then "(7 rows: ...)" on a line of its own
        where rows share a difference) and ``source`` (``"posterior"`` or ``"bootstrap"``).

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
    >>> boot = sfm.bootstraps(["fairness.acc"], y, (s >= 0.5).astype(int), sensitive_features=g, random_state=0)
    >>> sfm.verdicts(boot, eps=0.05)["verdict"].tolist()
    ['within', 'exceeds', 'exceeds']
    """
    items = list(results.values()) if isinstance(results, Mapping) else list(results)
    if not items:
        raise ValueError(
            "results is empty; pass the results of one fit (bayes.posteriors(...) or sfm.bootstraps(...))."
        )
    eps, prob = check_eps(eps), check_prob(prob)
    families = [_family_of(r) for r in items]
    first, n_draws = families[0], {d.shape[0] for f in families for d in f.draws.values()}
    fits = {(id(f.fit), f.source) for f in families}
    if len(fits) > 1 or len(n_draws) > 1 or any(not f.groups.equals(first.groups) for f in families):
        raise ValueError(
            "the results come from different fits; pass those of one bayes.posteriors(...) or "
            "sfm.bootstraps(...) call (their draws are joint)."
        )
    labels = group_labels(first.groups)
    pairs = list(combinations(range(len(labels)), 2))
    family = [(f, name, a, b) for f in families for name in f.draws for a, b in pairs]
    score = first.source == "bootstrap" and any(small_rates(f.counts) for f in families)
    if first.box is not None:
        est, lo, hi, how = _box_rows(family, first.box, prob)
    elif score and all(f.counts is not None for f in families):
        est, lo, hi, how = _score_rows(family, prob)
    else:
        est, lo, hi, how = _band_rows(family, prob, first.source)
    rows = pd.DataFrame([(f.key, name, labels[a], labels[b]) for f, name, a, b in family], columns=COLUMNS[:4])
    table = rows.assign(estimate=est, lower=lo, upper=hi, verdict=classify(lo, hi, eps))
    caution = None if "Newcombe" in how else _small_bootstrap(families)
    if caution is not None:
        warnings.warn(caution, SmallGroupWarning, stacklevel=2)
        how = f"{how}; CAUTION: {caution}"
    table.attrs.update(family_wise_level=prob, construction=how, eps=eps, source=first.source)
    table.attrs["family_size"] = _distinct(table[table["verdict"] != "undefined"])
    kinds = ("exceeds", "inconclusive", "undefined", "within")
    table.attrs["counts"] = {v: _distinct(table[table["verdict"] == v]) for v in kinds}
    tally = ", ".join(f"{n} {v}" for v, n in table.attrs["counts"].items() if n)
    shared = len(table) > _distinct(table)  # rows of measures that read one rate share its difference
    rows_note = f"\n({len(table)} rows: measures that read one rate share its difference)" if shared else ""
    table.attrs["tally"] = f"over {table.attrs['family_size']} distinct differences: {tally}{rows_note}"
    if caution is not None:
        table.attrs["caution"] = caution
    return table


def _distinct(rows: pd.DataFrame) -> int:
    """Distinct differences (base rate, group pair) among the rows: the family the level is over."""
    return len(rows[["base", "group_a", "group_b"]].drop_duplicates())


def _small_bootstrap(families: list[VerdictFamily]) -> str | None:
    """What a bootstrap table must say when a group is too small for its level to hold (else None)."""
    sizes = [np.min(np.asarray(f.rows, float)) for f in families if f.source == "bootstrap" and f.rows is not None]
    smallest = float(min(sizes, default=np.inf))
    if smallest >= BOOTSTRAP_MIN_ROWS:
        return None
    return (
        f"the smallest group has {smallest:g} rows (fewer than {BOOTSTRAP_MIN_ROWS}), where bootstrap verdicts "
        "were measured wrong more often than the level says (11% at 60 rows per group, 7.8% at 150, for a "
        "nominal 5%); for a level that holds at every size use bayes.posteriors(..., method='guaranteed')"
    )


def verdict_tables(results: Mapping[str, Any] | Iterable[Any], eps: float, prob: float = 0.95) -> list[pd.DataFrame]:
    """One verdict table per joint fit among mixed results: what a report or a tracking run shows.

    Results are grouped by the fit their draws come from (one :func:`~skfair_measures.bootstraps`
    or :func:`~skfair_measures.bootstrap` call, one posterior fit); each group gets its
    own :func:`verdicts` table, whose family-wise level holds for that table. Results
    without joint draws (point results, estimates without per-group draws) are left out.

    Examples
    --------
    >>> import numpy as np
    >>> import skfair_measures as sfm
    >>> y, p, g = [1, 0] * 400, [1, 0, 0, 0] * 200, ["a"] * 400 + ["b"] * 400
    >>> both = {"point": sfm.msr("fairness.acc").evaluate(y, p, sensitive_features=g),
    ...         "boot": sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, random_state=0)}
    >>> [t.attrs["source"] for t in verdict_tables(both, eps=0.05)]
    ['bootstrap']
    """
    eps, prob = check_eps(eps), check_prob(prob)
    fits: dict[tuple, list[Any]] = {}
    for r in results.values() if isinstance(results, Mapping) else results:
        if not hasattr(r, "verdict_family"):  # no joint draws
            continue
        try:
            family = r.verdict_family()
        except ValueError:  # a result without per-group draws
            continue
        n_draws = {d.shape[0] for d in family.draws.values()}
        fits.setdefault((family.source, id(family.fit), tuple(family.groups), tuple(n_draws)), []).append(r)
    return [verdicts(group, eps, prob) for group in fits.values()]


def _family_of(result: Any) -> VerdictFamily:
    get = getattr(result, "verdict_family", None)
    if get is None:
        raise TypeError(
            f"{type(result).__name__} has no joint draws to give verdicts from; pass bootstrap results "
            "(sfm.bootstraps(...)) or posteriors (bayes.posteriors(...))."
        )
    return get()


def _differences(family: list) -> np.ndarray:
    """Draws of every difference of the family, shape ``(n_draws, len(family))``."""
    return np.stack([f.draws[name][:, a] - f.draws[name][:, b] for f, name, a, b in family], axis=1)


def _band_rows(family: list, prob: float, source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    diffs = _differences(family)
    if source == "posterior":  # any undefined draw leaves the pair out (a share of draws is not a probability)
        ok, center = np.isfinite(diffs).all(axis=0), np.full(len(family), np.nan)
        center[ok] = diffs[:, ok].mean(axis=0)
    else:
        center = np.array([f.observed[name][a] - f.observed[name][b] for f, name, a, b in family], dtype=float)
        ok = np.isfinite(center) & np.array([interval_refusal(d, prob) is None for d in diffs.T], dtype=bool)
    lo, hi = np.full(len(family), np.nan), np.full(len(family), np.nan)
    lo[ok], hi[ok], c = max_type_band(diffs[:, ok], center[ok], prob)
    est = np.where(np.isfinite(center), center, np.nan)
    band = f"{c:.3g} sd for every difference, holding {prob:g} of the"
    if source == "posterior":
        return est, lo, hi, f"max-type band over the draws: mean +- {band} joint posterior mass"
    how = f"max-type band over the bootstrap replicates: observed +- {band} replicates jointly (asymptotic)"
    return est, lo, hi, how


def _box_rows(family: list, box: Any, prob: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    names = tuple(dict.fromkeys(name for _, name, _, _ in family))
    lower, upper, _ = box.at(prob, names, pooled=False)  # differences read the group rates only
    diffs = _differences(family)
    ok = np.isfinite(diffs).all(axis=0)
    est = np.full(len(family), np.nan)
    est[ok] = diffs[:, ok].mean(axis=0)
    lo = np.array([lower[name][a] - upper[name][b] for _, name, a, b in family], dtype=float)
    hi = np.array([upper[name][a] - lower[name][b] for _, name, a, b in family], dtype=float)
    lo, hi = np.where(ok, np.minimum(lo, est), np.nan), np.where(ok, np.maximum(hi, est), np.nan)
    k = box.split(names, pooled=False)
    how = (
        f"union bound: simultaneous intervals ({box.name}) of the {k} group rates, each at level "
        f"1 - {1 - prob:g}/{k}; differences from the box's corners"
    )
    return est, lo, hi, how


def _score_rows(family: list, prob: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Newcombe intervals of every difference at level ``1 - (1 - prob) / K``: a union bound over the K distinct ones.

    What bootstrap verdicts read when a rate's denominator holds fewer than
    ``SMALL_DENOMINATOR`` rows in some group, where the max-type band over the
    replicates errs more often than its level (11% at 60 rows per group for a nominal
    5%) and gives zero-width intervals to rates of 0 or 1.
    """
    pairs = [(f.counts.events[name], f.counts.trials[name], name, a, b) for f, name, a, b in family]
    ok = np.array([n[a] > 0 and n[b] > 0 for _, n, _, a, b in pairs], dtype=bool)
    k = max(len({(name, a, b) for (_, _, name, a, b), good in zip(pairs, ok, strict=True) if good}), 1)
    est, lo, hi = np.full(len(family), np.nan), np.full(len(family), np.nan), np.full(len(family), np.nan)
    for i, (e, n, _, a, b) in enumerate(pairs):
        if ok[i]:
            est[i] = e[a] / n[a] - e[b] / n[b]
            lo[i], hi[i] = newcombe(e[a], n[a], e[b], n[b], (1.0 - prob) / k)
    how = (
        f"union bound: Newcombe hybrid score intervals (continuity-corrected) of the {k} differences, each at "
        f"level 1 - {1 - prob:g}/{k} (a rate's denominator has fewer than {SMALL_DENOMINATOR} rows in some group, "
        "where the bootstrap band errs more often than its level)"
    )
    return est, lo, hi, how
