"""Cross-validation that logs every fold's fairness measures to MLflow.

The folds are fitted and evaluated first, with no MLflow call
(:func:`skfair_measures.record.cross_validate`), then logged through one protected session,
so that a tracking server that fails at any point costs the logging, never a fitted fold.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from skfair_measures.record import CrossValidation, cross_validate, cv_record, record

from ._session import TrackingSession, bounded_http
from ._tracking import LoggedFairness, write

__all__ = ["CrossValidationResult", "cross_validate_fairness"]


@dataclass
class CrossValidationResult(CrossValidation):
    """The folds of :func:`cross_validate_fairness` (see ``skfair_measures.record.CrossValidation``) and the logging.

    Attributes
    ----------
    run_id : str or None
        The parent run (None if MLflow could not be reached).
    fold_run_ids : list of str
        The child run of each fold that could be created (empty with ``fold_runs=False``).
    logged : list of LoggedFairness
        What each logging call computed and logged (folds, then the parent).
    error : BaseException or None
        Why logging stopped, if it did; the folds are complete regardless.
    """

    run_id: str | None = None
    fold_run_ids: list[str] = field(default_factory=list)
    logged: list[LoggedFairness] = field(default_factory=list)
    error: BaseException | None = None


def _no_autolog() -> Any:
    """Keep MLflow autologging from logging each fold's fit as a run of its own."""
    try:
        from mlflow.utils.autologging_utils import disable_autologging
    except ImportError:  # pragma: no cover - older or future MLflow
        return contextlib.nullcontext()
    return disable_autologging()


def cross_validate_fairness(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    measures: Any,
    fold_runs: bool = True,
    prefix: str = "",
    run_name: str | None = None,
    log_params: bool = True,
    artifacts: bool = True,
    timeout: float | None = None,
    **cv_options: Any,
) -> CrossValidationResult:
    """Cross-validate an estimator and log each fold's fairness measures to MLflow.

    Every fold is fitted on a clone of ``estimator`` and evaluated on its test part
    with one count pass for all measures; the measures expect every group of the
    whole data, so a fold that misses a group shows it as undefined instead of
    silently comparing fewer groups. Only then is anything logged: each fold to a
    child run (``fold_runs=True``) or to the parent under ``fold/`` at ``step=fold``;
    the parent gets the mean over folds at the plain key ``{key}``, the standard
    deviation at ``{key}.sd``, the file ``fairness/cv_scores.csv`` of every fold, the
    measures' configuration as params and the sensitive attributes and groups as tags.
    If MLflow fails at any point, one warning is issued and every fold is returned.
    Autologging is paused during the fold fits.

    Parameters
    ----------
    estimator, X, y, measures
        As for :func:`skfair_measures.record.cross_validate`.
    fold_runs : bool, default=True
        One child run per fold; otherwise fold results go to the parent under
        ``fold/`` at ``step=fold``.
    prefix : str, default=""
        Prepended to every key.
    run_name : str, optional
        Name of the parent run if one is started (when no run is active).
    log_params : bool, default=True
    artifacts : bool, default=True
    timeout : float, optional
        Seconds to wait for the tracking server, per request (default 10).
    **cv_options
        The other options of :func:`skfair_measures.record.cross_validate`, as there:
        ``sensitive_features``, ``sensitive``, ``cv``, ``groups``, ``sample_weight``,
        ``fit_params``, ``pos_label``, ``posterior``, ``n_jobs`` and ``random_state`` (the
        logging happens after every fold is fitted, in this process, in fold order).

    Returns
    -------
    CrossValidationResult

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
    done = cross_validate(estimator, X, y, measures=measures, fit_context=_no_autolog, **cv_options)
    out, plan = CrossValidationResult(**{f: getattr(done, f) for f in CrossValidation.__dataclass_fields__}), done.plan
    session = TrackingSession("cross_validate_fairness", timeout=timeout)
    kw = {"prefix": prefix, "log_params": log_params, "artifacts": artifacts}
    parent, started = _parent_run(session, run_name)
    out.run_id = parent
    if parent is not None:
        _log_folds(session, out, plan, parent, fold_runs=fold_runs, **kw)
        _log_parent(session, out, estimator, **kw)
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
    session: TrackingSession, out: CrossValidationResult, plan: Any, parent_id: str, *, fold_runs: bool, **kw: Any
) -> None:
    """Each fold to a child run, or to the parent under ``fold/`` at ``step=fold``."""
    parent = session.run(parent_id)
    opts = {k: plan.posterior[k] for k in ("prob", "eps") if plan.posterior and k in plan.posterior}
    for i, (results, posts) in enumerate(zip(out.folds, out.posteriors, strict=True)):
        if parent is None or not session.ok:
            return
        named = [*results.items(), *posts.items()]
        if not fold_runs:
            rec = record(
                named, **{**kw, "prefix": f"{kw['prefix']}fold/", "log_params": False}, step=i, html=False, **opts
            )
            out.logged.append(write(rec, session, run_id=parent_id, step=i))
            continue
        child = session.call(
            f"create the run of fold {i}",
            session.client.create_run,
            parent.info.experiment_id,
            run_name=f"{parent.info.run_name or 'cv'}-fold-{i}",
            tags={"mlflow.parentRunId": parent_id, "skfair.fold": str(i)},
        )
        if child is None:
            return
        out.fold_run_ids.append(child.info.run_id)
        rec = record(named, **kw, measures=plan.measures, html=False, **opts)
        out.logged.append(write(rec, session, run_id=child.info.run_id))
        session.call(f"end the run of fold {i}", session.client.set_terminated, child.info.run_id)


def _log_parent(session: TrackingSession, out: CrossValidationResult, estimator: Any, **kw: Any) -> None:
    """The cross-validation as a whole (:func:`skfair_measures.record.cv_record`) to the parent run."""
    if session.ok:
        rec = cv_record(out, estimator=estimator, **kw)
        out.logged.append(write(rec, session, run_id=out.run_id, results={"cv": out.scores}))
