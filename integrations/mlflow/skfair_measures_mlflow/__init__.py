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

import lazy_loader as _lazy

# the public names are listed once, in __init__.pyi (the static types); lazy_loader reads it to load each on first use
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__version__ = "0.1.0"
