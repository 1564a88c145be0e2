"""Compare learners on fairness and performance measures with cross-validation.

:func:`benchmark` is the counterpart of mlr3's ``benchmark(benchmark_grid(...))``
for one task: every learner is fitted on the same stratified folds, every measure
is computed on every test fold in one pass of counts, and the result holds a tidy
table of the per-fold values, the fit and score times, and the out-of-fold
predictions. :meth:`BenchmarkResult.aggregate` gives mlr3's ``bmr$aggregate()``
table; :meth:`BenchmarkResult.prob_fairer` compares two learners through the
posterior of a measure on their pooled out-of-fold predictions.

The folds run through :class:`joblib.Parallel`, so a Dask or Ray joblib backend
(``with joblib.parallel_backend("dask"): ...``) spreads them over a cluster, with
the same numbers as a serial run.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy import sparse
from sklearn.base import clone, is_classifier
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.pipeline import Pipeline
from sklearn.utils.multiclass import type_of_target

from ._groups import _named_columns, encode_groups, resolve_sensitive
from ._labels import binarize_labels
from ._progress import progress_bar, progress_enabled
from .engines import evaluate_measures
from .groups import (
    SMALL_GROUP_ROWS,
    SingleGroupError,
    SmallGroupWarning,
    fold_group_sizes,
    small_group_effect,
    small_groups_in_folds,
)
from .measures import Measure, MeasureBase
from .registry import as_measures, msr
from .results import Result
from .scoring import _confusion_stats, _response
from .selection import _AGGREGATES, ConstrainedRefit, _check_choice, _decide, _evidence_of, badness

__all__ = ["BenchmarkResult", "LearnerChoice", "MissingGroupWarning", "benchmark", "fold_splits"]

_NO_SENSITIVE = (
    "the measures {keys} compare groups, but neither sensitive_features= nor sensitive= "
    "was given; pass the group of each sample or the name of its column in X."
)
_MISSING_GROUP = (
    "{learner}fold {fold} has no sample of group(s) {groups} in its test set; fairness "
    "measures on that fold compare fewer groups and are NaN. Use fewer folds, merge "
    "small groups, or let benchmark() stratify by label and group (cv=int)."
)


class MissingGroupWarning(UserWarning):
    """A cross-validation test fold holds no sample of some group."""


# -- inputs ------------------------------------------------------------------------
def _name_of(estimator: Any) -> str:
    if isinstance(estimator, Pipeline):  # named after its final estimator
        return _name_of(estimator.steps[-1][1])
    return type(estimator).__name__


def _named_estimators(estimators: Any) -> dict[str, Any]:
    if isinstance(estimators, Mapping):
        named = {str(k): v for k, v in estimators.items()}
    else:
        if hasattr(estimators, "fit"):
            estimators = [estimators]
        named = {}
        for est in estimators:
            base = _name_of(est)
            name, k = base, 1
            while name in named:
                k += 1
                name = f"{base}_{k}"
            named[name] = est
    if not named:
        raise ValueError("estimators is empty; pass a dict name -> estimator or a list of estimators.")
    for name, est in named.items():
        if not hasattr(est, "fit"):
            raise TypeError(f"estimator {name!r} ({type(est).__name__}) has no fit() method.")
    return named


def _take(obj: Any, idx: np.ndarray) -> Any:
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return obj.iloc[idx]
    if sparse.issparse(obj):
        return obj.tocsr()[idx]
    return np.asarray(obj)[idx]


def _n_samples(X: Any) -> int:
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _strata(y: np.ndarray, codes: np.ndarray | None, n_splits: int) -> np.ndarray:
    """Label x group strata; strata smaller than ``n_splits`` fall back to the label."""
    kind = type_of_target(y)
    y_codes = pd.factorize(y, sort=True)[0] if kind in ("binary", "multiclass") else np.zeros(len(y), np.intp)
    if codes is None:
        return y_codes
    n_groups = int(codes.max()) + 1
    strata = y_codes * (n_groups + 1) + codes
    values, counts = np.unique(strata, return_counts=True)
    rare = np.isin(strata, values[counts < n_splits])
    strata[rare] = y_codes[rare] * (n_groups + 1) + n_groups  # the label's "rest" stratum
    return strata


def fold_splits(
    cv: Any,
    X: Any,
    y: Any,
    *,
    sensitive_codes: np.ndarray | None = None,
    groups: Any = None,
    random_state: Any = None,
    classifier: bool = True,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The folds of ``benchmark`` and ``cross_validate_fairness``: one rule for both.

    An integer ``cv`` gives ``StratifiedKFold(cv, shuffle=True, random_state=random_state)``
    on label x group strata, so every test fold holds each group's labels in proportion
    (a stratum with fewer rows than folds joins its label's "rest" stratum). Any other
    ``cv`` (a splitter or an iterable of splits) is used as scikit-learn's ``check_cv``
    uses it, with ``groups`` passed to ``split``.

    Parameters
    ----------
    cv : int, splitter or iterable
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    sensitive_codes : ndarray of shape (n_samples,), optional
        Group code of each row (no stratification by group without it).
    groups : array-like, optional
        Group labels for group-aware splitters (``GroupKFold``).
    random_state : int, optional
        Seed of the shuffling of an integer ``cv``.
    classifier : bool, default=True
        Whether the estimator is a classifier (for ``check_cv``).

    Returns
    -------
    list of (ndarray, ndarray)
        Train and test positions of each fold.

    Examples
    --------
    >>> y, g = np.array([0, 1] * 8), np.array([0, 0, 1, 1] * 4)  # 4 rows of each label x group
    >>> folds = fold_splits(2, np.zeros((16, 1)), y, sensitive_codes=g, random_state=0)
    >>> [np.bincount(y[te] * 2 + g[te]).tolist() for _, te in folds]  # each fold: 2 of each label x group
    [[2, 2, 2, 2], [2, 2, 2, 2]]
    """
    y = np.asarray(y)
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv={cv}; pass at least 2 folds.")
        strata = _strata(y, sensitive_codes, int(cv))
        splitter = StratifiedKFold(n_splits=int(cv), shuffle=True, random_state=random_state)
        with warnings.catch_warnings():
            # a too-small "rest" stratum only spreads unevenly; missing groups are reported below
            warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
            return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(np.zeros(len(y)), strata)]
    splitter = check_cv(cv, y, classifier=classifier)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y, groups)]


