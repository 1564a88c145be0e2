"""scikit-learn scorers for measures.

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

import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.metadata_routing import UNUSED

from ._counts import ConfusionStats, MulticlassStats
from ._groups import SingleGroupError, resolve_sensitive
from ._protocol import prepared
from ._together import evaluate_together
from .measures import Measure, MeasureBase, UndefinedGroupWarning
from .ranking import RankingFairness
from .registry import as_measures
from .unaware import ProxyMeasure, QuantificationMeasure

__all__ = [
    "DropColumns",
    "FairnessScorer",
    "MultiMeasureScorer",
    "ProxyScorer",
    "QuantificationScorer",
    "RankingScorer",
    "fairness_scorer",
    "make_scorers",
    "pooled_counts",
]

_NOT_GIVEN = (
    "{scorer} received no {name}. Either enable metadata routing (sklearn.set_config(enable_metadata_routing=True)) "
    "and pass {name}=... to fit() / params= of cross_validate, or name the column(s) of X that hold it: "
    "{param}='column_name'."
)
#: Names of the counts a ``make_scorers(..., counts=True)`` scorer returns beside each measure's value:
#: the (weighted) confusion cell ``t`` (true), ``p`` (predicted) of a group, and the group's rows.
COUNT_KEY = "{key}#counts[{group}|{t}{p}]"
ROWS_KEY = "{key}#rows[{group}]"
#: The fold's rows, all groups together: scikit-learn keeps the keys of the first fold only, and this total
#: shows when a later fold's group was dropped because the first fold had no sample of it.
TOTAL_KEY = "{key}#rows"
_CELLS = ((0, 0), (0, 1), (1, 0), (1, 1))
_MISSING_GROUP = (
    "a test fold has no sample of group {group!r}, so its counts for {key} are missing{where} and the folds "
    "cannot be pooled. Stratify the folds by label and group (e.g. StratifiedKFold on the label x group "
    "strata), or declare every group: make_scorers(..., counts=True, groups=[...]) gives every fold the "
    "same keys (a missing group's counts are 0)."
)
_SCORING_FAILED = (
    "{scorer}: scoring failed on this fold ({error}); every key is {error_score} for this fold. A scorer that "
    "returns a dict must put the error score in itself (scikit-learn's error_score= cannot); pass "
    "make_scorers(..., error_score='raise') to stop at the error instead."
)


class _FoldScores(dict):
    """A fold's scores: a key another fold has and this one lacks is an error naming the missing group."""

    def __missing__(self, key: str) -> float:
        group = re.search(r"#(?:counts|rows)\[(.*?)(?:\|\d\d)?\]$", key)
        if group is None:
            raise _FoldKeyError(f"a test fold's scores lack {key!r}, which another fold's scores hold.")
        raise _FoldKeyError(_MISSING_GROUP.format(group=group.group(1), key=key.split("#", 1)[0], where=""))


class _FoldKeyError(KeyError):
    """A key missing from one fold's scores; its message says why and what to do."""

    def __str__(self) -> str:
        return str(self.args[0])


