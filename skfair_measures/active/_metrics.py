"""What a labelled row says about a group: the metrics of active assessment, as data.

Each metric is a Bernoulli rate per group. A row *can be asked* if its prediction
meets ``pred_is`` (known before labelling: PPV only asks predicted positives), it
*counts* once labelled if its true label meets ``true_is`` (TPR counts true
positives only), and it is a *success* when ``success`` holds. ``ece`` is accuracy
per score bin, turned into the expected calibration error of each group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["METRICS", "ActiveMetric", "get_metric"]


@dataclass(frozen=True)
class ActiveMetric:
    """A groupwise rate that labels reveal one row at a time.

    Attributes
    ----------
    key : str
        Name used in ``ActiveAssessment(metric=...)``.
    description : str
        One line for tables and plots.
    higher_is_better : bool
        Direction: the worst group has the lowest value when True.
    pred_is : bool or None
        Rows can be asked only if ``(y_pred == pos_label) == pred_is``; None: every row.
    true_is : bool or None
        A labelled row counts only if ``(y_true == pos_label) == true_is``; None: every row.
    success : {"correct", "pred", "true"}
        The event counted: ``y_true == y_pred``, ``y_pred == pos_label`` or ``y_true == pos_label``.
    success_is : bool
        Whether the event or its complement is the success.
    binned : bool
        True for ECE: the rate is accuracy per (group, score bin).
    """

    key: str
    description: str
    higher_is_better: bool
    pred_is: bool | None = None
    true_is: bool | None = None
    success: Literal["correct", "pred", "true"] = "correct"
    success_is: bool = True
    binned: bool = False

    @property
    def needs_pos_label(self) -> bool:
        """Whether the metric refers to a positive class."""
        return self.pred_is is not None or self.true_is is not None or self.success != "correct"

    def counts(self, true_pos: np.ndarray) -> np.ndarray:
        """Which labelled rows enter the rate, from ``y_true == pos_label``."""
        if self.true_is is None:
            return np.ones(true_pos.shape, dtype=bool)
        return true_pos == self.true_is

    def outcome(self, correct: np.ndarray, pred_pos: np.ndarray, true_pos: np.ndarray) -> np.ndarray:
        """Success (1) or failure (0) of each labelled row."""
        event = {"correct": correct, "pred": pred_pos, "true": true_pos}[self.success]
        return event == self.success_is

    def expected(self, confidence: np.ndarray, p_pos: np.ndarray, pred_pos: np.ndarray) -> tuple:
        """What the model's scores expect: P(row counts) and P(success | counts) per row.

        ``confidence`` is the score of the predicted class, ``p_pos`` the score of the
        positive class (None-free only for metrics that need it).
        """
        if self.true_is is None:
            weight = np.ones_like(confidence)
        else:
            weight = p_pos if self.true_is else 1.0 - p_pos
        if self.success == "correct":
            success = confidence
        elif self.success == "pred":
            success = (pred_pos == self.success_is).astype(float)
        else:
            success = p_pos if self.success_is else 1.0 - p_pos
        return weight, success


METRICS: dict[str, ActiveMetric] = {
    m.key: m
    for m in (
        ActiveMetric("acc", "accuracy", True),
        ActiveMetric("tpr", "true positive rate", True, true_is=True, success="pred"),
        ActiveMetric("fnr", "false negative rate", False, true_is=True, success="pred", success_is=False),
        ActiveMetric("fpr", "false positive rate", False, true_is=False, success="pred"),
        ActiveMetric("tnr", "true negative rate", True, true_is=False, success="pred", success_is=False),
        ActiveMetric("ppv", "positive predictive value", True, pred_is=True, success="true"),
        ActiveMetric("fdr", "false discovery rate", False, pred_is=True, success="true", success_is=False),
        ActiveMetric("npv", "negative predictive value", True, pred_is=False, success="true", success_is=False),
        ActiveMetric("for", "false omission rate", False, pred_is=False, success="true"),
        ActiveMetric("ece", "expected calibration error", False, binned=True),
    )
}


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
