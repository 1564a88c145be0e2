"""Shared by the evaluator and cross-validation: measures in, results out (no MLflow here).

Measures are read through the measure protocol only (``measure.inputs``,
``measure.key``); the posterior of several measures is one joint fit.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

import skfair_measures as sfm
from skfair_measures.groups import encode_groups
from skfair_measures.measures import MeasureBase
from skfair_measures.results import Result

__all__ = [
    "POSTERIOR_SUMMARY_KEYS",
    "compute_posteriors",
    "declare_groups",
    "evaluate_all",
    "needs_scores",
    "positive_scores",
    "resolve_measures",
]

#: Keys of a ``posterior`` option dict read by the summaries; the others go to
#: ``skfair_measures.bayes.posteriors`` (``method``, ``reference``, ``random_state``, ...).
POSTERIOR_SUMMARY_KEYS = ("prob", "eps", "measures")

DEFAULT_MEASURES = ("fairness.tpr", "fairness.fpr", "fairness.cv", "fairness.eod", "classif.acc")


def resolve_measures(spec: Any, *, pos_label: Any = None) -> list[MeasureBase]:
    """Measures from keys, measure objects or dicts ``{"key": ..., **overrides}``.

    ``pos_label`` is passed to measures built from keys or dicts (measure objects
    keep their own).

    Examples
    --------
    >>> [m.key for m in resolve_measures(["fairness.tpr", {"key": "fairness.cv", "operation": "ratio"}])]
    ['fairness.tpr', 'fairness.cv(operation=ratio)']
    """
    if spec is None:
        spec = DEFAULT_MEASURES
    if isinstance(spec, (str, Mapping, MeasureBase)):
        spec = [spec]
    kw = {} if pos_label is None else {"pos_label": pos_label}
    out = []
    for item in spec:
        if isinstance(item, str):
            out.append(sfm.msr(item, **kw))
        elif isinstance(item, Mapping):
            if "key" not in item:
                raise ValueError(f"a measure given as a dict needs 'key'; got {item!r}.")
            overrides = {**kw, **{k: v for k, v in item.items() if k != "key"}}
            out.append(sfm.msr(item["key"], **overrides))
        elif isinstance(item, MeasureBase):
            out.append(item)
        else:
            raise TypeError(
                f"cannot use {item!r} as a measure: pass a registry key such as "
                "'fairness.tpr', a measure, or a dict {'key': ..., **overrides}."
            )
    keys = [m.key for m in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"measures {dup} appear more than once; give them distinct key= values.")
    return out


def needs_scores(measures: Sequence[MeasureBase]) -> bool:
    """Whether any measure scores probabilities (``inputs.response_method == "predict_proba"``)."""
    return any(m.inputs.response_method == "predict_proba" for m in measures)


def score_label(measures: Sequence[MeasureBase], pos_label: Any) -> Any:
    """The positive class whose probability column is read: ``pos_label``, else the measures' own."""
    if pos_label is not None:
        return pos_label
    labels = {repr(m.inputs.pos_label): m.inputs.pos_label for m in measures if m.inputs.pos_label is not None}
    if len(labels) > 1:
        raise ValueError(
            f"the measures have different pos_label values {sorted(labels)}; pass pos_label= to say "
            "which probability column to read."
        )
    return next(iter(labels.values()), None)


def positive_scores(proba: Any, classes: Any, pos_label: Any) -> np.ndarray:
    """The positive-class column of ``predict_proba`` output (the last class by default).

    Examples
    --------
    >>> positive_scores([[0.2, 0.8], [0.6, 0.4]], [0, 1], None).tolist()
    [0.8, 0.4]
    >>> positive_scores([[0.2, 0.8], [0.6, 0.4]], ["no", "yes"], "no").tolist()
    [0.2, 0.6]
    """
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:
        return proba
    classes = list(range(proba.shape[1])) if classes is None else list(classes)
    pos = classes[-1] if pos_label is None else pos_label
    if pos not in classes:
        raise ValueError(f"pos_label={pos!r} is not one of the model's classes {classes}.")
    return proba[:, classes.index(pos)]


