"""The measure registry: ``msr(key)`` with the mlr3fairness keys.

One dictionary, filled in one place. Every entry is a factory returning a fresh
measure, so ``msr()`` never hands out shared state; keyword overrides are passed to
the factory (``msr("fairness.tpr", operation="ratio")``). :func:`as_measures` turns
keys into measures for every function that takes either.

The registry sits above every measure kind it names, and nothing below it imports
it: the core measures, regression and ranking are imported here at module level;
``unaware`` is imported when one of its keys is asked for (a downward import: its
scorers build on ``scoring``, which resolves keys here, so importing it at module
level would run in a circle at import time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Literal, cast

import pandas as pd

from ._undefined import _did_you_mean
from .base import BASE_METRICS, BaseMetric, CountMetric, ErrorMetric, get_base
from .measures import (
    _INPUTS,
    CompositeMeasure,
    ConstraintMeasure,
    FairnessMeasure,
    Measure,
    MeasureBase,
    PerformanceMeasure,
    qualified_key,
)
from .ranking import RankingFairness
from .regression import DistributionParity, MeanPrediction, bounded_group_loss

__all__ = ["ALIASES", "as_measures", "keys", "msr", "msrs"]


def _param_label(value: Any) -> Any:
    """How a parameter value reads in a key: an operation or function by its name."""
    return getattr(value, "name", None) or getattr(value, "__name__", None) or value


def _key(stem: str, kw: dict[str, Any], defaults: dict[str, Any]) -> str:
    """The registry key, qualified by every parameter that differs from the entry's default.

    ``msr("fairness.tpr", operation="ratio")`` is another measure than
    ``msr("fairness.tpr")``, so it gets another key: results, scorer dicts and
    MLflow metrics are keyed by it.
    """
    if "key" in kw:
        return kw.pop("key")
    named = ("operation", "reference", "aggregate", "epsilon", "threshold", "average")
    given = {k: _param_label(kw[k]) for k in named if kw.get(k) is not None}
    return qualified_key(stem, **{k: v for k, v in given.items() if v != defaults.get(k)})


def _averaged(base: str | BaseMetric, average: Literal["macro", "weighted"] | None) -> str | BaseMetric:
    """The base, averaged over classes when ``average=`` is given (multiclass rates)."""
    if average is None:
        return base
    resolved = get_base(base)
    if not isinstance(resolved, CountMetric):
        raise ValueError(f"average={average!r} applies to count rates (tpr, ppv, ...), not to {resolved.name!r}.")
    return resolved.averaged(average)


def _fairness(base: str, description: str) -> Callable[..., Measure]:
    return _named_fairness(f"fairness.{base}", base, description)


def _named_fairness(key: str, base: str, description: str = "", operation: str = "absdiff") -> Callable[..., Measure]:
    description = description or _DESCRIPTIONS[key]

    def make(**kw: Any) -> Measure:
        if "base" in kw and key == f"fairness.{base}":  # another base: a different measure, with its own key
            return FairnessMeasure(**kw)
        own_key = _key(key, kw, {"operation": operation})
        kw.setdefault("operation", operation)
        kw.setdefault("description", description)
        return FairnessMeasure(_averaged(base, kw.pop("average", None)), key=own_key, **kw)

    return make


def _composite(key: str, bases: tuple[str, ...], aggregate: str = "mean") -> Callable[..., Measure]:
    def make(**kw: Any) -> Measure:
        own_key = _key(key, kw, {"aggregate": aggregate, "operation": "absdiff"})
        agg = kw.pop("aggregate", aggregate)
        average = kw.pop("average", None)
        children = [FairnessMeasure(_averaged(b, average), **kw) for b in bases]
        return CompositeMeasure(children, agg, key=own_key, description=_DESCRIPTIONS[key])

    return make


def _constraint(key: str, fairness_key: str, epsilon: float) -> Callable[..., Measure]:
    def make(**kw: Any) -> Measure:
        own_key = _key(key, kw, {"epsilon": epsilon, "operation": "absdiff", "aggregate": "mean"})
        eps = kw.pop("epsilon", epsilon)
        perf = PerformanceMeasure("acc", **{k: kw[k] for k in _INPUTS if k in kw})
        fair = cast(Measure, _REGISTRY[fairness_key](**kw))  # eod or ppv
        return ConstraintMeasure(perf, fair, eps, key=own_key, description=_DESCRIPTIONS[key])

    return make


_GENERIC = "Generic fairness measure: pass base= and operation="


def _generic(**kw: Any) -> Measure:
    if "base" not in kw:
        raise ValueError('msr("fairness") needs base=, e.g. msr("fairness", base="fpr", operation="ratio").')
    kw["base"] = _averaged(kw["base"], kw.pop("average", None))
    return FairnessMeasure(**kw)


def _performance(base: str, key: str | None = None) -> Callable[..., Measure]:
    def make(**kw: Any) -> Measure:
        average = kw.pop("average", None)
        if key is not None or average is not None:  # averages only apply to count rates: classif.*
            kw["key"] = _key(key or f"classif.{base}", {**kw, "average": average}, {})
        return PerformanceMeasure(_averaged(base, average), **kw)

    return make


_ABS = "Absolute differences in {} across groups"
#: The descriptions of the registry's measures that are not absolute differences of one rate (_ABS).
_DESCRIPTIONS = {
    "fairness.cv": "Difference in positive class prediction (Calders-Wevers gap, demographic parity)",
    "fairness.eod": "Equalized odds: mean of absolute differences in true and false positive rates across groups",
    "fairness.pp": "Predictive parity: mean of absolute differences in ppv and npv across groups",
    "fairness.acc_eod=.05": "Accuracy under equalized odds (mean of the TPR and FPR gaps) < 0.05 constraint",
    "fairness.acc_ppv=.05": "Accuracy under ppv difference < 0.05 constraint",
    "fairness.dp_ratio": "Demographic parity ratio: smallest ratio of selection rates (fairlearn)",
    "fairness.eod_max": "Equalized odds difference: larger of the TPR and FPR differences (fairlearn)",
}

#: key -> factory. The first 18 keys are mlr3fairness' table, with its semantics.
_REGISTRY: dict[str, Callable[..., MeasureBase]] = {
    "fairness.acc": _fairness("acc", _ABS.format("accuracy")),
    "fairness.mse": _fairness("mse", _ABS.format("mean squared error")),
    "fairness.fnr": _fairness("fnr", _ABS.format("false negative rates")),
    "fairness.fpr": _fairness("fpr", _ABS.format("false positive rates")),
    "fairness.tnr": _fairness("tnr", _ABS.format("true negative rates")),
    "fairness.tpr": _fairness("tpr", _ABS.format("true positive rates")),
    "fairness.npv": _fairness("npv", _ABS.format("negative predictive values")),
    "fairness.ppv": _fairness("ppv", _ABS.format("positive predictive values")),
    "fairness.fomr": _fairness("fomr", _ABS.format("false omission rates")),
    "fairness.fp": _fairness("fp", _ABS.format("false positives")),
    "fairness.tp": _fairness("tp", _ABS.format("true positives")),
    "fairness.tn": _fairness("tn", _ABS.format("true negatives")),
    "fairness.fn": _fairness("fn", _ABS.format("false negatives")),
    "fairness.cv": _named_fairness("fairness.cv", "selection_rate"),
    "fairness.eod": _composite("fairness.eod", ("tpr", "fpr")),
    "fairness.pp": _composite("fairness.pp", ("ppv", "npv")),
    "fairness.acc_eod=.05": _constraint("fairness.acc_eod=.05", "fairness.eod", 0.05),
    "fairness.acc_ppv=.05": _constraint("fairness.acc_ppv=.05", "fairness.ppv", 0.05),
    # Beyond mlr3fairness: names fairlearn users know.
    "fairness.fdr": _fairness("fdr", _ABS.format("false discovery rates")),
    "fairness.mae": _fairness("mae", _ABS.format("mean absolute error")),
    "fairness.dp_ratio": _named_fairness("fairness.dp_ratio", "selection_rate", operation="ratio"),
    "fairness.eod_max": _composite("fairness.eod_max", ("tpr", "fpr"), aggregate="max"),
    "fairness": _generic,
}
for _name, _base in BASE_METRICS.items():
    if isinstance(_base, CountMetric):
        _REGISTRY[f"classif.{_name}"] = _performance(_name)
    elif isinstance(_base, ErrorMetric):
        _REGISTRY[f"regr.{_name}"] = _performance(_name)


def _unaware(kind: str, *args: Any) -> Callable[..., Any]:
    """A measure of ``unaware``, imported on first use (see above)."""

    def make(**kw: Any) -> Any:
        from . import unaware

        return getattr(unaware, kind)(*args, **kw)

    return make


def _dp_mean(**kw: Any) -> Measure:
    kw.setdefault("description", "Mean-prediction parity: absolute differences in the mean prediction (regression)")
    return FairnessMeasure(MeanPrediction(), key=_key("fairness.dp_mean", kw, {"operation": "absdiff"}), **kw)


# Ranking and regression parity.
_REGISTRY["fairness.exposure"] = partial(RankingFairness, "exposure")
_REGISTRY["fairness.ndcg"] = partial(RankingFairness, "ndcg")
_REGISTRY["fairness.dp_mean"] = _dp_mean
_REGISTRY["fairness.dp_ks"] = partial(DistributionParity, "ks")
_REGISTRY["fairness.dp_wasserstein"] = partial(DistributionParity, "wasserstein")
_REGISTRY["fairness.bgl"] = bounded_group_loss  # base= picks the loss, "mse" by default

# Measures without the sensitive attribute.
_REGISTRY["unaware.proxy_dp"] = _unaware("ProxyMeasure", "dp")
_REGISTRY["unaware.proxy_eod"] = _unaware("ProxyMeasure", "eod")
_REGISTRY["unaware.proxy_eop"] = _unaware("ProxyMeasure", "eop")
_REGISTRY["unaware.quantified_dp"] = _unaware("QuantificationMeasure")
_REGISTRY["classif.ce"] = _performance("error_rate", "classif.ce")
_REGISTRY["classif.bacc"] = _performance("balanced_accuracy", "classif.bacc")

#: fairlearn's names for registry measures: name -> (key, overrides). ``msr(name)`` returns the registry's measure,
#: keyed by the registry's key (results, scorers and MLflow metrics carry one name whichever was asked for).
#: Equalized odds: fairlearn's ``equalized_odds_difference`` is the larger of the TPR and FPR gaps
#: (``fairness.eod_max``); mlr3fairness' ``fairness.eod`` is their mean.
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "demographic_parity_difference": ("fairness.cv", {}),
    "demographic_parity_ratio": ("fairness.dp_ratio", {}),
    "equalized_odds_difference": ("fairness.eod_max", {}),
    "equalized_odds_ratio": ("fairness.eod", {"operation": "ratio", "aggregate": "min"}),
    "equal_opportunity_difference": ("fairness.tpr", {}),
    "equal_opportunity_ratio": ("fairness.tpr", {"operation": "ratio"}),
}

#: The keys of mlr3fairness' table (seed vignette), in its order.
MLR3_KEYS: tuple[str, ...] = tuple(list(_REGISTRY)[:18])


def keys() -> list[str]:
    """All registered keys."""
    return list(_REGISTRY)


def msr(key: str, /, **overrides: Any) -> MeasureBase:
    """Get a fresh measure from the registry.

    Parameters
    ----------
    key : str
        A key such as ``"fairness.tpr"``, ``"fairness.eod"``, ``"classif.acc"``, or
        ``"fairness"`` with ``base=`` for a generic measure. ``msrs()`` lists them.
    **overrides
        Passed to the measure: ``key=`` (a new id), ``operation=``, ``reference=``, ``pos_label=``,
        ``threshold=``, ``undefined=``, ``groups=``, ``average=`` (rates on multiclass labels),
        ``min_group_size=`` and ``small_groups=`` (leave out or merge small groups); ``labels=`` (the classes of a
        multiclass measure, kept in every fold); ``epsilon=`` for constraints;
        ``aggregate=`` for composites; ``base=`` for ``"fairness"``.

    Returns
    -------
    MeasureBase
        A fresh measure; its key names every non-default parameter
        (``msr("fairness.tpr", operation="ratio").key == "fairness.tpr(operation=ratio)"``).

    Examples
    --------
    >>> msr("fairness.tpr")([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("aabb"))
    0.5
    >>> msr("fairness", base="fpr", operation="ratio").key
    'fairness.fpr(operation=ratio)'
    >>> msr("fairness.tpr", operation="ratio").key
    'fairness.tpr(operation=ratio)'

    fairlearn's names (:data:`ALIASES`) give the registry's measure, under the registry's key:

    >>> msr("equalized_odds_difference").key
    'fairness.eod_max'
    >>> msr("fairness.tpx")
    Traceback (most recent call last):
    ...
    KeyError: "unknown measure key 'fairness.tpx'. Did you mean 'fairness.tp', ..."
    """
    if key in ALIASES:
        key, fixed = ALIASES[key]
        overrides = {**fixed, **overrides}
    if key not in _REGISTRY:
        hint = _did_you_mean(key, [*_REGISTRY, *ALIASES])
        raise KeyError(f"unknown measure key {key!r}.{hint} See msrs() for all keys, registry.ALIASES for fairlearn's.")
    small: dict[str, Any] = {
        name: overrides.pop(name) for name in ("min_group_size", "small_groups", "labels") if name in overrides
    }
    measure = _REGISTRY[key](**overrides)
    return _with_small_groups(measure, small, own_key="key" in overrides) if small else measure


def _with_small_groups(measure: MeasureBase, small: dict[str, Any], own_key: bool) -> MeasureBase:
    """The measure with ``min_group_size=`` / ``small_groups=`` on every leaf, its key naming them."""
    if not isinstance(measure, Measure):
        raise TypeError(f"{measure.key!r} takes no {', '.join(f'{k}=' for k in small)}: it is not a groupwise measure.")
    measure = measure.with_inputs(**small)
    if not own_key:
        params = ", ".join(f"{k}={v}" for k, v in small.items() if not (k == "small_groups" and v == "drop"))
        if params:
            stem = measure.key
            measure.key = f"{stem[:-1]}, {params})" if stem.endswith(")") else f"{stem}({params})"
    return measure


def as_measures(measures: MeasureBase | str | Sequence[MeasureBase | str]) -> list[MeasureBase]:
    """Measures from measures or registry keys, refusing two that share a key.

    Examples
    --------
    >>> [m.key for m in as_measures(["fairness.tpr", "classif.acc"])]
    ['fairness.tpr', 'classif.acc']
    """
    if isinstance(measures, MeasureBase | str):
        measures = [measures]
    out = [msr(m) if isinstance(m, str) else m for m in measures]
    seen: dict[str, MeasureBase] = {}
    for m in out:
        if m.key in seen:
            raise ValueError(
                f"two measures share the key {m.key!r} ({seen[m.key]!r} and {m!r}); results are keyed by it. "
                "Pass key= to one of them (e.g. msr(..., key='my.name'))."
            )
        seen[m.key] = m
    return out


def msrs() -> pd.DataFrame:
    """A table of all registered measures.

    Returns
    -------
    pandas.DataFrame
        Columns ``key, description, base, operation, minimize, range``.

    Examples
    --------
    >>> tab = msrs()
    >>> tab.loc[tab.key == "fairness.eod", "base"].item()
    'tpr, fpr'
    """
    rows: list[tuple[Any, ...]] = []
    for key, make in _REGISTRY.items():
        m = None if key == "fairness" else make()
        if m is None:
            rows.append((key, _GENERIC, "(any)", "(any)", None, None))
        else:
            rows.append((key, m.description, m.base_label, m.operation_label, m.minimize, tuple(map(float, m.range))))
    return pd.DataFrame(rows, columns=["key", "description", "base", "operation", "minimize", "range"])
