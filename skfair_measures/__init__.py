"""skfair-measures: composable fairness measures for scikit-learn.

A fairness measure is a *base metric* computed in every group (``tpr``, ``fpr``,
``acc``, ``mse``, or any scikit-learn metric) and an *operation* comparing the
groups (``absdiff``, ``ratio``, ``diff_to_reference``, ...). ``msr(key)`` returns
the measures of mlr3fairness' table; every measure is a scikit-learn scorer.

Examples
--------
>>> import skfair_measures as sfm
>>> m = sfm.msr("fairness.tpr")
>>> m([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=["a", "a", "b", "b"])
0.5

``import skfair_measures`` loads neither PyMC, matplotlib nor MLflow: the
subpackages ``bayes``, ``unaware`` and ``plots`` are imported explicitly.
"""

from . import datasets
from ._stats import ConfusionStats, ErrorStats
from .base import BaseMetric, SklearnMetric
from .groupwise import GroupwiseMetrics, groupwise_metrics
from .measures import (
    CompositeMeasure,
    ConstraintMeasure,
    FairnessMeasure,
    Measure,
    MeasureResult,
    PerformanceMeasure,
    UndefinedGroupWarning,
    evaluate_measures,
)
from .operations import Operation
from .registry import msr, msrs
from .results import UndefinedReplicatesWarning
from .scoring import DropColumns, FairnessScorer, MultiMeasureScorer, compute_metrics, fairness_scorer, make_scorers
from .thresholds import ThresholdCurve, disparity_at_thresholds

__version__ = "0.1.0"

__all__ = [
    "BaseMetric",
    "CompositeMeasure",
    "ConfusionStats",
    "ConstraintMeasure",
    "DropColumns",
    "ErrorStats",
    "FairnessMeasure",
    "FairnessScorer",
    "GroupwiseMetrics",
    "Measure",
    "MeasureResult",
    "MultiMeasureScorer",
    "Operation",
    "PerformanceMeasure",
    "SklearnMetric",
    "ThresholdCurve",
    "UndefinedGroupWarning",
    "UndefinedReplicatesWarning",
    "compute_metrics",
    "datasets",
    "disparity_at_thresholds",
    "evaluate_measures",
    "fairness_scorer",
    "groupwise_metrics",
    "make_scorers",
    "msr",
    "msrs",
]
