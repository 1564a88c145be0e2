"""``method="auto"``: the recommended estimator for the data given, by a rule written as data.

The rule (first match wins), from the reproduction of Ji, Smyth & Steyvers (2020) on
the papers' score files (docs/reproduction_ji2020.md) and the simulations of
``tests/test_bayes_bcr.py`` and ``tests/test_bayes_ppi.py``:

1. no unlabeled scores: ``"bb"``, the Beta-Binomial posterior of the labeled
   counts (nothing else uses only labels);
2. sample weights: ``"ppi"``, the one score-based method that takes weights, and
   whose interval covers by construction;
3. otherwise: ``"bcr"``, the rectified Bayesian calibration: BC's accuracy with
   few labels (the calibration borrows strength across groups), and an interval
   that widens where a group's labels contradict the shared calibration, where
   plain BC is confidently wrong;
4. once the data are validated, ``"bcr"`` becomes ``"bb"`` when the calibration
   model cannot describe them (:func:`~._checks.calibration_checks`: scores that
   anti-predict the label, or a group's scores saturated at the clipping bounds),
   with a :class:`~._checks.CalibrationWarning` naming why. On the papers' files
   those are the cells where BC's interval of Δ TPR covered in a third of the runs
   and BB's in 98%.

The rules above choose the method whose draws the posterior holds (its probabilities,
``prob_within`` and the like, while the interval is theirs). The estimate and the interval
are separate decisions, and an interval, its probability and its verdict come from one
construction: where the interval is widened to hold another construction's estimate it is
a confidence interval, and the probabilities are NaN with the reason.

The interval (:func:`auto_interval`) is the method's own only when every group has at
least :data:`INTERVAL_MIN_LABELS` labeled rows in the denominator of every rate the
measures read. Below that it is the labels' Jeffreys posterior (``method="bb"`` with
``prior="jeffreys"``: each rate ``Beta(k + 1/2, n - k + 1/2)``, drawn through the
confusion cells, its equal-tailed interval through the measure's operation, composites
and ratios included): without unlabeled scores it is auto's whole answer (estimate,
interval and probabilities); with them the draws are these and the interval is widened
to hold the calibration model's estimate (no probabilities); a rate no labeled row
informs then keeps its prior draws (the labels bound it by nothing) and a rate of the
predictions alone is exact on every audited row. Why: with few labels the scores cannot
be trusted for the interval (the calibration checks have no power with 10-20 labels per
group; BC's interval of Δ TPR covered in 0-5% of the runs of some cells at 20 labels),
so the interval rests on the labels, and among intervals of the labels the Jeffreys
posterior is the sharpest that keeps its level with few rows and rates near 0 or 1: its
equal-tailed interval of one rate has coverage close to nominal at every size (Brown,
Cai & DasGupta 2001), and of a difference or ratio as well (Agresti & Min 2005). Held
out on the papers' score files (``benchmarks/reproduce_ji2020_sharper.py``, every
(dataset, model) pair at 20 and 100 labels, 100 runs per cell, none of it tuned on them)
it covered Δ accuracy and Δ TPR in at least 91% of the runs of every cell at a median
width 0.89-1.14 times Beta-Binomial's (the betting interval it replaces: 1.5-2.3 times);
on a seeded synthetic grid (``benchmarks/auto_interval_synthetic.py``: groups of 3-50%
of 20 or 100 labels, rates 0.02-0.98, 882 settings) its worst setting covered in 84-88%
of draws (a group of one or two labeled rows at a rate of 0.02 or 0.98), against 0-85%
for the uniform prior's posterior (the comparator) and 9-84% for MOVER-Jeffreys, on
average in 93-97%, at most 1.11 times the uniform posterior's width. Tried and not kept:
Newcombe's score interval (as good a coverage, up to 1.22 times as wide; over 1.2 times
BB's on bank/age at 20 labels); MOVER-Jeffreys (narrower, but 9-73% coverage for gaps of
0.6 and more with tiny groups); the betting interval with the error budget on the rates
read (1.8-1.9 times BB's).
With sample weights the interval stays the guaranteed one (``method="guaranteed"``,
valid at every number of labels drawn with the weights' inclusion probabilities), and
with every audited row labeled (``target="audited rows"``) the rates are exact. Why 200:
PPI's interval with weights covered 47-87% of runs below 200 labels, and the calibration
checks that send ``bcr`` to ``bb`` have no power with 10-20 labels per group (German with
LR and RF, Compas-VR: docs/reproduction_ji2020.md); no smaller count was shown safe for
every method, so one count serves all.

The estimate (:func:`auto_estimate`): below :data:`INTERVAL_MIN_LABELS` an interval of
the labels alone holds whatever the estimate (widened to it), so the estimate is the one
with the least error: with unlabeled scores and no weights, the calibration model's (BC's
posterior mean of every group rate, from a ``"bcr"`` fit without its rectifier), whether
or not the calibration checks pass. On the 280 (cell, measure) rows of the reproduction
(docs/reproduction_ji2020.md) its mean error was within a point of the lower of BB's and
BC's in 267; the rectified estimate's in 236, and the previous rule's (BCR's, or BB's
where the checks failed) in 215: in the runs where the checks failed, BC's error was
still below BB's on every dataset but one measure of one (Compas-R Gender, Δ accuracy:
11.3 against 11.1 points). The rule has no tuned constant. Otherwise (no scores,
weights, or the method's own interval from :data:`INTERVAL_MIN_LABELS` labels on) the
estimate is the method's own, inside its own interval.

The posterior records the choice: ``post.method`` is the method of the draws,
``post.attrs["method_requested"]`` is ``"auto"``, ``attrs["estimate"]``,
``attrs["estimate_reason"]``, ``attrs["interval"]`` and ``attrs["interval_reason"]``
say which estimate and interval were used and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..base import ratio_roles
from ._bc import data_checks
from ._guaranteed import weighted
from ._method import FitData
from ._table import METHODS

__all__ = [
    "AUTO_RULES",
    "INTERVAL_MIN_LABELS",
    "auto_candidates",
    "auto_estimate",
    "auto_interval",
    "auto_method",
    "checked_method",
]

#: Labeled rows every group needs in every rate's denominator for auto to report its method's own interval.
INTERVAL_MIN_LABELS = 200


def _no_unlabeled(a: Mapping[str, Any]) -> bool:
    return a.get("unlabeled_scores") is None


def _weighted(a: Mapping[str, Any]) -> bool:
    return a.get("sample_weight") is not None or a.get("unlabeled_sample_weight") is not None


def _always(a: Mapping[str, Any]) -> bool:
    return True


#: (condition on the arguments of ``posterior``, method, why), tried in order.
AUTO_RULES: tuple[tuple[Callable[[Mapping[str, Any]], bool], str, str], ...] = (
    (_no_unlabeled, "bb", "no unlabeled scores: the labeled counts alone"),
    (_weighted, "ppi", "sample weights: the score-based method that takes weights"),
    (_always, "bcr", "unlabeled scores: calibration with a rectifier for misfit"),
)


def auto_candidates() -> tuple[str, ...]:
    """The methods ``"auto"`` may use: its rules' and, through rule 4, ``"bb"``."""
    return tuple(dict.fromkeys([m for _, m, _ in AUTO_RULES] + [_FALLBACK]))


