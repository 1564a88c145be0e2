"""Base metrics: what is computed within each group.

A base metric turns sufficient statistics into one value per group. Count-based
metrics are ratios of confusion counts and work on any leading axes (folds,
bootstrap replicates, posterior draws): ``tpr(counts)`` with ``counts`` of shape
``(..., n_groups, 2, 2)`` returns shape ``(..., n_groups)``. A zero denominator
gives NaN, never a silent 0 or 1.

:class:`SklearnMetric` wraps any scikit-learn metric function or scorer and
computes it on each group's rows: a slower, general path that turns every
scikit-learn metric into a fairness base.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from ._counts import ConfusionStats, ErrorStats, MulticlassStats
from ._labels import implied_positive, need_pos_label
from ._stats import GroupedSample
from ._undefined import _did_you_mean

__all__ = [
    "BASE_METRICS",
    "BaseMetric",
    "CountMetric",
    "ErrorMetric",
    "MulticlassError",
    "RatioRoles",
    "SklearnMetric",
    "get_base",
    "ratio_roles",
]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with NaN where ``den == 0`` (no warning)."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


class MulticlassError(ValueError):
    """A base metric is not defined on labels of more than two classes as asked.

    The message names the fix (``pos_label=`` for one class against the rest,
    ``average=`` for a mean over classes); measures prefix their key.
    """


Average = Literal["macro", "weighted"]


class BaseMetric:
    """Something computed per group: a count metric, an error metric or a wrapped one.

    Attributes
    ----------
    name : str
        Short name, e.g. ``"tpr"``; used in measure keys.
    description : str
        One-line human description.
    minimize : bool
        Whether lower values are better when used as a performance measure.
    range : tuple of float
        Possible values ``(lower, upper)``.
    undefined_when : str
        Why the value can be undefined (zero denominator), for warnings.
    statistic : {"confusion", "errors"} or None
        The sufficient statistic the metric reads: binary confusion counts
        (:class:`~skfair_measures.ConfusionStats`), regression error sums
        (:class:`~skfair_measures.ErrorStats`), or None when it needs the
        rows themselves (a wrapped scikit-learn metric).
    needs_positive : bool
        Whether the value depends on which class is the positive one; a metric defined
        on the classes themselves (accuracy) needs no ``pos_label`` for labels such as
        ``["no", "yes"]``.
    """

    name: str
    description: str
    minimize: bool
    range: tuple[float, float]
    undefined_when: str
    response_method: str = "predict"
    statistic: ClassVar[Literal["confusion", "errors"] | None] = None
    needs_positive: ClassVar[bool] = True

    def group_values(self, sample: GroupedSample, pos_label: Any = None) -> tuple[np.ndarray, float]:
        """Return the value of each group and the overall value (here from the sample's statistics)."""
        if self.statistic is None:  # a metric that reads the rows defines its own
            raise NotImplementedError(f"base metric {self.name!r} reads the rows: define its group_values.")
        stats = sample.confusion(pos_label) if self.statistic == "confusion" else sample.errors()
        values, overall = self.from_stats(stats)
        return values, float(overall)

    def from_stats(self, stats: ConfusionStats | ErrorStats) -> tuple[np.ndarray, np.ndarray]:
        """Per-group values ``(..., n_groups)`` and overall values ``(...)`` from statistics."""
        raise TypeError(
            f"base metric {self.name!r} needs the rows, not sufficient statistics; "
            "evaluate it on the data (y_true, y_pred, sensitive_features)."
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


@dataclass(frozen=True, repr=False)
class CountMetric(BaseMetric):
    """A metric computed from confusion counts ``(..., K, K)`` = [true, pred].

    On binary counts (K = 2) ``func`` is applied. On K > 2 classes the metric is
    ``multiclass`` where it is defined on K classes (accuracy, error rate, balanced
    accuracy); a one-vs-rest rate needs ``pos_label=`` (one class against the rest)
    or an averaged form, :meth:`averaged`.

    Attributes
    ----------
    multiclass : callable or None
        The metric on ``(..., K, K)`` counts, if it is defined on K classes.
    average : {"macro", "weighted"} or None
        For an averaged rate: the mean over classes of the one-vs-rest rate, over
        the classes where it is defined in the group (scikit-learn's
        ``zero_division=np.nan``); "weighted" weighs each class by its support.
    averageable : bool
        Whether a mean over classes of this rate means something.

    Examples
    --------
    >>> c = np.array([[5.0, 1.0], [2.0, 2.0]])  # rows: y_true 0/1; columns: y_pred 0/1
    >>> float(BASE_METRICS["tpr"].from_counts(c))
    0.5
    >>> c3 = np.array([[2.0, 0, 0], [1, 1, 0], [0, 0, 4]])
    >>> float(BASE_METRICS["tpr"].averaged("macro").from_counts(c3)), float(BASE_METRICS["acc"].from_counts(c3))
    (0.8333333333333334, 0.875)
    """

    name: str
    func: Callable[[np.ndarray], np.ndarray]
    description: str
    undefined_when: str = ""
    minimize: bool = False
    range: tuple[float, float] = (0.0, 1.0)
    multiclass: Callable[[np.ndarray], np.ndarray] | None = None
    average: Average | None = None
    averageable: bool = False

    statistic: ClassVar[Literal["confusion"]] = "confusion"

    @property
    def needs_positive(self) -> bool:  # type: ignore[override]
        """Whether the value depends on which class is positive: not for a metric on the classes or a class mean."""
        return self.multiclass is None and self.average is None

    def averaged(self, average: Average) -> CountMetric:
        """The rate averaged over classes (``"macro"`` or ``"weighted"``), named e.g. ``tpr_macro``."""
        if average not in ("macro", "weighted"):
            raise ValueError(f"average={average!r}; pass 'macro' or 'weighted'.")
        if not self.averageable:
            why = "it is defined on K classes directly" if self.multiclass is not None else "it has no class average"
            raise ValueError(
                f"average={average!r} does not apply to {self.name!r}: {why}. Omit average=, or pass pos_label= "
                "for one class against the rest."
            )
        name, described = f"{self.name}_{average}", f"{self.description} ({average} average over classes)"
        return dataclasses.replace(self, name=name, description=described, average=average, averageable=False)

    def from_counts(self, counts: np.ndarray, classes: Any = None) -> np.ndarray:
        """Value on counts of shape ``(..., K, K)``; returns shape ``(...)``."""
        c = np.asarray(counts, dtype=float)
        if self.average is not None:
            return _class_average(self.func, c, self.average)
        if c.shape[-1] == 2 and (classes is None or implied_positive(classes)):
            return self.func(c)
        if self.multiclass is not None:
            return self.multiclass(c)
        if c.shape[-1] <= 2:
            raise MulticlassError(need_pos_label(classes))
        labels = list(range(c.shape[-1])) if classes is None else list(classes)
        # suggest average= only where it is accepted; the measure puts its key in MEASURE_KEY
        mean = "or average='macro' or 'weighted' (e.g. msr(MEASURE_KEY, average='macro')) for the mean over classes"
        fix = mean if self.averageable else f"{self.name} has no mean over classes"
        raise MulticlassError(
            f"{self.name} is a one-vs-rest rate; y_true and y_pred hold {len(labels)} distinct labels ({labels}). "
            f"Pass pos_label= (that class against the others); {fix}."
        )

    def from_stats(self, stats: ConfusionStats | ErrorStats) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(stats, ConfusionStats):
            raise TypeError(f"base metric {self.name!r} reads confusion counts (ConfusionStats); got {stats!r}.")
        classes = stats.classes if isinstance(stats, MulticlassStats) else None
        return self.from_counts(stats.counts, classes), self.from_counts(stats.overall, classes)


@dataclass(frozen=True, repr=False)
class ErrorMetric(BaseMetric):
    """A regression metric computed from per-group error sums ``(..., 3)``.

    Examples
    --------
    >>> float(BASE_METRICS["mse"].from_sums(np.array([4.0, 4.0, 8.0])))
    2.0
    """

    name: str
    func: Callable[[np.ndarray], np.ndarray]
    description: str
    undefined_when: str = "the group has no samples"
    minimize: bool = True
    range: tuple[float, float] = (0.0, np.inf)

    statistic: ClassVar[Literal["errors"]] = "errors"
    needs_positive: ClassVar[bool] = False

    def from_sums(self, sums: np.ndarray) -> np.ndarray:
        return self.func(np.asarray(sums, dtype=float))

    def from_stats(self, stats: ConfusionStats | ErrorStats) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(stats, ErrorStats):
            raise TypeError(f"base metric {self.name!r} reads regression error sums (ErrorStats); got {stats!r}.")
        return self.from_sums(stats.sums), self.from_sums(stats.overall)


@dataclass(frozen=True, repr=False)
class SklearnMetric(BaseMetric):
    """Wrap any scikit-learn metric function or scorer as a per-group base metric.

    The metric is evaluated on the rows of each group separately (a Python loop
    over groups), so it is slower than the count-based bases but fully general:
    ``roc_auc_score`` on scores, ``f1_score``, ``log_loss``, ...

    Parameters
    ----------
    metric : callable
        ``metric(y_true, y_pred, **kwargs)``, or a scorer made by
        :func:`sklearn.metrics.make_scorer` (its function, keyword arguments,
        sign and response method are used).
    name : str, optional
        Short name; defaults to the function name without ``_score``/``_error``.
    greater_is_better : bool, optional
        Direction; inferred from a scorer, or from the scikit-learn naming
        convention (``*_score`` is better when higher, ``*_error``/``*_loss``
        when lower).
    response_method : {"predict", "predict_proba", "decision_function"}, optional
        What the scorer asks of the estimator; ``roc_auc_score`` and other ranking
        metrics need ``"predict_proba"``.
    range : tuple of float, default=(-inf, inf)
    **kwargs
        Passed to ``metric``.

    Examples
    --------
    >>> from sklearn.metrics import roc_auc_score
    >>> auc = SklearnMetric(roc_auc_score)
    >>> auc.name, auc.minimize, auc.response_method
    ('roc_auc', False, 'predict_proba')
    """

    metric: Callable[..., float]
    name: str = ""
    greater_is_better: bool | None = None
    response_method: str = ""
    range: tuple[float, float] = (-np.inf, np.inf)
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    undefined_when: str = "the metric raised an error or returned NaN on the group"

    def __init__(
        self,
        metric: Callable[..., float],
        name: str | None = None,
        *,
        greater_is_better: bool | None = None,
        response_method: str | None = None,
        range: tuple[float, float] = (-np.inf, np.inf),
        **kwargs: Any,
    ) -> None:
        func, scorer_kwargs, sign, scorer_response = _unwrap_scorer(metric)
        kwargs = {**scorer_kwargs, **kwargs}
        fname = getattr(func, "__name__", type(func).__name__)
        if name is None:
            name = fname
            for suffix in ("_score", "_error", "_loss"):
                name = name.removesuffix(suffix)
        if greater_is_better is None:  # the scorer's sign, else scikit-learn's naming convention
            greater_is_better = sign > 0 if sign is not None else not fname.endswith(("_error", "_loss", "_deviance"))
        if response_method is None:
            response_method = scorer_response or ("predict_proba" if fname in _PROBA_METRICS else "predict")
        fields = dict(metric=func, name=name, greater_is_better=greater_is_better, response_method=response_method)
        for field_name, value in {**fields, "range": tuple(range), "kwargs": kwargs}.items():  # a frozen dataclass
            object.__setattr__(self, field_name, value)
        object.__setattr__(self, "description", f"{fname} (scikit-learn metric per group)")

    @property
    def minimize(self) -> bool:  # type: ignore[override]
        return not self.greater_is_better

    def _call(self, sample: GroupedSample, rows: slice | np.ndarray, kwargs: dict) -> float:
        """The metric on some rows of the sample (their weights too)."""
        w = {} if sample.sample_weight is None else {"sample_weight": sample.sample_weight[rows]}
        return float(self.metric(sample.y_true[rows], sample.y_pred[rows], **kwargs, **w))

    def group_values(self, sample: GroupedSample, pos_label: Any = None) -> tuple[np.ndarray, float]:
        kwargs = dict(self.kwargs)
        if pos_label is not None and "pos_label" not in kwargs and _takes(self.metric, "pos_label"):
            kwargs["pos_label"] = pos_label  # the measure's positive class reaches the metric
        try:  # on all rows an error is the metric's own (a wrong pos_label, labels it refuses): raised, not NaN
            overall = self._call(sample, slice(None), kwargs)
        except ValueError as exc:
            raise ValueError(
                f"{self.name}: the metric {getattr(self.metric, '__name__', self.metric)!r} refused all rows: {exc}"
            ) from exc
        order = np.argsort(sample.group_codes, kind="stable")
        bounds = np.searchsorted(sample.group_codes[order], np.arange(sample.n_groups + 1))
        values = np.full(sample.n_groups, np.nan)
        for g in range(sample.n_groups):
            rows = order[bounds[g] : bounds[g + 1]]
            if rows.size:  # a group the metric is undefined on (one class only, ...): NaN, said by the measure
                with contextlib.suppress(ValueError):
                    values[g] = self._call(sample, rows, kwargs)
        return values, overall


def _takes(func: Callable[..., Any], name: str) -> bool:
    """Whether ``func`` has a parameter ``name`` (False when its signature cannot be read)."""
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


#: scikit-learn metrics that take probabilities rather than labels.
_PROBA_METRICS = frozenset(
    {"roc_auc_score", "average_precision_score", "log_loss", "brier_score_loss", "d2_log_loss_score"}
)


def _unwrap_scorer(metric: Any) -> tuple[Callable[..., float], dict, int | None, str | None]:
    """Split a scikit-learn scorer into function, kwargs, sign and response method."""
    func = getattr(metric, "_score_func", None)
    if func is None:
        if not callable(metric):
            raise TypeError(f"metric must be a callable or a scikit-learn scorer; got {metric!r}.")
        return metric, {}, None, None
    response = getattr(metric, "_response_method", None)
    if isinstance(response, (list, tuple)):
        response = response[0]
    return func, dict(getattr(metric, "_kwargs", {})), getattr(metric, "_sign", 1), response


# --- count-based metrics: c[..., t, p] with t = y_true, p = y_pred ------------------
_CELLS = {"tn": (0, 0), "fp": (0, 1), "fn": (1, 0), "tp": (1, 1)}


@dataclass(frozen=True)
class _Cells:
    """``sum(num cells) / sum(den cells)`` of counts ``(..., 2, 2)``; without ``den``, the count itself.

    The cells are named (``"tp fn"``). A ratio is NaN where its denominator is 0; a count
    is NaN where the group has no samples (absent, not zero). An instance, not a lambda,
    so that base metrics and the measures holding them pickle.
    """

    num: str
    den: str | None = None  # None: a count; "all": the group's samples

    def __call__(self, c: np.ndarray) -> np.ndarray:
        def total(cells: str) -> np.ndarray:
            return _n(c) if cells == "all" else functools.reduce(np.add, [c[(..., *_CELLS[x])] for x in cells.split()])

        if self.den is None:
            return np.where(_n(c) > 0, total(self.num), np.nan)
        return _ratio(total(self.num), total(self.den))


def _n(c: np.ndarray) -> np.ndarray:
    return c.sum(axis=(-2, -1))


def _balanced_accuracy(c: np.ndarray) -> np.ndarray:
    return (_ratio(c[..., 1, 1], c[..., 1, :].sum(-1)) + _ratio(c[..., 0, 0], c[..., 0, :].sum(-1))) / 2


def _mse(s: np.ndarray) -> np.ndarray:
    return _ratio(s[..., 2], s[..., 0])


def _mae(s: np.ndarray) -> np.ndarray:
    return _ratio(s[..., 1], s[..., 0])


def _rmse(s: np.ndarray) -> np.ndarray:
    return np.sqrt(_ratio(s[..., 2], s[..., 0]))


# --- K classes: c[..., t, p] of shape (..., K, K) --------------------------------------


def _one_vs_rest(c: np.ndarray) -> np.ndarray:
    """Binary counts ``(..., K, 2, 2)`` of each class against the rest, from ``(..., K, K)``."""
    tp = np.diagonal(c, axis1=-2, axis2=-1)
    fn = c.sum(axis=-1) - tp
    fp = c.sum(axis=-2) - tp
    tn = c.sum(axis=(-2, -1))[..., None] - tp - fn - fp
    out = np.empty((*tp.shape, 2, 2), dtype=np.result_type(tn, fp, fn, tp))  # one array, not three np.stack
    out[..., 0, 0], out[..., 0, 1], out[..., 1, 0], out[..., 1, 1] = tn, fp, fn, tp
    return out


def _class_average(func: Callable[[np.ndarray], np.ndarray], c: np.ndarray, average: str) -> np.ndarray:
    """Mean over the classes where the one-vs-rest rate is defined (NaN if it is nowhere)."""
    per_class = func(_one_vs_rest(c))
    defined = ~np.isnan(per_class)
    weight = c.sum(axis=-1) if average == "weighted" else np.ones_like(per_class)
    weight = np.where(defined, weight, 0.0)
    return _ratio((np.where(defined, per_class, 0.0) * weight).sum(-1), weight.sum(-1))


def _acc_k(c: np.ndarray) -> np.ndarray:
    return _ratio(np.trace(c, axis1=-2, axis2=-1), _n(c))


def _error_rate_k(c: np.ndarray) -> np.ndarray:
    return _ratio(_n(c) - np.trace(c, axis1=-2, axis2=-1), _n(c))


def _balanced_accuracy_k(c: np.ndarray) -> np.ndarray:
    # scikit-learn's balanced_accuracy_score: the mean recall over the classes present in y_true
    return _class_average(_Cells("tp", "tp fn"), c, "macro")


_POS = "no positives in y_true"
_NEG = "no negatives in y_true"
_PPOS = "no positive predictions"
_PNEG = "no negative predictions"
_EMPTY = "the group has no samples"
_POS_NEG = "no positives or no negatives in y_true"

_COUNT_METRICS = [
    CountMetric("acc", _Cells("tp tn", "all"), "Accuracy", _EMPTY, multiclass=_acc_k),
    CountMetric("error_rate", _Cells("fp fn", "all"), "Error rate", _EMPTY, minimize=True, multiclass=_error_rate_k),
    CountMetric("tpr", _Cells("tp", "tp fn"), "True positive rate", _POS, averageable=True),
    CountMetric("fnr", _Cells("fn", "tp fn"), "False negative rate", _POS, minimize=True, averageable=True),
    CountMetric("fpr", _Cells("fp", "fp tn"), "False positive rate", _NEG, minimize=True, averageable=True),
    CountMetric("tnr", _Cells("tn", "fp tn"), "True negative rate", _NEG, averageable=True),
    CountMetric("ppv", _Cells("tp", "tp fp"), "Positive predictive value", _PPOS, averageable=True),
    CountMetric("fdr", _Cells("fp", "tp fp"), "False discovery rate", _PPOS, minimize=True, averageable=True),
    CountMetric("npv", _Cells("tn", "tn fn"), "Negative predictive value", _PNEG, averageable=True),
    CountMetric("fomr", _Cells("fn", "tn fn"), "False omission rate", _PNEG, minimize=True, averageable=True),
    CountMetric("selection_rate", _Cells("tp fp", "all"), "Positive prediction rate (selection rate)", _EMPTY),
    CountMetric(
        "balanced_accuracy", _balanced_accuracy, "Balanced accuracy", _POS_NEG, multiclass=_balanced_accuracy_k
    ),
    CountMetric("tp", _Cells("tp"), "True positives", _EMPTY, range=(0.0, np.inf)),
    CountMetric("fp", _Cells("fp"), "False positives", _EMPTY, minimize=True, range=(0.0, np.inf)),
    CountMetric("tn", _Cells("tn"), "True negatives", _EMPTY, range=(0.0, np.inf)),
    CountMetric("fn", _Cells("fn"), "False negatives", _EMPTY, minimize=True, range=(0.0, np.inf)),
]

_ERROR_METRICS = [
    ErrorMetric("mse", _mse, "Mean squared error"),
    ErrorMetric("mae", _mae, "Mean absolute error"),
    ErrorMetric("rmse", _rmse, "Root mean squared error"),
]

#: Every named base metric, by name.
BASE_METRICS: dict[str, BaseMetric] = {m.name: m for m in _COUNT_METRICS + _ERROR_METRICS}
_ALIASES = {
    "ppr": "selection_rate",
    "positive_rate": "selection_rate",
    "pp": "selection_rate",
    "accuracy": "acc",
    "recall": "tpr",
    "precision": "ppv",
    "specificity": "tnr",
    "for": "fomr",
    "bacc": "balanced_accuracy",
    "ce": "error_rate",
}


def get_base(base: str | BaseMetric | Callable[..., float]) -> BaseMetric:
    """Resolve a base metric from a name, a :class:`BaseMetric` or a scikit-learn metric.

    Examples
    --------
    >>> get_base("recall").name
    'tpr'
    """
    if isinstance(base, BaseMetric):
        return base
    if isinstance(base, str):
        key = base.removeprefix("classif.").removeprefix("regr.")
        key = _ALIASES.get(key, key)
        if key in BASE_METRICS:
            return BASE_METRICS[key]
        hint = _did_you_mean(key, [*BASE_METRICS, *_ALIASES])
        raise ValueError(
            f"base={base!r} is not a known base metric.{hint} Known: {sorted(BASE_METRICS)}; "
            "or pass any scikit-learn metric function."
        )
    if callable(base):
        return SklearnMetric(base)
    raise TypeError(f"base must be a name, a BaseMetric or a metric function; got {base!r}.")


@dataclass(frozen=True, eq=False)
class RatioRoles:
    """Which confusion cells form the numerator and the denominator of a rate.

    Attributes
    ----------
    num : ndarray of bool, shape (2, 2)
    den : ndarray of bool, shape (2, 2)
    simple : bool
        True if the base metric equals ``sum(num cells) / sum(den cells)``;
        False for other scale-free metrics such as balanced accuracy.
    """

    num: np.ndarray
    den: np.ndarray
    simple: bool

    @property
    def label_free(self) -> bool:
        """Whether the rate reads the predictions only (its cells do not depend on y_true), e.g. the selection rate."""
        return bool((self.num[0] == self.num[1]).all() and (self.den[0] == self.den[1]).all())


def ratio_roles(base: BaseMetric) -> RatioRoles:
    """Find the numerator and denominator cells of a count-based rate by probing it.

    The Bayesian methods draw a rate through its cells, and active labeling asks
    for the rows that enter its denominator; both read the roles from here.

    Parameters
    ----------
    base : BaseMetric
        A count metric with ``from_counts``.

    Returns
    -------
    RatioRoles

    Raises
    ------
    TypeError
        If the metric is not computed from confusion counts, or is not a rate
        (it changes when all counts are scaled, like the raw count ``tp``).

    Examples
    --------
    >>> r = ratio_roles(BASE_METRICS["tpr"])
    >>> r.num.astype(int).tolist(), r.den.astype(int).tolist(), r.simple
    ([[0, 0], [0, 1]], [[0, 0], [1, 1]], True)
    """
    if not isinstance(base, CountMetric):  # the metrics computed from confusion counts (statistic "confusion")
        raise TypeError(
            f"base metric {base.name!r} is not computed from confusion counts; posteriors and "
            "active labeling exist for count-based rates (acc, tpr, fpr, tnr, fnr, ppv, npv, "
            "fdr, fomr, selection_rate)."
        )
    probe = base.from_counts(np.eye(4).reshape(4, 2, 2))
    num = (probe == 1.0).reshape(2, 2)
    den = ~np.isnan(probe).reshape(2, 2)
    rng = np.random.default_rng(0)
    c = rng.uniform(1.0, 10.0, size=(8, 2, 2))
    value = base.from_counts(c)
    if not np.allclose(value, base.from_counts(3.0 * c), equal_nan=True):
        raise TypeError(
            f"base metric {base.name!r} is a count, not a rate; its posterior is not "
            "defined by a Beta-Binomial or calibration model. Use a rate such as "
            "'tpr' or 'selection_rate'."
        )
    simple = bool(den.any()) and np.allclose(value, (c * num).sum((-2, -1)) / (c * den).sum((-2, -1)))
    return RatioRoles(num, den, simple)
