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

# Imported under private names: ``dir(skfair_measures)`` and its namespace hold only ``__all__`` (and dunders).
import importlib.util as _importlib_util
import typing as _typing
from importlib import import_module as _import_module

#: Where each public name lives. The names load on first use (PEP 562), so ``import
#: skfair_measures`` (and the ``skfair`` command's ``--help``) costs milliseconds, not the
#: import of scikit-learn; ``from skfair_measures import msr`` and ``sfm.msr`` work as before.
_WHERE = {
    "datasets": None,
    "BootstrapResult": "._bootstrap",
    "bootstrap": "._bootstrap",
    "bootstraps": "._bootstrap",
    "ConfusionStats": "._counts",
    "ErrorStats": "._counts",
    "BaseMetric": ".base",
    "SklearnMetric": ".base",
    "compute_metrics": ".engines",
    "evaluate_measures": ".engines",
    "GroupwiseMetrics": ".groupwise",
    "groupwise_metrics": ".groupwise",
    "CompositeMeasure": ".measures",
    "ConstraintMeasure": ".measures",
    "FairnessMeasure": ".measures",
    "Measure": ".measures",
    "MeasureResult": ".measures",
    "PerformanceMeasure": ".measures",
    "UndefinedGroupWarning": ".measures",
    "Operation": ".operations",
    "msr": ".registry",
    "msrs": ".registry",
    "UndefinedReplicatesWarning": ".results",
    "Estimate": ".uncertainty",
    "summarize": ".uncertainty",
    "DropColumns": ".scoring",
    "FairnessScorer": ".scoring",
    "MultiMeasureScorer": ".scoring",
    "fairness_scorer": ".scoring",
    "make_scorers": ".scoring",
    "ConstrainedRefit": ".selection",
    "InfeasibleConstraintWarning": ".selection",
    "NoFeasibleCandidateError": ".selection",
    "constrained_refit": ".selection",
    "constrained_threshold": ".selection",
    "pareto_front": ".selection",
    "plan_labels": ".bayes",  # it simulates the guaranteed interval
    "ThresholdCurve": ".thresholds",
    "disparity_at_thresholds": ".thresholds",
    "bias_audit": ".audits",
    "verdict_tables": "._verdicts",
    "verdicts": "._verdicts",
}

if _typing.TYPE_CHECKING:  # pragma: no cover
    from . import datasets
    from ._bootstrap import BootstrapResult, bootstrap, bootstraps
    from ._counts import ConfusionStats, ErrorStats
    from ._verdicts import verdict_tables, verdicts
    from .audits import bias_audit
    from .base import BaseMetric, SklearnMetric
    from .bayes import plan_labels
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
    from .uncertainty import Estimate, summarize


def __getattr__(name: str) -> object:
    """A public name (or a submodule such as ``registry``), imported on first use."""
    if name in _WHERE:
        where = _WHERE[name]
        value = _import_module(f".{name}" if where is None else where, __name__)
        value = value if where is None else getattr(value, name)
    elif not name.startswith("__") and _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        value = _import_module(f".{name}", __name__)  # sfm.registry, sfm.results, ... as before
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only (``__all__``, ``__version__``): no import helpers, no submodules loaded on the way."""
    return sorted([*__all__, "__version__"])


__version__ = "0.1.0"


__all__ = [
    "BaseMetric",
    "BootstrapResult",
    "CompositeMeasure",
    "ConstrainedRefit",
    "ConfusionStats",
    "ConstraintMeasure",
    "DropColumns",
    "ErrorStats",
    "Estimate",
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
    "bias_audit",
    "bootstrap",
    "bootstraps",
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
    "summarize",
    "verdict_tables",
    "verdicts",
]
