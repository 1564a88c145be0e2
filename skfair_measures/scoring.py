"""scikit-learn scorers for measures, and ``compute_metrics`` for any predictions.

Build a scorer with :func:`fairness_scorer` (one measure, returns a float) or
:func:`make_scorers` (several measures, one prediction and one count pass per fold,
returns a dict). A scorer gets the sensitive attribute in one of two ways:

- **routing mode** (default): it requests ``sensitive_features`` through
  scikit-learn's metadata routing, so ``GridSearchCV`` / ``cross_validate`` slice
  it per fold. Enable routing with ``sklearn.set_config(enable_metadata_routing=True)``.
- **column mode** (``sensitive="sex"``): it reads the column(s) from ``X``, like
  mlr3's protected-attribute column role. Put :class:`DropColumns` first in the
  pipeline to keep the column out of the model's features.

Every scorer kind (these, :class:`~skfair_measures.bayes.BayesianScorer`, the
unaware and ranking scorers) is a thin subclass of :class:`FairnessScorer`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.metadata_routing import UNUSED

from ._stats import SingleGroupError, resolve_sensitive
from .measures import Measure, MeasureBase, UndefinedGroupWarning, as_measures, evaluate_measures

__all__ = [
    "DropColumns",
    "FairnessScorer",
    "MultiMeasureScorer",
    "compute_metrics",
    "fairness_scorer",
    "make_scorers",
]

_NO_SENSITIVE = (
    "{scorer} received no sensitive_features. Either enable metadata routing "
    "(sklearn.set_config(enable_metadata_routing=True)) and pass sensitive_features=... to fit() / params= of "
    "cross_validate, or name the column(s) of X that hold them: sensitive='column_name'."
)
_BOTH_SENSITIVE = (
    "{scorer} reads the sensitive attribute from X (sensitive={columns!r}) and was also routed sensitive_features; "
    "pass one of them: drop sensitive=, or call set_score_request(sensitive_features=False)."
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


def _sign(measure: MeasureBase) -> float:
    """+1 or -1: minimised measures are negated, like scikit-learn's ``neg_*`` scorers."""
    return 1.0 if measure.greater_is_better else -1.0


