"""The public names of skfair_measures, listed once: the static types, and the table the package loads lazily.

Type checkers read this stub (``py.typed`` is shipped); at run time ``__init__.py`` hands it to
``lazy_loader.attach_stub``, which builds ``__getattr__``, ``__dir__`` and ``__all__`` from these imports.
``name as name`` is PEP 484's mark of a re-export in a stub.
"""

from . import datasets as datasets
from ._bootstrap import BootstrapResult as BootstrapResult
from ._bootstrap import bootstrap as bootstrap
from ._bootstrap import bootstraps as bootstraps
from ._counts import ConfusionStats as ConfusionStats
from ._counts import ErrorStats as ErrorStats
from ._verdicts import verdict_tables as verdict_tables
from ._verdicts import verdicts as verdicts
from .audits import bias_audit as bias_audit
from .base import BaseMetric as BaseMetric
from .base import SklearnMetric as SklearnMetric
from .bayes import plan_labels as plan_labels
from .engines import compute_metrics as compute_metrics
from .engines import evaluate_measures as evaluate_measures
from .groupwise import GroupwiseMetrics as GroupwiseMetrics
from .groupwise import groupwise_metrics as groupwise_metrics
from .measures import CompositeMeasure as CompositeMeasure
from .measures import ConstraintMeasure as ConstraintMeasure
from .measures import FairnessMeasure as FairnessMeasure
from .measures import Measure as Measure
from .measures import MeasureResult as MeasureResult
from .measures import PerformanceMeasure as PerformanceMeasure
from .measures import UndefinedGroupWarning as UndefinedGroupWarning
from .operations import Operation as Operation
from .registry import msr as msr
from .registry import msrs as msrs
from .results import UndefinedReplicatesWarning as UndefinedReplicatesWarning
from .scoring import DropColumns as DropColumns
from .scoring import FairnessScorer as FairnessScorer
from .scoring import MultiMeasureScorer as MultiMeasureScorer
from .scoring import fairness_scorer as fairness_scorer
from .scoring import make_scorers as make_scorers
from .selection import ConstrainedRefit as ConstrainedRefit
from .selection import InfeasibleConstraintWarning as InfeasibleConstraintWarning
from .selection import NoFeasibleCandidateError as NoFeasibleCandidateError
from .selection import constrained_refit as constrained_refit
from .selection import constrained_threshold as constrained_threshold
from .selection import pareto_front as pareto_front
from .thresholds import ThresholdCurve as ThresholdCurve
from .thresholds import disparity_at_thresholds as disparity_at_thresholds
from .uncertainty import Estimate as Estimate
from .uncertainty import summarize as summarize

__version__: str