def auto_method(arguments: Mapping[str, Any]) -> tuple[str, str]:
    """The method ``"auto"`` stands for, given the arguments of ``posterior``, and why.

    Examples
    --------
    >>> auto_method({"unlabeled_scores": None})
    ('bb', 'no unlabeled scores: the labeled counts alone')
    >>> auto_method({"unlabeled_scores": [0.2, 0.9]})[0]
    'bcr'
    >>> auto_method({"unlabeled_scores": [0.2], "sample_weight": [1.0]})[0]
    'ppi'
    """
    return next((method, why) for applies, method, why in AUTO_RULES if applies(arguments))  # the last always applies


#: Rule 4's method: the labeled counts alone, when a calibration model cannot describe the data.
_FALLBACK = "bb"


def checked_method(method: str, data: FitData) -> tuple[str, str | None]:
    """Rule 4: a method that fits a calibration model gives way to ``"bb"`` when the calibration checks fail.

    Returns the method to use and, when it changed, why.
    """
    if not METHODS[method].calibrates:
        return method, None
    reasons = data_checks(data)
    return (_FALLBACK, "; ".join(reasons)) if reasons else (method, None)


def auto_interval(data: FitData, bases: tuple[Any, ...]) -> tuple[str, str]:
    """Which interval ``"auto"`` reports, and why: ``"own"``, ``"jeffreys"``, ``"guaranteed"`` or ``"exact"``.

    The fewest labeled rows in the denominator of any rate of any group decides: below
    :data:`INTERVAL_MIN_LABELS`, the labels' Jeffreys posterior (with weights: the guaranteed interval).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skfair_measures.base import BASE_METRICS
    >>> from ._method import FitData, Rows
    >>> rows = Rows(np.full(50, 0.7), np.ones(50, dtype=np.intp), np.zeros(50, dtype=np.intp), None)
    >>> data = FitData(np.ones(50, dtype=np.intp), rows, Rows.empty(), pd.Index(["a"]), 0.5)
    >>> auto_interval(data, (BASE_METRICS["tpr"],))[0]
    'jeffreys'
    """
    if data.target == "audited rows" and not data.has_unlabeled:
        if weighted(data):
            return "guaranteed", "target='audited rows' with every row labeled, weighted: the guaranteed interval"
        return "exact", "target='audited rows' with every row labeled: the rates of the rows given, exactly"
    cells = data.y_true * 2 + data.labeled.y_pred
    fewest, where = None, ""
    for base in bases:
        roles = ratio_roles(base)
        if roles.label_free and data.has_unlabeled:
            continue  # read from every row, labeled or not: known exactly, no labels needed
        in_den = roles.den.ravel()[cells]
        n = np.bincount(data.labeled.codes[in_den], minlength=data.n_groups)
        j = int(np.argmin(n))
        if fewest is None or n[j] < fewest:
            fewest, where = int(n[j]), f"{base.name} in group {str(data.groups[j])!r}"
    if fewest is None and bases and data.has_unlabeled:
        return "own", "every rate reads the predictions only, known on every row: the method's own interval"
    if fewest is None or fewest < INTERVAL_MIN_LABELS:
        few = f"{where} has {fewest} labeled row(s) in its denominator, fewer than {INTERVAL_MIN_LABELS}: "
        if weighted(data):
            return "guaranteed", few + "with weights, the guaranteed interval (valid at every number of labels)"
        return "jeffreys", few + "the labels' Jeffreys posterior (near its level at every number of labels)"
    return "own", (
        f"every group has >= {INTERVAL_MIN_LABELS} labeled rows in every rate's denominator "
        f"(fewest: {fewest}, {where}): the method's own interval"
    )


