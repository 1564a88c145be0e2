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

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.metadata_routing import MetadataRequest

from .measures import Measure, evaluate_measures
from .registry import msr

__all__ = ["DropColumns", "FairnessScorer", "MultiMeasureScorer", "compute_metrics", "make_scorers"]

_NO_SENSITIVE = (
    "the scorer for {key} received no sensitive_features. Either enable metadata "
    "routing (sklearn.set_config(enable_metadata_routing=True)) and pass "
    "sensitive_features=... to fit() / params= of cross_validate, or build the scorer "
    "in column mode: as_scorer(sensitive='column_name')."
)


def _as_measure(m: Measure | str) -> Measure:
    return msr(m) if isinstance(m, str) else m


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


def _sensitive_from_X(X: Any, columns: list[str]) -> pd.DataFrame | pd.Series:
    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            f"the scorer reads sensitive column(s) {columns} from X, but X is a "
            f"{type(X).__name__}; pass X as a pandas DataFrame."
        )
    missing = [c for c in columns if c not in X.columns]
    if missing:
        raise KeyError(f"sensitive column(s) {missing} not in X's columns {list(X.columns)}.")
    return X[columns[0]] if len(columns) == 1 else X[columns]


class _RoutingScorer:
    """Metadata-routing plumbing shared by the scorers (score requests only)."""

    _sensitive: list[str] | None

    def _init_requests(self) -> None:
        self._requests: dict[str, Any] = {}
        if self._sensitive is None:
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

    def _groups_of(self, X: Any, sensitive_features: Any, key: str) -> Any:
        if self._sensitive is not None:
            return _sensitive_from_X(X, self._sensitive)
        if sensitive_features is None:
            raise ValueError(_NO_SENSITIVE.format(key=key))
        return sensitive_features


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
        self.measure = _as_measure(measure)
        if groups is not None:
            self.measure = _with_groups(self.measure, groups)
        self._sensitive = (
            None if sensitive is None else ([sensitive] if isinstance(sensitive, str) else list(sensitive))
        )
        self._sign = 1 if self.measure.greater_is_better else -1
        self._init_requests()

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
        groups = self._groups_of(X, sensitive_features, self.measure.key)
        y_pred = _response(estimator, X, self.measure.response_method, self.measure.pos_label)
        value = self.measure(y_true, y_pred, sensitive_features=groups, sample_weight=sample_weight)
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
        self.measures = [_as_measure(m) for m in measures]
        if groups is not None:
            self.measures = [_with_groups(m, groups) for m in self.measures]
        self._sensitive = (
            None if sensitive is None else ([sensitive] if isinstance(sensitive, str) else list(sensitive))
        )
        self._init_requests()

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
        groups = self._groups_of(X, sensitive_features, "these measures")
        out: dict[str, float] = {}
        by_method: dict[tuple[str, Any], list[Measure]] = {}
        for m in self.measures:
            by_method.setdefault((m.response_method, m.pos_label), []).append(m)
        for (method, pos_label), ms in by_method.items():
            y_pred = _response(estimator, X, method, pos_label)
            res = evaluate_measures(ms, y_true, y_pred, sensitive_features=groups, sample_weight=sample_weight)
            for m in ms:
                out[m.key] = (1 if m.greater_is_better else -1) * res[m.key].value
        return {m.key: out[m.key] for m in self.measures}

    def __repr__(self) -> str:
        return f"MultiMeasureScorer({[m.key for m in self.measures]})"


def make_scorers(
    measures: Sequence[Measure | str], sensitive: str | Sequence[str] | None = None, *, groups: Any = None
) -> MultiMeasureScorer:
    """A single scorer returning a dict of several measures (see :class:`MultiMeasureScorer`)."""
    return MultiMeasureScorer(measures, sensitive=sensitive, groups=groups)


def _with_groups(measure: Measure, groups: Any) -> Measure:
    import copy

    m = copy.deepcopy(measure)
    index = pd.Index(groups)
    for child in _leaves(m):
        child.groups = index
    return m


def _leaves(m: Measure) -> list[Measure]:
    children = getattr(m, "measures", None)
    if children is not None:
        return [leaf for c in children for leaf in _leaves(c)]
    if hasattr(m, "performance"):
        return _leaves(m.performance) + _leaves(m.fairness)
    return [m]


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
    data : pandas.DataFrame
        Holds the target, the sensitive column(s) and, optionally, the predictions.
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
    if isinstance(measures, (Measure, str)):
        measures = [measures]
    ms = [_as_measure(m) for m in measures]
    y_pred = data[prediction] if isinstance(prediction, str) else prediction
    cols = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    groups = data[cols[0]] if len(cols) == 1 else data[cols]
    w = data[sample_weight] if isinstance(sample_weight, str) else sample_weight
    res = evaluate_measures(ms, data[target], y_pred, sensitive_features=groups, sample_weight=w)
    return pd.Series({m.key: res[m.key].value for m in ms}, dtype=float)
