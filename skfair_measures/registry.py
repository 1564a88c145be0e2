"""The measure registry: ``msr(key)`` with the mlr3fairness keys.

One dictionary, filled in one place. Every entry is a factory returning a fresh
measure, so ``msr()`` never hands out shared state; keyword overrides are passed to
the factory (``msr("fairness.tpr", operation="ratio")``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

import pandas as pd

from .base import BASE_METRICS, CountMetric, ErrorMetric
from .measures import CompositeMeasure, ConstraintMeasure, FairnessMeasure, Measure, PerformanceMeasure

__all__ = ["msr", "msrs"]

_FAIRNESS_ARGS = ("operation", "reference", "pos_label", "threshold", "undefined", "groups")


def _fairness(base: str, description: str) -> Callable[..., Measure]:
    def make(**kw: Any) -> Measure:
        if "base" in kw:  # another base: a different measure, with its own key
            return FairnessMeasure(**kw)
        kw.setdefault("key", f"fairness.{base}")
        kw.setdefault("description", description)
        return FairnessMeasure(base, **kw)

    return make


def _composite(key: str, bases: tuple[str, ...], description: str, aggregate: str = "mean") -> Callable[..., Measure]:
    def make(**kw: Any) -> Measure:
        agg = kw.pop("aggregate", aggregate)
        own_key = kw.pop("key", key)
        children = [FairnessMeasure(b, **kw) for b in bases]
        return CompositeMeasure(children, agg, key=own_key, description=description)

    return make


def _constraint(key: str, fairness_key: str, epsilon: float, description: str) -> Callable[..., Measure]:
    def make(**kw: Any) -> Measure:
        eps = kw.pop("epsilon", epsilon)
        own_key = kw.pop("key", key)
        perf_kw = {k: kw[k] for k in ("pos_label", "threshold") if k in kw}
        fair = _REGISTRY[fairness_key](**kw)
        return ConstraintMeasure(PerformanceMeasure("acc", **perf_kw), fair, eps, key=own_key, description=description)

    return make


def _generic(**kw: Any) -> Measure:
    if "base" not in kw:
        raise ValueError('msr("fairness") needs base=, e.g. msr("fairness", base="fpr", operation="ratio").')
    return FairnessMeasure(**kw)


def _performance(base: str) -> Callable[..., Measure]:
    def make(**kw: Any) -> Measure:
        return PerformanceMeasure(base, **kw)

    return make


_ABS = "Absolute differences in {} across groups"

#: key -> factory. The first 18 keys are mlr3fairness' table, with its semantics.
_REGISTRY: dict[str, Callable[..., Measure]] = {
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
    "fairness.cv": lambda **kw: FairnessMeasure(
        "selection_rate",
        key=kw.pop("key", "fairness.cv"),
        description="Difference in positive class prediction (Calders-Wevers gap, demographic parity)",
        **kw,
    ),
    "fairness.eod": _composite(
        "fairness.eod",
        ("tpr", "fpr"),
        "Equalized odds: mean of absolute differences in true and false positive rates across groups",
    ),
    "fairness.pp": _composite(
        "fairness.pp",
        ("ppv", "npv"),
        "Predictive parity: mean of absolute differences in ppv and npv across groups",
    ),
    "fairness.acc_eod=.05": _constraint(
        "fairness.acc_eod=.05", "fairness.eod", 0.05, "Accuracy under equalized odds < 0.05 constraint"
    ),
    "fairness.acc_ppv=.05": _constraint(
        "fairness.acc_ppv=.05", "fairness.ppv", 0.05, "Accuracy under ppv difference < 0.05 constraint"
    ),
    # Beyond mlr3fairness: names fairlearn users know.
    "fairness.fdr": _fairness("fdr", _ABS.format("false discovery rates")),
    "fairness.mae": _fairness("mae", _ABS.format("mean absolute error")),
    "fairness.dp_ratio": lambda **kw: FairnessMeasure(
        "selection_rate",
        operation=kw.pop("operation", "ratio"),
        key=kw.pop("key", "fairness.dp_ratio"),
        description="Demographic parity ratio: smallest ratio of selection rates (fairlearn)",
        **kw,
    ),
    "fairness.eod_max": _composite(
        "fairness.eod_max",
        ("tpr", "fpr"),
        "Equalized odds difference: larger of the TPR and FPR differences (fairlearn)",
        aggregate="max",
    ),
    "fairness": _generic,
}
for _name, _base in BASE_METRICS.items():
    if isinstance(_base, CountMetric):
        _REGISTRY[f"classif.{_name}"] = _performance(_name)
    elif isinstance(_base, ErrorMetric):
        _REGISTRY[f"regr.{_name}"] = _performance(_name)


def _proxy(metric: str) -> Callable[..., Any]:
    def make(**kw: Any) -> Any:
        from .unaware import ProxyMeasure

        return ProxyMeasure(metric, **kw)

    return make


def _quantified(**kw: Any) -> Any:
    from .unaware import QuantificationMeasure

    return QuantificationMeasure(**kw)


# Measures without the sensitive attribute (imported on first use).
_REGISTRY["unaware.proxy_dp"] = _proxy("dp")
_REGISTRY["unaware.proxy_eod"] = _proxy("eod")
_REGISTRY["unaware.proxy_eop"] = _proxy("eop")
_REGISTRY["unaware.quantified_dp"] = _quantified
_REGISTRY["classif.ce"] = lambda **kw: PerformanceMeasure("error_rate", key="classif.ce", **kw)
_REGISTRY["classif.bacc"] = lambda **kw: PerformanceMeasure("balanced_accuracy", key="classif.bacc", **kw)

#: The keys of mlr3fairness' table (seed vignette), in its order.
MLR3_KEYS: tuple[str, ...] = tuple(list(_REGISTRY)[:18])


def keys() -> list[str]:
    """All registered keys."""
    return list(_REGISTRY)


def msr(key: str, /, **overrides: Any) -> Measure:
    """Get a fresh measure from the registry.

    Parameters
    ----------
    key : str
        A key such as ``"fairness.tpr"``, ``"fairness.eod"``, ``"classif.acc"``, or
        ``"fairness"`` with ``base=`` for a generic measure. ``msrs()`` lists them.
    **overrides
        Passed to the measure: ``key=`` (a new id), ``operation=``, ``reference=``, ``pos_label=``,
        ``threshold=``, ``undefined=``, ``groups=``; ``epsilon=`` for constraints;
        ``aggregate=`` for composites; ``base=`` for ``"fairness"``.

    Returns
    -------
    Measure

    Examples
    --------
    >>> msr("fairness.tpr")([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("aabb"))
    0.5
    >>> msr("fairness", base="fpr", operation="ratio").key
    'fairness.fpr'
    >>> msr("fairness.tpx")
    Traceback (most recent call last):
    ...
    KeyError: "unknown measure key 'fairness.tpx'. Did you mean 'fairness.tp', ..."
    """
    if key not in _REGISTRY:
        close = difflib.get_close_matches(key, list(_REGISTRY), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"unknown measure key {key!r}.{hint} See msrs() for all keys.")
    return _REGISTRY[key](**overrides)


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
    rows = []
    for key in _REGISTRY:
        if key == "fairness":
            rows.append(
                {
                    "key": key,
                    "description": "Generic fairness measure: pass base= and operation=",
                    "base": "(any)",
                    "operation": "(any)",
                    "minimize": None,
                    "range": None,
                }
            )
            continue
        m = _REGISTRY[key]()
        bases = getattr(m, "bases", None)
        rows.append(
            {
                "key": key,
                "description": m.description,
                "base": ", ".join(b.name for b in bases) if bases is not None else _unaware_base(m),
                "operation": _operation_name(m),
                "minimize": m.minimize,
                "range": tuple(float(x) for x in m.range),
            }
        )
    return pd.DataFrame(rows)


def _operation_name(m: Measure) -> str:
    if isinstance(m, FairnessMeasure):
        return m.operation.name
    if isinstance(m, CompositeMeasure):
        ops = {_operation_name(c) for c in m.measures}
        return f"{m.aggregate_name}({', '.join(sorted(ops))})"
    if isinstance(m, ConstraintMeasure):
        return f"constraint(epsilon={m.epsilon:g})"
    if isinstance(m, PerformanceMeasure):
        return "overall"
    return "mean_pairwise_absdiff" if hasattr(m, "metric") else "diff (absolute)"


def _unaware_base(m: Any) -> str:
    if hasattr(m, "metric"):
        return {"dp": "selection_rate", "eod": "tpr, fpr", "eop": "tpr"}[m.metric] + " via proxies"
    return "selection_rate via quantification"
