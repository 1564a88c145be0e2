"""MLflow integration for skfair-measures: it writes the records :mod:`skfair_measures.record` computes.

- :func:`log_fairness` logs results (point values, bootstraps, posteriors, estimates) to a run;
- :class:`FairnessEvaluator` is the ``"fairness"`` evaluator of ``mlflow.models.evaluate``;
- :func:`cross_validate_fairness` cross-validates an estimator and logs every fold;
- :func:`log_monitor` logs a fairness monitor's steps; :func:`log_active_trajectory` an active assessment's;
- :func:`log_bias_audit` logs a bias audit's tables, verdict counts and page;
- :func:`group_disparity`, :func:`counterfactual_disparity` and :func:`group_scorer` measure group
  disparities of LLM outputs over MLflow 3 GenAI traces (:mod:`skfair_measures_mlflow.genai`).

Every call to the tracking service follows one timeout-and-retry policy (``timeout=``): a dead,
hanging or read-only store costs one :class:`FairnessLoggingWarning`, never a computed value.
The names load lazily, so MLflow, which imports ``skfair_measures_mlflow.evaluator`` while it
builds its evaluator registry, does not pay for skfair-measures until an evaluation runs.
"""

from __future__ import annotations

import typing as _typing
from importlib import import_module as _import_module

__version__ = "0.1.0"

_WHERE = {
    "CrossValidationResult": "._cv",
    "cross_validate_fairness": "._cv",
    "counterfactual_disparity": ".genai",
    "group_disparity": ".genai",
    "group_scorer": ".genai",
    "FairnessEvaluator": ".evaluator",
    "FairnessLoggingWarning": "._session",
    "LoggedFairness": "._tracking",
    "log_active_trajectory": "._tracking",
    "log_bias_audit": "._bias_audit",
    "log_fairness": "._tracking",
    "log_monitor": "._tracking",
    "sanitize_key": "skfair_measures.record",
    "sanitize_segment": "skfair_measures.record",
}
__all__ = [
    "CrossValidationResult",
    "FairnessEvaluator",
    "FairnessLoggingWarning",
    "LoggedFairness",
    "counterfactual_disparity",
    "cross_validate_fairness",
    "group_disparity",
    "group_scorer",
    "log_active_trajectory",
    "log_bias_audit",
    "log_fairness",
    "log_monitor",
    "sanitize_key",
    "sanitize_segment",
]

if _typing.TYPE_CHECKING:  # pragma: no cover
    from skfair_measures.record import sanitize_key, sanitize_segment

    from ._bias_audit import log_bias_audit
    from ._cv import CrossValidationResult, cross_validate_fairness
    from ._session import FairnessLoggingWarning
    from ._tracking import LoggedFairness, log_active_trajectory, log_fairness, log_monitor
    from .evaluator import FairnessEvaluator
    from .genai import counterfactual_disparity, group_disparity, group_scorer


def __getattr__(name: str) -> _typing.Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(_import_module(_WHERE[name], __name__), name)
    return value


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])
