"""What a labeled row says about a group: the metrics of active assessment, read off ``base.py``.

Each metric is a Bernoulli rate per group, defined once, in :mod:`skfair_measures.base`:
its numerator and denominator cells of the confusion matrix (found by probing the base
metric, :func:`~skfair_measures.base.ratio_roles`) say which rows *can be asked*
(their prediction is in a denominator column: PPV only asks predicted positives), which
labeled rows *count* (their true label is in a denominator row: TPR counts true
positives only), and which are a *success* (the numerator cell). ``ece`` is accuracy
per score bin, turned into the expected calibration error of each group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..base import CountMetric, get_base, ratio_roles

__all__ = ["METRICS", "ActiveMetric", "get_metric"]


def _side(den_any: np.ndarray) -> bool | None:
    """True/False when only the positive/negative side is in the denominator, None for both."""
    return None if den_any.all() else bool(den_any[1])


@dataclass(frozen=True)
class ActiveMetric:
    """A groupwise rate that labels reveal one row at a time.

    Parameters
    ----------
    key : str
        Name used in ``ActiveAssessment(metric=...)``.
    base : str, optional
        The count-based rate of :mod:`skfair_measures.base` it estimates (default: ``key``).
    binned : bool, default=False
        True for ECE: the rate is accuracy per (group, score bin).
    description : str, optional
        One line for tables and plots (default: the base metric's).

    Attributes
    ----------
    higher_is_better : bool
        Direction: the worst group has the lowest value when True.
    pred_is : bool or None
        Rows can be asked only if ``(y_pred == pos_label) == pred_is``; None: every row.
    true_is : bool or None
        A labeled row counts only if ``(y_true == pos_label) == true_is``; None: every row.
    correct : bool
        Whether the success is ``y_true == y_pred`` over every row (accuracy), which
        needs no positive class and holds for any number of classes.

    Examples
    --------
    >>> m = get_metric("ppv")
    >>> m.pred_is, m.true_is, m.higher_is_better
    (True, None, True)
    """

    key: str
    base: str | None = None
    binned: bool = False
    description: str = ""
    higher_is_better: bool = field(init=False)
    pred_is: bool | None = field(init=False)
    true_is: bool | None = field(init=False)
    correct: bool = field(init=False)
    _num: np.ndarray = field(init=False, repr=False, compare=False)
    _den: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        base = get_base(self.base or self.key)
        if not isinstance(base, CountMetric):
            raise ValueError(f"base={base.name!r} is not a count-based rate; active assessment estimates rates.")
        roles = ratio_roles(base)
        if not roles.simple:
            raise ValueError(f"base={base.name!r} is not one ratio of confusion cells; pass a rate such as 'tpr'.")
        correct = bool(roles.den.all() and (roles.num == np.eye(2, dtype=bool)).all())
        values = {"higher_is_better": not base.minimize and not self.binned, "correct": correct}
        values |= {"pred_is": _side(roles.den.any(axis=0)), "true_is": _side(roles.den.any(axis=1))}
        values |= {"description": self.description or base.description, "_num": roles.num, "_den": roles.den}
        for name, value in values.items():  # a frozen dataclass: its derived fields are set once, here
            object.__setattr__(self, name, value)

    @property
    def needs_pos_label(self) -> bool:
        """Whether the metric refers to a positive class."""
        return not self.correct

    def counts(self, true_pos: np.ndarray, pred_pos: np.ndarray) -> np.ndarray:
        """Which labeled rows enter the rate: their cell is in the denominator.

        A label known up front for a row that could not be asked (a predicted negative
        for PPV) does not enter the rate either. For accuracy every cell is in the
        denominator: every row enters.
        """
        return self._den[true_pos.astype(np.intp), pred_pos.astype(np.intp)]

    def outcome(self, correct: np.ndarray, pred_pos: np.ndarray, true_pos: np.ndarray) -> np.ndarray:
        """Success (1) or failure (0) of each labeled row: its cell is in the numerator."""
        return correct if self.correct else self._num[true_pos.astype(np.intp), pred_pos.astype(np.intp)]

    def expected(self, confidence: np.ndarray, p_pos: np.ndarray, pred_pos: np.ndarray) -> tuple:
        """What the model's scores expect: P(row counts) and P(success | counts) per row.

        ``confidence`` is the score of the predicted class, ``p_pos`` the score of the
        positive class (NaN-free only for metrics that need it).
        """
        if self.correct:
            return np.ones_like(confidence), confidence
        p = pred_pos.astype(np.intp)
        weight = (1.0 - p_pos) * self._den[0, p] + p_pos * self._den[1, p]
        hit = (1.0 - p_pos) * self._num[0, p] + p_pos * self._num[1, p]
        success = np.divide(hit, weight, out=np.zeros_like(weight), where=weight > 0)
        return weight, success


METRICS: dict[str, ActiveMetric] = {
    key: ActiveMetric(key) for key in ("acc", "tpr", "fnr", "fpr", "tnr", "ppv", "fdr", "npv", "for")
}
METRICS["ece"] = ActiveMetric("ece", base="acc", binned=True, description="Expected calibration error")


def get_metric(metric: str | ActiveMetric) -> ActiveMetric:
    """Look a metric up by key, or pass an :class:`ActiveMetric` through.

    Examples
    --------
    >>> get_metric("tpr").true_is
    True
    """
    if isinstance(metric, ActiveMetric):
        return metric
    try:
        return METRICS[metric]
    except (KeyError, TypeError):
        raise ValueError(f"metric={metric!r} is not known; use one of {sorted(METRICS)}.") from None
