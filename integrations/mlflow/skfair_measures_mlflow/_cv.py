"""Cross-validation that logs every fold's fairness measures to MLflow.

Named steps: resolve the inputs (:func:`_plan`), fit and evaluate every fold without
any MLflow call (:func:`_fit_fold`), summarise the folds (:func:`_summarise`), then log
(:func:`_log_folds`, :func:`_log_parent`) through one protected session, so that a
tracking server that fails at any point costs the logging, never a fitted fold.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from skfair_measures.benchmark import fold_splits
from skfair_measures.groups import (
    SMALL_GROUP_ROWS,
    SingleGroupError,
    SmallGroupWarning,
    encode_groups,
    fold_group_sizes,
    resolve_sensitive,
    small_group_effect,
    small_groups_in_folds,
)
from skfair_measures.measures import MeasureBase
from skfair_measures.results import Result

from ._collect import Artifact, Payload, _group_names, chosen_params, collect
from ._compute import (
    compute_posteriors,
    declare_groups,
    evaluate_all,
    full_groups,
    needs_scores,
    positive_scores,
    resolve_measures,
    score_label,
)
from ._keys import sanitize_key, subkey, unique_segments
from ._session import TrackingSession, bounded_http
from ._tracking import LoggedFairness, log_payload

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
        ``{key: result}`` of each fold.
    posteriors : list of dict
        ``{key: posterior}`` of each fold (empty dicts without ``posterior=``).
    estimators : list
        The fitted estimator of each fold.
    groups : pandas.Index
        Every group of the whole data; each fold's measures expect all of them.
    run_id : str or None
        The parent run (None if MLflow could not be reached).
    fold_run_ids : list of str
        The child run of each fold that could be created (empty with ``fold_runs=False``).
    logged : list of LoggedFairness
        What each logging call computed and logged (folds, then the parent).
    error : BaseException or None
        Why logging stopped, if it did; the folds are complete regardless.
    """

    scores: pd.DataFrame
    mean: pd.Series
    std: pd.Series
    folds: list[dict[str, Result]] = field(default_factory=list)
    posteriors: list[dict[str, Result]] = field(default_factory=list)
    estimators: list[Any] = field(default_factory=list)
    groups: pd.Index | None = None
    run_id: str | None = None
    fold_run_ids: list[str] = field(default_factory=list)
    logged: list[LoggedFairness] = field(default_factory=list)
    error: BaseException | None = None


@dataclass
class _Plan:
    """Everything a fold needs, resolved once."""

    measures: list[MeasureBase]
    sensitive: Any
    groups: pd.Index
    splits: list[tuple[np.ndarray, np.ndarray]]
    splitter: Any
    fit_params: dict[str, Any]
    pos_label: Any
    want_scores: bool
    posterior: dict[str, Any] | None
    #: The groups with fewer than SMALL_GROUP_ROWS rows in a test fold (their fewest), and the measures
    #: with min_group_size set that give the values without them.
    small: pd.Series = field(default_factory=lambda: pd.Series(dtype=np.int64))
    without_small: list[MeasureBase] = field(default_factory=list)


def _no_autolog() -> Any:
    """Keep MLflow autologging from logging each fold's fit as a run of its own."""
    try:
        from mlflow.utils.autologging_utils import disable_autologging
    except ImportError:  # pragma: no cover - older or future MLflow
        return contextlib.nullcontext()
    return disable_autologging()


def _split_params(params: Mapping[str, Any], idx: np.ndarray, n: int) -> dict[str, Any]:
    from sklearn.utils import _safe_indexing

    out = {}
    for k, v in params.items():
        sized = not isinstance(v, (str, bytes, Mapping)) and np.ndim(v) >= 1 and len(v) == n
        out[k] = _safe_indexing(v, idx) if sized else v
    return out


