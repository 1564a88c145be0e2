"""skfair-measures: composable fairness measures for scikit-learn.

A fairness measure is a *base metric* computed in every group (``tpr``, ``fpr``,
``acc``, ``mse``, or any scikit-learn metric) and an *operation* comparing the
groups (``absdiff``, ``ratio``, ``diff_to_reference``, ...). ``msr(key)`` returns
the measures of mlr3fairness' table; ``fairness_scorer(m)`` makes any of them a
scikit-learn scorer.

Examples
--------
>>> import skfair_measures as sfm
>>> m = sfm.msr("fairness.tpr")
>>> m([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=["a", "a", "b", "b"])
0.5

``import skfair_measures`` loads neither PyMC, matplotlib, MLflow nor QuaPy: the
subpackages ``bayes`` and ``plots`` are imported explicitly, and ``unaware`` (whose
measures have registry keys) loads QuaPy only when a quantifier needs it.
"""

from . import datasets
from ._bootstrap import BootstrapResult, bootstrap
from ._stats import ConfusionStats, ErrorStats
from .base import BaseMetric, SklearnMetric
from .engines import compute_metrics, evaluate_measures
from .groupwise import GroupwiseMetrics, groupwise_metrics
from .measures import (
    CompositeMeasure,
    ConstraintMeasure,
    FairnessMeasure,
    Measure,
    MeasureResult,
    PerformanceMeasure,
    UndefinedGroupWarning,
)
from .operations import Operation
from .registry import msr, msrs
from .results import UndefinedReplicatesWarning
from .scoring import DropColumns, FairnessScorer, MultiMeasureScorer, fairness_scorer, make_scorers
from .selection import (
    ConstrainedRefit,
    InfeasibleConstraintWarning,
    NoFeasibleCandidateError,
    constrained_refit,
    constrained_threshold,
    pareto_front,
)
from .thresholds import ThresholdCurve, disparity_at_thresholds

__version__ = "0.1.0"


def __getattr__(name: str):
    """``plan_labels`` lives in ``bayes`` (it simulates the guaranteed interval); loaded when first asked for."""
    if name == "plan_labels":
        from .bayes._plan import plan_labels

        return plan_labels
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BaseMetric",
    "BootstrapResult",
    "CompositeMeasure",
    "ConstrainedRefit",
    "ConfusionStats",
    "ConstraintMeasure",
    "DropColumns",
    "ErrorStats",
    "FairnessMeasure",
    "FairnessScorer",
    "GroupwiseMetrics",
    "InfeasibleConstraintWarning",
    "Measure",
    "MeasureResult",
    "MultiMeasureScorer",
    "NoFeasibleCandidateError",
    "Operation",
    "PerformanceMeasure",
    "SklearnMetric",
    "ThresholdCurve",
    "UndefinedGroupWarning",
    "UndefinedReplicatesWarning",
    "bootstrap",
    "compute_metrics",
    "constrained_refit",
    "constrained_threshold",
    "datasets",
    "disparity_at_thresholds",
    "evaluate_measures",
    "fairness_scorer",
    "groupwise_metrics",
    "make_scorers",
    "msr",
    "msrs",
    "pareto_front",
    "plan_labels",
]
