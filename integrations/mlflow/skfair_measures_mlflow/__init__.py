"""MLflow integration for skfair-measures.

Entry points:

- :func:`log_fairness` logs measure results, posteriors and estimates without
  the sensitive attribute to an MLflow run (metrics and params in one batch,
  sanitised keys, artifacts);
- :class:`FairnessEvaluator`, registered as the ``"fairness"`` evaluator of
  ``mlflow.models.evaluate``;
- :func:`cross_validate_fairness` cross-validates an estimator and logs every
  fold, with mean and standard deviation on the parent run;
- :func:`log_monitor` logs a fairness monitor's steps to one run (step and
  timestamp per batch, alarms as tags);
- :func:`log_bias_audit` logs a bias audit's tables, verdict counts and page.

The names load lazily, so that MLflow, which imports
``skfair_measures_mlflow.evaluator`` while it builds its evaluator registry, does
not pay for skfair-measures, scikit-learn or matplotlib until an evaluation runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "CrossValidationResult",
    "FairnessEvaluator",
    "FairnessLoggingWarning",
    "LoggedFairness",
    "cross_validate_fairness",
    "log_active_trajectory",
    "log_bias_audit",
    "log_fairness",
    "log_monitor",
    "sanitize_key",
    "sanitize_segment",
]

_WHERE = {
    "CrossValidationResult": "._cv",
    "cross_validate_fairness": "._cv",
    "FairnessEvaluator": ".evaluator",
    "FairnessLoggingWarning": "._session",
    "LoggedFairness": "._tracking",
    "log_fairness": "._tracking",
    "log_active_trajectory": "._active",
    "log_bias_audit": "._bias_audit",
    "log_monitor": "._monitor",
    "sanitize_key": "._keys",
    "sanitize_segment": "._keys",
}

if TYPE_CHECKING:  # pragma: no cover
    from ._bias_audit import log_bias_audit
    from ._cv import CrossValidationResult, cross_validate_fairness
    from ._keys import sanitize_key, sanitize_segment
    from ._monitor import log_monitor
    from ._session import FairnessLoggingWarning
    from ._tracking import LoggedFairness, log_fairness
    from .evaluator import FairnessEvaluator


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
