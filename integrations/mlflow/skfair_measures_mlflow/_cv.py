"""Cross-validation that logs every fold's fairness measures to MLflow."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._collect import Payload, measure_params
from ._keys import sanitize_key, subkey, unique_segments

__all__ = ["CrossValidationResult", "cross_validate_fairness"]


@dataclass
class CrossValidationResult:
    """Per-fold results of :func:`cross_validate_fairness`.

    Attributes
    ----------
    scores : pandas.DataFrame
        One row per fold, one column per measure key (raw values, not negated).
    mean, std : pandas.Series
        Mean and standard deviation over folds (``ddof=0``, as scikit-learn's
        ``std_test_score``); NaN if any fold is NaN.
    folds : list of dict
        ``{key: MeasureResult}`` of each fold.
    posteriors : list of dict
        ``{key: posterior}`` of each fold (empty dicts without ``posterior=``).
    estimators : list
        The fitted estimator of each fold.
    run_id : str or None
        The parent run.
    fold_run_ids : list of str
        The child run of each fold (empty with ``fold_runs=False``).
    logged : list of LoggedFairness
        What each logging call computed and logged (folds, then the parent).
    """

    scores: Any
    mean: Any
    std: Any
    folds: list[dict[str, Any]] = field(default_factory=list)
    posteriors: list[dict[str, Any]] = field(default_factory=list)
    estimators: list[Any] = field(default_factory=list)
    run_id: str | None = None
    fold_run_ids: list[str] = field(default_factory=list)
    logged: list[Any] = field(default_factory=list)


def _no_autolog() -> Any:
    """Keep MLflow autologging from logging each fold's fit as a run of its own."""
    try:
        from mlflow.utils.autologging_utils import disable_autologging
    except ImportError:  # pragma: no cover - older or future MLflow
        return contextlib.nullcontext()
    return disable_autologging()


def _split_params(params: Mapping[str, Any], idx: Any, n: int) -> dict[str, Any]:
    from sklearn.utils import _safe_indexing

    out = {}
    for k, v in params.items():
        sized = hasattr(v, "__len__") and not isinstance(v, (str, bytes, Mapping)) and len(v) == n
        out[k] = _safe_indexing(v, idx) if sized else v
    return out


