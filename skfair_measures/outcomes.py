"""Disparities of per-item outcomes between two groups, with intervals: LLM answers judged, refusals, scores.

An outcome is a number in ``[0, 1]`` per item: a bool (refused, flagged, correct), a
judge's yes/no, or a score. Three questions, each with an interval and a verdict:

- :func:`outcome_disparity`: does the mean outcome differ between two groups of items
  (users of one dialect, of one name's apparent gender)? The difference ``rate_b -
  rate_a`` (or the ratio ``rate_b / rate_a``) with the package's small-sample score
  intervals for binary outcomes (Newcombe's hybrid score, MOVER-Wilson for the ratio,
  both continuity-corrected: ``_small_sample``), Welch's t (the delta method on the log
  for the ratio) for scores;
- the same with ``judge=``: the outcome that matters (a human's label) is known on a
  few items and a cheap judge's (an LLM judge, a code scorer) on all of them. The
  judge's outcomes predict the human's and a prediction-powered estimate (PPI++,
  Angelopoulos, Duchi and Zrnic 2023; the ``lambda`` of
  :func:`skfair_measures.bayes.tuned_lambda`) corrects their bias per group
  with the labelled items: the interval is valid however wrong the judge is and
  narrower the better it predicts the human;
- :func:`paired_disparity`: counterfactual pairs, two prompts that differ only in a group
  term (a name, a dialect, a pronoun); the mean paired difference with Tango's score
  interval and McNemar's exact test (binary), or the paired t (scores).

The target is the population the items are drawn from (the traffic, the prompt
distribution), not only the items at hand; with ``judge=`` the labelled items must be
a random sample of the items (within each group at least), chosen without looking at
the judge's outcome. The intervals are about one difference; for many groups or many
outcomes at once, correct for the multiplicity.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ._small_sample import mover_ratio, newcombe, wilson
from .bayes import ASYMPTOTIC_ROWS, AsymptoticWarning, tuned_lambda
from .results import check_prob
from .uncertainty import Estimate
from .uncertainty._proportions import mcnemar_exact, tango

__all__ = ["OutcomeDisparity", "outcome_disparity", "paired_disparity"]


#: The interval of each kind of outcome (labels only and binary, with a judge, scores) and measure.
_CONSTRUCTIONS = {
    ("binary", "difference"): "Newcombe hybrid score (continuity-corrected)",
    ("binary", "ratio"): "MOVER-Wilson score (ratio, continuity-corrected)",
    ("judge", "difference"): "prediction-powered (PPI++)",
    ("judge", "ratio"): "prediction-powered (PPI++), log ratio",
    ("scores", "difference"): "Welch t",
    ("scores", "ratio"): "Welch t, log ratio",
}


class OutcomeDisparity(Estimate):
    """A disparity of outcomes between two groups (an :class:`~skfair_measures.uncertainty.Estimate`).

    Besides the estimate's value, ``interval(prob)``, ``verdict(eps)`` (for a ratio, against
    ``1 +- eps``), ``summary()`` and ``by_group`` (items, labelled items, rate and its interval
    per group), it holds the two groups compared and the test of no disparity where one goes
    with the construction.

    Attributes
    ----------
    groups : tuple of str
        ``(a, b)``: the reference group and the other; the value is ``rate_b - rate_a`` (``rate_b / rate_a``).
    p_value, test : float, str
        The test of no disparity (McNemar's exact test, the paired t-test), NaN and "" where none.
    """

    def __init__(
        self, key: str, value: float, *, groups: tuple[str, str], p_value: float = np.nan, test: str = "", **kwargs: Any
    ) -> None:
        kwargs.setdefault("interval", lambda prob: (np.nan, np.nan))  # undefined: NaN bounds at every prob
        center = 1.0 if key.endswith("ratio") else 0.0
        super().__init__(key, value, target="population", center=center, **kwargs)
        self.groups, self.p_value, self.test = groups, float(p_value), test

    def note(self, prob: float | None = None) -> str:
        """The groups compared and the test, then the estimate's own note."""
        a, b = self.groups
        head = f"{b} vs {a}" + (f"; {self.test} p = {self.p_value:.4g}" if self.test else "")
        return "; ".join(p for p in (head, super().note(prob)) if p)


def _outcomes(values: Any, name: str, n: int | None = None) -> np.ndarray:
    """Floats in ``[0, 1]`` (NaN: missing); a ``ValueError`` naming ``name`` otherwise."""
    try:
        out = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name}: outcomes must be bools or numbers in [0, 1] ({err}).") from None
    if n is not None and out.size != n:
        raise ValueError(f"{name} has {out.size} values but group has {n}; pass one per item.")
    bad = np.isfinite(out) & ((out < 0) | (out > 1)) | np.isinf(out)
    if bad.any():
        raise ValueError(f"{name}: {int(bad.sum())} value(s) outside [0, 1], e.g. {out[bad][0]}; rescale them.")
    return out