# -- one fold ----------------------------------------------------------------------
def _values_without(
    without_small: Sequence[MeasureBase], evaluate: Callable[..., dict[str, float]]
) -> dict[str, float]:
    """``{key: value}`` of the measures that leave the small groups out, one by one.

    A measure left with one group is NaN, not an error for the others; their warnings are not repeated per fold.
    """
    out: dict[str, float] = {}
    for m in without_small:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out[m.key] = evaluate([m])[m.key]
            except SingleGroupError:
                out[m.key] = float("nan")
    return out


def _small_groups(
    codes: np.ndarray | None, splits: list[tuple[np.ndarray, np.ndarray]], group_index: Any, ms: Sequence[Any]
) -> tuple[pd.Series, list[Any]]:
    """The groups with fewer than ``SMALL_GROUP_ROWS`` rows in some test fold (their fewest), and the measures.

    The measures are those with ``min_group_size`` unset, set to leave the small groups out: they give the
    values without them, for the one warning of the fold means.
    """
    if codes is None:
        return pd.Series(dtype=np.int64), []
    small = small_groups_in_folds(fold_group_sizes(codes, [te for _, te in splits], group_index))
    keep = [m for m in ms if len(small) and m.inputs.needs_sensitive and m.inputs.min_group_size is None]
    return small, [m.with_inputs(min_group_size=SMALL_GROUP_ROWS) for m in keep]


def _split_params(params: Mapping[str, Any], idx: np.ndarray, n: int) -> dict[str, Any]:
    """The fit params of the rows ``idx``: array-likes of length ``n`` are sliced, anything else passes as is."""
    sized = {
        k for k, v in params.items() if not isinstance(v, str | bytes | Mapping) and np.ndim(v) >= 1 and len(v) == n
    }
    return {k: _take(v, idx) if k in sized else v for k, v in params.items()}