_BOTH_GIVEN = (
    "{scorer} reads {name} from X ({param}={column!r}) and was also routed {name}; pass one of them: drop {param}=, "
    "or call set_score_request({name}=False)."
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

    Build it with :func:`fairness_scorer` (its example: routing mode; :func:`make_scorers`'s: column mode).

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
    """

    __metadata_request__score = {"estimator": UNUSED, "sensitive_features": True}  # noqa: RUF012

    def __init__(self, measure: Measure | str, sensitive: str | Sequence[str] | None = None, *, groups: Any = None):
        self.measure, self.sensitive, self.groups = measure, sensitive, groups
        self._measures = self._resolve([measure], groups)

    @staticmethod
    def _resolve(measures: Sequence[MeasureBase | str], groups: Any) -> list[MeasureBase]:
        resolved = as_measures(measures)
        if groups is None:
            return resolved
        for m in resolved:
            if not isinstance(m, Measure):
                raise ValueError(f"groups= does not apply to {m.key} (it does not encode groups itself); omit groups=.")
        return [m.with_inputs(groups=groups) for m in resolved]

    @property
    def _needs_sensitive(self) -> bool:
        return any(m.inputs.needs_sensitive for m in self._measures)

    @property
    def greater_is_better(self) -> bool:
        """Always True for the returned value: minimised measures are negated."""
        return True

    def _columns(self) -> list[str] | None:
        """The sensitive column(s) of ``X`` as a list (column mode), or None (routing mode)."""
        s = self.sensitive
        return None if s is None else ([s] if isinstance(s, str) else list(s))

    def _sensitive_of(self, X: Any, sensitive_features: Any) -> Any:
        """The routed ``sensitive_features`` or the columns of ``X`` (None if no measure needs them)."""
        return self._metadata(X, sensitive_features, self.sensitive, "sensitive_features", "sensitive")

    def _metadata(self, X: Any, routed: Any, column: Any, name: str, param: str, required: bool | None = None) -> Any:
        """Metadata ``name`` routed to the scorer or read from the column(s) ``param=`` of ``X``, never both."""
        if column is not None and routed is not None:
            raise ValueError(_BOTH_GIVEN.format(scorer=type(self).__name__, name=name, param=param, column=column))
        if column is None and routed is None:
            if not (self._needs_sensitive if required is None else required):
                return None
            raise ValueError(_NOT_GIVEN.format(scorer=repr(self), name=name, param=param))
        return resolve_sensitive(routed, X=X, columns=column, argument=name)

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

    def _scores(
        self, estimator: Any, X: Any, y: Any, groups: Any, sample_weight: Any, counts: bool = False
    ) -> dict[str, float]:
        """The signed value of every measure on one fold (and, with ``counts``, the counts it read)."""
        values: dict[str, float] = {}
        by_response: dict[tuple[str, Any], list[MeasureBase]] = {}
        for m in self._measures:
            by_response.setdefault((m.inputs.response_method, m.inputs.pos_label), []).append(m)
        extra: dict[str, float] = {}
        for (method, pos_label), ms in by_response.items():
            y_pred = _response(estimator, X, method, pos_label)
            values.update(_fold_values(ms, y, y_pred, groups, sample_weight))
            if counts:
                for m in ms:
                    extra.update(_count_entries(m, y, y_pred, groups, sample_weight))
        return {**{m.key: _sign(m) * values[m.key] for m in self._measures}, **extra}

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
        res = evaluate_together(measures, y_true, y_pred, sensitive_features=groups, sample_weight=w)
        return {k: r.value for k, r in res.items()}
    except SingleGroupError as exc:
        out = {m.key: float("nan") for m in measures if m.inputs.needs_sensitive}
        warnings.warn(f"{', '.join(out)}: NaN for this fold: {exc}", UndefinedGroupWarning, stacklevel=4)
        rest = [m for m in measures if not m.inputs.needs_sensitive]
        res = evaluate_together(rest, y_true, y_pred, sample_weight=w) if rest else {}
        return {**out, **{k: r.value for k, r in res.items()}}


def _confusion_stats(m: MeasureBase, y_true: Any, y_pred: Any, groups: Any, w: Any) -> ConfusionStats | None:
    """The 2 x 2 confusion counts per group that measure ``m`` reads, with the rows per group.

    None for measures of other statistics (regression errors, K classes) and for a
    sample holding a single group (the measure itself is NaN there, with a warning).
    """
    if {b.statistic for b in m.bases} != {"confusion"}:
        return None
    try:
        sample = m.validate(y_true, y_pred, sensitive_features=groups, sample_weight=w)
    except SingleGroupError:
        return None
    data, pos = prepared(sample, m.inputs)
    stats = data.confusion(pos)
    if isinstance(stats, MulticlassStats):  # K x K counts: their 2 x 2 corner is no confusion table
        return None
    return ConfusionStats(stats.counts, stats.groups, rows=np.asarray(data.group_sizes(), dtype=float))


def _count_entries(m: MeasureBase, y_true: Any, y_pred: Any, groups: Any, w: Any) -> dict[str, float]:
    """The 2 x 2 confusion counts and rows per group that measure ``m`` reads on one fold, by name.

    Counts add over folds, so the measure on the pooled out-of-fold counts can be computed
    from ``cv_results_`` afterwards (:func:`pooled_counts`). Measures of other statistics
    (regression errors, K classes) return nothing.
    """
    stats = _confusion_stats(m, y_true, y_pred, groups, w)
    if stats is None:
        return {}
    out: dict[str, float] = {TOTAL_KEY.format(key=m.key): float(len(y_true))}
    for g, group in enumerate(stats.groups):
        out |= {COUNT_KEY.format(key=m.key, group=group, t=t, p=p): float(stats.counts[g, t, p]) for t, p in _CELLS}
        out[ROWS_KEY.format(key=m.key, group=group)] = float(stats.rows[g])
    return out


def pooled_counts(cv_results: Any, key: str) -> list[ConfusionStats] | None:
    """Per candidate of a search, the confusion counts of measure ``key`` summed over the test folds.

    Reads the entries that a ``make_scorers(..., counts=True)`` scorer adds to
    ``cv_results_`` (``split<i>_test_<key>#counts[<group>|<t><p>]`` and ``...#rows[<group>]``);
    None if the search has none for ``key``. Group labels come back as strings.

    Parameters
    ----------
    cv_results : dict
        ``search.cv_results_``.
    key : str
        A measure key of the scorer.

    Returns
    -------
    list of ConfusionStats or None
        One per candidate, shape ``(n_groups, 2, 2)``, with the rows per group.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> X = pd.DataFrame({"x": [0.0, 1, 2, 3, 4, 5] * 4, "sex": [0, 1] * 12})
    >>> y = [0, 0, 1, 0, 1, 1] * 4
    >>> search = GridSearchCV(LogisticRegression(), {"C": [1.0]}, cv=2, refit=False,
    ...                       scoring=make_scorers(["fairness.tpr"], sensitive="sex", counts=True)).fit(X, y)
    >>> pooled_counts(search.cv_results_, "fairness.tpr")[0].counts.sum()  # every row once
    np.float64(24.0)
    """
    entry = re.compile(rf"split(\d+)_test_{re.escape(key)}#(?:counts\[(.*)\|(\d)(\d)\]|rows\[(.*)\]|rows)$")
    cells: dict[str, np.ndarray] = {}  # group -> counts (n_candidates, 2, 2) summed over the folds
    rows: dict[str, np.ndarray] = {}
    fold_rows: dict[str, Any] = {}
    totals: dict[str, np.ndarray] = {}
    for name, values in cv_results.items():
        if (match := entry.match(name)) is None:
            continue
        split, group, t, p, row_group = match.groups()
        vals = np.asarray(values, dtype=float)  # NaN where the fold failed: the pooled value is undefined
        if group is not None:
            cells.setdefault(group, np.zeros((vals.size, 2, 2)))[:, int(t), int(p)] += vals
        elif row_group is not None:
            rows[row_group] = rows.get(row_group, 0.0) + vals
            fold_rows[split] = fold_rows.get(split, 0.0) + vals
        else:
            totals[split] = vals
    for split, total in totals.items():
        if (total > fold_rows.get(split, 0.0) + 0.5).any():  # NaN compares False
            where = f" from split {split} (scikit-learn kept the groups of the first fold only)"
            raise ValueError(_MISSING_GROUP.format(group="?", key=key, where=where).replace("group '?'", "some group"))
    if not cells:
        return None
    groups = pd.Index(list(cells), dtype=object)
    counts = np.stack([cells[g] for g in groups], axis=1)  # (n_candidates, n_groups, 2, 2)
    row_table = np.stack([rows.get(g, cells[g].sum(axis=(-2, -1))) for g in groups], -1)
    return [ConfusionStats(counts[c], groups, rows=row_table[c]) for c in range(counts.shape[0])]


class MultiMeasureScorer(FairnessScorer):
    """One scorer for several measures: one prediction and one count pass per fold.

    Returns a dict ``{key: value}`` (minimised measures negated), which
    ``cross_validate`` and ``GridSearchCV`` accept as ``scoring=``; use one of the
    keys as ``refit=``. Build it with :func:`make_scorers` (see its example).
    """

    def __init__(
        self,
        measures: Sequence[Measure | str],
        sensitive: str | Sequence[str] | None = None,
        *,
        groups: Any = None,
        counts: bool = False,
        error_score: float | str = np.nan,
    ):
        self.measures, self.sensitive, self.groups, self.counts = measures, sensitive, groups, counts
        if not (error_score == "raise" or isinstance(error_score, int | float | np.number)):
            raise ValueError(f"error_score={error_score!r}; pass 'raise' or a number (default NaN).")
        self.error_score = error_score
        self._measures = self._resolve(measures, groups)
        for m in self._measures:
            if _scorer_type(m) is not FairnessScorer:
                raise ValueError(
                    f"make_scorers computes measures of predictions and groups in one pass; {m.key} needs its own "
                    f"scorer: fairness_scorer({m.key!r}, ...)."
                )

    def score(  # type: ignore[override]
        self, estimator: Any, X: Any, y: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> dict[str, float]:
        """Score a fitted estimator on ``X`` and ``y``: ``{key: value}``, greater is better.

        If scoring raises, every key is ``error_score`` for this fold (the counts NaN), with a
        warning naming the error; ``error_score="raise"`` raises it.
        """
        try:
            groups = self._sensitive_of(X, sensitive_features)
            return _FoldScores(self._scores(estimator, X, y, groups, sample_weight, self.counts))
        except Exception as exc:
            if isinstance(self.error_score, str):
                raise
            error = f"{type(exc).__name__}: {exc}"
            message = _SCORING_FAILED.format(scorer=repr(self), error=error, error_score=self.error_score)
            warnings.warn(message, UserWarning, stacklevel=2)
            return _FoldScores(self._failed(X, y, sensitive_features, sample_weight))

    def _failed(self, X: Any, y: Any, sensitive_features: Any, sample_weight: Any) -> dict[str, float]:
        """The keys of a failed fold: ``error_score`` for each measure, NaN for the counts of the fold's groups."""
        out = {m.key: float(self.error_score) for m in self._measures}
        if self.counts:
            for m in self._measures:
                try:  # the fold's groups, read as the scorer reads them (y stands in for the predictions)
                    entries = _count_entries(m, y, y, self._sensitive_of(X, sensitive_features), sample_weight)
                except Exception:  # noqa: BLE001 - the fold's groups cannot be read: only the measures' keys
                    entries = {}
                out.update({k: (float(len(y)) if k == TOTAL_KEY.format(key=m.key) else np.nan) for k in entries})
        return out


class RankingScorer(FairnessScorer):
    """A scorer for ``fairness.exposure`` and ``fairness.ndcg``: the ranking is the estimator's ``predict``.

    ``query_id`` (the ranked list of each row) is metadata like ``sensitive_features``:
    requested through routing, or read from a column of ``X`` (``query_id="qid"``).

    Parameters
    ----------
    measure : RankingFairness or str
    sensitive : str or list of str, optional
        As in :func:`fairness_scorer`.
    groups : None
        Ranking measures take no declared groups.
    query_id : str, optional
        Column of ``X`` with the query id; if None, ``query_id`` is requested through routing.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> X = pd.DataFrame({"x": [3.0, 1, 2, 1, 3, 2], "q": [1, 1, 1, 2, 2, 2], "g": list("abbaab")})
    >>> ranker = make_pipeline(DropColumns(["q", "g"]), LinearRegression()).fit(X, X["x"])
    >>> scorer = fairness_scorer("fairness.exposure", "g", query_id="q")
    >>> round(scorer(ranker, X, None), 3)  # the exposure gap, negated
    -0.246
    """

    __metadata_request__score = {"query_id": True}  # noqa: RUF012

    def __init__(
        self,
        measure: RankingFairness | str,
        sensitive: str | Sequence[str] | None = None,
        *,
        groups: Any = None,
        query_id: str | None = None,
    ):
        super().__init__(measure, sensitive, groups=groups)
        self.query_id = query_id

    def score(  # type: ignore[override]
        self,
        estimator: Any,
        X: Any,
        y: Any,
        *,
        query_id: Any = None,
        sensitive_features: Any = None,
        sample_weight: Any = None,
    ) -> float:
        """Score a fitted ranker: the ranking fairness of ``estimator.predict(X)``, greater is better."""
        query_id = self._metadata(X, query_id, self.query_id, "query_id", "query_id", required=True)
        groups = self._sensitive_of(X, sensitive_features)
        (m,) = self._measures
        y_score = _response(estimator, X, m.inputs.response_method, m.inputs.pos_label)
        return _sign(m) * m(y, y_score, query_id=query_id, sensitive_features=groups, sample_weight=sample_weight)


class ProxyScorer(FairnessScorer):
    """``fairness_scorer(proxy_measure, sensitive=["p1", "p2", "p3"])``: minus the proxy-based disparity.

    The proxies are read from the named columns of ``X`` (drop them from the model's
    features), or routed as ``sensitive_features`` (an array of shape
    ``(n_samples, n_proxies)``). No ``sample_weight``: HOC counts samples.

    Examples
    --------
    >>> from skfair_measures.unaware import ProxyMeasure
    >>> fairness_scorer(ProxyMeasure("dp"), ["p1", "p2", "p3"])
    ProxyScorer(unaware.proxy_dp, sensitive=['p1', 'p2', 'p3'])
    """

    _needs_sensitive = True  # the proxies stand in for the sensitive attribute

    def score(self, estimator: Any, X: Any, y: Any, *, sensitive_features: Any = None) -> float:  # type: ignore[override]
        """Score a fitted estimator: minus the disparity estimated through the proxies."""
        proxies = self._sensitive_of(X, sensitive_features)
        (m,) = self._measures
        return _sign(m) * m(y, _response(estimator, X, "predict", m.inputs.pos_label), proxies=proxies)


class QuantificationScorer(FairnessScorer):
    """``fairness_scorer(quantification_measure)``: the quantified disparity of the estimator on ``X``.

    Labels are unused and no sensitive attribute is taken (the auxiliary set of the
    measure supplies it); negated when absolute, like scikit-learn's ``neg_*`` scorers.

    Examples
    --------
    >>> from skfair_measures.unaware import QuantificationMeasure
    >>> fairness_scorer(QuantificationMeasure())
    QuantificationScorer(unaware.quantified_dp, routing)
    """

    __metadata_request__score = {"sensitive_features": UNUSED}  # noqa: RUF012

    def __init__(self, measure: QuantificationMeasure | str, sensitive: Any = None, *, groups: Any = None) -> None:
        if sensitive is not None or groups is not None:
            raise ValueError(
                "a quantification measure takes no sensitive attribute from X (its auxiliary set holds it): "
                "omit sensitive= and groups=."
            )
        super().__init__(measure)

    def score(self, estimator: Any, X: Any, y: Any = None) -> float:  # type: ignore[override]
        """Score a fitted estimator: its quantified disparity on ``X``."""
        (m,) = self._measures
        return _sign(m) * m(estimator, X)


_SCORER_TYPES = {RankingFairness: RankingScorer, ProxyMeasure: ProxyScorer, QuantificationMeasure: QuantificationScorer}


def _scorer_type(measure: MeasureBase) -> type[FairnessScorer]:
    """The scorer class of a measure kind, :class:`FairnessScorer` for measures of predictions and groups."""
    return next((_SCORER_TYPES[t] for t in type(measure).__mro__ if t in _SCORER_TYPES), FairnessScorer)


def fairness_scorer(
    measure: MeasureBase | str, sensitive: str | Sequence[str] | None = None, *, groups: Any = None, **options: Any
) -> FairnessScorer:
    """A scikit-learn scorer for one measure of any kind: a float, greater is better.

    The measure's kind picks the scorer class: :class:`FairnessScorer` for measures of
    predictions and groups, :class:`RankingScorer` for ``fairness.exposure`` and
    ``fairness.ndcg``, and the unaware scorers for ``unaware.*`` (whose
    ``sensitive`` names the proxy columns, or is omitted).

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
    **options
        Options of the scorer kind, e.g. ``query_id=`` of :class:`RankingScorer`.

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
    (m,) = as_measures([measure])
    return _scorer_type(m)(m, sensitive, groups=groups, **options)


def make_scorers(
    measures: Sequence[Measure | str], sensitive: str | Sequence[str] | None = None, **options: Any
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
    counts : bool, default=False
        Also return, per measure of confusion counts, each group's counts and rows on
        the fold (keys ``<key>#counts[<group>|<t><p>]`` and ``<key>#rows[<group>]``).
        Counts add over folds, so :func:`skfair_measures.constrained_refit` can compute
        a measure on the pooled out-of-fold counts instead of averaging fold values.
        Every test fold must hold every group (stratify the folds, or declare ``groups=``):
        scikit-learn needs the same keys from every fold; a fold missing a group is an
        error naming the group.
    error_score : "raise" or float, default=np.nan
        The value of every key for a fold whose scoring raises (its counts are NaN, so
        the pooled value of that candidate is undefined), with a warning naming the error;
        "raise" raises it. Set it here: scikit-learn's ``error_score=`` cannot replace the
        dict this scorer returns (it fails with "'float' object is not subscriptable").

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
    return MultiMeasureScorer(measures, sensitive, **options)


class DropColumns(TransformerMixin, BaseEstimator):
    """Drop columns from a DataFrame: keeps the sensitive column out of a model.

    Put it first in a pipeline when the scorer reads the sensitive attribute from
    ``X`` (``fairness_scorer(m, sensitive="sex")``): the scorer sees the column, the model
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
        self.columns_, self.feature_names_in_ = cols, np.asarray(X.columns, dtype=object)
        return self

    def transform(self, X: pd.DataFrame) -> pd.DataFrame:
        """Return ``X`` without the columns."""
        return X.drop(columns=self.columns_)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the remaining columns."""
        return np.asarray([c for c in self.feature_names_in_ if c not in self.columns_], dtype=object)