def full_groups(sensitive_features: Any) -> pd.Index:
    """Every group of the whole data (observed combinations for several columns).

    Examples
    --------
    >>> full_groups(["b", "a", "b"]).tolist()
    ['a', 'b']
    """
    return encode_groups(sensitive_features)[1]


def declare_groups(measures: Sequence[MeasureBase], groups: pd.Index) -> list[MeasureBase]:
    """Measures that expect ``groups`` (a fold missing a group then shows it as undefined, not absent).

    Measures that declare their own groups, or do not read the sensitive attribute,
    are kept as they are.

    Examples
    --------
    >>> [m] = declare_groups([sfm.msr("fairness.tpr")], pd.Index(["F", "M", "X"]))
    >>> m.inputs.groups.tolist()
    ['F', 'M', 'X']
    """
    return [
        m.with_inputs(groups=groups) if m.inputs.needs_sensitive and m.inputs.groups is None else m for m in measures
    ]


def evaluate_all(
    measures: Sequence[MeasureBase],
    y_true: Any,
    y_pred: Any,
    *,
    y_score: Any = None,
    sensitive_features: Any,
    sample_weight: Any = None,
) -> dict[str, Result]:
    """``{key: result}``: one ``evaluate_measures`` call (one count pass) per kind of prediction."""
    by_method: dict[str, list[MeasureBase]] = {}
    for m in measures:
        by_method.setdefault(m.inputs.response_method, []).append(m)
    out: dict[str, Result] = {}
    for method, ms in by_method.items():
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


def _chosen(measures: Sequence[MeasureBase], wanted: Any) -> list[MeasureBase]:
    if wanted is None:
        return [m for m in measures if m.inputs.needs_sensitive]
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    by_key = {m.key: m for m in measures}
    unknown = [k for k in wanted if k not in by_key]
    if unknown:
        raise ValueError(f"posterior measures {unknown} are not among the measures {list(by_key)}.")
    return [by_key[k] for k in wanted]


def compute_posteriors(
    measures: Sequence[MeasureBase],
    y_true: Any,
    y_score: Any,
    *,
    sensitive_features: Any,
    options: Mapping[str, Any],
) -> dict[str, Result]:
    """``{key: posterior}`` of the fairness measures (or ``options["measures"]``), from one joint fit.

    ``skfair_measures.bayes.posteriors`` fits once for all measures. If that fails
    (a measure the Bayesian module does not support, say), each measure is fitted on
    its own; a measure that still fails is skipped with a warning naming it and the
    reason. The error is raised instead when ``options["measures"]`` names the measure,
    or when no measure has a posterior at all.
    """
    from skfair_measures import bayes

    kwargs = {k: v for k, v in options.items() if k not in POSTERIOR_SUMMARY_KEYS}
    named = options.get("measures") is not None
    chosen = _chosen(measures, options.get("measures"))
    if not chosen:
        return {}
    try:
        return dict(bayes.posteriors(chosen, y_true, y_score, sensitive_features=sensitive_features, **kwargs))
    except (NotImplementedError, TypeError, ValueError) as joint:
        first = joint
    out: dict[str, Result] = {}
    failed: list[str] = []
    for m in chosen:
        try:
            out[m.key] = bayes.posterior(m, y_true, y_score, sensitive_features=sensitive_features, **kwargs)
        except (NotImplementedError, TypeError, ValueError) as exc:
            if named:
                raise
            failed.append(f"{m.key} ({type(exc).__name__}: {exc})")
    if not out:
        raise first
    skipped = f" No posterior for {'; '.join(failed)}." if failed else ""
    warnings.warn(
        f"the joint posterior fit of {[m.key for m in chosen]} failed ({type(first).__name__}: {first}), so "
        f"each measure was fitted on its own.{skipped} List the measures you want in posterior={{'measures': [...]}}.",
        RuntimeWarning,
        stacklevel=3,
    )
    return out