def _fit_and_score(
    name: str,
    fold: int,
    estimator: Any,
    X: Any,
    y: np.ndarray,
    sensitive: Any,
    train: np.ndarray,
    test: np.ndarray,
    measures: list[Measure],
    sample_weight: np.ndarray | None,
    fit_params: dict[str, Any],
    without_small: Sequence[Measure] = (),
) -> dict[str, Any]:
    """Fit on ``train``, predict ``test`` and evaluate every measure (runs in a worker).

    One prediction per response method, one pass of counts each. ``without_small``: the same measures
    with ``min_group_size`` set, evaluated on the same predictions for the small-group warning.
    """
    rows = {"sensitive_features": None if sensitive is None else _take(sensitive, test)}
    rows["sample_weight"] = None if sample_weight is None else sample_weight[test]

    def evaluate(ms_all: Sequence[Measure]) -> dict[str, float]:
        by_response: dict[tuple[str, Any], list[Measure]] = {}
        for m in ms_all:
            by_response.setdefault((m.inputs.response_method, m.inputs.pos_label), []).append(m)
        values: dict[str, float] = {}
        for (method, pos_label), ms in by_response.items():
            response = y_pred if method == "predict" else y_score if pos_label is None else None
            if response is None:
                response = _response(estimator, X_test, method, pos_label)
            with warnings.catch_warnings():  # the fold means' own small-group warning says it once, for all folds
                warnings.filterwarnings("ignore", "(?s).*is decided by group", SmallGroupWarning)
                values |= {k: r.value for k, r in evaluate_measures(ms, y[test], response, **rows).items()}
        return values

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            start = time.perf_counter()
            estimator.fit(_take(X, train), y[train], **_split_params(fit_params, train, len(y)))
            fitted, X_test = time.perf_counter(), _take(X, test)
            y_pred = np.asarray(estimator.predict(X_test))
            proba = hasattr(estimator, "predict_proba")
            y_score = _response(estimator, X_test, "predict_proba", None) if proba else None
            values, without = evaluate(measures), _values_without(without_small, evaluate)
            scored = time.perf_counter()
        except Exception as exc:
            raise RuntimeError(f"learner {name!r} failed on fold {fold}: {exc}") from exc
    return {
        "learner": name,
        "fold": fold,
        "values": {m.key: values[m.key] for m in measures},
        "without_small": without,
        "fit_time": fitted - start,
        "score_time": scored - fitted,
        "test": test,
        "y_pred": y_pred,
        "y_score": y_score,
        "warnings": [(w.category, str(w.message)) for w in caught],
    }