def _plan(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    measures: Any,
    sensitive_features: Any,
    sensitive: Any,
    cv: Any,
    groups: Any,
    fit_params: Mapping[str, Any] | None,
    pos_label: Any,
    posterior: Mapping[str, Any] | None,
    random_state: Any = None,
) -> _Plan:
    from sklearn.base import is_classifier

    A = resolve_sensitive(sensitive_features, X=X, columns=sensitive)
    all_groups = full_groups(A)
    ms = declare_groups(resolve_measures(measures, pos_label=pos_label), all_groups)
    codes, _ = encode_groups(A, len(y), name="sensitive_features", groups=all_groups)
    splits = fold_splits(
        cv, X, y, sensitive_codes=codes, groups=groups, random_state=random_state, classifier=is_classifier(estimator)
    )
    small = small_groups_in_folds(fold_group_sizes(codes, [te for _, te in splits], all_groups))
    integer = isinstance(cv, int | np.integer) and not isinstance(cv, bool)
    splitter = (
        f"StratifiedKFold(n_splits={cv}, shuffle=True, random_state={random_state!r}) on label x group strata"
        if integer
        else cv
    )
    return _Plan(
        measures=ms,
        sensitive=A,
        groups=all_groups,
        splits=[(np.asarray(tr), np.asarray(te)) for tr, te in splits],
        splitter=splitter,
        fit_params=dict(fit_params or {}),
        pos_label=score_label(ms, pos_label),
        want_scores=needs_scores(ms) or posterior is not None,
        posterior=None if posterior is None else dict(posterior),
        small=small,
        without_small=[
            m.with_inputs(min_group_size=SMALL_GROUP_ROWS)
            for m in ms
            if len(small) and m.inputs.needs_sensitive and m.inputs.min_group_size is None
        ],
    )


def _fit_fold(
    estimator: Any, X: Any, y: Any, sample_weight: Any, train: np.ndarray, test: np.ndarray, plan: _Plan
) -> tuple[Any, dict[str, Result], dict[str, Result], dict[str, float]]:
    """Fit one fold and compute its measures (and posteriors): no MLflow calls, so it can run anywhere."""
    from sklearn.base import clone
    from sklearn.utils import _safe_indexing

    X_tr, X_te = _safe_indexing(X, train), _safe_indexing(X, test)
    y_tr, y_te = _safe_indexing(y, train), _safe_indexing(y, test)
    with _no_autolog():
        est = clone(estimator).fit(X_tr, y_tr, **_split_params(plan.fit_params, train, len(y)))
    y_pred = np.asarray(est.predict(X_te))
    y_score = None
    if plan.want_scores and hasattr(est, "predict_proba"):  # the estimator API, not a result or a measure
        y_score = positive_scores(est.predict_proba(X_te), getattr(est, "classes_", None), plan.pos_label)
    A = _safe_indexing(plan.sensitive, test)
    w = None if sample_weight is None else _safe_indexing(sample_weight, test)
    with warnings.catch_warnings():  # the summary's small-group warning says it once, for all folds
        warnings.filterwarnings("ignore", "(?s).*is decided by group", SmallGroupWarning)
        results = evaluate_all(plan.measures, y_te, y_pred, y_score=y_score, sensitive_features=A, sample_weight=w)
    posts = {}
    if plan.posterior is not None:
        scores = y_score if y_score is not None else y_pred
        posts = compute_posteriors(plan.measures, y_te, scores, sensitive_features=A, options=plan.posterior)
    without: dict[str, float] = {}
    for m in plan.without_small:  # the values without the small groups, for the one warning of the summary
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                without[m.key] = evaluate_all(
                    [m], y_te, y_pred, y_score=y_score, sensitive_features=A, sample_weight=w
                )[m.key].value
            except SingleGroupError:
                without[m.key] = math.nan
    return est, results, posts, without


def _fit_folds(estimator: Any, X: Any, y: Any, sample_weight: Any, plan: _Plan, n_jobs: int | None) -> list[tuple]:
    if n_jobs is None:
        return [_fit_fold(estimator, X, y, sample_weight, tr, te, plan) for tr, te in plan.splits]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(
        delayed(_fit_fold)(estimator, X, y, sample_weight, tr, te, plan) for tr, te in plan.splits
    )


