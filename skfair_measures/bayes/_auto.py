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
are separate decisions; under the guaranteed interval there are no probabilities (NaN with
the reason): an interval, its probability and its verdict come from one construction.
The interval (:func:`auto_interval`) is that method's own only when every group has at least
:data:`INTERVAL_MIN_LABELS` labeled rows in the denominator of every rate the measures
read; below that it is the guaranteed interval (``method="guaranteed"``: one-look
betting intervals, prediction-powered by the scores when they are given and there are
no weights), widened if need be to hold the estimate, so the reported value lies inside
the reported interval and coverage stays at least the nominal level at every number of
labels. Why 200: PPI's interval with weights covered 47-87% of runs below 200 labels, and
the calibration checks that send ``bcr`` to ``bb`` have no power with 10-20 labels per
group (German with LR and RF, Compas-VR: docs/reproduction_ji2020.md); no smaller count
was shown safe for every method, so one count serves all.

The estimate (:func:`auto_estimate`): while the interval is the guaranteed one, its
coverage does not depend on the estimate, so the estimate is the one with the least
error: with unlabeled scores and no weights, the calibration model's (BC's posterior
mean of every group rate, from the fit ``"bcr"`` makes anyway, without its rectifier),
whether or not the calibration checks pass. On the 280 (cell, measure) rows of the
reproduction (docs/reproduction_ji2020.md) its mean error was within a point of the
lower of BB's and BC's in 267; the rectified estimate's in 236, and the previous rule's
(BCR's, or BB's where the checks failed) in 215: in the runs where the checks failed,
BC's error was still below BB's on every dataset but one measure of one (Compas-R
Gender, Δ accuracy: 11.3 against 11.1 points). The rule has no tuned constant.
Otherwise (no scores, weights, or the method's own interval from
:data:`INTERVAL_MIN_LABELS` labels on) the estimate is the method's own, inside its
own interval.

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
from ._bc import CLIP
from ._checks import calibration_checks
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
    for applies, method, why in AUTO_RULES:
        if applies(arguments):
            return method, why
    raise AssertionError("the last rule always applies")  # pragma: no cover


#: Rule 4's method: the labeled counts alone, when a calibration model cannot describe the data.
_FALLBACK = "bb"


def checked_method(method: str, data: FitData) -> tuple[str, str | None]:
    """Rule 4: a method that fits a calibration model gives way to ``"bb"`` when the calibration checks fail.

    Returns the method to use and, when it changed, why.
    """
    if not METHODS[method].calibrates:
        return method, None
    lab, unl = data.labeled, data.unlabeled
    reasons = calibration_checks(
        lab.scores,
        data.y_true,
        lab.codes,
        data.groups,
        np.concatenate([lab.scores, unl.scores]),
        np.concatenate([lab.codes, unl.codes]),
        CLIP,
        np.concatenate([lab.multiplicity, unl.multiplicity]),
    )
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