def _two_groups(group: Any, reference: Any) -> tuple[np.ndarray, tuple[str, str]]:
    g = pd.Series(np.asarray(group, dtype=object).ravel())
    if g.isna().any():
        raise ValueError(f"group is missing on {int(g.isna().sum())} item(s); give every item a group.")
    g = g.astype(str)
    labels = sorted(g.unique())
    if len(labels) != 2:
        raise ValueError(
            f"group has {len(labels)} value(s) {labels[:6]}; a disparity compares two groups: map the items to two "
            "(a function of the item), or select the items of two groups first."
        )
    if reference is not None and str(reference) not in labels:
        raise ValueError(f"reference={reference!r} is not a group; pass one of {labels}.")
    a = labels[0] if reference is None else str(reference)
    return (g == a).to_numpy(), (a, next(x for x in labels if x != a))


def _ppi_mean(y: np.ndarray, f: np.ndarray, f_u: np.ndarray) -> tuple[float, float, float, float, float]:
    """PPI++ mean of ``y`` from labelled ``(y, f)`` and unlabelled ``f_u``.

    Returns the estimate, its variance, the variance's labelled part and that part's
    degrees of freedom, and ``lambda``.
    ``theta = lambda mean(f_u) + mean(y - lambda f)``, the two means independent, so the
    variance is ``var(y - lambda f) / n + lambda^2 var(f_u) / N`` (``ppi_py.ppi_mean_ci``'s).
    ``lambda`` is fitted on the same labels, so the residual variance loses one more degree
    of freedom (``n - 2``): without it, and with normal quantiles, the 95% interval of a
    difference with 75 labels per group covered 92.8% (``benchmarks/bench_genai.py``).
    """
    lam = tuned_lambda(y, f, f_u) if f_u.size > 1 else 0.0
    r, df = y - lam * f, y.size - (2 if lam > 0 else 1)
    var_l = float(np.sum((r - r.mean()) ** 2)) / max(df, 1) / y.size
    var_u = lam**2 * float(np.var(f_u, ddof=1)) / f_u.size if lam > 0 else 0.0
    return lam * float(f_u.mean()) + float(r.mean()) if lam > 0 else float(r.mean()), var_l + var_u, var_l, df, lam


def _student(value: float, parts: list[tuple], scales: tuple = (1.0, 1.0), log: bool = False) -> Callable:
    """Bounds ``value +- t_df se`` (on the log scale with ``log``) from independent parts ``(var, var_l, df_l)``.

    ``se^2 = sum(scale^2 var)``; ``df`` is Welch-Satterthwaite's over the labelled parts
    (the unlabelled means are estimated from thousands of items: taken as known).
    """
    v = [s**2 * var for s, (var, _, _) in zip(scales, parts, strict=True)]
    v_l = [(s**2 * var_l) ** 2 / max(d, 1) for s, (_, var_l, d) in zip(scales, parts, strict=True)]
    df = sum(v) ** 2 / sum(v_l) if sum(v_l) > 0 else np.inf

    def bounds(prob: float) -> tuple[float, float]:
        h = float(stats.t.ppf(0.5 + prob / 2.0, df)) * np.sqrt(sum(v))
        return (value * np.exp(-h), value * np.exp(h)) if log else (value - h, value + h)

    return bounds