def _summarise(fitted: list[tuple], plan: _Plan) -> CrossValidationResult:
    keys = [m.key for m in plan.measures]
    scores = pd.DataFrame([{k: res[k].value for k in keys} for _, res, _, _ in fitted], columns=keys, dtype=float)
    scores.index.name = "fold"
    if plan.without_small:
        small_keys = [m.key for m in plan.without_small]
        without = pd.DataFrame([w for *_, w in fitted], columns=small_keys, dtype=float)
        means = [t[small_keys].mean(skipna=False).to_frame("").T for t in (scores, without)]
        warnings.warn(
            small_group_effect(plan.small, *means, who="cross_validate_fairness"), SmallGroupWarning, stacklevel=3
        )
    return CrossValidationResult(
        scores=scores,
        mean=scores.mean(skipna=False),
        std=scores.std(ddof=0, skipna=False),
        folds=[res for _, res, _, _ in fitted],
        posteriors=[posts for _, _, posts, _ in fitted],
        estimators=[est for est, _, _, _ in fitted],
        groups=plan.groups,
    )


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
    timeout: float | None = None,
    random_state: Any = None,
) -> CrossValidationResult:
    """Cross-validate an estimator and log each fold's fairness measures to MLflow.

    Every fold is fitted on a clone of ``estimator`` and evaluated on its test part
    with one count pass for all measures; the measures expect every group of the
    whole data, so a fold that misses a group shows it as undefined instead of
    silently comparing fewer groups. Only then is anything logged: each fold to a
    child run (``fold_runs=True``) or to the parent under ``fold/`` at ``step=fold``;
    the parent gets the mean over folds at the plain key ``{key}``, the standard
    deviation at ``{key}.sd``, a table ``fairness/cv_scores.json`` of every fold, the
    measures' configuration as params and the sensitive attributes and groups as tags.
    If MLflow fails at any point, one warning is issued and every fold is returned.
    Autologging is paused during the fold fits.

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
        An int gives the folds of ``skfair_measures.benchmark.benchmark``, by the one rule of
        :func:`skfair_measures.benchmark.fold_splits`: shuffled ``StratifiedKFold`` on label x
        group strata. A splitter or iterable is used as in scikit-learn.
    groups : array-like, optional
        Group labels for group-aware splitters (``GroupKFold``).
    sample_weight : array-like, optional
        Weights for the measures (split per fold). To fit with weights, pass them in
        ``fit_params``.
    fit_params : dict, optional
        Passed to ``fit``; array-likes of length ``n_samples`` are split per fold.
    pos_label : object, optional
        Positive class for measures built from keys and for probability columns.
    posterior : dict, optional
        Also compute each fold's posteriors, in one joint fit per fold (options of
        ``skfair_measures.bayes.posteriors``: ``method``, ``reference``,
        ``random_state``, ...; plus ``prob``, ``eps`` and ``measures`` for the summaries).
    fold_runs : bool, default=True
        One child run per fold; otherwise fold results go to the parent under
        ``fold/`` at ``step=fold``.
    prefix : str, default=""
        Prepended to every key.
    run_name : str, optional
        Name of the parent run if one is started (when no run is active).
    log_params : bool, default=True
    artifacts : bool, default=True
    n_jobs : int, optional
        Fit and evaluate the folds in parallel with :class:`joblib.Parallel`; the
        logging happens afterwards, in this process, in fold order.
    timeout : float, optional
        Seconds to wait for the tracking server, per request (default 10).
    random_state : int, optional
        Seed of the fold shuffling of an integer ``cv`` (as in ``benchmark``).

    Returns
    -------
    CrossValidationResult

    Warns
    -----
    SmallGroupWarning
        When a group has fewer than ``SMALL_GROUP_ROWS`` (30) rows in some test fold and a
        measure keeps it (``min_group_size`` unset): the warning names the groups and gives
        the fold mean of each such measure with and without them.

    Examples
    --------
    >>> import mlflow                                                # doctest: +SKIP
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfair_measures import datasets
    >>> X, y, A = datasets.load_german(return_X_y_A=True)           # doctest: +SKIP
    >>> res = cross_validate_fairness(                               # doctest: +SKIP
    ...     LogisticRegression(max_iter=500), X.select_dtypes("number"), y,
    ...     measures=["fairness.eod", "classif.acc"], sensitive_features=A["sex"])
    >>> res.mean["fairness.eod"]                                     # doctest: +SKIP
    """
    plan = _plan(
        estimator,
        X,
        y,
        measures=measures,
        sensitive_features=sensitive_features,
        sensitive=sensitive,
        cv=cv,
        groups=groups,
        fit_params=fit_params,
        pos_label=pos_label,
        posterior=posterior,
        random_state=random_state,
    )
    out = _summarise(_fit_folds(estimator, X, y, sample_weight, plan, n_jobs), plan)
    session = TrackingSession("cross_validate_fairness", timeout=timeout)
    kw = {"prefix": prefix, "log_params": log_params, "artifacts": artifacts}
    parent, started = _parent_run(session, run_name)
    out.run_id = parent
    if parent is not None:
        _log_folds(session, out, plan, parent, fold_runs=fold_runs, **kw)
        _log_parent(session, out, plan, estimator, **kw)
    if started:
        _end_run(session)
    out.error = session.error
    return out


def _parent_run(session: TrackingSession, run_name: str | None) -> tuple[str | None, bool]:
    """The active run, or a new one (then ``started`` is True)."""
    import mlflow

    active = mlflow.active_run()
    if active is not None:
        return active.info.run_id, False
    run = session.call("start the parent run", mlflow.start_run, run_name=run_name)
    return (None, False) if run is None else (run.info.run_id, True)


