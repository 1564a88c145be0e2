"""Shared by the evaluator and cross-validation: measures in, results out."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "POSTERIOR_SUMMARY_KEYS",
    "compute_posteriors",
    "evaluate_all",
    "needs_scores",
    "positive_scores",
    "resolve_measures",
]

#: Keys of a ``posterior`` option dict read by the summaries; the others go to
#: ``Measure.posterior`` (``method``, ``reference``, ``random_state``, ...).
POSTERIOR_SUMMARY_KEYS = ("prob", "eps", "greater_than", "measures")

DEFAULT_MEASURES = ("fairness.tpr", "fairness.fpr", "fairness.cv", "fairness.eod", "classif.acc")


def resolve_measures(spec: Any, *, pos_label: Any = None) -> list[Any]:
    """Measures from keys, ``Measure`` objects or dicts ``{"key": ..., **overrides}``.

    ``pos_label`` is passed to measures built from keys or dicts (not to ``Measure``
    objects, which keep their own).

    Examples
    --------
    >>> [m.key for m in resolve_measures(["fairness.tpr", {"key": "fairness.cv", "operation": "ratio"}])]
    ['fairness.tpr', 'fairness.cv']
    """
    import skfair_measures as sfm

    if spec is None:
        spec = DEFAULT_MEASURES
    if isinstance(spec, (str, Mapping)) or hasattr(spec, "evaluate"):
        spec = [spec]
    out = []
    for item in spec:
        if isinstance(item, str):
            kw = {} if pos_label is None else {"pos_label": pos_label}
            out.append(sfm.msr(item, **kw))
        elif isinstance(item, Mapping):
            kw = dict(item)
            if "key" not in kw:
                raise ValueError(f"a measure given as a dict needs 'key'; got {item!r}.")
            key = kw.pop("key")
            if pos_label is not None:
                kw.setdefault("pos_label", pos_label)
            out.append(sfm.msr(key, **kw))
        elif hasattr(item, "evaluate") and hasattr(item, "key"):
            out.append(item)
        else:
            raise TypeError(
                f"cannot use {item!r} as a measure: pass a registry key such as "
                "'fairness.tpr', a Measure, or a dict {'key': ..., **overrides}."
            )
    keys = [m.key for m in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"measures {dup} appear more than once; give them distinct key= values.")
    return out


def needs_scores(measures: Sequence[Any]) -> bool:
    """Whether any measure scores probabilities (``response_method="predict_proba"``)."""
    return any(getattr(m, "response_method", "predict") != "predict" for m in measures)


def positive_scores(proba: Any, classes: Any, pos_label: Any) -> Any:
    """The positive-class column of ``predict_proba`` output.

    Examples
    --------
    >>> positive_scores([[0.2, 0.8], [0.6, 0.4]], [0, 1], None).tolist()
    [0.8, 0.4]
    """
    import numpy as np

    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:
        return proba
    classes = list(range(proba.shape[1])) if classes is None else list(classes)
    pos = classes[-1] if pos_label is None else pos_label
    if pos not in classes:
        raise ValueError(f"pos_label={pos!r} is not one of the model's classes {classes}.")
    return proba[:, classes.index(pos)]


def evaluate_all(
    measures: Sequence[Any],
    y_true: Any,
    y_pred: Any,
    *,
    y_score: Any = None,
    sensitive_features: Any,
    sample_weight: Any = None,
) -> dict[str, Any]:
    """``{key: MeasureResult}``, one count pass per kind of prediction."""
    import skfair_measures as sfm

    groups: dict[str, list[Any]] = {}
    for m in measures:
        groups.setdefault(getattr(m, "response_method", "predict"), []).append(m)
    out: dict[str, Any] = {}
    for method, ms in groups.items():
        pred = y_pred if method == "predict" else y_score
        if pred is None:
            raise ValueError(
                f"{[m.key for m in ms]} score probabilities ({method}), but no scores are "
                "available: use a model with predict_proba, or name a column of scores."
            )
        out.update(
            sfm.evaluate_measures(ms, y_true, pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
        )
    return {m.key: out[m.key] for m in measures}


def compute_posteriors(
    measures: Sequence[Any],
    y_true: Any,
    y_score: Any,
    *,
    sensitive_features: Any,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """``{key: posterior}`` for the fairness measures (or ``options["measures"]``).

    A measure whose posterior cannot be computed (e.g. a composite the Bayesian
    module does not support) is skipped with a warning naming it and the reason.
    The error is raised instead if ``options["measures"]`` names the measure, or if
    no measure at all has a posterior (then the options are most likely wrong).
    """
    kwargs = {k: v for k, v in options.items() if k not in POSTERIOR_SUMMARY_KEYS}
    wanted = options.get("measures")
    if wanted is None:
        chosen = [m for m in measures if getattr(m, "requires_sensitive", True)]
    else:
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        by_key = {m.key: m for m in measures}
        unknown = [k for k in wanted if k not in by_key]
        if unknown:
            raise ValueError(
                f"posterior measures {unknown} are not among the measures {list(by_key)}."
            )
        chosen = [by_key[k] for k in wanted]
    out: dict[str, Any] = {}
    for i, m in enumerate(chosen):
        try:
            out[m.key] = m.posterior(y_true, y_score, sensitive_features=sensitive_features, **kwargs)
        except (NotImplementedError, TypeError, ValueError) as exc:
            if wanted is not None or (not out and i == len(chosen) - 1):
                raise  # asked for by name, or no measure has a posterior: a real error
            warnings.warn(
                f"no posterior for {m.key}: {type(exc).__name__}: {exc}. Its other metrics "
                "are logged; list the measures you want in posterior={'measures': [...]}.",
                RuntimeWarning,
                stacklevel=3,
            )
    return out
