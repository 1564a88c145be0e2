"""The ``fairness`` evaluator for ``mlflow.models.evaluate``.

MLflow finds this class through the entry point group ``mlflow.model_evaluator``
(see this package's ``pyproject.toml``), imports this module while it builds its
evaluator registry, and instantiates the class with no arguments. The module
therefore imports nothing heavy at import time: skfair-measures, pandas and the
plotting code load inside :meth:`FairnessEvaluator.evaluate`.

Examples
--------
>>> FairnessEvaluator.can_evaluate(model_type="classifier",
...                                evaluator_config={"sensitive_features": "sex"})
True
>>> FairnessEvaluator.can_evaluate(model_type="classifier", evaluator_config={})
False
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mlflow.models.evaluation.base import ModelEvaluator

__all__ = ["CONFIG_KEYS", "FairnessEvaluator", "validate_config"]

#: The keys of ``evaluator_config={"fairness": {...}}`` and what they mean.
CONFIG_KEYS: dict[str, str] = {
    "sensitive_features": "column name(s) of the data holding the sensitive attribute, or an "
    "array with one group per row (required)",
    "measures": "registry keys, Measure objects or dicts {'key': ..., **overrides}; default those of "
    "skfair_measures.report.DEFAULT_MEASURES (what skfair audit reports)",
    "pos_label": "positive class, passed to measures built from keys and used to pick the probability column",
    "sample_weight": "column name or array of sample weights",
    "posterior": "dict: method, reference, random_state, ... for skfair_measures.bayes.posteriors, plus "
    "prob (interval coverage), eps (practical-fairness margin around the ideal value), measures",
    "prefix": "prepended to every metric and param key",
    "drop_sensitive": "drop the sensitive column(s) before calling the model (default False)",
    "scores": "without a model (predictions= column usage): column with positive-class scores",
    "log_params": "log each measure's configuration as params (default True)",
    "artifacts": "log the JSON results, the groupwise table and chart, posterior draws and plots (default True)",
    "group_metrics": "also log every per-group value as a metric (default False; they are always in the table)",
    "timeout": "seconds to wait for the tracking server per request (default 10)",
}

# MLflow applies a flat evaluator_config to every evaluator when evaluators=None, so
# the built-in evaluators' keys may reach us: accept them (two are honoured).
_MLFLOW_SHARED_KEYS = frozenset(
    "col_mapping metric_prefix sample_weights label_list average log_model_explainability explainability_algorithm "
    "explainability_nsamples explainability_kernel_link max_classes_for_multiclass_roc_pr log_explainer "
    "eval_results_path eval_results_mode ignore_exceptions calibration_classifier_name calibration_n_bins".split()
)

_SUPPORTED_MODEL_TYPES = ("classifier", "regressor")


def validate_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check the evaluator config; return it with defaults filled in.

    Raises
    ------
    ValueError
        For unknown keys (naming close matches), a missing ``sensitive_features``,
        or a value of the wrong type.

    Examples
    --------
    >>> validate_config({"sensitive_features": "sex", "measure": ["fairness.tpr"]})
    Traceback (most recent call last):
    ...
    ValueError: unknown key(s) in the 'fairness' evaluator_config: 'measure' (did you mean 'measures'?). ...
    >>> validate_config({"sensitive_features": ["sex"], "metric_prefix": "test_"})["prefix"]
    'test_'
    """
    config = dict(config or {})
    unknown = [k for k in config if k not in CONFIG_KEYS and k not in _MLFLOW_SHARED_KEYS]
    if unknown:
        close = {k: difflib.get_close_matches(str(k), list(CONFIG_KEYS), n=1) for k in unknown}
        hints = [f"{k!r}" + (f" (did you mean {c[0]!r}?)" if c else "") for k, c in close.items()]
        raise ValueError(
            f"unknown key(s) in the 'fairness' evaluator_config: {', '.join(hints)}. "
            f"Known keys: {', '.join(CONFIG_KEYS)}."
        )
    if config.get("sensitive_features") is None:
        raise ValueError(
            "the 'fairness' evaluator needs evaluator_config={'fairness': "
            "{'sensitive_features': 'sex', ...}}: the column(s) with the sensitive attribute."
        )
    config.setdefault("prefix", config.get("metric_prefix") or "")
    if config.get("sample_weights") is not None:
        config.setdefault("sample_weight", config["sample_weights"])
    if not isinstance(config["prefix"], str):
        raise ValueError(f"prefix must be a string; got {config['prefix']!r}.")
    for flag, default in {
        "drop_sensitive": False,
        "log_params": True,
        "artifacts": True,
        "group_metrics": False,
    }.items():
        if not isinstance(config.setdefault(flag, default), bool):
            raise ValueError(f"{flag} must be True or False; got {config[flag]!r}.")
    posterior = config.get("posterior")
    if posterior is not None and not isinstance(posterior, bool | Mapping):
        raise ValueError(
            "posterior must be a dict such as {'method': 'bb', 'eps': 0.05} (or True for the "
            f"defaults); got {posterior!r}."
        )
    config["posterior"] = {} if posterior is True else None if posterior is False else posterior
    return config