class FairnessScorer(BaseEstimator):
    """A scikit-learn scorer for one measure, and the base of every scorer kind.

    Build it with :func:`fairness_scorer`.

    ``scorer(estimator, X, y, *, sensitive_features=None, sample_weight=None)``
    calls :meth:`score`. Subclasses say what a fold's value is (:meth:`_scores`)
    and, by the signature of their :meth:`score`, which metadata they take.

    Routing uses scikit-learn's own machinery, not a hand-built request: the class
    derives from :class:`sklearn.base.BaseEstimator`, the documented base through
    which a third-party object consumes metadata. scikit-learn reads the metadata a
    consumer takes from the signature of its ``score`` method and generates
    ``set_score_request`` from it (with its validation of names and its error when
    routing is disabled); ``__metadata_request__score`` sets the defaults:
    ``sensitive_features`` is requested, ``sample_weight`` must be requested or
    refused explicitly when it is passed (as for scikit-learn's scorers), and the
    ``estimator`` argument is no metadata. Deriving from scikit-learn's private
    ``_BaseScorer`` would share its prediction cache in a ``scoring={...}`` dict,
    but breaks with its next internal change; :func:`make_scorers` predicts once
    per fold instead.

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
    >>> X = pd.DataFrame({"x": [0.0, 1, 2, 3, 4, 5], "sex": [0, 1, 0, 1, 0, 1]})
    >>> y = [0, 0, 1, 0, 1, 1]
    >>> scorer = FairnessScorer("fairness.tpr", sensitive="sex")
    >>> clf = LogisticRegression().fit(X, y)
    >>> scorer(clf, X, y)  # minimised measures are negated, like sklearn's neg_* scorers
    -0.5
    """

    __metadata_request__score = {"estimator": UNUSED, "sensitive_features": True}  # noqa: RUF012
    def __init__(self, measure: Measure | str, sensitive: str | Sequence[str] | None = None, *, groups: Any = None):
        self.measure = measure
        self.sensitive = sensitive
        self.groups = groups
        self._measures = self._resolve([measure], groups)

    @staticmethod
    def _resolve(measures: Sequence[MeasureBase | str], groups: Any) -> list[MeasureBase]:
        resolved = as_measures(measures)
        return resolved if groups is None else [m.with_inputs(groups=groups) for m in resolved]

    @property
    def _needs_sensitive(self) -> bool:
        return any(m.inputs.needs_sensitive for m in self._measures)

    @property
    def greater_is_better(self) -> bool:
        """Always True for the returned value: minimised measures are negated."""
        return True

    def _columns(self) -> list[str] | None:
        s = self.sensitive
        return None if s is None else ([s] if isinstance(s, str) else list(s))

    def _sensitive_of(self, X: Any, sensitive_features: Any) -> Any:
        """The routed ``sensitive_features`` or the columns of ``X`` (None if no measure needs them)."""
        columns = self._columns()
        if columns is not None and sensitive_features is not None:
            raise ValueError(_BOTH_SENSITIVE.format(scorer=type(self).__name__, columns=self.sensitive))
        if columns is None and sensitive_features is None:
            if not self._needs_sensitive:
                return None
            raise ValueError(_NO_SENSITIVE.format(scorer=repr(self)))
        return resolve_sensitive(sensitive_features, X=X, columns=columns)

    def score(
        self, estimator: Any, X: Any, y: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> float:
        """Score a fitted estimator on ``X`` and ``y`` (greater is better).

        Parameters
        ----------
        estimator : fitted estimator
        X : array-like or DataFrame
        y : array-like of shape (n_samples,)
        sensitive_features : array-like, optional
            The group of each sample (routing mode).
        sample_weight : array-like of shape (n_samples,), optional
        """
        groups = self._sensitive_of(X, sensitive_features)
        return self._scores(estimator, X, y, groups, sample_weight)[self._measures[0].key]

    def __call__(self, estimator: Any, X: Any, y: Any = None, **metadata: Any) -> Any:
        """The same as :meth:`score` (scikit-learn calls scorers)."""
        return self.score(estimator, X, y, **metadata)

    def _scores(self, estimator: Any, X: Any, y: Any, groups: Any, sample_weight: Any) -> dict[str, float]:
        """The signed value of every measure on one fold."""
        values: dict[str, float] = {}
        by_response: dict[tuple[str, Any], list[MeasureBase]] = {}
        for m in self._measures:
            by_response.setdefault((m.inputs.response_method, m.inputs.pos_label), []).append(m)
        for (method, pos_label), ms in by_response.items():
            values.update(_fold_values(ms, y, _response(estimator, X, method, pos_label), groups, sample_weight))
        return {m.key: _sign(m) * values[m.key] for m in self._measures}

    def _accept_sample_weight(self) -> bool:
        # scikit-learn's multi-metric scorer asks this when it routes sample_weight without metadata routing
        return "sample_weight" in self.get_metadata_routing().score.requests

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        keys = ", ".join(m.key for m in self._measures)
        mode = "routing" if self.sensitive is None else f"sensitive={self.sensitive!r}"
        return f"{type(self).__name__}({keys}, {mode})"


def _fold_values(measures: Sequence[MeasureBase], y_true: Any, y_pred: Any, groups: Any, w: Any) -> dict[str, float]:
    """Values of measures on one fold; a fold holding a single group gives NaN, with a warning.

    A cross-validation fold that holds one group leaves every comparison
    undefined; scikit-learn then reports NaN for that fold only, instead of the
    whole search failing.
    """
    try:
        res = evaluate_measures(measures, y_true, y_pred, sensitive_features=groups, sample_weight=w)
        return {k: r.value for k, r in res.items()}
    except SingleGroupError as exc:
        out = {m.key: float("nan") for m in measures if m.inputs.needs_sensitive}
        warnings.warn(f"{', '.join(out)}: NaN for this fold: {exc}", UndefinedGroupWarning, stacklevel=4)
        rest = [m for m in measures if not m.inputs.needs_sensitive]
        res = evaluate_measures(rest, y_true, y_pred, sample_weight=w) if rest else {}
        return {**out, **{k: r.value for k, r in res.items()}}


class MultiMeasureScorer(FairnessScorer):
    """One scorer for several measures: one prediction and one count pass per fold.

    Returns a dict ``{key: value}`` (minimised measures negated), which
    ``cross_validate`` and ``GridSearchCV`` accept as ``scoring=``; use one of the
    keys as ``refit=``. Build it with :func:`make_scorers`.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = pd.DataFrame({"x": [0.0, 1, 2, 3, 4, 5], "sex": [0, 1, 0, 1, 0, 1]})
    >>> y = [0, 0, 1, 0, 1, 1]
    >>> scorer = MultiMeasureScorer(["fairness.tpr", "classif.acc"], sensitive="sex")
    >>> scorer(LogisticRegression().fit(X, y), X, y)
    {'fairness.tpr': -0.5, 'classif.acc': 0.6666666666666666}
    """

    def __init__(
        self, measures: Sequence[Measure | str], sensitive: str | Sequence[str] | None = None, *, groups: Any = None
    ):
        self.measures = measures
        self.sensitive = sensitive
        self.groups = groups
        self._measures = self._resolve(measures, groups)

    def score(  # type: ignore[override]
        self, estimator: Any, X: Any, y: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> dict[str, float]:
        """Score a fitted estimator on ``X`` and ``y``: ``{key: value}``, greater is better."""
        return self._scores(estimator, X, y, self._sensitive_of(X, sensitive_features), sample_weight)


def fairness_scorer(
    measure: Measure | str, sensitive: str | Sequence[str] | None = None, *, groups: Any = None
) -> FairnessScorer:
    """A scikit-learn scorer for one measure: a float, greater is better.

    Parameters
    ----------
    measure : Measure or str
        The measure or its registry key.
    sensitive : str or list of str, optional
        Column(s) of ``X`` with the sensitive attribute; if None (routing mode),
        ``sensitive_features`` is requested through scikit-learn's metadata routing.
    groups : array-like, optional
        All expected groups, so that a fold missing a group is reported as NaN
        with a warning naming it.

    Returns
    -------
    FairnessScorer
        ``scorer(estimator, X, y, *, sensitive_features=None, sample_weight=None)``;
        minimised measures are negated, like scikit-learn's ``neg_*`` scorers.

    Examples
    --------
    >>> import sklearn
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_validate
    >>> X, y, sex = [[0.0], [1], [2], [3], [4], [5]] * 2, [0, 0, 1, 0, 1, 1] * 2, list("FMFMFM") * 2
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     cv = cross_validate(LogisticRegression(), X, y, cv=2, scoring=fairness_scorer("fairness.tpr"),
    ...                         params={"sensitive_features": sex})
    >>> cv["test_score"].tolist()
    [-0.5, -0.5]
    """
    return FairnessScorer(measure, sensitive, groups=groups)


def make_scorers(
    measures: Sequence[Measure | str], sensitive: str | Sequence[str] | None = None, *, groups: Any = None
) -> MultiMeasureScorer:
    """One scikit-learn scorer returning a dict of several measures, from one prediction per fold.

    Parameters
    ----------
    measures : sequence of Measure or str
        Measures or registry keys; each key becomes ``test_<key>`` in ``cross_validate``.
    sensitive : str or list of str, optional
        As in :func:`fairness_scorer`.
    groups : array-like, optional
        As in :func:`fairness_scorer`.

    Returns
    -------
    MultiMeasureScorer
        Returns ``{key: value}``; minimised measures are negated.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = pd.DataFrame({"x": [0.0, 1, 2, 3, 4, 5], "sex": [0, 1, 0, 1, 0, 1]})
    >>> y = [0, 0, 1, 0, 1, 1]
    >>> make_scorers(["fairness.tpr", "classif.acc"], sensitive="sex")(LogisticRegression().fit(X, y), X, y)
    {'fairness.tpr': -0.5, 'classif.acc': 0.6666666666666666}
    """
    return MultiMeasureScorer(measures, sensitive, groups=groups)


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