def _fold(
    estimator: Any,
    X: Any,
    y: Any,
    train: Any,
    test: Any,
    *,
    ms: list[Any],
    cols: list[str] | None,
    sensitive_features: Any,
    sample_weight: Any,
    fit_params: Mapping[str, Any],
    pos_label: Any,
    want_scores: bool,
    posterior: Mapping[str, Any] | None,
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Fit one fold and compute its measures (and posteriors): no MLflow calls, so it can run anywhere."""
    import numpy as np
    from sklearn.base import clone
    from sklearn.utils import _safe_indexing

    from ._compute import compute_posteriors, evaluate_all, positive_scores

    X_tr, X_te = _safe_indexing(X, train), _safe_indexing(X, test)
    y_tr, y_te = _safe_indexing(y, train), _safe_indexing(y, test)
    with _no_autolog():
        est = clone(estimator).fit(X_tr, y_tr, **_split_params(fit_params, train, len(y)))
    y_pred = np.asarray(est.predict(X_te))
    y_score = None
    if want_scores and hasattr(est, "predict_proba"):
        y_score = positive_scores(est.predict_proba(X_te), getattr(est, "classes_", None), pos_label)
    if cols is not None:
        A = X_te[cols[0]] if len(cols) == 1 else X_te[cols]
    else:
        A = _safe_indexing(sensitive_features, test)
    w = None if sample_weight is None else _safe_indexing(sample_weight, test)
    results = evaluate_all(ms, y_te, y_pred, y_score=y_score, sensitive_features=A, sample_weight=w)
    posts = {}
    if posterior is not None:
        posts = compute_posteriors(
            ms, y_te, y_score if y_score is not None else y_pred, sensitive_features=A, options=dict(posterior)
        )
    return est, results, posts


def cross_validate_fairness(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    measures: Any,
    sensitive_features: Any = None,
    sensitive: str | Sequence[str] | None = None,
    cv: Any = 5,
    groups: Any = None,
    sample_weight: Any = None,
    fit_params: Mapping[str, Any] | None = None,
    pos_label: Any = None,
    posterior: Mapping[str, Any] | None = None,
    fold_runs: bool = True,
    prefix: str = "",
    run_name: str | None = None,
    log_params: bool = True,
    artifacts: bool = True,
    n_jobs: int | None = None,
) -> CrossValidationResult:
    """Cross-validate an estimator and log each fold's fairness measures to MLflow.

    Each fold is fitted on a clone of ``estimator`` and evaluated on its test part
    with one count pass for all measures. Each fold's results go to a child run
    (``fold_runs=True``) or to the parent run at ``step=fold`` (then ``{key}`` holds
    one value per fold); the parent run gets, for every measure key,
    ``{key}.cv_fold`` at steps ``0..k-1``, ``{key}.cv_mean`` and ``{key}.cv_std``,
    and the measure configuration as params ``{key}.config/...``. Autologging is
    paused during the fold fits, so the folds do not appear as autologged runs of
    their own.

    Parameters
    ----------
    estimator : estimator
        Unfitted scikit-learn estimator (or pipeline).
    X : array-like or DataFrame of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    measures : list of str, Measure or dict
        Registry keys, measures, or dicts ``{"key": ..., **overrides}``.
    sensitive_features : array-like or DataFrame, optional
        Group of each sample, split along with ``X`` (like metadata routing).
    sensitive : str or list of str, optional
        Column(s) of ``X`` holding the sensitive attribute (column mode); the model
        sees them unless the pipeline drops them (``skfair_measures.DropColumns``).
        Exactly one of ``sensitive_features`` and ``sensitive`` is required.
    cv : int, splitter or iterable, default=5
        As in scikit-learn (stratified for classifiers when an int).
    groups : array-like, optional
        Group labels for group-aware splitters (``GroupKFold``).
    sample_weight : array-like, optional
        Weights for the measures (split per fold). To fit with weights, pass
        them in ``fit_params``.
    fit_params : dict, optional
        Passed to ``fit``; array-likes of length ``n_samples`` are split per fold.
    pos_label : object, optional
        Positive class for measures built from keys and for probability columns.
    posterior : dict, optional
        Also compute each fold's posterior (options as in the evaluator: ``method``,
        ``reference``, ``random_state`` for ``Measure.posterior``; ``prob``, ``eps``,
        ``greater_than``, ``measures`` for the summaries).
    fold_runs : bool, default=True
        One child run per fold; otherwise fold results go to the parent at
        ``step=fold``.
    prefix : str, default=""
        Prepended to every key.
    run_name : str, optional
        Name of the parent run if one is started (when no run is active).
    log_params : bool, default=True
    artifacts : bool, default=True
    n_jobs : int, optional
        Fit and evaluate the folds in parallel with :class:`joblib.Parallel` (as
        scikit-learn's ``cross_validate``); the logging to MLflow happens afterwards,
        in this process, in fold order. None runs the folds one after another here.

    Returns
    -------
    CrossValidationResult

    Examples
    --------
    >>> import mlflow                                                # doctest: +SKIP
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfair_measures import datasets
    >>> X, y, A = datasets.load_german(return_X_y_A=True)           # doctest: +SKIP
    >>> with mlflow.start_run():                                     # doctest: +SKIP
    ...     res = cross_validate_fairness(
    ...         LogisticRegression(max_iter=500), X.select_dtypes("number"), y,
    ...         measures=["fairness.eod", "classif.acc"], sensitive_features=A["sex"])
    >>> res.mean["fairness.eod"]                                     # doctest: +SKIP
    """
    import mlflow
    import pandas as pd
    from joblib import Parallel, delayed
    from mlflow.tracking import MlflowClient
    from sklearn.base import is_classifier
    from sklearn.model_selection import check_cv

    from ._compute import needs_scores, resolve_measures
    from ._tracking import log_fairness, log_payload

    if (sensitive_features is None) == (sensitive is None):
        raise ValueError(
            "pass exactly one of sensitive_features= (one group per sample) and "
            "sensitive= (column name(s) of X)."
        )
    cols = None if sensitive is None else ([sensitive] if isinstance(sensitive, str) else list(sensitive))
    if cols is not None:
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"sensitive={cols!r} reads columns of X, but X is a {type(X).__name__}.")
        missing = [c for c in cols if c not in X.columns]
        if missing:
            raise KeyError(f"sensitive column(s) {missing} not in X's columns {list(X.columns)}.")
    ms = resolve_measures(measures, pos_label=pos_label)
    splitter = check_cv(cv, y, classifier=is_classifier(estimator))
    splits = list(splitter.split(X, y, groups))
    fit_params = dict(fit_params or {})
    want_scores = needs_scores(ms) or posterior is not None
    post_opts = dict(posterior or {})
    summary_opts = {k: post_opts[k] for k in ("prob", "eps", "greater_than") if k in post_opts}

    started = mlflow.active_run() is None
    parent = mlflow.start_run(run_name=run_name) if started else mlflow.active_run()
    parent_id = parent.info.run_id
    client = MlflowClient()
    out = CrossValidationResult(scores=None, mean=None, std=None, run_id=parent_id)
    try:
        fold_kw = dict(
            ms=ms, cols=cols, sensitive_features=sensitive_features, sample_weight=sample_weight,
            fit_params=fit_params, pos_label=pos_label, want_scores=want_scores,
            posterior=post_opts if posterior is not None else None,
        )
        if n_jobs is None:
            fitted = (_fold(estimator, X, y, train, test, **fold_kw) for train, test in splits)
        else:
            fitted = Parallel(n_jobs=n_jobs)(
                delayed(_fold)(estimator, X, y, train, test, **fold_kw) for train, test in splits
            )
        for i, (est, results, posts) in enumerate(fitted):
            out.folds.append(results)
            out.posteriors.append(posts)
            out.estimators.append(est)
            named = list(results.items()) + list(posts.items())
            common = {
                "prefix": prefix,
                "measures": ms,
                "artifacts": artifacts,
                "posterior_options": summary_opts,
            }
            if fold_runs:
                child = client.create_run(
                    parent.info.experiment_id,
                    run_name=f"{parent.info.run_name or 'cv'}-fold-{i}",
                    tags={"mlflow.parentRunId": parent_id, "skfair.fold": str(i)},
                )
                out.fold_run_ids.append(child.info.run_id)
                out.logged.append(log_fairness(named, run_id=child.info.run_id, log_params=log_params, **common))
                with contextlib.suppress(Exception):
                    client.set_terminated(child.info.run_id)
            else:
                out.logged.append(log_fairness(named, run_id=parent_id, step=i, log_params=False, **common))

        keys = [m.key for m in ms]
        out.scores = pd.DataFrame([{k: f[k].value for k in keys} for f in out.folds], columns=keys)
        out.scores.index.name = "fold"
        out.mean = out.scores.mean(skipna=False)
        out.std = out.scores.std(ddof=0, skipna=False)

        payload = Payload()
        segs = unique_segments(keys)
        pre = sanitize_key(prefix) + ("/" if prefix.endswith("/") else "") if prefix else ""
        for m in ms:
            base = f"{pre}{segs[m.key]}"
            payload.add_metric(subkey(base, "cv_mean"), out.mean[m.key], result=m.key, quantity="cv_mean")
            payload.add_metric(subkey(base, "cv_std"), out.std[m.key], result=m.key, quantity="cv_std")
            for i, v in enumerate(out.scores[m.key]):
                payload.add_series(subkey(base, "cv_fold"), v, i, result=m.key, quantity="cv_fold")
            if log_params:
                for k, v in measure_params(m).items():
                    payload.add_param(subkey(base, "config", k), v)
        if log_params:
            payload.add_param(f"{pre}cv/n_splits", len(splits))
            payload.add_param(f"{pre}cv/splitter", repr(splitter))
            payload.add_param(f"{pre}cv/estimator", type(estimator).__name__)
        out.logged.append(log_payload(payload, run_id=parent_id, results={"cv": out.scores}))
    except BaseException:
        if started:
            mlflow.end_run(status="FAILED")
        raise
    if started:
        mlflow.end_run()
    return out