def _sensitive_columns(spec: Any) -> list[str] | None:
    if isinstance(spec, str):
        return [spec]
    if isinstance(spec, (list, tuple)) and spec and all(isinstance(c, str) for c in spec):
        return list(spec)
    return None


def _column(X: Any, name: str, what: str) -> Any:
    if name not in X.columns:
        raise KeyError(
            f"{what} column {name!r} is not in the evaluation data's columns {list(X.columns)}. "
            "If you passed feature_names= to mlflow.models.evaluate, include it there (and use "
            "drop_sensitive=True to keep it from the model), or pass an array instead."
        )
    return X[name]


@dataclass
class _Data:
    """The evaluation data, split into what the model sees and what the measures read."""

    X_model: Any
    y_true: Any
    sensitive: Any
    sample_weight: Any
    scores: Any


def _read_data(dataset: Any, cfg: Mapping[str, Any]) -> _Data:
    import numpy as np
    import pandas as pd

    from skfair_measures.groups import resolve_sensitive

    X = dataset.features_data
    if not isinstance(X, pd.DataFrame):
        X = pd.DataFrame(np.asarray(X), columns=list(dataset.feature_names))
    cols = _sensitive_columns(cfg["sensitive_features"])
    for c in cols or ():
        _column(X, c, "sensitive")
    if cols is None and len(cfg["sensitive_features"]) != len(X):
        raise ValueError(
            f"sensitive_features has {len(cfg['sensitive_features'])} entries but the data has {len(X)} rows."
        )
    A = resolve_sensitive(None if cols else cfg["sensitive_features"], X=X, columns=cols)
    drop = list(cols) if cols and cfg["drop_sensitive"] else []
    w = cfg.get("sample_weight")
    if isinstance(w, str):
        w, drop = _column(X, w, "sample_weight").to_numpy(), [*drop, w]
    scores = None
    if isinstance(cfg.get("scores"), str):
        scores = _column(X, cfg["scores"], "scores").to_numpy(dtype=float)
        drop.append(cfg["scores"])
    X_model = X.drop(columns=[c for c in dict.fromkeys(drop) if c in X.columns])
    return _Data(X_model, np.asarray(dataset.labels_data), A, w, scores)


def _select_output(output: Any, predictions: str | None) -> Any:
    """One column of predictions out of whatever ``model.predict`` returned (a frame, a dict or an array)."""
    import numpy as np
    import pandas as pd

    if not isinstance(output, pd.DataFrame | Mapping):
        return np.asarray(output)
    names = list(output.columns if isinstance(output, pd.DataFrame) else output)
    if predictions in names or len(names) == 1:
        return np.asarray(output[predictions if predictions in names else names[0]])
    raise ValueError(
        f"the model returned columns {names}; name the prediction column with predictions= in mlflow.models.evaluate."
    )


def _model_scores(model: Any, X: Any, pos_label: Any) -> Any:
    """Positive-class probabilities from the model behind a pyfunc, or None."""
    from skfair_measures.record import positive_scores

    try:
        raw = model.get_raw_model() if hasattr(model, "get_raw_model") else None
    except (NotImplementedError, AttributeError):
        raw = None
    fn = getattr(raw, "predict_proba", None) or getattr(model, "predict_proba", None)
    if fn is None:
        return None
    classes = getattr(raw if raw is not None else model, "classes_", None)
    return positive_scores(fn(X), classes, pos_label)


