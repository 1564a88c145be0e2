"""The public names of skfair_measures_mlflow, listed once: the static types, and the table loaded lazily.

``__init__.py`` hands this stub to ``lazy_loader.attach_stub``; ``name as name`` marks a re-export.
"""

from ._bias_audit import log_bias_audit as log_bias_audit
from ._cv import CrossValidationResult as CrossValidationResult
from ._cv import cross_validate_fairness as cross_validate_fairness
from ._session import FairnessLoggingWarning as FairnessLoggingWarning
from ._tracking import LoggedFairness as LoggedFairness
from ._tracking import log_active_trajectory as log_active_trajectory
from ._tracking import log_fairness as log_fairness
from ._tracking import log_monitor as log_monitor
from ._tracking import sanitize_key as sanitize_key
from ._tracking import sanitize_segment as sanitize_segment
from .evaluator import FairnessEvaluator as FairnessEvaluator
from .genai import counterfactual_disparity as counterfactual_disparity
from .genai import group_disparity as group_disparity
from .genai import group_scorer as group_scorer

__version__: str