# -- the result --------------------------------------------------------------------
@dataclass
class BenchmarkResult:
    """Per-fold values, times and out-of-fold predictions of a :func:`benchmark`.

    Attributes
    ----------
    scores : pandas.DataFrame
        Tidy table, one row per (learner, fold, measure), with columns ``learner``,
        ``fold``, ``measure``, ``value``, ``fit_time``, ``score_time`` (seconds) and
        ``n_test``. Values are the measures themselves: minimised measures are
        *not* negated as in a scorer.
    predictions : pandas.DataFrame
        Out-of-fold predictions: ``learner``, ``fold``, ``row`` (position in ``X``),
        ``y_true``, ``y_pred`` and ``y_score`` (probability of the positive class,
        NaN for learners without ``predict_proba``).
    sensitive_features : pandas.DataFrame or None
        The sensitive column(s), one row per sample of ``X`` (positional index).
    groups : pandas.Index or None
        All groups of the data.
    measures : dict of str to Measure
        The measures, by key, in the order given.
    learners : list of str
        The learner names, in the order given.
    missing_groups : pandas.DataFrame
        One row per (fold, group) where a group of the data has no test sample.
    sample_weight : numpy.ndarray or None
        The weights of the measures, one per sample of ``X``.
    """

    scores: pd.DataFrame
    predictions: pd.DataFrame
    sensitive_features: pd.DataFrame | None
    groups: pd.Index | None
    measures: dict[str, Measure]
    learners: list[str]
    missing_groups: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["fold", "group"]))
    sample_weight: np.ndarray | None = None

    @property
    def n_folds(self) -> int:
        """Number of resampling iterations."""
        return int(self.scores["fold"].nunique())

    def _keys(self, measures: Any) -> list[str]:
        if measures is None:
            return list(self.measures)
        if isinstance(measures, str | MeasureBase):
            measures = [measures]
        keys = [m if isinstance(m, str) else m.key for m in measures]
        unknown = [k for k in keys if k not in self.measures]
        if unknown:
            raise KeyError(f"measure(s) {unknown} were not benchmarked; the benchmark has {list(self.measures)}.")
        return keys

    def _measure(self, measure: str | MeasureBase) -> MeasureBase:
        """A benchmarked measure by key, else the registry's; a measure object as it is."""
        return (self.measures.get(measure) or msr(measure)) if isinstance(measure, str) else measure

    def _learner(self, learner: str) -> str:
        if learner not in self.learners:
            raise KeyError(f"no learner {learner!r}; the benchmark has {self.learners}.")
        return learner

    def aggregate(self, measures: Any = None, *, sd: bool = False) -> pd.DataFrame:
        """One row per learner, one column per measure: the mean over the folds.

        Like mlr3's ``bmr$aggregate(measures)``. A fold where a measure is NaN (a
        group undefined in that fold) makes the mean NaN: undefined values are not
        silently skipped.

        Parameters
        ----------
        measures : list of str or Measure, optional
            Which of the benchmarked measures to show; default all.
        sd : bool, default=False
            Also give the standard deviation over folds, as column ``<key>_sd``.

        Returns
        -------
        pandas.DataFrame
            Columns ``learner``, ``iters`` and one per measure (plus ``<key>_sd``).
        """
        keys = self._keys(measures)
        sub = self.scores[self.scores["measure"].isin(keys)]
        wide = sub.pivot_table(index="learner", columns="measure", values="value", aggfunc=list, sort=False)
        table = pd.DataFrame({"learner": self.learners, "iters": self.n_folds})
        for k in keys:
            folds = [np.asarray(wide.loc[name, k], dtype=float) for name in self.learners]
            table[k] = [v.mean() for v in folds]
            if sd:
                table[f"{k}_sd"] = [v.std(ddof=1) if v.size > 1 else np.nan for v in folds]
        return table

    def oof_predictions(self, learner: str) -> pd.DataFrame:
        """Pooled out-of-fold predictions of one learner, with the sensitive column(s).

        Returns
        -------
        pandas.DataFrame
            ``fold, row, y_true, y_pred, y_score`` and the sensitive columns, in row order.
        """
        p, A = self._pooled_inputs(learner)
        return pd.concat([p.drop(columns="learner"), A], axis=1)

    def _pooled_inputs(self, learner: str) -> tuple[pd.DataFrame, Any]:
        self._learner(learner)
        p = self.predictions[self.predictions["learner"] == learner]
        p = p.sort_values(["row", "fold"], kind="stable").reset_index(drop=True)
        if self.sensitive_features is None:
            return p, None
        sens = self.sensitive_features.iloc[p["row"].to_numpy()].reset_index(drop=True)
        return p, (sens.iloc[:, 0] if sens.shape[1] == 1 else sens)

    def pooled(self, measures: Any = None) -> pd.DataFrame:
        """Measures on the pooled out-of-fold predictions (micro average over folds), weighted by ``sample_weight``.

        Returns
        -------
        pandas.DataFrame
            Columns ``learner`` and one per measure.
        """
        keys = self._keys(measures)
        rows = []
        for name in self.learners:
            p, A = self._pooled_inputs(name)
            row: dict[str, Any] = {"learner": name}
            for k in keys:
                m = self.measures[k]
                resp = p["y_pred"] if m.inputs.response_method == "predict" else p["y_score"]
                w = None if self.sample_weight is None else self.sample_weight[p["row"].to_numpy()]
                res = evaluate_measures([m], p["y_true"], resp, sensitive_features=A, sample_weight=w)
                row[k] = res[k].value
            rows.append(row)
        return pd.DataFrame(rows, columns=["learner", *keys])

    def choose(self, objective: str | MeasureBase, subject_to: Mapping[Any, float], **rule: Any) -> LearnerChoice:
        """The learner with the best objective among those whose aggregated measures meet their bounds.

        The rule of :func:`skfair_measures.constrained_refit`, over the benchmarked
        learners instead of a search's candidates: ``aggregate="pooled"`` computes a
        measure on each learner's pooled out-of-fold counts (from :attr:`predictions`,
        weighted by :attr:`sample_weight`), ``"mean"`` averages its fold values, and
        ``"auto"`` pools the measures of confusion counts. Intervals, ``check``,
        ``if_none`` and the Pareto front are as there.

        Parameters
        ----------
        objective : str or Measure
            A benchmarked measure to optimise in its own direction.
        subject_to : dict of (str or Measure) to float
            Benchmarked measures and their bounds.
        **rule
            ``aggregate``, ``check``, ``if_none``, ``prob``, ``n_draws``, ``random_state``: as in
            :func:`skfair_measures.constrained_refit`.

        Returns
        -------
        LearnerChoice
            The chosen ``learner``, its ``index``, the ``table`` of every learner and the
            ``front``; ``plots.pareto_front(choice.table, choice.front)`` draws them.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.dummy import DummyClassifier
        >>> from sklearn.linear_model import LogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(600, 2))
        >>> A = rng.choice(["a", "b"], size=600)
        >>> y = (X[:, 0] + 0.3 * (A == "a") + rng.normal(size=600) > 0).astype(int)
        >>> bmr = benchmark({"logreg": LogisticRegression(), "dummy": DummyClassifier()}, X, y, A,
        ...                 measures=["classif.acc", "fairness.eod"], cv=3, random_state=0)
        >>> choice = bmr.choose("classif.acc", {"fairness.eod": 0.2})
        >>> choice.learner, bool(choice.table.loc[choice.index, "fairness.eod"] <= 0.2)
        ('logreg', True)
        """
        keys = self._keys([objective, *subject_to])  # benchmarked, or a KeyError naming them
        measures = [self.measures[k] for k in keys]
        rule = ConstrainedRefit(measures[0], dict(zip(measures[1:], subject_to.values(), strict=True)), **rule)
        cons = [(self._evidence(m, rule.aggregate), b) for m, b in rule.subject_to]
        obj = self._evidence(rule.objective, rule.aggregate)
        table, chosen, front = _decide(rule, obj, cons, "learner", self.learners, "learner")
        return LearnerChoice(self.learners[chosen], chosen, table, front)

    def _evidence(self, m: MeasureBase, aggregate: str) -> Any:
        """One measure over the learners, aggregated as :meth:`choose` aggregates it."""
        wide = self.scores[self.scores["measure"] == m.key].pivot(index="learner", columns="fold", values="value")
        folds = wide.loc[self.learners].to_numpy(dtype=float)
        stats = None
        if aggregate != "mean":
            stats = [_pooled_stats(m, p, A, self.sample_weight) for p, A in map(self._pooled_inputs, self.learners)]
            stats = None if any(st is None for st in stats) else stats
        return _evidence_of(m, aggregate, folds, stats, f"a measure of confusion counts ({m.key} is not)")

    def aggregated(self, measures: Any = None, aggregate: str = "auto") -> pd.DataFrame:
        """One row per learner: each measure aggregated over the folds as :meth:`choose` aggregates it.

        ``"auto"`` pools the measures of confusion counts (the measure on each learner's pooled
        out-of-fold counts) and averages the others over the folds; ``"pooled"`` and ``"mean"``
        force one. The plots rank by this table, so a plot and a decision agree.

        Returns
        -------
        pandas.DataFrame
            Indexed by learner, one column per measure; ``attrs["aggregate"]`` says which
            aggregate each column is.
        """
        _check_choice(aggregate, _AGGREGATES, "aggregate")
        evidence = [self._evidence(self.measures[k], aggregate) for k in self._keys(measures)]
        table = pd.DataFrame({e.measure.key: e.values for e in evidence}, index=pd.Index(self.learners, name="learner"))
        table.attrs["aggregate"] = {e.measure.key: e.aggregate for e in evidence}
        return table

    def pareto(self, objective: str | MeasureBase, subject_to: Mapping[Any, float], **options: Any) -> pd.DataFrame:
        """The Pareto front of the learners on ``objective`` and each bounded measure: ``choose(...).front``.

        The same table as :meth:`skfair_measures.selection.ConstrainedRefit.front`
        (column ``learner`` instead of ``params``): the learners no other beats on the
        objective and every measure at once, with intervals, ``chosen`` and
        ``prob_fairer`` (the posterior probability that a learner is fairer than the
        chosen one on the first bounded measure). ``options`` are those of :meth:`choose`.
        """
        return self.choose(objective, subject_to, **options).front

    def posterior(
        self, measure: str | Measure, learner: str, *, method: str = "bb", random_state: Any = 0, **kwargs: Any
    ) -> Any:
        """Posterior of ``measure`` on the pooled out-of-fold predictions of ``learner``.

        Calls :func:`skfair_measures.bayes.posterior` with the measure.
        With ``method="bb"`` (Beta-Binomial) the posterior is that of the learner's
        predicted labels, exactly the predictions the benchmark scored (they are
        passed as 0/1 scores). ``method="bc"`` calibrates the predicted
        probabilities and needs unlabeled data, which a cross-validation does not
        have: pass ``unlabeled_scores=`` and ``unlabeled_sensitive=`` for this
        learner through ``**kwargs``.

        Parameters
        ----------
        measure : str or Measure
            A measure (benchmarked or not) or its key.
        learner : str
            Learner name.
        method : {"bb", "bc"}, default="bb"
            Posterior method of :mod:`skfair_measures.bayes`.
        random_state : int, numpy Generator or None, default=0
            Seed of the posterior draws.
        **kwargs
            Passed to ``bayes.posterior`` (e.g. ``reference=``, ``prior=``).

        Returns
        -------
        skfair_measures.bayes.MeasurePosterior
        """
        m = self._measure(measure)
        if self.sensitive_features is None:
            raise ValueError("this benchmark has no sensitive features; a fairness posterior needs them.")
        p, A = self._pooled_inputs(self._learner(learner))
        y_true, y_pred, _ = binarize_labels(p["y_true"].to_numpy(), p["y_pred"].to_numpy(), m.inputs.pos_label)
        if method == "bc" or kwargs.get("prior") == "scores":
            if p["y_score"].isna().any():
                raise ValueError(
                    f"method={method!r} needs predicted probabilities, but learner {learner!r} "
                    "has no predict_proba; use method='bb'."
                )
            score = p["y_score"].to_numpy(dtype=float)
        else:
            score = y_pred.astype(float)  # 0/1: the posterior sees the scored predictions
        from .bayes import posterior  # PyMC loads with a posterior, not with the benchmark

        return posterior(m, y_true, score, sensitive_features=A, method=method, random_state=random_state, **kwargs)

    def prob_fairer(
        self, measure: str | Measure, a: str, b: str, *, method: str = "bb", random_state: Any = 0, **kwargs: Any
    ) -> float:
        """Posterior probability that learner ``a`` is fairer than learner ``b``.

        Both posteriors come from :meth:`posterior` (pooled out-of-fold predictions)
        and are drawn independently (one seed per learner, spawned off ``random_state``); the
        probability is the share of paired draws in which ``a`` is fairer: closer to
        the measure's ideal value (``measure.ideal``: 0 for a difference, signed or
        not, 1 for a ratio), or, for a measure without one, better in its direction
        (``measure.minimize``). Ties count one half. Treating the two posteriors as independent
        ignores that both learners are scored on the same rows, which widens the
        difference's spread: the answer errs towards 0.5.

        Parameters
        ----------
        measure : str or Measure
            The fairness measure (e.g. ``"fairness.tpr"``).
        a, b : str
            Learner names.
        method : {"bb", "bc"}, default="bb"
            Posterior method.
        random_state : int or None, default=0
            Seed; the same seed gives the same probability.
        **kwargs
            Passed to :func:`skfair_measures.bayes.posterior`.

        Returns
        -------
        float
            ``P(a fairer than b | data)``.
        """
        m = self._measure(measure)
        # one seed per learner (not per argument position): P(a, b) + P(b, a) = 1
        seeds = np.random.SeedSequence(random_state).spawn(len(self.learners))
        draws = []
        for learner in (a, b):
            seed = seeds[self.learners.index(self._learner(learner))]
            post = self.posterior(m, learner, method=method, random_state=np.random.default_rng(seed), **kwargs)
            draws.append(_draws(post))
        n = min(d.size for d in draws)
        da, db = badness(m, draws[0][:n]), badness(m, draws[1][:n])
        return float(np.mean((da < db) + 0.5 * (da == db)))

    def __repr__(self) -> str:
        return (
            f"<BenchmarkResult: {len(self.learners)} learner(s) {self.learners}, "
            f"{self.n_folds} folds, measures {list(self.measures)}>"
        )