class FairnessEvaluator(ModelEvaluator):
    """Fairness measures of skfair-measures as an MLflow model evaluator.

    Registered as ``"fairness"``. It evaluates ``classifier`` and ``regressor``
    models whose evaluator config names the sensitive attribute, and logs the same
    metrics, params and artifacts as :func:`skfair_measures_mlflow.log_fairness`
    to the evaluation run; the metrics are also returned in
    ``EvaluationResult.metrics``.

    Usage::

        mlflow.models.evaluate(
            model_uri, data, targets="label", model_type="classifier",
            evaluators=["fairness"],
            evaluator_config={"fairness": {
                "sensitive_features": ["sex"],
                "measures": ["fairness.tpr", "fairness.eod", "classif.acc"],
            }},
        )

    See :data:`CONFIG_KEYS` for all options. With ``model=None`` and
    ``predictions="col"``, the predictions are read from the data.
    """

    @classmethod
    def can_evaluate(cls, *, model_type: str | None, evaluator_config: Any, **kwargs: Any) -> bool:
        """True for classifiers and regressors when the config names ``sensitive_features``.

        Requiring the key keeps this evaluator out of ``mlflow.models.evaluate`` calls
        that do not ask for it (``evaluators=None`` runs every registered evaluator).
        """
        config = evaluator_config if isinstance(evaluator_config, Mapping) else {}
        return model_type in _SUPPORTED_MODEL_TYPES and config.get("sensitive_features") is not None

    def evaluate(
        self,
        *,
        model_type: str,
        dataset: Any,
        run_id: str,
        evaluator_config: Mapping[str, Any],
        model: Any = None,
        extra_metrics: Any = None,
        custom_artifacts: Any = None,
        predictions: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Compute the measures on ``dataset`` and log them to ``run_id``.

        Returns
        -------
        mlflow.models.EvaluationResult
            ``metrics`` holds every logged metric (keys as in ``log_fairness``);
            ``artifacts`` the JSON results and, for posteriors, the density plots.
        """
        import numpy as np
        from mlflow.models.evaluation.base import EvaluationResult

        from skfair_measures.record import compute_posteriors, evaluate_all, needs_scores, resolve_measures, score_label

        from ._tracking import log_fairness

        cfg = validate_config(evaluator_config)
        data, options = _read_data(dataset, cfg), cfg.get("posterior")
        measures = resolve_measures(cfg.get("measures"), pos_label=cfg.get("pos_label"))
        if model is not None:
            y_pred, y_score = _select_output(model.predict(data.X_model), predictions), None
            if needs_scores(measures) or options is not None:
                y_score = _model_scores(model, data.X_model, score_label(measures, cfg.get("pos_label")))
        elif dataset.has_predictions:
            y_pred, y_score = np.asarray(dataset.predictions_data), data.scores
        else:
            raise ValueError(
                "no model and no predictions: pass a model, or predictions='column' with model=None to "
                "mlflow.models.evaluate."
            )
        groups = {"sensitive_features": data.sensitive}
        results = evaluate_all(
            measures, data.y_true, y_pred, y_score=y_score, sample_weight=data.sample_weight, **groups
        )
        posts = {}
        if options is not None:
            scores = y_score if y_score is not None else y_pred
            posts = compute_posteriors(measures, data.y_true, scores, **groups, options=options)
        chosen = {k: cfg[k] for k in ("prefix", "log_params", "artifacts", "group_metrics")}
        logged = log_fairness(
            [*results.items(), *posts.items()],
            run_id=run_id,
            measures=measures,
            posterior_options=options,
            model_id=kwargs.get("model_id"),
            timeout=cfg.get("timeout"),
            **chosen,
        )
        return EvaluationResult(metrics=dict(logged.metrics), artifacts=_evaluation_artifacts(logged), run_id=run_id)


def _evaluation_artifacts(logged: Any) -> dict[str, Any]:
    """``EvaluationArtifact`` objects for the logged JSON and PNG files."""
    from mlflow.models.evaluation.artifacts import ImageEvaluationArtifact, JsonEvaluationArtifact

    if not logged.logged or logged.artifact_uri is None:
        return {}
    root, out = logged.artifact_uri.rstrip("/"), {}
    for path in logged.artifacts:
        name = f"fairness_{path.removeprefix('fairness/').rsplit('.', 1)[0].replace('/', '_')}"
        if path.endswith(".json"):
            out[name] = JsonEvaluationArtifact(uri=f"{root}/{path}")
        elif path.endswith(".png"):
            out[name] = ImageEvaluationArtifact(uri=f"{root}/{path}")
    return out