def _end_run(session: TrackingSession) -> None:
    import mlflow

    session.call("end the parent run", mlflow.end_run, status="FINISHED" if session.ok else "FAILED")
    if mlflow.active_run() is not None:  # the session had failed before: still close the run we started
        with contextlib.suppress(Exception), bounded_http(session.timeout):
            mlflow.end_run(status="FAILED")  # MLflow pops the run before it calls the server


def _log_folds(
    session: TrackingSession,
    out: CrossValidationResult,
    plan: _Plan,
    parent_id: str,
    *,
    fold_runs: bool,
    prefix: str,
    log_params: bool,
    artifacts: bool,
) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    parent = session.call("read the parent run", client.get_run, parent_id)
    if parent is None:
        return
    for i, (results, posts) in enumerate(zip(out.folds, out.posteriors, strict=True)):
        named = [*results.items(), *posts.items()]
        options = {k: plan.posterior[k] for k in ("prob", "eps") if plan.posterior and k in plan.posterior}
        if fold_runs:
            child = session.call(
                f"create the run of fold {i}",
                client.create_run,
                parent.info.experiment_id,
                run_name=f"{parent.info.run_name or 'cv'}-fold-{i}",
                tags={"mlflow.parentRunId": parent_id, "skfair.fold": str(i)},
            )
            if child is None:
                return
            out.fold_run_ids.append(child.info.run_id)
            payload = collect(
                named,
                prefix=prefix,
                measures=plan.measures,
                log_params=log_params,
                artifacts=artifacts,
                posterior_options=options,
            )
            out.logged.append(log_payload(payload, session, run_id=child.info.run_id))
            session.call(f"end the run of fold {i}", client.set_terminated, child.info.run_id)
        else:
            payload = collect(
                named,
                prefix=f"{prefix}fold/",
                measures=plan.measures,
                log_params=False,
                artifacts=artifacts,
                posterior_options=options,
                step=i,
            )
            out.logged.append(log_payload(payload, session, run_id=parent_id, step=i))
        if not session.ok:
            return


def _log_parent(
    session: TrackingSession,
    out: CrossValidationResult,
    plan: _Plan,
    estimator: Any,
    *,
    prefix: str,
    log_params: bool,
    artifacts: bool,
) -> None:
    """Mean and sd at plain keys, the folds as a table, configuration as params, groups as tags."""
    if not session.ok:
        return
    payload = Payload()
    keys = [m.key for m in plan.measures]
    segs = unique_segments(keys)
    pre = sanitize_key(prefix) + ("/" if prefix.endswith("/") else "") if prefix else ""
    for m in plan.measures:  # headline values first
        payload.add_metric(f"{pre}{segs[m.key]}", out.mean[m.key], result=m.key, quantity="cv_mean")
    for m in plan.measures:
        base = f"{pre}{segs[m.key]}"
        payload.add_metric(subkey(base, "sd"), out.std[m.key], result=m.key, quantity="cv_sd")
        if math.isnan(out.mean[m.key]):
            payload.add_tag(subkey(base, "undefined"), _undefined_folds(out, m.key))
        if log_params:
            for k, v in chosen_params(m).items():
                payload.add_param(subkey(base, "config", k), v)
    if log_params:
        payload.add_param(f"{pre}cv/n_splits", len(plan.splits))
        payload.add_param(f"{pre}cv/splitter", repr(plan.splitter))
        payload.add_param(f"{pre}cv/estimator", type(estimator).__name__)
    names = [n for n in _group_names(plan.groups) if n is not None]
    if names:
        payload.add_tag("skfair.sensitive", ", ".join(names))
    payload.add_tag("skfair.groups", _groups_json(plan.groups))
    if artifacts:
        table = pd.concat([out.scores, out.mean.to_frame("mean").T, out.std.to_frame("sd").T])
        # a CSV file, not a second log_table: a run has one table (the groupwise one), see _collect.RUN_TABLE
        path = f"fairness/{sanitize_key(prefix) + '/' if prefix else ''}cv_scores.csv"
        payload.artifacts.append(Artifact(path, table.rename_axis("fold").to_csv()))
    out.logged.append(log_payload(payload, session, run_id=out.run_id, results={"cv": out.scores}))


def _undefined_folds(out: CrossValidationResult, key: str) -> str:
    bad = [(i, f[key].reason) for i, f in enumerate(out.folds) if math.isnan(f[key].value)]
    shown = "; ".join(f"fold {i}: {why}" for i, why in bad[:5])
    return f"the mean is undefined because {len(bad)} fold(s) are: {shown}"


def _groups_json(index: pd.Index) -> str:
    import json

    from skfair_measures.results import plain

    return json.dumps([plain(g) for g in index])