def outcome_disparity(
    outcome: Any,
    group: Any,
    *,
    judge: Any = None,
    measure: str = "difference",
    prob: float = 0.95,
    reference: Any = None,
    name: str = "outcome",
) -> OutcomeDisparity:
    """Disparity of a per-item outcome between two groups, with an interval about the items' population.

    Parameters
    ----------
    outcome : array-like of shape (n_items,)
        Bools or numbers in ``[0, 1]``; NaN where the item has none (with ``judge=``: the
        items nobody labelled).
    group : array-like of shape (n_items,)
        Each item's group; exactly two groups.
    judge : array-like of shape (n_items,), optional
        A predictor of ``outcome`` on every item (an LLM judge's verdict, a code scorer):
        the estimate is then prediction-powered (PPI++).
    measure : {"difference", "ratio"}, default="difference"
        ``rate_b - rate_a`` or ``rate_b / rate_a``.
    prob : float, default=0.95
        The interval's level.
    reference : str, optional
        Group ``a``, the one compared against (default: the first in sorted order).
    name : str, default="outcome"
        The outcome's name: the estimate's key is ``"<name>.<measure>"``.

    Returns
    -------
    OutcomeDisparity

    Examples
    --------
    >>> d = outcome_disparity([1, 0, 0, 0, 1, 1, 1, 0], list("aaaabbbb"))
    >>> d.value, d.construction
    (0.5, 'Newcombe hybrid score (continuity-corrected)')
    >>> [round(b, 3) for b in d.interval()]
    [-0.25, 0.835]
    >>> d.verdict(eps=0.05)
    'inconclusive'
    """
    if measure not in ("difference", "ratio"):
        raise ValueError(f"measure={measure!r}; pass 'difference' or 'ratio'.")
    prob = check_prob(prob)
    in_a, groups = _two_groups(group, reference)
    y = _outcomes(outcome, "outcome", in_a.size)
    f = None if judge is None else _outcomes(judge, "judge", in_a.size)
    if f is not None and not np.isfinite(f).all():
        raise ValueError(f"judge is missing on {int((~np.isfinite(f)).sum())} item(s); it must score every item.")
    labelled = np.isfinite(y)
    binary = bool(np.isin(y[labelled], (0.0, 1.0)).all())
    rows, parts = [], []
    for label, mask in zip(groups, (in_a, ~in_a), strict=True):
        lab = mask & labelled
        y_g = y[lab]
        row = {"group": label, "items": int(mask.sum()), "labelled": int(lab.sum())}
        if f is not None:
            if 0 < lab.sum() < ASYMPTOTIC_ROWS:
                few = f"group {label!r} has {int(lab.sum())} labelled item(s); the prediction-powered interval is "
                few += f"asymptotic and can miss more often than 1 - prob below {ASYMPTOTIC_ROWS}: label more."
                warnings.warn(few, AsymptoticWarning, stacklevel=2)
            est, *part, lam = _ppi_mean(y_g, f[lab], f[mask & ~labelled]) if lab.sum() >= 2 else (np.nan,) * 5
            row |= {"judge_rate": float(f[mask].mean()), "lambda": lam}
            lo, hi = _student(est, [part], (1.0,))(prob)
            parts.append(part)
        elif binary:
            est, (lo, hi) = (y_g.mean() if y_g.size else np.nan), map(float, wilson(y_g.sum(), y_g.size, 1 - prob))
            parts.append((int(y_g.sum()), y_g.size))
        else:
            est, var = (y_g.mean(), np.var(y_g, ddof=1) / y_g.size) if y_g.size > 1 else (np.nan, np.nan)
            parts.append((var, var, y_g.size - 1))
            lo, hi = _student(est, parts[-1:], (1.0,))(prob)
        rows.append(row | {"rate": float(est), "lower": float(lo), "upper": float(hi)})
    table = pd.DataFrame(rows).set_index("group")
    n = int(labelled.sum()) if f is None else in_a.size
    kind = _CONSTRUCTIONS["judge" if f is not None else "binary" if binary else "scores", measure]
    common = dict(key=f"{name}.{measure}", n=n, by_group=table, groups=groups, prob=prob, construction=kind)
    (ra, rb), undefined = table["rate"].to_numpy(), table.index[~np.isfinite(table["rate"])].tolist()
    if undefined:
        why = f"group(s) {undefined} have fewer than {2 if f is not None or not binary else 1} item(s) with the outcome"
        return OutcomeDisparity(value=np.nan, reason=why, **common)
    if measure == "ratio" and not (ra > 0 and rb > 0):  # the log ratio's interval needs both
        zero = groups[0] if not ra > 0 else groups[1]
        why = f"the rate of group {zero!r} is 0, so the ratio has no interval; use measure='difference'"
        return OutcomeDisparity(value=np.nan, reason=why, **common)
    value = float(rb - ra if measure == "difference" else rb / ra)
    if f is None and binary:
        (ka, na), (kb, nb) = parts
        score = newcombe if measure == "difference" else mover_ratio
        return OutcomeDisparity(value=value, interval=lambda p: score(kb, nb, ka, na, 1 - p), **common)
    scales = (1.0, 1.0) if measure == "difference" else (1 / ra, 1 / rb)
    return OutcomeDisparity(value=value, interval=_student(value, parts, scales, log=measure == "ratio"), **common)