@dataclass(frozen=True)
class LearnerChoice:
    """The learner chosen by :meth:`BenchmarkResult.choose`.

    Attributes
    ----------
    learner : str
        The chosen learner.
    index : int
        Its row in ``table`` (and in :attr:`BenchmarkResult.learners`).
    table : pandas.DataFrame
        Every learner (column ``learner``) with the objective, each constraint (value,
        interval, checked value, ok), ``feasible``, ``excess`` and ``reason``.
    front : pandas.DataFrame
        The learners on the Pareto front, the chosen one marked, with ``prob_fairer``.
    """

    learner: str
    index: int
    table: pd.DataFrame
    front: pd.DataFrame


def _pooled_stats(m: MeasureBase, p: pd.DataFrame, A: Any, w: np.ndarray | None) -> Any:
    """A learner's confusion counts per group on its pooled out-of-fold predictions (None if not counts)."""
    resp = p["y_pred"] if m.inputs.response_method == "predict" else p["y_score"]
    weights = None if w is None else w[p["row"].to_numpy()]
    return _confusion_stats(m, p["y_true"].to_numpy(), resp.to_numpy(), A, weights)


def _draws(post: Result) -> np.ndarray:
    if post.draws is None:
        raise ValueError(f"the posterior of {post.key} has no draws to compare.")
    return np.ravel(post.draws).astype(float)


