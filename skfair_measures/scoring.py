"""scikit-learn scorers for measures, and ``compute_metrics`` for any predictions.

A :class:`FairnessScorer` gets the sensitive attribute in one of two ways:

- **routing mode** (default): it requests ``sensitive_features`` through
  scikit-learn's metadata routing, so ``GridSearchCV`` / ``cross_validate`` slice
  it per fold. Enable routing with ``sklearn.set_config(enable_metadata_routing=True)``.
- **column mode** (``sensitive="sex"``): it reads the column(s) from ``X``, like
  mlr3's protected-attribute column role. Put :class:`DropColumns` first in the
  pipeline to keep the column out of the model's features.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.metadata_routing import MetadataRequest

from ._stats import SingleGroupError, resolve_sensitive
from .measures import Measure, UndefinedGroupWarning, as_measures, evaluate_measures

__all__ = ["DropColumns", "FairnessScorer", "MultiMeasureScorer", "compute_metrics", "make_scorers"]

_NO_SENSITIVE = (
    "the scorer for {key} received no sensitive_features. Either enable metadata "
    "routing (sklearn.set_config(enable_metadata_routing=True)) and pass "
    "sensitive_features=... to fit() / params= of cross_validate, or build the scorer "
    "in column mode: as_scorer(sensitive='column_name')."
)


def _response(estimator: Any, X: Any, method: str, pos_label: Any) -> np.ndarray:
    """Predictions, or the positive-class probability for ``predict_proba``."""
    if method == "predict":
        return np.asarray(estimator.predict(X))
    if not hasattr(estimator, method):
        raise AttributeError(
            f"{type(estimator).__name__} has no {method}(), which this measure needs "
            "(it scores probabilities); use a probabilistic classifier."
        )
    proba = np.asarray(getattr(estimator, method)(X))
    if proba.ndim == 1:
        return proba
    classes = list(getattr(estimator, "classes_", range(proba.shape[1])))
    pos = classes[-1] if pos_label is None else pos_label
    if pos not in classes:
        raise ValueError(f"pos_label={pos!r} is not one of the estimator's classes {classes}.")
    return proba[:, classes.index(pos)]


class _RoutingScorer:
    """Metadata-routing plumbing shared by the scorers (score requests only)."""

    _sensitive: list[str] | None

    def _init_requests(self, needs_sensitive: bool = True) -> None:
        self._requests: dict[str, Any] = {}
        if self._sensitive is None and needs_sensitive:
            self._requests["sensitive_features"] = True

    def set_score_request(self, **requests: Any) -> _RoutingScorer:
        """Request metadata for scoring, e.g. ``set_score_request(sample_weight=True)``."""
        for param, value in requests.items():
            if param not in ("sensitive_features", "sample_weight"):
                raise TypeError(f"unexpected request {param!r}; pass sensitive_features or sample_weight.")
            self._requests[param] = value
        return self

    def get_metadata_routing(self) -> MetadataRequest:
        """The metadata this scorer requests (used by scikit-learn's routing)."""
        request = MetadataRequest(owner=type(self).__name__)
        for param, value in self._requests.items():
            request.score.add_request(param=param, alias=value)
        return request

    def _groups_of(self, X: Any, sensitive_features: Any, key: str, needs_sensitive: bool = True) -> Any:
        if self._sensitive is None and sensitive_features is None:
            if not needs_sensitive:
                return None
            raise ValueError(_NO_SENSITIVE.format(key=key))
        return resolve_sensitive(sensitive_features, X=X, columns=self._sensitive)


def _columns(sensitive: str | Sequence[str] | None) -> list[str] | None:
    return None if sensitive is None else ([sensitive] if isinstance(sensitive, str) else list(sensitive))


def _scored(
    measures: Sequence[Measure], y_true: Any, y_pred: Any, groups: Any, sample_weight: Any
) -> dict[str, float]:
    """Values of measures on one fold; a fold holding a single group gives NaN, with a warning.

    A cross-validation fold that holds one group leaves every comparison
    undefined; scikit-learn then reports NaN for that fold only, instead of the
    whole search failing.
    """
    try:
        res = evaluate_measures(measures, y_true, y_pred, sensitive_features=groups, sample_weight=sample_weight)
        return {k: r.value for k, r in res.items()}
    except SingleGroupError as exc:
        out = {m.key: float("nan") for m in measures if m.inputs.needs_sensitive}
        warnings.warn(f"{', '.join(out)}: NaN for this fold: {exc}", UndefinedGroupWarning, stacklevel=3)
        rest = [m for m in measures if not m.inputs.needs_sensitive]
        res = evaluate_measures(rest, y_true, y_pred, sample_weight=sample_weight) if rest else {}
        return {m.key: out[m.key] if m.key in out else res[m.key].value for m in measures}


class FairnessScorer(_RoutingScorer):
    """A scikit-learn scorer computing one measure (see :meth:`Measure.as_scorer`).

    Parameters
    ----------
    measure : Measure or str
        The measure or its registry key.
    sensitive : str or list of str, optional
        Column(s) of ``X`` with the sensitive attribute (column mode); if None,
        ``sensitive_features`` is requested through metadata routing.
    groups : array-like, optional
        All expected groups, so that a fold missing a group is reported.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfair_measures import msr
    >>> X = pd.DataFrame({"x": [0.0, 1, 2, 3, 4, 5], "sex": [0, 1, 0, 1, 0, 1]})
    >>> y = [0, 0, 1, 0, 1, 1]
    >>> scorer = msr("fairness.tpr").as_scorer(sensitive="sex")
    >>> clf = LogisticRegression().fit(X, y)
    >>> scorer(clf, X, y)  # minimised measures are negated, like sklearn's neg_* scorers
    -0.5
    """

    def __init__(self, measure: Measure | str, sensitive: str | Sequence[str] | None = None, groups: Any = None):
        (self.measure,) = as_measures([measure])
        if groups is not None:
            self.measure = self.measure.with_inputs(groups=groups)
        self._sensitive = _columns(sensitive)
        self._sign = 1 if self.measure.greater_is_better else -1
        self._init_requests(self.measure.inputs.needs_sensitive)

    @property
    def greater_is_better(self) -> bool:
        return self.measure.greater_is_better

    def __call__(
        self,
        estimator: Any,
        X: Any,
        y_true: Any,
        sample_weight: Any = None,
        sensitive_features: Any = None,
        **kwargs: Any,
    ) -> float:
        if kwargs:
            raise TypeError(f"{self!r} got unexpected metadata {sorted(kwargs)}.")
        inputs = self.measure.inputs
        groups = self._groups_of(X, sensitive_features, self.measure.key, inputs.needs_sensitive)
        y_pred = _response(estimator, X, inputs.response_method, inputs.pos_label)
        value = _scored([self.measure], y_true, y_pred, groups, sample_weight)[self.measure.key]
        return self._sign * value

    def __repr__(self) -> str:
        mode = f"sensitive={self._sensitive}" if self._sensitive else "routing"
        return f"FairnessScorer({self.measure.key}, {mode}, greater_is_better={self.greater_is_better})"


class MultiMeasureScorer(_RoutingScorer):
    """One scorer for several measures: one prediction and one count pass per fold.

    Returns a dict ``{key: value}`` (minimised measures negated), which
    ``cross_validate`` and ``GridSearchCV`` accept as ``scoring=``; use one of the
    keys as ``refit=``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = pd.DataFrame({"x": [0.0, 1, 2, 3, 4, 5], "sex": [0, 1, 0, 1, 0, 1]})
    >>> y = [0, 0, 1, 0, 1, 1]
    >>> scorer = make_scorers(["fairness.tpr", "classif.acc"], sensitive="sex")
    >>> scorer(LogisticRegression().fit(X, y), X, y)
    {'fairness.tpr': -0.5, 'classif.acc': 0.6666666666666666}
    """

    def __init__(
        self,
        measures: Sequence[Measure | str],
        sensitive: str | Sequence[str] | None = None,
        groups: Any = None,
    ):
        self.measures = as_measures(measures)
        if groups is not None:
            self.measures = [m.with_inputs(groups=groups) for m in self.measures]
        self._sensitive = _columns(sensitive)
        self._init_requests(any(m.inputs.needs_sensitive for m in self.measures))

    def __call__(
        self,
        estimator: Any,
        X: Any,
        y_true: Any,
        sample_weight: Any = None,
        sensitive_features: Any = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        if kwargs:
            raise TypeError(f"{self!r} got unexpected metadata {sorted(kwargs)}.")
        needs = any(m.inputs.needs_sensitive for m in self.measures)
        groups = self._groups_of(X, sensitive_features, "these measures", needs)
        out: dict[str, float] = {}
        by_method: dict[tuple[str, Any], list[Measure]] = {}
        for m in self.measures:
            by_method.setdefault((m.inputs.response_method, m.inputs.pos_label), []).append(m)
        for (method, pos_label), ms in by_method.items():
            y_pred = _response(estimator, X, method, pos_label)
            values = _scored(ms, y_true, y_pred, groups, sample_weight)
            for m in ms:
                out[m.key] = (1 if m.greater_is_better else -1) * values[m.key]
        return {m.key: out[m.key] for m in self.measures}

    def __repr__(self) -> str:
        return f"MultiMeasureScorer({[m.key for m in self.measures]})"


def make_scorers(
    measures: Sequence[Measure | str], sensitive: str | Sequence[str] | None = None, *, groups: Any = None
) -> MultiMeasureScorer:
    """A single scorer returning a dict of several measures (see :class:`MultiMeasureScorer`)."""
    return MultiMeasureScorer(measures, sensitive=sensitive, groups=groups)


class DropColumns(TransformerMixin, BaseEstimator):
    """Drop columns from a DataFrame: keeps the sensitive column out of a model.

    Put it first in a pipeline when the scorer reads the sensitive attribute from
    ``X`` (``as_scorer(sensitive="sex")``): the scorer sees the column, the model
    does not.

    Parameters
    ----------
    columns : str or list of str
        Columns to drop.

    Examples
    --------
    >>> import pandas as pd
    >>> DropColumns("sex").fit_transform(pd.DataFrame({"x": [1], "sex": ["F"]})).columns.tolist()
    ['x']
    """

    def __init__(self, columns: str | Sequence[str] = ()):
        self.columns = columns

    def fit(self, X: pd.DataFrame, y: Any = None) -> DropColumns:
        """Check that the columns exist."""
        cols = [self.columns] if isinstance(self.columns, str) else list(self.columns)
        if not isinstance(X, pd.DataFrame):
            raise TypeError("DropColumns needs X as a pandas DataFrame.")
        missing = [c for c in cols if c not in X.columns]
        if missing:
            raise KeyError(f"columns {missing} not in X.")
        self.columns_ = cols
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def transform(self, X: pd.DataFrame) -> pd.DataFrame:
        """Return ``X`` without the columns."""
        return X.drop(columns=self.columns_)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the remaining columns."""
        return np.asarray([c for c in self.feature_names_in_ if c not in self.columns_], dtype=object)


def compute_metrics(
    data: pd.DataFrame,
    target: str,
    prediction: str | Any,
    sensitive: str | Sequence[str],
    measures: Measure | str | Sequence[Measure | str],
    *,
    sample_weight: str | Any = None,
) -> pd.Series:
    """Compute measures on predictions from any model (mlr3fairness' ``compute_metrics``).

    Parameters
    ----------
    data : pandas.DataFrame, or a polars, pyarrow, DuckDB, Dask or PySpark frame
        Holds the target, the sensitive column(s) and, optionally, the predictions.
        A frame of another engine is computed in that engine
        (:func:`skfair_measures.engines.compute_metrics`; columns named, not arrays).
    target : str
        Column with the true labels.
    prediction : str or array-like
        Column with the predictions, or the predictions themselves.
    sensitive : str or list of str
        Sensitive column(s); several give intersectional groups.
    measures : Measure, str or sequence of them
        Measures or registry keys.
    sample_weight : str or array-like, optional
        Column with weights, or the weights.

    Returns
    -------
    pandas.Series
        One value per measure, indexed by key.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 1, 0, 0], "yhat": [1, 0, 0, 0], "sex": list("FMFM")})
    >>> compute_metrics(df, "y", "yhat", "sex", ["fairness.acc", "classif.acc"])
    fairness.acc    0.50
    classif.acc     0.75
    dtype: float64
    """
    if not isinstance(data, pd.DataFrame):  # polars, pyarrow, DuckDB, Dask, Spark: computed in their engine
        from .engines import compute_metrics as compute_in_engine

        return compute_in_engine(data, target, prediction, sensitive, measures, sample_weight=sample_weight)
    ms = as_measures(measures)
    y_pred = data[prediction] if isinstance(prediction, str) else prediction
    groups = resolve_sensitive(X=data, columns=sensitive)
    w = data[sample_weight] if isinstance(sample_weight, str) else sample_weight
    res = evaluate_measures(ms, data[target], y_pred, sensitive_features=groups, sample_weight=w)
    return pd.Series({m.key: res[m.key].value for m in ms}, dtype=float)