def paired_disparity(
    first: Any, second: Any, *, prob: float = 0.95, names: Sequence[str] = ("first", "second"), name: str = "outcome"
) -> OutcomeDisparity:
    """Disparity of outcomes over pairs of items that differ only in the group: ``mean(second - first)``.

    Binary outcomes get Tango's score interval and McNemar's exact test (only the
    discordant pairs carry information); scores get the paired t interval and test.

    Parameters
    ----------
    first, second : array-like of shape (n_pairs,)
        The outcome of each pair's two members (bools or numbers in ``[0, 1]``).
    prob : float, default=0.95
        The interval's level.
    names : (str, str), default=("first", "second")
        The two groups' names, for the table.
    name : str, default="outcome"
        The outcome's name: the estimate's key is ``"<name>.counterfactual_difference"``.

    Returns
    -------
    OutcomeDisparity

    Examples
    --------
    >>> d = paired_disparity([0] * 40 + [1] * 10, [0] * 30 + [1] * 20, names=("he", "she"))
    >>> d.value, d.construction, d.test
    (0.2, 'Tango score (paired)', 'McNemar exact')
    >>> round(d.p_value, 4)
    0.002
    """
    prob = check_prob(prob)
    x = _outcomes(first, "first")
    y = _outcomes(second, "second", x.size)
    if not (np.isfinite(x) & np.isfinite(y)).all():
        raise ValueError("first and second must have an outcome on every pair; drop the incomplete pairs.")
    groups = (str(names[0]), str(names[1]))
    rates = [x.mean(), y.mean()] if x.size else np.nan
    table = pd.DataFrame({"group": groups, "items": x.size, "rate": rates}).set_index("group")
    binary = bool(np.isin(np.concatenate([x, y]), (0.0, 1.0)).all())
    common = dict(key=f"{name}.counterfactual_difference", n=int(x.size), groups=groups, prob=prob)
    common["construction"] = "Tango score (paired)" if binary else "paired t"
    if x.size < 2:
        return OutcomeDisparity(value=np.nan, by_group=table, reason=f"{x.size} pair(s); pass at least 2", **common)
    value = float(np.mean(y - x))
    if binary:
        b, c = int(((y == 1) & (x == 0)).sum()), int(((y == 0) & (x == 1)).sum())
        lower, upper = wilson([x.sum(), y.sum()], [x.size, y.size], 1 - prob)
        table = table.assign(only_this=[c, b], lower=lower, upper=upper)
        p_value, test, interval = mcnemar_exact(b, c), "McNemar exact", lambda p: tango(b, c, x.size, p)
    else:
        res = stats.ttest_rel(y, x)
        p_value, test, interval = float(res.pvalue), "paired t-test", res.confidence_interval  # (low, high) at p
    return OutcomeDisparity(value=value, by_group=table, p_value=p_value, test=test, interval=interval, **common)