# -- the driver --------------------------------------------------------------------
def benchmark(
    estimators: Mapping[str, Any] | Sequence[Any],
    X: Any,
    y: Any,
    sensitive_features: Any = None,
    *,
    measures: Sequence[str | Measure],
    sensitive: str | Sequence[str] | None = None,
    cv: int | Any = 3,
    drop_sensitive: bool = True,
    sample_weight: Any = None,
    fit_params: Mapping[str, Any] | None = None,
    groups: Any = None,
    n_jobs: int | None = None,
    pre_dispatch: str | int = "2*n_jobs",
    random_state: int | None = None,
    progress: bool | None = False,
) -> BenchmarkResult:
    """Cross-validate several learners and compute fairness and performance measures.

    Every learner is fitted on the same folds. With ``cv=int`` the folds are
    stratified by label and group (strata too small for the number of folds fall
    back to the label), so that every test fold holds every group; a fold that
    still misses a group raises a :class:`MissingGroupWarning` naming fold and
    group, and its fairness measures are NaN.

    Parameters
    ----------
    estimators : dict of str to estimator, or list of estimators
        The learners; a list is named after the estimators' classes (a pipeline
        after its last step), with ``_2``, ``_3``... for repeats.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Target.
    sensitive_features : array-like of shape (n_samples,) or DataFrame, optional
        Group of each sample, sliced per fold (array mode). Mutually exclusive with
        ``sensitive``.
    measures : list of str or Measure
        Measures or registry keys, e.g. ``["fairness.tpr", "classif.acc"]``.
    sensitive : str or list of str, optional
        Column(s) of ``X`` holding the sensitive attribute (column mode).
    cv : int or cross-validation splitter, default=3
        Number of stratified folds, or any scikit-learn splitter / iterable of
        ``(train, test)`` index arrays (used as given: no group stratification).
    drop_sensitive : bool, default=True
        In column mode, drop the sensitive column(s) from ``X`` before fitting, so
        that the models do not see them. With False the models get all of ``X``:
        put :class:`skfair_measures.DropColumns` first in each pipeline to drop
        them yourself (or to keep them on purpose).
    sample_weight : array-like of shape (n_samples,), optional
        Weights of the measures. To fit with weights, pass them in ``fit_params``.
    fit_params : dict, optional
        Passed to ``fit``; arrays of length ``n_samples`` are sliced per fold.
    groups : array-like, optional
        Passed to ``cv.split`` (e.g. for :class:`~sklearn.model_selection.GroupKFold`).
    n_jobs : int, optional
        Number of parallel (learner, fold) tasks; None lets the active joblib
        backend decide (``with joblib.parallel_backend("dask"): ...`` runs them on
        a Dask cluster).
    pre_dispatch : str or int, default="2*n_jobs"
        See :class:`joblib.Parallel`.
    random_state : int, optional
        Seed of the fold shuffling (the learners keep their own ``random_state``).
    progress : bool or None, default=False
        Show a progress bar over the tasks (tqdm, if installed); None shows it when
        standard error is a terminal.

    Returns
    -------
    BenchmarkResult

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyClassifier
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> A = rng.choice(["a", "b"], size=200)
    >>> y = (X[:, 0] + (A == "a") + rng.normal(size=200) > 0.5).astype(int)
    >>> bmr = benchmark({"logreg": LogisticRegression(), "dummy": DummyClassifier()},
    ...                 X, y, A, measures=["fairness.tpr", "classif.acc"], cv=3, random_state=0)
    >>> bmr.aggregate().columns.tolist()
    ['learner', 'iters', 'fairness.tpr', 'classif.acc']
    >>> bmr.aggregate()["learner"].tolist()
    ['logreg', 'dummy']
    """
    named = _named_estimators(estimators)
    ms = _measure_list(measures)
    y_arr = _target(y, _n_samples(X))
    X_fit, A, sens_frame = _sensitive_inputs(X, sensitive_features, sensitive, drop_sensitive)
    codes = group_index = None
    if A is not None:
        codes, group_index = encode_groups(A, len(y_arr), name="sensitive_features")
        ms = [m.with_inputs(groups=group_index) for m in ms]  # a fold missing a group keeps its place
    elif needs := [m.key for m in ms if m.inputs.needs_sensitive]:
        raise ValueError(_NO_SENSITIVE.format(keys=needs))
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
    classifier = is_classifier(next(iter(named.values())))
    splits = fold_splits(
        cv, X_fit, y_arr, sensitive_codes=codes, groups=groups, random_state=random_state, classifier=classifier
    )
    missing = _missing_groups(splits, codes, group_index)
    small, without = _small_groups(codes, splits, group_index, ms)
    tasks = [
        delayed(_fit_and_score)(
            name, k, clone(est), X_fit, y_arr, A, train, test, ms, w, dict(fit_params or {}), without
        )
        for name, est in named.items()
        for k, (train, test) in enumerate(splits)
    ]
    out = _run(tasks, n_jobs, pre_dispatch, progress)
    _reemit_warnings(out)
    if without:
        _warn_small_groups(out, small, [m.key for m in without], "benchmark")
    return BenchmarkResult(
        scores=_score_table(out),
        predictions=_prediction_table(out, y_arr),
        sensitive_features=sens_frame,
        groups=group_index,
        measures={m.key: m for m in ms},
        learners=list(named),
        missing_groups=missing,
        sample_weight=w,
    )