def auto_estimate(method: str, interval: str) -> tuple[str, str]:
    """Which estimate ``"auto"`` reports: ``"calibration"``, ``"exact"`` or ``"own"``, and why.

    Parameters
    ----------
    method : str
        The method of rules 1-3 (:func:`auto_method`), before the calibration checks.
    interval : str
        The interval (:func:`auto_interval`).

    Returns
    -------
    source : str
        ``"calibration"``: BC's posterior mean of every group rate (the calibration fit,
        without the rectifier), through the measure's operation, the interval widened to
        hold it; ``"exact"``: the rates of the audited rows, every one labeled; ``"own"``:
        the method's (the posterior mean of the draws auto reports).
    why : str

    Examples
    --------
    >>> auto_estimate("bcr", "jeffreys")[0], auto_estimate("bb", "jeffreys")[0], auto_estimate("bcr", "own")[0]
    ('calibration', 'own', 'own')
    """
    if interval == "exact":
        return "exact", "every audited row labeled: the rates are known exactly"
    if interval == "own":
        return "own", "the method's own interval, so its own estimate (inside it)"
    if not METHODS[method].calibrates:
        return "own", f"{method}: no calibration model serves these arguments"
    return "calibration", (
        "an interval of the labels alone holds whatever the estimate, so the estimate is the one of least error: the "
        "calibration model's, whether or not its checks pass (docs/reproduction_ji2020.md: within a point of the "
        "lower of BB's and BC's error in 267 of 280 rows, against 236 for the rectified estimate)"
    )