# -- the driver's steps ----------------------------------------------------------------
def _measure_list(measures: Sequence[str | Measure]) -> list[Measure]:
    if not measures:
        raise ValueError("measures is empty; pass at least one measure or key.")
    return as_measures(list(measures))  # distinct keys, or a clear error


def _target(y: Any, n: int) -> np.ndarray:
    y_arr = np.asarray(y.to_numpy() if isinstance(y, pd.Series | pd.DataFrame) else y)
    if y_arr.ndim == 2 and 1 in y_arr.shape:
        y_arr = y_arr.ravel()
    if y_arr.shape[0] != n:
        raise ValueError(f"y has {y_arr.shape[0]} samples but X has {n}; pass one target per row of X.")
    return y_arr


def _sensitive_inputs(
    X: Any, sensitive_features: Any, sensitive: str | Sequence[str] | None, drop_sensitive: bool
) -> tuple[Any, pd.Series | pd.DataFrame | None, pd.DataFrame | None]:
    """The features to fit on, the sensitive values (positional index) and them as a frame."""
    if sensitive is None and sensitive_features is None:
        return X, None, None
    columns = None if sensitive is None else (list(sensitive) if isinstance(sensitive, list | tuple) else [sensitive])
    values = resolve_sensitive(sensitive_features, X=X, columns=columns, argument="sensitive_features")
    X_fit = X.drop(columns=columns) if columns is not None and drop_sensitive else X
    # named columns (sensitive_feature_0, ... when unnamed) with a positional index; one column as a Series
    frame = pd.DataFrame({name: pd.Series(col).reset_index(drop=True) for name, col in _named_columns(values)})
    return X_fit, (frame.iloc[:, 0] if frame.shape[1] == 1 else frame), frame


def _missing_groups(
    splits: list[tuple[np.ndarray, np.ndarray]], codes: np.ndarray | None, group_index: pd.Index | None
) -> pd.DataFrame:
    """One row per (fold, group) where a group of the data has no test sample, with a warning per fold."""
    rows: list[dict[str, Any]] = []
    if codes is not None:
        present = np.unique(codes)
        for k, (_, test) in enumerate(splits):
            absent = np.setdiff1d(present, np.unique(codes[test]))
            if absent.size:
                labels = [group_index[i] for i in absent]
                rows += [{"fold": k, "group": g} for g in labels]
                warnings.warn(
                    _MISSING_GROUP.format(learner="", fold=k, groups=labels), MissingGroupWarning, stacklevel=3
                )
    return pd.DataFrame(rows, columns=["fold", "group"])


def _run(tasks: list[Any], n_jobs: int | None, pre_dispatch: str | int, progress: bool | None) -> list[dict[str, Any]]:
    if progress_enabled(progress):
        try:
            gen = Parallel(n_jobs=n_jobs, pre_dispatch=pre_dispatch, return_as="generator")(tasks)
            return list(progress_bar(gen, total=len(tasks), desc="benchmark", progress=True))
        except ValueError as exc:  # backends without generator support run as without a bar
            if "return_as" not in str(exc):
                raise
    return Parallel(n_jobs=n_jobs, pre_dispatch=pre_dispatch)(tasks)


def _warn_small_groups(out: list[dict[str, Any]], small: pd.Series, keys: list[str], who: str) -> None:
    """One :class:`SmallGroupWarning`: the small groups and the fold means with and without them, per learner."""
    with_small = pd.DataFrame([{"learner": r["learner"], **{k: r["values"][k] for k in keys}} for r in out])
    without = pd.DataFrame([{"learner": r["learner"], **{k: r["without_small"][k] for k in keys}} for r in out])
    # as aggregate(): a NaN fold makes the mean NaN
    means = [t.groupby("learner", sort=False).agg(lambda v: v.mean(skipna=False)) for t in (with_small, without)]
    warnings.warn(small_group_effect(small, *means, who=who), SmallGroupWarning, stacklevel=3)


def _reemit_warnings(out: list[dict[str, Any]]) -> None:
    """The workers' warnings, once each, naming learner and fold (a worker's own are lost)."""
    seen = set()
    for r in out:
        for category, message in r["warnings"]:
            if (category, message) not in seen:
                seen.add((category, message))
                warnings.warn(f"[{r['learner']}, fold {r['fold']}] {message}", category, stacklevel=3)


def _score_table(out: list[dict[str, Any]]) -> pd.DataFrame:
    columns = ["learner", "fold", "measure", "value", "fit_time", "score_time", "n_test"]
    rows = [
        (r["learner"], r["fold"], key, value, r["fit_time"], r["score_time"], len(r["test"]))
        for r in out
        for key, value in r["values"].items()
    ]
    return pd.DataFrame(rows, columns=columns).astype({"value": float})


def _prediction_table(out: list[dict[str, Any]], y: np.ndarray) -> pd.DataFrame:
    frames = []
    for r in out:
        score = np.full(len(r["test"]), np.nan) if r["y_score"] is None else r["y_score"]
        columns = {"row": r["test"], "y_true": y[r["test"]], "y_pred": r["y_pred"], "y_score": score}
        frames.append(pd.DataFrame({"learner": r["learner"], "fold": r["fold"], **columns}))
    return pd.concat(frames, ignore_index=True)
